/**
 * A repository with its own compiled operators (for `pull --build-native`, its test and the bench): `opspkg._C`, a
 * CPU C++ extension declared in setup.py (two sources and a header), and `opspkg._G`, a CUDA-only one.
 */
export const NATIVE_REPO: Record<string, string> = {
  'setup.py': `from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

setup(
    name="opspkg",
    ext_modules=[
        CppExtension("opspkg._C", ["opspkg/csrc/ops.cpp", "opspkg/csrc/scale.cpp"]),
        CUDAExtension("opspkg._G", ["opspkg/csrc/cuda/gate.cu"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
`,
  'opspkg/__init__.py': '',
  'opspkg/csrc/scale.h': '#pragma once\n#include <torch/extension.h>\ntorch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha);\n',
  'opspkg/csrc/scale.cpp': '#include "scale.h"\ntorch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha) { return x + alpha * y; }\n',
  'opspkg/csrc/ops.cpp': '#include "scale.h"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scaled_add", &scaled_add, "x + alpha * y"); }\n',
  'opspkg/csrc/cuda/gate.cu': '// a CUDA kernel only\n',
  'opspkg/layers.py': `from torch import nn

from . import _C


class ScaledResidual(nn.Module):
    def __init__(self, dim=8, alpha=0.5):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.alpha = alpha

    def forward(self, x):
        return _C.scaled_add(x, self.proj(x), self.alpha)
`,
  'opspkg/gates.py': `from torch import nn

from ._G import gate


class Gated(nn.Module):
    def forward(self, x):
        return gate(x)
`,
};
