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
  'opspkg/csrc/scale.h':
    '#pragma once\n#include <torch/extension.h>\ntorch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha);\n',
  'opspkg/csrc/scale.cpp':
    '#include "scale.h"\ntorch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha) { return x + alpha * y; }\n',
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

/**
 * A library that loads its compiled operators by name at run time, as OpenMMLab's mmcv does
 * (`ext_module = load_ext('_ext', [...])`, `importlib.import_module('ldpkg.' + name)`): setup.py lists the sources
 * with globs, the binding file and the operator's CPU code are under `csrc/pytorch/`, the shared header under
 * `csrc/common/`, two sources of one file name in different folders, and an accelerator's source that cannot build here beside them.
 */
export const LOADER_REPO: Record<string, string> = {
  'setup.py': `from glob import glob

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

sources = glob("ldpkg/ops/csrc/pytorch/*.cpp") + glob("ldpkg/ops/csrc/pytorch/cpu/*.cpp")
setup(name="ldpkg", ext_modules=[CppExtension("ldpkg._ext", sources, include_dirs=["ldpkg/ops/csrc/common"])],
      cmdclass={"build_ext": BuildExtension})
`,
  'ldpkg/__init__.py': '',
  'ldpkg/utils/__init__.py': '',
  'ldpkg/utils/ext_loader.py': `import importlib


def load_ext(name, funcs):
    ext = importlib.import_module("ldpkg." + name)
    for fun in funcs:
        assert hasattr(ext, fun), f"{fun} miss in module {name}"
    return ext
`,
  'ldpkg/ops/__init__.py': '',
  'ldpkg/ops/shift.py': `from torch import nn

from ..utils.ext_loader import load_ext

ext_module = load_ext("_ext", ["shift_add"])


class ShiftAdd(nn.Module):
    def __init__(self, dim=8, shift=0.25):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.shift = shift

    def forward(self, x):
        return ext_module.shift_add(self.proj(x), x, self.shift)
`,
  'ldpkg/ops/csrc/common/ops_helper.hpp':
    '#pragma once\n#include <torch/extension.h>\ntorch::Tensor shift_add_cpu(const torch::Tensor& a, const torch::Tensor& b, double s);\n',
  'ldpkg/ops/csrc/pytorch/pybind.cpp':
    '#include "ops_helper.hpp"\ntorch::Tensor shift_add(const torch::Tensor& a, const torch::Tensor& b, double s);\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("shift_add", &shift_add, "a + b + s"); }\n',
  'ldpkg/ops/csrc/pytorch/shift.cpp':
    '#include "ops_helper.hpp"\ntorch::Tensor shift_add(const torch::Tensor& a, const torch::Tensor& b, double s) { return shift_add_cpu(a, b, s); }\n',
  // the same file name as the binding's folder's `shift.cpp`, as mmcv's `pytorch/X.cpp` and `pytorch/cpu/X.cpp`
  'ldpkg/ops/csrc/pytorch/cpu/shift.cpp':
    '#include "ops_helper.hpp"\ntorch::Tensor shift_add_cpu(const torch::Tensor& a, const torch::Tensor& b, double s) { return a + b + s; }\n',
  'ldpkg/ops/csrc/pytorch/npu/shift_npu.cpp': '#include "acl/acl.h"\n// an accelerator SDK that is not here\n',
  'ldpkg/ops/csrc/pytorch/cuda/shift_cuda.cu': '// a CUDA kernel\n',
};
