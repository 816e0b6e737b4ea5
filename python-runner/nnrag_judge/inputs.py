"""Worker side: the inputs to drive a block's forward with, inferred from the layers it built, its parameter names
(integer index tensors for graph layers) and its annotations. Runs only in a worker."""

from __future__ import annotations

import ast
import inspect
import math
import re
import sys
import textwrap
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .arguments import GUESSED_WIDTH


SEQ_NAMES = (
    "tokens",
    "num_tokens",
    "seq_len",
    "max_len",
    "num_patches",
    "max_seq_len",
    "seq_length",
    "n_tokens",
    "max_position_embeddings",
    "block_size",
    "context_length",
    "n_ctx",
)


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


# the copy's own classes that are copies of torch's (a block pulled from an indexed torch: its `Linear` is not
# `nn.Linear`), each with torch's class it copies, so that the copy's side shapes its inputs as the original's side
# does; filled by the copy's worker only (worker.torch_twins), empty on the original's side
TWINS: Dict[Any, Any] = {}


def is_a(module: Any, classes: Any) -> bool:
    """`isinstance(module, classes)`, a copy of one of torch's classes counting as that class (TWINS)."""
    if isinstance(module, classes):
        return True
    twin = TWINS.get(type(module))
    return twin is not None and issubclass(twin, classes)


def kind_of(module: Any) -> Any:
    """The class a layer is, as torch's classes go (its twin for a copy of one of them)."""
    return TWINS.get(type(module), type(module))


def input_candidates(model: Any, torch: Any, nn: Any, built_with: Optional[Dict[str, Any]] = None) -> List[List[Any]]:
    """Inputs to try, inferred from the first layers the block built (each shaped as `shaped_for` shapes what that
    layer takes), then common shapes."""
    cands: List[List[Any]] = []
    seqs = sequence_lengths(model, built_with or {})
    layers = kinds_of(nn, "conv", "conv_transpose", "linear", "embedding", "layer_norm", "batch_norm", "group_norm", "rnn")
    for m in model.modules():
        # the block itself counts when it is a torch layer (Conv3DSimple(nn.Conv3d), LayerNorm2d(nn.LayerNorm))
        if m is model and not is_a(m, layers):
            continue
        if is_a(m, kinds_of(nn, "conv", "conv_transpose")):
            cands.append([shaped_for(m, nn, torch, 16)])
            cands.append([shaped_for(m, nn, torch, 32)])
            break
        if is_a(m, nn.Linear):
            cands.extend([shaped_for(m, nn, torch, 2 * n)] for n in seqs)
            cands.append([torch.randn(2, m.in_features)])
            cands.append([shaped_for(m, nn, torch, 16)])
            break
        if is_a(m, nn.Embedding):
            cands.append([shaped_for(m, nn, torch, 16)])
            break
        if is_a(m, nn.LayerNorm):
            cands.extend([shaped_for(m, nn, torch, 2 * n)] for n in seqs)
            cands.append([shaped_for(m, nn, torch, 16)])
            cands.append([torch.randn(2, *tuple(m.normalized_shape))])
            break
        if is_a(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.InstanceNorm2d)):
            extra = {nn.BatchNorm1d: [8], nn.BatchNorm2d: [8, 8], nn.BatchNorm3d: [4, 4, 4]}.get(kind_of(m), [8, 8])
            cands.append([torch.randn(2, m.num_features, *extra)])
            break
        if is_a(m, nn.GroupNorm):
            # a video block (3-d convolutions after the norm, or a norm that folds time into the batch) takes 5-d
            video = [torch.randn(2, m.num_channels, 4, 8, 8)]
            three_d = any(is_a(c, (nn.Conv3d, nn.ConvTranspose3d)) for c in model.modules())
            cands.extend([video, [torch.randn(2, m.num_channels, 8, 8)]] if three_d else [[torch.randn(2, m.num_channels, 8, 8)], video])
            break
        if is_a(m, nn.MultiheadAttention):
            x = torch.randn(8, 2, m.embed_dim)
            cands.append([x, x, x])
            break
        if is_a(m, (nn.RNNBase,)):
            shape = (2, 8, m.input_size) if m.batch_first else (8, 2, m.input_size)
            cands.append([torch.randn(*shape)])
            break
    for shape in [
        (2, 3, 32, 32),
        (2, 16, 16, 16),
        (2, 8, 16),
        (2, 16),
        (2, 3, 64, 64),
        (2, 32, 16, 16),
        (2, 64, 8, 8),
        (2, 3, 16, 16, 16),
        (2, 16, 32),
        (2, 3, 224, 224),
    ]:
        cands.append([torch.randn(*shape)])
    # images as a decoder gives them (transforms that take only uint8)
    cands.append([torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8)])
    return cands


