"""The zygote: the one process every block process descends from. The judge starts it with exec (`judge.py
--zygote`: a fresh interpreter, so nothing of the judge's memory is in it), and it never receives a job. It imports
torch once, loads the worker modules under a random package name, and then only forks, on the judge's order:

- a **worker**: given three descriptors (frames, printed output, and the job's pipe), it reads its job from the pipe
  (the judge writes it there once the worker runs, so the zygote never holds it), then runs `worker.entry`;
- a **template**: given a socket, it imports what the workers of one side import first (`worker.prepare`) and then
  forks workers as the zygote does (never templates).

Each is forked through a process that exits at once, so it is the judge's child (the judge is a subreaper) and is
supervised, limited and killed as any. Run by `runpy` from judge.py, so no module of the judge is imported here."""

from __future__ import annotations

import io
import json
import os
import runpy
import socket
import struct
import sys
import time
import types
from typing import Any, Callable, Dict, List

# the package folder (nnrag_judge), above this file's room
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the modules a worker runs (its room, `worker`, and what it shares with the judge, `wire`), in the order they import
# each other
WORKER_MODULES = (
    "wire.protocol",
    "worker.context",
    "worker.loading",
    "worker.arguments",
    "worker.variants",
    "worker.inputs",
    "worker.inputs_documented",
    "worker.inputs_layers",
    "worker.inputs_graph",
    "worker.inputs_tasks",
    "worker.evidence",
    "worker.candidates",
    "worker.recipe",
    "worker.pytest_like",
    "worker.entries",
    "worker.observe",
    "worker.repair",
    "worker.building",
    "worker.forward",
    "worker.probing",
    "worker.worker",
)
LENGTH = struct.Struct("<I")
MAX_ORDER = 1 << 16  # an order names what to fork, never a job
MAX_JOB = 64 << 20


# the prctl calls every process of the judge's makes (`wire/linux.py`), run by path: nothing of the package is imported
LINUX = runpy.run_path(os.path.join(PACKAGE_DIR, "wire", "linux.py"))
not_dumpable, dies_with_parent = LINUX["not_dumpable"], LINUX["dies_with_parent"]


def private_worker() -> Any:
    """The worker modules loaded under a random package name, then removed from `sys.modules` (a block finds no
    module that names the tool), and the runner's folder taken off the path. Returns the worker module."""
    package = "_" + os.urandom(6).hex()
    # the package and its two rooms, as folders of nothing: each module is put in `sys.modules` by hand
    for holder_name in [package] + sorted({f"{package}.{name.split('.')[0]}" for name in WORKER_MODULES}):
        holder = types.ModuleType(holder_name)
        holder.__path__ = []
        sys.modules[holder.__name__] = holder
    for name in WORKER_MODULES:
        room, base = name.split(".")
        path = os.path.join(PACKAGE_DIR, room, f"{base}.py")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        module = types.ModuleType(f"{package}.{name}")
        module.__file__ = path
        module.__package__ = f"{package}.{room}"
        sys.modules[module.__name__] = module
        exec(compile(text, path, "exec"), module.__dict__)  # noqa: S102 - our own source
    worker = sys.modules[f"{package}.worker.worker"]
    for name in list(sys.modules):
        if name.split(".")[0] in (package, "nnrag_judge"):
            del sys.modules[name]
    top = os.path.dirname(PACKAGE_DIR)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != top]
    return worker


def warm_torch() -> Dict[str, str]:
    """torch imported once (a trusted import, before any block's code), with what every worker imports when it
    builds a block: from torch 2.1 on, `use_deterministic_algorithms` imports the compiler's configuration, about a
    second in each fresh worker. Returns the versions a kept original's run depends on."""
    torch = None
    try:
        import torch  # type: ignore[no-redef]
        import torch.nn

        if hasattr(getattr(torch, "utils", None), "deterministic"):
            import torch._inductor.config
    except Exception:  # noqa: BLE001, S110 - a torch-less interpreter still serves (and workers report it)
        pass
    return {"python": sys.version, "torch": str(getattr(torch, "__version__", "none"))}


def read_all(fd: int, cap: int) -> bytes:
    data = bytearray()
    while len(data) <= cap:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def worker_stdio(events_w: int, printed_w: int) -> None:
    """In a new worker: its own session; stdin empty, stdout and stderr on the printed pipe, frames on descriptor 3,
    every other descriptor closed (the zygote's or a template's socket)."""
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


