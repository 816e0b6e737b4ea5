"""Worker side: the constructor arguments to try for a block (from how its repository calls it, its defaults and
its parameter names), and the variants that exercise what the defaults skip (each boolean and string option
flipped, each numeric default perturbed). Runs only in a worker."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import sys
import textwrap
from .context import job
from typing import Any, Dict, List, Optional, Tuple


# the width a guessed argument gives a layer (its channels, features, dimension), and the one inputs are given where the
# block's layers say none (inputs.py)
GUESSED_WIDTH = 16


GUESSES: List[Tuple[Tuple[str, ...], Any]] = [
    (
        (
            "in_channels",
            "in_chans",
            "in_ch",
            "inplanes",
            "in_planes",
            "inp",
            "c1",
            "in_dim",
            "input_dim",
            "channels",
            "num_channels",
            "in_features",
            "dim",
            "d_model",
            "embed_dim",
            "hidden_dim",
            "hidden_size",
            "width",
            "planes",
            "num_features",
            "features",
            "input_size",
            "c",
            "ch",
            "chs",
            "dim_in",
            "n_embd",
            "hidden_channels",
        ),
        GUESSED_WIDTH,
    ),
    (
        ("out_channels", "out_chans", "out_ch", "oup", "c2", "out_dim", "output_dim", "out_features", "out_planes", "dim_out", "output_size", "outplanes"),
        GUESSED_WIDTH,
    ),
    (("kernel_size", "k", "ksize", "kernel"), 3),
    (("stride", "s", "dilation", "groups", "g", "expand_ratio", "expansion", "depth", "num_layers", "n", "layers", "repeats"), 1),
    (("num_heads", "heads", "nhead", "n_head", "head_num", "num_attention_heads"), 2),
    (("num_classes", "classes", "n_classes", "num_labels"), 10),
    (("head_dim", "dim_head"), 8),
    (("mlp_ratio", "ratio"), 2.0),
    (("reduction", "reduction_ratio", "squeeze_factor"), 4),
    (("p", "drop", "dropout", "drop_rate", "attn_drop", "proj_drop", "drop_path", "drop_prob", "dropout_rate", "attention_dropout"), 0.0),
    (("eps",), 1e-5),
    (("num_embeddings", "vocab_size", "num_tokens", "n_vocab"), 32),
    (
        (
            "embedding_dim",
            "squeeze_channels",
            "mid_channels",
            "hidden_features",
            "mlp_dim",
            "dim_feedforward",
            "intermediate_size",
            "expand_channels",
            "bottleneck_channels",
            "block_size",
        ),
        GUESSED_WIDTH,
    ),
    (("seq_len", "max_len", "num_patches", "max_seq_len", "tokens", "num_tokens", "window_size"), 8),
    (("img_size", "image_size", "input_resolution", "resolution", "size"), 32),
    (("patch_size",), 4),
    (("padding", "pad"), 1),
    (("bias", "affine", "inplace", "batch_first"), True),
]


# the node and edge types of a heterogeneous graph a block is built for (inputs_graph.hetero_inputs feeds it)
HETERO_METADATA = (["author", "paper"], [("author", "writes", "paper"), ("paper", "rev_writes", "author")])


# a module the block wraps and calls (`Residual(fn)`, `PreNorm(dim, fn)`): Identity runs on anything
WRAPPED = ("fn", "func", "function", "module", "sublayer", "wrapped", "inner")


# a loss a block wraps (`FocalLoss(loss_fcn)` sets `loss_fcn.reduction`): a classification loss with a reduction
LOSSES = ("loss_fcn", "loss_fn", "loss_func", "loss_function", "criterion", "base_loss", "loss", "loss_module")


FACTORIES = ("norm_layer", "activation_layer", "act_layer", "block", "layer", "conv_layer", "norm", "act")


# small sizes for a configuration object, so that a block built from it is light and its widths agree
CONFIG_SIZES = {
    "hidden_size": 32,
    "d_model": 32,
    "embed_dim": 32,
    "n_embd": 32,
    "intermediate_size": 64,
    "ffn_dim": 64,
    "num_attention_heads": 2,
    "n_head": 2,
    "num_heads": 2,
    "num_key_value_heads": 2,
    "num_hidden_layers": 1,
    "num_layers": 1,
    "n_layer": 1,
    "vocab_size": 64,
    "max_position_embeddings": 64,
    "num_channels": 3,
    "image_size": 32,
    "patch_size": 4,
}


# a builder's parameters that would fetch weights (torchvision's `weights_backbone` defaults to ImageNet's): given so
# that it builds without a download, by the observer and by the pull's builder alike
NO_DOWNLOAD = {
    "pretrained": False,
    "pretrained_backbone": False,
    "progress": False,
    "download": False,
    "checkpoint": None,
    "ckpt": None,
    "checkpoint_path": None,
    "pretrained_path": None,
    "weights": None,
    "weights_backbone": None,
}


def without_download(builder: Any) -> Dict[str, Any]:
    """The keyword arguments of NO_DOWNLOAD that `builder` names among its parameters."""
    try:
        names = inspect.signature(builder).parameters
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in NO_DOWNLOAD.items() if k in names}


def is_configuration(cls: Any) -> bool:
    """Whether a class is a configuration a block is built from: named so (`BertConfig`; also as the pulled file renames
    one, `Config_adapter`), or a dataclass that is not a module (`ModelDimensions`, `ShapeSpec`)."""
    if not inspect.isclass(cls):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(cls, torch.nn.Module):
        return False
    names = (cls.__name__, re.sub(r"_[A-Za-z0-9]+$", "", cls.__name__))
    return any(n.endswith(("Config", "Configuration", "Cfg")) for n in names) or dataclasses.is_dataclass(cls) or is_named_tuple(cls)


def is_named_tuple(cls: Any) -> bool:
    """A class made by `namedtuple` (or derived from one: a shape descriptor such as `ShapeSpec(channels, height, ...)`)."""
    return inspect.isclass(cls) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def descriptor_fields(config: Any) -> Optional[List[str]]:
    """The fields of a small descriptor whose every field is optional and unset by default (a shape descriptor:
    `ShapeSpec(channels=None, height=None, ...)`), which a block reads as numbers; None for any other object."""
    if is_named_tuple(type(config)):
        names = list(type(config)._fields)
    elif dataclasses.is_dataclass(config) and not isinstance(config, type):
        names = [f.name for f in dataclasses.fields(config)]
    else:
        return None
    return names if names and all(getattr(config, n, None) is None for n in names) else None


def with_numbers(config: Any, nn: Any) -> Any:
    """A descriptor's unset fields given the numbers their names suggest (channels a width, a stride 1)."""
    names = descriptor_fields(config)
    if not names:
        return config
    numbers = {n: guess_value(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD), nn) for n in names}
    if is_named_tuple(type(config)):
        try:
            return config._replace(**numbers)
        except Exception:  # noqa: BLE001 - left as it was made
            return config
    for n, v in numbers.items():
        try:
            setattr(config, n, v)
        except Exception:  # noqa: BLE001 - a frozen one is made again
            try:
                return dataclasses.replace(config, **numbers)
            except Exception:  # noqa: BLE001 - left as it was made
                return config
    return config


