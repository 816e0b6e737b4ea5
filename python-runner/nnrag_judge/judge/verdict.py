"""Judge side: the copy's tiers from its worker's frames. Tiers must come in order; only a forward frame whose
tensors the judge checked, from a worker that then ended normally, makes the block validated. Anything malformed is
`tampered`."""

from __future__ import annotations

import json
import math
import os
from array import array
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..wire.frames import ClassNamed, Failed, Forward, Probe, Probed, Tier
from ..wire.frames import read as read_frame
from ..wire.protocol import CATEGORIES, MAX_VALUES, Failure
from ..wire.reports import Report
from .supervise import WorkerRun, last_line, tail_text


TENSOR_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
    "float",
    "double",
    "half",
    "long",
    "int",
    "short",
    "cfloat",
    "cdouble",
}


def checked_tensors(entries: Any, values: bytes, limit: int = MAX_VALUES) -> Tuple[List[List[int]], bool, int]:
    """The tensors of a forward frame as the judge reads them: shapes, whether every value sent is finite, and how
    many values were checked. Raises ValueError on anything malformed."""
    if not isinstance(entries, list):
        raise ValueError("tensors is not a list")
    if len(values) % 8:
        raise ValueError("values are not float64")
    data = array("d")
    data.frombytes(values)
    offset = 0
    shapes_: List[List[int]] = []
    finite = True
    for e in entries:
        if not isinstance(e, dict) or e.get("dtype") not in TENSOR_DTYPES:
            raise ValueError("a tensor without a known dtype")
        shape, count = e.get("shape"), e.get("count")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
            raise ValueError("a tensor without a shape")
        numel = 1
        for d in shape:
            numel *= d
        if str(e["dtype"]).startswith("complex") or e["dtype"] in ("cfloat", "cdouble"):
            numel *= 2
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= numel or offset + count > len(data):
            raise ValueError("a tensor whose values were not sent")
        if count < numel and offset + count < limit:
            raise ValueError("a tensor cut short")
        if finite and not all(math.isfinite(v) for v in data[offset : offset + count]):
            finite = False
        offset += count
        shapes_.append(shape)
    if offset != len(data):
        raise ValueError("values that belong to no tensor")
    return shapes_, finite, offset


def with_shapes(structure: Any, shapes_: List[List[int]], depth: int = 0) -> Any:
    """The output's structure with each {"$t": i} replaced by the shape the judge checked."""
    if depth > 8:
        raise ValueError("structure too deep")
    if isinstance(structure, dict):
        if set(structure) == {"$t"}:
            index = structure["$t"]
            if not isinstance(index, int) or not 0 <= index < len(shapes_):
                raise ValueError("a tensor reference out of range")
            return shapes_[index]
        return {str(k): with_shapes(v, shapes_, depth + 1) for k, v in list(structure.items())[:16]}
    if isinstance(structure, list):
        return [with_shapes(v, shapes_, depth + 1) for v in structure[:16]]
    if isinstance(structure, str):
        return structure[:80]
    raise ValueError("an output structure that is not ours")


class CopyResult:
    """What the copy's worker established beyond the tiers: its probes, and whether they finished."""

    def __init__(self) -> None:
        self.probes: List[Tuple[Dict[str, Any], bytes]] = []
        self.probed: Optional[Dict[str, Any]] = None
        self.unfinished: Optional[str] = None
        self.source: Optional[str] = None


