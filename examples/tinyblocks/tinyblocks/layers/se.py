"""Squeeze-and-excitation channel attention."""
from torch import nn

from ..helpers import make_divisible


class SqueezeExcite(nn.Module):
    """Channel attention: squeeze by global pooling, excite with a bottleneck of two 1x1 convolutions."""

    def __init__(self, channels, rd_ratio=0.25, act_layer=nn.ReLU, gate_layer=nn.Sigmoid):
        super().__init__()
        rd_channels = make_divisible(channels * rd_ratio)
        self.fc1 = nn.Conv2d(channels, rd_channels, 1)
        self.act = act_layer(inplace=True)
        self.fc2 = nn.Conv2d(rd_channels, channels, 1)
        self.gate = gate_layer()

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))
