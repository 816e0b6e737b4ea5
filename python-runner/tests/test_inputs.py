"""The inputs the judge feeds a block (inputs.py): graphs, docstrings, annotations, shapes, videos; skipped without torch."""

import unittest

from tests.support import judged, needs_torch

GRAPH = """
import torch
from torch import nn


class MessagePassing(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        src, dst = edge_index
        out = torch.zeros(x.size(0), self.lin.out_features).index_add_(0, dst, self.lin(x)[src])
        return out


class GraphNet(nn.Module):
    def __init__(self, in_channels=12, hidden=8):
        super().__init__()
        self.conv = MessagePassing(in_channels, hidden)
        self.head = nn.Linear(hidden + 3, 2)

    def forward(self, data):
        x, edge_index, batch = data.x, data.edge_index, data.batch
        h = self.conv(x, edge_index).relu()
        h = torch.cat([h, data.pos], dim=-1)
        pooled = torch.zeros(int(batch.max()) + 1, h.size(1)).index_add_(0, batch, h)
        return self.head(pooled)


class Pool(nn.Module):
    def forward(self, x, batch):
        size = int(batch.max()) + 1
        return torch.zeros(size, x.size(1)).scatter_reduce(0, batch.unsqueeze(1).expand_as(x), x, reduce="amax", include_self=False)
"""


@needs_torch
class GraphInputs(unittest.TestCase):
    """Layers that take node features and integer indices get integer index tensors over the nodes."""

    def test_an_edge_index_is_an_integer_pair_over_the_nodes(self) -> None:
        report = judged(GRAPH, GRAPH, "MessagePassing")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(len(report["input_shapes"]), 2)
        self.assertEqual(report["input_shapes"][1][0], 2)

    def test_a_graph_batch_object_has_the_fields_forward_reads(self) -> None:
        # `forward(data)` reading data.x, data.edge_index, data.batch and data.pos: before, a tensor was passed
        # ("'Tensor' object has no attribute 'x'") and nothing ran
        report = judged(GRAPH, GRAPH, "GraphNet")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], ["GraphBatch"])

    def test_a_batch_vector_is_one_index_per_node(self) -> None:
        import torch  # noqa: F401 - scatter_reduce is torch 1.12+

        report = judged(GRAPH, GRAPH, "Pool")
        self.assertEqual(report["tier"], "equivalent", report)


DTYPES = """
import torch
from torch import nn


class Pick(nn.Module):
    # rows of a table chosen by an index forward only uses to index: nothing in its source says it is one
    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x, which):
        return self.lin(x)[which.reshape(-1)]

"""


@needs_torch
class DtypeRetries(unittest.TestCase):
    """A dtype error in forward names the input it wants: the input is tried again with that dtype, alike on both
    sides (the plan names it by its index past the others)."""

    def test_a_float_used_as_an_index_is_given_as_integers(self) -> None:
        report = judged(DTYPES, DTYPES, "Pick")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_copy_that_differs_on_the_retyped_input_is_found(self) -> None:
        report = judged(DTYPES.replace("self.lin(x)[which", "(2 * self.lin(x))[which"), DTYPES, "Pick")
        self.assertEqual(report["category"], "differs", report)


DOCUMENTED = '''
import torch
from torch import nn


class Fold(nn.Module):
    """Sums a sequence of pairs of channels.

    Example:
        >>> pairs = torch.randn(2, 6, 5)
        >>> weights = torch.ones(5)
        >>> out = Fold()(pairs, weights)
    """

    def forward(self, x, w):
        return (x.view(x.shape[0], 3, 2, x.shape[-1]) * w).sum(2)
'''


@needs_torch
class DocstringInputs(unittest.TestCase):
    """A block whose layers say nothing of its input is fed what its docstring example feeds it."""

    def test_the_example_tensors_in_the_order_of_the_example_call(self) -> None:
        report = judged(DOCUMENTED, DOCUMENTED, "Fold")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], [[2, 6, 5], [5]])


