"""Judge side: forking a worker and watching it. The worker gets its own pipes (frames on one, everything it prints on
the other), a fresh private copy of the worker modules (none in `sys.modules`), and a fresh folder; the judge reads
until the worker ends, the time or memory limit is hit or the caller cancels, then kills everything it left."""
from __future__ import annotations

import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import sys
import time
import types
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Set, Tuple

from .protocol import FRAME, MAX_HEADER, MAX_VALUES

OUTPUT_CAP = 16 << 20  # bytes the block may print before it is stopped
OUTPUT_TAIL = 4000
POLL_S = 0.1
MEMORY_EVERY_S = 0.25
HERE = os.path.dirname(os.path.abspath(__file__))
# the modules a worker runs, in the order they import each other; read once, loaded afresh in each worker
WORKER_MODULES = ("protocol", "loading", "arguments", "inputs", "evidence", "recipe", "observe", "repair", "worker")
SOURCES: Dict[str, Tuple[str, str]] = {}
for _name in WORKER_MODULES:
    with open(os.path.join(HERE, f"{_name}.py"), encoding="utf-8") as _fh:
        SOURCES[_name] = (os.path.join(HERE, f"{_name}.py"), _fh.read())


def not_dumpable() -> None:
    """Make the judge untraceable and its /proc entries (fds, memory, environment) unreadable by processes without
    privileges over it: the workers and what they start cannot reach the verdict pipe. A subreaper too, so what a
    block leaves behind stays the judge's to kill."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what the block leaves behind stays ours to kill
    except (OSError, AttributeError, ImportError):
        pass


def descendants(root: int) -> List[int]:
    """Every process below `root`, from /proc (children found through their parents)."""
    parents: Dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: List[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.append(child)
                frontier.append(child)
    return found


def kill_descendants() -> None:
    """Kill and reap everything this process started (and, as a subreaper, what they left behind), but its templates
    (stopped; anything they started is killed)."""
    for _ in range(50):
        pids = [p for p in descendants(os.getpid()) if p not in template_pids()]
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
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.01)
            except ChildProcessError:
                break


def memory_in_use(pids: List[int]) -> int:
    """Bytes of anonymous and shared memory the processes hold (RssAnon + RssShmem: shared mappings count)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return total


class Job:
    """One validation as the judge sees it: what the worker said, what it printed, how it ended."""

    def __init__(self) -> None:
        self.frames: List[Tuple[Dict[str, Any], bytes]] = []
        self.buffer = b""
        self.tail = b""
        self.printed = 0
        self.problem: Optional[Tuple[str, str]] = None
        self.status: Optional[int] = None
        self.received = 0

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
                header = json.loads(self.buffer[FRAME.size:FRAME.size + head_len].decode("utf-8"))
                if not isinstance(header, dict):
                    raise ValueError("not an object")
            except ValueError:
                self.problem = ("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
                return
            self.frames.append((header, bytes(self.buffer[FRAME.size + head_len:end])))
            self.buffer = self.buffer[end:]

    def output(self, data: bytes) -> None:
        self.printed += len(data)
        self.tail = (self.tail + data)[-OUTPUT_TAIL:]
        if self.printed > OUTPUT_CAP:
            self.problem = ("output", f"the block printed more than {OUTPUT_CAP >> 20} MB")


def supervise(job: Job, pid: int, events: int, printed: int, control: Optional[int], timeout_s: float,
              memory_mb: int) -> None:
    """Read the worker's frames and output until it ends, the time or memory limit is hit, or the caller goes away
    (end of `control`) or cancels (a line on it)."""
    deadline = time.monotonic() + timeout_s
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
        now = time.monotonic()
        if now > deadline:
            job.problem = ("timeout", f"no result within {timeout_s:g} s")
        elif memory_mb and now >= next_memory:
            next_memory = now + MEMORY_EVERY_S
            used = memory_in_use([p for p in descendants(os.getpid()) if p not in template_pids()])
            if used > memory_mb << 20:
                job.problem = ("memory", f"the block used {used >> 20} MB, over the limit of {memory_mb} MB")


def private_worker() -> Any:
    """In a forked worker or template: the worker modules loaded afresh under a random package name, then removed
    from `sys.modules` with every module of the judge, and the runner's folder taken off the path. Returns the worker
    module (its `entry`, its `prepare`)."""
    package = "_" + os.urandom(6).hex()
    root = types.ModuleType(package)
    root.__path__ = []
    sys.modules[package] = root
    for name in WORKER_MODULES:
        path, text = SOURCES[name]
        module = types.ModuleType(f"{package}.{name}")
        module.__file__ = path
        module.__package__ = package
        sys.modules[module.__name__] = module
        exec(compile(text, path, "exec"), module.__dict__)  # noqa: S102 - our own source, read at start
    worker = sys.modules[f"{package}.worker"]
    for name in list(sys.modules):
        if name.split(".")[0] in (package, "nnrag_judge"):
            del sys.modules[name]
    top = os.path.dirname(HERE)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != top]
    return worker


