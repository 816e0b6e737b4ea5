from .conv import ConvNormAct
from .drop import DropPath, drop_path
from .mlp import Mlp
from .se import SqueezeExcite
