"""Judge side: one validation, from the file to the verdict. The static tiers are decided here; then, when the
original is known, a worker runs the original alone (how far it gets, the plan of the comparison, its probes); then
another worker, forked fresh, runs the copy alone (its tiers, then its probes by the original's plan). Every worker
starts in a freshly emptied folder. The verdict is made here from what the two sent."""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .equivalence import compare, origin_problem
from ..wire.frames import Failed, Observed, Origin, Plan, Probe, Probed, Reached, Unavailable
from ..wire.frames import read as read_frame
from ..wire.jobs import ObserveJob, Original, ValidateJob
from ..wire.protocol import HANDED_OVER, MAX_TRACED_FILES, MAX_TRACED_LINES, Failure
from ..wire.reports import ObserveReport, Report
from .static import imported_top_levels, imports_anywhere, requirements, undefined_names
from .places import NATIVE_FOLDER, empty, project_folder
from .supervise import FORKERS, WorkerRun, last_line, run_worker, tail_text, zygote
from .verdict import verdict
from .timings import side_timings

# share of the time limit the original's worker may use; the copy gets what is left
ORIGINAL_SHARE = 0.5


def progress(tier: str) -> None:
    """Tell the caller (on stderr) that a tier was reached."""
    import sys

    sys.stderr.write(f"nnrag-tier: {tier}\n")
    sys.stderr.flush()


class Place:
    """Where workers run: the work folder (emptied before each), other folders emptied with it (a sandbox's private
    /tmp and /dev/shm), and the name of the project folder made for each worker."""

    def __init__(self, work: str, scratch: Optional[List[str]] = None, name: str = "project") -> None:
        self.work, self.scratch, self.name = work, scratch or [], name

    def fresh(self, source: str) -> str:
        """Every folder a worker could write emptied, then a fresh project folder holding a copy of `source` (and the
        helpers beside it), made the current folder. Returns the copy's path."""
        self.clear()
        copy_path = project_folder(self.work, source, self.name)
        os.chdir(os.path.dirname(copy_path))
        return copy_path

    def clear(self) -> None:
        """Empty the work folder and the scratch folders (nothing of one worker or job reaches the next)."""
        for folder in [self.work, *self.scratch]:
            empty(folder)


class OriginalSide:
    """What the original's worker established."""

    def __init__(self) -> None:
        self.reason: Optional[str] = None
        self.reached: Optional[str] = None
        self.plan: Optional[Dict[str, Any]] = None
        self.probes: List[Tuple[Dict[str, Any], bytes]] = []
        self.probed: Optional[Dict[str, Any]] = None
        self.how: Optional[str] = None
        # the compiled libraries the original's process had loaded (its plan says them)
        self.compiled: List[str] = []
        # the worker itself said why the original cannot be compared (it was not cut short)
        self.said = False
        # a run again to check its gradients' steadiness: its frames, to keep (judge.steadiness_checked)
        self.kept: Optional[str] = None


def on_unavailable(side: OriginalSide, frame: Unavailable, _original: Original) -> bool:
    side.reason = frame.reason
    side.said = True
    return False


def on_origin(side: OriginalSide, frame: Origin, original: Original) -> bool:
    """Where the original's class came from, checked against the indexed file: a mismatch ends the reading."""
    side.reason = origin_problem(frame.origin, original)
    side.said = bool(side.reason)
    how = frame.origin.get("how")
    if isinstance(how, str) and how != "imported":
        side.how = how[:300]
    return bool(side.reason)


def on_reached(side: OriginalSide, frame: Reached, _original: Original) -> bool:
    side.reached = frame.tier
    if frame.error:
        side.reason = f"the original does not reach forward with the arguments tried: {str(frame.error)[:400]}"
        side.said = True
    return False


def on_plan(side: OriginalSide, frame: Plan, _original: Original) -> bool:
    side.plan = frame.plan
    side.compiled = list(frame.compiled)
    return False


def on_probe(side: OriginalSide, frame: Probe, _original: Original) -> bool:
    side.probes.append((frame.body, frame.values))
    return False


def on_probed(side: OriginalSide, frame: Probed, _original: Original) -> bool:
    side.probed = frame.body
    return False


