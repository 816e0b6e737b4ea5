"""The arguments the judge builds a block with (arguments.py, repair.py, recipe.py); skipped without torch."""

import json
import unittest

from tests.support import judged, needs_torch

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


@needs_torch
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
        edited = judged(BUILT.replace("self.depth = depth", "self.depth = depth + 1"), BUILT, "Net", None, "--candidates", json.dumps([recipe]))
        self.assertEqual(edited["category"], "differs", edited)


CONSTRAINED = """
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
"""


@needs_torch
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


CHOICE = """
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
"""


@needs_torch
class ConstructorChoices(unittest.TestCase):
    """A value listed by the check is taken; a check the arguments cannot be read from (`not callable(scale)`) ends
    the repairs with the constructor's own error, not a recursion."""

    def test_a_listed_value_then_an_unreadable_check(self) -> None:
        report = judged(CHOICE, CHOICE, "Choice")
        self.assertEqual(report.get("category"), "instantiate", report)
        self.assertIn("scale must be callable", report["message"])
        self.assertNotIn("Recursion", report["message"])


TABLES = """
import torch
from torch import nn


class Backbone(nn.Module):
    arch_settings = {18: (2, 2), 34: (3, 4)}

    def __init__(self, depth, width=8):
        super().__init__()
        if depth not in self.arch_settings:
            raise KeyError(f"invalid depth {depth} for resnet")
        self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(sum(self.arch_settings[depth]))])

    def forward(self, x):
        return self.layers(x)


class Searched(Backbone):
    def __init__(self, depth, arch, width=8):
        super().__init__(depth=depth, width=width)
        self.arch_zoo = {"tiny": 1, "small": 2}
        assert arch in set(self.arch_zoo), f"Arch {arch} is not in default archs {set(self.arch_zoo)}"
        self.scale = self.arch_zoo[arch]

    def forward(self, x):
        return super().forward(x) * self.scale


class Passed(Backbone):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
"""


@needs_torch
class ConstructorTables(unittest.TestCase):
    """A value checked against a table the class keeps (OpenMMLab's `arch_settings`, `arch_zoo`) is one of its keys,
    also where a base class's constructor the block's calls does the check."""

    def test_keys_of_the_tables_a_base_and_the_block_check(self) -> None:
        report = judged(TABLES, TABLES, "Searched")
        self.assertEqual(report.get("tier"), "equivalent", report)
        self.assertEqual(report["kwargs"].get("depth", report["args"][0] if report["args"] else None), 18, report)

    def test_a_key_for_an_argument_the_block_passes_on_through_its_kwargs(self) -> None:
        report = judged(TABLES, TABLES, "Passed")
        self.assertEqual(report.get("tier"), "equivalent", report)
        self.assertEqual(report["kwargs"].get("depth"), 18, report)


LOOKED_UP = """
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
"""


@needs_torch
class StringOptionVariants(unittest.TestCase):
    """A string option the code both compares with a value and looks up in a table by is one variant per value: the
    same probe twice read as tampering (diffusers' CosmosPatchEmbed3d)."""

    def test_compared_and_looked_up_once(self) -> None:
        report = judged(LOOKED_UP, LOOKED_UP, "Looked")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIn("method='rearrange'", report["equivalence"]["variants"])
        edited = LOOKED_UP.replace("* self.w[1]", "* self.w[0]")
        self.assertEqual(judged(edited, LOOKED_UP, "Looked").get("category"), "differs")


WRAPPED_LOSS = """
import torch
from torch import nn


class FocalLoss(nn.Module):
    def __init__(self, loss_fcn, gamma=1.5, alpha=0.25):
        super().__init__()
        self.loss_fcn = loss_fcn
        self.gamma = gamma
        self.alpha = alpha
        self.reduction = loss_fcn.reduction
        self.loss_fcn.reduction = "none"

    def forward(self, pred, true):
        loss = self.loss_fcn(pred, true)
        p = torch.sigmoid(pred)
        p_t = true * p + (1 - true) * (1 - p)
        loss = loss * (1.0 - p_t) ** self.gamma
        return loss.mean() if self.reduction == "mean" else loss.sum()
"""


