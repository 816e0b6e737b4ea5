"""Worker side: the probes of one side: the original plans (which argument set and input ran, the variants to try
within the time it has) and sends its probes; the copy probes exactly as the plan says. The copy's own copies of
torch's classes are known as such (twins)."""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from .variants import AFTER_BUILD, INIT_METHODS, INPUT_FORM, NOT_ARGUMENTS, called_methods, in_form
from .evidence import probe_variant, seed_all
from .candidates import input_list
from .inputs import lighter
from ..wire.protocol import MAX_TRACED_FILES, MAX_TRACED_LINES, MAX_VALUES, PROBED, frame, steady

from .building import Attempt, make, module_call
from .forward import Found, candidate_at

# seconds the probes of one side may take, after the forward tier
PROBE_BUDGET_S = 6


# a block whose forward takes longer than this is probed lighter: one seed, a train step for the base set only
HEAVY_S = 0.5


HEAVY_VARIANTS = 3


def covering(path: str) -> Tuple[Callable[[], None], Set[int]]:
    """Start recording which code of `path` runs (the first line of each function called); returns the stop."""
    seen: Set[int] = set()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == path:
            seen.add(frame.f_code.co_firstlineno)

    sys.setprofile(profile)
    return (lambda: sys.setprofile(None)), seen


class Trace:
    """Which functions of the original's own code ran while it was built, run and probed (each function's code
    object once): sys.monitoring's PY_START where the interpreter has it (each code object reported once, then
    disabled: no cost after), a profile hook otherwise. `finish()` stops it and gives, per file under `roots`, the
    first lines of the functions that ran (what the pull's slim copy keeps; it checks them against the index)."""

    TOOL = 4

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)
        self.codes: Dict[int, Any] = {}
        self.monitoring = getattr(sys, "monitoring", None)
        codes = self.codes
        if self.monitoring is not None:
            try:
                self.monitoring.use_tool_id(self.TOOL, "nnrag-trace")
            except ValueError:
                self.monitoring = None
        if self.monitoring is not None:
            mon = self.monitoring
            disable = mon.DISABLE

            def started(code: Any, _offset: int) -> Any:
                codes[id(code)] = code
                return disable

            mon.register_callback(self.TOOL, mon.events.PY_START, started)
            mon.set_events(self.TOOL, mon.events.PY_START)
            return

        def profile(frame: Any, event: str, _arg: Any) -> None:
            if event == "call":
                code = frame.f_code
                if id(code) not in codes:
                    codes[id(code)] = code

        sys.setprofile(profile)

    def mark(self) -> None:
        """From here on, what runs is the block's own run (building, forward, probes), not its import."""
        self.imported = set(self.codes)

    def after_mark(self) -> Dict[str, List[int]]:
        """The first lines of the functions that first ran after `mark()`, per file under the roots (after `finish()`)."""
        imported = getattr(self, "imported", None)
        if imported is None:
            return {}
        return self.lines_of([c for k, c in self.codes.items() if k not in imported])

    def finish(self) -> Dict[str, List[int]]:
        """Stop recording; the first lines that ran, per file under the roots."""
        if self.monitoring is not None:
            self.monitoring.set_events(self.TOOL, 0)
            self.monitoring.register_callback(self.TOOL, self.monitoring.events.PY_START, None)
            self.monitoring.free_tool_id(self.TOOL)
        else:
            sys.setprofile(None)
        return self.lines_of(list(self.codes.values()))

    def lines_of(self, codes: List[Any]) -> Dict[str, List[int]]:
        """The first lines of `codes`, per file under the roots, within the caps."""
        out: Dict[str, Set[int]] = {}
        real: Dict[str, str] = {}
        for code in codes:
            name = code.co_filename
            if name not in real:
                real[name] = os.path.realpath(name) if os.path.isabs(name) else ""
            path = real[name]
            if path and path.startswith(self.roots):
                out.setdefault(path, set()).add(int(code.co_firstlineno))
        kept: Dict[str, List[int]] = {}
        total = 0
        for path in sorted(out)[:MAX_TRACED_FILES]:
            lines = sorted(out[path])[: max(0, MAX_TRACED_LINES - total)]
            total += len(lines)
            kept[path] = lines
        return kept


def torch_twins(path: str, namespace: Dict[str, Any], nn: Any) -> Dict[Any, Any]:
    """The pulled file's classes that are copies of torch's own (its provenance record names a module of torch, loaded
    here as torch is), each with torch's class: a block pulled from an indexed torch is shaped for as torch's is."""
    twins: Dict[Any, Any] = {}
    record = provenance_of(path)
    renamed = record.get("renamed") if isinstance(record.get("renamed"), dict) else {}
    for d in record.get("definitions") or []:
        module = d.get("module") if isinstance(d, dict) else None
        if not isinstance(module, str) or not (module == "torch" or module.startswith("torch.")) or module not in sys.modules:
            continue
        for name in d.get("names") or []:
            if not isinstance(name, str):
                continue
            copy, twin = namespace.get(str(renamed.get(f"{module}.{name}", name))), getattr(sys.modules[module], name, None)
            if inspect.isclass(copy) and inspect.isclass(twin) and issubclass(twin, nn.Module) and copy is not twin:
                twins[copy] = twin
    return twins