def on_failure(side: OriginalSide, frame: Failed, _original: Original) -> bool:
    side.reason = f"the original fails: {str(frame.body.get('message', ''))[:400]}"
    side.said = True
    return False


# what the original's worker may send, by frame type (frames.py); a handler returns True to stop reading; anything
# else (a frame the block wrote, of a known kind or not) is passed over: the original's side only informs the verdict
ORIGINAL_HANDLERS: Dict[type, Callable[[OriginalSide, Any, Original], bool]] = {
    Unavailable: on_unavailable,
    Origin: on_origin,
    Reached: on_reached,
    Plan: on_plan,
    Probe: on_probe,
    Probed: on_probed,
    Failed: on_failure,
}


def read_original(job: WorkerRun, original: Original) -> OriginalSide:
    side = OriginalSide()
    for header, blob in job.frames:
        frame = read_frame(header, blob)
        handler = ORIGINAL_HANDLERS.get(type(frame))
        if handler is not None and handler(side, frame, original):
            return side
    if job.problem is not None:
        side.reason = f"the original did not finish: {job.problem[1]}"
        side.plan = None
        side.said = False
    elif side.plan is None and side.reason is None:
        side.reason = f"the original's process ended without a plan: {last_line(tail_text(job))}"
    return side


def interpreter_versions() -> Dict[str, str]:
    """What a cached original's run depends on of this interpreter: Python's and torch's versions (as the zygote,
    which imported torch, said them)."""
    if not FORKERS.versions:
        zygote()
    return {"python": FORKERS.versions.get("python", sys.version), "torch": FORKERS.versions.get("torch", "unknown")}


def cached_original(request: ValidateJob) -> Optional[WorkerRun]:
    """The original's run a request carries (`original_frames`, kept by the caller from an earlier identical job of
    this judge), replayed as a finished worker's frames; None when there is none or it was made elsewhere."""
    try:
        kept = json.loads(request.original_frames or "null")
    except (TypeError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("versions") != interpreter_versions() or not isinstance(kept.get("frames"), list):
        return None
    frames = kept["frames"]
    if not frames or not all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], dict) and isinstance(f[1], str) for f in frames):
        return None
    job = WorkerRun()
    try:
        job.frames = [(dict(header), base64.b64decode(blob, validate=True)) for header, blob in frames]
    except ValueError:
        return None
    job.status = 0
    return job


def kept_original(job: WorkerRun) -> str:
    """A finished original's run as the caller keeps it (the same job again replays it: `cached_original`): one JSON
    text the caller never parses, so every key keeps its order (a JavaScript object would put "0", "1" first)."""
    return json.dumps({"versions": interpreter_versions(), "frames": [[header, base64.b64encode(blob).decode("ascii")] for header, blob in job.frames]})


def package_template(path: Optional[str], also: Any, package: str, natives: Any) -> Optional[Dict[str, Any]]:
    """A template that imports `package` from the folders its workers import it from (what `worker.prepare` reads for
    the original's role and the observer's); None when compiled operators must be loaded before it."""
    if natives:
        return None
    return {"original": {"path": path, "also": list(also)}, "package": package}


def original_template(request: ValidateJob, original: Original) -> Optional[Dict[str, Any]]:
    """What the original's workers import first, for their template (zygote.template_main): its package."""
    return package_template(original.path, original.also, original.module.split(".")[0], request.natives)


def copy_template(tree: Any) -> Optional[Dict[str, Any]]:
    """What the copy's workers import first, for their template: the modules the file imports before any statement
    of its own (so in the same order as the file), but torch (loaded already) and the standard library; None when
    that leaves nothing."""
    modules: List[str] = []
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "__future__":
                modules.append(node.module)
        else:
            break
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    wanted = [m for m in dict.fromkeys(modules) if m.split(".")[0] != "torch" and m.split(".")[0] not in stdlib]
    return {"modules": wanted} if wanted else None


CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def declared_encoding(raw: bytes) -> Optional[str]:
    """The source encoding the file declares in its first two lines (PEP 263), lower-cased; None when none."""
    for line in raw.split(b"\n", 2)[:2]:
        m = CODING.match(line)
        if m:
            return m.group(1).decode("ascii", "replace").lower()
    return None