@needs_torch
class WrappedLoss(unittest.TestCase):
    def test_a_loss_a_block_wraps_is_a_loss_module(self) -> None:
        # YOLO's FocalLoss(loss_fcn): before, loss_fcn was 16 ("'int' object has no attribute 'reduction'")
        report = judged(WRAPPED_LOSS, WRAPPED_LOSS, "FocalLoss")
        self.assertEqual(report["tier"], "equivalent", report)


DIMENSIONS = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelDimensions:
    n_state: int
    n_head: int
    n_layer: int


class Encoder(nn.Module):
    def __init__(self, dims: ModelDimensions):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(dims.n_state, dims.n_state) for _ in range(dims.n_layer))
        self.heads = dims.n_head

    def forward(self, x):
        for block in self.blocks:
            x = block(x).relu()
        return x
"""

BASE_CONFIG = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    n_embd: int = 4096
    n_layer: int = 1


@dataclass
class {name}(Config):
    adapter_length: int = 2


class Adapter(nn.Module):
    def __init__(self, config: {name}):
        super().__init__()
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.prefix = nn.Parameter(torch.zeros(config.adapter_length, config.n_embd))

    def forward(self, x):
        return self.proj(x) + self.prefix.sum(0)
"""


@needs_torch
class ConfigurationObjects(unittest.TestCase):
    def test_a_dataclass_of_required_sizes(self) -> None:
        # whisper's `Whisper(dims: ModelDimensions)`: before, dims was 16 ("'int' object has no attribute 'n_mels'")
        report = judged(DIMENSIONS, DIMENSIONS, "Encoder")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_configuration_the_pulled_file_renamed(self) -> None:
        # litgpt's adapter `Config(BaseConfig)` is `Config_adapter` in the pulled file: it is still a configuration
        # (its header maps the name back, as a pull writes it)
        header = '# nnrag-provenance: {"renamed": {"pk.m.AdapterConfig": "Config_adapter"}}\n'
        copy = header + BASE_CONFIG.replace("{name}", "Config_adapter")
        original = BASE_CONFIG.replace("{name}", "AdapterConfig")
        report = judged(copy, original, "Adapter")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_renamed_configuration_that_prints_long(self) -> None:
        # litgpt's Config prints past the length the judge keeps of a repr: the copy's name (Config_adapter) is
        # longer, so cut before its name was mapped back it ended elsewhere and read 'differs' (7 litgpt blocks)
        header = '# nnrag-provenance: {"renamed": {"pk.m.AdapterConfig": "Config_adapter"}}\n'
        long = BASE_CONFIG.replace("n_layer: int = 1", "n_layer: int = 1\n    notes: str = 'x' * 1500")
        copy = header + long.replace("{name}", "Config_adapter")
        original = long.replace("{name}", "AdapterConfig")
        report = judged(copy, original, "Adapter")
        self.assertEqual(report["tier"], "equivalent", report)


CFG = """
import torch
from torch import nn


class NetCfg:
    def __init__(self, width=8, depth=2):
        self.width = width
        self.depth = depth


class Net(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(cfg.width, cfg.width) for _ in range(cfg.depth)])

    def forward(self, x):
        return self.layers(x)
"""


@needs_torch
class CfgClasses(unittest.TestCase):
    def test_a_configuration_class_named_cfg(self) -> None:
        # the pull takes a module's one `*Cfg` class in for an unannotated `cfg`, as it does a `*Config`: the judge
        # now builds it too (before: 'int' object has no attribute 'width')
        report = judged(CFG, CFG, "Net")
        self.assertEqual(report["tier"], "equivalent", report)


HUB = """
import torch
from torch import nn


class PretrainedConfig:
    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)


class BertConfig(PretrainedConfig):
    def __init__(self, hidden_size=768, vocab_size=30522, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size


class GPTConfig(PretrainedConfig):
    def __init__(self, n_embd=768, **kwargs):
        super().__init__(**kwargs)
        self.n_embd = n_embd


class PreTrainedModel(nn.Module):
    config_class = None

    def __init__(self, config: PretrainedConfig, *inputs, **kwargs):
        super().__init__()
        if not isinstance(config, PretrainedConfig):
            raise ValueError("Parameter config should be an instance of class `PretrainedConfig`")
        self.config = config


class BertLM(PreTrainedModel):
    config_class = BertConfig

    def __init__(self, config):
        super().__init__(config)
        self.emb = nn.Embedding(config.vocab_size, config.hidden_size)
        self.lin = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, input_ids):
        return self.lin(self.emb(input_ids))
"""


