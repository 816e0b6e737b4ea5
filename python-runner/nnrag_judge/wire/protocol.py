"""What the judge and its workers share: tiers, categories, and the frame format of the worker's channel.

A worker writes frames to its own descriptor: a big-endian header (JSON length, blob length), the JSON header, then
the blob (raw float64 values). A worker loads its own private copy of this module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
import time
from typing import Any, Callable, Dict, FrozenSet, Optional

TIERS = ["parsed", "compiled", "names-closed", "imported", "instantiated", "forward", "equivalent"]
# every category a report may carry (src/core/validate/runner.ts has the same list; a test checks)
REPORT_CATEGORIES = [
    "syntax",
    "unresolved",
    "native-extension",
    "missing-package",
    "import-error",
    "instantiate",
    "forward",
    "timeout",
    "memory",
    "interpreter",
    "tampered",
    "output",
    "differs",
    "abstract",
]
# those a worker may name in a failure frame ("error": one of its own steps failed)
CATEGORIES = set(REPORT_CATEGORIES) - {"tampered", "output", "differs"} | {"error"}

# the kinds of frame a worker sends the judge, each named by the one key its header carries (`frame` makes one,
# `kind_of` reads it; the judge handles each kind by name: judge.ORIGINAL_HANDLERS, verdict.verdict)
TIER, CLASS, FORWARD, FAILURE = "tier", "class", "forward", "failure"  # the copy's tiers, in order
PROBE, PROBED = "probe", "probed"  # either side's probes, and the end of them
PLAN, ORIGIN, UNAVAILABLE, REACHED = "plan", "origin", "unavailable", "reached"  # the original's side
OBSERVED = "observed"  # the observer's entries
FRAME_KINDS = (TIER, CLASS, FORWARD, FAILURE, PROBE, PROBED, PLAN, ORIGIN, UNAVAILABLE, REACHED, OBSERVED)

# an error that says compiled operators are not loaded in the process (torchvision's `_C` ops, a `.so` not found):
# a fact of the process, not of the block's code
NATIVE_OPS = re.compile(r"custom C\+\+ ops|Could not run '\w+::|undefined symbol|No such operator")

FRAME = struct.Struct(">II")
MAX_HEADER = 1 << 20
MAX_VALUES = 1 << 22  # float64 values a worker may send in all (32 MB)
# an observer worker's exit status when it ended between two entries to let a fresh one run the rest (observe.crowded)
HANDED_OVER = 75

# the most files and first lines a trace of the original's run reports (what a slim copy keeps is decided from it)
MAX_TRACED_FILES = 400
MAX_TRACED_LINES = 20000


class Failure(Exception):
    """A tier failed: carries the category and a message that names the cause."""

    def __init__(self, category: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.extra = extra


def frame(kind: str, value: Any, **more: Any) -> Dict[str, Any]:
    """A frame's header: its `kind` named, that kind's key holding `value`, and `more` beside it (the other keys of
    that kind)."""
    if kind not in FRAME_KINDS:
        raise ValueError(f"not a kind of frame: {kind}")
    if "kind" in more:
        raise ValueError("a frame's kind is its own key")
    return {**more, kind: value, "kind": kind}


def kind_of(header: Dict[str, Any]) -> Optional[str]:
    """The kind of a frame a worker sent: the one its header names, when it is one of FRAME_KINDS and the header holds
    that kind's key; None otherwise (not ours: the reader treats it as written by the block)."""
    kind = header.get("kind")
    return kind if isinstance(kind, str) and kind in FRAME_KINDS and kind in header else None


def sender(fd: int) -> Callable[..., None]:
    """A function that writes one frame to the judge, bound to the write and encode functions as they are now."""
    write, pack, encode = os.write, FRAME.pack, json.JSONEncoder().encode

    def send(header: Dict[str, Any], blob: bytes = b"") -> None:
        data = encode(header).encode("utf-8")
        view = memoryview(pack(len(data), len(blob)) + data + blob)
        while view:
            view = view[write(fd, view) :]

    return send


def mount_points() -> FrozenSet[str]:
    """The paths something is mounted at (/proc/self/mountinfo's fifth field, its escapes read back)."""
    try:
        with open("/proc/self/mountinfo", "r", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return frozenset()
    points = set()
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return frozenset(points)


def remove_tree(top: str, keep: FrozenSet[str] = frozenset()) -> None:
    """Remove a folder and all in it, its folders made writable first (a folder a block made read-only, mode 0500,
    would otherwise keep what is in it); links are removed, never followed; a folder in `keep` (a mount point: a
    repository shown under /tmp) and what is in it stay, and so do the folders above it. Shared by the judge and its
    workers."""
    try:
        if top in keep:
            return
        if os.path.islink(top) or not os.path.isdir(top):
            os.unlink(top)
            return
        os.chmod(top, stat.S_IRWXU)
    except OSError:
        pass
    if not keep:
        for root, dirs, _ in os.walk(top):
            for name in dirs:
                path = os.path.join(root, name)
                try:
                    if not os.path.islink(path):
                        os.chmod(path, stat.S_IRWXU)
                except OSError:
                    pass
        shutil.rmtree(top, ignore_errors=True)
        return
    try:
        entries = os.listdir(top)
    except OSError:
        return
    for entry in entries:
        remove_tree(os.path.join(top, entry), keep)
    try:
        os.rmdir(top)
    except OSError:
        pass


def run_delay_s(pid: str = "self") -> float:
    """Seconds the process's main thread has waited for a CPU (the second field of /proc/PID/schedstat): the part of
    its wall time that the machine's load, not its own work, took. 0 where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def steady() -> float:
    """A clock for limits that do not depend on the machine's load: monotonic time less the time this process waited
    for a CPU. A budget read with it lets the same work happen under load as on a quiet machine."""
    return time.monotonic() - run_delay_s()
