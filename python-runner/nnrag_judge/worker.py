"""Worker side: the only code that runs a block. A worker is forked from the judge, loads this module and the other
worker modules afresh into a private namespace (none of them is in `sys.modules` while block code runs), and plays
one *role*:

- `copy`: import the pulled file, build the block with the argument sets to try, drive its forward, report each tier
  reached as a frame; then, given the original's plan, probe the copy exactly as the plan says.
- `original`: import the original class from the repository it was indexed from (ahead of site-packages; without its
  package's `__init__` when that fails), search the same argument sets and inputs, and send the plan (which argument
  set and input ran, and the variants to probe) with the original's own probes.

Each role runs in a process that has never executed the other side's code, so the copy cannot decide what "the
original" is. Frames are the only way out; the judge believes nothing a worker says about a tier without the
evidence.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .arguments import (
    AFTER_BUILD,
    INIT_METHODS,
    INPUT_FORM,
    NOT_ARGUMENTS,
    OWN_PACKAGES,
    called_methods,
    constructor_candidates,
    given_candidates,
    guess_value,
    in_form,
    jsonable,
    resolve_given,
    takes_a_list,
    variants,
    without_download,
)
from .evidence import probe_variant, seed_all, tensor_evidence
from .candidates import input_list
from .inputs import TWINS, lighter, shapes
from .inputs_layers import input_candidates
from .loading import block_network, import_file, import_original, limit_files, limit_memory, load_natives, original_path, set_target, where
from .protocol import CLASS, FAILURE, FORWARD, MAX_VALUES, ORIGIN, PLAN, PROBED, REACHED, TIER, UNAVAILABLE, Failure, frame, sender, steady
from .observe import observed_inputs, run_observe
from .recipe import recipe_of, recording
from .repair import repaired

# torch's own Module.__call__, taken before the block's code ran
CALL: Any = None
# seconds the probes of one side may take, after the forward tier
PROBE_BUDGET_S = 6
# a block whose forward takes longer than this is probed lighter: one seed, a train step for the base set only
HEAVY_S = 0.5
HEAVY_VARIANTS = 3
LAST_FORWARD_S = [0.0]
EXAMPLES: List[str] = []  # the repository's own code that builds and calls the block (tests), from the request


def find_block(module: Any, name: Optional[str], nn: Any) -> Any:
    """The class to validate: the one named, else the last nn.Module subclass defined in the file."""
    if name:
        cls = getattr(module, name, None)
        if cls is None:
            raise Failure("import-error", f"the file defines no '{name}'")
        return cls
    found = [v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, nn.Module) and v.__module__ == module.__name__]
    if not found:
        raise Failure("import-error", "the file defines no nn.Module subclass")
    return found[-1]


MAX_CONSTRUCTIONS = 8
# a forward that reaches compiled operators that are not there (torchvision's _C ops) is a native-extension problem
NATIVE_OPS = re.compile(r"custom C\+\+ ops|Could not run '\w+::|undefined symbol|No such operator")
# a block whose forward is slow (a detector resizing to 800 px) must not spend the whole time limit on guesses
FORWARD_BUDGET_S = 10
# rounds of guessing what a nested constructor misses or repairing what the block's own constructor rejects
MAX_REPAIRS = 5
MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)$")


def build(cls: Any, args: List[Any], kwargs: Dict[str, Any], torch: Any, nn: Any, errors: List[str], depth: int = 0) -> Any:
    """Build the block; when a nested constructor reached through **kwargs misses arguments, guess them too, and when
    a statement of the block's constructor rejects the arguments, change them as it asks (repair.py). `args` and
    `kwargs` then hold the arguments that built it."""

    def guess(param: inspect.Parameter) -> Any:
        return guess_value(param, nn, getattr(cls.__init__, "__globals__", None), cls)

    for _ in range(MAX_REPAIRS):
        try:
            model = constructed(lambda: cls(*args, **kwargs), torch)
        except MemoryError:
            raise Failure("memory", f"out of memory while building {cls.__name__}")
        except Exception as exc:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}{where(exc)}"
            m = MISSING.search(str(exc)) if isinstance(exc, TypeError) else None
            accepts_kwargs = any(p.kind == p.VAR_KEYWORD for p in safe_parameters(cls.__init__))
            if m and accepts_kwargs and f"{cls.__name__}.__init__()" not in str(exc):
                for name in re.findall(r"'(\w+)'", m.group(1)):
                    kwargs[name] = guess_value(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY), nn)
                continue
            if repaired(exc, cls, args, kwargs, guess, (lambda klass: an_object(klass, torch, nn)) if depth == 0 else None):
                continue
            errors.append(error)
            return None
        if not isinstance(model, nn.Module):
            errors.append(f"{cls.__name__}(...) is not an nn.Module")
            return None
        try:
            model.eval()
        except Exception as exc:  # noqa: BLE001 - a block that breaks nn.Module's own machinery
            errors.append(f"not a usable nn.Module: {type(exc).__name__}: {exc}")
            return None
        return model
    errors.append(error)
    return None


def an_object(cls: Any, torch: Any, nn: Any) -> Any:
    """An object of a module class another block's constructor asks for (`assert isinstance(vit, ViT)`), built as a
    block is (seed 0, the argument sets to try, repairs), without going further down."""
    for args, kwargs in constructor_candidates(cls, [], nn, getattr(cls.__init__, "__globals__", {}))[:MAX_CONSTRUCTIONS]:
        model = build(cls, list(args), dict(kwargs), torch, nn, [], depth=1)
        if model is not None:
            return model
    return None


class InputsRecorded(Exception):
    """Raised by the hook that records a block's inputs inside a model, to stop the model's forward there."""


def build_with(
    factory: Any, cls: Any, torch: Any, nn: Any, errors: List[str], recipe: Optional[List[Any]] = None
) -> Tuple[Any, Optional[List[Any]], Optional[str]]:
    """Build through a builder function of the repository. It may return the block itself, or a model that
    contains it: then the block is taken from inside, and one forward pass of the model records the inputs the
    model really gives it. Returns (block, recorded inputs, name of the containing model); `recipe` gets the
    block's own constructor call as an argument set the file can replay without the builder, when it can be
    written (recipe.py)."""
    namespace = getattr(factory, "__globals__", None)
    calls = None
    try:
        # its defaults, but never a download of weights (it has no network here): random weights, alike on both sides
        no_download = without_download(factory)
        if isinstance(namespace, dict) and recipe is not None:
            with recording(namespace, str(getattr(factory, "__module__", ""))) as calls:
                model = constructed(lambda: factory(**no_download), torch)
        else:
            model = constructed(lambda: factory(**no_download), torch)
    except MemoryError:
        raise Failure("memory", f"out of memory while building {cls.__name__}")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"builder: {type(exc).__name__}: {exc}{where(exc)}")
        return None, None, None
    if not isinstance(model, nn.Module):
        errors.append(f"builder returned {type(model).__name__}, not an nn.Module")
        return None, None, None
    model.eval()
    inner = model if isinstance(model, cls) else inner_of(model, cls)
    if inner is None:
        errors.append(f"builder made a {type(model).__name__} without a {cls.__name__} inside")
        return None, None, None
    if calls is not None and recipe is not None and isinstance(namespace, dict):
        recipe.append(recipe_of(inner, calls, namespace))
    if inner is model:
        return model, None, None
    recorded: List[List[Any]] = []

    def record(_module: Any, args: Tuple[Any, ...]) -> None:
        if not recorded:
            recorded.append([a.detach().clone() if hasattr(a, "detach") else a for a in args])
        # the block's inputs are all that is wanted: the rest of the model's forward (a detector's heads at 800 px,
        # tens of seconds on a CPU) is not run
        raise InputsRecorded()

    lighter(model)
    hook = inner.register_forward_pre_hook(record)
    started = steady()
    call = module_call(model)
    try:
        seed_all(0, torch)
        with torch.no_grad():
            for inputs in input_candidates(model, torch, nn, {}):
                if recorded or steady() - started > FORWARD_BUDGET_S:
                    break
                try:
                    call(model, *inputs)
                except Exception:  # noqa: BLE001 - the hook may have fired before the failure
                    pass
    finally:
        hook.remove()
    return inner, (recorded[0] if recorded else None), type(model).__name__


def safe_parameters(fn: Any) -> List[inspect.Parameter]:
    """A callable's parameters, or none when it has no signature."""
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []


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