@needs_torch
class DeclaredConfiguration(unittest.TestCase):
    def test_a_model_is_built_from_the_configuration_class_it_declares(self) -> None:
        # two configurations in the module and a base class that checks isinstance: `config_class` says which
        report = judged(HUB, HUB, "BertLM")
        self.assertEqual(report["tier"], "equivalent", report)


FACTORY = """
import torch
from torch import nn


class Stem(nn.Module):
    def __init__(self, width, block_class, norm, depth=2):
        super().__init__()
        self.blocks = nn.Sequential(*[block_class(width, width) for _ in range(depth)])
        self.norm = norm(width)
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(self.norm(self.blocks(x)))
"""


@needs_torch
class CalledParameters(unittest.TestCase):
    def test_a_parameter_the_constructor_calls_is_given_a_class(self) -> None:
        # `block_class` and `norm` guessed as numbers: "'int' object is not callable"
        report = judged(FACTORY, FACTORY, "Stem")
        self.assertIn(report["tier"], ("forward", "equivalent"), report)
        self.assertNotIn("not callable", report.get("message") or "")


class ReportedArguments(unittest.TestCase):
    """The arguments a report shows: a class or a function is a name that runs in the pulled file, not a string."""

    @needs_torch
    def test_classes_and_functions_are_names_strings_stay_strings(self) -> None:
        import torch
        from torch import nn

        from nnrag_judge.worker.arguments import jsonable

        class Local(nn.Module):
            pass

        kwargs = {"activation": nn.Identity, "fn": torch.tanh, "mode": "Identity", "own": Local, "inst": nn.ReLU()}
        got = jsonable([16, (2, 3), kwargs])
        named = {"activation": {"$name": "torch.nn.Identity"}, "fn": {"$name": "torch.tanh"}, "own": {"$name": "Local"}}
        self.assertEqual(got, [16, [2, 3], {**named, "mode": "Identity", "inst": "ReLU(...)"}])
        json.dumps(got)


GIVEN = """
from typing import Callable
import torch
from torch import nn


def reset(value):
    for p in value.parameters():
        p.data.zero_()


class GraphLike(nn.Module):
    def __init__(self, nn: Callable, eps=0.0):
        super().__init__()
        self.nn = nn
        self.eps = eps
        reset(self.nn)

    def forward(self, x):
        return self.nn((1 + self.eps) * x)


class InfoMax(nn.Module):
    def __init__(self, hidden_channels, encoder, summary, corruption):
        super().__init__()
        self.encoder = encoder
        self.summary = summary
        self.corruption = corruption
        self.weight = nn.Parameter(torch.ones(hidden_channels, hidden_channels))

    def forward(self, x, scale):
        pos = self.encoder(x, scale)
        neg = self.encoder(*self.corruption(x, scale))
        return pos @ self.weight, neg @ self.weight, self.summary(pos, x)
"""


@needs_torch
class ModulesAndFunctionsGiven(unittest.TestCase):
    def test_a_module_or_function_the_block_keeps_and_calls_is_one(self) -> None:
        # 'int' object is not callable, 'int' object has no attribute 'parameters': a kept argument it calls or
        # resets is a module (Identity for one input) or a module passing its first input on
        for name in ("GraphLike", "InfoMax"):
            report = judged(GIVEN, GIVEN, name)
            self.assertTrue(report["ok"], report)
            self.assertEqual(report["tier"], "equivalent", report)


SHAPES = """
from collections import namedtuple
from dataclasses import dataclass
from typing import Optional
from torch import nn


class ShapeSpec(namedtuple("_ShapeSpec", ["channels", "height", "width", "stride"])):
    def __new__(cls, channels=None, height=None, width=None, stride=None):
        return super().__new__(cls, channels, height, width, stride)


@dataclass
class FeatureShape:
    channels: Optional[int] = None
    stride: Optional[int] = None


class Head(nn.Module):
    def __init__(self, input_shape: ShapeSpec, num_classes=3):
        super().__init__()
        self.conv = nn.Conv2d(input_shape.channels, num_classes, 1, stride=input_shape.stride)

    def forward(self, x):
        return self.conv(x)


class Neck(nn.Module):
    def __init__(self, shape: FeatureShape):
        super().__init__()
        self.lin = nn.Linear(shape.channels, shape.channels * shape.stride)

    def forward(self, x):
        return self.lin(x)
"""