def static_tiers(path: str, reach: Any, upstream: Optional[List[str]] = None, report: Optional[Report] = None) -> Any:
    """Parse, compile and check names; returns the code tree. `upstream`: names the original's own module reads and
    never defines (its bug, not the copy's): left undefined as there, and said in `report`."""
    raw = open(path, "rb").read()
    encoding = declared_encoding(raw)
    if encoding is not None and encoding.replace("_", "-") not in ("utf-8", "utf8"):
        # the same bytes read as other code under another codec (unicode_escape): pulled files are UTF-8
        raise Failure("syntax", f"the file declares the source encoding '{encoding}': only UTF-8 is read")
    try:
        tree = ast.parse(raw, path)
    except SyntaxError as exc:
        raise Failure("syntax", f"syntax error at line {exc.lineno}: {exc.msg}")
    except (RecursionError, MemoryError):
        raise Failure("syntax", "too deeply nested for the parser")
    reach("parsed")
    source = raw.decode("utf-8")
    try:
        compile(tree, path, "exec")
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise Failure("syntax", f"does not compile: {exc}")
    reach("compiled")
    undefined = undefined_names(source, path)
    allowed = set(upstream or [])
    theirs = sorted({n for n, _ in undefined if n in allowed})
    if theirs and report is not None:
        report.upstream_undefined = theirs
    undefined = [(n, line) for n, line in undefined if n not in theirs]
    if undefined:
        listed = ", ".join(f"'{n}' (line {line})" for n, line in undefined[:8])
        raise Failure("unresolved", f"undefined names: {listed}", names=[n for n, _ in undefined])
    reach("names-closed")
    return tree


def judge(path: str, request: ValidateJob, place: Place, control: Optional[int] = None) -> Report:
    """Validate one file (the job's class, candidates, native, builder, original); return the verdict."""
    report = Report(file=path, class_name=request.class_name)
    started = time.time()
    memory_mb, timeout_s, original = request.memory_mb, request.timeout_s, request.original
    # the workers' own time counts against the limit, not the machine's load (supervise.supervise)
    spent: List[float] = []

    def reach(tier: str) -> None:
        report.tier = tier
        progress(tier)

    def left() -> float:
        return max(1.0, timeout_s - sum(spent))

    side: Optional[OriginalSide] = None
    # where the job's seconds went (timings.py): informative, read by no verdict
    timings: Dict[str, Any] = {}
    report.timings = timings
    # the original's run kept from an identical earlier job (never shown to a worker)
    cached = cached_original(request) if original else None
    if original and request.original_only:
        return original_alone(path, request, place, control, original, report, started)
    try:
        tree = static_tiers(path, reach, request.upstream_undefined, report)
        report.requirements = requirements(imported_top_levels(tree))
        timings["static"] = round(time.time() - started, 3)
        if original:
            # the original's run of an identical earlier job, when the caller kept it: only the copy runs
            job = cached
            if job is None:
                job = run_worker(
                    "original",
                    request.worker_request(file=place.fresh(path), original=original.plain()),
                    memory_mb,
                    max(1.0, timeout_s * ORIGINAL_SHARE),
                    control,
                    original_template(request, original),
                )
                spent.append(job.own_s)
                timings["original"] = side_timings(job, "original")
            else:
                report.original_cached = True
                timings["original"] = {"cached": True}
            if job.problem is not None and job.problem[0] == "cancelled":
                raise Failure("cancelled", job.problem[1])
            side = read_original(job, original)
            # kept when the original's worker ended of itself: with its plan, or with the reason it gave none (the
            # caller's key holds what such a reason may depend on: the interpreter's packages, the operators built);
            # never after a limit or a crash, which the machine's load or a fault outside the block decides
            if cached is None and request.keep_original and job.problem is None and (side.plan is not None if side.reason is None else side.said):
                report.original_frames = kept_original(job)
            report.original_reached, report.original_ran = side.reached, True
            report.executed = executed_of(side)
            report.executed_after_import = executed_of(side, "executed_after_import")
        copy_path = place.fresh(path)
        plan = copy_plan(side)
        job = run_worker(
            "copy", request.worker_request(file=copy_path, plan=plan), memory_mb, left(), control, copy_template(tree), watch_maps=side is not None
        )
        spent.append(job.own_s)
        timings["copy"] = side_timings(job, "copy")
        try:
            result = verdict(job, report, reach)
        except Failure as failure:
            if side is not None and side.reached in ("instantiated", "forward") and failure.category not in ("tampered", "cancelled"):
                failure.extra["original_passes"] = side.reached
            raise
        if side is not None:
            comparing = time.time()
            lacking = lacking_compiled(side, job, request, path)
            try:
                report.equivalence = equivalence_of(side, result, lacking)
            except Failure as failure:
                # a difference where the original's run did not check whether its own gradients repeat: checked now
                if failure.category != "differs" or original is None or (side.probed or {}).get("checked") is True:
                    raise
                checking = time.time()
                again = steadiness_checked(request, place, path, original, side, memory_mb, left(), control, spent)
                timings["steadiness"] = round(time.time() - checking, 3)
                if again is None:
                    raise
                side = again
                if request.keep_original and again.kept is not None:
                    report.original_frames = again.kept
                report.equivalence = equivalence_of(side, result, lacking)
            timings["comparing"] = round(time.time() - comparing - timings.get("steadiness", 0.0), 3)
            if report.equivalence.get("native") and not natives_there(request, job):
                # left out of the comparison for want of compiled operators: never a pass
                raise Failure(
                    "native-extension",
                    f"not compared with the original: {report.equivalence['reason']} (nn-rag pull --build-native builds "
                    "them where the repository has their C++ sources)",
                )
            unexercised = not_exercised(tree, result.probed)
            if unexercised is not None:
                report.equivalence["not_exercised"] = unexercised
            if report.equivalence["status"] == "equivalent":
                reach("equivalent")
        elif request.no_original:
            report.equivalence = {"status": "unavailable", "reason": request.no_original[:500]}
    except Failure as failure:
        report.failed(failure.category, failure.message, failure.extra)
    else:
        report.ok = True
    report.seconds = round(time.time() - started, 3)
    # the workers' own time, which a caller's limits count (the machine's load is not the block's)
    report.own_seconds = round(sum(spent), 3)
    return report


