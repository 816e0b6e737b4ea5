"""Judge side: having a worker started and watching it. A worker is forked by the zygote (`zygote.py`, exec'd by the
judge) or by a template of its side, never by the judge; it gets its own pipes (frames on one, everything it prints on
the other, its job on a third) and a fresh folder. The judge reads until the worker ends, its limit (in its own time)
or the memory limit is hit or the caller cancels, then kills everything it left."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Set, Tuple

from ..wire.linux import subreaper
from .processes import IGNORED_SIGNALS, descendants, mapped_libraries, memory_in_use, process_state, read_line
from ..wire.protocol import FRAME, MAX_HEADER, MAX_VALUES, run_delay_s


WALL_FACTOR = 4  # a worker kept waiting by the machine's load gets this many times its limit in wall time


WALL_GRACE_S = 30.0


OUTPUT_CAP = 16 << 20  # bytes the block may print before it is stopped


OUTPUT_TAIL = 4000


POLL_S = 0.1


MEMORY_EVERY_S = 0.25


# python-runner/judge.py, beside the package this room is in
RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "judge.py")


def kill_descendants() -> None:
    """Kill and reap everything this process started (and, as a subreaper, what they left behind), but the zygote
    and the templates (anything they started is killed)."""
    for _ in range(50):
        keep = template_pids()
        pids = [p for p in descendants(os.getpid()) if p not in keep]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if reaped in keep:
                FORKERS.reaped.add(reaped)  # a zygote or template that died: its pid is never signalled again
            if reaped == 0:
                if not any(process_state(p)[0] not in ("", "Z", "X") or process_state(p)[1] == os.getpid() for p in pids):
                    break
                time.sleep(0.005)


class WorkerRun:
    """One worker's run as the judge sees it: the frames it sent, what it printed, how it ended (the request it ran
    is a `jobs.ValidateJob` or `jobs.ObserveJob`)."""

    def __init__(self) -> None:
        self.frames: List[Tuple[Dict[str, Any], bytes]] = []
        # what came of a frame not yet whole: appended to and consumed from its front in place (a frame of 16 MB
        # arrives in pipe-sized pieces; a bytes object copied whole on each would cost the square of its size)
        self.buffer = bytearray()
        self.tail = b""
        self.printed = 0
        self.problem: Optional[Tuple[str, str]] = None
        self.status: Optional[int] = None
        self.received = 0
        # the worker's own time (wall time less what it waited for a CPU): what its job's limit counts
        self.own_s = 0.0
        # the shared libraries the judge saw mapped in the worker whenever a frame came (`watch_maps`), and whether
        # it failed to read them once (then nothing may be concluded of what the process lacks)
        self.mapped: Set[str] = set()
        self.maps_unread = False
        # the judge's clock: when the worker started (supervise), when each frame arrived (seconds after that, one
        # per frame) and its wall time: where a job's time went (timings.py), measured outside the worker
        self.began: Optional[float] = None
        self.stamps: List[float] = []
        self.wall_s = 0.0

    def feed(self, data: bytes) -> None:
        """Frames from the worker; a malformed or oversized one is a problem, never a result."""
        self.buffer += data
        self.received += len(data)
        if self.received > 3 * MAX_VALUES * 8:
            self.problem = ("output", "the worker sent more than its values' budget")
            return
        while len(self.buffer) >= FRAME.size:
            head_len, blob_len = FRAME.unpack_from(self.buffer)
            if head_len > MAX_HEADER or blob_len > MAX_VALUES * 8:
                self.problem = ("tampered", "the block wrote to the validator's channel (an oversized frame)")
                return
            end = FRAME.size + head_len + blob_len
            if len(self.buffer) < end:
                return
            try:
                header = json.loads(bytes(self.buffer[FRAME.size : FRAME.size + head_len]).decode("utf-8"))
                if not isinstance(header, dict):
                    raise ValueError("not an object")
            except ValueError:
                self.problem = ("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
                return
            self.frames.append((header, bytes(self.buffer[FRAME.size + head_len : end])))
            self.stamps.append(0.0 if self.began is None else round(time.monotonic() - self.began, 3))
            del self.buffer[:end]

    def output(self, data: bytes) -> None:
        self.printed += len(data)
        self.tail = (self.tail + data)[-OUTPUT_TAIL:]
        if self.printed > OUTPUT_CAP:
            self.problem = ("output", f"the block printed more than {OUTPUT_CAP >> 20} MB")


def supervise(
    job: WorkerRun,
    pid: int,
    events: int,
    printed: int,
    control: Optional[int],
    timeout_s: float,
    memory_mb: int,
    quiet_s: Optional[float] = None,
    watch_maps: bool = False,
) -> None:
    """Read the worker's frames and output until it ends, the time or memory limit is hit, or the caller goes away
    (end of `control`) or cancels (a line on it). `quiet_s`: the longest the worker may go without a frame (an
    observed entry's limit, kept from outside: the alarm inside the worker is the repository's to ignore).
    `watch_maps`: read the worker's mapped libraries from outside whenever frames come (`WorkerRun.mapped`)."""
    # the limit counts the worker's own time: wall time less what it waited for a CPU (a batch beside a CPU hog
    # reaches the verdict a quiet one does); the wall clock stops only a worker held far past it (WALL_FACTOR)
    started = time.monotonic()
    job.began = started
    waited_before = run_delay_s(str(pid))
    wall_deadline = started + WALL_FACTOR * timeout_s + WALL_GRACE_S
    last_frame, waited_at_frame, waited = started, 0.0, 0.0
    next_memory = 0.0
    fds = [events, printed] + ([control] if control is not None else [])
    while job.problem is None:
        if job.status is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                job.status = status
        ready, _, _ = select.select(fds, [], [], 0 if job.status is not None else POLL_S)
        if job.status is not None and not ready:
            return
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if fd == control:
                job.problem = ("cancelled", "validation cancelled") if data else ("cancelled", "the caller went away")
            elif not data:
                fds.remove(fd)
            elif fd == printed:
                job.output(data)
            else:
                job.feed(data)
                if watch_maps and job.status is None:
                    seen = mapped_libraries(pid)
                    if seen is None:
                        job.maps_unread = True
                    else:
                        job.mapped |= seen
                last_frame, waited_at_frame = time.monotonic(), max(0.0, run_delay_s(str(pid)) - waited_before)
        now = time.monotonic()
        if job.status is None:
            waited = max(0.0, run_delay_s(str(pid)) - waited_before)
        job.own_s = now - started - waited
        job.wall_s = now - started
        if job.own_s > timeout_s or now > wall_deadline:
            job.problem = ("timeout", f"no result within {timeout_s:g} s")
        elif quiet_s is not None and now - last_frame - (waited - waited_at_frame) > quiet_s:
            job.problem = ("timeout", f"stopped from outside after {quiet_s:g} s without a result")
        elif memory_mb and now >= next_memory:
            next_memory = now + MEMORY_EVERY_S
            used = memory_in_use([p for p in descendants(os.getpid()) if p not in template_pids()])
            if used > memory_mb << 20:
                job.problem = ("memory", f"the block used {used >> 20} MB, over the limit of {memory_mb} MB")