def worker_stdio(events_w: int, printed_w: int) -> None:
    """In a new worker: its own session; stdin empty, stdout and stderr on the printed pipe, frames on descriptor 3,
    every other descriptor closed (the judge's verdict pipe, a template's socket)."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(printed_w, 1)
    os.dup2(printed_w, 2)
    keep = 3 if events_w == 3 else os.dup2(events_w, 3)
    os.closerange(keep + 1, 1 << 16)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")


# Templates: a warm process per role and what that role's workers import first (the original's package, the copy's
# installed imports), forked from the judge, which forks those workers. A template runs only that import (the
# original's side runs the repository's package; the copy's side, installed packages the copy imports, never the
# copy's file), closes every descriptor of the judge first, and is stopped (SIGSTOP) but while it forks: no code of
# one side runs while the other side's worker does. Its worker is forked through a process that exits at once, so it
# is the judge's child (a subreaper), supervised and killed as any worker.
TEMPLATES: "OrderedDict[str, Template]" = OrderedDict()
REFUSED: Set[str] = set()  # templates that could not be made: their workers import for themselves
MAX_TEMPLATES = 4
START_S = 30.0  # the most a template's imports may take
SPAWN_S = 10.0  # the most a template may take to fork a worker
LENGTH = struct.Struct("<I")


def template_pids() -> Set[int]:
    return {t.pid for t in TEMPLATES.values()}


def process_state(pid: int) -> Tuple[str, int]:
    """A process's state letter and its parent, from /proc ('' and 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1])
    except (OSError, ValueError, IndexError):
        return "", 0


class Template:
    """A started template: its pid, a pidfd (signals reach it and no other process of a reused pid), its socket."""

    def __init__(self, pid: int, pidfd: int, sock: socket.socket) -> None:
        self.pid, self.pidfd, self.sock = pid, pidfd, sock

    def signal(self, sig: int) -> bool:
        try:
            signal.pidfd_send_signal(self.pidfd, sig)
            return True
        except OSError:
            return False

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
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.pidfd)
        self.sock.close()

    def spawn(self, job: Dict[str, Any], events_w: int, printed_w: int) -> Optional[int]:
        """A worker forked from this template for `job`, its pid (a child of the judge); None when the template does
        not answer as it should (it is then closed)."""
        try:
            body = json.dumps(job).encode("utf-8")
        except (TypeError, ValueError):  # a request that is not plain data: the judge forks the worker itself
            return None
        answer = b""
        try:
            if not self.signal(signal.SIGCONT):
                return None
            socket.send_fds(self.sock, [LENGTH.pack(len(body))], [events_w, printed_w])
            self.sock.sendall(body)
            deadline = time.monotonic() + SPAWN_S
            while not answer.endswith(b"\n") and len(answer) < 32:
                if not select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    break
                data = self.sock.recv(32)
                if not data:
                    break
                answer += data
        except OSError:
            return None
        finally:
            usable = self.stop()
        pid = int(answer) if answer.strip().isdigit() else 0
        if pid and process_state(pid)[1] == os.getpid() and usable:
            return pid
        if pid:  # a worker the judge cannot supervise (not its child: no subreaper) is stopped at once
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
        return None