class CopyReading:
    """The copy's frames read in order into the report: its tiers, its class, a failure or its forward, then (after
    the forward) its probes and their end. Nothing may come after the last."""

    ORDER = ["names-closed", "imported", "instantiated"]

    def __init__(self, report: Report, reach: Callable[[str], None]) -> None:
        self.report, self.reach = report, reach
        self.failure: Optional[Dict[str, Any]] = None
        self.forward: Optional[Forward] = None
        self.result = CopyResult()

    def on_tier(self, frame: Tier) -> None:
        tier, now = frame.tier, self.report.tier
        # each argument set that builds is announced: "instantiated" may come again after a forward that failed
        again = tier == "instantiated" and now == "instantiated"
        if tier not in self.ORDER or (self.ORDER.index(tier) != (self.ORDER.index(now) if now in self.ORDER else -9) + 1 and not again):
            raise Failure("tampered", f"the block wrote to the validator's channel (tier {str(tier)[:40]!r} out of order)")
        if tier == "instantiated":
            for key, value in frame.built.items():
                setattr(self.report, key, value)
        self.reach(tier)

    def on_class(self, frame: ClassNamed) -> None:
        self.report.class_name = frame.name
        self.result.source = frame.source

    def on_failed(self, frame: Failed) -> None:
        self.failure = frame.body

    def on_forward(self, frame: Forward) -> None:
        if self.report.tier != "instantiated":
            raise Failure("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
        self.forward = frame

    def on_probe(self, frame: Probe) -> None:
        self.result.probes.append((frame.body, frame.values))

    def on_probed(self, frame: Probed) -> None:
        self.result.probed = frame.body

    def probing(self) -> bool:
        """After the forward: its probes, then the end of them."""
        return self.forward is not None and self.failure is None and self.result.probed is None

    def read(self, frames: List[Tuple[Dict[str, Any], bytes]]) -> None:
        for header, blob in frames:
            frame = read_frame(header, blob)
            if self.probing() and type(frame) in PROBING:
                PROBING[type(frame)](self, frame)
                continue
            if self.forward is not None or self.failure is not None:
                raise Failure("tampered", "the block wrote to the validator's channel (a frame after the last)")
            handler = BEFORE_FORWARD.get(type(frame))
            if handler is None:
                raise Failure("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
            handler(self, frame)


# what the copy's worker may send, by frame type: until its forward, and after it
BEFORE_FORWARD: Dict[type, Callable[[CopyReading, Any], None]] = {
    Tier: CopyReading.on_tier,
    ClassNamed: CopyReading.on_class,
    Failed: CopyReading.on_failed,
    Forward: CopyReading.on_forward,
}
PROBING: Dict[type, Callable[[CopyReading, Any], None]] = {Probe: CopyReading.on_probe, Probed: CopyReading.on_probed}


# the category of a failure that came after the last tier a worker reached: the step that follows it failed
FAILED_AFTER = {"names-closed": "import-error", "imported": "instantiate"}


def failed_after(tier: Optional[str]) -> str:
    return FAILED_AFTER.get(tier or "", "forward")


def verdict(job: WorkerRun, report: Report, reach: Callable[[str], None]) -> CopyResult:
    """Turn the copy worker's frames into the report's tiers (raising Failure for a failed one); return its probes."""
    reading = CopyReading(report, reach)
    reading.read(job.frames)
    failure, forward, result = reading.failure, reading.forward, reading.result
    if job.problem is not None and forward is not None and job.problem[0] in ("timeout", "memory", "output"):
        # the forward was whole before the limit: only the probes for the comparison did not finish
        result.unfinished = job.problem[1]
        job.problem = None
        job.status = 0
    if job.problem is not None:
        category, message = job.problem
        if category == "tampered":
            raise Failure(category, message)
        if category == "timeout":
            message = f"{message} (last tier reached: {report.tier})"
        raise Failure(category, message, output=tail_text(job))
    if failure is not None:
        category = str(failure.get("category", "error"))
        if category == "error":  # an exception of the validator's own steps: the tier it stopped before
            category = failed_after(report.tier)
        if category not in CATEGORIES:
            raise Failure("tampered", "the block wrote to the validator's channel (an unknown category)")
        extra = {k: v for k, v in failure.items() if k in ("names", "package", "requested_module")}
        raise Failure(category, str(failure.get("message", ""))[:4000], **extra)
    status = job.status if job.status is not None else -1
    if forward is not None and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) and (result.probes or result.probed):
        # the forward was whole; what ended the worker came while it probed for the comparison
        result.unfinished = f"the copy's process ended while it was compared: {last_line(tail_text(job))}"
        status = 0
    if os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0) or forward is None:
        how = f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else "no status"
        category = "memory" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else failed_after(report.tier)
        raise Failure(category, f"the block's process ended without a result ({how}): {last_line(tail_text(job))}", output=tail_text(job))
    body, values = forward.body, forward.values
    try:
        shapes_, finite, count = checked_tensors(body.get("tensors"), values, MAX_VALUES // 2)
        output_shapes = with_shapes(body.get("output"), shapes_)
        inputs = body.get("input_shapes")
        json.dumps(inputs)
    except (ValueError, TypeError, RecursionError) as exc:
        raise Failure("tampered", f"the block wrote to the validator's channel (forward evidence: {exc})")
    report.input_shapes, report.output_shapes, report.output_finite, report.checked_values = inputs, output_shapes, finite, count
    reach("forward")
    return result