# `x = torch.randn(2, 3, 8, 8)` in a docstring example (`>>> ` lines or code blocks), and a call on such names
EXAMPLE_TENSOR = re.compile(
    r"(\w+)\s*=\s*torch\.(randn|rand|zeros|ones)\(\s*\(?\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*\)?\s*\)"
    r"(?:\.(bool|long|int|float|double)\(\))?"
)
EXAMPLE_INDEX = re.compile(r"(\w+)\s*=\s*torch\.randint\(\s*(\d+)\s*,\s*(\d+)\s*,\s*\(\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*\)\s*\)")
EXAMPLE_CALL = re.compile(r"[\w)]\(\s*((?:[A-Za-z_]\w*\s*=\s*)?[A-Za-z_]\w*(?:\s*,\s*(?:[A-Za-z_]\w*\s*=\s*)?[A-Za-z_]\w*)*)\s*\)")
EXAMPLE_MAX_VALUES = 1 << 21


def example_inputs(model: Any, torch: Any, text: str) -> List[List[Any]]:
    """Inputs one example shows (a docstring's `>>> x = torch.randn(1, 3, 224, 224)`, `>>> out = m(x)`; a test's
    `mask = torch.ones(1, 16).bool()`, `layer(feats, coors, mask=mask)`): the tensors of a call that passes only
    names the example made, in forward's order (a keyword by its parameter's place), else the first tensor alone."""
    if "torch." not in text:
        return []
    made: Dict[str, Callable[[], Any]] = {}
    makers = {"randn": torch.randn, "rand": torch.rand, "zeros": torch.zeros, "ones": torch.ones}
    for m in EXAMPLE_TENSOR.finditer(text):
        dims = [int(d) for d in re.split(r"\s*,\s*", m.group(3))]
        if 0 < math.prod(dims) <= EXAMPLE_MAX_VALUES:
            kind, cast = m.group(2), m.group(4)
            made[m.group(1)] = lambda k=kind, d=dims, c=cast: getattr(makers[k](*d), c)() if c else makers[k](*d)
    for m in EXAMPLE_INDEX.finditer(text):
        dims = [int(d) for d in re.split(r"\s*,\s*", m.group(4))]
        low, high = int(m.group(2)), int(m.group(3))
        if 0 < math.prod(dims) <= EXAMPLE_MAX_VALUES and low < high:
            made[m.group(1)] = lambda lo=low, hi=high, d=dims: torch.randint(lo, hi, tuple(d))
    if not made:
        return []
    params = positional_parameters(model) or []
    order = [p.name for p in params]
    for call in EXAMPLE_CALL.finditer(text):
        positional: List[str] = []
        keywords: Dict[str, str] = {}
        for part in (p.strip() for p in call.group(1).split(",")):
            key, _, value = part.partition("=")
            if value:
                keywords[key.strip()] = value.strip()
            else:
                positional.append(key)
        if not positional or not all(n in made for n in positional + list(keywords.values())):
            continue
        if any(k not in order or order.index(k) < len(positional) for k in keywords):
            continue
        # a keyword at its parameter's place; the parameters between keep their defaults
        width = max([len(positional)] + [order.index(k) + 1 for k in keywords])
        names = [positional[i] if i < len(positional) else keywords.get(order[i]) for i in range(width)]
        if any(n is None and params[i].default is params[i].empty for i, n in enumerate(names)):
            continue
        return [[made[n]() if n is not None else params[i].default for i, n in enumerate(names)]]
    return [[next(iter(made.values()))()]]


def docstring_inputs(model: Any, torch: Any, examples: Optional[List[str]] = None) -> List[List[Any]]:
    """Inputs the block's own docstring shows, then those each of the repository's `examples` (its tests) shows. Small
    ones only; made under the caller's seed, so both sides make the same."""
    text = "\n".join(t for t in (getattr(type(model), "__doc__", None), getattr(type(model).forward, "__doc__", None)) if isinstance(t, str))
    out: List[List[Any]] = []
    seen = set()  # the shapes of the inputs taken: an example that feeds the same ones adds nothing
    for source in [text, *(examples or [])]:
        for got in example_inputs(model, torch, source):
            shapes = tuple(tuple(getattr(t, "shape", ())) for t in got)
            if got and shapes not in seen:
                seen.add(shapes)
                out.append(got)
    return out


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


