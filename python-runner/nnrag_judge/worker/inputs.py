"""Worker side: what every source of a block's inputs reads (the layers a block built and the kinds of torch layer
they are, forward's parameters and the submodules it calls), and the registry of input kinds: each source of inputs
is a function registered with `input_kind(priority, question)` in one of the `inputs_*` modules; `candidates.py` tries
them in priority order. Runs only in a worker."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any, Callable, Dict, List, Optional, Set, Tuple
from dataclasses import dataclass

from .context import job


@dataclass(frozen=True)
class InputRequest:
    """What an input kind reads, for one block of one job: the block as built, torch and torch.nn, the arguments it
    was built with, and the repository's own code that builds and calls it (its tests, from the request)."""

    model: Any
    torch: Any
    nn: Any
    built_with: Dict[str, Any]
    examples: Tuple[str, ...] = ()


@dataclass(frozen=True)
class InputKind:
    """A source of inputs: the question it answers about the block, and where it stands among the others."""

    priority: int
    question: str
    make: Callable[[InputRequest], List[List[Any]]]


# every input kind registered, by priority (filled as the inputs_* modules are imported; the same on both sides)
KINDS: List[InputKind] = []


def input_kind(priority: int, question: str) -> Callable[[Callable[[InputRequest], List[List[Any]]]], Callable[[InputRequest], List[List[Any]]]]:
    """Registers `make(request) -> [inputs, ...]` as the source of inputs that answers `question`; sources are tried
    lowest priority first. Two kinds at one priority is a mistake of ours, refused at import."""

    def register(make: Callable[[InputRequest], List[List[Any]]]) -> Callable[[InputRequest], List[List[Any]]]:
        if any(k.priority == priority for k in KINDS):
            raise ValueError(f"two input kinds at priority {priority}: {question!r}")
        KINDS.append(InputKind(priority, question, make))
        KINDS.sort(key=lambda k: k.priority)
        return make

    return register


def layer_kinds(nn: Any) -> Dict[str, Tuple[Any, ...]]:
    """The torch layers whose input the judge knows how to shape, by what they take (one table for every source)."""
    return {
        "conv": (nn.Conv1d, nn.Conv2d, nn.Conv3d),
        "conv_transpose": (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d),
        "linear": (nn.Linear,),
        "embedding": (nn.Embedding,),
        "layer_norm": (nn.LayerNorm,),
        "batch_norm": (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d),
        "group_norm": (nn.GroupNorm,),
        "rnn": (nn.RNNBase,),
    }


def kinds_of(nn: Any, *names: str) -> Tuple[Any, ...]:
    """The layer classes of the kinds named (`layer_kinds`)."""
    table = layer_kinds(nn)
    return tuple(cls for name in names for cls in table[name])


def is_a(module: Any, classes: Any) -> bool:
    """`isinstance(module, classes)`, a copy of one of torch's classes counting as that class (the job's twins)."""
    if isinstance(module, classes):
        return True
    twin = job().twins.get(type(module))
    return twin is not None and issubclass(twin, classes)


def kind_of(module: Any) -> Any:
    """The class a layer is, as torch's classes go (its twin for a copy of one of them)."""
    return job().twins.get(type(module), type(module))