def named_configuration(namespace: Dict[str, Any]) -> Any:
    """The one configuration class an unannotated `config` parameter means: of the classes named `*Config` in the
    block's module, those no other of them derives from (a hub's `BertConfig`, not its base `PretrainedConfig`), the
    module's own first, then those it imports (`from .configuration_bert import BertConfig`); None unless exactly one.
    The copy, which defines what it took in, and the original, which imports it, find the same class."""
    classes = [
        v
        for k, v in namespace.items()
        if inspect.isclass(v) and is_configuration(v) and re.sub(r"_[A-Za-z0-9]+$", "", k).endswith(("Config", "Configuration", "Cfg"))
    ]
    derived = [c for c in classes if not any(o is not c and issubclass(o, c) for o in classes)]
    own = [c for c in derived if c.__module__ == namespace.get("__name__")]
    for found in (own, derived):
        if found:
            return found[0] if len(set(found)) == 1 else None
    return None


CONFIG_NAMES = ("config", "cfg", "model_config", "configs")


def config_instance(param: inspect.Parameter, namespace: Dict[str, Any], owner: Any = None) -> Any:
    """For a parameter annotated with (or named after) a configuration class of the file (`config: BertConfig`), an
    instance of it with its defaults and the sizes shrunk consistently; None when there is no such class. The class
    the block declares its configuration to be (`owner.config_class`, a hub's convention, checked by its base class's
    constructor) wins over an annotation with its base class (`config: PretrainedConfig`) and over the name."""
    ann = None if param.annotation is param.empty else param.annotation
    cls = namespace.get(ann) if isinstance(ann, str) else ann if inspect.isclass(ann) else None
    declared = getattr(owner, "config_class", None) if inspect.isclass(owner) else None
    if (
        inspect.isclass(declared)
        and is_configuration(declared)
        and (param.name in CONFIG_NAMES or (inspect.isclass(cls) and cls is not declared and issubclass(declared, cls)))
    ):
        cls = declared
    if cls is None and param.name in CONFIG_NAMES:
        cls = named_configuration(namespace)
    if cls is None or not is_configuration(cls):
        return None
    # small sizes given to the constructor first: a configuration that derives fields from them when it is made
    # (`head_size = n_embd // n_head` in __post_init__) stays consistent
    fields = {p.name for p in init_parameters(cls)}
    small = {k: v for k, v in CONFIG_SIZES.items() if k in fields}
    config = None
    for kwargs in ([small] if small else []) + [{}]:
        try:
            config = cls(**kwargs)
            break
        except Exception:  # noqa: BLE001, S112 - the next way, or the required arguments guessed
            continue
    nn = sys.modules["torch"].nn
    if config is None:
        try:
            if is_named_tuple(cls):
                defaults = getattr(cls, "_field_defaults", {})
                required = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in cls._fields if n not in defaults]
            else:
                required = [p for p in init_parameters(cls) if p.default is p.empty]
            config = cls(**{p.name: guess_value(p, nn) for p in required})
        except Exception:  # noqa: BLE001 - not guessed
            return None
    config = with_numbers(config, nn)
    for key, value in CONFIG_SIZES.items():
        if isinstance(getattr(config, key, None), int) and not isinstance(getattr(config, key), bool):
            try:
                setattr(config, key, value)
            except Exception:  # noqa: BLE001, S110 - read-only attributes stay as they are
                pass
    return config