SHAPED = """
from typing import List

import torch
from torch import nn


class GridMixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, H, W):
        B, N, C = x.shape
        y = self.dw(x.transpose(1, 2).reshape(B, C, H, W)).flatten(2).transpose(1, 2)
        return self.proj(x + y)


class ShapeMixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, hw_shape):
        B, N, C = x.shape
        return self.proj(x).transpose(1, 2).reshape(B, C, *hw_shape)


class Unit(nn.Module):
    def __init__(self, channels, act_layer, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = act_layer()
        if norm_layer is not None:
            self.add_module("norm", norm_layer)  # a class where a module is wanted: only None builds
        self.norm_layer = norm_layer

    def forward(self, x):
        return self.conv(self.act(x))


class Large(nn.Module):
    def __init__(self, img_size=1024, patch_size=16, dim=8):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch_size, patch_size)
        self.pos = nn.Parameter(torch.randn(1, dim, img_size // patch_size, img_size // patch_size))

    def forward(self, x):
        return torch.cat([self.proj(x), self.pos.expand(x.shape[0], -1, -1, -1)], 1)  # the sizes must agree


class Neck(nn.Module):
    def __init__(self, in_channels: List[int], out_channels):
        super().__init__()
        self.in_channels = in_channels
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)

    def forward(self, inputs):
        assert isinstance(inputs, (list, tuple)) and len(inputs) == len(self.in_channels)
        outs = [conv(x) for conv, x in zip(self.lateral, inputs)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] = outs[i - 1] + nn.functional.interpolate(outs[i], size=outs[i - 1].shape[2:])
        return outs


class Encoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.embed_dim = dim
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Head(nn.Module):
    def __init__(self, encoder: Encoder, bank):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("bank", bank.float().mean(0, keepdim=True))
        self.out = nn.Linear(encoder.embed_dim, 4)

    def forward(self, x):
        return self.out(self.encoder(x))
"""


SIGNATURES = '''
from typing import Optional, Tuple

import torch
from torch import nn


class TwoWay(nn.Module):
    def __init__(self, embedding_dim, mlp_dim):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.q = nn.Linear(embedding_dim, mlp_dim)
        self.k = nn.Linear(embedding_dim, mlp_dim)

    def forward(self, image_embedding, image_pe, point_embedding):
        """
        Args:
          image_embedding (torch.Tensor): image to attend to. Should be shape
            B x embedding_dim x h x w for any h and w.
          image_pe (torch.Tensor): the positional encoding. Must
            have the same shape as image_embedding.
          point_embedding (torch.Tensor): the query points.
            Must have shape B x N_points x embedding_dim for any N_points.
        """
        b, c, h, w = image_embedding.shape
        keys = (image_embedding + image_pe).flatten(2).transpose(1, 2)
        return self.q(point_embedding) @ self.k(keys).transpose(1, 2)


class Listed(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels = in_channels
        self.proj = nn.Conv1d(in_channels, out_channels, 1)

    def forward(self, hidden_states, temb):
        r"""
        Args:
            hidden_states (`torch.Tensor` of shape `(batch_size, channel, sequence_length, 3)`):
                the states.
            temb (`torch.Tensor` of shape `(batch size, in_channels)`): the time.
        """
        return self.proj(hidden_states.mean(-1)) + temb.sum()


class CrossAttention(nn.Module):
    def __init__(self, dim, context_dim, inner=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner)
        self.to_kv = nn.Linear(context_dim, inner * 2)

    def forward(self, x, context):
        q = self.to_q(self.norm(x))
        k, v = self.to_kv(context).chunk(2, dim=-1)
        return (q @ k.transpose(1, 2)).softmax(-1) @ v


class Motion(nn.Module):
    def __init__(self, corr_channels):
        super().__init__()
        self.convflow = nn.Conv2d(2, 8, 7, padding=3)
        self.convcorr = nn.Conv2d(corr_channels, 8, 1)

    def forward(self, flow, corr_features):
        return torch.cat([self.convflow(flow), self.convcorr(corr_features)], 1)


class Touchy(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    @property
    def width(self):
        raise RuntimeError("read before it is set")

    def forward(self, x):
        """
        Args:
            x: tokens of shape (B, N, width)
        """
        return self.lin(x)


class Prompted(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.empty = nn.Parameter(torch.randn(1, dim))
        self.point = nn.Linear(2, dim)

    def forward(self, points: Optional[torch.Tensor], boxes: Optional[torch.Tensor]) -> torch.Tensor:
        if points is None and boxes is None:
            return self.empty * 2
        return self.point(points)


class Grid(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.freq = nn.Parameter(torch.randn(2, dim))

    def forward(self, size: Tuple[int, int]) -> torch.Tensor:
        h, w = size
        ys, xs = torch.meshgrid(torch.arange(h) / h, torch.arange(w) / w, indexing="ij")
        return torch.stack([ys, xs], -1) @ self.freq
'''

