"""Worker side: driving the block's forward: each input candidate in turn (the original's first), an input retyped as a
dtype error names it, and the search over argument sets for the first that builds and runs."""

from __future__ import annotations

import importlib
import importlib.util
import re
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .context import job
from .arguments import jsonable
from .evidence import seed_all
from .candidates import input_list
from .inputs import lighter
from .loading import where
from ..wire.protocol import NATIVE_OPS, Failure, steady
from .building import FORWARD_BUDGET_S, Attempt, make, module_call

MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z_][\w.]*)'")


def missing_package(message: Optional[str]) -> Optional[str]:
    """The package a construction or forward error says is missing, when this interpreter has no such package (the
    pulled file imports it only where installed: the code that uses it fails when it runs)."""
    m = MISSING_MODULE.search(message or "")
    if not m:
        return None
    top = m.group(1).split(".")[0]
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else top


def best_error(errors: List[str]) -> str:
    """The most telling construction error: not the bare 'missing arguments' of the defaults attempt."""
    for e in reversed(errors):
        if "missing" not in e or "required" not in e:
            return e
    return errors[-1] if errors else "no argument set worked"


def run_forward(
    model: Any,
    cls: Any,
    torch: Any,
    nn: Any,
    kwargs: Dict[str, Any],
    first: Optional[List[Any]] = None,
    prefer: int = -1,
    examples: Sequence[str] = (),
) -> Tuple[bool, Optional[str], Any, List[Any], int]:
    """Drive forward with the inputs recorded inside a real model (`first`), else inferred ones; the input at
    `prefer` (the one the original ran with) first. Returns (ran, error, output, inputs, index in input_list)."""
    try:
        candidates = input_list(model, torch, nn, kwargs, first, examples)
    except Exception as exc:  # noqa: BLE001
        return False, f"{type(exc).__name__}: {exc}", None, [], -1
    error: Optional[str] = None
    depth = -1
    started = steady()
    call = module_call(model)
    order = list(range(len(candidates)))
    if 0 <= prefer < len(candidates):
        order.remove(prefer)
        order.insert(0, prefer)
    elif candidate_at(candidates, prefer, torch) is not None:
        order.insert(0, prefer)
    # inputs retyped as a failure's dtype error names (`retyped`), tried after every other input
    retries: List[int] = []
    with torch.no_grad():
        i = 0
        while i < len(order) + len(retries):
            index = order[i] if i < len(order) else retries[i - len(order)]
            i += 1
            inputs = candidate_at(candidates, index, torch)
            if inputs is None:
                continue
            if steady() - started > FORWARD_BUDGET_S:
                error = f"{error} (stopped trying inputs after {FORWARD_BUDGET_S} s)"
                break
            try:
                seed_all(1, torch)
                began = steady()
                out = call(model, *inputs)
                job().last_forward_s = steady() - began
            except MemoryError:
                raise Failure("memory", "out of memory in forward")
            except Exception as exc:  # noqa: BLE001
                # the most telling error: the input that got deepest before it failed
                frames = len(traceback.extract_tb(exc.__traceback__))
                said = f"{type(exc).__name__}: {exc}{where(exc)}"
                if frames > depth:
                    depth, error = frames, said
                if NATIVE_OPS.search(str(exc)):
                    # compiled operators this process has not loaded: no other input loads them
                    error = said
                    break
                kind = dtype_retry(str(exc))
                if kind and index < len(candidates):
                    # one argument at a time, the last first (an index tends to follow what it indexes)
                    for pos in reversed(range(min(len(inputs), MAX_RETYPED))):
                        code = index + len(candidates) * (kind + 2 * pos)
                        if code not in retries and retyped(inputs[pos], kind, torch) is not inputs[pos]:
                            retries.append(code)
                continue
            return True, None, out, inputs, index
    return False, error, None, [], -1


# a forward's dtype errors and the input they ask for: integers where an index or an embedding consumes a float (1),
# floats where a matrix product or a float layer meets integers (2)
TO_INDEX = re.compile(
    r"'indices' to have one of the following scalar types|tensors used as indices must be|"
    r"expected scalar type Long but found|Expected dtype int(?:32|64)(?:/int(?:32|64))? for index|"
    r"Expected tensor for argument #\d+ '(?:indices|index)'"
)


TO_FLOAT = re.compile(
    r"must have the same dtype, but got (?:Byte|Long|Int|Bool|Char|Short) and Float|"
    r"expected scalar type Float but found (?:Byte|Long|Int|Bool|Char|Short)|not implemented for '(?:Long|Int|Byte)'|"
    r"expected m1 and m2 to have the same dtype"
)


def dtype_retry(message: str) -> int:
    return 1 if TO_INDEX.search(message) else 2 if TO_FLOAT.search(message) else 0


