"""Judge side: the copy's tiers from its worker's frames. Tiers must come in order; only a forward frame whose
tensors the judge checked, from a worker that then ended normally, makes the block validated. Anything malformed is
`tampered`."""

from __future__ import annotations

import json
import math
import os
from array import array
from typing import Any, Callable, Dict, List, Optional, Tuple

from .protocol import CATEGORIES, CLASS, FAILURE, FORWARD, MAX_VALUES, PROBE, PROBED, TIER, Failure, kind_of
from .supervise import Job, last_line, tail_text

Frame = Tuple[Dict[str, Any], bytes]


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
        self.probes: List[Frame] = []
        self.probed: Optional[Dict[str, Any]] = None
        self.unfinished: Optional[str] = None
        self.source: Optional[str] = None


def verdict(job: Job, report: Dict[str, Any], reach: Callable[[str], None]) -> CopyResult:
    """Turn the copy worker's frames into the report's tiers (raising Failure for a failed one); return its probes."""
    order = ["names-closed", "imported", "instantiated"]
    failure: Optional[Dict[str, Any]] = None
    forward: Optional[Frame] = None
    result = CopyResult()
    for header, blob in job.frames:
        kind = kind_of(header)
        # after the forward: its probes, then the end of them; nothing after that, and nothing after a failure
        probing = forward is not None and failure is None and result.probed is None
        if probing and kind == PROBE and isinstance(header[PROBE], dict):
            result.probes.append((header[PROBE], blob))
            continue
        if probing and kind == PROBED and isinstance(header[PROBED], dict):
            result.probed = header[PROBED]
            continue
        if forward is not None or failure is not None:
            raise Failure("tampered", "the block wrote to the validator's channel (a frame after the last)")
        if kind == TIER:
            tier = header[TIER]
            # each argument set that builds is announced: "instantiated" may come again after a forward that failed
            again = tier == "instantiated" and report["tier"] == "instantiated"
            if tier not in order or (order.index(tier) != order.index(report["tier"]) + 1 and not again):
                raise Failure("tampered", f"the block wrote to the validator's channel (tier {str(tier)[:40]!r} out of order)")
            if tier == "instantiated":
                for key in ("args", "kwargs", "builder", "inside", "recipe", "observed"):
                    if key in header:
                        report[key] = header[key]
            reach(tier)
        elif kind == CLASS and isinstance(header[CLASS], str):
            report["class"] = header[CLASS][:200]
            result.source = header.get("source") if isinstance(header.get("source"), str) else None
        elif kind == FAILURE and isinstance(header[FAILURE], dict):
            failure = header[FAILURE]
        elif kind == FORWARD and isinstance(header[FORWARD], dict) and report["tier"] == "instantiated":
            forward = (header[FORWARD], blob)
        else:
            raise Failure("tampered", "the block wrote to the validator's channel (a frame that is not ours)")
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
            message = f"{message} (last tier reached: {report['tier']})"
        raise Failure(category, message, output=tail_text(job))
    if failure is not None:
        category = str(failure.get("category", "error"))
        if category == "error":  # an exception of the validator's own steps: the tier it stopped before
            category = {"names-closed": "import-error", "imported": "instantiate"}.get(report["tier"], "forward")
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
        category = (
            "memory"
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
            else {"names-closed": "import-error", "imported": "instantiate", "instantiated": "forward"}.get(report["tier"], "forward")
        )
        raise Failure(category, f"the block's process ended without a result ({how}): {last_line(tail_text(job))}", output=tail_text(job))
    body, values = forward
    try:
        shapes_, finite, count = checked_tensors(body.get("tensors"), values, MAX_VALUES // 2)
        output_shapes = with_shapes(body.get("output"), shapes_)
        inputs = body.get("input_shapes")
        json.dumps(inputs)
    except (ValueError, TypeError, RecursionError) as exc:
        raise Failure("tampered", f"the block wrote to the validator's channel (forward evidence: {exc})")
    report["input_shapes"] = inputs
    report["output_shapes"] = output_shapes
    report["output_finite"] = finite
    report["checked_values"] = count
    reach("forward")
    return result