def module_call(model: Any) -> Any:
    """How to call the block: its own class's __call__ when it defines one, else torch's Module.__call__ as it was
    before the block's code ran (a block that replaces nn.Module.__call__ does not skip its own forward)."""
    for klass in type(model).__mro__:
        if "__call__" in klass.__dict__:
            if CALL is not None and klass.__module__.startswith("torch."):
                return CALL
            return klass.__dict__["__call__"]
    return CALL or type(model).__call__


def inner_of(model: Any, cls: Any) -> Any:
    """The block itself, or the first block of its class inside a model a builder made."""
    if isinstance(model, cls):
        return model
    return next((m for m in model.modules() if type(m) is cls), None) or next((m for m in model.modules() if isinstance(m, cls)), None)


def run_forward(
    model: Any, cls: Any, torch: Any, nn: Any, kwargs: Dict[str, Any], first: Optional[List[Any]] = None, prefer: int = -1
) -> Tuple[bool, Optional[str], Any, List[Any], int]:
    """Drive forward with the inputs recorded inside a real model (`first`), else inferred ones; the input at
    `prefer` (the one the original ran with) first. Returns (ran, error, output, inputs, index in input_list)."""
    try:
        candidates = input_list(model, torch, nn, kwargs, first, EXAMPLES)
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
                LAST_FORWARD_S[0] = steady() - began
            except MemoryError:
                raise Failure("memory", "out of memory in forward")
            except Exception as exc:  # noqa: BLE001
                # the most telling error: the input that got deepest before it failed
                frames = len(traceback.extract_tb(exc.__traceback__))
                if frames > depth:
                    depth, error = frames, f"{type(exc).__name__}: {exc}{where(exc)}"
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