VIDEO = """
import torch
from torch import nn


class NoneWidths(nn.Module):
    def __init__(self, hidden_size=None, cross_attention_dim=None):
        super().__init__()
        self.to_k = nn.Linear(cross_attention_dim or hidden_size, hidden_size)

    def forward(self, x):
        return self.to_k(x)


class VideoBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.conv = nn.Conv3d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(self.norm(x))


class FoldedNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)

    def forward(self, x):
        b, c, t, h, w = x.shape
        x = x.permute(0, 2, 1, 3, 4).flatten(0, 1)
        return self.norm(x).unflatten(0, (b, t)).permute(0, 2, 1, 3, 4)
"""


@needs_torch
class VideoInputsAndNoneWidths(unittest.TestCase):
    """A norm-first block with 3-d convolutions, or a norm that folds time into the batch, gets a 5-d input with the
    norm's channels; widths left at None by default and failing deeper than the block's constructor (in nn.Linear)
    are guessed."""

    def test_video_blocks(self) -> None:
        for name in ("VideoBlock", "FoldedNorm"):
            report = judged(VIDEO, VIDEO, name)
            self.assertEqual(report["tier"], "equivalent", report)
            self.assertEqual(len(report["input_shapes"][0]), 5, report)

    def test_widths_left_at_none(self) -> None:
        report = judged(VIDEO, VIDEO, "NoneWidths")
        self.assertEqual(report["tier"], "equivalent", report)
        edited = VIDEO.replace("return self.to_k(x)", "return self.to_k(x) + 1")
        self.assertEqual(judged(edited, VIDEO, "NoneWidths").get("category"), "differs")


