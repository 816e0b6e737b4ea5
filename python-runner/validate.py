#!/usr/bin/env python3
"""Validate one pulled block file, tier by tier, and print one JSON object on stdout.

Tiers, in order: parsed, compiled, names-closed (no undefined global name), imported, instantiated,
forward. The result names the highest tier reached, the constructor arguments and input shapes that
worked, and on failure a category and a message that names the cause.

Standard library only: torch is imported from the file under test, never by this script itself.
Progress goes to stderr as ``nnrag-tier: NAME`` lines so that a caller that has to kill the process
(time or memory limit) still knows how far it got. Everything else the block prints goes to stderr too.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import importlib.util
import inspect
import io
import json
import math
import os
import re
import select
import struct
import symtable
import sys
import textwrap
import time
import traceback
import types
from array import array
from typing import Any, Callable, Dict, List, Optional, Tuple

TIERS = ["parsed", "compiled", "names-closed", "imported", "instantiated", "forward", "equivalent"]
MODULE_NAMES = {"__name__", "__file__", "__doc__", "__package__", "__spec__", "__loader__", "__builtins__",
                "__annotations__", "__dict__", "__path__", "__cached__"}


class Failure(Exception):
    """A tier failed: carries the category and a message that names the cause."""

    def __init__(self, category: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.extra = extra


def progress(tier: str) -> None:
    """Tell the caller (on stderr) that a tier was reached."""
    sys.stderr.write(f"nnrag-tier: {tier}\n")
    sys.stderr.flush()


def limit_memory(megabytes: int) -> None:
    """Cap the data segment (RLIMIT_DATA; RLIMIT_AS breaks `import torch`) where the OS has it."""
    try:
        import resource
    except ImportError:
        return
    limit = megabytes * 1024 * 1024
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError, AttributeError):
        pass


def block_network() -> None:
    """Refuse outgoing connections and name lookups from the block under test (an audit hook)."""
    blocked = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto", "urllib.Request"}

    def hook(event: str, args: Tuple[Any, ...]) -> None:
        if event in blocked:
            raise PermissionError(f"network access is disabled during validation ({event})")

    sys.addaudithook(hook)


def undefined_names(source: str, filename: str) -> List[Tuple[str, int]]:
    """Global names that are read somewhere but bound nowhere at module level and are not builtins."""
    top = symtable.symtable(source, filename, "exec")
    bound = set()
    star = False
    for sym in top.get_symbols():
        if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
            bound.add(sym.get_name())
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            star = True
        if isinstance(node, ast.Global):
            bound.update(node.names)
    if star:
        return []
    wanted = set()

    def visit(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            name = sym.get_name()
            is_module = table.get_type() == "module"
            if (is_module and not (sym.is_assigned() or sym.is_imported())) or (not is_module and sym.is_global()):
                wanted.add(name)
        for child in table.get_children():
            visit(child)

    visit(top)
    missing = sorted(n for n in wanted if n not in bound and not hasattr(builtins, n) and n not in MODULE_NAMES)
    lines = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in missing and node.id not in lines:
            lines[node.id] = node.lineno
    return [(n, lines.get(n, 0)) for n in missing]


def imported_top_levels(tree: ast.AST) -> List[str]:
    """Top-level module names the file imports (anywhere, function bodies too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(names)


def requirements(modules: List[str]) -> List[Dict[str, Optional[str]]]:
    """Third-party distributions behind the imported modules, with the versions installed here."""
    stdlib = getattr(sys, "stdlib_module_names", set())
    out = []
    try:
        import importlib.metadata as md
        dists = md.packages_distributions() if hasattr(md, "packages_distributions") else {}
    except Exception:  # noqa: BLE001 - metadata is best effort
        md, dists = None, {}
    for mod in modules:
        if mod in stdlib or mod == "__future__":
            continue
        dist = (dists.get(mod) or [mod])[0]
        version = location = installer = url = None
        if md is not None:
            try:
                found = md.distribution(dist)
                version = found.version
                location = str(found.locate_file(""))
                installer = (found.read_text("INSTALLER") or "").strip() or None
                direct = found.read_text("direct_url.json")
                url = json.loads(direct).get("url") if direct else None
            except Exception:  # noqa: BLE001 - metadata is best effort
                pass
        out.append({"module": mod, "distribution": dist if version else None, "version": version,
                    "location": location, "installer": installer, "url": url})
    return out


def classify_import_error(exc: BaseException, native: List[str]) -> Failure:
    """Turn an exception raised while importing the file into a category and a message naming the cause."""
    if isinstance(exc, MemoryError):
        return Failure("memory", "out of memory while importing the file")
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or str(exc)
        top = name.split(".")[0]
        if any(name == n or name.startswith(n + ".") or n.endswith("." + name) for n in native):
            return Failure("native-extension", f"needs the compiled module '{name}', which has no Python source")
        found = importlib.util.find_spec(top) is not None if top else False
        if not found:
            return Failure("missing-package", f"missing package '{top}': No module named '{name}' in this interpreter", package=top)
        return Failure("import-error", f"No module named '{name}' (package '{top}' is installed but lacks it)")
    if isinstance(exc, ImportError) and (".so" in str(exc) or "undefined symbol" in str(exc) or "DLL" in str(exc)):
        return Failure("native-extension", f"a compiled extension failed to load: {exc}")
    return Failure("import-error", f"{type(exc).__name__}: {exc}{where(exc)}")


def where(exc: BaseException) -> str:
    """' (line N of the pulled file)' when the traceback passes through it."""
    target = os.environ.get("NNRAG_VALIDATE_FILE", "")
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == target:
            return f" (line {frame.lineno} of the pulled file)"
    return ""


def find_block(module: Any, name: Optional[str], nn: Any) -> Any:
    """The class to validate: the one named, else the last nn.Module subclass defined in the file."""
    if name:
        cls = getattr(module, name, None)
        if cls is None:
            raise Failure("import-error", f"the file defines no '{name}'")
        return cls
    found = [v for v in vars(module).values()
             if inspect.isclass(v) and issubclass(v, nn.Module) and v.__module__ == module.__name__]
    if not found:
        raise Failure("import-error", "the file defines no nn.Module subclass")
    return found[-1]


GUESSES: List[Tuple[Tuple[str, ...], Any]] = [
    (("in_channels", "in_chans", "in_ch", "inplanes", "in_planes", "inp", "c1", "in_dim", "input_dim", "channels",
      "num_channels", "in_features", "dim", "d_model", "embed_dim", "hidden_dim", "hidden_size", "width", "planes",
      "num_features", "features", "input_size", "c", "ch", "chs", "dim_in", "n_embd", "hidden_channels"), 16),
    (("out_channels", "out_chans", "out_ch", "oup", "c2", "out_dim", "output_dim", "out_features", "out_planes",
      "dim_out", "output_size", "outplanes"), 16),
    (("kernel_size", "k", "ksize", "kernel"), 3),
    (("stride", "s", "dilation", "groups", "g", "expand_ratio", "expansion", "depth", "num_layers", "n",
      "layers", "repeats"), 1),
    (("num_heads", "heads", "nhead", "n_head", "head_num", "num_attention_heads"), 2),
    (("num_classes", "classes", "n_classes", "num_labels"), 10),
    (("head_dim", "dim_head"), 8),
    (("mlp_ratio", "ratio"), 2.0),
    (("reduction", "reduction_ratio", "squeeze_factor"), 4),
    (("p", "drop", "dropout", "drop_rate", "attn_drop", "proj_drop", "drop_path", "drop_prob", "dropout_rate",
      "attention_dropout"), 0.0),
    (("eps",), 1e-5),
    (("num_embeddings", "vocab_size", "num_tokens", "n_vocab"), 32),
    (("embedding_dim", "squeeze_channels", "mid_channels", "hidden_features", "mlp_dim", "dim_feedforward",
      "intermediate_size", "expand_channels", "bottleneck_channels", "block_size"), 16),
    (("seq_len", "max_len", "num_patches", "max_seq_len", "tokens", "num_tokens", "window_size"), 8),
    (("img_size", "image_size", "input_resolution", "resolution", "size"), 32),
    (("patch_size",), 4),
    (("padding", "pad"), 1),
    (("bias", "affine", "inplace", "batch_first"), True),
]
FACTORIES = ("norm_layer", "activation_layer", "act_layer", "block", "layer", "conv_layer", "norm", "act")


# small sizes for a configuration object, so that a block built from it is light and its widths agree
CONFIG_SIZES = {"hidden_size": 32, "d_model": 32, "embed_dim": 32, "n_embd": 32, "intermediate_size": 64, "ffn_dim": 64,
                "num_attention_heads": 2, "n_head": 2, "num_heads": 2, "num_key_value_heads": 2, "num_hidden_layers": 1,
                "num_layers": 1, "n_layer": 1, "vocab_size": 64, "max_position_embeddings": 64, "num_channels": 3,
                "image_size": 32, "patch_size": 4}


def config_instance(param: inspect.Parameter, namespace: Dict[str, Any]) -> Any:
    """For a parameter annotated with (or named after) a configuration class of the file (`config: BertConfig`), an
    instance of it with its defaults and the sizes shrunk consistently; None when there is no such class."""
    ann = param.annotation
    cls = namespace.get(ann) if isinstance(ann, str) else ann if inspect.isclass(ann) else None
    if cls is None and param.name in ("config", "cfg", "model_config"):
        found = [v for k, v in namespace.items() if inspect.isclass(v) and k.endswith("Config") and v.__module__ == namespace.get("__name__")]
        cls = found[-1] if len(found) == 1 else None
    if not inspect.isclass(cls) or not cls.__name__.endswith(("Config", "Configuration")):
        return None
    try:
        config = cls()
    except Exception:  # noqa: BLE001 - a configuration that needs arguments: they are guessed as a constructor's are
        try:
            nn = sys.modules["torch"].nn
            config = cls(**{p.name: guess_value(p, nn) for p in init_parameters(cls) if p.default is p.empty})
        except Exception:  # noqa: BLE001 - not guessed
            return None
    for key, value in CONFIG_SIZES.items():
        if isinstance(getattr(config, key, None), int) and not isinstance(getattr(config, key), bool):
            try:
                setattr(config, key, value)
            except Exception:  # noqa: BLE001 - read-only attributes stay as they are
                pass
    return config


def guess_value(param: inspect.Parameter, nn: Any, namespace: Optional[Dict[str, Any]] = None) -> Any:
    """A plausible value for a required constructor parameter, from its name and annotation."""
    config = config_instance(param, namespace) if namespace else None
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
        item = by_name if isinstance(by_name, (int, float)) and not isinstance(by_name, bool) else (16 if kinds[0] == "int" else 1.0)
        count = len(kinds) if re.match(r"(?:typing\.)?[Tt]uple\[", str(text).strip()) else 2
        return [item] * count
    if by_name is not None:
        return by_name
    if name in FACTORIES or name.endswith("_layer"):
        return nn.BatchNorm2d if "norm" in name else (nn.ReLU if "act" in name else nn.Identity)
    if "Union" in str(text) and "int" in str(text):
        return 16
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
        return [16, 16]
    if "bool" in str(text):
        return False
    if "float" in str(text):
        return 0.1
    if "int" in str(text):
        return 16
    if name.endswith(("_channels", "_dim", "_features", "_size", "_planes")):
        return 16
    if name.startswith(("num_", "n_")):
        return 2
    return 16


def resolve_given(value: Any, namespace: Dict[str, Any]) -> Tuple[bool, Any]:
    """A literal from a call site: names (`nn.ReLU`) are looked up in the pulled file's namespace."""
    if isinstance(value, dict) and "$unknown" in value:
        return False, None
    if isinstance(value, dict) and "$name" in value:
        parts = str(value["$name"]).split(".")
        if parts[0] not in namespace:
            return False, None
        obj = namespace[parts[0]]
        for p in parts[1:]:
            if not hasattr(obj, p):
                return False, None
            obj = getattr(obj, p)
        return True, obj
    if isinstance(value, list):
        items = [resolve_given(v, namespace) for v in value]
        return (all(ok for ok, _ in items), [v for _, v in items])
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


def constructor_candidates(cls: Any, given: List[Dict[str, Any]], nn: Any,
                           namespace: Dict[str, Any]) -> List[Tuple[List[Any], Dict[str, Any]]]:
    """Argument sets to try: how the repository calls the block (unknown values guessed), defaults, guesses."""
    params = init_parameters(cls)
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out: List[Tuple[List[Any], Dict[str, Any]]] = []
    for g in given:
        args: List[Any] = []
        for i, v in enumerate(g.get("args", [])):
            ok, value = resolve_given(v, namespace)
            if not ok:
                value = guess_value(positional[i], nn, namespace) if i < len(positional) else 16
            args.append(value)
        kwargs: Dict[str, Any] = {}
        for k, v in dict(g.get("kwargs", {})).items():
            ok, value = resolve_given(v, namespace)
            if not ok:
                if k not in by_name:
                    continue
                value = guess_value(by_name[k], nn, namespace)
            kwargs[k] = value
        # required parameters the call site passed through **kwargs or a variable: guessed
        taken = {p.name for p in positional[:len(args)]} | set(kwargs)
        for p in params:
            if p.default is p.empty and p.name not in taken:
                kwargs[p.name] = guess_value(p, nn, namespace)
        out.append((args, kwargs))
    out.append(([], {}))
    required = {p.name: guess_value(p, nn, namespace) for p in params if p.default is p.empty}
    if required:
        out.append(([], required))
        # an input width four times the inner width (ResNet's Bottleneck keeps its identity shortcut)
        if any(k.startswith(("in", "inp")) for k in required) and any(isinstance(v, int) and v == 16 for v in required.values()):
            out.append(([], {k: (64 if k.startswith(("in", "inp")) and v == 16 else v) for k, v in required.items()}))
        # widths divisible by GroupNorm's 32 groups and by head counts
        out.append(([], {k: (64 if isinstance(v, int) and not isinstance(v, bool) and v == 16 else v) for k, v in required.items()}))
        out.append(([], {k: (32 if isinstance(v, int) and not isinstance(v, bool) and v == 16 else v) for k, v in required.items()}))
    return out


SEQ_NAMES = ("tokens", "num_tokens", "seq_len", "max_len", "num_patches", "max_seq_len", "seq_length", "n_tokens",
             "max_position_embeddings", "block_size", "context_length", "n_ctx")


def sequence_lengths(model: Any, built_with: Dict[str, Any]) -> List[int]:
    """Sequence lengths the block expects: from how it was built, its defaults, and position tables."""
    lengths: List[int] = []
    try:
        params = inspect.signature(type(model).__init__).parameters.values()
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.name in SEQ_NAMES:
            value = built_with.get(p.name, p.default)
            if isinstance(value, int) and 0 < value <= 4096:
                lengths.append(value)
    for name, t in list(model.named_buffers()) + list(model.named_parameters()):
        if ("pos" in name or "embed" in name) and t.dim() in (2, 3) and t.shape[-2] <= 4096:
            lengths.append(int(t.shape[-2]))
    return lengths


def input_candidates(model: Any, torch: Any, nn: Any, built_with: Optional[Dict[str, Any]] = None) -> List[List[Any]]:
    """Inputs to try, inferred from the first layers the block built, then common shapes."""
    cands: List[List[Any]] = []
    seqs = sequence_lengths(model, built_with or {})
    layers = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Linear,
              nn.Embedding, nn.LayerNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.GroupNorm, nn.RNNBase)
    for m in model.modules():
        # the block itself counts when it is a torch layer (Conv3DSimple(nn.Conv3d), LayerNorm2d(nn.LayerNorm))
        if m is model and not isinstance(m, layers):
            continue
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            dims = 1 if isinstance(m, (nn.Conv1d, nn.ConvTranspose1d)) else 3 if isinstance(m, (nn.Conv3d, nn.ConvTranspose3d)) else 2
            cands.append([torch.randn(2, m.in_channels, *([16] * dims))])
            cands.append([torch.randn(2, m.in_channels, *([32] * dims))])
            break
        if isinstance(m, nn.Linear):
            cands.extend([torch.randn(2, n, m.in_features)] for n in seqs)
            cands.append([torch.randn(2, m.in_features)])
            cands.append([torch.randn(2, 8, m.in_features)])
            break
        if isinstance(m, nn.Embedding):
            cands.append([torch.randint(0, m.num_embeddings, (2, 8))])
            break
        if isinstance(m, nn.LayerNorm):
            shape = tuple(m.normalized_shape)
            cands.extend([torch.randn(2, n, *shape)] for n in seqs)
            cands.append([torch.randn(2, 8, *shape)])
            cands.append([torch.randn(2, *shape)])
            break
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.InstanceNorm2d)):
            extra = {nn.BatchNorm1d: [8], nn.BatchNorm2d: [8, 8], nn.BatchNorm3d: [4, 4, 4]}.get(type(m), [8, 8])
            cands.append([torch.randn(2, m.num_features, *extra)])
            break
        if isinstance(m, nn.GroupNorm):
            cands.append([torch.randn(2, m.num_channels, 8, 8)])
            break
        if isinstance(m, nn.MultiheadAttention):
            x = torch.randn(8, 2, m.embed_dim)
            cands.append([x, x, x])
            break
        if isinstance(m, (nn.RNNBase,)):
            shape = (2, 8, m.input_size) if m.batch_first else (8, 2, m.input_size)
            cands.append([torch.randn(*shape)])
            break
    for shape in [(2, 3, 32, 32), (2, 16, 16, 16), (2, 8, 16), (2, 16), (2, 3, 64, 64), (2, 32, 16, 16),
                  (2, 64, 8, 8), (2, 3, 16, 16, 16), (2, 16, 32), (2, 3, 224, 224)]:
        cands.append([torch.randn(*shape)])
    return cands


