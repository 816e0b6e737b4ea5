"""Residual, inverted-residual and transformer blocks built from the layers."""
import math

import torch
from torch import nn

from .helpers import make_divisible, to_2tuple
from .layers import ConvNormAct, DropPath, Mlp, SqueezeExcite


class ResidualBlock(nn.Module):
    """A basic residual block: two 3x3 convolutions with an identity (or projected) shortcut."""

    expansion = 1

    def __init__(self, in_channels, out_channels, stride=1, use_se=False, drop_path=0.0):
        super().__init__()
        self.conv1 = ConvNormAct(in_channels, out_channels, 3, stride)
        self.conv2 = ConvNormAct(out_channels, out_channels * self.expansion, 3, act_layer=None)
        self.se = SqueezeExcite(out_channels) if use_se else nn.Identity()
        self.shortcut = (
            nn.Identity()
            if stride == 1 and in_channels == out_channels
            else ConvNormAct(in_channels, out_channels, 1, stride, act_layer=None)
        )
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.se(self.conv2(self.conv1(x)))
        return self.act(self.shortcut(x) + self.drop_path(y))


class InvertedResidual(nn.Module):
    """MobileNetV2's inverted residual: expand with 1x1, depthwise 3x3, project back with 1x1."""

    def __init__(self, in_channels, out_channels, stride=1, expand_ratio=4.0):
        super().__init__()
        mid = make_divisible(in_channels * expand_ratio)
        self.use_res = stride == 1 and in_channels == out_channels
        self.block = nn.Sequential(
            ConvNormAct(in_channels, mid, 1),
            ConvNormAct(mid, mid, 3, stride, groups=mid),
            ConvNormAct(mid, out_channels, 1, act_layer=None),
        )

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class TransformerBlock(nn.Module):
    """A pre-norm transformer block: multi-head self-attention and an MLP, each with a residual."""

    def __init__(self, dim, num_heads=4, mlp_ratio=4.0, drop_path=0.0, window=to_2tuple(4)):
        super().__init__()
        self.window = window
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.drop_path(self.attn(h, h, h, need_weights=False)[0])
        return x + self.drop_path(self.mlp(self.norm2(x)))