@needs_torch
class DocumentedAndAnnotatedInputs(unittest.TestCase):
    """Inputs from what forward says of its parameters: the shapes its docstring gives (`B x embedding_dim x h x w`,
    `(batch_size, channel, ...)`, "the same shape as"), None for parameters that are all optional, a small grid for a
    `Tuple[int, int]`, each input shaped for the layer its name is passed to (`self.to_kv(context)`); an edited copy
    still differs."""

    def test_shapes_from_the_docstring(self) -> None:
        for name in ("TwoWay", "Listed"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(judged(SIGNATURES, SIGNATURES, "TwoWay")["input_shapes"], [[2, 16, 8, 8], [2, 16, 8, 8], [2, 8, 16]])

    def test_each_input_shaped_for_the_layer_it_enters(self) -> None:
        for name in ("CrossAttention", "Motion"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(judged(SIGNATURES, SIGNATURES, "Motion")["input_shapes"], [[2, 2, 16, 16], [2, 16, 16, 16]])

    def test_a_property_that_raises_when_read_leaves_the_other_inputs(self) -> None:
        report = judged(SIGNATURES, SIGNATURES, "Touchy")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_optional_prompts_and_a_size(self) -> None:
        for name in ("Prompted", "Grid"):
            report = judged(SIGNATURES, SIGNATURES, name)
            self.assertEqual(report["tier"], "equivalent", report)
        edited = SIGNATURES.replace("return self.empty * 2", "return self.empty * 3")
        self.assertEqual(judged(edited, SIGNATURES, "Prompted").get("category"), "differs")


@needs_torch
class ShapedInputsAndArguments(unittest.TestCase):
    """Tokens with their grid (`forward(x, H, W)`, `forward(x, hw_shape)`) get a square token count and its sides; a
    required norm factory the constructor cannot take is tried as None; a model made for large images is built for
    small ones; a neck that takes a list of feature maps gets a pyramid; an argument the constructor reads a tensor's
    attribute of gets a tensor, one it reads a module's attribute of an object of the class its source names."""

    def test_tokens_with_their_grid(self) -> None:
        for name in ("GridMixer", "ShapeMixer"):
            report = judged(SHAPED, SHAPED, name)
            self.assertEqual(report["tier"], "equivalent", report)

    def test_a_feature_pyramid_for_a_neck(self) -> None:
        report = judged(SHAPED, SHAPED, "Neck")
        self.assertEqual(report["tier"], "equivalent", report)

    def test_a_large_default_image_made_small(self) -> None:
        report = judged(SHAPED, SHAPED, "Large")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["kwargs"]["img_size"], 64)

    def test_a_norm_factory_left_out(self) -> None:
        report = judged(SHAPED, SHAPED, "Unit")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertIsNone(report["kwargs"]["norm_layer"])

    def test_arguments_read_as_a_tensor_and_as_a_module(self) -> None:
        report = judged(SHAPED, SHAPED, "Head")
        self.assertEqual(report["tier"], "equivalent", report)
        edited = SHAPED.replace("return self.lin(x)", "return self.lin(x) * 1.01")
        self.assertEqual(judged(edited, SHAPED, "Head").get("category"), "differs")


TOKENS = """
import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab=50, dim=16, layers=2):
        super().__init__()
        self.lm_head = nn.Linear(dim, vocab, bias=False)  # registered first: its width is not what forward takes
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab, dim), h=nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))))

    def forward(self, idx):
        x = self.transformer.wte(idx)
        for block in self.transformer.h:
            x = x + block(x).relu()
        return self.lm_head(x)
"""


@needs_torch
class EnteredInputs(unittest.TestCase):
    def test_one_input_shaped_for_the_layer_a_chain_of_attributes_names(self) -> None:
        # litgpt's GPT: `self.transformer.wte(idx)`, its first registered layer the output head; before: float inputs
        # of the head's width ("Expected tensor for argument #1 'indices' to have one of the following scalar types")
        report = judged(TOKENS, TOKENS, "TinyLM")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], [[2, 8]], report)


REGIONS = """
from typing import Dict, List, Tuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class RoIMean(nn.Module):
    def __init__(self, output_size=2, spatial_scale=0.25):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.proj = nn.Conv2d(8, 4, 1)

    def forward(self, input, rois):
        assert rois.dim() == 2 and rois.size(1) == 5, "The boxes tensor shape is not correct as Tensor[K, 5]"
        crops = []
        for r in rois:
            x1, y1, x2, y2 = (r[1:] * self.spatial_scale).long().tolist()
            crops.append(F.adaptive_avg_pool2d(input[int(r[0]), :, y1:y2 + 1, x1:x2 + 1], self.output_size))
        return self.proj(torch.stack(crops))


class LevelPooler(nn.Module):
    def __init__(self, featmap_names=("p2", "p3"), output_size=2):
        super().__init__()
        self.featmap_names = list(featmap_names)
        self.output_size = output_size

    def forward(self, x: Dict[str, Tensor], boxes: List[Tensor], image_shapes: List[Tuple[int, int]]):
        first = x[self.featmap_names[0]]
        scale = first.shape[-1] / image_shapes[0][1]
        crops = []
        for i, per_image in enumerate(boxes):
            for x1, y1, x2, y2 in (per_image * scale).long().tolist():
                crops.append(F.adaptive_avg_pool2d(first[i, :, y1:y2 + 1, x1:x2 + 1], self.output_size))
        return torch.stack(crops) * x[self.featmap_names[1]].mean()
"""