# Block processes: none is a fork of the judge. The judge starts the **zygote** with exec (`judge.py --zygote`: a fresh
# interpreter that never receives a job), and every block process is forked from it or from a **template** it forked
# (a warm process per role and what that role's workers import first: the original's package, the copy's installed
# imports). A worker gets its descriptors from the judge through the zygote or template, and its job on its own pipe,
# written by the judge once it runs: no process a block runs in ever held the other side, a verdict, or another job.
# A template runs only its side's imports and is stopped (SIGSTOP) but while it forks, so no code of one side runs
# while the other side's worker does. Every one is forked through a process that exits at once, so it is the judge's
# child (a subreaper), supervised and killed as any worker.
class Forkers:
    """The supervisor's state, one object per judge: the zygote, the templates (the most recently used last), the
    versions the zygote reported, the templates that could not be made (their workers are forked from the zygote),
    and the pids this judge reaped without asking for them (never signalled again)."""

    def __init__(self) -> None:
        self.zygote: Optional[Forker] = None
        self.templates: "OrderedDict[str, Forker]" = OrderedDict()
        self.versions: Dict[str, str] = {}
        self.refused: Set[str] = set()
        self.reaped: Set[int] = set()


FORKERS = Forkers()


MAX_TEMPLATES = 4


START_S = 30.0  # the most a template's imports may take