Attempt = Tuple[Any, List[Any], Dict[str, Any]]  # ("builder" or the index of an argument set, args, kwargs)


# the argument sets observed while the repository's own code ran (observe.py), by attempt key: where they were seen
# and the inputs the block's forward got there
OBSERVED: Dict[Any, Dict[str, Any]] = {}
# the key of an argument set that cannot be built here as it was observed (a value the file cannot name)
UNRESOLVED = "$unresolved"


def attempts_of(cls: Any, module: Any, given: List[Dict[str, Any]], factory: Any, nn: Any) -> List[Attempt]:
    """The ways to build the block, in order: the argument sets observed in the repository's own runs, the
    repository's builder when there is one, then the other argument sets."""
    # the README's calls build the model at the size its authors use: tried after the light argument sets
    observed = [g for g in given if isinstance(g.get("observed"), str)][:MAX_OBSERVED]
    plain = [g for g in given if not g.get("documented") and not isinstance(g.get("observed"), str)]
    documented = [g for g in given if g.get("documented")]
    namespace = vars(module)
    OBSERVED.clear()
    out: List[Attempt] = []
    for k, g in enumerate(observed):
        # an observation is replayed as it was or not at all: a value the file cannot name is not guessed (the two
        # sides could guess it apart)
        unresolved = [n for n, v in [*enumerate(g.get("args", [])), *dict(g.get("kwargs", {})).items()] if not resolve_given(v, namespace)[0]]
        ((a, kw),) = given_candidates(cls, [g], nn, namespace)
        if unresolved:
            kw = {UNRESOLVED: f"the observed argument {unresolved[0]!r} names nothing the file defines"}
        key = f"observed:{k}"
        OBSERVED[key] = g
        out.append((key, a, kw))
    out += [("builder", [], {})] if factory is not None else []
    sets = constructor_candidates(cls, plain, nn, namespace)[:MAX_CONSTRUCTIONS] + given_candidates(cls, documented, nn, namespace)
    out += [(k, a, kw) for k, (a, kw) in enumerate(sets)]
    return out


MAX_OBSERVED = 4


def modules_named(value: Any) -> Set[str]:
    """The modules the observed argument sets name their classes by (`{"$call": "Spec", "module": "pkg.specs"}`)."""
    found: Set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("module"), str) and ("$call" in value or "$name" in value):
            found.add(value["module"])
        for v in value.values():
            found |= modules_named(v)
    elif isinstance(value, list):
        for v in value:
            found |= modules_named(v)
    return found


