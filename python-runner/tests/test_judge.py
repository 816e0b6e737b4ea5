"""The judge compares a copy with its original across processes and catches one-line changes: these tests need
torch (they are skipped without it)."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "judge.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None

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


def judged(copy_source: str, original_source: str = ORIGINAL, class_name: str = "Blk",
           parse_constant: Optional[Callable[[str], object]] = None, *extra: str) -> dict:
    """Validate `copy_source` against `original_source` installed as pk.m in a folder of its own; the report's last
    line read as JSON (`parse_constant`: what NaN and Infinity tokens become, as in `json.loads`)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "orig", "pk"))
        open(os.path.join(tmp, "orig", "pk", "__init__.py"), "w").close()
        with open(os.path.join(tmp, "orig", "pk", "m.py"), "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(original_source))
        os.makedirs(os.path.join(tmp, "out"))
        path = os.path.join(tmp, "out", "blk.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(copy_source))
        original = json.dumps({"module": "pk.m", "class": class_name, "path": os.path.join(tmp, "orig"),
                               "file": os.path.join(tmp, "orig", "pk", "m.py")})
        proc = subprocess.run([sys.executable, "-I", "-B", RUNNER, path, "--class", class_name, "--original", original, *extra],
                              capture_output=True, text=True, timeout=300, cwd=tmp)
        return json.loads(proc.stdout.strip().splitlines()[-1], parse_constant=parse_constant)


@unittest.skipUnless(HAS_TORCH, "needs torch")
class Mutants(unittest.TestCase):
    """One-line changes the judge must see, each in a place the old judge missed."""

    def assertDiffers(self, old: str, new: str) -> None:
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
        self.assertDiffers("return x * factor", "return x * factor * 1.0000001")

    def test_a_changed_default(self) -> None:
        self.assertDiffers("def scale(x, factor=2.0)", "def scale(x, factor=2.5)")

    def test_a_tiny_eps(self) -> None:
        self.assertDiffers("EPS = 1e-6", "EPS = 3e-6")

    def test_a_numeric_default_only_train_mode_shows(self) -> None:
        self.assertDiffers("momentum=0.1,", "momentum=0.2,")

    def test_dropout_probability_shows_in_train_mode(self) -> None:
        self.assertDiffers("p=0.5):", "p=0.4):")

    def test_a_branch_of_a_flipped_option(self) -> None:
        self.assertDiffers("y = y + 1", "y = y + 2")

    def test_a_random_branch(self) -> None:
        self.assertDiffers("y = y.flip(0)", "y = y")

    def test_a_field_of_an_output_object(self) -> None:
        self.assertDiffers("Stats(y.mean(), 3)", "Stats(y.mean(), 4)")

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
        self.assertDiffers("self.lin = nn.Linear(dim, dim)", "self.lin = nn.Linear(dim, dim)\n        nn.init.zeros_(self.lin.bias)")

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


@unittest.skipUnless(HAS_TORCH, "needs torch")
class Forgery(unittest.TestCase):
    """The copy cannot choose what "the original" is: it never shares a process with it."""

    def test_aliasing_the_original_module_does_not_make_it_equivalent(self) -> None:
        forged = ORIGINAL.replace("class Blk(nn.Module):", "class Blk(nn.Module):\n    import sys as _s\n"
                                  "    _s.modules['pk.m'] = _s.modules[__name__]\n    _s.modules['pk'] = _s.modules[__name__]", 1)
        forged = forged.replace("return x * factor", "return x * factor * 3")
        report = judged(forged)
        self.assertNotEqual(report["tier"], "equivalent", report)
        self.assertEqual(report.get("category"), "differs", report)

    def test_no_marker_of_validation_is_visible_to_the_block(self) -> None:
        probe = ORIGINAL.replace("def scale(x, factor=2.0):", textwrap.dedent('''\
            import os, sys
            _seen = [k for k in os.environ if "NNRAG" in k.upper()] + [p for p in (os.getcwd(), os.environ.get("HOME", ""), __file__) if "nnrag" in p.lower()]
            _seen += [m for m in sys.modules if "nnrag" in m.lower()] + ([__name__] if __name__ != "blk" else [])
            if _seen:
                raise RuntimeError(f"validation markers: {_seen}")


            def scale(x, factor=2.0):'''), 1)
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
            original = json.dumps({"module": "pk.m", "class": "Blk", "path": os.path.join(tmp, "orig"),
                                   "file": os.path.join(tmp, "orig", "pk", "m.py"), "blob": "0" * 40})
            proc = subprocess.run([sys.executable, "-I", "-B", RUNNER, path, "--class", "Blk", "--original", original],
                                  capture_output=True, text=True, timeout=300, cwd=tmp)
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
        broken = judged("x = 1", ORIGINAL.replace("class Blk", "raise RuntimeError('no import')\nclass Blk"), "Blk",
                        None, "--original-only")
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
            proc = subprocess.run([sys.executable, "-I", "-B", RUNNER, path, "--class", "Blk", "--original", original],
                                  capture_output=True, text=True, timeout=300, cwd=tmp)
            report = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("without its package's __init__", report["equivalence"]["original"])


if __name__ == "__main__":
    unittest.main()


GRAPH = """
import torch
from torch import nn


class MessagePassing(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        src, dst = edge_index
        out = torch.zeros(x.size(0), self.lin.out_features).index_add_(0, dst, self.lin(x)[src])
        return out


class Pool(nn.Module):
    def forward(self, x, batch):
        size = int(batch.max()) + 1
        return torch.zeros(size, x.size(1)).scatter_reduce(0, batch.unsqueeze(1).expand_as(x), x, reduce="amax", include_self=False)
"""


@unittest.skipUnless(HAS_TORCH, "needs torch")
class GraphInputs(unittest.TestCase):
    """Layers that take node features and integer indices get integer index tensors over the nodes."""

    def test_an_edge_index_is_an_integer_pair_over_the_nodes(self) -> None:
        report = judged(GRAPH, GRAPH, "MessagePassing")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(len(report["input_shapes"]), 2)
        self.assertEqual(report["input_shapes"][1][0], 2)

    def test_a_batch_vector_is_one_index_per_node(self) -> None:
        import torch  # noqa: F401 - scatter_reduce is torch 1.12+
        report = judged(GRAPH, GRAPH, "Pool")
        self.assertEqual(report["tier"], "equivalent", report)


DOCUMENTED = '''
import torch
from torch import nn


class Fold(nn.Module):
    """Sums a sequence of pairs of channels.

    Example:
        >>> pairs = torch.randn(2, 6, 5)
        >>> weights = torch.ones(5)
        >>> out = Fold()(pairs, weights)
    """

    def forward(self, x, w):
        return (x.view(x.shape[0], 3, 2, x.shape[-1]) * w).sum(2)
'''


@unittest.skipUnless(HAS_TORCH, "needs torch")
class DocstringInputs(unittest.TestCase):
    """A block whose layers say nothing of its input is fed what its docstring example feeds it."""

    def test_the_example_tensors_in_the_order_of_the_example_call(self) -> None:
        report = judged(DOCUMENTED, DOCUMENTED, "Fold")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], [[2, 6, 5], [5]])


