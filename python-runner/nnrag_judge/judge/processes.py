"""Judge side: what the supervisor reads of processes (their descendants, state and memory in use, from /proc) and asks
of the kernel for itself (not dumpable, reaper of its orphans), and one bounded line from a pipe."""

from __future__ import annotations

import os
import signal
import select
import socket
import time
from typing import Dict, List, Optional, Set, Tuple

from ..wire import linux


# signals a process of the same user may send that would stop or end the judge: it ignores them (its caller stops it
# with SIGKILL, and cancels a job with a line on its control pipe); the zygote gets them back at their defaults
IGNORED_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGXCPU")
    if hasattr(signal, name)
)


def deaf_to_blocks() -> None:
    """The judge ignores every signal a block could send it to stop it (SIGKILL and SIGSTOP are refused to a block
    by the PID namespace in bubblewrap, where the judge is its init)."""
    for sig in IGNORED_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass


def not_dumpable() -> None:
    """Make the judge untraceable and its /proc entries (fds, memory, environment) unreadable by processes without
    privileges over it: the workers and what they start cannot reach the verdict pipe. A subreaper too, so what a
    block leaves behind stays the judge's to kill."""
    linux.not_dumpable()
    linux.subreaper()
    deaf_to_blocks()


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
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2 :].split()[1])
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


def mapped_libraries(pid: int) -> Optional[Set[str]]:
    """The shared libraries mapped into a process, as its `/proc/PID/maps` names them (read by the judge: what the
    process says of itself is not asked); None when they cannot be read (a process that made itself undumpable)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            text = fh.read(64 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    found: Set[str] = set()
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
            found.add(parts[5].removesuffix(" (deleted)"))
    return found


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


def process_state(pid: int) -> Tuple[str, int]:
    """A process's state letter and its parent, from /proc ('' and 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1])
    except (OSError, ValueError, IndexError):
        return "", 0


def read_line(sock: socket.socket, within_s: float, cap: int = 1 << 16) -> bytes:
    """One line from `sock` (without waiting past `within_s`); what came when it did not come whole."""
    answer = b""
    deadline = time.monotonic() + within_s
    while not answer.endswith(b"\n") and len(answer) < cap:
        if not select.select([sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        data = sock.recv(cap)
        if not data:
            break
        answer += data
    return answer
