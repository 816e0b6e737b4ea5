"""Builds a repository's compiled operator for `nn-rag pull --build-native`, inside the sandbox.

Argument: one JSON object {"name", "sources", "include", "out"}. Compiles `sources` (C++ for the CPU) with
torch.utils.cpp_extension into `out/<name>.so` (g++ and ninja; the interpreter's torch headers) and loads it once, so
a module that does not load fails here, with the loader's message. Prints {"file"} as its last line; exits 1 with
the compiler's or loader's message on stderr when the operator does not build.
"""
from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        from torch.utils.cpp_extension import load
    except ImportError as exc:
        sys.stderr.write(f"error: this interpreter has no torch.utils.cpp_extension: {exc}\n")
        return 1
    out = str(spec["out"])
    os.makedirs(out, exist_ok=True)
    try:
        load(name=str(spec["name"]), sources=[str(s) for s in spec["sources"]], extra_include_paths=[str(i) for i in spec["include"]],
             extra_cflags=["-O2"], build_directory=out, verbose=False)
    except BaseException as exc:  # noqa: BLE001 - the message is the finding
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
        return 1
    print(json.dumps({"file": os.path.join(out, f"{spec['name']}.so")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