def containers(model: Any, candidates: List[List[Any]]) -> List[List[Any]]:
    """When forward's first parameter is annotated as a list or a dict of tensors (feature pyramids, poolers),
    the candidates are given in that form too."""
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()]
    except (TypeError, ValueError):
        return candidates
    if not params:
        return candidates
    ann = params[0].annotation
    text = ann if isinstance(ann, str) else repr(ann)
    if "Dict[str" in text or "OrderedDict" in text:
        return [[{"0": c[0], "1": c[0]}] + c[1:] for c in candidates[:4]] + candidates
    if "List[" in text and "Tensor" in text:
        return [[[c[0], c[0]]] + c[1:] for c in candidates[:4]] + candidates
    return candidates


def scalar_inputs(model: Any) -> Dict[int, Any]:
    """Required positional forward parameters annotated as a number or a flag (`forward(x, p: int)`), by position:
    a small value that divides the spatial sides tried, instead of a tensor."""
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return {}
    values = {"int": 4, "float": 0.5, "bool": False}
    out: Dict[int, Any] = {}
    for i, p in enumerate(params):
        ann = p.annotation
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
        if text in values:
            out[i] = values[text]
    return out


def forward_arity(model: Any) -> int:
    """How many required positional inputs forward() takes."""
    try:
        sig = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return 1
    n = sum(1 for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)
    return max(n, 1)