def positional_parameters(model: Any) -> Optional[List[inspect.Parameter]]:
    """forward's positional parameters, in order; None when it has no signature."""
    try:
        return [p for p in inspect.signature(model.forward).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None


def required_inputs(model: Any) -> Optional[List[inspect.Parameter]]:
    """forward's required positional parameters, in order; None when it has no signature."""
    params = positional_parameters(model)
    return None if params is None else [p for p in params if p.default is p.empty]


def first_width(model: Any) -> Optional[int]:
    """The width the block's first layer takes (a convolution's in-channels, a linear layer's in-features, a norm's
    last dimension)."""
    for m in model.modules():
        for attr in ("in_channels", "in_features", "num_features", "embed_dim"):
            value = getattr(m, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        shape = getattr(m, "normalized_shape", None)
        if isinstance(shape, tuple) and shape and isinstance(shape[-1], int):
            return shape[-1]
    return None


def entry_layer(module: Any, nn: Any) -> Optional[Any]:
    """The first layer of a submodule that fixes the shape of what enters it (a convolution, a linear layer, an
    embedding, a norm), or None."""
    kinds = kinds_of(nn, "conv", "linear", "embedding", "layer_norm", "batch_norm", "group_norm")
    return next((m for m in module.modules() if is_a(m, kinds)), None) if isinstance(module, nn.Module) else None


def shaped_for(layer: Any, nn: Any, torch: Any, side: int) -> Optional[Any]:
    """A tensor the layer takes: images for a 2-d convolution or norm, sequences for a 1-d one, volumes for a 3-d one
    (`side` on each spatial axis), tokens (`side // 2` of them) for a linear layer or a layer norm, indices for an
    embedding."""
    if is_a(layer, kinds_of(nn, "conv", "conv_transpose")):
        dims = 1 if is_a(layer, (nn.Conv1d, nn.ConvTranspose1d)) else 3 if is_a(layer, (nn.Conv3d, nn.ConvTranspose3d)) else 2
        return torch.randn(2, layer.in_channels, *([side] * dims))
    if is_a(layer, kinds_of(nn, "batch_norm")):
        dims = {nn.BatchNorm1d: 1, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3}[kind_of(layer)]
        return torch.randn(2, layer.num_features, *([side] * dims))
    if is_a(layer, nn.GroupNorm):
        return torch.randn(2, layer.num_channels, side, side)
    if is_a(layer, nn.Linear):
        return torch.randn(2, side // 2, layer.in_features)
    if is_a(layer, nn.LayerNorm):
        return torch.randn(2, side // 2, *layer.normalized_shape)
    if is_a(layer, nn.Embedding):
        return torch.randint(0, layer.num_embeddings, (2, side // 2))
    return None


def routes(model: Any, nn: Any, optional: bool = False) -> Dict[str, Any]:
    """For each of forward's required parameters (and its optional ones too with `optional`), the layer it enters
    first in forward's source (`self.to_kv(context)` gives `context` the first layer of `to_kv`), where forward's
    source says so."""
    required = [p for p in positional_parameters(model) or [] if optional or p.default is p.empty]
    read = forward_calls(model) if required else None
    if read is None:
        return {}
    params = [p.name for p in required]
    entered: Dict[str, Any] = {}
    for name, func in read[1]:
        if name in params and name not in entered:
            layer = entry_layer(submodule_called(model, func), nn)
            if layer is not None:
                entered[name] = layer
    return entered


def forward_calls(model: Any) -> Optional[Tuple[ast.AST, List[Tuple[str, ast.expr]]]]:
    """forward's source parsed, and its calls whose first argument is a name, in source order: (that name, what the
    call calls); None when the source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(type(model).forward)))
    except (TypeError, ValueError, OSError, SyntaxError):
        return None
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    return tree, [(c.args[0].id, c.func) for c in calls if c.args and isinstance(c.args[0], ast.Name)]


def submodule_called(model: Any, func: ast.expr) -> Any:
    """The submodule a call in forward's source names: `self.proj`, `self.transformer.wte` (a chain of attributes),
    `self.blocks[0]`, `self.heads["cls"]`, `self.layers[i]` (the first of a container); None for anything else.
    Read with getattr and indexing only (a property that raises is the caller's guard's)."""
    steps: List[Any] = []
    node = func
    while True:
        if isinstance(node, ast.Attribute):
            steps.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None  # a computed index: the first item
            steps.append((key,))
            node = node.value
        else:
            break
    if not (isinstance(node, ast.Name) and node.id == "self") or not steps:
        return None
    value: Any = model
    for step in reversed(steps):
        if isinstance(step, str):
            value = getattr(value, step, None)
        else:
            items = list(value.values()) if hasattr(value, "values") else list(value) if hasattr(value, "__iter__") else []
            key = step[0]
            if key is None:
                value = items[0] if items else None
            elif hasattr(value, "keys"):
                value = value[key] if key in value.keys() else None
            else:
                value = items[key] if isinstance(key, int) and -len(items) <= key < len(items) else None
        if value is None:
            return None
    return value


def layer_width(layer: Any, nn: Any) -> Optional[int]:
    """The last dimension a linear layer or a layer norm takes (None for another layer)."""
    if is_a(layer, nn.Linear):
        return int(layer.in_features)
    if is_a(layer, nn.LayerNorm) and layer.normalized_shape:
        return int(layer.normalized_shape[-1])
    return None


def scalar_inputs(model: Any) -> Dict[int, Any]:
    """Required positional forward parameters annotated as a number or a flag (`forward(x, p: int)`), by position:
    a small value that divides the spatial sides tried, instead of a tensor."""
    params = required_inputs(model)
    if params is None:
        return {}
    values = {"int": 4, "float": 0.5, "bool": False}
    out: Dict[int, Any] = {}
    for i, p in enumerate(params):
        ann = p.annotation
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
        if text in values:
            out[i] = values[text]
    return out


def shapes(value: Any) -> Any:
    """Shapes of tensors in a (nested) output, for the report."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return list(value.shape)
    if isinstance(value, (list, tuple)):
        return [shapes(v) for v in value[:8]]
    if isinstance(value, dict):
        return {str(k): shapes(v) for k, v in list(value.items())[:8]}
    return type(value).__name__


def lighter(model: Any) -> None:
    """Resizing steps inside a model (torchvision's detectors bring every image to `min_size` 800 px, `max_size`
    1333) set to an eighth for validation (no side below LIGHT_SIDE): a ResNet-50 backbone at 800 px takes most of a
    minute on a CPU, before a block deep inside is reached, and for each input tried on a detector itself. A
    detector's counts of proposals and detections (`LIGHT_COUNTS`) are capped too: its heads' cost grows with them
    (a Mask R-CNN's box and mask heads run on a thousand proposals, a hundred detections), and a few exercise the
    same code. Both sides make the same calls, so what they compute stays comparable."""
    for m in model.modules():
        capped(m)
        low, high = getattr(m, "min_size", None), getattr(m, "max_size", None)
        if not isinstance(high, int) or isinstance(high, bool):
            continue
        if isinstance(low, int) and not isinstance(low, bool):
            m.min_size = lighter_side(low)
        elif isinstance(low, (tuple, list)) and low and all(isinstance(v, int) for v in low):
            m.min_size = type(low)(lighter_side(v) for v in low)
        else:
            continue
        m.max_size = lighter_side(high)


LIGHT_SIDE = 64


def lighter_side(side: int) -> int:
    """A resizing step's side for validation: an eighth, never below LIGHT_SIDE (nor above the side itself)."""
    return min(side, max(LIGHT_SIDE, side // 8))


# a detector's counts (torchvision's attribute names, shared by the detectors built on them) and their caps: the
# proposals kept before and after NMS (a dict by mode), the detections and candidates per image
LIGHT_COUNTS = {"_pre_nms_top_n": 64, "_post_nms_top_n": 64, "detections_per_img": 16, "topk_candidates": 64}


def capped(module: Any) -> None:
    """A module's counts of LIGHT_COUNTS brought down to their caps (an int, or a dict of ints by mode)."""
    for name, cap in LIGHT_COUNTS.items():
        value = module.__dict__.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > cap:
            setattr(module, name, cap)
        elif isinstance(value, dict) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
            setattr(module, name, {k: min(v, cap) for k, v in value.items()})


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


def unguarded_optional(model: Any) -> Set[str]:
    """forward's optional parameters (default None) that its source passes to one of the block's submodules without a
    test of them and without binding them again (`self.guidance_embedder(guidance)`). The original fails on None there
    as the copy does; a value lets both run."""
    names = {p.name for p in positional_parameters(model) or [] if p.default is None}
    read = forward_calls(model) if names else None
    if read is None:
        return set()
    tree, calls = read
    tested: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tested |= {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.BoolOp):
            tested |= {n.id for v in node.values[:-1] for n in ast.walk(v) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            tested.add(node.id)
    nn = sys.modules["torch"].nn
    found: Set[str] = set()
    for name, func in calls:
        if name in names - tested and name not in found and isinstance(submodule_called(model, func), nn.Module):
            found.add(name)
    return found
