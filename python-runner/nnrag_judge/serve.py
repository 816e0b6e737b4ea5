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
from typing import Any, Callable, Dict, List, Optional

from .judge import Place, judge, observe
from .messages import checked, load_schema
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


def parse_original(value: Any) -> Optional[Dict[str, Any]]:
    """The original class to compare with: {"module", "class", "path" (a folder for sys.path, or null), "file" and
    "blob" (the indexed source, checked), "builder"}."""
    try:
        got = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(got, dict) or not isinstance(got.get("module"), str) or not isinstance(got.get("class"), str):
        return None
    builder = got.get("builder")
    made = None
    if isinstance(builder, dict) and isinstance(builder.get("module"), str) and isinstance(builder.get("name"), str):
        made = {"module": builder["module"], "name": builder["name"]}
    text = lambda k: got.get(k) if isinstance(got.get(k), str) else None  # noqa: E731
    also = [a for a in got.get("also") or [] if isinstance(a, str)] if isinstance(got.get("also"), list) else []
    return {"module": got["module"], "class": got["class"], "path": text("path"), "file": text("file"), "blob": text("blob"), "builder": made, "also": also}


def parse_candidates(text: Any) -> List[Dict[str, Any]]:
    try:
        given = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [g for g in given if isinstance(g, dict)] if isinstance(given, list) else []


def request_of(req: Dict[str, Any]) -> Dict[str, Any]:
    """What the workers are told of a job."""
    out = {
        "class": req.get("class"),
        "candidates": parse_candidates(req.get("candidates", [])),
        "native": [str(n) for n in req.get("native", []) if isinstance(n, str)],
        "builder": req.get("builder"),
    }
    if isinstance(req.get("no_original"), str):
        out["no_original"] = req["no_original"]
    if isinstance(req.get("examples"), list):
        out["examples"] = [str(e)[:8000] for e in req["examples"] if isinstance(e, str)][:4]
    if req.get("original_only") is True:
        out["original_only"] = True
    if isinstance(req.get("upstream_undefined"), list):
        out["upstream_undefined"] = [str(n) for n in req["upstream_undefined"] if isinstance(n, str) and n.isidentifier()][:200]
    # the original's run of an identical earlier job, kept by the caller (checked against this interpreter by the judge)
    if isinstance(req.get("original_frames"), str):
        out["original_frames"] = req["original_frames"]
    if req.get("keep_original") is True:
        out["keep_original"] = True
    natives = req.get("natives")
    if isinstance(natives, list):
        out["natives"] = [
            {"module": n["module"], "name": n["name"], "file": n["file"]}
            for n in natives
            if isinstance(n, dict) and all(isinstance(n.get(k), str) for k in ("module", "name", "file")) and "/" not in n["file"] and n["file"].endswith(".so")
        ]
    return out


def relative_file(value: Any) -> bool:
    """A path inside a folder: relative, no `..` part, no empty part."""
    return (
        isinstance(value, str)
        and bool(value)
        and not value.startswith("/")
        and "\\" not in value
        and all(part not in ("", ".", "..") for part in value.split("/"))
    )


