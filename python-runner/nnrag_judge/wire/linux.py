"""What every process of the judge's does to itself through `prctl`, written once for both rooms: the judge imports it,
the zygote runs it by path (`runpy`: it imports nothing of the package). Each is a no-op where the call is missing."""

from __future__ import annotations

import signal


def prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def not_dumpable() -> None:
    """No process of the same user may read or write this one's memory or descriptors (/proc, ptrace): inherited by
    every fork."""
    prctl(4, 0)  # PR_SET_DUMPABLE


def subreaper() -> None:
    """What a process started below this one leaves behind is this one's child, to supervise and kill."""
    prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def dies_with_parent() -> None:
    prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
