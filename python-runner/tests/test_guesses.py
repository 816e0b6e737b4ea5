"""Guessed argument sets stop once two in a row fail alike on a guessed value of the wrong type (forward.search), and
the widths guessed are all still tried for a failure that names none; a forward that needs compiled operators the
process has not loaded is tried once; skipped without torch."""

import unittest

from tests.support import judged, needs_torch

TYPED = """
from torch import nn


class Blk(nn.Module):
    def __init__(self, backbone, width=4):
        super().__init__()
        self.lin = nn.Linear(backbone.out_channels, width)

    def forward(self, x):
        return self.lin(x)
"""

HEADS = """
from torch import nn


class Blk(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 3, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]
"""

# each call fails one frame deeper than the one before: the judge reports the deepest failure, so the message names
# the last call made
NATIVE = """
from torch import nn

CALLS = [0]


def deeper(n):
    if n > 1:
        return deeper(n - 1)
    raise RuntimeError(f"Couldn't load custom C++ ops (call {CALLS[0]})")


class Blk(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        CALLS[0] += 1
        return deeper(CALLS[0])
"""


@needs_torch
class Guesses(unittest.TestCase):
    def test_guesses_that_fail_alike_on_a_value_of_the_wrong_type_stop(self) -> None:
        report = judged(TYPED, TYPED)
        self.assertEqual(report.get("category"), "instantiate", report)
        self.assertIn("'int' object has no attribute 'out_channels'", report["message"])
        self.assertIn("left untried: the last 2 failed alike", report["message"])

    def test_every_width_is_tried_for_a_failure_that_names_no_type(self) -> None:
        report = judged(HEADS, HEADS)
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["kwargs"]["dim"], 96, report)

    def test_a_forward_without_its_compiled_operators_is_tried_once(self) -> None:
        report = judged(NATIVE, NATIVE)
        self.assertFalse(report["ok"], report)
        self.assertIn("custom C++ ops (call 1)", report["message"])
