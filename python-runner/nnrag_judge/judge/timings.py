"""Judge side: where a job's seconds went, from the judge's own clock (when each of a worker's frames arrived, how long
the worker ran: `supervise.WorkerRun.stamps`, `wall_s`) and what the worker says it spent building and driving
forward (`frames.spent_of`). Informative only: no verdict reads it, and a limit counts the workers' own time
(`supervise.supervise`), never these figures."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..wire.frames import spent_of
from ..wire.protocol import CLASS, FAILURE, FORWARD, ORIGIN, PLAN, PROBED, REACHED, kind_of


def arrivals(job: Any) -> List[Tuple[Optional[str], Dict[str, Any], float]]:
    """Each frame's kind, header and when it arrived (seconds after the worker started; 0 for a replayed run)."""
    stamps: List[float] = list(getattr(job, "stamps", []) or [])
    out = []
    for i, (header, _blob) in enumerate(job.frames):
        out.append((kind_of(header), header, stamps[i] if i < len(stamps) else 0.0))
    return out


def first(seen: List[Tuple[Optional[str], Dict[str, Any], float]], kind: str, value: Any = None) -> Optional[float]:
    """When the first frame of `kind` (holding `value`, when given) arrived; None when none did."""
    for k, header, at in seen:
        if k == kind and (value is None or header.get(kind) == value):
            return at
    return None


def between(start: Optional[float], end: Optional[float]) -> Optional[float]:
    return round(max(0.0, end - start), 3) if start is not None and end is not None else None


def side_timings(job: Any, role: str) -> Dict[str, Any]:
    """One worker's run: its wall and own seconds, and by step (`import`: to the class found or the original's origin
    checked; `search`: building the argument sets and driving forward until one ran or none did, split into
    `build` and `forward` as the worker counted them; `probes`: the comparison's probes, to their end; `exit`: from
    its last frame to its end). Steps the run never reached are left out."""
    seen = arrivals(job)
    wall = round(float(getattr(job, "wall_s", 0.0) or 0.0), 3)
    out: Dict[str, Any] = {"seconds": wall, "own_seconds": round(float(getattr(job, "own_s", 0.0) or 0.0), 3)}
    imported = first(seen, CLASS if role == "copy" else ORIGIN)
    ended = first(seen, FORWARD) if role == "copy" else first(seen, REACHED)
    failed = first(seen, FAILURE)
    searched = ended if ended is not None else failed
    steps: Dict[str, float] = {}
    for name, value in (("import", imported), ("search", between(imported, searched))):
        if value is not None:
            steps[name] = round(value, 3)
    for _kind, header, _at in seen:
        if _kind in (FORWARD, REACHED, FAILURE):
            for step, seconds in spent_of(header).items():
                steps[step] = seconds
    begun = ended if role == "copy" else first(seen, PLAN)
    probed = first(seen, PROBED)
    if begun is not None and probed is not None:
        steps["probes"] = round(probed - begun, 3)
    last = seen[-1][2] if seen else None
    if last is not None and wall:
        steps["exit"] = round(max(0.0, wall - last), 3)
    out["steps"] = steps
    return out