def guess_value(param: inspect.Parameter, nn: Any, namespace: Optional[Dict[str, Any]] = None, owner: Any = None) -> Any:
    """A plausible value for a required constructor parameter of `owner` (the class), from its name and annotation."""
    config = config_instance(param, namespace, owner) if namespace else None
    if config is not None:
        return config
    name = param.name.lower()
    ann = param.annotation
    text = ann if isinstance(ann, str) else repr(ann) if getattr(ann, "__args__", None) else getattr(ann, "__name__", repr(ann))
    by_name = next((value for names, value in GUESSES if name in names), None)
    # a list or tuple of numbers by annotation, whatever the name says (`in_channels: List[int]`, one per level;
    # `input_size: Tuple[int, int, int]`): as many items as the tuple names, of the value the name suggests
    numbers = re.fullmatch(r"(?:typing\.)?(?:List|Sequence|Tuple|list|tuple)\[((?:\s*(?:int|float)\s*,?)+)\]", str(text).strip())
    if numbers and "..." not in str(text):
        kinds = [k.strip() for k in numbers.group(1).split(",") if k.strip()]
        item = by_name if isinstance(by_name, (int, float)) and not isinstance(by_name, bool) else (GUESSED_WIDTH if kinds[0] == "int" else 1.0)
        count = len(kinds) if re.match(r"(?:typing\.)?[Tt]uple\[", str(text).strip()) else 2
        return [item] * count
    if by_name is not None:
        return by_name
    # a heterogeneous graph's node and edge types (`metadata: Tuple[List[NodeType], List[EdgeType]]`)
    if name == "metadata" or "Metadata" in str(text) or ("NodeType" in str(text) and "EdgeType" in str(text)):
        return HETERO_METADATA
    if name in WRAPPED and ann is param.empty:
        return nn.Identity()
    if name in LOSSES and ann is param.empty:
        return nn.BCEWithLogitsLoss()
    # a count of layers (`n_layer`, `num_layer`) is a number, not a layer factory
    if name in FACTORIES or (name.endswith("_layer") and not name.startswith(("n_", "num_"))):
        return nn.BatchNorm2d if "norm" in name else (nn.ReLU if "act" in name else nn.Identity)
    # a parameter the constructor calls (`block_class(...)`, `norm(...)`) is a factory, whatever its name: a norm's
    # or an activation's class by its name, else Identity (it takes any arguments; the same class on both sides)
    if ann is param.empty and param.name in called_parameters(owner):
        return nn.BatchNorm2d if "norm" in name else (nn.ReLU if "act" in name else nn.Identity)
    # a module or a function the block keeps and runs later (`self.nn = nn` ... `self.nn(x)`, `reset(self.encoder)`):
    # Identity where it is called with one input or used as a module, else a module that passes its first input on
    use = kept_and_used(owner).get(param.name)
    callable_ann = ann is not param.empty and "Callable" in str(text) and "Module" not in str(text)
    if use is not None or (callable_ann and not any(n in str(text) for n in ("int", "float", "str", "bool"))):
        return nn.Identity() if use in ("one", "module") else passing_module(nn)
    if "Union" in str(text) and "int" in str(text):
        return GUESSED_WIDTH
    if "List[int]" in str(text) or "Sequence[int]" in str(text) or "List[float]" in str(text):
        return [2, 2] if "int" in str(text) else [1.0, 1.0]
    if "Module" in str(text) and "Callable" not in str(text):
        return nn.Identity()
    # a factory of modules (`conv_builder: Callable[..., nn.Module]`): Identity takes any arguments
    if "Callable" in str(text) and "Module" in str(text):
        return nn.Identity
    if "dtype" in str(text):
        return sys.modules["torch"].float32
    # containers before scalars: Tuple[int, int] is a pair, not an int
    if "Tuple" in str(text) or "List" in str(text) or "Sequence" in str(text) or "list" in str(text):
        return [GUESSED_WIDTH, GUESSED_WIDTH]
    if "bool" in str(text):
        return False
    if "float" in str(text):
        return 0.1
    if "int" in str(text):
        return GUESSED_WIDTH
    if name.endswith(("_channels", "_dim", "_features", "_size", "_planes")):
        return GUESSED_WIDTH
    if name.startswith(("num_", "n_")):
        return 2
    return GUESSED_WIDTH


