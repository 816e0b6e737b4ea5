"""Worker side: inputs shaped for the layers a block built: each input for the layer it enters, the block's first
layers and common shapes, the grid a sequence of tokens lies on. Each source registers itself (`inputs.input_kind`)."""

from __future__ import annotations

import ast
import inspect
import math
from typing import Any, Dict, List, Optional

from .inputs import InputRequest, forward_calls, input_kind, is_a, kind_of, kinds_of, required_inputs, routes, shaped_for

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


def table_rows(model: Any, node: ast.expr) -> Optional[int]:
    """The rows of the tensor a forward expression names (`self.table`, `self.emb.weight`): a parameter's or a
    buffer's first dimension; None for anything else."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id != "self" or not parts:
        return None
    value: Any = model
    for part in reversed(parts):
        value = getattr(value, part, None)
    shape = getattr(value, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) >= 1 and int(shape[0]) > 0 else None


def index_ranges(model: Any) -> Dict[str, int]:
    """forward's parameters its source uses as indices, with the count they must stay below: rows of a table it
    indexes with them (`self.table[x]`, `self.emb.weight[idx]`, `F.embedding(idx, self.weight)`,
    `self.table.index_select(0, idx)`) or the classes of a one-hot (`F.one_hot(labels, 10)`)."""
    read = forward_calls(model)
    params = {p.name for p in required_inputs(model) or []}
    if read is None or not params:
        return {}
    ranges: Dict[str, int] = {}
    for node in ast.walk(read[0]):
        rows: Optional[int] = None
        name: Optional[str] = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
            name, rows = node.slice.id, table_rows(model, node.value)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
            name = node.args[0].id
            if func == "embedding" and len(node.args) > 1:
                rows = table_rows(model, node.args[1])
            elif func == "one_hot":
                classes = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "num_classes"), None)
                rows = classes.value if isinstance(classes, ast.Constant) and isinstance(classes.value, int) and classes.value > 0 else None
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "index_select"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Name)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == 0
        ):
            name, rows = node.args[1].id, table_rows(model, node.func.value)
        if name in params and rows and name not in ranges:
            ranges[name] = rows
    return ranges


def indexing_inputs(model: Any, torch: Any, nn: Any) -> List[List[Any]]:
    """Integer indices below the rows of the table forward indexes with each such input (a learned table, a one-hot's
    classes); its other inputs shaped for the layer they enter."""
    ranges = index_ranges(model)
    required = required_inputs(model)
    if not ranges or required is None:
        return []
    entered = routes(model, nn)
    out: List[List[Any]] = []
    for side in (16, 32):
        values = []
        for p in required:
            if p.name in ranges:
                value = torch.randint(0, ranges[p.name], (2, side // 2))
            else:
                value = shaped_for(entered[p.name], nn, torch, side) if p.name in entered else None
            if value is None:
                break
            values.append(value)
        if len(values) == len(required):
            out.append(values)
    return out


@input_kind(55, "indices for the table forward indexes with them")
def from_indexing(r: InputRequest) -> List[List[Any]]:
    return indexing_inputs(r.model, r.torch, r.nn)


@input_kind(50, "each input shaped for the layer it enters")
def from_routes(r: InputRequest) -> List[List[Any]]:
    return routed_inputs(r.model, r.torch, r.nn)


@input_kind(100, "the block's first layers, then common shapes")
def from_first_layers(r: InputRequest) -> List[List[Any]]:
    return gridded(r.model, containers(r.model, input_candidates(r.model, r.torch, r.nn, r.built_with)))


@input_kind(110, "forward's one input shaped for the layer it enters")
def from_entered_layer(r: InputRequest) -> List[List[Any]]:
    return entered_input(r.model, r.torch, r.nn)
