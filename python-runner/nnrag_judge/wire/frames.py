"""Judge side: the frames a worker sends, as types. `read(header, blob)` makes each header the judge received into one
variant, checking the shape of what its kind carries; a header that is not one of ours (no kind, an unknown kind, a
value of the wrong type) is `NotOurs`, which the reader of the copy's side takes for the block writing to the
channel. The workers make headers with `protocol.frame`; the readers (verdict.py, judge.read_original, observe)
dispatch on these types through one table each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from .protocol import CLASS, FAILURE, FORWARD, OBSERVED, ORIGIN, PLAN, PROBE, PROBED, REACHED, TIER, UNAVAILABLE, kind_of

# what an "instantiated" tier frame may say of how the block was built (copied into the report)
BUILT = ("args", "kwargs", "builder", "inside", "recipe", "observed")


@dataclass(frozen=True)
class Tier:
    """The copy reached a tier; "instantiated" says how it was built (`built`: BUILT's keys it carried)."""

    tier: Any
    built: Dict[str, Any]


@dataclass(frozen=True)
class ClassNamed:
    """The class the copy's worker found, and the file it came from."""

    name: str
    source: Optional[str]


@dataclass(frozen=True)
class Forward:
    """The copy's forward ran: its output's description and the values sent."""

    body: Dict[str, Any]
    values: bytes


@dataclass(frozen=True)
class Failed:
    """A worker's step failed: the category it names and the failure's fields."""

    body: Dict[str, Any]


@dataclass(frozen=True)
class Probe:
    """One probe of the comparison, either side."""

    body: Dict[str, Any]
    values: bytes


@dataclass(frozen=True)
class Probed:
    """The end of a side's probes: the variants done (or why none), the lines that ran."""

    body: Dict[str, Any]


@dataclass(frozen=True)
class Plan:
    """The original's plan of the comparison, and the compiled libraries its process had loaded (`compiled`: paths)."""

    plan: Dict[str, Any]
    compiled: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Origin:
    """Where the original's class came from."""

    origin: Dict[str, Any]


@dataclass(frozen=True)
class Unavailable:
    """Why the original cannot be compared."""

    reason: str


@dataclass(frozen=True)
class Reached:
    """How far the original got, and the error that stopped it."""

    tier: str
    error: Any


@dataclass(frozen=True)
class Observed:
    """One entry the observer ran, and what it saw."""

    record: Dict[str, Any]


@dataclass(frozen=True)
class NotOurs:
    """A header no worker of ours sends (of a known kind with a value of the wrong type, or of none)."""

    header: Dict[str, Any]


Frame = Union[Tier, ClassNamed, Forward, Failed, Probe, Probed, Plan, Origin, Unavailable, Reached, Observed, NotOurs]


def compiled_of(header: Dict[str, Any]) -> List[str]:
    """The compiled libraries a plan's header names (paths; anything else left out)."""
    listed = header.get("compiled")
    return [c[:4096] for c in listed[:256] if isinstance(c, str)] if isinstance(listed, list) else []


def dict_valued(make: Callable[[Dict[str, Any], Any, bytes], Frame]) -> Callable[[Dict[str, Any], Any, bytes], Frame]:
    """A reader for a kind whose value is an object: anything else is NotOurs."""
    return lambda header, value, blob: make(header, value, blob) if isinstance(value, dict) else NotOurs(header)


READERS: Dict[str, Callable[[Dict[str, Any], Any, bytes], Frame]] = {
    TIER: lambda h, v, _b: Tier(v, {k: h[k] for k in BUILT if k in h}),
    CLASS: lambda h, v, _b: ClassNamed(v[:200], h.get("source") if isinstance(h.get("source"), str) else None) if isinstance(v, str) else NotOurs(h),
    FORWARD: dict_valued(lambda _h, v, b: Forward(v, b)),
    FAILURE: dict_valued(lambda _h, v, _b: Failed(v)),
    PROBE: dict_valued(lambda _h, v, b: Probe(v, b)),
    PROBED: dict_valued(lambda _h, v, _b: Probed(v)),
    PLAN: dict_valued(lambda h, v, _b: Plan(v, compiled_of(h))),
    ORIGIN: dict_valued(lambda _h, v, _b: Origin(v)),
    UNAVAILABLE: lambda _h, v, _b: Unavailable(str(v)[:600]),
    REACHED: lambda h, v, _b: Reached(str(v), h.get("error")),
    OBSERVED: lambda h, v, _b: Observed(v) if isinstance(v, dict) and isinstance(v.get("entry"), str) else NotOurs(h),
}


def read(header: Dict[str, Any], blob: bytes) -> Frame:
    """The frame a header and its blob make (protocol.kind_of names its kind)."""
    kind = kind_of(header)
    return NotOurs(header) if kind is None else READERS[kind](header, header[kind], blob)


# the steps a worker may say it spent its own seconds on (context.JobContext.spent)
SPENT_STEPS = ("build", "forward")


def spent_of(header: Dict[str, Any]) -> Dict[str, float]:
    """The worker's own seconds by step that a frame's header carries (`spent`), those of SPENT_STEPS that are
    numbers in a sane range; informative only (a worker could say anything), so anything else is left out."""
    told = header.get("spent")
    if not isinstance(told, dict):
        return {}
    out: Dict[str, float] = {}
    for step in SPENT_STEPS:
        value = told.get(step)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
            out[step] = round(float(value), 3)
    return out
