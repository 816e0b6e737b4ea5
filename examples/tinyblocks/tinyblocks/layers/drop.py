"""Stochastic depth."""
import torch
from torch import nn


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    """Drop whole samples of a residual branch with probability `drop_prob`."""
    if drop_prob == 0.0 or not training:
        return x
    keep = 1 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    return x * mask / keep


class DropPath(nn.Module):
    """Stochastic depth per sample, for the main path of residual blocks."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return drop_path(x, self.drop_prob, self.training)
