"""Worker side: inputs a block's own words give: the docstring's example and the repository's tests that call it, the
shapes forward's docstring states, and forward's annotations. Each source registers itself (`inputs.input_kind`)."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, Optional

from .inputs import InputRequest, input_kind, first_width, positional_parameters, required_inputs

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


@input_kind(10, "the docstring example and the repository's tests")
def from_examples(r: InputRequest) -> List[List[Any]]:
    return docstring_inputs(r.model, r.torch, list(r.examples))


@input_kind(20, "the shapes forward's docstring gives")
def from_documented_shapes(r: InputRequest) -> List[List[Any]]:
    return documented_inputs(r.model, r.torch)


@input_kind(30, "forward's annotations")
def from_annotations(r: InputRequest) -> List[List[Any]]:
    return signature_inputs(r.model)