@functools.lru_cache(maxsize=256)
def called_parameters(owner: Any) -> frozenset:
    """The parameters of `owner`'s constructor that its body calls by name (`block(...)`, `self.norm = norm(dim)`)."""
    init: Any = getattr(owner, "__init__", None) if inspect.isclass(owner) else None
    if init is None:
        return frozenset()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        params = set(inspect.signature(init).parameters)
    except (OSError, TypeError, ValueError, SyntaxError):
        return frozenset()
    return frozenset(n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params)


@functools.lru_cache(maxsize=256)
def kept_and_used(owner: Any) -> Dict[str, str]:
    """The constructor's parameters the block keeps on itself (`self.nn = nn`) and uses as a module or a function
    afterwards: "one" called with one positional input (`self.nn(out)`), "call" called otherwise (`self.encoder(x,
    edge_index)`), "module" handed on or asked for its parameters (`reset(self.nn)`, `self.nn.parameters()`)."""
    if not inspect.isclass(owner):
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(owner)))
        params = set(inspect.signature(owner.__init__).parameters) - {"self"}
    except (OSError, TypeError, ValueError, SyntaxError):
        return {}
    init = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return {}
    kept: Dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    kept[t.attr] = node.value.id
    uses: Dict[str, str] = {}
    rank = {"module": 0, "one": 1, "call": 2}

    def note(attr: str, how: str) -> None:
        name = kept.get(attr)
        if name is not None and rank[how] >= rank.get(uses.get(name, "module"), 0):
            uses[name] = how

    def self_attr(node: ast.AST) -> Optional[str]:
        return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" else None

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        attr = self_attr(node.func)
        if attr is not None:
            # a strategy the block hands itself to (`self.processor(self, x)`) does the block's work: a guess would
            # leave the block's own layers unrun, so none is made
            if any(isinstance(a, ast.Name) and a.id == "self" for a in node.args):
                handed = kept.pop(attr, None)
                if handed is not None:
                    uses.pop(handed, None)
                continue
            one = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            note(attr, "one" if one else "call")
        elif isinstance(node.func, ast.Attribute) and self_attr(node.func.value) is not None and node.func.attr in MODULE_METHODS:
            note(str(self_attr(node.func.value)), "module")
        for arg in node.args:
            if self_attr(arg) is not None and isinstance(node.func, ast.Name) and node.func.id in ("reset", "reset_parameters", "init_weights"):
                note(str(self_attr(arg)), "module")
    return uses