def observe_spec(value: Any) -> Optional[Dict[str, Any]]:
    """What to observe of a repository: {"root" (its folder), "path" (where its modules import from), "also" (other
    such folders), "entry_s",
    "entries": [{"id", "module", "function", "class"?, "kind"? ("build": a builder, fed what it builds; "config": a
    configuration file's `model`, with "file" (relative to root), "registries" ([module, name]...) and "modules" (those
    registering classes in them); "example": a README code block, with "code")}]}; None when
    malformed."""
    if not isinstance(value, dict) or not isinstance(value.get("root"), str) or not isinstance(value.get("path"), str):
        return None
    entries = []
    for e in value.get("entries") or []:
        if (
            isinstance(e, dict)
            and all(isinstance(e.get(k), str) for k in ("id", "module", "function"))
            and all(part.isidentifier() for part in e["module"].split("."))
            and e["function"].isidentifier()
            and (e.get("class") is None or (isinstance(e["class"], str) and e["class"].isidentifier()))
            and e.get("kind") in (None, "build", "config", "example")
        ):
            entry = {k: e[k] for k in ("id", "module", "function", "class", "kind") if e.get(k) is not None}
            if e.get("kind") == "example":
                if not isinstance(e.get("code"), str) or len(e["code"]) > 20_000:
                    continue
                entry["code"] = e["code"]
            if e.get("kind") == "config":
                file, registries = e.get("file"), e.get("registries")
                if not relative_file(file) or not isinstance(registries, list):
                    continue
                entry["file"] = file
                entry["registries"] = [
                    [m, n]
                    for m, n in (r for r in registries if isinstance(r, list) and len(r) == 2)
                    if isinstance(m, str) and isinstance(n, str) and n.isidentifier() and all(part.isidentifier() for part in m.split("."))
                ]
                entry["modules"] = (
                    [m for m in e.get("modules") or [] if isinstance(m, str) and all(part.isidentifier() for part in m.split("."))]
                    if isinstance(e.get("modules"), list)
                    else []
                )
            entries.append(entry)
    budget = value.get("entry_s")
    also = [a for a in value.get("also") or [] if isinstance(a, str)] if isinstance(value.get("also"), list) else []
    out = {
        "root": value["root"],
        "path": value["path"],
        "also": also,
        "entries": entries,
        "entry_s": float(budget) if isinstance(budget, (int, float)) and 0 < budget <= 600 else 20.0,
    }
    # the repository's compiled operators built for it (--build-native), in `native_folder`'s `_nnrag_native/`
    natives = value.get("natives")
    if isinstance(natives, list) and isinstance(value.get("native_folder"), str):
        out["natives"] = [
            {"module": n["module"], "name": n["name"], "file": n["file"]}
            for n in natives
            if isinstance(n, dict) and all(isinstance(n.get(k), str) for k in ("module", "name", "file")) and "/" not in n["file"] and n["file"].endswith(".so")
        ]
        out["native_folder"] = value["native_folder"]
    return out


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
    request = request_of(
        {
            "class": opts.class_name,
            "candidates": opts.candidates,
            "builder": opts.builder,
            "native": [n for n in opts.native.split(",") if n],
            "original_only": opts.original_only,
        }
    )
    before = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        report = judge(os.path.abspath(opts.file), request, Place(work), opts.memory_mb, opts.timeout, original=parse_original(opts.original))
        os.chdir(before)
    sys.stdout.write(answer_line(report))
    sys.stdout.flush()
    return 0 if report["ok"] else 1


def validate_request(req: Dict[str, Any], place: Place) -> Dict[str, Any]:
    """kind "validate": one pulled file judged against its original."""
    memory_mb, timeout_s = int(req.get("memory_mb", 0)), float(req.get("timeout_s", 600))
    return judge(str(req["file"]), request_of(req), place, memory_mb, timeout_s, 0, parse_original(req.get("original")))


def observe_request(req: Dict[str, Any], place: Place) -> Dict[str, Any]:
    """kind "observe": a repository's entries run under the observer."""
    spec = observe_spec(req["observe"])
    if spec is None:
        return {"ok": False, "category": "error", "message": "a malformed observation request"}
    return observe(spec, place, int(req.get("memory_mb", 0)), float(req.get("timeout_s", 600)), 0)


# what the judge does for each kind of request (judge.schema.json names the kinds and their fields)
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
    pending = b""
    home = os.getcwd()
    while True:
        while b"\n" not in pending:
            data = os.read(0, 1 << 16)
            if not data:
                return 0
            pending += data
        line, pending = pending.split(b"\n", 1)
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
            pending = b""
        else:
            os.environ["HOME"] = work
            report = HANDLERS[kind](req, Place(work, scratch))
            os.chdir(home)
            Place(work, scratch).clear()
        answer.write(answer_line({"id": rid, "report": report}))
        answer.flush()
        if report.get("category") == "cancelled" and report.get("message") == "the caller went away":
            return 0