def retyped(value: Any, kind: int, torch: Any) -> Any:
    """An input with its float tensors as indices 0 and 1 (kind 1: valid for any table of two rows or more), or its
    integer tensors as floats (kind 2); anything else as it is. Made from the input itself: alike on both sides."""
    if isinstance(value, torch.Tensor):
        if kind == 1 and value.is_floating_point():
            return (value > 0).long()
        if kind == 2 and not value.is_floating_point() and not value.is_complex():
            return value.float()
        return value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        items = [retyped(v, kind, torch) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, dict):
        changed = {k: retyped(v, kind, torch) for k, v in value.items()}
        return value if all(changed[k] is value[k] for k in value) else changed
    return value


MAX_RETYPED = 8  # the arguments of an input that may be retyped, from the first


def candidate_at(candidates: List[List[Any]], index: Any, torch: Any) -> Optional[List[Any]]:
    """The input the plan names by `index`: one of `candidates`, or (past them) one of them with one argument retyped
    (`index = base + len(candidates) * (kind + 2 * position)`, kind 1 or 2: `retyped`); None when it names none."""
    n = len(candidates)
    if not isinstance(index, int) or index < 0 or not n:
        return None
    if index < n:
        return candidates[index]
    code, base = divmod(index, n)
    kind, pos = 2 - code % 2, (code - 1) // 2
    inputs = candidates[base]
    if pos >= min(len(inputs), MAX_RETYPED):
        return None
    return [retyped(v, kind, torch) if i == pos else v for i, v in enumerate(inputs)]


# guessed argument sets failing alike this many times in a row, on a guessed value of the wrong type (`'int' object
# is not callable`, `'int' object has no attribute 'out_channels'`): the rest of the guesses are not tried. They
# differ from those only in the widths guessed (ints for ints), so that failure is certain for them; a failure that
# does not name a value's type (a width not divisible by the heads) is what the other widths are there for
ALIKE = 2
TYPED = re.compile(r"'(?:int|float|bool|str|NoneType|tuple|list)' object")


class Alike:
    """The guesses' failures in a row that read the same (the error's text: its values and line included) and name a
    guessed value's type."""

    def __init__(self) -> None:
        self.last: Optional[str] = None
        self.count = 0

    def failed(self, error: str) -> None:
        self.count = self.count + 1 if error == self.last and TYPED.search(error) else 1
        self.last = error
        if NATIVE_OPS.search(error):
            # the process lacks compiled operators the block calls: every other guess meets that again
            self.count = ALIKE

    def enough(self) -> bool:
        return self.count >= ALIKE


class Found:
    """The first attempt that built and ran forward."""

    def __init__(self, attempt: Attempt, inputs: List[Any], index: int, out: Any, model: Any) -> None:
        self.attempt, self.inputs, self.index, self.out, self.model = attempt, inputs, index, out, model


def search(
    cls: Any,
    attempts: List[Attempt],
    factory: Any,
    torch: Any,
    nn: Any,
    announce: Callable[[Dict[str, Any]], None],
    plan: Optional[Dict[str, Any]] = None,
    examples: Sequence[str] = (),
) -> Tuple[Optional[Found], List[str], Optional[str], bool]:
    """Build each attempt and drive it forward until one runs: (found, build errors, forward error, built any). With
    a plan, the argument set and input the original ran with are tried first."""
    errors: List[str] = []
    forward_error: Optional[str] = None
    built = False
    preferred = [a for a in attempts if plan is not None and a[0] == plan.get("attempt")]
    alike = Alike()
    for attempt in preferred + [a for a in attempts if all(a is not p for p in preferred)]:
        guess = attempt[0] in job().guessed and all(attempt is not p for p in preferred)
        if guess and alike.enough():
            job().skipped += 1
            continue
        began = steady()
        model, recorded, extra = make(attempt, cls, factory, torch, nn, errors)
        job().add("build", steady() - began)
        if model is None:
            if guess:
                alike.failed(errors[-1] if errors else "")
            continue
        built = True
        key, args, _ = attempt
        report = {"args": jsonable(extra.get("args", args)), "kwargs": jsonable(extra.get("kwargs", {}))}
        if extra.get("observed"):
            report["observed"] = str(extra["observed"])[:300]
        if key == "builder":
            report["builder"] = True
            if extra.get("inside"):
                report["inside"] = extra["inside"]
            if extra.get("recipe"):
                report["recipe"] = extra["recipe"]
        announce(report)
        lighter(model)
        prefer = plan.get("input", -1) if plan is not None and preferred and attempt is preferred[0] and isinstance(plan.get("input"), int) else -1
        began = steady()
        ran, error, out, inputs, index = run_forward(model, cls, torch, nn, extra.get("kwargs", {}), recorded, prefer, examples)
        job().add("forward", steady() - began)
        if ran:
            return Found(attempt, inputs, index, out, model), errors, None, True
        forward_error = forward_error or error
        if guess:
            alike.failed(error or "")
    return None, errors, forward_error, built