@unittest.skipUnless(HAS_TORCH, "needs torch")
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


def has_memory_fill() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return hasattr(getattr(torch.utils, "deterministic", None), "fill_uninitialized_memory")


BUILT = """
import functools
import torch
from torch import nn


class StageConfig:
    def __init__(self, width, depth):
        self.width = width
        self.depth = depth


class Unit(nn.Module):
    def __init__(self, width, norm_layer):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.norm = norm_layer(width)

    def forward(self, x):
        return self.norm(self.lin(x)).relu()


class Net(nn.Module):
    def __init__(self, unit, stages, norm_layer, sizes=(8, 8)):
        super().__init__()
        if not all(isinstance(s, StageConfig) for s in stages):
            raise TypeError("stages must be StageConfig")
        self.body = nn.Sequential(*[unit(s.width, norm_layer) for s in stages for _ in range(s.depth)])
        self.sizes = tuple(sizes)

    def forward(self, x):
        return self.body(x)


def net_small():
    stages = [StageConfig(8, 1), StageConfig(8, 2)]
    return Net(Unit, stages, functools.partial(nn.BatchNorm1d, eps=1e-3), sizes=(8, 8))
"""


@unittest.skipUnless(HAS_TORCH, "needs torch")
class BuilderRecipe(unittest.TestCase):
    def test_what_the_builder_built_is_replayed_without_it(self) -> None:
        # no guessed argument set builds the block; its builder does, and says how, in the argument language of
        # call sites: the class given, the configuration objects built, the partial
        self.assertEqual(judged(BUILT, BUILT, "Net")["category"], "instantiate")
        built = judged(BUILT, BUILT, "Net", None, "--builder", "net_small")
        self.assertTrue(built["ok"], built)
        recipe = built["recipe"]
        self.assertEqual(recipe["args"][0], {"$name": "Unit"})
        self.assertEqual(recipe["args"][1][0], {"$call": "StageConfig", "args": [8, 1], "kwargs": {}})
        self.assertEqual(recipe["args"][2]["$partial"], {"$name": "nn.BatchNorm1d"})
        self.assertEqual(recipe["kwargs"], {"sizes": {"$tuple": [8, 8]}})
        replayed = judged(BUILT, BUILT, "Net", None, "--candidates", json.dumps([recipe]))
        self.assertEqual(replayed["tier"], "equivalent", replayed)
        self.assertEqual(replayed["kwargs"].get("sizes"), [8, 8], replayed)
        # replayed on a copy whose configuration class was edited, the edit shows
        edited = judged(BUILT.replace("self.depth = depth", "self.depth = depth + 1"), BUILT, "Net", None,
                        "--candidates", json.dumps([recipe]))
        self.assertEqual(edited["category"], "differs", edited)


