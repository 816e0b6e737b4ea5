"""Worker side: building the block: the argument sets to try (guessed, given, observed, a builder's), each built with
the repairs a constructor's error names, inside a model a builder makes when that is the only way; how the block is
called (its own `__call__`, or torch's as it was before the block's code ran)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from .context import job
from .arguments import constructor_candidates, given_candidates, guess_value, resolve_given, without_download
from .evidence import seed_all
from .inputs import lighter
from .inputs_layers import input_candidates
from .loading import where
from ..wire.protocol import Failure, steady
from .observe import observed_inputs
from .recipe import recipe_of, recording
from .repair import repaired


MAX_CONSTRUCTIONS = 8


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
                except Exception:  # noqa: BLE001, S110 - the hook may have fired before the failure
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


def module_call(model: Any) -> Any:
    """How to call the block: its own class's __call__ when it defines one, else torch's Module.__call__ as it was
    before the block's code ran (a block that replaces nn.Module.__call__ does not skip its own forward)."""
    for klass in type(model).__mro__:
        if "__call__" in klass.__dict__:
            if job().call is not None and klass.__module__.startswith("torch."):
                return job().call
            return klass.__dict__["__call__"]
    return job().call or type(model).__call__


def inner_of(model: Any, cls: Any) -> Any:
    """The block itself, or the first block of its class inside a model a builder made."""
    if isinstance(model, cls):
        return model
    return next((m for m in model.modules() if type(m) is cls), None) or next((m for m in model.modules() if isinstance(m, cls)), None)


Attempt = Tuple[Any, List[Any], Dict[str, Any]]  # ("builder" or the index of an argument set, args, kwargs)


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
    # the argument sets observed while the repository's own code ran (observe.py), by attempt key: where they were
    # seen and the inputs the block's forward got there
    job().observed.clear()
    out: List[Attempt] = []
    for k, g in enumerate(observed):
        # an observation is replayed as it was or not at all: a value the file cannot name is not guessed (the two
        # sides could guess it apart)
        unresolved = [n for n, v in [*enumerate(g.get("args", [])), *dict(g.get("kwargs", {})).items()] if not resolve_given(v, namespace)[0]]
        ((a, kw),) = given_candidates(cls, [g], nn, namespace)
        if unresolved:
            kw = {UNRESOLVED: f"the observed argument {unresolved[0]!r} names nothing the file defines"}
        key = f"observed:{k}"
        job().observed[key] = g
        out.append((key, a, kw))
    out += [("builder", [], {})] if factory is not None else []
    constructed_sets = constructor_candidates(cls, plain, nn, namespace)[:MAX_CONSTRUCTIONS]
    sets = constructed_sets + given_candidates(cls, documented, nn, namespace)
    out += [(k, a, kw) for k, (a, kw) in enumerate(sets)]
    # after the repository's own calls: the defaults and the guesses
    job().guessed = set(range(min(len(plain), len(constructed_sets)), len(constructed_sets)))
    return out


MAX_OBSERVED = 4


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
    seen = job().observed.get(key)
    recorded = None
    if model is not None and seen is not None:
        made = observed_inputs(seen.get("inputs"), torch)
        recorded = positional(model, made) if made is not None else None
    return model, recorded, dict({"kwargs": kwargs, "args": args}, **({"observed": seen["observed"]} if seen is not None else {}))


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
    except Exception:  # noqa: BLE001, S110 - an older torch: memory stays as it is
        pass
