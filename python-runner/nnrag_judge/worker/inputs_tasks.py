"""Worker side: inputs of the blocks of particular tasks: a feature pyramid for a detector's head or neck, regions of a
feature map for a pooler, offsets for a deformable convolution, a diffusion step. Each source registers itself
(`inputs.input_kind`)."""

from __future__ import annotations

import math
import re
from typing import Any, List, Tuple

from .inputs import InputRequest, input_kind, positional_parameters, required_inputs, routes, shaped_for, unguarded_optional

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


@input_kind(40, "a feature pyramid for a head or neck")
def from_pyramid(r: InputRequest) -> List[List[Any]]:
    return pyramid_inputs(r.model, r.torch)


@input_kind(80, "regions of a feature map for a pooler")
def from_regions(r: InputRequest) -> List[List[Any]]:
    return region_inputs(r.model, r.torch)


@input_kind(90, "offsets for a deformable convolution")
def from_offsets(r: InputRequest) -> List[List[Any]]:
    return offset_inputs(r.model, r.torch)


@input_kind(120, "a diffusion step, one per sample")
def from_diffusion_step(r: InputRequest) -> List[List[Any]]:
    return step_inputs(r.model, r.torch, r.nn)