def template_main(sock_fd: int, role: str, spec: Dict[str, Any], memory_mb: int) -> None:
    """A template's whole life (never returns): the judge's descriptors closed, the imports of `spec`, then a worker
    forked per request until the socket ends."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if sock_fd != 3:
        os.dup2(sock_fd, 3)
    os.closerange(4, 1 << 16)
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: it dies with the judge
    except (OSError, AttributeError, ImportError):
        pass
    sock = socket.socket(fileno=3)
    worker = private_worker()
    try:
        worker.prepare(role, spec, memory_mb)
    except BaseException:  # noqa: BLE001 - no template: each worker imports for itself
        sock.sendall(b"refused\n")
        os._exit(0)
    sock.sendall(b"ready\n")
    while True:
        head, fds, _, _ = socket.recv_fds(sock, LENGTH.size, 2)
        if len(head) != LENGTH.size or len(fds) != 2:
            os._exit(0)
        size, body = LENGTH.unpack(head)[0], b""
        while len(body) < size:
            data = sock.recv(size - len(body))
            if not data:
                os._exit(0)
            body += data
        job = json.loads(body)
        pid_r, pid_w = os.pipe()
        middle = os.fork()
        if middle == 0:
            pid = os.fork()
            if pid == 0:
                try:
                    worker_stdio(fds[0], fds[1])
                    os.chdir(str(job["cwd"]))
                    os.environ["HOME"] = str(job["home"])
                    worker.entry(3, str(job["role"]), job["request"], int(job["memory_mb"]))
                finally:
                    os._exit(3)
            os.write(pid_w, f"{pid}\n".encode())
            os._exit(0)
        os.close(pid_w)
        pid_text = os.read(pid_r, 32)
        os.close(pid_r)
        os.waitpid(middle, 0)  # it has exited: its worker is the judge's now
        for fd in fds:
            os.close(fd)
        sock.sendall(pid_text)


def drop(template: Template) -> None:
    """A template that did not answer as it should: closed, and forgotten."""
    for key, known in list(TEMPLATES.items()):
        if known is template:
            del TEMPLATES[key]
    template.close()
    kill_descendants()


def template_for(role: str, spec: Optional[Dict[str, Any]], memory_mb: int, within_s: float) -> Optional[Template]:
    """The running template of `role` and `spec`, started (its imports within `within_s`) when there is none; None
    without a spec, where templates cannot be made (no pidfd), or when its imports failed before."""
    if spec is None or not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return None
    key = json.dumps([role, spec, memory_mb], sort_keys=True)
    known = TEMPLATES.pop(key, None)
    if known is not None:
        if process_state(known.pid)[0] in ("T", "t"):
            TEMPLATES[key] = known
            return known
        known.close()
    if key in REFUSED:
        return None
    while len(TEMPLATES) >= MAX_TEMPLATES:
        TEMPLATES.popitem(last=False)[1].close()
    ours, theirs = socket.socketpair()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            template_main(theirs.fileno(), role, spec, memory_mb)
        finally:
            os._exit(3)
    theirs.close()
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # a kernel without pidfds (before Linux 5.3): no templates
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        ours.close()
        REFUSED.add(key)
        return None
    template = Template(pid, pidfd, ours)
    answer = b""
    deadline = time.monotonic() + min(START_S, within_s)
    while not answer.endswith(b"\n"):
        if not select.select([ours], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        data = ours.recv(16)
        if not data:
            break
        answer += data
    if answer == b"ready\n" and template.stop():
        TEMPLATES[key] = template
        return template
    # imports that failed, hung or left a process behind would do the same again: this judge's workers of that
    # template import for themselves from now on
    template.close()
    kill_descendants()
    REFUSED.add(key)
    return None


def run_worker(role: str, request: Dict[str, Any], memory_mb: int, timeout_s: float, control: Optional[int],
               template: Optional[Dict[str, Any]] = None) -> Job:
    """Fork a worker for `role` with its two pipes (from the template of `role` and what `template` names to import,
    when one can be had; else from the judge), supervise it, then kill whatever is left of it."""
    started = time.monotonic()
    events_r, events_w = os.pipe()
    printed_r, printed_w = os.pipe()
    warm = template_for(role, template, memory_mb, timeout_s / 2)
    job_spec = {"role": role, "request": request, "memory_mb": memory_mb, "cwd": os.getcwd(), "home": os.environ.get("HOME", "")}
    pid = warm.spawn(job_spec, events_w, printed_w) if warm is not None else None
    if warm is not None and pid is None:
        drop(warm)
        # whatever the template's worker wrote or holds of these pipes is not read: fresh ones for the judge's fork
        for fd in (events_r, events_w, printed_r, printed_w):
            os.close(fd)
        events_r, events_w = os.pipe()
        printed_r, printed_w = os.pipe()
    if pid is None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                worker_stdio(events_w, printed_w)
                private_worker().entry(3, role, request, memory_mb)
            finally:
                os._exit(3)
    timeout_s = max(1.0, timeout_s - (time.monotonic() - started))
    os.close(events_w)
    os.close(printed_w)
    job = Job()
    try:
        supervise(job, pid, events_r, printed_r, control, timeout_s, memory_mb)
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


def empty(folder: str) -> None:
    """Remove everything inside `folder` (not the folder): what one worker left is gone before the next starts."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(folder, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


NATIVE_FOLDER = "_nnrag_native"


def project_folder(work: str, source: str, name: str) -> str:
    """A project folder of an unpredictable name made exclusively in the work folder, holding a copy of the file under
    test and the helper modules beside it. Returns the copy's path."""
    os.makedirs(work, exist_ok=True)
    while True:
        project = os.path.join(work, f"{name}-{os.urandom(4).hex()}")
        try:
            os.mkdir(project, 0o700)
            break
        except FileExistsError:
            continue
    here = os.path.dirname(source)
    for entry in os.listdir(here):
        if entry.endswith(".py") and os.path.isfile(os.path.join(here, entry)) and not os.path.islink(os.path.join(here, entry)):
            shutil.copyfile(os.path.join(here, entry), os.path.join(project, entry))
    # compiled operators built for the file (--build-native), in the folder its loader reads
    natives = os.path.join(here, NATIVE_FOLDER)
    if os.path.isdir(natives) and not os.path.islink(natives):
        os.mkdir(os.path.join(project, NATIVE_FOLDER), 0o700)
        for entry in os.listdir(natives):
            if entry.endswith(".so") and os.path.isfile(os.path.join(natives, entry)) and not os.path.islink(os.path.join(natives, entry)):
                shutil.copyfile(os.path.join(natives, entry), os.path.join(project, NATIVE_FOLDER, entry))
    return os.path.join(project, os.path.basename(source))


def tail_text(job: Job) -> str:
    return job.tail.decode("utf-8", "replace")


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "it printed nothing"




