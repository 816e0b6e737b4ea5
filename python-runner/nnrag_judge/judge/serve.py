"""Judge side: how the judge is driven. `--serve` (the validator pool and one-shot runs of the extension and the
CLI): torch imported once, then one JSON request a line on stdin, one answer a line on stdout. Without `--serve`:
one file from the command line (tests)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List

from ..wire.jobs import ObserveJob, ValidateJob
from .judge import Place, judge, observe
from ..wire.messages import checked, load_schema
from .processes import not_dumpable
from .supervise import zygote


def finite(value: Any) -> Any:
    """A report as strict JSON: a number that is not finite (a largest difference of inf, a NaN read back) becomes
    its name, since the caller's JSON has no NaN or Infinity and would take the line for noise."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def answer_line(payload: Dict[str, Any]) -> str:
    return json.dumps(finite(payload), allow_nan=False) + "\n"


def main(argv: List[str]) -> int:
    """Command line: FILE [--class NAME] [--candidates JSON] [--native a,b] [--memory-mb N] [--timeout S]
    [--builder NAME] [--original JSON] [--original-only]."""
    parser = argparse.ArgumentParser(description="Validate one pulled block file and print its report as JSON.")
    parser.add_argument("file")
    parser.add_argument("--class", dest="class_name")
    parser.add_argument("--candidates", default="[]", help="JSON list of {args, kwargs} to try first")
    parser.add_argument("--native", default="", help="comma-separated modules known to be compiled extensions")
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--builder", help="a function of the file that builds the block without arguments")
    parser.add_argument("--original", help='JSON {"module", "class", "path"}: the class the file was pulled from, to compare')
    parser.add_argument("--original-only", action="store_true", help="run only the original: how far it gets")
    opts = parser.parse_args(argv)
    not_dumpable()
    request = ValidateJob.parse(
        {
            "file": os.path.abspath(opts.file),
            "class": opts.class_name,
            "candidates": opts.candidates,
            "builder": opts.builder,
            "native": [n for n in opts.native.split(",") if n],
            "original_only": opts.original_only,
            "original": opts.original,
            "memory_mb": opts.memory_mb,
            "timeout_s": opts.timeout,
        }
    )
    before = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        report = judge(request.file, request, Place(work)).plain()
        os.chdir(before)
    sys.stdout.write(answer_line(report))
    sys.stdout.flush()
    return 0 if report["ok"] else 1


def validate_request(req: Dict[str, Any], place: Place) -> Dict[str, Any]:
    """kind "validate": one pulled file judged against its original."""
    return judge(str(req["file"]), ValidateJob.parse(req), place, 0).plain()


def observe_request(req: Dict[str, Any], place: Place) -> Dict[str, Any]:
    """kind "observe": a repository's entries run under the observer."""
    job = ObserveJob.parse(req)
    if job is None:
        return {"ok": False, "category": "error", "message": "a malformed observation request"}
    return observe(job, place, 0).plain()


# what the judge does for each kind of request (judge.schema.json names the kinds; jobs.py reads their fields)
HANDLERS: Dict[str, Callable[[Dict[str, Any], Place], Dict[str, Any]]] = {"validate": validate_request, "observe": observe_request}


def serve() -> int:
    """--serve: starts the zygote (which imports torch once: `zygote.py`); then, for each request on stdin (a JSON
    object whose `kind` names its handler in HANDLERS; its fields are judge.schema.json's), validates or observes in
    workers forked from the zygote or a template, each in a fresh project folder under `work` (emptied, with every
    folder of `scratch`, before each worker), and answers {"id", "report"}, or {"id", "error"} for a request it does
    not take. A line on stdin while
    a job runs cancels it; the end of stdin ends everything."""
    not_dumpable()
    schema = load_schema()
    zygote()  # warm: torch imported once, in the process every worker is forked from (started again if it dies)
    answer = sys.stdout
    answer.write(json.dumps({"ready": True}) + "\n")
    answer.flush()
    # a request's line arrives in pipe-sized pieces (one that replays a kept original holds its frames: megabytes):
    # gathered in place, each piece searched once for the line's end
    pending = bytearray()
    home = os.getcwd()
    while True:
        end = pending.find(b"\n")
        while end < 0:
            data = os.read(0, 1 << 16)
            if not data:
                return 0
            end = data.find(b"\n")
            if end >= 0:
                end += len(pending)
            pending += data
        line = bytes(pending[:end])
        del pending[: end + 1]
        if not line.strip() or line.strip() == b"cancel":  # a cancel that came after its job ended
            continue
        req: Any = None
        try:
            req = json.loads(line)
            kind = checked(req, schema)
            rid, work = req["id"], str(req["work"])
            scratch = [str(s) for s in req.get("scratch", [])]
        except (ValueError, KeyError, TypeError) as exc:
            # a request that is not JSON, of a kind this judge has no handler for, or with a field it does not know
            rid = req.get("id") if isinstance(req, dict) and isinstance(req.get("id"), int) else None
            answer.write(json.dumps({"id": rid, "error": f"bad request: {exc}"}) + "\n")
            answer.flush()
            continue
        if pending.strip().startswith(b"cancel"):  # cancelled before the job started
            report = {"tier": None, "ok": False, "category": "cancelled", "message": "validation cancelled"}
            pending = bytearray()
        else:
            os.environ["HOME"] = work
            report = HANDLERS[kind](req, Place(work, scratch))
            os.chdir(home)
            Place(work, scratch).clear()
        answer.write(answer_line({"id": rid, "report": report}))
        answer.flush()
        if report.get("category") == "cancelled" and report.get("message") == "the caller went away":
            return 0