def provenance_of(path: str) -> Dict[str, Any]:
    """The pulled file's provenance record (its header's `# nnrag-provenance:` line), or {}."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("# nnrag-provenance: "):
                    record = json.loads(line[len("# nnrag-provenance: ") :])
                    return record if isinstance(record, dict) else {}
                if not line.startswith("#"):
                    break
    except (OSError, ValueError):
        pass
    return {}


def renames_of(path: str) -> Dict[str, str]:
    """The names the pulled file gave definitions whose names collided (its provenance record's `renamed`), mapped
    to the original names: the copy's module tree is compared by the original's class names."""
    renamed = provenance_of(path).get("renamed")
    return {str(v): str(k).rsplit(".", 1)[-1] for k, v in renamed.items() if isinstance(v, str)} if isinstance(renamed, dict) else {}


def probe_plan(
    send: Callable[..., None],
    cls: Any,
    attempts: List[Attempt],
    factory: Any,
    plan: Dict[str, Any],
    torch: Any,
    nn: Any,
    coverage: Optional[str] = None,
    found: Optional[Found] = None,
    examples: Sequence[str] = (),
    trace: Optional[Trace] = None,
    check_gradients: bool = False,
) -> None:
    """Probe the block exactly as the plan says (the same code on both sides): the base argument set's inputs, then
    each variant, until the budget. The block the search built and ran is the base when it is the plan's (on both
    sides alike). Ends with a `probed` frame naming the variants done."""
    attempt = next((a for a in attempts if a[0] == plan.get("attempt")), None)
    if attempt is None:
        send(frame(PROBED, {"error": f"no argument set {plan.get('attempt')!r} here"}))
        return
    if found is not None and found.attempt[0] == plan.get("attempt") and found.index == plan.get("input"):
        base, inputs = found.model, found.inputs
    else:
        errors: List[str] = []
        base, recorded, how = make(attempt, cls, factory, torch, nn, errors)
        if base is None:
            send(frame(PROBED, {"error": f"the argument set that ran does not build: {errors[-1] if errors else '?'}"}))
            return
        lighter(base)
        candidates = input_list(base, torch, nn, how.get("kwargs", {}), recorded, examples)
        chosen = candidate_at(candidates, plan.get("input"), torch)
        if chosen is None:
            send(frame(PROBED, {"error": "the input that ran is not among this side's inputs"}))
            return
        inputs = chosen
    budget = [MAX_VALUES // 2]
    started = steady()
    done = []
    stop, seen = covering(coverage) if coverage else (None, set())
    call = module_call(base)
    heavy = bool(plan.get("heavy"))
    # the original's side checks once whether its gradients repeat (evidence.unstable_gradients)
    steadiness: Optional[Dict[str, Any]] = {} if check_gradients else None
    names = renames_of(coverage) if coverage else {}
    for i, v in enumerate(plan.get("variants", [])[: HEAVY_VARIANTS if heavy else None]):
        if i and not plan.get("exact") and steady() - started > PROBE_BUDGET_S:
            break
        overrides = v.get("overrides") or {}

        returned: List[Any] = []

        def build_variant(overrides: Dict[str, Any] = overrides, first: bool = i == 0, returned: List[Any] = returned) -> Any:
            if first and not overrides:
                return base  # built as every variant is (seed 0, then lighter)
            then = overrides.get(AFTER_BUILD)
            model, _, _ = make(attempt, cls, factory, torch, nn, [], {k: v for k, v in overrides.items() if k not in NOT_ARGUMENTS})
            if model is None:
                raise RuntimeError("does not build")
            lighter(model)
            if isinstance(then, str) and (then in INIT_METHODS or then in called_methods(cls)):
                seed_all(0, torch)
                returned.append(getattr(model, then)())
            return model

        # what the block was built from (a configuration object of the file's classes, a class given as an argument),
        # compared once, as the base argument set left it; and what a method called after building returned
        extra: Optional[Tuple[str, Callable[[], Any]]] = None
        if i == 0 and attempt[0] != "builder":
            extra = ("arguments", lambda: {"args": list(attempt[1]), "kwargs": dict(attempt[2])})
        elif AFTER_BUILD in overrides:
            extra = ("returned", lambda returned=returned: returned[0] if returned else None)
        seeds = [1, 2] if i == 0 and not heavy else [1]
        # a train step (gradients, batch statistics, dropout and drop-path branches) for each variant; a heavy
        # block's for the argument set that ran only
        probe_variant(
            send,
            str(v.get("label")),
            build_variant,
            in_form(inputs, overrides.get(INPUT_FORM)),
            seeds,
            call,
            torch,
            budget,
            train=i == 0 or not heavy,
            names=names,
            extra=extra,
            steadiness=steadiness,
        )
        done.append(str(v.get("label")))
    if stop is not None:
        stop()
    executed = trace.finish() if trace is not None else None
    late = trace.after_mark() if trace is not None else {}
    send(
        frame(
            PROBED,
            {
                "variants": done,
                **({"checked": True} if check_gradients else {}),
                **({"ran": sorted(seen)[:5000]} if coverage else {}),
                **({"executed": executed} if executed is not None else {}),
                **({"executed_after_import": late} if late else {}),
            },
        )
    )
