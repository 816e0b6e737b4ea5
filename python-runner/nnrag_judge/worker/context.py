"""Worker side: what one job's worker learns as it runs and its later steps read, in one object made when the job
starts (`begin`). Nothing else of a job is kept at module level: a worker loads the worker modules afresh for its one
job (zygote.py), and the steps reach the job's context through `job()`, so a step is read with its context in view.
Process state that outlives a job in a template (the folders whose metadata it has, `loading.DEVELOPED`) is not here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Set


@dataclass
class JobContext:
    """One job's context. `twins`: the copy's own classes that are copies of torch's, each with torch's class it copies
    (a block pulled from an indexed torch: its `Linear` is not `nn.Linear`; the copy's worker fills it, the original's
    side leaves it empty), so both sides shape their inputs alike. `own_packages`: the packages whose loaded modules an
    observed call may name its classes from (the original's own; the copy names only what its file defines).
    `observed`: the argument sets seen in the repository's own runs, by attempt key. `call`: torch's Module.__call__
    as it was before the block's code ran. `last_forward_s`: how long the last forward that ran took. `spent`: the
    worker's own seconds by step (`build`: constructing the argument sets, `forward`: driving forward with the inputs;
    told the judge in the frame that ends the search: informative only, never a verdict's ground)."""

    twins: Dict[Any, Any] = field(default_factory=dict)
    own_packages: Set[str] = field(default_factory=set)
    observed: Dict[Any, Dict[str, Any]] = field(default_factory=dict)
    call: Any = None
    last_forward_s: float = 0.0
    spent: Dict[str, float] = field(default_factory=dict)
    # the attempt keys of the guessed argument sets (not the repository's calls, observed or documented): the search
    # stops guessing once two in a row fail alike (forward.search)
    guessed: Set[Any] = field(default_factory=set)
    skipped: int = 0

    def add(self, step: str, seconds: float) -> None:
        """Count `seconds` of the worker's own time to `step`."""
        self.spent[step] = self.spent.get(step, 0.0) + max(0.0, seconds)

    def told(self) -> Dict[str, float]:
        """The seconds by step as a frame carries them (milliseconds kept)."""
        return {k: round(v, 3) for k, v in self.spent.items()}


CURRENT: List[JobContext] = [JobContext()]


def begin(**given: Any) -> JobContext:
    """The context of the job that starts (the worker's `entry`), with what is known at its start."""
    CURRENT[0] = JobContext(**given)
    return CURRENT[0]


def job() -> JobContext:
    """The context of this worker's job."""
    return CURRENT[0]
