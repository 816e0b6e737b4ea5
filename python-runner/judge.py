#!/usr/bin/env python3
"""The judge's entry point (python-runner/nnrag_judge): `judge.py --serve`, or `judge.py FILE [options]`; and
`judge.py --zygote FD`, the process every block process is forked from (started by the judge with exec: it imports
nothing of the judge)."""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__" and sys.argv[1:2] == ["--zygote"]:
    runpy.run_path(os.path.join(HERE, "nnrag_judge", "worker", "zygote.py"), run_name="__zygote__")
    sys.exit(0)

sys.path.insert(0, HERE)

from nnrag_judge.judge.serve import main, serve  # noqa: E402

if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main(sys.argv[1:]))
