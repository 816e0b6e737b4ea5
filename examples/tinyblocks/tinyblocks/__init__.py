"""tinyblocks: small PyTorch building blocks."""
from .layers import ConvNormAct, DropPath, Mlp, SqueezeExcite
from .blocks import InvertedResidual, ResidualBlock, TransformerBlock

__all__ = ["ConvNormAct", "DropPath", "Mlp", "SqueezeExcite", "InvertedResidual", "ResidualBlock", "TransformerBlock"]