def original_alone(path: str, request: ValidateJob, place: Place, control: Optional[int], original: Original, report: Report, started: float) -> Report:
    """Only how far the original gets with the tool's arguments (for a copy that cannot be run: the figures of a
    batch count the blocks whose original reaches forward); nothing of the copy runs."""
    job = run_worker(
        "original",
        request.worker_request(file=place.fresh(path), original=original.plain()),
        request.memory_mb,
        request.timeout_s,
        control,
        original_template(request, original),
    )
    report.timings = {"original": side_timings(job, "original")}
    if job.problem is not None and job.problem[0] == "cancelled":
        report.failed("cancelled", job.problem[1])
        return report
    side = read_original(job, original)
    report.original_reached, report.original_ran = side.reached, True
    report.failed("not-run", "only the original was run")
    if side.reached is None:
        report.original_reason = side.reason
    report.seconds = round(time.time() - started, 3)
    return report


def steadiness_checked(
    request: ValidateJob,
    place: Place,
    path: str,
    original: Original,
    side: OriginalSide,
    memory_mb: int,
    timeout_s: float,
    control: Optional[int],
    spent: List[float],
) -> Optional[OriginalSide]:
    """The original run again on the plan it probed the first time, its first train step's gradients computed twice
    (evidence.unstable_gradients: what varies between the two passes is said `unstable`); None when it cannot be
    (no plan, no train step, a run that did not finish). Only after a difference: a block whose gradients match pays
    no second backward. `kept`: its frames, to keep in place of the first run's."""
    plan = copy_plan(side)
    if plan is None or not any(str(body.get("key", "")).endswith("|train") for body, _ in side.probes):
        return None
    job = run_worker(
        "original",
        request.worker_request(file=place.fresh(path), original=original.plain(), plan=plan, check_gradients=True),
        memory_mb,
        max(1.0, timeout_s * ORIGINAL_SHARE),
        control,
        original_template(request, original),
    )
    spent.append(job.own_s)
    if job.problem is not None and job.problem[0] == "cancelled":
        raise Failure("cancelled", job.problem[1])
    again = read_original(job, original)
    if again.reason is not None or again.plan is None or (again.probed or {}).get("checked") is not True:
        return None
    again.kept = kept_original(job) if job.problem is None else None
    return again