# what asks a kept argument to be a module (`self.nn.parameters()`)
MODULE_METHODS = ("parameters", "children", "modules", "named_parameters", "reset_parameters", "apply")


_PASSING: Dict[int, Any] = {}


def passing_module(nn: Any) -> Any:
    """A module that takes any inputs and passes the first tensor among them on (an encoder, a summary, a corruption a
    block is given and calls with several): the same on both sides, with no parameters of its own."""
    cls = _PASSING.get(id(nn))
    torch = sys.modules["torch"]
    if cls is None:

        class PassFirst(nn.Module):
            def forward(self, *args: Any, **kwargs: Any) -> Any:
                given = list(args) + list(kwargs.values())
                return next((v for v in given if isinstance(v, torch.Tensor)), given[0] if given else None)

        cls = _PASSING[id(nn)] = PassFirst
    return cls()


# torch's names an observed call may use outside the file's namespace: its layers and functional API, its dtypes, and
# these element-wise functions; nothing that reads or writes files or loads code
TORCH_FUNCTIONS = {"tanh", "sigmoid", "relu", "exp", "sin", "cos", "abs", "sqrt", "erf", "softmax", "log_softmax"}


def torch_layer(parts: List[str]) -> bool:
    """Whether a dotted name is one of torch's an observed call may use (`torch.nn.ReLU`, `torch.float32`, `torch.tanh`)."""
    if parts[0] != "torch" or len(parts) < 2:
        return False
    if parts[1] == "nn":
        return len(parts) >= 3 and all(p.isidentifier() and not p.startswith("_") for p in parts[2:]) and parts[2] not in ("parallel", "utils")
    torch = sys.modules.get("torch")
    return len(parts) == 2 and (parts[1] in TORCH_FUNCTIONS or isinstance(getattr(torch, parts[1], None), getattr(torch, "dtype", ())))


