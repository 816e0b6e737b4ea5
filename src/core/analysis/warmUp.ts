/**
 * Warming the thread's parser before its first live update. A full run parses in workers, so the main thread's parser
 * meets its first file when the user first saves one: that parse ran 3-5 times slower than the next ones (the
 * WebAssembly runtime and the fact extraction not yet compiled for speed: 27-32 ms instead of 5-8 ms for
 * torchvision's `ops/misc.py`). A few parses of code shaped like a model file, at idle, take that cost out of the
 * edit-to-search path.
 */
import type { PythonParser } from '../parse/parser';

/** One model file's worth of the constructs fact extraction walks (imports, classes, scopes, comprehensions...). */
function sampleModule(k: number): string {
  return `
import math
from typing import Optional, List
import torch
import torch.nn as nn
from torch import Tensor
from .utils import make_divisible as _md${k}

__all__ = ["Block${k}", "build${k}"]

_REGISTRY${k} = {}


def register${k}(name):
    def wrap(cls):
        _REGISTRY${k}[name] = cls
        return cls
    return wrap


@register${k}("block${k}")
class Block${k}(nn.Module):
    """A residual block ${k}: conv, norm, activation."""

    expansion: int = 4

    def __init__(self, channels: int, groups: int = 1, norm_layer: Optional[nn.Module] = None, *args, **kwargs) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = _md${k}(channels * groups / 8, 8)
        self.layers = nn.Sequential(*[nn.Conv2d(width, width, 3, padding=1, bias=False) for _ in range(2)])
        self.norm = norm_layer(width)
        self.act = nn.ReLU(inplace=True)
        self.scale = {f"s{i}": math.sqrt(i + 1) for i in range(3) if i % 2 == 0}
        try:
            self.extra = kwargs.pop("extra")
        except KeyError:
            self.extra = None

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        with torch.no_grad():
            scale = max(v for v in self.scale.values())
        out = self.act(self.norm(self.layers(x))) * scale
        if self.extra is not None and callable(self.extra):
            out = self.extra(out)
        elif isinstance(out, (list, tuple)):
            out = torch.cat([o for o in out], dim=1)
        return out + identity


class Head${k}(Block${k}):
    def forward(self, x, *, mask=None):
        y = super().forward(x)
        return (lambda t: t.flatten(1))(y) if mask is None else y[mask]


def build${k}(depth: int = 2, **kwargs) -> List[Block${k}]:
    global _REGISTRY${k}
    blocks = []
    for i in range(depth):
        cls = _REGISTRY${k}.get(kwargs.get("name", "block${k}"), Block${k})
        blocks.append(cls(64 * 2 ** i, **kwargs))
    return blocks
`;
}

/** The text warming parses: eight such modules, about 20 KB. */
export function warmUpSample(): string {
  return Array.from({ length: 8 }, (_, k) => sampleModule(k)).join('\n');
}

/**
 * Parses the sample `rounds` times, yielding to the event loop between rounds (each about 50 ms on the bench
 * machine); keeps nothing.
 */
export async function warmUpParser(parser: PythonParser, rounds = 3): Promise<void> {
  const bytes = new TextEncoder().encode(warmUpSample());
  for (let i = 0; i < rounds; i++) {
    if (i) await new Promise((resolve) => setImmediate(resolve));
    parser.parse(bytes);
  }
}