@unittest.skipUnless(HAS_TORCH and has_memory_fill(), "needs torch 2.1 or later (uninitialised memory filled)")
class UninitialisedMemory(unittest.TestCase):
    def test_a_parameter_made_with_empty_does_not_make_two_identical_blocks_differ(self) -> None:
        report = judged(UNINITIALISED, UNINITIALISED, "Lazy")
        self.assertEqual(report["tier"], "equivalent", report)


@unittest.skipUnless(HAS_TORCH, "needs torch")
class StrictJson(unittest.TestCase):
    def test_a_difference_of_inf_is_reported_in_strict_json(self) -> None:
        copy = ORIGINAL.replace("return x * factor", "return x * factor * float('inf')")

        def refuse(token: str) -> None:
            raise ValueError(f"not strict JSON: {token}")

        report = judged(copy, parse_constant=refuse)
        self.assertEqual(report["category"], "differs", report)
        self.assertEqual(report["equivalence"]["largest_difference"], "inf")


CONSTRAINED = '''
import torch
from torch import nn


def exists(v):
    return v is not None


class Stages(nn.Module):
    def __init__(self, dim, depth, dims, prob, ratio=None):
        super().__init__()
        assert isinstance(depth, tuple), "depth is a tuple of blocks per stage"
        assert len(dims) == 2, "dims must be a pair"
        assert 0 <= prob < 1.
        assert exists(ratio), "ratio must be supplied"
        self.ph, self.pw = dims
        self.stages = nn.ModuleList([nn.Linear(dim, dim) for _ in depth])
        self.scale = ratio

    def forward(self, x):
        for stage in self.stages:
            x = stage(x) * self.scale
        return x


class Heads(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        if dim % heads != 0:
            raise ValueError("dim must be divisible by heads")
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class Wrapper(nn.Module):
    def __init__(self, inner):
        super().__init__()
        assert isinstance(inner, Stages)
        self.inner = inner

    def forward(self, x):
        return self.inner(x) * 2
'''


