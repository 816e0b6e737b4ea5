"""What the judge's tests share: the runner, whether torch is here, and a judged copy against an original."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Callable, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "judge.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = unittest.skipUnless(HAS_TORCH, "needs torch")

ORIGINAL = """
import random
import torch
from torch import nn

EPS = 1e-6


def scale(x, factor=2.0):
    return x * factor


class Stats:
    def __init__(self, mean, count):
        self.mean = mean
        self.count = count


class Blk(nn.Module):
    def __init__(self, dim=8, momentum=0.1, inplace=False, act="relu", p=0.5):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.norm = nn.BatchNorm1d(dim, momentum=momentum, eps=EPS)
        self.drop = nn.Dropout(p)
        self.inplace = inplace
        self.act = act

    def forward(self, x):
        y = self.drop(self.norm(self.lin(x)))
        if self.inplace:
            y = y + 1
        y = torch.relu(y) if self.act == "relu" else torch.tanh(y)
        if random.random() < 0.5:
            y = y.flip(0)
        return scale(y), Stats(y.mean(), 3)
"""


def judged(
    copy_source: str,
    original_source: str = ORIGINAL,
    class_name: str = "Blk",
    parse_constant: Optional[Callable[[str], object]] = None,
    *extra: str,
    package_files: Optional[Dict[str, str]] = None,
) -> dict:
    """Validate `copy_source` against `original_source` installed as pk.m in a folder of its own; the report's last
    line read as JSON (`parse_constant`: what NaN and Infinity tokens become, as in `json.loads`; `package_files`:
    files copied into the original's package, by name)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "orig", "pk"))
        open(os.path.join(tmp, "orig", "pk", "__init__.py"), "w").close()
        for name, source in (package_files or {}).items():
            shutil.copyfile(source, os.path.join(tmp, "orig", "pk", name))
        with open(os.path.join(tmp, "orig", "pk", "m.py"), "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(original_source))
        os.makedirs(os.path.join(tmp, "out"))
        path = os.path.join(tmp, "out", "blk.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(copy_source))
        original = json.dumps({"module": "pk.m", "class": class_name, "path": os.path.join(tmp, "orig"), "file": os.path.join(tmp, "orig", "pk", "m.py")})
        proc = subprocess.run(
            [sys.executable, "-I", "-B", RUNNER, path, "--class", class_name, "--original", original, *extra],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp,
        )
        return json.loads(proc.stdout.strip().splitlines()[-1], parse_constant=parse_constant)


def has_memory_fill() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return hasattr(getattr(torch.utils, "deterministic", None), "fill_uninitialized_memory")