# the shape a docstring gives a parameter: "of shape `(batch_size, sequence_length, hidden_size)`", "[N, C, H, W]",
# "B x embedding_dim x h x w"; and "the same shape as image_embedding"
SHAPE_LISTED = re.compile(r"(?:shape|size)\s*(?:of\s*)?[:=]?\s*`*\s*[\(\[]([^\)\]\n]{1,80})[\)\]]", re.I)
SHAPE_TIMES = re.compile(r"\b((?:[A-Za-z_]\w*|\d+)(?:[ \t]*[x\u00d7][ \t]*(?:[A-Za-z_]\w*|\d+)){1,5})\b")
SAME_SHAPE = re.compile(r"same shape as\s*`*(\w+)", re.I)
BATCH_SYMBOLS = ("b", "bs", "batch", "batch_size", "batchsize", "n_batch", "nb")
WIDTH_SYMBOLS = (
    "c",
    "ch",
    "channel",
    "channels",
    "num_channels",
    "dim",
    "hidden_size",
    "hidden_dim",
    "embed_dim",
    "d_model",
    "embedding_dim",
    "in_channels",
    "features",
    "num_features",
    "emb_dim",
    "hidden",
    "width_dim",
)
WIDTH_ATTRIBUTES = (
    "in_channels",
    "channels",
    "embed_dim",
    "embedding_dim",
    "dim",
    "hidden_size",
    "d_model",
    "num_channels",
    "in_features",
    "in_dim",
    "input_dim",
)
SIDE = 8


def documented_parameter(doc: str, name: str) -> str:
    """What a docstring says of one parameter (`name (type): ...` or `name: ...` and its indented continuation)."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not re.match(rf"\*?{re.escape(name)}\b\s*(?:\(|:|--|-\s)", stripped):
            continue
        indent = len(line) - len(stripped)
        out = [stripped]
        for more in lines[i + 1 :]:
            if not more.strip() or len(more) - len(more.lstrip()) <= indent:
                break
            out.append(more.strip())
        return " ".join(out)
    return ""


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


def symbol_size(symbol: str, model: Any) -> Optional[int]:
    """The size a symbol of a documented shape stands for: a number, the batch (2), an attribute of the block
    (`embedding_dim`), its input width for a channel symbol, else a small side."""
    text = symbol.strip(" `*'\"").replace(" ", "_")
    if text.isdigit():
        return int(text)
    low = text.lower()
    if low in BATCH_SYMBOLS or low.startswith("batch"):
        return 2
    own = getattr(model, text, None)
    if isinstance(own, int) and not isinstance(own, bool) and 0 < own <= 4096:
        return own
    if low in WIDTH_SYMBOLS:
        for attr in WIDTH_ATTRIBUTES:
            value = getattr(model, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return first_width(model)
    return SIDE


def documented_shape(text: str, model: Any) -> Optional[List[int]]:
    """The sizes of the shape a parameter's description gives, or None."""
    m = SHAPE_LISTED.search(text)
    symbols = re.split(r"\s*,\s*", m.group(1).strip()) if m else None
    if not symbols:
        times = SHAPE_TIMES.search(text)
        symbols = re.split(r"\s*[x\u00d7]\s*", times.group(1)) if times else None
    if not symbols or len(symbols) > 6 or any(not s or "..." in s for s in symbols):
        return None
    sizes = [symbol_size(s, model) for s in symbols]
    if any(s is None for s in sizes):
        return None
    return [int(s) for s in sizes if s is not None]


def documented_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """Tensors of the shapes forward's docstring gives its parameters (`image_embedding: B x embedding_dim x h x w`,
    `image_pe: the same shape as image_embedding`), in forward's order, up to the first parameter it gives none."""
    doc = getattr(type(model).forward, "__doc__", None)
    if not isinstance(doc, str):
        return []
    params = required_inputs(model)
    if params is None:
        return []
    made: Dict[str, Any] = {}
    out: List[Any] = []
    for p in params:
        text = documented_parameter(doc, p.name)
        same = SAME_SHAPE.search(text)
        shape = documented_shape(text, model) if text else None
        if same and same.group(1) in made:
            value = torch.randn(*made[same.group(1)].shape)
        elif shape and 0 < math.prod(shape) <= EXAMPLE_MAX_VALUES:
            value = torch.randn(*shape)
        else:
            break
        made[p.name] = value
        out.append(value)
    return [out] if out else []


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


