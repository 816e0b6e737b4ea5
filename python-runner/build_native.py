"""Builds a repository's compiled operator for `nn-rag pull --build-native`, inside the sandbox.

Argument: one JSON object {"name", "sources", "include", "out"}. Compiles `sources` (C++ for the CPU) with
torch.utils.cpp_extension into `out/<name>.so` (g++ and ninja; the interpreter's torch headers) and loads it once, so
a module that does not load fails here, with the loader's message. Sources that share a file name in different folders
(`pytorch/op.cpp` and `pytorch/cpu/op.cpp`, as mmcv has) are compiled through a one-line file of a name of its own
that includes the source, since cpp_extension names each object after its source's file name alone. Prints {"file"} as its last line; exits 1 with
the compiler's or loader's message on stderr when the operator does not build.
"""

from __future__ import annotations

import json
import os
import sys


def distinct_sources(sources: list[str], out: str) -> list[str]:
    """`sources`, with each one whose file name an earlier one has replaced by a file in `out` that includes it."""
    seen: set[str] = set()
    result: list[str] = []
    folder = os.path.join(out, "nnrag_sources")
    for index, source in enumerate(sources):
        stem = os.path.splitext(os.path.basename(source))[0]
        if stem not in seen:
            seen.add(stem)
            result.append(source)
            continue
        path = os.path.abspath(source)
        if any(c in path for c in '"\\\n'):
            raise ValueError(f"cannot compile {source} beside another of its file name: its path has a quote, backslash or newline")
        os.makedirs(folder, exist_ok=True)
        wrapper = os.path.join(folder, f"nnrag_{index}_{stem}.cpp")
        # the source keeps its own folder for its quoted includes: the preprocessor searches the including file's
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write(f'#include "{path}"\n')
        seen.add(os.path.splitext(os.path.basename(wrapper))[0])
        result.append(wrapper)
    return result


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
        load(
            name=str(spec["name"]),
            sources=distinct_sources([str(s) for s in spec["sources"]], out),
            extra_include_paths=[str(i) for i in spec["include"]],
            extra_cflags=["-O2"],
            build_directory=out,
            verbose=False,
        )
    except BaseException as exc:  # noqa: BLE001 - the message is the finding
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
        return 1
    print(json.dumps({"file": os.path.join(out, f"{spec['name']}.so")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
