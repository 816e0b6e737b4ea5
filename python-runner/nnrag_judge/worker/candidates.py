"""Worker side: every input to try for a block, the same on both sides: those recorded inside a real model first,
then each input kind registered (`inputs.input_kind`, in the inputs_* modules) by priority, each candidate completed
to forward's parameters. Adding a source of inputs is one registered function in one inputs_* module."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from . import inputs_documented, inputs_graph, inputs_layers, inputs_tasks  # noqa: F401 - each registers its input kinds
from .evidence import seed_all
from .inputs import KINDS, LARGE_SIDE, InputRequest, positional_parameters, scalar_inputs, shrunk, spatial_sides
from .inputs_graph import edge_features, index_input
from .inputs_layers import grid_value


def input_list(model: Any, torch: Any, nn: Any, kwargs: Dict[str, Any], first: Optional[List[Any]], examples: Sequence[str] = ()) -> List[List[Any]]:
    """Every input to try, in order, the same on both sides: those recorded inside a real model (a cut of large ones
    first), then those each input kind suggests by priority (generated under seed 0), each completed to forward's
    parameters. `examples`: the repository's own code that calls the block (its tests)."""
    recorded = [first] if first else []
    if first and max(spatial_sides(first), default=0) > LARGE_SIDE:
        recorded.insert(0, shrunk(first))
    seed_all(0, torch)
    candidates = list(recorded)
    request = InputRequest(model, torch, nn, kwargs, tuple(examples))
    for kind in KINDS:
        candidates += guarded(kind.make, request)
    return [filled(model, c, torch) for c in candidates]


def guarded(source: Callable[..., List[List[Any]]], *args: Any) -> List[List[Any]]:
    """The inputs one source suggests, or none when reading the block for them fails (a property of the block that
    raises when read): the other sources still run, alike on both sides."""
    try:
        return source(*args)
    except Exception:  # noqa: BLE001 - block code ran while reading it
        return []


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