def become_worker(worker: Any, fds: List[int]) -> None:
    """A forked worker: its job read from its own pipe (written by the judge after the fork), then its whole life."""
    job = json.loads(read_all(fds[2], MAX_JOB))
    os.close(fds[2])
    worker_stdio(fds[0], fds[1])
    os.chdir(str(job["cwd"]))
    os.environ["HOME"] = str(job["home"])
    worker.entry(3, str(job["role"]), job["request"], int(job["memory_mb"]))


def detached(run: Callable[[], None]) -> int:
    """`run` in a process forked through one that exits at once (so it is the judge's child); its pid."""
    pid_r, pid_w = os.pipe()
    sys.stdout.flush()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(pid_r)
            pid = os.fork()
            if pid == 0:
                os.close(pid_w)
                try:
                    run()
                finally:
                    os._exit(3)
            os.write(pid_w, f"{pid}\n".encode())
        finally:
            os._exit(0)
    os.close(pid_w)
    text = os.read(pid_r, 32)
    os.close(pid_r)
    os.waitpid(middle, 0)
    return int(text) if text.strip().isdigit() else 0


def orders(sock: socket.socket) -> Any:
    """The judge's orders on `sock`: (order, descriptors) until the socket ends."""
    while True:
        head, fds, _, _ = socket.recv_fds(sock, LENGTH.size, 3)
        if len(head) != LENGTH.size:
            return
        size, body = LENGTH.unpack(head)[0], b""
        if size > MAX_ORDER:
            return
        while len(body) < size:
            data = sock.recv(size - len(body))
            if not data:
                return
            body += data
        yield json.loads(body), fds


def fork_on_order(sock: socket.socket, worker: Any, templates: bool) -> None:
    """Fork what each order asks (a worker; a template where `templates`) and answer its pid (0: not made)."""
    for order, fds in orders(sock):
        pid = 0
        if order.get("make") == "worker" and len(fds) == 3:
            pid = detached(lambda: become_worker(worker, fds))
        elif templates and order.get("make") == "template" and len(fds) == 1:
            role, spec, memory_mb = str(order["role"]), order["spec"], int(order["memory_mb"])
            pid = detached(lambda: template_main(fds[0], role, spec, memory_mb, worker))
        for fd in fds:
            os.close(fd)
        sock.sendall(f"{pid}\n".encode())
    os._exit(0)


def settle(sock_fd: int) -> socket.socket:
    """A forked template's start: its socket on descriptor 3, every other descriptor closed (the zygote's socket
    among them), output to nowhere, and death with the judge once it is the judge's child."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if sock_fd != 3:
        os.dup2(sock_fd, 3)
    os.closerange(4, 1 << 16)
    sys.stdout = sys.stderr = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    deadline = time.monotonic() + 2
    while os.getppid() != JUDGE and time.monotonic() < deadline:  # the middle process is exiting
        time.sleep(0.001)
    dies_with_parent()
    if os.getppid() != JUDGE:
        os._exit(0)
    return socket.socket(fileno=3)


def template_main(sock_fd: int, role: str, spec: Dict[str, Any], memory_mb: int, worker: Any) -> None:
    """A template's whole life (never returns): what `spec` imports, under a worker's limits, then a worker forked per
    order until the socket ends."""
    sock = settle(sock_fd)
    try:
        worker.prepare(role, spec, memory_mb)
    except BaseException:  # noqa: BLE001 - no template: each worker is forked from the zygote
        sock.sendall(b"refused\n")
        os._exit(0)
    sock.sendall(b"ready\n")
    fork_on_order(sock, worker, templates=False)


JUDGE = os.getppid()


def main(sock_fd: int) -> None:
    not_dumpable()
    dies_with_parent()
    os.closerange(max(sock_fd, 2) + 1, 1 << 16)
    sock = socket.socket(fileno=sock_fd)
    versions = warm_torch()
    worker = private_worker()
    sock.sendall(b"ready " + json.dumps(versions).encode() + b"\n")
    fork_on_order(sock, worker, templates=True)


if __name__ == "__zygote__":
    main(int(sys.argv[2]))