@needs_torch
class RegionInputs(unittest.TestCase):
    # torchvision's RoIAlign, RoIPool, PSRoIAlign and MultiScaleRoIAlign, mmcv's and a detection framework's poolers:
    # before, every input failed ("The boxes tensor shape is not correct as Tensor[K, 5]", "'Tensor' object has no
    # attribute 'items'")
    def test_a_pooler_of_a_map_and_regions_with_their_batch_index(self) -> None:
        report = judged(REGIONS, REGIONS, "RoIMean")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], [[2, 8, 16, 16], [6, 5]], report)

    def test_a_pooler_of_named_levels_boxes_per_image_and_image_sizes(self) -> None:
        report = judged(REGIONS, REGIONS, "LevelPooler")
        self.assertEqual(report["tier"], "equivalent", report)


DEFORMABLE = """
import torch
from torch import nn
from torch.nn import functional as F


class DeformLike(nn.Module):
    def __init__(self, in_channels=4, out_channels=6, kernel_size=3, stride=1, padding=0, deform_groups=2):
        super().__init__()
        self.in_channels, self.kernel_size, self.stride, self.padding = in_channels, (kernel_size, kernel_size), stride, padding
        self.deform_groups = deform_groups
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_size, kernel_size) * 0.1)

    def forward(self, x, offset):
        out = F.conv2d(x, self.weight, stride=self.stride, padding=self.padding)
        taps = self.deform_groups * self.kernel_size[0] * self.kernel_size[1]
        if offset.shape[1] != 2 * taps or offset.shape[-2:] != out.shape[-2:]:
            raise RuntimeError(f"offset.shape[1] is not valid: got: {offset.shape[1]} expected: {2 * taps}")
        return out + offset.mean(1, keepdim=True)
"""


@needs_torch
class OffsetInputs(unittest.TestCase):
    def test_a_deformable_convolution_gets_offsets_per_tap_on_its_output_map(self) -> None:
        # torchvision's and mmcv's DeformConv2d: before, "offset.shape[1] is not valid: got: 32 expected: 18"
        report = judged(DEFORMABLE, DEFORMABLE, "DeformLike")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"], [[2, 4, 16, 16], [2, 36, 14, 14]], report)


STEPS = """
import math

import torch
from torch import nn


class SinusoidalProj(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.dim = dim

    def forward(self, timesteps):
        assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"
        freqs = torch.exp(-math.log(10000) * torch.arange(self.dim // 2) / (self.dim // 2))
        angles = timesteps[:, None].float() * freqs[None]
        return torch.cat([angles.sin(), angles.cos()], dim=-1)


class StepGuidanceEmbedding(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.time_proj = SinusoidalProj(dim)
        self.timestep_embedder = nn.Linear(dim, dim)
        self.guidance_condition_proj = SinusoidalProj(dim)
        self.guidance_embedder = nn.Linear(dim, dim)

    def forward(self, timestep, guidance=None, hidden_dtype=None):
        emb = self.timestep_embedder(self.time_proj(timestep).to(dtype=hidden_dtype))
        guide = self.guidance_embedder(self.guidance_condition_proj(guidance).to(dtype=hidden_dtype))
        return emb + guide
"""