@unittest.skipUnless(HAS_TORCH, "needs torch")
class ConstructorConstraints(unittest.TestCase):
    """A guessed argument set that the block's constructor rejects is changed as the failing statement asks, alike on
    both sides; a wrapped function is a module that runs."""

    def test_asserts_on_the_arguments_are_satisfied(self) -> None:
        report = judged(CONSTRAINED, CONSTRAINED, "Stages")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_raise_under_a_condition_is_avoided(self) -> None:
        report = judged(CONSTRAINED, CONSTRAINED.replace("heads, batch_first=True", "heads * 1, batch_first=True"), "Heads")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_wrapped_function_and_an_object_of_a_named_class(self) -> None:
        self.assertEqual(judged(CONSTRAINED, CONSTRAINED, "Residual")["tier"], "equivalent")
        self.assertEqual(judged(CONSTRAINED, CONSTRAINED, "Wrapper")["tier"], "equivalent")

    def test_a_changed_bound_still_differs(self) -> None:
        edited = CONSTRAINED.replace("x = stage(x) * self.scale", "x = stage(x) * self.scale * 1.01")
        report = judged(edited, CONSTRAINED, "Stages")
        self.assertEqual(report.get("category"), "differs", report)
        self.assertEqual(report["kwargs"]["depth"], [1, 1])
        self.assertLess(report["kwargs"]["prob"], 1)


CHOICE = '''
import torch
from torch import nn


class Choice(nn.Module):
    def __init__(self, dim, mode, scale):
        super().__init__()
        if mode not in ["grid", "window"]:
            raise ValueError("mode is grid or window")
        if not callable(scale):
            raise TypeError("scale must be callable")
        self.lin = nn.Linear(dim, dim)
        self.mode = mode

    def forward(self, x):
        return self.lin(x) if self.mode == "grid" else -self.lin(x)
'''


@unittest.skipUnless(HAS_TORCH, "needs torch")
class ConstructorChoices(unittest.TestCase):
    """A value listed by the check is taken; a check the arguments cannot be read from (`not callable(scale)`) ends
    the repairs with the constructor's own error, not a recursion."""

    def test_a_listed_value_then_an_unreadable_check(self) -> None:
        report = judged(CHOICE, CHOICE, "Choice")
        self.assertEqual(report.get("category"), "instantiate", report)
        self.assertIn("scale must be callable", report["message"])
        self.assertNotIn("Recursion", report["message"])


SHAPED = '''
from typing import List

import torch
from torch import nn


class GridMixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, H, W):
        B, N, C = x.shape
        y = self.dw(x.transpose(1, 2).reshape(B, C, H, W)).flatten(2).transpose(1, 2)
        return self.proj(x + y)


class ShapeMixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, hw_shape):
        B, N, C = x.shape
        return self.proj(x).transpose(1, 2).reshape(B, C, *hw_shape)


class Unit(nn.Module):
    def __init__(self, channels, act_layer, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = act_layer()
        if norm_layer is not None:
            self.add_module("norm", norm_layer)  # a class where a module is wanted: only None builds
        self.norm_layer = norm_layer

    def forward(self, x):
        return self.conv(self.act(x))


class Large(nn.Module):
    def __init__(self, img_size=1024, patch_size=16, dim=8):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch_size, patch_size)
        self.pos = nn.Parameter(torch.randn(1, dim, img_size // patch_size, img_size // patch_size))

    def forward(self, x):
        return torch.cat([self.proj(x), self.pos.expand(x.shape[0], -1, -1, -1)], 1)  # the sizes must agree


class Neck(nn.Module):
    def __init__(self, in_channels: List[int], out_channels):
        super().__init__()
        self.in_channels = in_channels
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)

    def forward(self, inputs):
        assert isinstance(inputs, (list, tuple)) and len(inputs) == len(self.in_channels)
        outs = [conv(x) for conv, x in zip(self.lateral, inputs)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] = outs[i - 1] + nn.functional.interpolate(outs[i], size=outs[i - 1].shape[2:])
        return outs


class Encoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.embed_dim = dim
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Head(nn.Module):
    def __init__(self, encoder: Encoder, bank):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("bank", bank.float().mean(0, keepdim=True))
        self.out = nn.Linear(encoder.embed_dim, 4)

    def forward(self, x):
        return self.out(self.encoder(x))
'''


