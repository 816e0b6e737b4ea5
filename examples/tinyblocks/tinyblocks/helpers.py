"""Small helpers shared by the layers."""
import collections.abc
from itertools import repeat


def make_divisible(value, divisor=8, min_value=None, round_limit=0.9):
    """Round `value` to a multiple of `divisor`, never going below `round_limit` of it."""
    min_value = min_value or divisor
    new_value = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if new_value < round_limit * value:
        new_value += divisor
    return new_value


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    return parse


to_2tuple = _ntuple(2)


def get_padding(kernel_size, stride=1, dilation=1):
    """'Same' padding for odd kernels."""
    return ((stride - 1) + dilation * (kernel_size - 1)) // 2