@needs_torch
class ShapeDescriptors(unittest.TestCase):
    def test_a_shape_descriptor_gets_numbers_for_its_unset_fields(self) -> None:
        # "'int' object has no attribute 'channels'", "unsupported operand type(s) ... NoneType": a named tuple or a
        # dataclass whose fields all default to None is made with the numbers its field names suggest
        for name in ("Head", "Neck"):
            report = judged(SHAPES, SHAPES, name)
            self.assertEqual(report["tier"], "equivalent", report)


PROCESSED = """
import torch
from torch import nn


class SpatialProcessor:
    def __call__(self, attn, hidden_states):
        return attn.to_out(attn.to_q(hidden_states).softmax(-1))


class Attention(nn.Module):
    def __init__(self, dim: int, processor: "SpatialProcessor" = None):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_out = nn.Linear(dim, dim)
        self.processor = processor
        if self.processor is None:
            raise ValueError("Attention requires a processor.")

    def forward(self, hidden_states):
        return self.processor(self, hidden_states=hidden_states)
"""


@needs_torch
class HandedStrategies(unittest.TestCase):
    def test_a_strategy_the_block_hands_itself_to_is_not_guessed(self) -> None:
        # a processor called with the block (`self.processor(self, x)`) does the block's work: a module passing its
        # input on would make a forward of nothing pass; the copy may also lack the class an annotation names, so an
        # object of it would differ from the original's: the block honestly fails on both sides alike
        report = judged(PROCESSED, PROCESSED, "Attention")
        self.assertFalse(report["ok"], report)
        self.assertNotEqual(report.get("category"), "differs", report)


INDEXED = """
import torch
from torch import nn
from torch.nn import functional as F


class Lookup(nn.Module):
    def __init__(self, rows=7, width=4):
        super().__init__()
        self.table = nn.Parameter(torch.randn(rows, width))

    def forward(self, idx):
        return self.table[idx] * 2


class Labels(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.classes = classes
        self.proj = nn.Linear(5, 3)

    def forward(self, labels):
        return self.proj(F.one_hot(labels, 5).float())


class Relations(nn.Module):
    def __init__(self, relations=3, width=4):
        super().__init__()
        self.rel = nn.Embedding(relations, width)

    def forward(self, kinds):
        return F.embedding(kinds, self.rel.weight).sum(-1)
"""


@needs_torch
class IndexInputs(unittest.TestCase):
    def test_an_input_forward_indexes_a_table_with_is_integers_below_its_rows(self) -> None:
        # "tensors used as indices must be long", "index out of range in self": the input's first consumer is a table
        for name in ("Lookup", "Labels", "Relations"):
            report = judged(INDEXED, INDEXED, name)
            self.assertEqual(report["tier"], "equivalent", report)


HETERO = """
from typing import Dict, List, Tuple
import torch
from torch import nn

NodeType = str
EdgeType = Tuple[str, str, str]
Metadata = Tuple[List[NodeType], List[EdgeType]]


class HeteroLin(nn.Module):
    def __init__(self, in_channels, out_channels, metadata: Metadata):
        super().__init__()
        self.node_types, self.edge_types = metadata
        self.lin = nn.ModuleDict({t: nn.Linear(in_channels, out_channels) for t in self.node_types})
        self.rel = nn.ModuleDict({"__".join(e): nn.Linear(out_channels, out_channels) for e in self.edge_types})

    def forward(self, x_dict: Dict[NodeType, torch.Tensor], edge_index_dict: Dict[EdgeType, torch.Tensor]):
        h = {t: self.lin[t](x) for t, x in x_dict.items()}
        out = {t: torch.zeros_like(v) for t, v in h.items()}
        for (s, r, d), ei in edge_index_dict.items():
            out[d] = out[d].index_add(0, ei[1], self.rel["__".join((s, r, d))](h[s])[ei[0]])
        return out
"""


@needs_torch
class HeterogeneousGraphs(unittest.TestCase):
    def test_metadata_and_dicts_of_node_and_edge_types(self) -> None:
        # "'list' object has no attribute 'items'", "cannot unpack non-iterable int": node and edge types guessed,
        # features per node type and an edge index per edge type fed
        report = judged(HETERO, HETERO, "HeteroLin")
        self.assertEqual(report["tier"], "equivalent", report)
