"""Convolution, normalization and activation in one block."""
from functools import partial

from torch import nn

from ..helpers import get_padding

DEFAULT_NORM = partial(nn.BatchNorm2d, eps=1e-5)


class ConvNormAct(nn.Sequential):
    """A KxK convolution followed by a normalization layer and an activation."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1,
                 norm_layer=DEFAULT_NORM, act_layer=nn.ReLU):
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride,
                      padding=get_padding(kernel_size, stride), groups=groups, bias=False),
            norm_layer(out_channels),
            act_layer(inplace=True) if act_layer is not None else nn.Identity(),
        )
        self.out_channels = out_channels
