"""Judge side: what the judge answers, as types. A `Report` is one validation's verdict (src/core/validate/report.ts
reads it as `ValidationReport`; tests/test_messages.py checks the two name the same fields); an `ObserveReport` is
what a repository's observation gathered. `plain()` is the answer's JSON: a field left unset is left out."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional


def answer_field(name: Optional[str] = None, default: Any = None, always: bool = False) -> Any:
    """A report field, sent as `name` (the field's own name when None); `always`: sent even when None."""
    return field(default=default, metadata={"wire": name, "always": always})


@dataclass
class Report:
    """One validation's verdict: how far the copy got (`tier`), why it stopped (`category`, `message` and what the
    failure named), how it was built and fed, and its comparison with the original (`equivalence`)."""

    file: str = answer_field(always=True, default="")
    tier: Optional[str] = answer_field(always=True)
    ok: bool = answer_field(always=True, default=False)
    class_name: Optional[str] = answer_field("class", always=True)
    category: Optional[str] = answer_field()
    message: Optional[str] = answer_field()
    # a failure's particulars (protocol.Failure.extra)
    names: Optional[List[str]] = answer_field()
    package: Optional[str] = answer_field()
    requested_module: Optional[str] = answer_field()
    output: Optional[str] = answer_field()
    original_passes: Optional[str] = answer_field()
    # how the block was built (the copy's "instantiated" frame)
    args: Any = answer_field()
    kwargs: Any = answer_field()
    builder: Any = answer_field()
    inside: Any = answer_field()
    recipe: Any = answer_field()
    observed: Any = answer_field()
    # its forward, as the judge checked it
    input_shapes: Any = answer_field()
    output_shapes: Any = answer_field()
    output_finite: Optional[bool] = answer_field()
    checked_values: Optional[int] = answer_field()
    requirements: Optional[List[Dict[str, Any]]] = answer_field()
    upstream_undefined: Optional[List[str]] = answer_field()
    # the original's side: how far it got (sent when it ran, null when it was not imported), its run kept or replayed
    original_reached: Optional[str] = answer_field()
    original_ran: bool = field(default=False, metadata={"internal": True})
    original_reason: Optional[str] = answer_field()
    original_cached: Optional[bool] = answer_field()
    original_frames: Optional[str] = answer_field()
    equivalence: Optional[Dict[str, Any]] = answer_field()
    # the first lines of the functions the original ran, per file (its worker's trace; the pull's slim copy)
    executed: Optional[Dict[str, List[int]]] = answer_field()
    # of those, the functions that first ran once the original was imported (building, forward, probes)
    executed_after_import: Optional[Dict[str, List[int]]] = answer_field()
    seconds: Optional[float] = answer_field()
    own_seconds: Optional[float] = answer_field()
    # where the seconds went (timings.py): `static`, each side's run by step, `comparing`; informative only
    timings: Optional[Dict[str, Any]] = answer_field()

    def failed(self, category: str, message: str, extra: Optional[Dict[str, Any]] = None) -> None:
        """The validation stopped: why, and what the failure named (only the particulars a report has)."""
        self.category, self.message = category, message
        for key, value in (extra or {}).items():
            if key in EXTRA:
                setattr(self, key, value)

    def plain(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in fields(self):
            if f.metadata.get("internal"):
                continue
            value = getattr(self, f.name)
            if value is not None or f.metadata["always"] or (f.name == "original_reached" and self.original_ran):
                out[f.metadata["wire"] or f.name] = value
        return out


# what a failure may name beside its category and message (protocol.Failure's extra)
EXTRA = ("names", "package", "requested_module", "output", "original_passes", "equivalence")


def report_fields() -> List[str]:
    """The fields a report may carry, as sent (test_messages compares them with report.ts)."""
    return [f.metadata["wire"] or f.name for f in fields(Report) if not f.metadata.get("internal")]


@dataclass
class ObserveReport:
    """What a repository's observation gathered: an entry's record each (`observe.py`), or why it stopped."""

    ok: bool = True
    observed: List[Dict[str, Any]] = field(default_factory=list)
    category: Optional[str] = None
    message: Optional[str] = None

    def plain(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"ok": self.ok}
        if self.category is not None:
            out.update(category=self.category, message=self.message)
        out["observed"] = self.observed
        return out