SIGNATURES = '''
from typing import Optional, Tuple

import torch
from torch import nn


class TwoWay(nn.Module):
    def __init__(self, embedding_dim, mlp_dim):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.q = nn.Linear(embedding_dim, mlp_dim)
        self.k = nn.Linear(embedding_dim, mlp_dim)

    def forward(self, image_embedding, image_pe, point_embedding):
        """
        Args:
          image_embedding (torch.Tensor): image to attend to. Should be shape
            B x embedding_dim x h x w for any h and w.
          image_pe (torch.Tensor): the positional encoding. Must
            have the same shape as image_embedding.
          point_embedding (torch.Tensor): the query points.
            Must have shape B x N_points x embedding_dim for any N_points.
        """
        b, c, h, w = image_embedding.shape
        keys = (image_embedding + image_pe).flatten(2).transpose(1, 2)
        return self.q(point_embedding) @ self.k(keys).transpose(1, 2)


class Listed(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels = in_channels
        self.proj = nn.Conv1d(in_channels, out_channels, 1)

    def forward(self, hidden_states, temb):
        r"""
        Args:
            hidden_states (`torch.Tensor` of shape `(batch_size, channel, sequence_length, 3)`):
                the states.
            temb (`torch.Tensor` of shape `(batch size, in_channels)`): the time.
        """
        return self.proj(hidden_states.mean(-1)) + temb.sum()


class CrossAttention(nn.Module):
    def __init__(self, dim, context_dim, inner=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner)
        self.to_kv = nn.Linear(context_dim, inner * 2)

    def forward(self, x, context):
        q = self.to_q(self.norm(x))
        k, v = self.to_kv(context).chunk(2, dim=-1)
        return (q @ k.transpose(1, 2)).softmax(-1) @ v


class Motion(nn.Module):
    def __init__(self, corr_channels):
        super().__init__()
        self.convflow = nn.Conv2d(2, 8, 7, padding=3)
        self.convcorr = nn.Conv2d(corr_channels, 8, 1)

    def forward(self, flow, corr_features):
        return torch.cat([self.convflow(flow), self.convcorr(corr_features)], 1)


class Touchy(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    @property
    def width(self):
        raise RuntimeError("read before it is set")

    def forward(self, x):
        """
        Args:
            x: tokens of shape (B, N, width)
        """
        return self.lin(x)


class Prompted(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.empty = nn.Parameter(torch.randn(1, dim))
        self.point = nn.Linear(2, dim)

    def forward(self, points: Optional[torch.Tensor], boxes: Optional[torch.Tensor]) -> torch.Tensor:
        if points is None and boxes is None:
            return self.empty * 2
        return self.point(points)


class Grid(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.freq = nn.Parameter(torch.randn(2, dim))

    def forward(self, size: Tuple[int, int]) -> torch.Tensor:
        h, w = size
        ys, xs = torch.meshgrid(torch.arange(h) / h, torch.arange(w) / w, indexing="ij")
        return torch.stack([ys, xs], -1) @ self.freq
'''


LOOKED_UP = '''
import torch
from torch import nn

TABLE = {"haar": torch.tensor([1.0, 1.0]), "rearrange": torch.tensor([1.0, -1.0])}


class Looked(nn.Module):
    def __init__(self, dim=4, method: str = "haar"):
        super().__init__()
        self.method = method
        self.register_buffer("w", TABLE.get(method).clone())
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if self.method == "rearrange":
            return self.lin(x) * self.w[1]
        return self.lin(x) * self.w[0]
'''


@unittest.skipUnless(HAS_TORCH, "needs torch")
class StringOptionVariants(unittest.TestCase):
    """A string option the code both compares with a value and looks up in a table by is one variant per value: the
    same probe twice read as tampering (diffusers' CosmosPatchEmbed3d)."""

    def test_compared_and_looked_up_once(self) -> None:
        report = judged(LOOKED_UP, LOOKED_UP, "Looked")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("method='rearrange'", report["equivalence"]["variants"])
        edited = LOOKED_UP.replace("* self.w[1]", "* self.w[0]")
        self.assertEqual(judged(edited, LOOKED_UP, "Looked").get("category"), "differs")


VIDEO = '''
import torch
from torch import nn


class NoneWidths(nn.Module):
    def __init__(self, hidden_size=None, cross_attention_dim=None):
        super().__init__()
        self.to_k = nn.Linear(cross_attention_dim or hidden_size, hidden_size)

    def forward(self, x):
        return self.to_k(x)


class VideoBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.conv = nn.Conv3d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(self.norm(x))


class FoldedNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)

    def forward(self, x):
        b, c, t, h, w = x.shape
        x = x.permute(0, 2, 1, 3, 4).flatten(0, 1)
        return self.norm(x).unflatten(0, (b, t)).permute(0, 2, 1, 3, 4)
'''