def shapes(value: Any) -> Any:
    """Shapes of tensors in a (nested) output, for the report."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return list(value.shape)
    if isinstance(value, (list, tuple)):
        return [shapes(v) for v in value[:8]]
    if isinstance(value, dict):
        return {str(k): shapes(v) for k, v in list(value.items())[:8]}
    return type(value).__name__


def jsonable(value: Any) -> Any:
    """Arguments as JSON (classes and functions by name)."""
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return getattr(value, "__name__", None) or f"{type(value).__name__}(...)"


MAX_CONSTRUCTIONS = 8
# a forward that reaches compiled operators that are not there (torchvision's _C ops) is a native-extension problem
NATIVE_OPS = re.compile(r"custom C\+\+ ops|Could not run '\w+::|undefined symbol|No such operator")
# a block whose forward is slow (a detector resizing to 800 px) must not spend the whole time limit on guesses
FORWARD_BUDGET_S = 10
MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)$")


def build(cls: Any, args: List[Any], kwargs: Dict[str, Any], torch: Any, nn: Any, errors: List[str]) -> Any:
    """Build the block; when a nested constructor reached through **kwargs misses arguments, guess them too (added to
    `kwargs`, which then holds the arguments that built it)."""
    for _ in range(3):
        try:
            torch.manual_seed(0)
            model = cls(*args, **kwargs)
        except MemoryError:
            raise Failure("memory", f"out of memory while building {cls.__name__}")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}{where(exc)}")
            m = MISSING.search(str(exc)) if isinstance(exc, TypeError) else None
            accepts_kwargs = any(p.kind == p.VAR_KEYWORD for p in safe_parameters(cls.__init__))
            if not m or not accepts_kwargs or f"{cls.__name__}.__init__()" in str(exc):
                return None
            for name in re.findall(r"'(\w+)'", m.group(1)):
                kwargs[name] = guess_value(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY), nn)
            continue
        if not isinstance(model, nn.Module):
            errors.append(f"{cls.__name__}(...) is not an nn.Module")
            return None
        try:
            model.eval()
        except Exception as exc:  # noqa: BLE001 - a block that breaks nn.Module's own machinery
            errors.append(f"not a usable nn.Module: {type(exc).__name__}: {exc}")
            return None
        return model
    return None


def lighter(model: Any) -> None:
    """Resizing steps inside a model (torchvision's detectors bring every image to `min_size` 800 px, `max_size`
    1333) set to a quarter for validation: a ResNet-50 backbone at 800 px takes most of a minute on a CPU, before a
    block deep inside is reached, and for each input tried on a detector itself."""
    for m in model.modules():
        low, high = getattr(m, "min_size", None), getattr(m, "max_size", None)
        if not isinstance(high, int) or isinstance(high, bool):
            continue
        if isinstance(low, int) and not isinstance(low, bool):
            m.min_size = max(32, low // 4)
        elif isinstance(low, (tuple, list)) and low and all(isinstance(v, int) for v in low):
            m.min_size = type(low)(max(32, v // 4) for v in low)
        else:
            continue
        m.max_size = max(32, high // 4)


class InputsRecorded(Exception):
    """Raised by the hook that records a block's inputs inside a model, to stop the model's forward there."""


def build_with(factory: Any, cls: Any, torch: Any, nn: Any, errors: List[str]) -> Tuple[Any, Optional[List[Any]], Optional[str]]:
    """Build through a builder function of the repository. It may return the block itself, or a model that
    contains it: then the block is taken from inside, and one forward pass of the model records the inputs the
    model really gives it. Returns (block, recorded inputs, name of the containing model)."""
    try:
        torch.manual_seed(0)
        model = factory()
    except MemoryError:
        raise Failure("memory", f"out of memory while building {cls.__name__}")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"builder: {type(exc).__name__}: {exc}{where(exc)}")
        return None, None, None
    if not isinstance(model, nn.Module):
        errors.append(f"builder returned {type(model).__name__}, not an nn.Module")
        return None, None, None
    model.eval()
    if isinstance(model, cls):
        return model, None, None
    inner = inner_of(model, cls)
    if inner is None:
        errors.append(f"builder made a {type(model).__name__} without a {cls.__name__} inside")
        return None, None, None
    recorded: List[List[Any]] = []

    def record(_module: Any, args: Tuple[Any, ...]) -> None:
        if not recorded:
            recorded.append([a.detach().clone() if hasattr(a, "detach") else a for a in args])
        # the block's inputs are all that is wanted: the rest of the model's forward (a detector's heads at 800 px,
        # tens of seconds on a CPU) is not run
        raise InputsRecorded()

    lighter(model)
    hook = inner.register_forward_pre_hook(record)
    started = time.time()
    call = module_call(model)
    try:
        with torch.no_grad():
            for inputs in input_candidates(model, torch, nn, {}):
                if recorded or time.time() - started > FORWARD_BUDGET_S:
                    break
                try:
                    call(model, *inputs)
                except Exception:  # noqa: BLE001 - the hook may have fired before the failure
                    pass
    finally:
        hook.remove()
    return inner, (recorded[0] if recorded else None), type(model).__name__


def safe_parameters(fn: Any) -> List[inspect.Parameter]:
    """A callable's parameters, or none when it has no signature."""
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []


def best_error(errors: List[str]) -> str:
    """The most telling construction error: not the bare 'missing arguments' of the defaults attempt."""
    for e in reversed(errors):
        if "missing" not in e or "required" not in e:
            return e
    return errors[-1] if errors else "no argument set worked"


LARGE_SIDE = 256