def positional(model: Any, inputs: Tuple[List[Any], Dict[str, Any]]) -> Optional[List[Any]]:
    """Observed forward arguments as the positional list the judge passes (keywords put in their places, defaults
    filling the gaps before the last one given); None when a keyword-only argument was given."""
    args, kwargs = inputs
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()]
    except (TypeError, ValueError):
        return list(args) if not kwargs else None
    out = list(args)
    rest = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][len(args) :]
    named = dict(kwargs)
    last = max((i for i, p in enumerate(rest) if p.name in named), default=-1)
    for p in rest[: last + 1]:
        if p.name in named:
            out.append(named.pop(p.name))
        elif p.default is not p.empty:
            out.append(p.default)
        else:
            return None
    return out if not named else None


def make(
    attempt: Attempt, cls: Any, factory: Any, torch: Any, nn: Any, errors: List[str], overrides: Optional[Dict[str, Any]] = None
) -> Tuple[Any, Optional[List[Any]], Dict[str, Any]]:
    """Build one attempt (with overrides of its keyword arguments): (block or None, inputs recorded inside the
    builder's model, what to report of how it was built)."""
    key, args, kwargs = attempt
    if key == "builder":
        recipe: List[Any] = []
        model, recorded, container = build_with(factory, cls, torch, nn, errors, recipe)
        return model, recorded, dict({"inside": container} if container else {}, **({"recipe": recipe[0]} if recipe and recipe[0] else {}))
    if UNRESOLVED in kwargs:
        errors.append(str(kwargs[UNRESOLVED]))
        return None, None, {}
    kwargs = dict(kwargs, **(overrides or {}))
    args = list(args)
    model = build(cls, args, kwargs, torch, nn, errors)
    seen = OBSERVED.get(key)
    recorded = None
    if model is not None and seen is not None:
        made = observed_inputs(seen.get("inputs"), torch)
        recorded = positional(model, made) if made is not None else None
    return model, recorded, dict({"kwargs": kwargs, "args": args}, **({"observed": seen["observed"]} if seen is not None else {}))


class Found:
    """The first attempt that built and ran forward."""

    def __init__(self, attempt: Attempt, inputs: List[Any], index: int, out: Any, model: Any) -> None:
        self.attempt, self.inputs, self.index, self.out, self.model = attempt, inputs, index, out, model


def search(
    cls: Any, attempts: List[Attempt], factory: Any, torch: Any, nn: Any, announce: Callable[[Dict[str, Any]], None], plan: Optional[Dict[str, Any]] = None
) -> Tuple[Optional[Found], List[str], Optional[str], bool]:
    """Build each attempt and drive it forward until one runs: (found, build errors, forward error, built any). With
    a plan, the argument set and input the original ran with are tried first."""
    errors: List[str] = []
    forward_error: Optional[str] = None
    built = False
    preferred = [a for a in attempts if plan is not None and a[0] == plan.get("attempt")]
    for attempt in preferred + [a for a in attempts if all(a is not p for p in preferred)]:
        model, recorded, extra = make(attempt, cls, factory, torch, nn, errors)
        if model is None:
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
        ran, error, out, inputs, index = run_forward(model, cls, torch, nn, extra.get("kwargs", {}), recorded, prefer)
        if ran:
            return Found(attempt, inputs, index, out, model), errors, None, True
        forward_error = forward_error or error
    return None, errors, forward_error, built


def covering(path: str) -> Tuple[Callable[[], None], Set[int]]:
    """Start recording which code of `path` runs (the first line of each function called); returns the stop."""
    seen: Set[int] = set()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == path:
            seen.add(frame.f_code.co_firstlineno)

    sys.setprofile(profile)
    return (lambda: sys.setprofile(None)), seen


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
        candidates = input_list(base, torch, nn, how.get("kwargs", {}), recorded, EXAMPLES)
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
        )
        done.append(str(v.get("label")))
    if stop is not None:
        stop()
    send(frame(PROBED, {"variants": done, **({"ran": sorted(seen)[:5000]} if coverage else {})}))