ZYGOTE_S = 120.0  # the most the zygote's start (torch's import) may take


SPAWN_S = 10.0  # the most a zygote or template may take to fork a worker


LENGTH = struct.Struct("<I")


def template_pids() -> Set[int]:
    return {t.pid for t in FORKERS.templates.values()} | ({FORKERS.zygote.pid} if FORKERS.zygote is not None else set())


class Forker:
    """The zygote or a template: a child of the judge that forks block processes on order, over its socket. A
    template is kept stopped between orders; the zygote, which runs no code of any block, is not."""

    def __init__(self, pid: int, sock: socket.socket, stopped: bool) -> None:
        self.pid, self.sock, self.stopped = pid, sock, stopped

    def signal(self, sig: int) -> bool:
        if self.pid in FORKERS.reaped:
            return False
        try:
            os.kill(self.pid, sig)
            return True
        except OSError:
            return False

    def usable(self) -> bool:
        state = process_state(self.pid)[0] if self.pid not in FORKERS.reaped else ""
        return state in ("T", "t") if self.stopped else state not in ("", "Z", "X", "T", "t")

    def stop(self) -> bool:
        """Stopped, with no process of its own left (what its imports started is killed): whether it is usable."""
        if not self.signal(signal.SIGSTOP):
            return False
        deadline = time.monotonic() + 2
        while process_state(self.pid)[0] not in ("T", "t"):
            if time.monotonic() > deadline or not process_state(self.pid)[0]:
                return False
            time.sleep(0.002)
        return not descendants(self.pid)

    def close(self) -> None:
        self.signal(signal.SIGKILL)
        if self.pid not in FORKERS.reaped:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        self.sock.close()

    def order(self, order: Dict[str, Any], fds: List[int]) -> int:
        """Ask for a process (`order` names what; `fds` are its descriptors): its pid, a child of the judge; 0 when
        this forker does not answer as it should."""
        body = json.dumps(order).encode("utf-8")
        answer = b""
        try:
            if self.stopped and not self.signal(signal.SIGCONT):
                return 0
            socket.send_fds(self.sock, [LENGTH.pack(len(body))], fds)
            self.sock.sendall(body)
            answer = read_line(self.sock, SPAWN_S, 32)
        except OSError:
            return 0
        finally:
            ok = self.stop() if self.stopped else not descendants(self.pid)
        pid = int(answer) if answer.strip().isdigit() else 0
        if pid and process_state(pid)[1] == os.getpid() and ok:
            return pid
        if pid:  # a process the judge cannot supervise (not its child) is stopped at once
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
        return 0


def zygote() -> Optional[Forker]:
    """The running zygote, started (exec'd: `judge.py --zygote`) when there is none or it died; None when it cannot
    start (the report then says why the worker did not run)."""
    known = FORKERS.zygote
    if known is not None and known.usable():
        return known
    subreaper()
    if known is not None:
        known.close()
        FORKERS.zygote = None
    ours, theirs = socket.socketpair()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
    ]
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-B", RUNNER, "--zygote", "3"],
            dict(os.environ),
            file_actions=actions,
            setsid=True,
            setsigdef=IGNORED_SIGNALS,  # the judge's deafness is not the blocks'
        )
    except OSError:
        ours.close()
        theirs.close()
        return None
    theirs.close()
    forker = Forker(pid, ours, stopped=False)
    answer = read_line(ours, ZYGOTE_S)
    if not answer.startswith(b"ready ") or not answer.endswith(b"\n"):
        forker.close()
        return None
    try:
        FORKERS.versions.update({k: str(v) for k, v in json.loads(answer[6:]).items()})
    except (ValueError, AttributeError):
        forker.close()
        return None
    FORKERS.zygote = forker
    return forker


def drop(template: Forker) -> None:
    """A template that did not answer as it should: closed, and forgotten."""
    for key, known in list(FORKERS.templates.items()):
        if known is template:
            del FORKERS.templates[key]
    template.close()
    kill_descendants()


