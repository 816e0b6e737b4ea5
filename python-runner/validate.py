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
import os
import re
import symtable
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

TIERS = ["parsed", "compiled", "names-closed", "imported", "instantiated", "forward"]
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


def guess_value(param: inspect.Parameter, nn: Any) -> Any:
    """A plausible value for a required constructor parameter, from its name and annotation."""
    name = param.name.lower()
    for names, value in GUESSES:
        if name in names:
            return value
    if name in FACTORIES or name.endswith("_layer"):
        return nn.BatchNorm2d if "norm" in name else (nn.ReLU if "act" in name else nn.Identity)
    ann = param.annotation
    text = ann if isinstance(ann, str) else repr(ann) if getattr(ann, "__args__", None) else getattr(ann, "__name__", repr(ann))
    if "Union" in str(text) and "int" in str(text):
        return 16
    if "List[int]" in str(text) or "Sequence[int]" in str(text) or "List[float]" in str(text):
        return [2, 2] if "int" in str(text) else [1.0, 1.0]
    if "Module" in str(text) and "Callable" not in str(text):
        return nn.Identity()
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
                value = guess_value(positional[i], nn) if i < len(positional) else 16
            args.append(value)
        kwargs: Dict[str, Any] = {}
        for k, v in dict(g.get("kwargs", {})).items():
            ok, value = resolve_given(v, namespace)
            if not ok:
                if k not in by_name:
                    continue
                value = guess_value(by_name[k], nn)
            kwargs[k] = value
        # required parameters the call site passed through **kwargs or a variable: guessed
        taken = {p.name for p in positional[:len(args)]} | set(kwargs)
        for p in params:
            if p.default is p.empty and p.name not in taken:
                kwargs[p.name] = guess_value(p, nn)
        out.append((args, kwargs))
    out.append(([], {}))
    required = {p.name: guess_value(p, nn) for p in params if p.default is p.empty}
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
    return getattr(value, "__name__", repr(value))


MAX_CONSTRUCTIONS = 8
# a forward that reaches compiled operators that are not there (torchvision's _C ops) is a native-extension problem
NATIVE_OPS = re.compile(r"custom C\+\+ ops|Could not run '\w+::|undefined symbol|No such operator")
# a block whose forward is slow (a detector resizing to 800 px) must not spend the whole time limit on guesses
FORWARD_BUDGET_S = 10
MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)$")


def build(cls: Any, args: List[Any], kwargs: Dict[str, Any], torch: Any, nn: Any, errors: List[str]) -> Any:
    """Build the block; when a nested constructor reached through **kwargs misses arguments, guess them too."""
    kwargs = dict(kwargs)
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
    inner = next((m for m in model.modules() if type(m) is cls), None) or next((m for m in model.modules() if isinstance(m, cls)), None)
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
    try:
        with torch.no_grad():
            for inputs in input_candidates(model, torch, nn, {}):
                if recorded or time.time() - started > FORWARD_BUDGET_S:
                    break
                try:
                    model(*inputs)
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


def run_forward(model: Any, cls: Any, torch: Any, nn: Any, kwargs: Dict[str, Any], report: Dict[str, Any],
                first: Optional[List[Any]] = None) -> Tuple[bool, Optional[str]]:
    """Drive forward with the inputs recorded inside a real model (`first`), else inferred ones."""
    try:
        recorded = [first] if first else []
        # large recorded inputs: a smaller cut of them first, the whole only when the cut does not run
        if first and max(spatial_sides(first), default=0) > LARGE_SIDE:
            recorded.insert(0, shrunk(first))
        candidates = recorded + containers(model, input_candidates(model, torch, nn, kwargs))
    except Exception as exc:  # noqa: BLE001
        return False, f"{type(exc).__name__}: {exc}"
    arity = forward_arity(model)
    error: Optional[str] = None
    started = time.time()
    with torch.no_grad():
        for inputs in candidates:
            if time.time() - started > FORWARD_BUDGET_S:
                error = f"{error} (stopped trying inputs after {FORWARD_BUDGET_S} s)"
                break
            if len(inputs) < arity:
                inputs = inputs + [inputs[0]] * (arity - len(inputs))
            try:
                out = model(*inputs)
            except MemoryError:
                raise Failure("memory", "out of memory in forward")
            except Exception as exc:  # noqa: BLE001
                error = error or f"{type(exc).__name__}: {exc}{where(exc)}"
                continue
            report["input_shapes"] = [shapes(t) for t in inputs]
            report["output_shapes"] = shapes(out)
            return True, None
    return False, error


