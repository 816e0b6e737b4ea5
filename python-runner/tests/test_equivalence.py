"""The judge compares a copy with its original across processes, bit for bit, and catches one-line changes and
forged results (equivalence.py, evidence.py); skipped without torch."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from tests.support import HAS_TORCH, ORIGINAL, RUNNER, has_memory_fill, judged, needs_torch


@needs_torch
class Mutants(unittest.TestCase):
    """One-line changes the judge must see, each in a place the old judge missed."""

    def assert_differs(self, old: str, new: str) -> None:
        self.assertIn(old, ORIGINAL)
        report = judged(ORIGINAL.replace(old, new, 1))
        self.assertEqual(report.get("category"), "differs", report)
        self.assertEqual(report["equivalence"]["status"], "differs")
        self.assertTrue(report["equivalence"]["differences"])

    def test_the_unchanged_copy_is_equivalent_with_values_compared(self) -> None:
        report = judged(ORIGINAL)
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["tier"], "equivalent")
        self.assertGreater(report["equivalence"]["compared_values"], 100)
        self.assertEqual(report["equivalence"]["tolerance"], "bit-identical")
        self.assertIn("inplace=True", report["equivalence"]["variants"])

    def test_a_constant_of_a_helper(self) -> None:
        self.assert_differs("return x * factor", "return x * factor * 1.0000001")

    def test_a_changed_default(self) -> None:
        self.assert_differs("def scale(x, factor=2.0)", "def scale(x, factor=2.5)")

    def test_a_tiny_eps(self) -> None:
        self.assert_differs("EPS = 1e-6", "EPS = 3e-6")

    def test_a_numeric_default_only_train_mode_shows(self) -> None:
        self.assert_differs("momentum=0.1,", "momentum=0.2,")

    def test_dropout_probability_shows_in_train_mode(self) -> None:
        self.assert_differs("p=0.5):", "p=0.4):")

    def test_a_branch_of_a_flipped_option(self) -> None:
        self.assert_differs("y = y + 1", "y = y + 2")

    def test_a_random_branch(self) -> None:
        self.assert_differs("y = y.flip(0)", "y = y")

    def test_a_field_of_an_output_object(self) -> None:
        self.assert_differs("Stats(y.mean(), 3)", "Stats(y.mean(), 4)")

    def test_configuration_the_outputs_do_not_show(self) -> None:
        # a head whose depth range is read only when decoding, and an activation built for an optional branch the
        # forward tried does not take: the module tree as built shows both
        original = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=8, min_depth=1e-3, act_layer=nn.ReLU):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.min_depth = min_depth
        self.spare = act_layer()

    def forward(self, x):
        return self.lin(x)
"""
        self.assertEqual(judged(original, original, "Head")["tier"], "equivalent")
        for old, new in (("min_depth=1e-3", "min_depth=1.5e-3"), ("act_layer=nn.ReLU", "act_layer=nn.SiLU")):
            report = judged(original.replace(old, new, 1), original, "Head")
            self.assertEqual(report["equivalence"]["status"], "differs", report)
            self.assertTrue(any(d.startswith("the module tree") for d in report["equivalence"]["differences"]), report)

    def test_a_field_of_the_configuration_object_the_block_is_built_from(self) -> None:
        # a configuration class of the file sets a field the block never reads (another model reads it): the
        # object the block was built from, as the block left it, shows it
        original = """
import functools
import torch
from torch import nn


class BlockConfig:
    def __init__(self, dim: int = 8, block=None):
        self.dim = dim
        if block is None:
            block = "plain"
        self.block = block
        # prints with its class's module, which differs between the copy and the original
        self.again = functools.partial(BlockConfig, dim)

    def __repr__(self):
        return f"BlockConfig(dim={self.dim})"


class Blk(nn.Module):
    def __init__(self, cnf: BlockConfig):
        super().__init__()
        self.lin = nn.Linear(cnf.dim, cnf.dim)

    def forward(self, x):
        return self.lin(x)
"""
        self.assertEqual(judged(original, original)["tier"], "equivalent")
        report = judged(original.replace('block = "plain"', 'block = "fused"'), original)
        self.assertEqual(report["equivalence"]["status"], "differs", report)
        self.assertTrue(any("arguments" in d and "fused" in d for d in report["equivalence"]["differences"]), report)
        # and how it prints itself, which nothing the block does reads
        report = judged(original.replace('f"BlockConfig(dim={self.dim})"', 'f"BlockConfig(width={self.dim})"'), original)
        self.assertEqual(report["equivalence"]["status"], "differs", report)

    def test_a_method_the_user_calls_besides_forward(self) -> None:
        # a count of operations that forward never calls, and a re-parameterisation for deployment after which
        # forward takes another path: each is called on a block just built, and compared
        original = """
import torch
from torch import nn


class Patch(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.extra = nn.Linear(dim, dim)
        self.deployed = False

    def flops(self):
        return self.lin.in_features * self.lin.out_features * 2

    def switch_to_deploy(self):
        with torch.no_grad():
            self.lin.weight += self.extra.weight
        self.deployed = True

    def save_weights(self, path="w.pt"):
        raise RuntimeError("never called")

    def forward(self, x):
        return self.lin(x) if self.deployed else self.lin(x) + self.extra(x) - self.extra.bias
"""
        report = judged(original, original, "Patch")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("then flops()", report["equivalence"]["variants"])
        self.assertNotIn("then save_weights()", report["equivalence"]["variants"])
        for old, new in (("out_features * 2", "out_features * 3"), ("self.lin.weight += self.extra.weight", "self.lin.weight -= self.extra.weight")):
            report = judged(original.replace(old, new, 1), original, "Patch")
            self.assertEqual(report["equivalence"]["status"], "differs", (old, report))

    def test_the_list_path_of_a_forward_that_takes_a_tensor_or_a_list(self) -> None:
        original = """
import torch
from torch import nn


class Nested(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x_or_x_list):
        if isinstance(x_or_x_list, torch.Tensor):
            return self.lin(x_or_x_list)
        return [self.lin(x) + 1 for x in x_or_x_list]
"""
        report = judged(original, original, "Nested")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("inputs as a list", report["equivalence"]["variants"])
        report = judged(original.replace("self.lin(x) + 1", "self.lin(x) + 2", 1), original, "Nested")
        self.assertEqual(report["equivalence"]["status"], "differs", report)

    def test_how_the_block_prints_itself(self) -> None:
        original = """
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, mean=(0.5,), std=(0.25,)):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.image_mean, self.image_std = list(mean), list(std)

    def forward(self, x):
        return self.lin(x)

    def __repr__(self):
        text = self.__class__.__name__ + "("
        text += f"Normalize(mean={self.image_mean}, std={self.image_std}))"
        return text
"""
        self.assertEqual(judged(original, original, "Norm")["tier"], "equivalent")
        report = judged(original.replace('text += f"Normalize', 'text += f"Normalise', 1), original, "Norm")
        self.assertEqual(report["equivalence"]["status"], "differs", report)

    def test_a_tensor_past_the_first_64_of_the_state(self) -> None:
        # a deep stack: the state as built is compared whole, not its first entries only
        original = """
import torch
from torch import nn


class Deep(nn.Module):
    def __init__(self, dim=4, depth=40):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])
        self.tail = nn.Linear(3, 3)
        nn.init.constant_(self.tail.bias, 0.5)

    def forward(self, x):
        return self.layers(x)
"""
        report = judged(original.replace("bias, 0.5)", "bias, 0.6)", 1), original, "Deep")
        self.assertEqual(report["equivalence"]["status"], "differs", report)

    def test_a_branch_under_a_small_rate(self) -> None:
        # stochastic depth with a threshold: a rate of 0.5 takes the first branch only; a small rate reaches the second
        original = """
import torch
from torch import nn


class Blk(nn.Module):
    def __init__(self, dim=8, drop_path=0.0):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.rate = drop_path

    def forward(self, x):
        if self.training and self.rate > 0.1:
            return x + self.lin(x) * 0.5
        elif self.training and self.rate > 0.0:
            return x + self.lin(x)
        return x + self.lin(x)
"""
        self.assertEqual(judged(original, original)["tier"], "equivalent")
        report = judged(original.replace("            return x + self.lin(x)\n        return", "            return x - self.lin(x)\n        return"), original)
        self.assertEqual(report.get("category"), "differs", report)

    def test_a_part_an_optional_rate_switches_on(self) -> None:
        # a drop path whose rate defaults to None: only a rate given reaches the branch the mutant changed
        original = """
import torch
from torch import nn


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep = 1 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    return x * mask / keep


class DropPath(nn.Module):
    def __init__(self, drop_prob=None):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob or 0.0, self.training)
"""
        self.assertEqual(judged(original, original, class_name="DropPath")["tier"], "equivalent")
        report = judged(original.replace("if drop_prob == 0.0 or", "if drop_prob == 0.5 or"), original, class_name="DropPath")
        self.assertEqual(report.get("category"), "differs", report)

    def test_an_init(self) -> None:
        self.assert_differs("self.lin = nn.Linear(dim, dim)", "self.lin = nn.Linear(dim, dim)\n        nn.init.zeros_(self.lin.bias)")

    def test_a_constant_of_an_init_method_the_constructor_does_not_call(self) -> None:
        # mmengine-style: the framework calls init_weights() after building; the block's constructor does not
        original = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def init_weights(self):
        nn.init.trunc_normal_(self.lin.weight, std=0.02)
        nn.init.zeros_(self.lin.bias)

    def forward(self, x):
        return self.lin(x)