@needs_torch
class DiffusionSteps(unittest.TestCase):
    def test_a_step_and_an_optional_guidance_used_without_a_test(self) -> None:
        # diffusers' SanaCombinedTimestepGuidanceEmbeddings: before, "Timesteps should be a 1d-array", and with it a
        # guidance of None (its default, passed to a layer untested) failed the original and the copy alike
        report = judged(STEPS, STEPS, "StepGuidanceEmbedding")
        self.assertEqual(report["tier"], "equivalent", report)
        self.assertEqual(report["input_shapes"][:2], [[2], [2]], report)


TORCH_LINEAR_COPY = """
# nnrag-provenance: {"target": "torch:torch.nn.modules.linear.Linear", "definitions": [{"names": ["Linear"], "module": "torch.nn.modules.linear"}]}
import math

import torch
from torch.nn import functional as F, init
from torch.nn.modules.module import Module
from torch.nn.parameter import Parameter


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.empty((out_features, in_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(torch.empty(out_features, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return "in_features={}, out_features={}, bias={}".format(self.in_features, self.out_features, self.bias is not None)
"""


@needs_torch
class TorchOwnLayers(unittest.TestCase):
    def test_a_copy_of_torchs_own_layer_is_fed_as_torchs_layer_is(self) -> None:
        # torch's Linear pulled from an indexed torch: the copy's Linear is not nn.Linear, so its side shaped other
        # inputs than the original's and read 'differs' ("mat1 and mat2 shapes cannot be multiplied ... in the copy")
        import importlib.util
        import os
        import tempfile
        import textwrap

        import torch

        from nnrag_judge.worker import context, inputs_layers
        from nnrag_judge.worker.worker import torch_twins

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "linear_copy.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(TORCH_LINEAR_COPY).lstrip())
            spec = importlib.util.spec_from_file_location("linear_copy", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            twins = torch_twins(path, vars(module), torch.nn)
        self.assertEqual(twins, {module.Linear: torch.nn.Linear})

        def shapes(model: object) -> list:
            torch.manual_seed(0)
            return [[tuple(t.shape) for t in c] for c in inputs_layers.input_candidates(model, torch, torch.nn)]

        original = shapes(torch.nn.Linear(16, 16))
        context.begin(twins=twins)
        try:
            self.assertEqual(shapes(module.Linear(16, 16)), original)
        finally:
            context.begin()


EDGES = """
import torch
from torch import nn


class EdgeConv(nn.Module):
    def __init__(self, in_channels=12, out_channels=8, edge_dim=5):
        super().__init__()
        self.edge_dim = edge_dim
        self.lin = nn.Linear(in_channels, out_channels)
        self.lin_edge = nn.Linear(edge_dim, in_channels)

    def forward(self, x, edge_index, edge_attr):
        src, dst = edge_index
        messages = (x[src] + self.lin_edge(edge_attr)).relu()
        return self.lin(torch.zeros_like(x).index_add_(0, dst, messages))


class WeightedConv(nn.Module):
    def __init__(self, in_channels=12, out_channels=8):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index, edge_weight):
        src, dst = edge_index
        return self.lin(torch.zeros_like(x).index_add_(0, dst, x[src] * edge_weight.view(-1, 1)))
"""


@needs_torch
class EdgeFeatures(unittest.TestCase):
    # a graph library's convolutions that take features or weights per edge: before, the node features were given
    # again in their place (as many rows as nodes, not edges)
    def test_features_per_edge_of_the_width_their_layer_takes(self) -> None:
        report = judged(EDGES, EDGES, "EdgeConv")
        self.assertEqual(report["tier"], "equivalent", report)
        nodes, edges = report["input_shapes"][0][0], report["input_shapes"][1][1]
        self.assertEqual(report["input_shapes"][2], [edges, 5], report)
        self.assertNotEqual(nodes, edges)

    def test_a_weight_per_edge(self) -> None:
        report = judged(EDGES, EDGES, "WeightedConv")
        self.assertEqual(report["tier"], "equivalent", report)