def executed_of(side: OriginalSide, key: str = "executed") -> Optional[Dict[str, List[int]]]:
    """What the original's trace says ran (absolute file: first lines; `executed_after_import`: what first ran once it
    was imported), when its probes finished; only well-formed entries (the worker runs the repository's code: the pull
    checks every entry against its index)."""
    executed = (side.probed or {}).get(key) if side.reason is None else None
    if not isinstance(executed, dict):
        return None
    out: Dict[str, List[int]] = {}
    for file, lines in list(executed.items())[:MAX_TRACED_FILES]:
        if isinstance(file, str) and os.path.isabs(file) and len(file) < 4096 and isinstance(lines, list):
            out[file] = sorted({n for n in lines[:MAX_TRACED_LINES] if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 10_000_000})
    return out


def copy_plan(side: Optional[OriginalSide]) -> Optional[Dict[str, Any]]:
    """The plan the copy follows: exactly the variants the original probed within its time (the copy, run on a busy
    machine, must not stop earlier and leave probes unmatched)."""
    if side is None or side.reason is not None or side.plan is None:
        return None
    done = (side.probed or {}).get("variants")
    if not isinstance(done, list):
        return side.plan
    variants = [v for v in side.plan.get("variants", []) if isinstance(v, dict) and v.get("label") in done]
    return dict(side.plan, variants=variants, exact=True)


def stem(path: str) -> str:
    """A compiled library's module name as code names it (`.../torchvision/_C.so` -> `_C`)."""
    return os.path.basename(path).split(".")[0]