def validate(path: str, class_name: Optional[str], given: List[Dict[str, Any]], native: List[str],
             builder: Optional[str] = None) -> Dict[str, Any]:
    """Run the tiers in order; return the report."""
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
        reach("parsed")
        source = raw.decode("utf-8")
        try:
            code = compile(tree, path, "exec")
        except (SyntaxError, ValueError) as exc:
            raise Failure("syntax", f"does not compile: {exc}")
        reach("compiled")
        undefined = undefined_names(source, path)
        if undefined:
            listed = ", ".join(f"'{n}' (line {line})" for n, line in undefined[:8])
            raise Failure("unresolved", f"undefined names: {listed}", names=[n for n, _ in undefined])
        reach("names-closed")
        report["requirements"] = requirements(imported_top_levels(tree))

        os.environ["NNRAG_VALIDATE_FILE"] = path
        spec = importlib.util.spec_from_file_location("nnrag_pulled_block", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["nnrag_pulled_block"] = module
        try:
            exec(code, module.__dict__)  # noqa: S102 - running the block is the point; the caller sandboxes us
        except BaseException as exc:  # noqa: BLE001 - anything the module does on import is a finding
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise Failure("import-error", f"the file called {type(exc).__name__} on import")
            raise classify_import_error(exc, native)
        try:
            import torch
            from torch import nn
        except ImportError:
            raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
        reach("imported")

        cls = find_block(module, class_name, nn)
        report["class"] = cls.__name__
        if inspect.isabstract(cls):
            raise Failure("instantiate", f"{cls.__name__} is abstract: {sorted(getattr(cls, '__abstractmethods__', []))}")
        built = False
        build_errors: List[str] = []
        forward_error: Optional[str] = None
        forward_ok = False
        # each argument set is built, then driven forward; a block that builds but cannot run forward with
        # one set (Bottleneck's identity needs inplanes == 4 * planes) gets the next set
        attempts: List[Tuple[Optional[Callable[..., Any]], List[Any], Dict[str, Any]]] = []
        if builder:
            # the repository's own builder function first: it knows the block's real configuration
            attempts.append((getattr(module, builder, None), [], {}))
        attempts += [(None, a, k) for a, k in constructor_candidates(cls, given, nn, vars(module))[:MAX_CONSTRUCTIONS]]
        for factory, args, kwargs in attempts:
            recorded: Optional[List[Any]] = None
            if factory is not None:
                model, recorded, container = build_with(factory, cls, torch, nn, build_errors)
                if model is not None:
                    report["builder"] = builder
                    if container:
                        report["inside"] = container
            else:
                model = build(cls, args, kwargs, torch, nn, build_errors)
            if model is None:
                continue
            if not built:
                built = True
                reach("instantiated")
            report["args"] = jsonable(args)
            report["kwargs"] = jsonable(kwargs)
            # a detector validated as itself resizes what it is given to 800 px too
            lighter(model)
            ok, error = run_forward(model, cls, torch, nn, kwargs, report, recorded)
            if ok:
                forward_ok = True
                break
            forward_error = forward_error or error
        if not built:
            tried = f" ({len(build_errors)} argument sets tried)" if len(build_errors) > 1 else ""
            raise Failure("instantiate", f"cannot build {cls.__name__}: {best_error(build_errors)}{tried}")
        if not forward_ok:
            if forward_error and NATIVE_OPS.search(forward_error):
                raise Failure("native-extension", f"{cls.__name__}.forward needs compiled operators that are not loaded: {forward_error}")
            raise Failure("forward", f"no input worked for {cls.__name__}.forward: {forward_error}")
        reach("forward")
        report["ok"] = True
    except Failure as failure:
        report["category"] = failure.category
        report["message"] = failure.message
        report.update(failure.extra)
    except Exception as exc:  # noqa: BLE001 - never leave the caller without a report
        after = {None: "syntax", "parsed": "syntax", "compiled": "unresolved", "names-closed": "import-error",
                 "imported": "instantiate", "instantiated": "forward"}.get(report["tier"], "forward")
        report["category"] = after
        report["message"] = f"{type(exc).__name__}: {exc}"
    report["seconds"] = round(time.time() - started, 3)
    return report


def main(argv: List[str]) -> int:
    """Command line: validate.py FILE [--class NAME] [--candidates JSON] [--native a,b] [--memory-mb N]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--class", dest="class_name")
    parser.add_argument("--candidates", default="[]", help="JSON list of {args, kwargs} to try first")
    parser.add_argument("--native", default="", help="comma-separated modules known to be compiled extensions")
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--builder", help="a function of the file that builds the block without arguments")
    parser.add_argument("--no-network-guard", action="store_true")
    opts = parser.parse_args(argv)
    if opts.memory_mb:
        limit_memory(opts.memory_mb)
    if not opts.no_network_guard:
        block_network()
    real_stdout = sys.stdout
    sys.stdout = io.TextIOWrapper(sys.stderr.buffer, encoding="utf-8", line_buffering=True) if hasattr(sys.stderr, "buffer") else sys.stderr
    try:
        given = json.loads(opts.candidates)
    except ValueError:
        given = []
    report = validate(os.path.abspath(opts.file), opts.class_name, given, [n for n in opts.native.split(",") if n],
                      opts.builder)
    real_stdout.write(json.dumps(report) + "\n")
    real_stdout.flush()
    return 0 if report["ok"] else 1


def serve() -> int:
    """--serve: a warm validator for a pool. Imports torch once; then, for each request on stdin (one JSON object a
    line: {"id", "argv", "cwd"}), forks a child that runs main(argv) in cwd, in its own process group, with stdout
    and stderr in cwd/stdout.json and cwd/stderr.txt. Answers {"id", "pid"} when the child starts (the caller kills
    that group on a timeout) and {"id", "exit"} when it ends. Children inherit the imported modules, not each
    other's state: each runs in a fresh copy of the warm parent."""
    try:
        import torch  # noqa: F401 - warm: what every child would import first
        import torch.nn  # noqa: F401
    except Exception:  # noqa: BLE001 - a torch-less interpreter still serves (and children report it)
        pass
    answer = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            rid, argv, cwd = req["id"], list(req["argv"]), str(req["cwd"])
        except (ValueError, KeyError, TypeError) as exc:
            answer.write(json.dumps({"id": None, "error": f"bad request: {exc}"}) + "\n")
            answer.flush()
            continue
        pid = os.fork()
        if pid == 0:
            code = 2
            try:
                os.setpgid(0, 0)
                os.chdir(cwd)
                os.environ["HOME"] = os.environ["TMPDIR"] = cwd
                import tempfile
                tempfile.tempdir = None
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                out = os.open(os.path.join(cwd, "stdout.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                err = os.open(os.path.join(cwd, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out, 1)
                os.dup2(err, 2)
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
                sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # noqa: BLE001 - report, never return into the server loop
                import traceback
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        answer.write(json.dumps({"id": rid, "pid": pid}) + "\n")
        answer.flush()
        _, status = os.waitpid(pid, 0)
        answer.write(json.dumps({"id": rid, "exit": os.waitstatus_to_exitcode(status)}) + "\n")
        answer.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(serve())
    sys.exit(main(sys.argv[1:]))