def run_copy(send: Callable[..., None], req: Dict[str, Any], torch: Any, nn: Any) -> None:
    """The copy's side: import, instantiate and forward, each tier reached a frame (the forward's with its outputs);
    then the probes of the original's plan, when one was given."""
    module = import_file(req["file"], req.get("native", []))
    send(frame(TIER, "imported"))
    TWINS.update(torch_twins(req["file"], vars(module), nn))
    cls = find_block(module, req.get("class"), nn)
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    send(frame(CLASS, str(cls.__name__), source=source))
    if inspect.isabstract(cls):
        raise Failure("instantiate", f"{cls.__name__} is abstract: {sorted(getattr(cls, '__abstractmethods__', []))}")
    builder = req.get("builder")
    factory = getattr(module, builder, None) if builder else None
    attempts = attempts_of(cls, module, req.get("candidates", []), factory, nn)
    plan = req.get("plan") if isinstance(req.get("plan"), dict) else None
    found, errors, forward_error, built = search(
        cls,
        attempts,
        factory,
        torch,
        nn,
        lambda r: send(frame(TIER, "instantiated", **{k: (builder if k == "builder" and v else v) for k, v in r.items() if k != TIER})),
        plan,
    )
    if found is None:
        error = forward_error if built else best_error(errors)
        # a module that exists nowhere, imported inside a function the block ran (a compiled operator)
        gone = MISSING_MODULE.search(error or "")
        native = [str(n) for n in req.get("native", [])]
        wanted = next((n for n in native if gone and (n == gone.group(1) or n.startswith(gone.group(1) + ".") or gone.group(1).startswith(n + "."))), None)
        if wanted:
            raise Failure(
                "native-extension",
                f"{cls.__name__} runs an import of {wanted}, a compiled module with no Python source "
                f"(nn-rag pull --build-native builds it where the repository has its C++ sources): {error}",
            )
        # a package the block's own construction or forward imports, missing here
        needs = missing_package(error)
        if needs:
            step = "forward" if built else "construction"
            raise Failure("missing-package", f"missing package '{needs}', which {cls.__name__}'s {step} imports: {error}", package=needs)
        if not built:
            tried = f" ({len(errors)} argument sets tried)" if len(errors) > 1 else ""
            raise Failure("instantiate", f"cannot build {cls.__name__}: {best_error(errors)}{tried}")
        if forward_error and NATIVE_OPS.search(forward_error):
            raise Failure("native-extension", f"{cls.__name__}.forward needs compiled operators that are not loaded: {forward_error}")
        raise Failure("forward", f"no input worked for {cls.__name__}.forward: {forward_error}")
    structure, tensors, values = tensor_evidence(found.out, torch, MAX_VALUES // 2)
    send(
        frame(
            FORWARD,
            {"input_shapes": [shapes(t) for t in found.inputs], "output": structure, "tensors": tensors, "attempt": found.attempt[0], "input": found.index},
        ),
        values,
    )
    if plan is not None:
        probe_plan(send, cls, attempts, factory, plan, torch, nn, coverage=req["file"], found=found)


def run_original(send: Callable[..., None], req: Dict[str, Any], torch: Any, nn: Any) -> None:
    """The original's side: import it, search as the copy does, report how far it got; when it ran forward, send the
    plan (the argument set and input that ran, the variants to probe) and probe it."""
    original = req["original"]
    try:
        load_natives(req.get("natives", []), os.path.dirname(str(req["file"])))
        module, how = import_original(original)
        cls = getattr(module, str(original["class"]))
    except BaseException as exc:  # noqa: BLE001 - a reason, not a verdict
        send(frame(UNAVAILABLE, f"the original cannot be imported: {type(exc).__name__}: {exc}"[:600]))
        return
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    send(frame(ORIGIN, {"file": source, "module": getattr(cls, "__module__", None), "how": how}))
    factory = None
    if req.get("builder"):
        b = original.get("builder") or {}
        try:
            factory = getattr(importlib.import_module(str(b["module"])), str(b["name"]))
        except BaseException as exc:  # noqa: BLE001
            send(frame(UNAVAILABLE, f"the original builder cannot be imported: {type(exc).__name__}: {exc}"[:600]))
            return
    # the repository's modules an observed call names (a configuration class the block's module never imports)
    OWN_PACKAGES.add(str(original["module"]).split(".")[0])
    for name in sorted(modules_named(req.get("candidates", []))):
        if name.split(".")[0] != str(original["module"]).split(".")[0] or not all(p.isidentifier() for p in name.split(".")):
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - that observation then cannot be replayed here
            pass
    attempts = attempts_of(cls, module, req.get("candidates", []), factory, nn)
    reached = ["imported"]
    found, errors, forward_error, _ = search(cls, attempts, factory, torch, nn, lambda r: reached.append("instantiated"))
    if found is None:
        why = forward_error or best_error(errors)
        send(frame(REACHED, reached[-1], error=str(why)[:500]))
        return
    send(frame(REACHED, "forward"))
    key, args, kwargs = found.attempt
    chosen = variants(cls, args, kwargs, cls) if key != "builder" else [({}, f"built by {original.get('builder', {}).get('name', 'its builder')}()")]
    if takes_a_list(found.model, found.inputs):
        chosen.insert(1, ({INPUT_FORM: "listed"}, "inputs as a list"))
    plan = {"attempt": key, "input": found.index, "variants": [{"label": label, "overrides": o} for o, label in chosen], "heavy": LAST_FORWARD_S[0] > HEAVY_S}
    send(frame(PLAN, plan))
    probe_plan(send, cls, attempts, factory, plan, torch, nn, found=found)


def constructed(make: Callable[[], Any], torch: Any) -> Any:
    """What `make` builds, as both sides build it: under seed 0, with uninitialised memory known (known_memory)."""
    seed_all(0, torch)
    known_memory(torch, True)
    try:
        return make()
    finally:
        known_memory(torch, False)


def known_memory(torch: Any, on: bool) -> None:
    """While a block is built: uninitialised memory (a parameter made with `torch.empty` and never filled) reads as NaN
    on both sides rather than as whatever each process's allocator held, where torch can (2.1+: deterministic
    algorithms, warnings only); otherwise two identical blocks differ. Off again for forward (filling every
    intermediate tensor doubles its cost)."""
    deterministic = getattr(getattr(torch, "utils", None), "deterministic", None)
    if deterministic is None or not hasattr(deterministic, "fill_uninitialized_memory"):
        return
    try:
        torch.use_deterministic_algorithms(on, warn_only=True)
        deterministic.fill_uninitialized_memory = on
    except Exception:  # noqa: BLE001 - an older torch: memory stays as it is
        pass


def limited(memory_mb: int) -> None:
    """A worker's limits (and a template's, before its imports): memory, files, no network."""
    if memory_mb:
        limit_memory(memory_mb)
    limit_files()
    block_network()


def prepare(role: str, spec: Dict[str, Any], memory_mb: int) -> None:
    """In a template (zygote.template_main), under a worker's limits: what every worker of `role` with `spec` imports
    first, imported once. The original's: its package, from the path its worker imports it from; the copy's: the
    installed modules its file imports before any statement of its own (the copy's own code never runs here).
    Raises when any of it fails (then there is no template, and each worker imports for itself)."""
    limited(memory_mb)
    import torch  # noqa: F401 - the zygote's, already loaded

    if role == "original":
        original_path(spec["original"])
        importlib.import_module(str(spec["package"]))
        return
    for name in spec["modules"]:
        # a module not installed is left to the worker (it may sit beside the file, which is on the path only there)
        if importlib.util.find_spec(str(name).split(".")[0]) is not None:
            importlib.import_module(str(name))


def entry(events: int, role: str, req: Dict[str, Any], memory_mb: int) -> None:
    """A worker's whole life: limits, torch, the role; never returns."""
    send = sender(events)
    exit_ = os._exit
    try:
        limited(memory_mb)
        global CALL
        set_target(str(req.get("file", "")))
        EXAMPLES[:] = [e for e in req.get("examples") or [] if isinstance(e, str)]
        try:
            import torch
            from torch import nn

            CALL = torch.nn.Module.__call__
        except Exception:  # noqa: BLE001 - the block's import names what is missing
            torch = nn = None
        if role == "observe":
            if torch is None:
                raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
            run_observe(send, req, torch, (input_list, module_call))
        elif role == "original":
            if torch is None:
                raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
            run_original(send, req, torch, nn)
        else:
            if torch is None:
                import_file(req["file"], req.get("native", []))
                raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
            run_copy(send, req, torch, nn)
    except Failure as failure:
        send(frame(FAILURE, dict(failure.extra, category=failure.category, message=failure.message)))
    except BaseException as exc:  # noqa: BLE001 - never leave the judge without a word
        try:
            send(frame(FAILURE, {"category": "error", "message": f"{type(exc).__name__}: {exc}"}))
        except BaseException:  # noqa: BLE001
            pass
    exit_(0)
