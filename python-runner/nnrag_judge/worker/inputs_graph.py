"""Worker side: inputs of graph layers: a graph as dense tensors, a graph batch object, index tensors over the nodes and
features per edge. Each source registers itself (`inputs.input_kind`)."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any, List, Optional

from .inputs import InputRequest, input_kind, first_width, layer_width, required_inputs, routes
from .arguments import GUESSED_WIDTH, HETERO_METADATA

# a graph as dense tensors: per-pair features (`edges` of a graph transformer: [batch, nodes, nodes, width]) and
# coordinates (`coors` of an equivariant network: [batch, nodes, 3])
PAIR_NAMES = ("edges", "edge", "edge_feats", "edge_features", "pairwise", "pair", "pair_feats", "pair_repr")


COORD_NAMES = ("coors", "coords", "coordinates", "pos", "positions", "xyz")


GRAPH_NODES = (6, 4)


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


def hetero_inputs(model: Any, torch: Any) -> List[List[Any]]:
    """A heterogeneous graph as dicts for a forward of `x_dict, edge_index_dict` (and `edge_attr_dict`...): features
    per node type, an edge index per edge type between its types' nodes, for the node and edge types the block
    keeps (`node_types`, `edge_types`, `metadata`), else those a guessed `metadata` gives."""
    required = required_inputs(model)
    if required is None or not any(p.name.endswith("_dict") for p in required):
        return []
    metadata = getattr(model, "metadata", None)
    node_types = getattr(model, "node_types", None) or (metadata[0] if isinstance(metadata, (tuple, list)) and len(metadata) == 2 else None)
    edge_types = getattr(model, "edge_types", None) or (metadata[1] if isinstance(metadata, (tuple, list)) and len(metadata) == 2 else None)
    if not isinstance(node_types, (list, tuple)) or not isinstance(edge_types, (list, tuple)):
        node_types, edge_types = HETERO_METADATA
    edge_types = [e for e in edge_types if isinstance(e, tuple) and len(e) == 3]
    if not node_types or not edge_types:
        return []
    nodes = GRAPH_BATCH_NODES
    out: List[List[Any]] = []
    for width in dict.fromkeys([w for w in (first_width(model), GUESSED_WIDTH) if w]):
        values: List[Any] = []
        for p in required:
            name = p.name.lower()
            if name.startswith(("x_", "h_", "feat")) or name in ("x_dict", "h_dict"):
                values.append({t: torch.randn(nodes, width) for t in node_types})
            elif "index" in name or "adj" in name:
                values.append({e: torch.stack([torch.randint(0, nodes, (2 * nodes,)), torch.randint(0, nodes, (2 * nodes,))]) for e in edge_types})
            elif name.startswith("edge_attr") or name.startswith("edge_feat"):
                values.append({e: torch.randn(2 * nodes, width) for e in edge_types})
            else:
                values = []
                break
        if values:
            out.append(values)
    return out


@input_kind(65, "a heterogeneous graph as dicts")
def from_hetero_graph(r: InputRequest) -> List[List[Any]]:
    return hetero_inputs(r.model, r.torch)


@input_kind(60, "a graph as dense tensors")
def from_dense_graph(r: InputRequest) -> List[List[Any]]:
    return dense_graph_inputs(r.model, r.torch, r.nn)


@input_kind(70, "a graph batch object")
def from_graph_batch(r: InputRequest) -> List[List[Any]]:
    return data_object_inputs(r.model, r.torch)