"""
        same = judged(original, original, class_name="Head")
        self.assertEqual(same["tier"], "equivalent", same)
        self.assertIn("then init_weights()", same["equivalence"]["variants"])
        report = judged(original.replace("std=0.02", "std=0.03"), original, class_name="Head")
        self.assertEqual(report.get("category"), "differs", report)

    def test_an_init_method_the_block_only_inherits_is_not_called(self) -> None:
        # the pulled file keeps the methods of a base class that something reaches: init_weights may not be there
        original = """
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def init_weights(self):
        nn.init.zeros_(self.lin.weight)


class Sub(Base):
    def forward(self, x):
        return self.lin(x)
"""
        copy = original.replace("    def init_weights(self):\n        nn.init.zeros_(self.lin.weight)\n", "")
        self.assertNotIn("init_weights", copy)
        report = judged(copy, original, class_name="Sub")
        self.assertEqual(report["tier"], "equivalent", report)


@needs_torch
class Forgery(unittest.TestCase):
    """The copy cannot choose what "the original" is: it never shares a process with it."""

    def test_aliasing_the_original_module_does_not_make_it_equivalent(self) -> None:
        forged = ORIGINAL.replace(
            "class Blk(nn.Module):",
            "class Blk(nn.Module):\n    import sys as _s\n    _s.modules['pk.m'] = _s.modules[__name__]\n    _s.modules['pk'] = _s.modules[__name__]",
            1,
        )
        forged = forged.replace("return x * factor", "return x * factor * 3")
        report = judged(forged)
        self.assertNotEqual(report["tier"], "equivalent", report)
        self.assertEqual(report.get("category"), "differs", report)

    def test_no_marker_of_validation_is_visible_to_the_block(self) -> None:
        probe = ORIGINAL.replace(
            "def scale(x, factor=2.0):",
            textwrap.dedent("""\
            import os, sys
            _seen = [k for k in os.environ if "NNRAG" in k.upper()] + [p for p in (os.getcwd(), os.environ.get("HOME", ""), __file__) if "nnrag" in p.lower()]
            _seen += [m for m in sys.modules if "nnrag" in m.lower()] + ([__name__] if __name__ != "blk" else [])
            if _seen:
                raise RuntimeError(f"validation markers: {_seen}")


            def scale(x, factor=2.0):"""),
            1,
        )
        report = judged(probe)
        self.assertTrue(report["ok"], report)

    def test_inputs_changed_in_place_by_both_sides_are_fresh_for_each(self) -> None:
        source = ORIGINAL.replace("    def forward(self, x):\n", "    def forward(self, x):\n        x.mul_(2)\n", 1)
        report = judged(source, source)
        self.assertEqual(report["tier"], "equivalent", report)

    def test_an_original_from_another_file_is_refused(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "orig", "pk"))
            open(os.path.join(tmp, "orig", "pk", "__init__.py"), "w").close()
            with open(os.path.join(tmp, "orig", "pk", "m.py"), "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(ORIGINAL))
            path = os.path.join(tmp, "blk.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(ORIGINAL))
            original = json.dumps(
                {"module": "pk.m", "class": "Blk", "path": os.path.join(tmp, "orig"), "file": os.path.join(tmp, "orig", "pk", "m.py"), "blob": "0" * 40}
            )
            proc = subprocess.run(
                [sys.executable, "-I", "-B", RUNNER, path, "--class", "Blk", "--original", original], capture_output=True, text=True, timeout=300, cwd=tmp
            )
            report = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(report["equivalence"]["status"], "unavailable")
        self.assertIn("changed since it was indexed", report["equivalence"]["reason"])

    def test_how_far_the_original_gets_is_reported(self) -> None:
        # a copy that runs: the report says the original reached forward too
        self.assertEqual(judged(ORIGINAL)["original_reached"], "forward")
        # a copy that cannot even compile: run alone, the original still says how far it gets, and nothing of the
        # copy is run
        alone = judged("this is not python (", ORIGINAL, "Blk", None, "--original-only")
        self.assertEqual(alone["original_reached"], "forward", alone)
        self.assertFalse(alone["ok"])
        self.assertIsNone(alone["tier"])
        broken = judged("x = 1", ORIGINAL.replace("class Blk", "raise RuntimeError('no import')\nclass Blk"), "Blk", None, "--original-only")
        self.assertIsNone(broken["original_reached"])
        self.assertIn("no import", broken["original_reason"])

    def test_an_original_whose_package_init_fails_is_imported_without_it(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "orig", "pk"))
            with open(os.path.join(tmp, "orig", "pk", "__init__.py"), "w") as fh:
                fh.write('__version__ = "1.2.0"\nimport surely_not_installed_optional_dependency\n')
            with open(os.path.join(tmp, "orig", "pk", "m.py"), "w", encoding="utf-8") as fh:
                # the module reads what the package's __init__ assigns from a literal (diffusers' __version__)
                fh.write(textwrap.dedent(ORIGINAL).replace("EPS = 1e-6", "from pk import __version__\nEPS = 1e-6"))
            path = os.path.join(tmp, "blk.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(ORIGINAL))
            original = json.dumps({"module": "pk.m", "class": "Blk", "path": os.path.join(tmp, "orig")})
            proc = subprocess.run(
                [sys.executable, "-I", "-B", RUNNER, path, "--class", "Blk", "--original", original], capture_output=True, text=True, timeout=300, cwd=tmp
            )
            report = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("without its package's __init__", report["equivalence"]["original"])


if __name__ == "__main__":
    unittest.main()


@needs_torch
class Coverage(unittest.TestCase):
    def test_definitions_the_probes_never_ran_are_named(self) -> None:
        source = ORIGINAL.replace("def scale(x, factor=2.0):", "def never_called(x):\n    return x * 7\n\n\ndef scale(x, factor=2.0):", 1)
        report = judged(source, source)
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["equivalence"]["not_exercised"], ["never_called"])


UNINITIALISED = """
import torch
from torch import nn