def entered_input(model: Any, torch: Any, nn: Any) -> List[List[Any]]:
    """For a forward of one input, that input shaped for the first submodule forward's source passes it to
    (`self.transformer.wte(idx)`: token indices for a model whose first registered layer is its output head)."""
    required = required_inputs(model)
    if required is None or len(required) != 1:
        return []
    layer = routes(model, nn).get(required[0].name)
    return [[v] for v in (shaped_for(layer, nn, torch, side) for side in (16, 32)) if v is not None] if layer is not None else []


def routed_inputs(model: Any, torch: Any, nn: Any) -> List[List[Any]]:
    """For a forward with several inputs of different widths (`forward(flow, corr)` into `self.convflow(flow)` and
    `self.convcorr(corr)`, `forward(x, context)` into `self.to_q(x)` and `self.to_kv(context)`): each parameter shaped
    for the first submodule its name is passed to in forward's source, in forward's order, while each has one."""
    required = required_inputs(model)
    if required is None or len(required) < 2:
        return []
    params = [p.name for p in required]
    entered = routes(model, nn)
    out: List[List[Any]] = []
    for side in (16, 32):
        values = []
        for name in params:
            value = shaped_for(entered[name], nn, torch, side) if name in entered else None
            if value is None:
                break
            values.append(value)
        if len(values) >= 2:
            out.append(values)
    return out


# a graph as dense tensors: per-pair features (`edges` of a graph transformer: [batch, nodes, nodes, width]) and
# coordinates (`coors` of an equivariant network: [batch, nodes, 3])
PAIR_NAMES = ("edges", "edge", "edge_feats", "edge_features", "pairwise", "pair", "pair_feats", "pair_repr")
COORD_NAMES = ("coors", "coords", "coordinates", "pos", "positions", "xyz")
GRAPH_NODES = (6, 4)


def layer_width(layer: Any, nn: Any) -> Optional[int]:
    """The last dimension a linear layer or a layer norm takes (None for another layer)."""
    if is_a(layer, nn.Linear):
        return int(layer.in_features)
    if is_a(layer, nn.LayerNorm) and layer.normalized_shape:
        return int(layer.normalized_shape[-1])
    return None


def dense_graph_inputs(model: Any, torch: Any, nn: Any) -> List[List[Any]]:
    """A graph given as dense tensors (`forward(nodes, edges)`, `forward(feats, coors)`): node features [2, nodes,
    width], coordinates [2, nodes, 3], per-pair features [2, nodes, nodes, width]; each width the layer the input
    enters takes (forward's source), else the block's first width."""
    required = required_inputs(model)
    if required is None or len(required) < 2:
        return []
    names = [p.name for p in required]
    if not any(n.lower() in PAIR_NAMES + COORD_NAMES for n in names[1:]):
        return []
    entered = routes(model, nn)
    default = first_width(model) or GUESSED_WIDTH
    out: List[List[Any]] = []
    for nodes in GRAPH_NODES:
        values: List[Any] = []
        for name in names:
            width = layer_width(entered.get(name), nn) or default
            if name.lower() in COORD_NAMES:
                values.append(torch.randn(2, nodes, 3))
            elif name.lower() in PAIR_NAMES:
                values.append(torch.randn(2, nodes, nodes, width))
            else:
                values.append(torch.randn(2, nodes, width))
        out.append(values)
    return out


# a graph batch given as one object whose fields forward reads (`data.x`, `data.edge_index`, `batch.pos`): graph
# libraries' `forward(data)`
GRAPH_FIELDS = ("x", "edge_index", "pos", "batch", "edge_attr")
GRAPH_BATCH_NODES = 8


class GraphBatch:
    """A stand-in for a graph library's data object: the fields forward reads, readable as attributes, by key
    (`data["x"]`), and as keys; `to()` keeps it where it is (the CPU). The same class on both sides."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __getitem__(self, key: str) -> Any:
        return self.__dict__[key]

    def __contains__(self, key: object) -> bool:
        return key in self.__dict__

    def keys(self) -> List[str]:
        return list(self.__dict__)

    def to(self, *_args: Any, **_kwargs: Any) -> "GraphBatch":
        return self

    def __repr__(self) -> str:
        return f"GraphBatch({', '.join(self.__dict__)})"


def fields_read(model: Any, name: str) -> List[str]:
    """The attributes forward's source reads of its parameter `name` (`data.x`, not `data.to(...)`), in order."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(type(model).forward)))
    except (TypeError, ValueError, OSError, SyntaxError):
        return []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    seen: List[str] = []
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Attribute)), key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node.value, ast.Name) and node.value.id == name and id(node) not in called and node.attr not in seen:
            seen.append(node.attr)
    return seen


