"""A repair reads the block's source once, whatever the size of the file's namespace (repair.py): reading a class's
source parses its whole file, so a read per name of a large pulled file's namespace cost tens of seconds per
argument set (torchvision's MaskRCNN pulled whole: 10 s per guess). Counted, not timed. Skipped without torch."""

import importlib.util
import os
import sys
import tempfile
import textwrap
import unittest
from typing import Any, List

from tests.support import needs_torch

SOURCE = """
import torch
from torch import nn

class Backbone(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.out_channels = width

class Net(nn.Module):
    def __init__(self, backbone: Backbone):
        super().__init__()
        self.head = nn.Linear(backbone.out_channels, 2)
""" + "".join(f"\nclass Filler{i}(nn.Module):\n    pass\n" for i in range(60))


@needs_torch
class RepairReads(unittest.TestCase):
    def test_the_block_source_is_read_once_per_repair(self) -> None:
        from nnrag_judge.worker import repair

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "pulled.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(SOURCE))
            spec = importlib.util.spec_from_file_location("pulled_for_repair", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            # as the worker imports a pulled file: under its name in sys.modules (where inspect finds a class's source)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            calls: List[Any] = []
            real = repair.named_in

            def counted(cls: Any) -> Any:
                calls.append(cls)
                return real(cls)

            repair.named_in = counted
            try:
                args: List[Any] = [3]
                kwargs: dict = {}
                try:
                    module.Net(*args)
                except AttributeError as exc:
                    built: List[Any] = []
                    changed = repair.repaired(exc, module.Net, args, kwargs, lambda p: None, lambda k: built.append(k) or k())
                else:
                    self.fail("the int has no out_channels")
            finally:
                repair.named_in = real
                del sys.modules[spec.name]
        self.assertGreater(len(vars(module)), 60)
        self.assertEqual(len(calls), 1, f"named_in read {len(calls)} times")
        # the repair still finds the class that has the attribute, and builds the block with it
        self.assertTrue(changed)
        self.assertIsInstance(args[0], module.Backbone)
        self.assertEqual(module.Net(*args).head.in_features, 4)