def template_for(role: str, spec: Optional[Dict[str, Any]], memory_mb: int, within_s: float) -> Optional[Forker]:
    """The running template of `role` and `spec`, forked by the zygote (its imports within `within_s`) when there is
    none; None without a spec, or when its imports failed before."""
    if spec is None:
        return None
    key = json.dumps([role, spec, memory_mb], sort_keys=True)
    known = FORKERS.templates.pop(key, None)
    if known is not None:
        if known.usable():
            FORKERS.templates[key] = known
            return known
        known.close()
    if key in FORKERS.refused:
        return None
    base = zygote()
    if base is None:
        return None
    while len(FORKERS.templates) >= MAX_TEMPLATES:
        FORKERS.templates.popitem(last=False)[1].close()
    ours, theirs = socket.socketpair()
    pid = base.order({"make": "template", "role": role, "spec": spec, "memory_mb": memory_mb}, [theirs.fileno()])
    theirs.close()
    if not pid:
        ours.close()
        return None
    template = Forker(pid, ours, stopped=True)
    answer = read_line(ours, min(START_S, within_s), 16)
    if answer == b"ready\n" and template.stop():
        FORKERS.templates[key] = template
        return template
    # imports that failed, hung or left a process behind would do the same again: this judge's workers of that
    # template are forked from the zygote from now on
    template.close()
    kill_descendants()
    FORKERS.refused.add(key)
    return None


def start_worker(forker: Forker, job_spec: bytes, events_w: int, printed_w: int) -> int:
    """A worker forked by `forker`, its job written on its own pipe once it runs (by a thread: the worker reads it
    whole before anything else); its pid, 0 when none was made."""
    job_r, job_w = os.pipe()
    pid = forker.order({"make": "worker"}, [events_w, printed_w, job_r])
    os.close(job_r)
    if not pid:
        os.close(job_w)
        return 0

    def write() -> None:
        try:
            with open(job_w, "wb") as fh:
                fh.write(job_spec)
        except OSError:  # the worker died before reading: its end says so
            pass

    threading.Thread(target=write, daemon=True).start()
    return pid


def run_worker(
    role: str,
    request: Dict[str, Any],
    memory_mb: int,
    timeout_s: float,
    control: Optional[int],
    template: Optional[Dict[str, Any]] = None,
    quiet_s: Optional[float] = None,
    watch_maps: bool = False,
) -> WorkerRun:
    """A worker for `role` with its two pipes, forked by the template of `role` and what `template` names to import
    when one can be had, else by the zygote; supervised, then whatever is left of it killed."""
    job = WorkerRun()
    try:
        job_spec = json.dumps({"role": role, "request": request, "memory_mb": memory_mb, "cwd": os.getcwd(), "home": os.environ.get("HOME", "")}).encode(
            "utf-8"
        )
    except (TypeError, ValueError) as exc:
        job.problem = ("interpreter", f"a request that is not plain data: {exc}")
        return job
    events_r, events_w = os.pipe()
    printed_r, printed_w = os.pipe()
    warm = template_for(role, template, memory_mb, timeout_s / 2)
    pid = start_worker(warm, job_spec, events_w, printed_w) if warm is not None else 0
    if warm is not None and not pid:
        drop(warm)
        # whatever the template's worker wrote or holds of these pipes is not read: fresh ones
        for fd in (events_r, events_w, printed_r, printed_w):
            os.close(fd)
        events_r, events_w = os.pipe()
        printed_r, printed_w = os.pipe()
    if not pid:
        base = zygote()
        pid = start_worker(base, job_spec, events_w, printed_w) if base is not None else 0
    os.close(events_w)
    os.close(printed_w)
    if not pid:
        os.close(events_r)
        os.close(printed_r)
        job.problem = ("interpreter", "the judge could not start a worker (its zygote did not start or answer)")
        return job
    try:
        supervise(job, pid, events_r, printed_r, control, timeout_s, memory_mb, quiet_s, watch_maps)
    finally:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        kill_descendants()
        if job.status is None:
            try:
                job.status = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                pass
        os.close(events_r)
        os.close(printed_r)
    return job


def tail_text(job: WorkerRun) -> str:
    return job.tail.decode("utf-8", "replace")


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "it printed nothing"
