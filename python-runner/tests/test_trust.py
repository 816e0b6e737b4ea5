"""The judge against copies that try to excuse their own differences (issue 67): only the judge decides that a probe
needs compiled operators, from the libraries the original's process loaded and the copy's process as the judge reads
it; what the copy raises is not evidence, and such a probe left out is never a pass."""

import glob
import os
import sysconfig
import unittest

from tests.support import judged, needs_torch

ORIGINAL = """
import torch
from torch import nn
{load}

class Blk(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)
"""

# the copy's forward differs, and every call after its first raises the compiled-operators text
COPY = """
import torch
from torch import nn

CALLS = [0]
NAMED = "{named}"

class Blk(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        CALLS[0] += 1
        if CALLS[0] > 1:
            raise RuntimeError("Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are incompatible")
        return self.lin(x) + 0.79
"""

LIBRARY = "_ctypes_test"


def compiled_library() -> str:
    """A compiled module of the interpreter's own (stdlib's `_ctypes_test`), which the original's package loads as its
    own extension module."""
    found = glob.glob(os.path.join(sysconfig.get_paths()["platstdlib"], "lib-dynload", LIBRARY + ".*.so"))
    return found[0] if found else ""


@needs_torch
class CompiledOperatorsDecidedByTheJudge(unittest.TestCase):
    def test_a_copy_that_differs_and_raises_the_text_is_a_difference(self) -> None:
        # the original loads no compiled module: nothing may excuse the copy, whatever it raises
        report = judged(COPY.format(named="nothing"), ORIGINAL.format(load=""))
        self.assertFalse(report["ok"], report)
        self.assertEqual(report["category"], "differs", report)

    @unittest.skipUnless(compiled_library(), "needs the interpreter's _ctypes_test module")
    def test_a_probe_left_out_for_compiled_operators_is_never_a_pass(self) -> None:
        lib = compiled_library()
        # the original's package holds the compiled module as its own, and loads it
        load = f"from . import {LIBRARY}"
        files = {os.path.basename(lib): lib}
        # the copy names the compiled module, and the judge sees its process lack it: left out, and not a pass
        report = judged(COPY.format(named=LIBRARY), ORIGINAL.format(load=load), package_files=files)
        self.assertFalse(report["ok"], report)
        self.assertEqual(report["category"], "native-extension", report)
        self.assertTrue(any(p.endswith(os.path.basename(lib)) for p in report["equivalence"]["native"]), report)
        # naming the operators its package registers (`torch.ops.pk.op`) names it too
        report = judged(COPY.format(named="torch.ops.pk.op"), ORIGINAL.format(load=load), package_files=files)
        self.assertEqual(report["category"], "native-extension", report)
        # the same copy that does not name it: a difference
        report = judged(COPY.format(named="nothing"), ORIGINAL.format(load=load), package_files=files)
        self.assertEqual(report["category"], "differs", report)


if __name__ == "__main__":
    unittest.main()
