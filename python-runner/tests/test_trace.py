"""The original's run is traced: the report names the first lines of the functions of the original's own files that
ran while it was built, run and probed (what a pull's slim copy keeps), and none that did not run."""

import unittest

from .support import judged, needs_torch

ORIGINAL = """
import torch
from torch import nn


def used(x):
    return x * 2


def never(x):
    return x - 1


class Helper:
    def ran(self, x):
        return used(x)

    def idle(self, x):
        return never(x)


class Blk(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.helper = Helper()

    def forward(self, x):
        return self.helper.ran(self.lin(x))
"""


@needs_torch
class TraceTest(unittest.TestCase):
    def test_the_report_names_what_the_original_ran_and_nothing_else(self) -> None:
        report = judged(ORIGINAL, ORIGINAL)
        self.assertEqual(report["tier"], "equivalent", report)
        executed = report.get("executed")
        self.assertIsInstance(executed, dict, report)
        files = [f for f in executed if f.endswith("/pk/m.py")]
        self.assertEqual(len(files), 1, executed)
        lines = set(executed[files[0]])
        source = ORIGINAL.split("\n")
        names = ("used", "never", "ran", "idle", "forward", "__init__")
        first = {name: next(i + 1 for i, line in enumerate(source) if line.strip().startswith(f"def {name}(")) for name in names}
        for name in ("used", "ran", "forward", "__init__"):
            self.assertIn(first[name], lines, (name, sorted(lines)))
        for name in ("never", "idle"):
            self.assertNotIn(first[name], lines, (name, sorted(lines)))
        # only the original's own folder: nothing of torch's
        self.assertFalse(any("/torch/" in f for f in executed), list(executed)[:5])

    def test_what_first_ran_once_imported_is_said_apart(self) -> None:
        # a function the module calls while it is imported ran before the block was built: not among what the block's
        # own run reached (the pull's follow stage takes in only that)
        source = ORIGINAL.replace("class Blk(", "def at_import():\n    return 1\n\n\nAT_IMPORT = at_import()\n\n\nclass Blk(")
        report = judged(source, source)
        self.assertEqual(report["tier"], "equivalent", report)
        late = report.get("executed_after_import")
        self.assertIsInstance(late, dict, report)
        lines = set(next(v for f, v in late.items() if f.endswith("/pk/m.py")))
        text = source.split("\n")
        first = {n: next(i + 1 for i, line in enumerate(text) if line.strip().startswith(f"def {n}(")) for n in ("used", "forward", "at_import")}
        self.assertIn(first["used"], lines)
        self.assertIn(first["forward"], lines)
        self.assertNotIn(first["at_import"], lines)
        self.assertIn(first["at_import"], set(next(v for f, v in report["executed"].items() if f.endswith("/pk/m.py"))))


if __name__ == "__main__":
    unittest.main()