def graph_field(field: str, nodes: int, edges: int, width: int, torch: Any) -> Any:
    """A value for one field of a graph batch of one graph with `nodes` nodes and `edges` edges."""
    if field in ("edge_index", "adj_t"):
        return torch.stack([torch.arange(nodes).repeat(edges // nodes), torch.randint(0, nodes, (edges,))])
    if field in ("batch", "node_batch"):
        return torch.zeros(nodes, dtype=torch.long)
    if field == "ptr":
        return torch.tensor([0, nodes])
    if field in ("num_nodes", "num_node"):
        return nodes
    if field == "num_graphs":
        return 1
    if field in ("num_edges",):
        return edges
    if field == "pos":
        return torch.randn(nodes, 3)
    if field in ("y", "z", "node_type", "atom_type"):
        return torch.randint(0, 2, (nodes,))
    if field in ("edge_weight", "edge_attr_weight"):
        return torch.rand(edges)
    if field.startswith("edge"):
        return torch.randn(edges, width)
    return torch.randn(nodes, width)


def data_object_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """For a forward that takes a graph batch as one object (its first parameter's fields read: `x`, `edge_index`,
    `pos`, `batch`, `edge_attr`): a `GraphBatch` of one graph with those fields, node features as wide as the
    block's first layer takes (else 16)."""
    required = required_inputs(model)
    if not required:
        return []
    read = fields_read(model, required[0].name)
    if not any(f in GRAPH_FIELDS for f in read):
        return []
    widths = [w for w in dict.fromkeys([first_width(model), GUESSED_WIDTH]) if w]
    nodes = GRAPH_BATCH_NODES
    return [[GraphBatch(**{f: graph_field(f, nodes, 2 * nodes, width, torch) for f in read})] for width in widths]


NUMBERS = re.compile(r"(?:typing\.)?(?:Tuple|tuple|List|list|Sequence)\[\s*int\s*(?:,\s*int\s*)*(?:,\s*\.\.\.\s*)?\]")


def signature_inputs(model: Any) -> List[List[Any]]:
    """Inputs forward's annotations alone give: None for every parameter when all are optional (a prompt encoder
    called with no prompt), a small grid for a first parameter annotated as a tuple of ints (`size: Tuple[int, int]`)."""
    params = required_inputs(model)
    if params is None:
        return []
    texts = [p.annotation if isinstance(p.annotation, str) else repr(p.annotation) for p in params if p.annotation is not p.empty]
    if not params or len(texts) < len(params):
        return []
    if all("Optional[" in t or "None" in t for t in texts):
        return [[None] * len(params)]
    first = NUMBERS.fullmatch(texts[0].replace("typing.", "").strip())
    if first:
        count = texts[0].count("int") if "..." not in texts[0] else 2
        return [[tuple([SIDE] * count)]]
    return []


# regions of a feature map a pooler crops (`forward(input, rois)`, `forward(x, boxes, image_shapes)`): boxes in the
# coordinates of an image of REGION_IMAGE pixels, REGION_COUNT per image
REGION_NAMES = ("rois", "roi", "boxes", "bboxes", "proposals")
IMAGE_SIZE_NAMES = ("image_shapes", "image_sizes", "img_shapes", "image_size", "img_size")
REGION_IMAGE = 64
REGION_COUNT = 3


def region_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """For a pooler over regions of interest: the feature map (a tensor; a dict keyed by the pooler's `featmap_names`
    where forward takes a dict; a list of levels where it takes a sequence), the regions (a [K, 5] tensor of batch
    index and box, or a list of [K, 4] boxes per image where forward takes a list) and the images' sizes when asked.
    Its channels are a multiple of its bins (a position-sensitive pooler takes as many per output channel)."""
    required = required_inputs(model)
    if not required or len(required) < 2:
        return []
    names = [p.name.lower() for p in required]
    # (the regions second, the map first: `forward(input, rois)`; then only the images' sizes)
    if names[0] in REGION_NAMES or names[1] not in REGION_NAMES or any(n not in IMAGE_SIZE_NAMES for n in names[2:]):
        return []
    texts = [p.annotation if isinstance(p.annotation, str) else repr(p.annotation) if p.annotation is not p.empty else "" for p in required]
    size = getattr(model, "output_size", None)
    sizes = [size] * 2 if isinstance(size, int) else list(size) if isinstance(size, (tuple, list)) else []
    bins = math.prod(int(v) for v in sizes) if sizes and all(isinstance(v, int) and v > 0 for v in sizes) else 0
    channels = 2 * bins if bins else 8
    scale = getattr(model, "spatial_scale", None)
    batch = 2
    generator = torch.Generator().manual_seed(0)

    def boxes() -> Any:
        corner = torch.rand(REGION_COUNT, 2, generator=generator) * (REGION_IMAGE / 2)
        extent = torch.rand(REGION_COUNT, 2, generator=generator) * (REGION_IMAGE / 2 - 1) + 1
        return torch.cat([corner, corner + extent], dim=1)

    if "Dict" in texts[0]:
        keys = getattr(model, "featmap_names", None)
        keys = [k for k in keys if isinstance(k, str)] if isinstance(keys, (list, tuple)) else []
        features: Any = {k: torch.randn(batch, channels, REGION_IMAGE >> (2 + i), REGION_IMAGE >> (2 + i)) for i, k in enumerate(keys[:4] or ["0"])}
    else:
        # a map of the pooler's scale (1/16: 4 x 4 of a 64 px image), at least 8 on a side
        side = max(8, int(REGION_IMAGE * scale)) if isinstance(scale, float) and 0 < scale <= 1 else 16
        levels = [torch.randn(batch, channels, side >> i, side >> i) for i in range(4)]
        features = levels if re.search(r"List|Tuple|Sequence", texts[0]) or names[0] in ("feats", "features") else levels[0]
    if re.search(r"List|Sequence", texts[1]):
        regions: Any = [boxes() for _ in range(batch)]
    else:
        regions = torch.cat([torch.cat([torch.full((REGION_COUNT, 1), float(b)), boxes()], dim=1) for b in range(batch)])
    return [[features, regions] + [[(REGION_IMAGE, REGION_IMAGE)] * batch for _ in names[2:]]]


def offset_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """For a deformable convolution (`forward(x, offset[, mask])`): the offsets one per kernel tap and axis, and the
    modulation masks one per tap, for each deformable group, on the map its output has (kernel, stride, padding and
    dilation read from the block)."""
    required = required_inputs(model)
    if not required or not 2 <= len(required) <= 3 or required[1].name.lower() not in ("offset", "offsets"):
        return []
    geometry: List[Tuple[int, int]] = []
    for name, default in (("kernel_size", None), ("stride", 1), ("padding", 0), ("dilation", 1)):
        v = getattr(model, name, default)
        v = (v, v) if isinstance(v, int) else tuple(v) if isinstance(v, (tuple, list)) else ()
        if len(v) != 2 or not all(isinstance(i, int) for i in v):
            return []
        geometry.append((int(v[0]), int(v[1])))
    kernel, stride, padding, dilation = geometry
    channels = getattr(model, "in_channels", None)
    if not isinstance(channels, int):
        return []
    groups = next((g for g in (getattr(model, n, None) for n in ("deform_groups", "deformable_groups", "offset_groups")) if isinstance(g, int) and g > 0), 1)
    side = 16
    out = [(side + 2 * p - d * (k - 1) - 1) // s + 1 for k, s, p, d in zip(kernel, stride, padding, dilation)]
    if min(out) < 1:
        return []
    taps = groups * kernel[0] * kernel[1]
    values = [torch.randn(2, channels, side, side), torch.randn(2, 2 * taps, *out) * 0.5]
    if len(required) > 2:
        values.append(torch.rand(2, taps, *out))
    return [values]


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


def pyramid_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """For a head or neck that takes a list of feature maps, one per level (`in_channels=[16, 32, 64]`, or one width
    with `in_index=(0, 1, 2, 3)`): the list, with sides halving from level to level and with one side for all."""
    chans: Any = getattr(model, "in_channels", None)
    index = getattr(model, "in_index", None)
    ints = lambda v: isinstance(v, (list, tuple)) and len(v) >= 2 and all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in v)
    if ints(chans):
        options = [list(chans)]
    elif (
        isinstance(chans, int)
        and not isinstance(chans, bool)
        and isinstance(index, (list, tuple))
        and len(index) >= 2
        and all(isinstance(i, int) and i >= 0 for i in index)
    ):
        levels = max(index) + 1
        options = [[chans] * levels] + ([[chans // len(index)] * levels] if chans % len(index) == 0 else [])
    else:
        return []
    out: List[List[Any]] = []
    for chs in options:
        for sides in ([max(1, 32 >> i) for i in range(len(chs))], [16] * len(chs)):
            out.append([[torch.randn(2, c, s, s) for c, s in zip(chs, sides)]])
    return out


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


def forward_arity(model: Any) -> int:
    """How many required positional inputs forward() takes."""
    return max(len(required_inputs(model) or []), 1)


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


# forward parameters that take integer indices (graph layers: `forward(x, edge_index)`, `scatter(src, index)`)
EDGE_NAMES = ("edge_index", "edge_indices", "adj", "adj_t", "edges", "edge_idx")
INDEX_NAMES = ("index", "batch", "idx", "indices", "segment_ids", "ptr_index", "node_index")
INDEX_ANNOTATIONS = ("Adj", "LongTensor", "SparseTensor", "OptTensor_index", "IntTensor")


def nodes_of(inputs: List[Any]) -> int:
    """How many nodes (rows) the first tensor input has: the count index tensors must stay below."""
    for value in inputs:
        if hasattr(value, "shape") and hasattr(value, "dim") and value.dim() >= 1:
            return max(1, int(value.shape[0]) if value.dim() <= 2 else int(value.shape[0]))
    return 2


def index_input(param: inspect.Parameter, inputs: List[Any], torch: Any) -> Optional[Any]:
    """An integer tensor for a parameter named or annotated as an index (None for any other): a [2, E] edge index
    over the nodes of the feature tensor, or one index per node (sorted, as a batch vector is)."""
    ann = param.annotation
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", "") or repr(ann)
    name = param.name.lower()
    nodes = nodes_of(inputs)
    if name in EDGE_NAMES or any(a in str(text) for a in ("Adj", "SparseTensor")):
        src = torch.arange(nodes).repeat(2)
        dst = torch.randint(0, nodes, (2 * nodes,))
        return torch.stack([src, dst])
    if name in INDEX_NAMES or any(a in str(text) for a in INDEX_ANNOTATIONS):
        return torch.sort(torch.randint(0, max(1, nodes // 2), (nodes,))).values
    return None


# forward parameters that give the grid a sequence of tokens lies on (`forward(x, H, W)`, `forward(x, hw_shape)`)
GRID_SIDES = ("h", "w", "height", "width", "hh", "ww", "h_", "w_")
GRID_SHAPES = ("hw_shape", "x_size", "hw", "feat_size", "grid_size", "input_resolution", "spatial_shape")
GRID_TOKENS = (16, 64)


def grid_parameters(model: Any) -> List[inspect.Parameter]:
    """forward's parameters that give the grid of its tokens (none for most blocks)."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p for p in params if p.name.lower() in GRID_SIDES + GRID_SHAPES]


def gridded(model: Any, candidates: List[List[Any]]) -> List[List[Any]]:
    """For a block that takes tokens with their grid (`forward(x, H, W)`): each candidate of tokens [B, N, C] whose
    N lies on no square grid is tried first with 16 and with 64 tokens (4 x 4, 8 x 8)."""
    if not grid_parameters(model):
        return candidates
    out: List[List[Any]] = []
    for c in candidates:
        x = c[0] if c else None
        if hasattr(x, "dim") and x.dim() == 3 and math.isqrt(int(x.shape[1])) ** 2 != int(x.shape[1]):
            out.extend([x.new_zeros(x.shape[0], n, x.shape[2]).normal_()] + c[1:] for n in GRID_TOKENS)
    return out + candidates


def grid_value(param: inspect.Parameter, inputs: List[Any]) -> Optional[Any]:
    """The grid a parameter gives (None for any other): the first tensor's spatial sides when it is an image,
    else the side of the square its tokens make."""
    name = param.name.lower()
    if name not in GRID_SIDES + GRID_SHAPES:
        return None
    x = next((v for v in inputs if hasattr(v, "dim")), None)
    if x is None or x.dim() not in (3, 4):
        return None
    if x.dim() == 4:
        sides = (int(x.shape[2]), int(x.shape[3]))
    else:
        side = math.isqrt(int(x.shape[1]))
        sides = (side, side)
    if name in GRID_SHAPES:
        return sides
    return sides[1] if name.startswith("w") else sides[0]


def filled(model: Any, inputs: List[Any], torch: Any) -> List[Any]:
    """An input candidate completed to forward's required positional parameters: index tensors where the parameter
    is an index, the tokens' grid where it is one, numbers where it is annotated as one, else the first tensor
    again."""
    params = positional_parameters(model)
    if params is None:
        return inputs
    required = [p for p in params if p.default is p.empty]
    arity = max(len(required), 1)
    scalars = scalar_inputs(model)
    out = list(inputs)
    for i in range(len(inputs), arity):
        index = index_input(required[i], out, torch) if i < len(required) else None
        grid = grid_value(required[i], out) if i < len(required) and index is None else None
        edge = edge_features(model, required[i], out, torch) if i < len(required) and index is None and grid is None else None
        out.append(index if index is not None else grid if grid is not None else edge if edge is not None else scalars.get(i, inputs[0]))
    # a candidate whose second input is a tensor of features where an index is wanted: the index instead (not for
    # per-pair features of a dense graph, [batch, nodes, nodes, width])
    for i in range(1, min(len(out), len(params))):
        index = index_input(params[i], out, torch)
        if index is not None and hasattr(out[i], "dtype") and out[i].dtype.is_floating_point and out[i].dim() < 4:
            out[i] = index
    return out


# features per edge of a graph (`forward(x, edge_index, edge_attr)`), one row per column of the edge index
EDGE_FEATURE_NAMES = ("edge_attr", "edge_attrs", "edge_features", "edge_feat", "edge_weight", "edge_weights", "edge_type")


def edge_features(model: Any, param: inspect.Parameter, inputs: List[Any], torch: Any) -> Optional[Any]:
    """For a parameter named as features of edges, when an edge index is among the inputs already: a weight per edge
    (`edge_weight`), a type per edge (`edge_type`, below the block's `num_relations`), else features of the width the
    layer they enter takes (`self.lin_edge(edge_attr)`), or the block's `edge_dim`, else the nodes' width."""
    name = param.name.lower()
    if name not in EDGE_FEATURE_NAMES:
        return None
    index = next((v for v in inputs if hasattr(v, "dtype") and not v.dtype.is_floating_point and v.dim() == 2 and v.shape[0] == 2), None)
    if index is None:
        return None
    edges = int(index.shape[1])
    if name in ("edge_weight", "edge_weights"):
        return torch.rand(edges)
    if name == "edge_type":
        relations = getattr(model, "num_relations", None)
        return torch.randint(0, relations if isinstance(relations, int) and relations > 0 else 2, (edges,))
    nn = sys.modules["torch"].nn
    layer = routes(model, nn, optional=True).get(param.name)
    width = layer_width(layer, nn) if layer is not None else None
    dim = getattr(model, "edge_dim", None)
    if width is None and isinstance(dim, int) and not isinstance(dim, bool) and dim > 0:
        width = dim
    if width is None:
        width = next((int(v.shape[-1]) for v in inputs if hasattr(v, "dtype") and v.dtype.is_floating_point and v.dim() == 2), GUESSED_WIDTH)
    return torch.randn(edges, width)


# a diffusion model's step, given one per sample
TIME_NAMES = ("timestep", "timesteps", "time_step", "time_steps", "sigma", "sigmas", "noise_level", "guidance")


def time_steps(batch: int, torch: Any) -> Any:
    return torch.rand(batch) * 999 + 1


def step_inputs(model: Any, torch: Any, nn: Any) -> List[List[Any]]:
    """For a forward that takes a diffusion step (`timestep`, `sigma`, `guidance`): one per sample, the other required
    inputs shaped for the layer each enters, and an optional step forward passes to a submodule untested (Sana's
    `self.guidance_embedder(guidance)` with `guidance=None`) one too, the optional inputs before it their defaults.
    Tried after every other source: a parameter so named may hold something else (an embedding, steps per frame)."""
    params = positional_parameters(model)
    if params is None:
        return []
    required = [p for p in params if p.default is p.empty]
    used = unguarded_optional(model)
    optional = [i for i, p in enumerate(params) if p.default is None and p.name in used and p.name.lower() in TIME_NAMES]
    if not any(p.name.lower() in TIME_NAMES for p in required) and not optional:
        return []
    entered = routes(model, nn)
    values: List[Any] = []
    for p in required:
        value = time_steps(2, torch) if p.name.lower() in TIME_NAMES else shaped_for(entered[p.name], nn, torch, 16) if p.name in entered else None
        if value is None:
            return []
        values.append(value)
    for i in range(len(values), max(optional, default=-1) + 1):
        values.append(time_steps(2, torch) if i in optional else params[i].default)
    return [values]


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