def spatial_sides(value: Any) -> List[int]:
    """The spatial sizes (dimensions after batch and channels) of every tensor in a (nested) input."""
    if hasattr(value, "shape") and hasattr(value, "dim"):
        return list(value.shape[2:]) if value.dim() >= 3 else []
    if isinstance(value, (list, tuple)):
        return [d for v in value for d in spatial_sides(v)]
    if isinstance(value, dict):
        return [d for v in value.values() for d in spatial_sides(v)]
    return []


def shrunk(value: Any) -> Any:
    """The same input cut to a quarter of each spatial side (a detector's 800 px images to 200 px; every tensor of a
    feature pyramid alike): real values the model gave the block, at a sixteenth of the cost of its forward."""
    if hasattr(value, "shape") and hasattr(value, "dim"):
        if value.dim() < 3:
            return value
        return value[(slice(None), slice(None)) + tuple(slice(0, max(1, d // 4)) for d in value.shape[2:])].contiguous()
    if isinstance(value, list):
        return [shrunk(v) for v in value]
    if isinstance(value, tuple):
        return tuple(shrunk(v) for v in value)
    if isinstance(value, dict):
        return {k: shrunk(v) for k, v in value.items()}
    return value


def run_forward(model: Any, cls: Any, torch: Any, nn: Any, kwargs: Dict[str, Any],
                first: Optional[List[Any]] = None) -> Tuple[bool, Optional[str], Any, List[Any]]:
    """Drive forward with the inputs recorded inside a real model (`first`), else inferred ones.
    Returns (ran, error, output, inputs)."""
    try:
        recorded = [first] if first else []
        # large recorded inputs: a smaller cut of them first, the whole only when the cut does not run
        if first and max(spatial_sides(first), default=0) > LARGE_SIDE:
            recorded.insert(0, shrunk(first))
        candidates = recorded + containers(model, input_candidates(model, torch, nn, kwargs))
    except Exception as exc:  # noqa: BLE001
        return False, f"{type(exc).__name__}: {exc}", None, []
    arity = forward_arity(model)
    scalars = scalar_inputs(model)
    error: Optional[str] = None
    depth = -1
    started = time.time()
    call = module_call(model)
    with torch.no_grad():
        for inputs in candidates:
            if time.time() - started > FORWARD_BUDGET_S:
                error = f"{error} (stopped trying inputs after {FORWARD_BUDGET_S} s)"
                break
            if len(inputs) < arity:
                inputs = inputs + [scalars.get(i, inputs[0]) for i in range(len(inputs), arity)]
            try:
                out = call(model, *inputs)
            except MemoryError:
                raise Failure("memory", "out of memory in forward")
            except Exception as exc:  # noqa: BLE001
                # the most telling error: the input that got deepest before it failed (a shape the block expects gets
                # past the first unpacking that a wrong one stops at)
                frames = len(traceback.extract_tb(exc.__traceback__))
                if frames > depth:
                    depth, error = frames, f"{type(exc).__name__}: {exc}{where(exc)}"
                continue
            return True, None, out, inputs
    return False, error, None, []


# ---------------------------------------------------------------------------------------------------------------
# The two sides of a validation. The judge (this process) parses, compiles and checks names itself, then forks a
# worker that is the only process ever to run the block's code. The worker reports what it did on a pipe of its
# own (frames: a JSON header and raw float64 values of every output tensor); its stdout and stderr go to another
# pipe whose tail the judge keeps. The judge's stdout, where the verdict goes, is closed to the worker and to
# everything it starts, and the judge cannot be traced or read through /proc by them (it is not dumpable). So
# nothing the block prints, patches or writes can make the verdict: a forward counts only when the judge has
# received the output tensors and checked their shapes and values itself.
# ---------------------------------------------------------------------------------------------------------------

FRAME = struct.Struct(">II")
MAX_HEADER = 1 << 20
MAX_VALUES = 1 << 22  # float64 values of output tensors sent to the judge, in all (32 MB)
OUTPUT_CAP = 16 << 20  # bytes the block may print before it is stopped
OUTPUT_TAIL = 4000
FILE_SIZE_CAP = 1 << 30
POLL_S = 0.1
MEMORY_EVERY_S = 0.25
# module-level in the worker's private namespace: torch's own Module.__call__, taken before the block's code ran
CALL: Any = None


def module_call(model: Any) -> Any:
    """How to call the block: its own class's __call__ when it defines one, else torch's Module.__call__ as it was
    before the block's code ran (a block that replaces nn.Module.__call__ does not skip its own forward)."""
    for klass in type(model).__mro__:
        if "__call__" in klass.__dict__:
            if CALL is not None and klass.__module__.startswith("torch."):
                return CALL
            return klass.__dict__["__call__"]
    return CALL or type(model).__call__


def sender(fd: int) -> Callable[[Dict[str, Any], bytes], None]:
    """A function that writes one frame to the judge, bound to the write and encode functions as they are now."""
    write, pack, encode = os.write, FRAME.pack, json.JSONEncoder().encode

    def send(header: Dict[str, Any], blob: bytes = b"") -> None:
        data = encode(header).encode("utf-8")
        view = memoryview(pack(len(data), len(blob)) + data + blob)
        while view:
            view = view[write(fd, view):]

    return send


def tensor_evidence(out: Any, torch: Any, limit: int = MAX_VALUES) -> Tuple[Any, List[Dict[str, Any]], bytes]:
    """The output's structure with tensors as {"$t": i}, each tensor's dtype, shape and count of values sent, and the
    values themselves as float64 (complex tensors as their real and imaginary parts)."""
    tensors: List[Dict[str, Any]] = []
    chunks: List[bytes] = []
    budget = [limit]

    def walk(value: Any, depth: int) -> Any:
        if isinstance(value, torch.Tensor):
            t = value.detach().to("cpu")
            entry = {"dtype": str(t.dtype).replace("torch.", ""), "shape": [int(d) for d in t.shape]}
            if t.is_complex():
                t = torch.view_as_real(t)
            flat = t.reshape(-1)
            count = min(int(flat.numel()), budget[0])
            budget[0] -= count
            entry["count"] = count
            chunks.append(array("d", flat[:count].to(torch.float64).tolist()).tobytes())
            tensors.append(entry)
            return {"$t": len(tensors) - 1}
        if depth > 4:
            return type(value).__name__
        if isinstance(value, (list, tuple)):
            return [walk(v, depth + 1) for v in list(value)[:16]]
        if isinstance(value, dict):
            return {str(k): walk(v, depth + 1) for k, v in list(value.items())[:16]}
        for name in ("last_hidden_state", "logits", "sample", "out"):  # output dataclasses
            if hasattr(value, name) and isinstance(getattr(value, name), torch.Tensor):
                return {name: walk(getattr(value, name), depth + 1)}
        return type(value).__name__

    structure = walk(out, 0)
    return structure, tensors, b"".join(chunks)


def worker(events: int, code: Any, path: str, class_name: Optional[str], given: List[Dict[str, Any]],
           native: List[str], builder: Optional[str], memory_mb: int, original: Optional[Dict[str, Any]] = None) -> None:
    """The worker's whole life, in a private copy of this module's namespace: import the block, build it, run forward,
    and report each step as a frame. Never returns."""
    send = sender(events)
    exit_ = os._exit
    try:
        if memory_mb:
            limit_memory(memory_mb)
        limit_files()
        block_network()
        os.environ["NNRAG_VALIDATE_FILE"] = path
        try:
            import torch
            globals()["CALL"] = torch.nn.Module.__call__
        except Exception:  # noqa: BLE001 - the block's import names what is missing
            pass
        run_block(send, code, path, class_name, given, native, builder, original)
    except Failure as failure:
        send({"failure": dict(failure.extra, category=failure.category, message=failure.message)})
    except BaseException as exc:  # noqa: BLE001 - never leave the judge without a word
        try:
            send({"failure": {"category": "error", "message": f"{type(exc).__name__}: {exc}"}})
        except BaseException:  # noqa: BLE001
            pass
    exit_(0)


def run_block(send: Callable[..., None], code: Any, path: str, class_name: Optional[str],
              given: List[Dict[str, Any]], native: List[str], builder: Optional[str],
              original: Optional[Dict[str, Any]] = None) -> None:
    """Import, instantiate and forward, in the worker; each tier reached is a frame, the forward's with its outputs."""
    spec = importlib.util.spec_from_file_location("nnrag_pulled_block", path)
    # helpers shared by blocks pulled together sit beside the file (_nnrag_common.py); last, so nothing is shadowed
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.append(folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules["nnrag_pulled_block"] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the block is the point; the judge sandboxes us
    except BaseException as exc:  # noqa: BLE001 - anything the module does on import is a finding
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise Failure("import-error", f"the file called {type(exc).__name__} on import")
        raise classify_import_error(exc, native)
    try:
        import torch
        from torch import nn
    except ImportError:
        raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
    send({"tier": "imported"})

    cls = find_block(module, class_name, nn)
    send({"class": str(cls.__name__)})
    if inspect.isabstract(cls):
        raise Failure("instantiate", f"{cls.__name__} is abstract: {sorted(getattr(cls, '__abstractmethods__', []))}")
    built = False
    build_errors: List[str] = []
    forward_error: Optional[str] = None
    # each argument set is built, then driven forward; a block that builds but cannot run forward with
    # one set (Bottleneck's identity needs inplanes == 4 * planes) gets the next set
    attempts: List[Tuple[Optional[Callable[..., Any]], List[Any], Dict[str, Any]]] = []
    if builder:
        # the repository's own builder function first: it knows the block's real configuration
        attempts.append((getattr(module, builder, None), [], {}))
    attempts += [(None, a, k) for a, k in constructor_candidates(cls, given, nn, vars(module))[:MAX_CONSTRUCTIONS]]
    for factory, args, kwargs in attempts:
        recorded: Optional[List[Any]] = None
        extra: Dict[str, Any] = {}
        if factory is not None:
            model, recorded, container = build_with(factory, cls, torch, nn, build_errors)
            if model is not None:
                extra["builder"] = builder
                if container:
                    extra["inside"] = container
        else:
            kwargs = dict(kwargs)
            model = build(cls, args, kwargs, torch, nn, build_errors)
        if model is None:
            continue
        built = True
        send(dict(extra, tier="instantiated", args=jsonable(args), kwargs=jsonable(kwargs)))
        # a detector validated as itself resizes what it is given to 800 px too
        lighter(model)
        ran, error, out, inputs = run_forward(model, cls, torch, nn, kwargs, recorded)
        if ran:
            structure, tensors, values = tensor_evidence(out, torch)
            send({"forward": {"input_shapes": [shapes(t) for t in inputs], "output": structure, "tensors": tensors}}, values)
            if original and factory is None:
                compare_with_original(send, original, cls, args, kwargs, inputs, torch)
            elif original and original.get("builder"):
                compare_built(send, original, cls, factory, inputs, torch)
            elif original:
                send({"equivalence": {"status": "unavailable", "reason": "built through a builder of the repository that the original does not have"}})
            return
        forward_error = forward_error or error
    # where the copy fails, does the original pass with the same arguments and inputs? (a fault of the tool if so)
    passes = original_passes(original, attempts, torch, nn) if original else None
    extra = {"original_passes": passes} if passes else {}
    if not built:
        tried = f" ({len(build_errors)} argument sets tried)" if len(build_errors) > 1 else ""
        raise Failure("instantiate", f"cannot build {cls.__name__}: {best_error(build_errors)}{tried}", **extra)
    if forward_error and NATIVE_OPS.search(forward_error):
        raise Failure("native-extension", f"{cls.__name__}.forward needs compiled operators that are not loaded: {forward_error}", **extra)
    raise Failure("forward", f"no input worked for {cls.__name__}.forward: {forward_error}", **extra)


def original_passes(original: Dict[str, Any], attempts: List[Tuple[Any, List[Any], Dict[str, Any]]], torch: Any,
                    nn: Any) -> Optional[str]:
    """The highest tier the original class reaches with the argument sets and inputs the copy was given (None when it
    cannot be imported or builds with none of them): "forward" or "instantiated"."""
    try:
        orig_cls = load_original(original, str(original["module"]), str(original["class"]))
    except BaseException:  # noqa: BLE001 - an original that cannot be imported says nothing
        return None
    reached = None
    for factory, args, kwargs in attempts:
        if factory is not None:
            continue
        errors: List[str] = []
        model = build(orig_cls, args, dict(kwargs), torch, nn, errors)
        if model is None:
            continue
        reached = "instantiated"
        lighter(model)
        ran, _, _, _ = run_forward(model, orig_cls, torch, nn, kwargs)
        if ran:
            return "forward"
    return reached


MAX_VARIANTS = 8
RTOL, ATOL = 1e-5, 1e-6


def compared_strings(cls: Any) -> Dict[str, List[str]]:
    """Per name, the string literals the class's code compares it with (`mode == "nearest"`, `self.act in ("relu",
    "gelu")`): the values a string option takes in the branches its default skips."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return {}

    def name_of(node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        return None

    def strings(node: ast.AST) -> List[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []

    out: Dict[str, List[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for i, side in enumerate(sides):
            name = name_of(side)
            if name is None:
                continue
            for other in sides[:i] + sides[i + 1:]:
                for value in strings(other):
                    if value not in out.setdefault(name, []):
                        out[name].append(value)
    return out


def variants(cls: Any, args: List[Any], kwargs: Dict[str, Any], source: Any = None) -> List[Tuple[List[Any], Dict[str, Any], str]]:
    """The argument set that ran, then that set with each boolean option flipped and each string option set to another
    value the code of `source` (the original class) compares it with: the branches the defaults skip."""
    out = [(args, kwargs, "the arguments that ran")]
    params = init_parameters(cls)
    positional = {p.name for p in params[:len(args)]}
    options = [p for p in params if p.name not in positional and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    strings = compared_strings(source or cls) if any(isinstance(kwargs.get(p.name, p.default), str) for p in options) else {}
    for p in options:
        value = kwargs[p.name] if p.name in kwargs else p.default
        if isinstance(value, bool):
            out.append((args, dict(kwargs, **{p.name: not value}), f"{p.name}={not value}"))
        elif isinstance(value, str):
            other = next((v for v in strings.get(p.name, []) if v != value), None)
            if other is not None:
                out.append((args, dict(kwargs, **{p.name: other}), f"{p.name}={other!r}"))
    return out[:MAX_VARIANTS]


def state_difference(a: Any, b: Any, torch: Any) -> Optional[str]:
    """How the copy's parameters and buffers differ from the original's (names, shapes, values), or None."""
    sa, sb = a.state_dict(), b.state_dict()
    if list(sa) != list(sb):
        missing = [k for k in sa if k not in sb][:3]
        extra = [k for k in sb if k not in sa][:3]
        return f"parameter names differ (the copy lacks {missing}, has {extra} more)" if missing or extra else "parameter order differs"
    for k in sa:
        if tuple(sa[k].shape) != tuple(sb[k].shape):
            return f"parameter {k} has shape {list(sb[k].shape)} in the copy, {list(sa[k].shape)} in the original"
        if not torch.equal(sa[k], sb[k]):
            return f"parameter {k} has other values in the copy"
    return None


def load_original(original: Dict[str, Any], module: str, name: str) -> Any:
    """`module.name` from the original repository (its folder first on the path); raises what the import raises."""
    if original.get("path") and original["path"] not in sys.path:
        sys.path.insert(0, str(original["path"]))
    return getattr(importlib.import_module(module), name)


def import_original(send: Callable[..., None], original: Dict[str, Any], module: str, name: str) -> Any:
    """`module.name` from the original repository, or None after saying why not."""
    try:
        return load_original(original, module, name)
    except BaseException as exc:  # noqa: BLE001 - any failure to import is a reason, not a verdict
        send({"equivalence": {"status": "unavailable", "reason": f"the original cannot be imported: {type(exc).__name__}: {exc}"[:500]}})
        return None


def compare_pair(send: Callable[..., None], label: str, orig: Any, copy: Any, inputs: List[Any], torch: Any) -> None:
    """Compare the parameters and buffers of two built blocks here, and send both eval-mode outputs on the same input
    (same seed) for the judge to compare value by value."""
    difference = state_difference(orig, copy, torch)
    outs = []
    for m in (orig, copy):
        try:
            torch.manual_seed(1)
            with torch.no_grad():
                outs.append((True, module_call(m)(m, *inputs)))
        except Exception as exc:  # noqa: BLE001
            outs.append((False, f"{type(exc).__name__}: {exc}"[:300]))
    (orig_ok, orig_out), (copy_ok, copy_out) = outs
    if not orig_ok and not copy_ok:
        send({"equivalence": {"variant": label, "params": difference, "skipped": "neither runs on this input"}})
        return
    if orig_ok != copy_ok:
        send({"equivalence": {"variant": label, "difference": f"only the {'original' if orig_ok else 'copy'} runs forward: {copy_out if orig_ok else orig_out}"}})
        return
    s_orig, t_orig, v_orig = tensor_evidence(orig_out, torch, MAX_VALUES // 2)
    s_copy, t_copy, v_copy = tensor_evidence(copy_out, torch, MAX_VALUES // 2)
    send({"equivalence": {"variant": label, "params": difference, "original": {"output": s_orig, "tensors": t_orig},
                          "copy": {"output": s_copy, "tensors": t_copy}, "split": len(v_orig) // 8}}, v_orig + v_copy)


def compare_with_original(send: Callable[..., None], original: Dict[str, Any], cls: Any, args: List[Any],
                          kwargs: Dict[str, Any], inputs: List[Any], torch: Any) -> None:
    """Build the original class and the copy with the same seed and arguments (and each boolean option flipped), and
    compare each pair. Each argument variant is one frame."""
    orig_cls = import_original(send, original, str(original["module"]), str(original["class"]))
    if orig_cls is None:
        return
    built_any = False
    first_error = ""
    for a, k, label in variants(cls, args, kwargs, orig_cls):
        try:
            torch.manual_seed(0)
            orig = orig_cls(*a, **k)
            orig.eval()
            built_any = True
        except Exception as exc:  # noqa: BLE001 - a set the original does not build says nothing of the copy
            first_error = first_error or f"{type(exc).__name__}: {exc}"
            continue
        try:
            torch.manual_seed(0)
            copy = cls(*a, **k)
            copy.eval()
        except Exception as exc:  # noqa: BLE001
            send({"equivalence": {"variant": label, "difference": f"the copy does not build where the original does: {type(exc).__name__}: {exc}"[:500]}})
            continue
        compare_pair(send, label, orig, copy, inputs, torch)
    if not built_any:
        send({"equivalence": {"status": "unavailable", "reason": f"the original does not build with the arguments that ran: {first_error}"[:500]}})


def inner_of(model: Any, cls: Any) -> Any:
    """The block itself, or the first block of its class inside a model a builder made."""
    if isinstance(model, cls):
        return model
    return next((m for m in model.modules() if type(m) is cls), None) or next((m for m in model.modules() if isinstance(m, cls)), None)


def compare_built(send: Callable[..., None], original: Dict[str, Any], cls: Any, factory: Any, inputs: List[Any],
                  torch: Any) -> None:
    """Like compare_with_original for a block built by a builder function: the original repository's builder and the
    copy's, with the same seed, then the blocks inside them on the inputs that ran."""
    builder = original["builder"]
    orig_cls = import_original(send, original, str(original["module"]), str(original["class"]))
    orig_factory = orig_cls and import_original(send, original, str(builder["module"]), str(builder["name"]))
    if orig_cls is None or orig_factory is None:
        return
    label = f"built by {builder['name']}()"
    blocks = []
    for make, klass in ((orig_factory, orig_cls), (factory, cls)):
        try:
            torch.manual_seed(0)
            made = inner_of(make(), klass)
            if made is None:
                raise LookupError(f"no {klass.__name__} inside")
            made.eval()
            blocks.append(made)
        except Exception as exc:  # noqa: BLE001
            if not blocks:
                send({"equivalence": {"status": "unavailable", "reason": f"the original builder fails: {type(exc).__name__}: {exc}"[:500]}})
            else:
                send({"equivalence": {"variant": label, "difference": f"the copy's builder fails where the original's does not: {exc}"[:500]}})
            return
    compare_pair(send, label, blocks[0], blocks[1], inputs, torch)


def limit_files() -> None:
    """No core files, and no single file larger than FILE_SIZE_CAP written by the block."""
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_CAP, FILE_SIZE_CAP))
    except (ImportError, ValueError, OSError, AttributeError):
        pass


def private_namespace() -> Dict[str, Any]:
    """A copy of this module's globals whose functions look their names up in the copy: the block can replace what
    `import __main__` gives it without reaching the functions the worker runs."""
    ns = dict(globals())
    here = globals()
    for name, value in list(ns.items()):
        if isinstance(value, types.FunctionType) and value.__globals__ is here:
            ns[name] = types.FunctionType(value.__code__, ns, value.__name__, value.__defaults__, value.__closure__)
    return ns


def not_dumpable() -> None:
    """Make this process untraceable and its /proc entries (fds, memory, environment) unreadable by processes
    without privileges over it: the worker and what it starts cannot reach the judge's verdict pipe."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what the block leaves behind stays ours to kill
    except (OSError, AttributeError, ImportError):
        pass


def descendants(root: int) -> List[int]:
    """Every process below `root`, from /proc (children found through their parents)."""
    parents: Dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: List[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.append(child)
                frontier.append(child)
    return found


def kill_descendants() -> None:
    """Kill and reap everything this process started (and, as a subreaper, what they left behind)."""
    for _ in range(50):
        pids = descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.01)
            except ChildProcessError:
                break


def memory_in_use(pids: List[int]) -> int:
    """Bytes of anonymous and shared memory the processes hold (RssAnon + RssShmem: shared mappings count)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return total


class Job:
    """One validation as the judge sees it: what the worker said, what it printed, how it ended."""

    def __init__(self) -> None:
        self.frames: List[Tuple[Dict[str, Any], bytes]] = []
        self.buffer = b""
        self.tail = b""
        self.printed = 0
        self.problem: Optional[Tuple[str, str]] = None
        self.status: Optional[int] = None

    def feed(self, data: bytes) -> None:
        """Frames from the worker; a malformed or oversized one is a problem, never a result."""
        self.buffer += data
        while len(self.buffer) >= FRAME.size:
            head_len, blob_len = FRAME.unpack_from(self.buffer)
            if head_len > MAX_HEADER or blob_len > MAX_VALUES * 8:
                self.problem = ("tampered", "the block wrote to the validator's channel (an oversized frame)")
                return
            end = FRAME.size + head_len + blob_len
            if len(self.buffer) < end:
                return
            try:
                header = json.loads(self.buffer[FRAME.size:FRAME.size + head_len].decode("utf-8"))
                if not isinstance(header, dict):
                    raise ValueError("not an object")
            except ValueError:
                self.problem = ("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
                return
            self.frames.append((header, bytes(self.buffer[FRAME.size + head_len:end])))
            self.buffer = self.buffer[end:]

    def output(self, data: bytes) -> None:
        self.printed += len(data)
        self.tail = (self.tail + data)[-OUTPUT_TAIL:]
        if self.printed > OUTPUT_CAP:
            self.problem = ("output", f"the block printed more than {OUTPUT_CAP >> 20} MB")


def supervise(job: Job, pid: int, events: int, printed: int, control: Optional[int], timeout_s: float,
              memory_mb: int) -> None:
    """Read the worker's frames and output until it ends, the time or memory limit is hit, or the caller goes away
    (end of `control`) or cancels (a line on it)."""
    deadline = time.monotonic() + timeout_s
    next_memory = 0.0
    fds = [events, printed] + ([control] if control is not None else [])
    while job.problem is None:
        if job.status is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                job.status = status
        ready, _, _ = select.select(fds, [], [], 0 if job.status is not None else POLL_S)
        if job.status is not None and not ready:
            return
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if fd == control:
                job.problem = ("cancelled", "validation cancelled") if data else ("cancelled", "the caller went away")
            elif not data:
                fds.remove(fd)
            elif fd == printed:
                job.output(data)
            else:
                job.feed(data)
        now = time.monotonic()
        if now > deadline:
            job.problem = ("timeout", f"no result within {timeout_s:g} s")
        elif memory_mb and now >= next_memory:
            next_memory = now + MEMORY_EVERY_S
            used = memory_in_use(descendants(os.getpid()))
            if used > memory_mb << 20:
                job.problem = ("memory", f"the block used {used >> 20} MB, over the limit of {memory_mb} MB")


def judge(path: str, class_name: Optional[str], given: List[Dict[str, Any]], native: List[str],
          builder: Optional[str] = None, memory_mb: int = 0, timeout_s: float = 600,
          control: Optional[int] = None, original: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Validate one file: the static tiers here, the rest in a worker; return the verdict."""
    report: Dict[str, Any] = {"file": path, "tier": None, "ok": False, "class": class_name}
    started = time.time()

    def reach(tier: str) -> None:
        report["tier"] = tier
        progress(tier)

    try:
        raw = open(path, "rb").read()
        try:
            tree = ast.parse(raw, path)
        except SyntaxError as exc:
            raise Failure("syntax", f"syntax error at line {exc.lineno}: {exc.msg}")
        except (RecursionError, MemoryError):
            raise Failure("syntax", "too deeply nested for the parser")
        reach("parsed")
        source = raw.decode("utf-8")
        try:
            code = compile(tree, path, "exec")
        except (SyntaxError, ValueError, RecursionError) as exc:
            raise Failure("syntax", f"does not compile: {exc}")
        reach("compiled")
        undefined = undefined_names(source, path)
        if undefined:
            listed = ", ".join(f"'{n}' (line {line})" for n, line in undefined[:8])
            raise Failure("unresolved", f"undefined names: {listed}", names=[n for n, _ in undefined])
        reach("names-closed")
        report["requirements"] = requirements(imported_top_levels(tree))
        job = run_worker(code, path, class_name, given, native, builder, memory_mb, timeout_s, control, original)
        verdict(job, report, reach)
    except Failure as failure:
        report["category"] = failure.category
        report["message"] = failure.message
        report.update(failure.extra)
    report["seconds"] = round(time.time() - started, 3)
    return report


def run_worker(code: Any, path: str, class_name: Optional[str], given: List[Dict[str, Any]], native: List[str],
               builder: Optional[str], memory_mb: int, timeout_s: float, control: Optional[int],
               original: Optional[Dict[str, Any]] = None) -> Job:
    """Fork the worker with its two pipes, supervise it, then kill whatever is left of it."""
    events_r, events_w = os.pipe()
    printed_r, printed_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(printed_w, 1)
            os.dup2(printed_w, 2)
            keep = 3 if events_w == 3 else os.dup2(events_w, 3)
            os.closerange(keep + 1, 1 << 16)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            ns = private_namespace()
            ns["worker"](3, code, path, class_name, given, native, builder, memory_mb, original)
        finally:
            os._exit(3)
    os.close(events_w)
    os.close(printed_w)
    job = Job()
    try:
        supervise(job, pid, events_r, printed_r, control, timeout_s, memory_mb)
    finally:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        kill_descendants()
        if job.status is None:
            try:
                job.status = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                pass
        os.close(events_r)
        os.close(printed_r)
    return job


TENSOR_DTYPES = {"float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8", "int16",
                 "int32", "int64", "bool", "float", "double", "half", "long", "int", "short", "cfloat", "cdouble"}


def checked_tensors(entries: Any, values: bytes, limit: int = MAX_VALUES) -> Tuple[List[List[int]], bool, int]:
    """The tensors of a forward frame as the judge reads them: shapes, whether every value sent is finite, and how
    many values were checked. Raises ValueError on anything malformed."""
    if not isinstance(entries, list):
        raise ValueError("tensors is not a list")
    if len(values) % 8:
        raise ValueError("values are not float64")
    data = array("d")
    data.frombytes(values)
    offset = 0
    shapes_: List[List[int]] = []
    finite = True
    for e in entries:
        if not isinstance(e, dict) or e.get("dtype") not in TENSOR_DTYPES:
            raise ValueError("a tensor without a known dtype")
        shape, count = e.get("shape"), e.get("count")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
            raise ValueError("a tensor without a shape")
        numel = 1
        for d in shape:
            numel *= d
        if str(e["dtype"]).startswith("complex") or e["dtype"] in ("cfloat", "cdouble"):
            numel *= 2
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= numel or offset + count > len(data):
            raise ValueError("a tensor whose values were not sent")
        if count < numel and offset + count < limit:
            raise ValueError("a tensor cut short")
        if finite and not all(math.isfinite(v) for v in data[offset:offset + count]):
            finite = False
        offset += count
        shapes_.append(shape)
    if offset != len(data):
        raise ValueError("values that belong to no tensor")
    return shapes_, finite, offset


def with_shapes(structure: Any, shapes_: List[List[int]], depth: int = 0) -> Any:
    """The output's structure with each {"$t": i} replaced by the shape the judge checked."""
    if depth > 8:
        raise ValueError("structure too deep")
    if isinstance(structure, dict):
        if set(structure) == {"$t"}:
            index = structure["$t"]
            if not isinstance(index, int) or not 0 <= index < len(shapes_):
                raise ValueError("a tensor reference out of range")
            return shapes_[index]
        return {str(k): with_shapes(v, shapes_, depth + 1) for k, v in list(structure.items())[:16]}
    if isinstance(structure, list):
        return [with_shapes(v, shapes_, depth + 1) for v in structure[:16]]
    if isinstance(structure, str):
        return structure[:80]
    raise ValueError("an output structure that is not ours")


def verdict(job: Job, report: Dict[str, Any], reach: Callable[[str], None]) -> None:
    """Turn the worker's frames into the report. Tiers must come in order; only a forward frame whose tensors the
    judge checked, from a worker that then ended normally, makes the block validated."""
    order = ["names-closed", "imported", "instantiated"]
    failure: Optional[Dict[str, Any]] = None
    forward: Optional[Tuple[Dict[str, Any], bytes]] = None
    equivalence: List[Tuple[Dict[str, Any], bytes]] = []
    for header, blob in job.frames:
        if forward is not None and failure is None and isinstance(header.get("equivalence"), dict):
            equivalence.append((header["equivalence"], blob))
            continue
        if forward is not None or failure is not None:
            raise Failure("tampered", "the block wrote to the validator's channel (a frame after the last)")
        if "tier" in header:
            tier = header["tier"]
            # each argument set that builds is announced: "instantiated" may come again after a forward that failed
            again = tier == "instantiated" and report["tier"] == "instantiated"
            if tier not in order or (order.index(tier) != order.index(report["tier"]) + 1 and not again):
                raise Failure("tampered", f"the block wrote to the validator's channel (tier {str(tier)[:40]!r} out of order)")
            if tier == "instantiated":
                for key in ("args", "kwargs", "builder", "inside"):
                    if key in header:
                        report[key] = header[key]
            reach(tier)
        elif "class" in header and isinstance(header["class"], str):
            report["class"] = header["class"][:200]
        elif "failure" in header and isinstance(header["failure"], dict):
            failure = header["failure"]
        elif "forward" in header and isinstance(header["forward"], dict) and report["tier"] == "instantiated":
            forward = (header["forward"], blob)
        else:
            raise Failure("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
    if job.problem is not None and forward is not None and job.problem[0] in ("timeout", "memory", "output"):
        # the forward was whole before the limit: only the comparison with the original did not finish
        equivalence = [({"status": "unavailable", "reason": f"the comparison with the original did not finish: {job.problem[1]}"}, b"")]
        job.problem = None
        job.status = 0
    if job.problem is not None:
        category, message = job.problem
        if category == "tampered":
            raise Failure(category, message)
        if category == "timeout":
            message = f"{message} (last tier reached: {report['tier']})"
        raise Failure(category, message, output=tail_text(job))
    if failure is not None:
        category = str(failure.get("category", "error"))
        if category == "error":  # an exception of the validator's own steps: the tier it stopped before
            category = {"names-closed": "import-error", "imported": "instantiate"}.get(report["tier"], "forward")
        if category not in CATEGORIES:
            raise Failure("tampered", "the block wrote to the validator's channel (an unknown category)")
        extra = {k: v for k, v in failure.items() if k in ("names", "package") or (k == "original_passes" and v in ("forward", "instantiated"))}
        raise Failure(category, str(failure.get("message", ""))[:4000], **extra)
    status = job.status if job.status is not None else -1
    if forward is not None and equivalence and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        # the forward was whole; what ended the worker came while it compared with the original
        equivalence = [({"status": "unavailable", "reason": f"the comparison with the original did not finish: {last_line(tail_text(job))}"}, b"")]
        status = 0
    if os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0) or forward is None:
        how = f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else "no status"
        category = "memory" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else {
            "names-closed": "import-error", "imported": "instantiate", "instantiated": "forward"}.get(report["tier"], "forward")
        raise Failure(category, f"the block's process ended without a result ({how}): {last_line(tail_text(job))}",
                      output=tail_text(job))
    body, values = forward
    try:
        shapes_, finite, count = checked_tensors(body.get("tensors"), values)
        output_shapes = with_shapes(body.get("output"), shapes_)
        inputs = body.get("input_shapes")
        json.dumps(inputs)
    except (ValueError, TypeError, RecursionError) as exc:
        raise Failure("tampered", f"the block wrote to the validator's channel (forward evidence: {exc})")
    report["input_shapes"] = inputs
    report["output_shapes"] = output_shapes
    report["output_finite"] = finite
    report["checked_values"] = count
    reach("forward")
    if equivalence:
        judge_equivalence(equivalence, report, reach)
    report["ok"] = True


def close(a: float, b: float) -> bool:
    """Equal within the tolerance (NaN equals NaN: a copy that behaves the same)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(a)


def judge_equivalence(frames: List[Tuple[Dict[str, Any], bytes]], report: Dict[str, Any], reach: Callable[[str], None]) -> None:
    """Compare the original's and the copy's outputs for each argument variant, value by value; any difference (or a
    difference the worker found in parameters or building) fails the block as `differs`."""
    compared: List[str] = []
    differences: List[str] = []
    for body, blob in frames:
        if body.get("status") == "unavailable":
            report["equivalence"] = {"status": "unavailable", "reason": str(body.get("reason", ""))[:500]}
            return
        label = str(body.get("variant", "?"))[:200]
        if body.get("difference"):
            differences.append(f"{label}: {str(body['difference'])[:300]}")
            continue
        if body.get("params"):
            differences.append(f"{label}: {str(body['params'])[:300]}")
            continue
        if body.get("skipped"):
            continue
        try:
            split = body["split"]
            if not isinstance(split, int) or not 0 <= split * 8 <= len(blob):
                raise ValueError("a split outside the values")
            orig, copy = body["original"], body["copy"]
            shapes_o, _, _ = checked_tensors(orig["tensors"], blob[:split * 8], MAX_VALUES // 2)
            shapes_c, _, _ = checked_tensors(copy["tensors"], blob[split * 8:], MAX_VALUES // 2)
            structure_o, structure_c = with_shapes(orig["output"], shapes_o), with_shapes(copy["output"], shapes_c)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise Failure("tampered", f"the block wrote to the validator's channel (equivalence evidence: {exc})")
        if structure_o != structure_c:
            differences.append(f"{label}: the output is {json.dumps(structure_c)[:120]} in the copy, {json.dumps(structure_o)[:120]} in the original")
            continue
        a, b = array("d"), array("d")
        a.frombytes(blob[:split * 8])
        b.frombytes(blob[split * 8:])
        bad = next((i for i in range(len(a)) if not close(a[i], b[i])), None) if len(a) == len(b) else 0
        if bad is not None:
            differences.append(f"{label}: output value {bad} is {b[bad] if bad < len(b) else '?'} in the copy, {a[bad] if bad < len(a) else '?'} in the original")
            continue
        compared.append(label)
    if differences:
        report["equivalence"] = {"status": "differs", "variants": compared, "differences": differences[:6]}
        raise Failure("differs", f"the copy differs from the original: {'; '.join(differences[:3])}")
    if compared:
        report["equivalence"] = {"status": "equivalent", "variants": compared}
        reach("equivalent")


# every category a report may carry (src/core/validate/runner.ts has the same list; a test checks)
REPORT_CATEGORIES = ["syntax", "unresolved", "native-extension", "missing-package", "import-error", "instantiate",
                     "forward", "timeout", "memory", "interpreter", "tampered", "output", "differs"]
# those a worker may name in a failure frame ("error": one of its own steps failed)
CATEGORIES = set(REPORT_CATEGORIES) - {"tampered", "output", "differs"} | {"error"}


def tail_text(job: Job) -> str:
    return job.tail.decode("utf-8", "replace")


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "it printed nothing"


def main(argv: List[str]) -> int:
    """Command line: validate.py FILE [--class NAME] [--candidates JSON] [--native a,b] [--memory-mb N] [--timeout S]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--class", dest="class_name")
    parser.add_argument("--candidates", default="[]", help="JSON list of {args, kwargs} to try first")
    parser.add_argument("--native", default="", help="comma-separated modules known to be compiled extensions")
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--builder", help="a function of the file that builds the block without arguments")
    parser.add_argument("--original", help='JSON {"module", "class", "path"}: the class the file was pulled from, to compare')
    opts = parser.parse_args(argv)
    not_dumpable()
    report = judge(os.path.abspath(opts.file), opts.class_name, parse_candidates(opts.candidates),
                   [n for n in opts.native.split(",") if n], opts.builder, opts.memory_mb, opts.timeout,
                   original=parse_original(opts.original))
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0 if report["ok"] else 1


def parse_original(value: Any) -> Optional[Dict[str, Any]]:
    """The original class to compare with: {"module", "class", "path" (a folder for sys.path, or null)}."""
    try:
        got = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(got, dict) or not isinstance(got.get("module"), str) or not isinstance(got.get("class"), str):
        return None
    builder = got.get("builder")
    ok_builder = isinstance(builder, dict) and isinstance(builder.get("module"), str) and isinstance(builder.get("name"), str)
    return {"module": got["module"], "class": got["class"], "path": got.get("path") if isinstance(got.get("path"), str) else None,
            "builder": {"module": builder["module"], "name": builder["name"]} if ok_builder else None}


def parse_candidates(text: Any) -> List[Dict[str, Any]]:
    try:
        given = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [g for g in given if isinstance(g, dict)] if isinstance(given, list) else []


def serve() -> int:
    """--serve: the judge for a pool or a single run. Imports torch once (a trusted import, before any block's code);
    then, for each request on stdin (one JSON object a line: {"id", "file", "class", "candidates", "native",
    "builder", "memory_mb", "timeout_s", "work"}), validates in a worker forked from this warm process, with `work`
    as its folder, home and temp, and answers {"id", "report"}. A line on stdin while a job runs cancels it; the end
    of stdin ends everything."""
    not_dumpable()
    try:
        import torch  # noqa: F401 - warm: what every worker would import first
        import torch.nn  # noqa: F401
    except Exception:  # noqa: BLE001 - a torch-less interpreter still serves (and workers report it)
        pass
    answer = sys.stdout
    answer.write(json.dumps({"ready": True}) + "\n")
    answer.flush()
    pending = b""
    while True:
        while b"\n" not in pending:
            data = os.read(0, 1 << 16)
            if not data:
                return 0
            pending += data
        line, pending = pending.split(b"\n", 1)
        if not line.strip() or line.strip() == b"cancel":  # a cancel that came after its job ended
            continue
        try:
            req = json.loads(line)
            rid, path, work = req["id"], str(req["file"]), str(req["work"])
        except (ValueError, KeyError, TypeError) as exc:
            answer.write(json.dumps({"id": None, "error": f"bad request: {exc}"}) + "\n")
            answer.flush()
            continue
        if pending.strip().startswith(b"cancel"):  # cancelled before the job started
            report = {"file": path, "tier": None, "ok": False, "category": "cancelled", "message": "validation cancelled"}
            pending = b""
        else:
            report = in_folder(work, lambda: judge(path, req.get("class"), parse_candidates(req.get("candidates", [])),
                                                   [str(n) for n in req.get("native", [])], req.get("builder"),
                                                   int(req.get("memory_mb", 0)), float(req.get("timeout_s", 600)), 0,
                                                   parse_original(req.get("original"))))
        answer.write(json.dumps({"id": rid, "report": report}) + "\n")
        answer.flush()
        if report.get("category") == "cancelled" and report.get("message") == "the caller went away":
            return 0


def in_folder(work: str, run: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
    """Run with `work` as the current folder, home and temp (the worker inherits them); clear it afterwards."""
    import shutil
    import tempfile
    os.makedirs(work, exist_ok=True)
    before = os.getcwd()
    saved = {k: os.environ.get(k) for k in ("HOME", "TMPDIR")}
    os.chdir(work)
    os.environ["HOME"] = os.environ["TMPDIR"] = work
    tempfile.tempdir = None
    try:
        return run()
    finally:
        os.chdir(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tempfile.tempdir = None
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(serve())
    sys.exit(main(sys.argv[1:]))