def resolve_given(value: Any, namespace: Dict[str, Any]) -> Tuple[bool, Any]:
    """A literal from a call site: names (`nn.ReLU`) are looked up in the pulled file's namespace."""
    if isinstance(value, dict) and "$unknown" in value:
        return False, None
    if isinstance(value, dict) and "$name" in value:
        parts = str(value["$name"]).split(".")
        # torch's own names (an observed call's `torch.nn.ReLU`) whatever the file calls torch; a repository's class
        # the block's module does not import, from the module an observation names when this process has it loaded
        # (the original's side; the copy's file defines it)
        module = value.get("module")
        home = sys.modules.get(module) if isinstance(module, str) and module.split(".")[0] in job().own_packages else None
        obj = (
            namespace.get(parts[0])
            if parts[0] in namespace
            else sys.modules.get("torch")
            if torch_layer(parts)
            else getattr(home, parts[0], None)
            if home is not None
            else None
        )
        if obj is None and parts[0] not in namespace:
            return False, None
        for p in parts[1:]:
            if not hasattr(obj, p):
                return False, None
            obj = getattr(obj, p)
        return True, obj
    if isinstance(value, list):
        items = [resolve_given(v, namespace) for v in value]
        return (all(ok for ok, _ in items), [v for _, v in items])
    if isinstance(value, dict) and ("$call" in value or "$partial" in value):
        # how a builder built it (recipe.py): an object of a class the file names, or a partial of a callable
        callee = dict({"$name": value["$call"]}, **({"module": value["module"]} if "module" in value else {})) if "$call" in value else value["$partial"]
        ok, fn = resolve_given(callee, namespace)
        args = resolve_given(value.get("args") if isinstance(value.get("args"), list) else [], namespace)
        raw = value.get("kwargs") if isinstance(value.get("kwargs"), dict) else {}
        kwargs = {str(k): resolve_given(v, namespace) for k, v in raw.items()}
        if not ok or not callable(fn) or not args[0] or not all(k_ok for k_ok, _ in kwargs.values()):
            return False, None
        given = {k: v for k, (_, v) in kwargs.items()}
        if "$partial" in value:
            return True, functools.partial(fn, *args[1], **given)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.manual_seed(0)  # a module built here gets the same weights on both sides
        try:
            return True, fn(*args[1], **given)
        except Exception:  # noqa: BLE001 - an object that does not build here: the argument is guessed instead
            return False, None
    if isinstance(value, dict) and "$float" in value and isinstance(value["$float"], (int, float)):
        return True, float(value["$float"])
    if isinstance(value, dict) and "$tuple" in value and isinstance(value["$tuple"], list):
        ok, items = resolve_given(value["$tuple"], namespace)
        return ok, tuple(items) if ok else None
    if isinstance(value, dict) and "$dict" in value and isinstance(value["$dict"], dict):
        entries = {str(k): resolve_given(v, namespace) for k, v in value["$dict"].items()}
        return all(ok for ok, _ in entries.values()), {k: v for k, (_, v) in entries.items()}
    return True, value