class Lazy(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.empty(64, dim))  # filled only by a checkpoint

    def forward(self, x):
        return self.lin(x)
"""


@unittest.skipUnless(HAS_TORCH and has_memory_fill(), "needs torch 2.1 or later (uninitialised memory filled)")
class UninitialisedMemory(unittest.TestCase):
    def test_a_parameter_made_with_empty_does_not_make_two_identical_blocks_differ(self) -> None:
        report = judged(UNINITIALISED, UNINITIALISED, "Lazy")
        self.assertEqual(report["tier"], "equivalent", report)


@needs_torch
class StrictJson(unittest.TestCase):
    def test_a_difference_of_inf_is_reported_in_strict_json(self) -> None:
        copy = ORIGINAL.replace("return x * factor", "return x * factor * float('inf')")

        def refuse(token: str) -> None:
            raise ValueError(f"not strict JSON: {token}")

        report = judged(copy, parse_constant=refuse)
        self.assertEqual(report["category"], "differs", report)
        self.assertEqual(report["equivalence"]["largest_difference"], "inf")


@needs_torch
class TensorDigests(unittest.TestCase):
    def test_a_tensor_is_hashed_in_place_as_its_bytes(self) -> None:
        # the state of a large model is hashed through a buffer over its memory, not a copy: the same digest as its
        # bytes for every kind of tensor the probes send (a scalar, an empty one, a transposed one, complex, bf16, bool)
        import hashlib

        import torch

        from nnrag_judge.worker.evidence import plain, raw_bytes

        cases = [
            torch.tensor(3.5),
            torch.zeros(0, 4),
            torch.arange(10),
            torch.ones(3, dtype=torch.bool),
            torch.randn(4, 5).t(),
            torch.randn(2, 3, dtype=torch.complex64),
            torch.randn(3, dtype=torch.bfloat16),
            torch.randint(0, 255, (5,), dtype=torch.uint8),
        ]
        for t in cases:
            p = plain(t, torch)
            self.assertEqual(hashlib.sha256(raw_bytes(p, torch)).hexdigest(), hashlib.sha256(p.numpy().tobytes()).hexdigest(), t.dtype)


class CompiledOperators(unittest.TestCase):
    """A probe the copy cannot run for want of compiled operators the judge saw its process lack (torchvision's `_C`
    ops, which the original's package loads) is not compared, and said so. Needs no torch."""

    def test_a_probe_that_needs_compiled_operators_in_the_copy_only_is_not_compared(self) -> None:
        from nnrag_judge.judge import equivalence
        from nnrag_judge.wire import protocol

        ran = ({"key": "eval|1", "value": {"$v": 3}}, b"")
        init = ({"key": "init|1", "value": {"$v": 1}}, b"")
        native = ({"key": "eval|1", "error": "RuntimeError: Couldn't load custom C++ ops.", "error_type": "RuntimeError"}, b"")
        # only when the judge saw the copy's process lack a library the original's loaded (judge.lacking_compiled)
        record = equivalence.compare([init, ran], [init, native], ["/x/pk/_C.so"])
        self.assertEqual(record["status"], "unavailable", record)
        self.assertIn("compiled operators", record["reason"])
        self.assertEqual(record["native"], ["/x/pk/_C.so"])
        # the same text with nothing lacking is the copy's word only: a difference
        with self.assertRaises(protocol.Failure) as said:
            equivalence.compare([init, ran], [init, native])
        self.assertEqual(said.exception.category, "differs")
        # any other error where the original runs is a difference, as before
        other = ({"key": "eval|1", "error": "RuntimeError: shapes do not match", "error_type": "RuntimeError"}, b"")
        with self.assertRaises(protocol.Failure) as got:
            equivalence.compare([init, ran], [init, other])
        self.assertEqual(got.exception.category, "differs")


class LackedLibraries(unittest.TestCase):
    """Which of the original's compiled libraries the copy lacked (judge.lacking_compiled): from the copy's /proc maps
    where the judge can read them, else from the copy's imports (a non-dumpable process in bubblewrap's namespace)."""

    def setUp(self) -> None:
        from types import SimpleNamespace

        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        package = os.path.join(self.tmp.name, "site", "pk")
        os.makedirs(os.path.join(package, "ops"))
        for init in (os.path.join(package, "__init__.py"), os.path.join(package, "ops", "__init__.py")):
            open(init, "w").close()
        self.library = os.path.join(package, "ops", "_C.so")
        open(self.library, "wb").close()
        self.side = SimpleNamespace(compiled=[self.library])
        self.request = SimpleNamespace(native=[])
        self.unread = SimpleNamespace(maps_unread=True, mapped=set())

    def lacking(self, text: str, job: object) -> list:
        from nnrag_judge.judge import judge

        path = os.path.join(self.tmp.name, "copy.py")
        with open(path, "w") as fh:
            fh.write(textwrap.dedent(text))
        return judge.lacking_compiled(self.side, job, self.request, path)  # type: ignore[arg-type]

    def test_a_copy_that_imports_nothing_of_the_package_lacked_what_it_names(self) -> None:
        calls = "import torch\ndef f(x):\n    return torch.ops.ops.nms(x)\n"
        self.assertEqual(self.lacking(calls, self.unread), [self.library])
        self.assertEqual(self.lacking("import torch\nNAME = '_C'\n", self.unread), [self.library])
        # a library the copy does not name excuses nothing
        self.assertEqual(self.lacking("import torch\n", self.unread), [])

    def test_a_copy_that_imports_the_package_anywhere_did_not_lack_it(self) -> None:
        for text in (
            "import pk.ops\nNAME = '_C'\n",
            "def f():\n    from pk.ops import _C\n    return _C\n",
            "import importlib\nNAME = '_C'\nm = importlib.import_module('pk.ops')\n",
            "NAME = '_C'\nm = __import__('pk')\n",
        ):
            with self.subTest(text=text):
                self.assertEqual(self.lacking(text, self.unread), [])

    def test_readable_maps_decide_where_there_are_some(self) -> None:
        from types import SimpleNamespace

        text = "import pk.ops\nNAME = '_C'\n"
        seen = SimpleNamespace(maps_unread=False, mapped={"/usr/lib/libc.so.6"})
        self.assertEqual(self.lacking(text, seen), [self.library])
        seen.mapped.add(self.library)
        self.assertEqual(self.lacking("NAME = '_C'\n", seen), [])
        # maps never read (no frame came) and none unreadable: nothing is known, nothing excused
        self.assertEqual(self.lacking("NAME = '_C'\n", SimpleNamespace(maps_unread=False, mapped=set())), [])


# a backward whose values vary from pass to pass, as a kernel reading memory it never wrote gives (torch 1.13's CPU
# backward of sep_vit's attention): the forward is exact, the gradients are not reproducible by the block itself
UNSTEADY = """
import os

import torch
from torch import nn


class Wobble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        noise = int.from_bytes(os.urandom(2), "little") / 65536.0
        return g * (2 + noise)


class Unsteady(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return Wobble.apply(self.lin(x))
"""


@needs_torch
class UnsteadyGradients(unittest.TestCase):
    def test_gradients_the_original_does_not_repeat_are_not_compared_and_said(self) -> None:
        report = judged(UNSTEADY, UNSTEADY, "Unsteady")
        self.assertEqual(report["tier"], "equivalent", report)
        record = report["equivalence"]
        self.assertTrue(record["unstable"] and all("gradients" in u for u in record["unstable"]), record)
        self.assertIn("gradients not compared", record["reason"])
        # outputs and state are still compared, bit for bit
        self.assertGreater(record["compared_values"], 50)
        # the original was run again to check its gradients only once they differed
        self.assertIn("steadiness", report["timings"], report["timings"])

    def test_a_changed_forward_still_differs_beside_unsteady_gradients(self) -> None:
        report = judged(UNSTEADY.replace("return x * 2", "return x * 3", 1), UNSTEADY, "Unsteady")
        self.assertEqual(report["category"], "differs", report)

    def test_steady_gradients_are_compared(self) -> None:
        report = judged(ORIGINAL)
        self.assertNotIn("unstable", report["equivalence"])
        # gradients that match cost no second backward: the original is not run again to check them
        self.assertNotIn("steadiness", report["timings"], report["timings"])


class UnstableField(unittest.TestCase):
    """The original's word that its gradients vary drops only gradients, only from a train step. Needs no torch."""

    def test_only_gradients_of_a_train_step_are_left_out(self) -> None:
        from nnrag_judge.judge import equivalence
        from nnrag_judge.wire import protocol

        def train(grads: int, unstable: object = None) -> tuple:
            body = {"key": "v|train", "value": {"$map": "dict", "items": {"output": {"$v": 1}, "grads": {"$v": grads}}}}
            if unstable is not None:
                body["unstable"] = unstable
            return (body, b"")

        record = equivalence.compare([train(1, ["grads"])], [train(2)])
        self.assertEqual(record["status"], "equivalent", record)
        self.assertEqual(record["compared_values"], 1)
        self.assertIn("the parameters' gradients", record["unstable"][0])
        # without the word, the same gradients differ
        with self.assertRaises(protocol.Failure) as got:
            equivalence.compare([train(1)], [train(2)])
        self.assertEqual(got.exception.category, "differs")
        # the copy's word counts for nothing
        with self.assertRaises(protocol.Failure):
            equivalence.compare([train(1)], [train(2, ["grads"])])
        # anything but gradients, or on another probe, is not ours
        for forged in (["output"], "grads", [1]):
            with self.assertRaises(protocol.Failure) as bad:
                equivalence.compare([train(1, forged)], [train(1)])
            self.assertEqual(bad.exception.category, "tampered")
        other = ({"key": "v|eval|1", "value": {"$v": 1}, "unstable": ["grads"]}, b"")
        with self.assertRaises(protocol.Failure) as bad:
            equivalence.compare([other], [({"key": "v|eval|1", "value": {"$v": 1}}, b"")])
        self.assertEqual(bad.exception.category, "tampered")