@unittest.skipUnless(HAS_TORCH, "needs torch")
class VideoInputsAndNoneWidths(unittest.TestCase):
    """A norm-first block with 3-d convolutions, or a norm that folds time into the batch, gets a 5-d input with the
    norm's channels; widths left at None by default and failing deeper than the block's constructor (in nn.Linear)
    are guessed."""

    def test_video_blocks(self) -> None:
        for name in ("VideoBlock", "FoldedNorm"):
            report = judged(VIDEO, VIDEO, name)
            self.assertEqual(report["tier"], "equivalent", report)
            self.assertEqual(len(report["input_shapes"][0]), 5, report)

    def test_widths_left_at_none(self) -> None:
        report = judged(VIDEO, VIDEO, "NoneWidths")
        self.assertEqual(report["tier"], "equivalent", report)
        edited = VIDEO.replace("return self.to_k(x)", "return self.to_k(x) + 1")
        self.assertEqual(judged(edited, VIDEO, "NoneWidths").get("category"), "differs")


@unittest.skipUnless(HAS_TORCH, "needs torch")
class DocumentedAndAnnotatedInputs(unittest.TestCase):
    """Inputs from what forward says of its parameters: the shapes its docstring gives (`B x embedding_dim x h x w`,
    `(batch_size, channel, ...)`, "the same shape as"), None for parameters that are all optional, a small grid for a
    `Tuple[int, int]`, each input shaped for the layer its name is passed to (`self.to_kv(context)`); an edited copy
    still differs."""

    def test_shapes_from_the_docstring(self) -> None:
        for name in ("TwoWay", "Listed"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(judged(SIGNATURES, SIGNATURES, "TwoWay")["input_shapes"], [[2, 16, 8, 8], [2, 16, 8, 8], [2, 8, 16]])

    def test_each_input_shaped_for_the_layer_it_enters(self) -> None:
        for name in ("CrossAttention", "Motion"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(judged(SIGNATURES, SIGNATURES, "Motion")["input_shapes"], [[2, 2, 16, 16], [2, 16, 16, 16]])

    def test_a_property_that_raises_when_read_leaves_the_other_inputs(self) -> None:
        report = judged(SIGNATURES, SIGNATURES, "Touchy")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_optional_prompts_and_a_size(self) -> None:
        for name in ("Prompted", "Grid"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        edited = SIGNATURES.replace("return self.empty * 2", "return self.empty * 3")
        self.assertEqual(judged(edited, SIGNATURES, "Prompted").get("category"), "differs")


@unittest.skipUnless(HAS_TORCH, "needs torch")
class ShapedInputsAndArguments(unittest.TestCase):
    """Tokens with their grid (`forward(x, H, W)`, `forward(x, hw_shape)`) get a square token count and its sides; a
    required norm factory the constructor cannot take is tried as None; a model made for large images is built for
    small ones; a neck that takes a list of feature maps gets a pyramid; an argument the constructor reads a tensor's
    attribute of gets a tensor, one it reads a module's attribute of an object of the class its source names."""

    def test_tokens_with_their_grid(self) -> None:
        for name in ("GridMixer", "ShapeMixer"):
            report = judged(SHAPED, SHAPED, name)
            self.assertEqual(report["tier"], "equivalent", report)

    def test_a_feature_pyramid_for_a_neck(self) -> None:
        report = judged(SHAPED, SHAPED, "Neck")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_large_default_image_made_small(self) -> None:
        report = judged(SHAPED, SHAPED, "Large")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["kwargs"]["img_size"], 64)

    def test_a_norm_factory_left_out(self) -> None:
        report = judged(SHAPED, SHAPED, "Unit")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIsNone(report["kwargs"]["norm_layer"])

    def test_arguments_read_as_a_tensor_and_as_a_module(self) -> None:
        report = judged(SHAPED, SHAPED, "Head")
        self.assertEqual(report["tier"], "equivalent", report)
        edited = SHAPED.replace("return self.lin(x)", "return self.lin(x) * 1.01")
        self.assertEqual(judged(edited, SHAPED, "Head").get("category"), "differs")