def init_parameters(cls: Any) -> List[inspect.Parameter]:
    """The constructor's named parameters; for `__init__(self, *args, **kwargs)` wrappers, those of the first
    base class in the MRO that names them (QuantizableX(X) passes everything through to X)."""
    for klass in getattr(cls, "__mro__", [cls]):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            all_params = list(inspect.signature(init).parameters.values())[1:]
        except (TypeError, ValueError):
            return []
        named = [p for p in all_params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if named or not all_params:
            return named
    return []


def constructor_candidates(cls: Any, given: List[Dict[str, Any]], nn: Any, namespace: Dict[str, Any]) -> List[Tuple[List[Any], Dict[str, Any]]]:
    """Argument sets to try: how the repository calls the block (unknown values guessed), defaults, guesses."""
    params = init_parameters(cls)
    out = given_candidates(cls, given, nn, namespace)
    out.append(([], {}))
    required = {p.name: guess_value(p, nn, namespace, cls) for p in params if p.default is p.empty}
    # a model whose default image is large (SAM's encoder: 1024 px, position tables to match) built for 64 px
    large = {p.name: small_image(p.default) for p in params if p.name in IMAGE_SIZES and small_image(p.default) is not None}
    if large:
        out.append(([], dict(required, **large)))
    if required:
        out.append(([], required))
        # a required norm factory left out (`norm_layer=None`: the repository's own calls pass None for no norm)
        if any(is_norm_factory(k) for k in required):
            out.append(([], {k: (None if is_norm_factory(k) else v) for k, v in required.items()}))
        # an input width four times the inner width (ResNet's Bottleneck keeps its identity shortcut)
        if any(k.startswith(("in", "inp")) for k in required) and any(isinstance(v, int) and v == GUESSED_WIDTH for v in required.values()):
            out.append(([], {k: (64 if k.startswith(("in", "inp")) and v == GUESSED_WIDTH else v) for k, v in required.items()}))
        # widths divisible by GroupNorm's 32 groups and by head counts, and by three or six heads (a ViT-S default)
        for width in (64, 32, 96):
            out.append(([], {k: (width if isinstance(v, int) and not isinstance(v, bool) and v == GUESSED_WIDTH else v) for k, v in required.items()}))
    return out


IMAGE_SIZES = ("img_size", "image_size", "input_size", "input_resolution", "resolution")


SMALL_IMAGE = 64


def small_image(default: Any) -> Any:
    """A 64 px image size in the form of a large default one (an int, or a pair of ints of 128 or more); else None."""
    if isinstance(default, int) and not isinstance(default, bool) and default >= 128:
        return SMALL_IMAGE
    if isinstance(default, (tuple, list)) and len(default) == 2 and all(isinstance(v, int) and v >= 128 for v in default):
        return type(default)((SMALL_IMAGE, SMALL_IMAGE))
    return None


def is_norm_factory(name: str) -> bool:
    """A parameter that takes the class of a norm layer (`norm_layer`, `norm`)."""
    return "norm" in name and (name in FACTORIES or name.endswith("_layer"))


def given_candidates(cls: Any, given: List[Dict[str, Any]], nn: Any, namespace: Dict[str, Any]) -> List[Tuple[List[Any], Dict[str, Any]]]:
    """The argument sets of the calls given (a call site's, a README's): names looked up, unknown values and the
    required parameters they leave out guessed."""
    params = init_parameters(cls)
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out: List[Tuple[List[Any], Dict[str, Any]]] = []
    for g in given:
        args: List[Any] = []
        for i, v in enumerate(g.get("args", [])):
            ok, value = resolve_given(v, namespace)
            if not ok:
                value = guess_value(positional[i], nn, namespace, cls) if i < len(positional) else GUESSED_WIDTH
            args.append(value)
        kwargs: Dict[str, Any] = {}
        for k, v in dict(g.get("kwargs", {})).items():
            ok, value = resolve_given(v, namespace)
            if not ok:
                if k not in by_name:
                    continue
                value = guess_value(by_name[k], nn, namespace, cls)
            kwargs[k] = value
        # required parameters the call site passed through **kwargs or a variable: guessed
        taken = {p.name for p in positional[: len(args)]} | set(kwargs)
        for p in params:
            if p.default is p.empty and p.name not in taken:
                kwargs[p.name] = guess_value(p, nn, namespace, cls)
        out.append((args, kwargs))
    return out


def code_name(value: Any) -> Optional[str]:
    """A class's or function's name as code that runs in the pulled file: torch's by their path from `torch`
    (`torch.nn.Identity`, `torch.tanh`), others (the file defines or imports them) by their own name; None when it has
    no name."""
    name = getattr(value, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        return None
    torch = sys.modules.get("torch")
    module = str(getattr(value, "__module__", "") or "")
    if torch is not None and module.split(".")[0] == "torch":
        nn = getattr(torch, "nn", None)
        for path, home in (("torch.nn", nn), ("torch.nn.functional", getattr(nn, "functional", None)), ("torch", torch)):
            if home is not None and getattr(home, name, None) is value:
                return f"{path}.{name}"
    return name


def jsonable(value: Any) -> Any:
    """Arguments as JSON: a class or a function as `{"$name": code}` (a name, not a string: `activation=torch.nn.Identity`)."""
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, type) or callable(value):
        named = code_name(value)
        if named:
            return {"$name": named}
    return f"{type(value).__name__}(...)"