def lacking_compiled(side: OriginalSide, job: WorkerRun, request: ValidateJob, path: str) -> List[str]:
    """The compiled libraries the original's process loaded that the copy's process lacked, and that the copy's file
    names (a word of its text, a compiled module the request names, or `torch.ops.<its package>`): only those may
    excuse a probe the copy could not run (and never as a pass). Lacked: where the judge could read the copy's /proc
    maps, not mapped there; where it could not (a non-dumpable process in a user namespace the judge holds no
    privilege over: bubblewrap's), the copy's file imports no module named as a folder above the library (its
    package: `static.imports_anywhere`), so no import of its own loaded it. Neither is asked of the copy; a copy that
    raises the same words without needing the library gains nothing but a failure."""
    if not side.compiled or (not job.maps_unread and not job.mapped):
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(8 << 20)
    except OSError:
        text = ""
    words = set(re.findall(r"\w+", text)) | {n.split(".")[-1] for n in request.native}
    # named: the module by its name (`_C`), or the operators its package registers (`torch.ops.torchvision.nms`)
    ops = set(re.findall(r"\btorch\.ops\.(\w+)", text))
    named = [p for p in side.compiled if stem(p) in words or os.path.basename(os.path.dirname(p)) in ops]
    if not job.maps_unread:
        mapped = {os.path.realpath(p) for p in job.mapped}
        return [p for p in named if os.path.realpath(p) not in mapped]
    try:
        imported = imports_anywhere(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    # its package is one of the folders above it (`.../dist-packages/torchvision/_C.so`): read from the path the
    # original's worker gave, never looked up on disk
    return [p for p in named if not imported & set(os.path.dirname(p).split(os.sep))]


def natives_there(request: ValidateJob, job: WorkerRun) -> bool:
    """Whether the user asked for the compiled operators to be built (`--build-native`) and the copy's process
    loaded every one of them from its `_nnrag_native` folder (as the judge read its maps)."""
    if not request.natives or job.maps_unread:
        return False
    loaded = {os.path.basename(p) for p in job.mapped if os.path.basename(os.path.dirname(p)) == NATIVE_FOLDER}
    return all(n.file in loaded for n in request.natives)


def equivalence_of(side: OriginalSide, result: Any, lacking: Optional[List[str]] = None) -> Dict[str, Any]:
    """The equivalence record (raising Failure for a copy that differs)."""
    if side.reason is not None:
        return {"status": "unavailable", "reason": side.reason}
    if result.unfinished:
        return {"status": "unavailable", "reason": f"the comparison with the original did not finish: {result.unfinished}"}
    if result.probed is None or "error" in result.probed:
        why = (result.probed or {}).get("error") or "the copy sent no probes"
        return {"status": "unavailable", "reason": f"the copy could not be probed by the original's plan: {str(why)[:300]}"}
    record = compare(side.probes, result.probes, lacking or [])
    if side.how:
        record["original"] = side.how
    return record


def not_exercised(tree: Any, probed: Optional[Dict[str, Any]]) -> Optional[List[str]]:
    """The top-level functions and classes (with methods) of the pulled file none of whose code ran while the copy
    was probed: a change there would go unseen (a coverage line, from the copy's worker: informative only)."""
    ran = (probed or {}).get("ran")
    if not isinstance(ran, list):
        return None
    lines = {n for n in ran if isinstance(n, int)}
    out: List[str] = []
    for node in getattr(tree, "body", []):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = [n.lineno for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
        starts = set(inner) | {d.lineno for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in n.decorator_list}
        if inner and not any(line in lines for line in starts | {node.lineno}):
            out.append(node.name)
    return out[:50]


def observe_template(request: ObserveJob) -> Optional[Dict[str, Any]]:
    """What the observer's workers import first, for their template: the repository's package, from its folders (a
    worker that dies is replaced by a fork of the template, not by one that imports it again). None without a package,
    or when compiled operators must be loaded before it."""
    return None if request.package is None else package_template(request.path, request.also, request.package, request.natives)


QUIET_GRACE_S = 30.0  # an observer worker's imports, beyond twice an entry's own limit


def handed_over(job: WorkerRun, progressed: bool) -> bool:
    """Whether an observer worker ended between two entries for a fresh one to run the rest (its memory crowded,
    observe.crowded): nothing else went wrong, and it finished an entry (a test that exits with that status itself is
    run again first in the next worker, and blamed there)."""
    status = job.status
    return progressed and job.problem is None and status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == HANDED_OVER


def observe(request: ObserveJob, place: Place, control: Optional[int]) -> ObserveReport:
    """Run a repository's entry points in workers (observe.py) and gather what each observed. A worker that dies or
    runs out of time loses only the entry it was in: the next worker starts after it; one whose memory is crowded hands
    the rest to the next. Never runs a block's copy."""
    entries = request.entries
    report = ObserveReport()
    spent = 0.0  # the workers' own time (supervise.supervise): the machine's load does not cut the repository short
    while entries and spent < request.timeout_s:
        place.clear()
        os.makedirs(place.work, exist_ok=True)
        os.chdir(place.work)
        # an entry that ignores its alarm is stopped from outside (its imports count towards its first result)
        job = run_worker(
            "observe",
            request.worker_request(entries),
            request.memory_mb,
            max(1.0, request.timeout_s - spent),
            control,
            observe_template(request),
            quiet_s=QUIET_GRACE_S + 2 * request.entry_s,
        )
        spent += max(job.own_s, 0.05)
        done: Dict[str, Dict[str, Any]] = {}
        for header, blob in job.frames:
            frame = read_frame(header, blob)
            if isinstance(frame, Observed):
                done[frame.record["entry"]] = frame.record
            elif isinstance(frame, Failed):
                return ObserveReport(False, report.observed, str(frame.body.get("category")), str(frame.body.get("message"))[:500])
        report.observed.extend(done.values())
        if job.problem is not None and job.problem[0] in ("cancelled", "tampered", "output"):
            return ObserveReport(False, report.observed, job.problem[0], job.problem[1])
        left = tuple(e for e in entries if e.id not in done)
        if left and not handed_over(job, bool(done)):
            # the entry the worker was in when it ended
            why = job.problem[1] if job.problem is not None else f"the process ended: {last_line(tail_text(job))}"
            report.observed.append({"entry": left[0].id, "error": why[:300], "calls": [], "files": []})
            left = left[1:]
        entries = left
    for e in entries:
        report.observed.append({"entry": e.id, "error": "not run: the time for the repository ran out", "calls": [], "files": []})
    return report
