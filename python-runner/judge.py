#!/usr/bin/env python3
"""The judge's entry point (python-runner/nnrag_judge): `judge.py --serve`, or `judge.py FILE [options]`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nnrag_judge.serve import main, serve  # noqa: E402

if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main(sys.argv[1:]))
