"""Worker side: how a repository really builds and calls its blocks, observed by running its own code (its tests).

The request names the repository's folder (read-only in the sandbox), the folders its modules import from and the
entry points to run: test functions (`test_*`, with the first values of each `pytest.mark.parametrize`), methods of
test classes and of `unittest.TestCase`s; builders (called without a download, and what they build fed once with the
inputs the judge would try); configuration files (`model = dict(type=...)`, built by the repository's registry);
the README's code blocks that import the repository.
While each runs, a profile hook watches every `__init__` and `forward` whose
code lives in the repository: the outermost constructor call of each object (its class, its arguments) and the first
forward call of each object whose construction was seen (its inputs). A construction is sent in the argument language
the judge replays (recipe.py: literals, `$call`, `$name`, `$partial`...; repository classes by their own names, torch's
by their dotted path) and the inputs as descriptions (`{"$tensor": {dtype, shape, min, max, values}}`: small tensors
whole, others by dtype, shape and value range), which `observed_inputs` turns back into tensors alike on both sides.
Nothing here decides a verdict: a failing entry says why and the others still run. Runs only in a worker.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import inspect
import json
import math
import os
import signal
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

from .arguments import without_download
from .inputs import entry_layer, lighter
from .loading import develop_distributions, load_natives
from .protocol import OBSERVED, frame, remove_tree
from .recipe import Recorder, Unwritable, is_scalar, scalar, written

# observations kept per class, and forward calls recorded per class
PER_CLASS = 4
# a tensor of at most this many elements is sent whole; larger ones by dtype, shape and value range
WHOLE_TENSOR = 64
# a tensor larger than this is not replayed (an observed input the judge could not afford to build)
LARGEST_TENSOR = 1 << 22
MAX_DEPTH = 6
MAX_ITEMS = 64
# a sent observation's JSON length cap
MAX_CALL_CHARS = 20_000
# a block built with more parameters than this is not kept (a whole model at full size, which a builder made: the
# judge would build it twice per attempt)
LARGEST_BLOCK = 50_000_000


class EntryTimeout(BaseException):
    """An entry ran past its budget (a BaseException: a test's `except Exception` does not swallow it)."""


class Observer:
    """Constructions and first forward inputs of the repository's classes, seen through a profile hook."""

    def __init__(self, root: str, torch: Any) -> None:
        self.root = os.path.join(os.path.realpath(root), "")
        self.torch = torch
        self.rec = Recorder()
        self.inputs: Dict[int, Tuple[Tuple[Any, ...], Dict[str, Any]]] = {}
        self.codes: Dict[Any, bool] = {}
        self.forwarded: Dict[type, int] = {}
        self.types: Dict[type, bool] = {}
        self.torch_dir = os.path.dirname(str(getattr(torch, "__file__", "") or "/nonexistent/x"))
        # files the entry read as data (a config and its bases): its observations stay true while they are unchanged
        self.read: List[str] = []

    def ours(self, code: Any) -> bool:
        """Whether a code object is the repository's (cached per code object)."""
        known = self.codes.get(code)
        if known is None:
            known = self.codes[code] = os.path.realpath(code.co_filename).startswith(self.root)
        return known

    def ours_type(self, cls: type) -> bool:
        """Whether a class is defined in the repository (one that inherits torch's `__init__` or `forward`)."""
        known = self.types.get(cls)
        if known is None:
            try:
                where = inspect.getsourcefile(cls)
            except TypeError:
                where = None
            known = self.types[cls] = bool(where) and os.path.realpath(str(where)).startswith(self.root)
        return known

    def profile(self, frame: Any, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_name not in ("__init__", "forward") or not code.co_argcount:
            return
        # the repository's own methods, and torch's when they run for an object of a repository class
        mine = self.ours(code)
        if not mine and not code.co_filename.startswith(self.torch_dir):
            return
        try:
            me = frame.f_locals.get(code.co_varnames[0])
            if code.co_name == "__init__":
                if id(me) not in self.rec.calls and (mine or self.ours_type(type(me))):
                    args, kwargs = arguments_of(frame, type(me), "__init__")
                    self.rec.calls[id(me)] = (type(me), args, kwargs)
                    self.rec.keep.append(me)
            elif id(me) in self.rec.calls and id(me) not in self.inputs and self.forwarded.get(type(me), 0) < PER_CLASS:
                self.inputs[id(me)] = arguments_of(frame, type(me), "forward", keep_defaults=False)
                self.forwarded[type(me)] = self.forwarded.get(type(me), 0) + 1
        except Exception:  # noqa: BLE001 - watching never breaks what is watched
            pass


def arguments_of(frame: Any, cls: type, method: str, keep_defaults: bool = False) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """The arguments a call got, read from its frame as the call starts: positional where `*args` follows, by
    keyword otherwise; a value that is its parameter's default left out."""
    info = inspect.getargvalues(frame)
    named = info.args[1:]
    values = info.locals
    function = next((k.__dict__[method] for k in cls.__mro__ if getattr(k.__dict__.get(method), "__code__", None) is frame.f_code), None)
    defaults: Dict[str, Any] = {}
    if function is not None and not keep_defaults:
        try:
            defaults = {p.name: p.default for p in inspect.signature(function).parameters.values() if p.default is not p.empty}
        except (TypeError, ValueError):
            defaults = {}
    extra = tuple(values.get(info.varargs) or ()) if info.varargs else ()
    kw_only = set(frame.f_code.co_varnames[frame.f_code.co_argcount : frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount])
    args: List[Any] = []
    kwargs: Dict[str, Any] = {}
    for name in named:
        value = values.get(name)
        if name in kw_only or not extra:
            if name in defaults and defaults[name] is value:
                continue
            kwargs[name] = value
        else:
            args.append(value)
    for name in kw_only:
        if name not in named and name in values and not (name in defaults and defaults[name] is values[name]):
            kwargs[name] = values[name]
    if info.keywords:
        kwargs.update(values.get(info.keywords) or {})
    return tuple(args) + extra, kwargs


def dotted(value: Any, root: str) -> Any:
    """How the pulled file names a class or function: a repository's by its own name (with the module defining it,
    for the original's side, whose module may not import it), torch's by its dotted path."""
    module = str(getattr(value, "__module__", "") or "")
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(name, str) or "<" in name:
        raise Unwritable("a local class or function")
    if module.split(".")[0] == "torch":
        public = {"torch.nn.modules": "torch.nn", "torch.nn.functional": "torch.nn.functional"}
        for prefix, short in public.items():
            if module.startswith(prefix) and getattr(importlib.import_module(short), name, None) is value:
                return f"{short}.{name}"
        if getattr(sys.modules.get("torch"), name, None) is value:
            return f"torch.{name}"
        return f"{module}.{name}"
    where = inspect.getsourcefile(value) if inspect.isclass(value) or inspect.isfunction(value) else None
    if where and os.path.realpath(where).startswith(root) and "." not in name:
        return name, module
    raise Unwritable(f"{name} is neither the repository's nor torch's")


def described(value: Any, torch: Any, depth: int = 0) -> Any:
    """An input as the judge rebuilds it: literals as they are, tensors by dtype and shape (whole when small, with
    their value range otherwise), containers item by item; Unwritable for anything else."""
    if depth > MAX_DEPTH:
        raise Unwritable("too deep")
    if is_scalar(value):
        return scalar(value)
    if torch.is_tensor(value):
        if value.is_sparse or value.numel() > LARGEST_TENSOR or value.is_complex():
            raise Unwritable("a tensor too large or of a kind not replayed")
        t = value.detach()
        out: Dict[str, Any] = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}
        if t.numel():
            flat = t.reshape(-1)
            if t.dtype == torch.bool:
                flat = flat.to(torch.int64)
            out["min"], out["max"] = float(flat.min()), float(flat.max())
            if not (math.isfinite(out["min"]) and math.isfinite(out["max"])):
                del out["min"], out["max"]
            if t.numel() <= WHOLE_TENSOR and t.dtype not in (torch.float16, torch.bfloat16):
                values = flat.tolist()
                if all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                    out["values"] = values
        return {"$tensor": out}
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise Unwritable("a long sequence")
        items = [described(v, torch, depth + 1) for v in value]
        return items if isinstance(value, list) else {"$tuple": items}
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise Unwritable("a large mapping")
        if all(isinstance(k, str) for k in value):
            return {"$dict": {k: described(v, torch, depth + 1) for k, v in value.items()}}
        # keys that are tuples of names (a graph's edge types: ("paper", "cites", "paper")), or other literals
        return {"$items": [[described(k, torch, depth + 1), described(v, torch, depth + 1)] for k, v in value.items()]}
    raise Unwritable(f"a {type(value).__name__}")


def observed_inputs(desc: Any, torch: Any) -> Optional[Tuple[List[Any], Dict[str, Any]]]:
    """An observed call's inputs made again (seeded: alike on both sides), or None when they cannot be."""
    if not isinstance(desc, dict) or not isinstance(desc.get("args"), list) or not isinstance(desc.get("kwargs"), dict):
        return None
    generator = torch.Generator().manual_seed(0)
    if described_elements(desc) > 2 * LARGEST_TENSOR:
        return None
    try:
        return ([rebuilt(v, torch, generator) for v in desc["args"]], {str(k): rebuilt(v, torch, generator) for k, v in desc["kwargs"].items()})
    except (Unwritable, TypeError, ValueError, RuntimeError, AttributeError):
        return None


def described_elements(value: Any, depth: int = 0) -> int:
    """The tensor elements an input description asks for in all (a description from an index is not trusted)."""
    if not isinstance(value, (list, dict)):
        return 0
    if depth > MAX_DEPTH + 4:
        return LARGEST_TENSOR * 4
    if isinstance(value, list):
        return sum(described_elements(v, depth + 1) for v in value[: MAX_ITEMS * 4]) + (LARGEST_TENSOR * 4 if len(value) > MAX_ITEMS * 4 else 0)
    spec = value.get("$tensor")
    if isinstance(spec, dict):
        shape = spec.get("shape")
        return math.prod(int(n) for n in shape if isinstance(n, int)) if isinstance(shape, list) and len(shape) <= 8 else LARGEST_TENSOR * 4
    return sum(described_elements(v, depth + 1) for v in list(value.values())[: MAX_ITEMS * 4])


def rebuilt(value: Any, torch: Any, generator: Any) -> Any:
    if isinstance(value, list):
        return [rebuilt(v, torch, generator) for v in value]
    if not isinstance(value, dict):
        return value
    if "$float" in value:
        return float(value["$float"])
    if "$tuple" in value and isinstance(value["$tuple"], list):
        return tuple(rebuilt(v, torch, generator) for v in value["$tuple"])
    if "$dict" in value and isinstance(value["$dict"], dict):
        return {str(k): rebuilt(v, torch, generator) for k, v in value["$dict"].items()}
    if "$items" in value and isinstance(value["$items"], list):
        pairs = [(rebuilt(p[0], torch, generator), rebuilt(p[1], torch, generator)) for p in value["$items"] if isinstance(p, list) and len(p) == 2]
        if not all(is_scalar(k) or (isinstance(k, tuple) and all(is_scalar(x) for x in k)) for k, _ in pairs):
            raise Unwritable("a key that is not a literal")
        return dict(pairs)
    spec = value.get("$tensor")
    if not isinstance(spec, dict):
        raise Unwritable("not an input description")
    dtype = getattr(torch, str(spec.get("dtype")), None)
    if dtype == torch.float64 and torch.get_default_dtype() == torch.float32:
        # a test that made double the default (`torch.set_default_dtype(torch.float64)`): the block is built in float
        dtype = torch.float32
    shape = [int(n) for n in spec.get("shape", [])]
    if not isinstance(dtype, torch.dtype) or any(n < 0 for n in shape) or math.prod(shape) > LARGEST_TENSOR:
        raise Unwritable("a tensor that cannot be made")
    if isinstance(spec.get("values"), list) and len(spec["values"]) == math.prod(shape):
        return torch.tensor(spec["values"], dtype=torch.float64 if dtype.is_floating_point else torch.int64).to(dtype).reshape(shape)
    low, high = spec.get("min"), spec.get("max")
    if not dtype.is_floating_point:
        # integers (and booleans) in the range seen: an index stays below the size it indexes, a mask all set stays so
        lo = int(low) if isinstance(low, (int, float)) else 0
        hi = int(high) if isinstance(high, (int, float)) else (1 if dtype == torch.bool else lo + 8)
        return torch.randint(lo, max(hi, lo) + 1, shape, generator=generator).to(dtype)
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low >= 0:
        # a mask, a probability, a distance: values in the range seen
        return (torch.rand(shape, generator=generator) * (high - low) + low).to(dtype)
    return torch.randn(shape, generator=generator).to(dtype)


def entry_callables(module: Any, entry: Dict[str, Any], root: str, observer: "Observer", feeder: Feeder) -> List[Callable[[], Any]]:
    """The calls an entry stands for: a test function with the first values of each parametrize mark and its simple
    fixtures; a test class's method on a new object (a `unittest.TestCase` through `debug()`, its setUp and tearDown
    included); a builder called and what it built fed once (`built_and_fed`); a config's model built; a README code
    block run as it is written."""
    owner = entry.get("class")
    name = str(entry["function"])
    if entry.get("kind") == "build":
        target = getattr(module, name)
        return [lambda: built_and_fed(lambda: target, observer, feeder)]
    if entry.get("kind") == "example":
        code = compile(str(entry["code"]), os.path.join(root, "README.md"), "exec")
        return [lambda: exec(code, {"__name__": "__readme__", "__builtins__": __builtins__})]  # noqa: S102 - the repository's own code, in the sandbox
    if entry.get("kind") == "config":
        return [lambda: built_and_fed(lambda: from_config(root, entry, observer), observer, feeder)]
    if owner:
        cls = getattr(module, str(owner))
        try:
            import unittest

            if issubclass(cls, unittest.TestCase):
                return [lambda: cls(name).debug()]
        except ImportError:
            pass
        instance = cls()
        target = getattr(instance, name)
        fixtures = Fixtures(module, root)
        return [lambda kw=kw: xunit_call(cls, instance, target, lambda: fixtures.call(target, kw)) for kw in parametrized(target)]
    target = getattr(module, name)
    fixtures = Fixtures(module, root)
    return [lambda kw=kw: fixtures.call(target, kw) for kw in parametrized(target)]


def xunit_call(cls: Any, instance: Any, method: Any, call: Callable[[], Any]) -> None:
    """A test class's method as pytest runs it: its class's `setup_class` (with the class) and the object's
    `setup_method` (with the method, where it takes one) first, their `teardown_*` after."""

    def with_optional(func: Any, arg: Any) -> None:
        try:
            takes = len(
                [p for p in inspect.signature(func).parameters.values() if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            )
        except (TypeError, ValueError):
            takes = 0
        func(arg) if takes else func()

    def of_class(attr: str) -> None:
        func = next((k.__dict__[attr] for k in cls.__mro__ if attr in k.__dict__), None)
        if func is not None:
            with_optional(getattr(func, "__func__", func), cls)

    of_class("setup_class")
    setup = getattr(instance, "setup_method", None)
    if callable(setup):
        with_optional(setup, method)
    try:
        call()
    finally:
        teardown = getattr(instance, "teardown_method", None)
        if callable(teardown):
            with_optional(teardown, method)
        of_class("teardown_class")


# inputs tried on what a builder built, at most, and the side of the image a whole image model is fed last
FEEDS = 6
WHOLE_IMAGE = 224


# what the judge would feed a block (worker.input_list) and how it calls one (worker.module_call): given by the worker,
# which imports this module
Feeder = Tuple[Callable[..., List[List[Any]]], Callable[[Any], Any]]


def built_and_fed(make: Callable[[], Any], observer: "Observer", feeder: Feeder) -> None:
    """Call a builder (`make()` gives it) with its defaults (no download), and feed a block it returns with the inputs
    the judge would try, the first that runs: its blocks' constructions are what the builder did; their inputs are
    those of a forward of the whole that ran (what an input that failed reached is forgotten)."""
    torch = observer.torch
    target = make()
    if isinstance(target, torch.nn.Module):
        built = target
    else:
        built = target(**without_download(target))
    if not isinstance(built, torch.nn.Module):
        return
    input_list, module_call = feeder
    built.eval()
    lighter(built)
    call = module_call(built)
    errors: List[str] = []
    candidates = input_list(built, torch, torch.nn, {}, None)[:FEEDS]
    # a whole model that starts with an image layer: also the image size such models are made for
    first = entry_layer(built, torch.nn)
    if isinstance(first, torch.nn.Conv2d) and first.in_channels in (1, 3):
        candidates.append([torch.randn(1, first.in_channels, WHOLE_IMAGE, WHOLE_IMAGE)])
    with torch.no_grad():
        for inputs in candidates:
            kept, counts = dict(observer.inputs), dict(observer.forwarded)
            try:
                torch.manual_seed(1)
                call(built, *inputs)
                return
            except Exception as exc:  # noqa: BLE001 - the next input may run
                errors.append(f"{type(exc).__name__}: {exc}")
                observer.inputs, observer.forwarded = kept, counts
    if errors:
        raise RuntimeError(f"built, but no input ran its forward ({errors[0][:200]})")


def inside(root: str, relative: str) -> str:
    """A file of the repository by its relative path, refused when it resolves outside the folder (a link)."""
    path = os.path.realpath(os.path.join(root, relative))
    if not path.startswith(os.path.join(os.path.realpath(root), "")):
        raise ValueError(f"{relative} is not inside the repository")
    return path


def from_config(root: str, entry: Dict[str, Any], observer: "Observer") -> Any:
    """The model a configuration file describes (`model = dict(type=..., ...)`), built by the repository's registry
    that knows its type (the modules that register classes imported first when none does yet): read by mmengine's
    Config where the interpreter has it (the repository's own reader: `_base_` files, substitutions), else by running
    the file and its `_base_` files and merging their dicts."""
    config = read_config(root, inside(root, str(entry["file"])), observer)
    model: Any = config.get("model") if hasattr(config, "get") else None
    kind = model.get("type") if hasattr(model, "get") else None
    # a config written in Python with imports (mmengine's `mmpretrain/configs/`): the type is the class itself
    if not isinstance(kind, str) and not inspect.isclass(kind):
        raise ValueError("the config has no model dict with a type")
    registries = []
    for module_name, name in entry.get("registries") or []:
        registry = getattr(importlib.import_module(str(module_name)), str(name), None)
        if registry is not None and callable(getattr(registry, "build", None)) and callable(getattr(registry, "get", None)):
            registries.append(registry)
    if not registries:
        raise ValueError("none of the repository's registries could be imported")
    for imported in (False, True):
        if imported:
            for module_name in entry.get("modules") or []:
                try:
                    importlib.import_module(str(module_name))
                except Exception:  # noqa: BLE001 - a module with an optional dependency registers nothing here
                    continue
        for registry in registries:
            try:
                known = inspect.isclass(kind) or registry.get(kind) is not None
            except Exception:  # noqa: BLE001 - a registry that raises for an unknown type
                known = False
            if known:
                return registry.build(model)
    raise ValueError(f"no registry of the repository knows the type {kind!r}")


def read_config(root: str, path: str, observer: "Observer", depth: int = 0) -> Any:
    if depth == 0:
        try:
            from mmengine.config import Config  # noqa: PLC0415 - the repository's own reader, where installed
        except ImportError:
            Config = None  # noqa: N806
        if Config is not None:
            observer.read.append(path)
            return Config.fromfile(path)
    if depth > 8:
        raise ValueError("the config's _base_ files nest too deep")
    import runpy  # noqa: PLC0415

    observer.read.append(path)
    values = {k: v for k, v in runpy.run_path(path).items() if not k.startswith("__") and not inspect.ismodule(v)}
    bases = values.pop("_base_", [])
    merged: Dict[str, Any] = {}
    for base in [bases] if isinstance(bases, str) else list(bases):
        # a base names a file beside this one (`../_base_/models/resnet50.py`), inside the repository
        where_ = inside(root, os.path.join(os.path.relpath(os.path.dirname(path), root), str(base)))
        merged = merged_config(merged, read_config(root, where_, observer, depth + 1))
    return merged_config(merged, values)


def merged_config(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """`over` on `base`, dicts merged key by key (`_delete_=True` replaces instead), as OpenMMLab's configs inherit."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and not value.get("_delete_"):
            out[key] = merged_config(out[key], value)
        else:
            out[key] = {k: v for k, v in value.items() if k != "_delete_"} if isinstance(value, dict) else value
    return out


class Fixtures:
    """The fixtures a test may ask for, found as pytest finds them: the test module's own, then those of the
    `conftest.py` files from the repository's folder down to the test's; and `tmp_path` and `monkeypatch`. A fixture
    with parameters, or one that asks for what is not here (`request`), leaves its test unrun."""

    def __init__(self, module: Any, root: str) -> None:
        self.found: Dict[str, Any] = {}
        self.autouse: List[str] = []
        here = os.path.dirname(os.path.realpath(str(getattr(module, "__file__", "") or "")))
        chain: List[str] = []
        while here.startswith(root.rstrip(os.sep)) and here not in chain:
            chain.insert(0, here)
            here = os.path.dirname(here)
        for folder in chain:
            conftest = os.path.join(folder, "conftest.py")
            if os.path.isfile(conftest):
                self.collect(load_conftest(conftest))
        self.collect(module)

    def collect(self, module: Any) -> None:
        for value in list(vars(module).values()) if module is not None else []:
            about = fixture_of(value)
            if about is not None:
                self.found[about["name"]] = about
                if about["autouse"] and about["name"] not in self.autouse:
                    self.autouse.append(about["name"])

    def call(self, fn: Any, given: Dict[str, Any]) -> Any:
        """`fn` called with `given` and the fixtures its other parameters name (autouse ones set up first), each
        fixture's teardown run after, in reverse."""
        made: Dict[str, Any] = {}
        teardown: List[Callable[[], Any]] = []
        try:
            for name in self.autouse:
                self.value(name, made, teardown, 0)
            kwargs = dict(given)
            for p in inspect.signature(fn).parameters.values():
                if p.name not in kwargs and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    kwargs[p.name] = self.value(p.name, made, teardown, 0)
            return fn(**kwargs)
        finally:
            for undo in reversed(teardown):
                try:
                    undo()
                except Exception:  # noqa: BLE001 - a teardown that fails does not hide what the test built
                    pass

    def value(self, name: str, made: Dict[str, Any], teardown: List[Callable[[], Any]], depth: int) -> Any:
        if name in made:
            return made[name]
        if depth > 10:
            raise LookupError(f"the fixture '{name}' needs too many others")
        if name == "tmp_path" and name not in self.found:
            import pathlib
            import tempfile

            made[name] = pathlib.Path(tempfile.mkdtemp())
            return made[name]
        if name == "monkeypatch" and name not in self.found:
            patch = MonkeyPatch()
            teardown.append(patch.undo)
            made[name] = patch
            return patch
        about = self.found.get(name)
        if about is None or about.get("params"):
            raise LookupError(f"needs the fixture '{name}'")
        fn = about["function"]
        kwargs = {
            p.name: self.value(p.name, made, teardown, depth + 1)
            for p in inspect.signature(fn).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        }
        result = fn(**kwargs)
        if inspect.isgenerator(result):
            gen = result
            result = next(gen)
            teardown.append(lambda: next(gen, None))
        made[name] = result
        return result


def fixture_of(value: Any) -> Optional[Dict[str, Any]]:
    """What makes `value` a fixture (its name, whether it is autouse, its parameters, the function), whichever pytest
    defined it (the stand-in's mark, pytest's `_pytestfixturefunction`, pytest 8.4's fixture definitions); else None."""
    mine = getattr(value, "_nnrag_fixture", None)
    if isinstance(mine, dict):
        return dict(mine, function=value)
    marker = getattr(value, "_pytestfixturefunction", None) or getattr(value, "_fixture_function_marker", None)
    if marker is not None:
        fn = getattr(value, "_get_wrapped_function", None)
        fn = fn() if callable(fn) else getattr(getattr(value, "__pytest_wrapped__", None), "obj", None) or getattr(value, "__wrapped__", value)
        return {
            "name": getattr(marker, "name", None) or getattr(fn, "__name__", ""),
            "autouse": bool(getattr(marker, "autouse", False)),
            "params": getattr(marker, "params", None),
            "function": fn,
        }
    return None


def load_conftest(path: str) -> Any:
    """A `conftest.py` imported as pytest does (by its path), once."""
    name = "conftest_" + str(abs(hash(path)))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - a conftest that does not import gives no fixtures
        return None
    return module


class MonkeyPatch:
    """The part of pytest's `monkeypatch` tests use to set things up: attributes, items, the environment, the
    folder; all undone after the test."""

    def __init__(self) -> None:
        self.undos: List[Callable[[], Any]] = []

    def setattr(self, target: Any, name: Any, value: Any = None, raising: bool = True) -> None:
        if isinstance(target, str):
            module_name, _, attr = target.rpartition(".")
            target, name, value = importlib.import_module(module_name), attr, name
        old = getattr(target, name, None)
        setattr(target, name, value)
        self.undos.append(lambda: setattr(target, name, old))

    def delattr(self, target: Any, name: str, raising: bool = True) -> None:
        if hasattr(target, name):
            old = getattr(target, name)
            delattr(target, name)
            self.undos.append(lambda: setattr(target, name, old))

    def setitem(self, mapping: Any, key: Any, value: Any) -> None:
        had, old = key in mapping, mapping.get(key)
        mapping[key] = value
        self.undos.append(lambda: mapping.__setitem__(key, old) if had else mapping.pop(key, None))

    def setenv(self, name: str, value: str, prepend: Any = None) -> None:
        self.setitem(os.environ, name, str(value))

    def delenv(self, name: str, raising: bool = True) -> None:
        if name in os.environ:
            old = os.environ.pop(name)
            self.undos.append(lambda: os.environ.__setitem__(name, old))

    def chdir(self, path: Any) -> None:
        old = os.getcwd()
        os.chdir(path)
        self.undos.append(lambda: os.chdir(old))

    def syspath_prepend(self, path: Any) -> None:
        sys.path.insert(0, str(path))
        self.undos.append(lambda: sys.path.remove(str(path)) if str(path) in sys.path else None)

    def undo(self) -> None:
        for step in reversed(self.undos):
            step()
        self.undos.clear()


# the parameter sets of one test run at most (each value of every parametrize mark is among them)
MAX_PARAMETER_SETS = 8


def parameter_rows(mark: Any) -> Optional[Tuple[List[str], List[Tuple[Any, ...]]]]:
    """The names of one `parametrize` mark and its rows, each a tuple of one value per name (`pytest.param(...)`
    gives its values as they are: one name's row is `(value,)`, never the tuple of values)."""
    if getattr(mark, "name", None) != "parametrize" or len(getattr(mark, "args", ())) < 2:
        return None
    names, values = mark.args[0], list(mark.args[1])
    names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
    rows: List[Tuple[Any, ...]] = []
    for value in values:
        given = getattr(value, "values", None)
        if isinstance(given, tuple) and type(value).__name__ in ("ParameterSet", "Param"):
            rows.append(given)
        else:
            rows.append(tuple(value) if len(names) > 1 else (value,))
    return names, rows


def parametrized(fn: Any) -> List[Dict[str, Any]]:
    """Keyword arguments for a test, one dict per run: every value of each `parametrize` mark is in one of them (the
    marks' rows taken in step, the shorter ones from their start again), at most MAX_PARAMETER_SETS (its other
    parameters are fixtures)."""
    marks = [rows for rows in (parameter_rows(m) for m in getattr(fn, "pytestmark", []) or []) if rows is not None]
    if any(not rows for _names, rows in marks):
        return []
    longest = max((len(rows) for _names, rows in marks), default=1)
    runs: List[Dict[str, Any]] = []
    for i in range(min(longest, MAX_PARAMETER_SETS)):
        given: Dict[str, Any] = {}
        for names, rows in marks:
            given.update(dict(zip(names, rows[i % len(rows)])))
        runs.append(given)
    return runs


class Mark:
    """What a test's `@pytest.mark.NAME(...)` leaves on it, as pytest leaves it (`fn.pytestmark`)."""

    def __init__(self, name: str, args: Tuple[Any, ...] = (), kwargs: Optional[Dict[str, Any]] = None) -> None:
        self.name, self.args, self.kwargs = name, args, kwargs or {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            fn = args[0]
            try:
                fn.pytestmark = [*getattr(fn, "pytestmark", []), self]
            except (AttributeError, TypeError):
                pass
            return fn
        return Mark(self.name, args, kwargs)


class Marks:
    def __getattr__(self, name: str) -> Mark:
        return Mark(name)


def pytest_stand_in() -> Any:
    """Where the interpreter has no pytest, the little of it that test modules use at import and in a test's body
    (marks, `fixture`, `raises`, `skip`, `importorskip`, `param`), so that their tests can still be observed."""
    import contextlib
    import types

    module = types.ModuleType("pytest")

    class Skipped(Exception):
        pass

    def fixture(*args: Any, **kwargs: Any) -> Any:
        def mark(fn: Any) -> Any:
            fn._nnrag_fixture = {"autouse": bool(kwargs.get("autouse")), "name": kwargs.get("name") or fn.__name__, "params": kwargs.get("params")}
            return fn

        return mark(args[0]) if len(args) == 1 and callable(args[0]) else mark

    @contextlib.contextmanager
    def raises(expected: Any, *_args: Any, **_kwargs: Any) -> Any:
        try:
            yield None
        except expected:
            return
        raise AssertionError(f"did not raise {expected}")

    def skip(reason: str = "", **_kwargs: Any) -> None:
        raise Skipped(reason)

    def importorskip(name: str, *_args: Any, **_kwargs: Any) -> Any:
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            raise Skipped(str(exc))

    class Param:
        def __init__(self, *values: Any, **_kwargs: Any) -> None:
            self.values = values

    @contextlib.contextmanager
    def warns(expected: Any = Warning, *_args: Any, **_kwargs: Any) -> Any:
        import warnings

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            yield seen

    class Approx:
        """`x == approx(y)`: equal within pytest's default tolerances (relative 1e-6, absolute 1e-12), element-wise."""

        def __init__(self, expected: Any, rel: Optional[float] = None, abs: Optional[float] = None, **_kwargs: Any) -> None:  # noqa: A002
            self.expected, self.rel, self.abs = expected, 1e-6 if rel is None else rel, 1e-12 if abs is None else abs

        def close(self, got: Any, want: Any) -> bool:
            if hasattr(got, "shape") or hasattr(want, "shape"):
                torch = sys.modules.get("torch")
                try:
                    return (
                        bool(
                            torch.allclose(torch.as_tensor(got, dtype=torch.float64), torch.as_tensor(want, dtype=torch.float64), rtol=self.rel, atol=self.abs)
                        )
                        if torch is not None
                        else got == want
                    )
                except (TypeError, RuntimeError, ValueError):
                    return False
            if isinstance(want, dict) and isinstance(got, dict):
                return got.keys() == want.keys() and all(self.close(got[k], want[k]) for k in want)
            if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
                return len(got) == len(want) and all(self.close(g, w) for g, w in zip(got, want))
            try:
                return math.isclose(float(cast(Any, got)), float(cast(Any, want)), rel_tol=self.rel, abs_tol=self.abs)
            except (TypeError, ValueError):
                return bool(got == want)

        def __eq__(self, other: Any) -> bool:
            return self.close(other, self.expected)

        __hash__ = None  # type: ignore[assignment]

    skip.Exception = Skipped  # type: ignore[attr-defined]
    module.__dict__.update(
        mark=Marks(), fixture=fixture, raises=raises, skip=skip, importorskip=importorskip, param=Param, approx=Approx, warns=warns, MonkeyPatch=MonkeyPatch
    )
    return module


class MissingModule:
    """What a test module's import of a package the interpreter lacks stands in for (`MissingFinder`): every name of it
    is there, and using one raises the import's error, as the entry would have met it where it needs the package."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        # a private or special name is asked by tools that inspect objects (pytest's fixture marks): not a use
        if attr.startswith("_"):
            raise AttributeError(attr)
        return MissingModule(f"{self._name}.{attr}")

    def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        raise ModuleNotFoundError(f"No module named '{self._name.split('.')[0]}' (the interpreter lacks it; {self._name} was used)")

    def __mro_entries__(self, _bases: Any) -> Any:
        self()


class MissingFinder:
    """Last on `sys.meta_path` in an observer's worker: a module no other finder finds, imported by a test module's own
    statement (a test file or a `conftest.py` of the repository), stands in, so one optional package the interpreter
    lacks does not stop the entries that never use it (the closure's optional imports do the same in a pulled file).
    The repository's other code, and `pytest.importorskip`, still meet the ImportError they expect."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.stood_in: List[str] = []

    def importer_is_a_test(self) -> bool:
        frame_ = sys._getframe(2)
        while frame_ is not None and ("importlib" in frame_.f_code.co_filename or frame_.f_code.co_filename.startswith("<frozen")):
            frame_ = frame_.f_back
        if frame_ is None or frame_.f_code.co_name != "<module>":
            return False
        file = str(frame_.f_globals.get("__file__") or "")
        base = os.path.basename(file)
        return os.path.realpath(file).startswith(self.root) and (base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py")

    def find_spec(self, name: str, _path: Any = None, _target: Any = None) -> Any:
        top = name.split(".")[0]
        if top not in self.stood_in and (name != top or not self.importer_is_a_test()):
            return None
        if top not in self.stood_in:
            self.stood_in.append(top)
        return importlib.util.spec_from_loader(name, cast(Any, self), is_package=True)

    def create_module(self, spec: Any) -> Any:
        module = MissingModule(spec.name)
        return module

    def exec_module(self, module: Any) -> None:
        pass


def base_folder(root: str, relative: str) -> Optional[str]:
    """The folder pytest puts on the path for a test file (its "prepend" import mode): the first folder above the file
    without an `__init__.py`, so that a test imports the helpers beside it by bare name. Only inside the repository."""
    if not relative or relative.startswith("/") or ".." in relative.split("/"):
        return None
    folder = os.path.dirname(os.path.join(root, relative))
    while folder.startswith(root) and os.path.isfile(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    return folder if folder.startswith(root.rstrip("/")) else None


def import_name(root: str, relative: str, test_folder: Optional[str], module: str) -> str:
    """The name pytest's prepend mode imports a test file by: its path from `test_folder` (the first folder above it
    without an `__init__.py`), so `tests/test_ops/test_x.py` of a `tests` folder that is no package is `test_x`, never
    `tests.test_ops.test_x`, which another repository's `tests` package on the path would shadow. A module of that
    name loaded from another file (an earlier entry's) is let go first."""
    if not test_folder or not relative.endswith(".py"):
        return module
    path = os.path.join(root, relative)
    name = os.path.relpath(path, test_folder)[:-3].replace(os.sep, ".")
    if not name or name.startswith(".") or name.endswith(".__init__"):
        return module
    loaded = sys.modules.get(name)
    if loaded is not None and os.path.realpath(str(getattr(loaded, "__file__", "") or "")) != os.path.realpath(path):
        del sys.modules[name]
    return name


def root_view(root: str, scratch: str) -> str:
    """A folder in `scratch` holding a link to each entry of the repository's root: the working folder of a test."""
    view = os.path.join(scratch, "cwd")
    os.makedirs(view, exist_ok=True)
    try:
        names = os.listdir(root)
    except OSError:
        return view
    for name in names:
        try:
            os.symlink(os.path.join(root, name), os.path.join(view, name))
        except OSError:
            continue
    return view


def alarm(_signum: int, _frame: Any) -> None:
    raise EntryTimeout()


def run_observe(send: Callable[..., None], req: Dict[str, Any], torch: Any, feeder: Feeder) -> None:
    """Run each entry under the hook; one frame per entry: its classes' constructions and inputs, the repository's
    files it imported (their paths), its time and its error."""
    spec = req["observe"]
    root, folder = str(spec["root"]), str(spec["path"])
    budget = float(spec.get("entry_s", 20))
    # the repository's folders first, in order (a `src/` layout's, then its root for its tests)
    for where_ in reversed([folder] + [str(a) for a in spec.get("also") or []]):
        if where_ not in sys.path:
            sys.path.insert(0, where_)
    try:
        import pytest  # noqa: F401
    except ImportError:
        sys.modules["pytest"] = pytest_stand_in()
    sys.meta_path.append(MissingFinder(os.path.join(os.path.realpath(root), "")))
    # the repository as `pip install -e .` leaves it: its own distribution's metadata found
    develop_distributions([folder] + [str(a) for a in spec.get("also") or []])
    if spec.get("natives"):
        # its compiled operators, built from its own sources, registered as the modules its code imports
        load_natives(spec["natives"], str(spec["native_folder"]))
    real_root = os.path.join(os.path.realpath(root), "")
    # an entry's limit is CPU time of the process (ITIMER_PROF): the machine's load does not stop it sooner; one that
    # sleeps is stopped from outside (judge.QUIET_GRACE_S)
    signal.signal(signal.SIGPROF, alarm)
    # a package of the same name loaded before (a `tests` of the process that forked this one) is not the repository's
    for top in {str(e.get("module", "")).split(".")[0] for e in spec.get("entries", [])}:
        loaded = sys.modules.get(top)
        where = [str(p) for p in getattr(loaded, "__path__", [])] + [str(getattr(loaded, "__file__", "") or "")]
        if loaded is not None and not any(os.path.realpath(w).startswith(real_root) for w in where if w):
            for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
                del sys.modules[name]
    home = os.getcwd()
    for entry in spec.get("entries", []):
        started = time.time()
        # what one test changed of the process (its folder, torch's default dtype) is not the next one's, nor what it
        # left in the temporary folder (a config reader's copies, a test's files): each entry has its own, removed after
        os.chdir(home)
        torch.set_default_dtype(torch.float32)
        scratch = tempfile.mkdtemp(prefix="nnrag-entry-", dir=home)
        tempfile.tempdir = scratch
        os.environ["TMPDIR"] = scratch
        # run from the repository's root as pytest is (`tests/data/x.bin` read by a relative path), in a folder of
        # links to its entries, so that what a test writes beside them lands in the scratch folder
        os.chdir(root_view(root, scratch))
        observer = Observer(root, torch)
        error: Optional[str] = None
        try:
            relative = str(entry.get("id", "")).split("::")[0]
            test_folder = base_folder(real_root, relative)
            if test_folder and test_folder not in sys.path:
                sys.path.insert(1, test_folder)
            module = importlib.import_module(import_name(real_root, relative, test_folder, str(entry["module"])))
            calls = entry_callables(module, entry, real_root, observer, feeder)
            sys.setprofile(observer.profile)
            signal.setitimer(signal.ITIMER_PROF, budget)
            try:
                for call in calls:
                    torch.manual_seed(0)
                    call()
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                sys.setprofile(None)
        except EntryTimeout:
            error = f"stopped after {budget:g} s"
        except BaseException as exc:  # noqa: BLE001 - a failing test still shows what it built before it failed
            error = f"{type(exc).__name__}: {exc}"[:300]
        send(
            frame(
                OBSERVED,
                {
                    "entry": entry.get("id"),
                    "seconds": round(time.time() - started, 3),
                    "error": error,
                    "calls": observations(observer, real_root),
                    "files": files_imported(real_root, observer.read),
                },
            )
        )
        tempfile.tempdir = None
        remove_tree(scratch)
        # what the entry built is freed before the next one builds (modules hold reference cycles: a later entry of a
        # long run otherwise meets the memory limit)
        observer = None
        gc.collect()


def observations(observer: Observer, root: str) -> List[Dict[str, Any]]:
    """The recorded constructions of the repository's nn.Module classes, at most PER_CLASS distinct ones per class,
    those whose forward ran first."""
    nn = observer.torch.nn
    namer = lambda v: dotted(v, root)  # noqa: E731
    out: List[Dict[str, Any]] = []
    seen: Dict[str, List[str]] = {}
    order = sorted(observer.rec.calls.items(), key=lambda kv: kv[0] not in observer.inputs)
    objects = {id(o): o for o in observer.rec.keep}
    for key, (cls, args, kwargs) in order:
        if not isinstance(cls, type) or not issubclass(cls, nn.Module) or parameters_of(objects.get(key)) > LARGEST_BLOCK:
            continue
        try:
            where = inspect.getsourcefile(cls)
        except TypeError:
            where = None
        if not where or not os.path.realpath(where).startswith(root) or "<" in cls.__qualname__:
            continue
        try:
            call: Dict[str, Any] = {
                "args": [written(v, observer.rec, namer) for v in args],
                "kwargs": {k: written(v, observer.rec, namer) for k, v in kwargs.items()},
            }
        except (Unwritable, RecursionError, TypeError, ValueError):
            continue
        got = observer.inputs.get(key)
        if got is not None:
            try:
                call["inputs"] = {
                    "args": [described(v, observer.torch) for v in got[0]],
                    "kwargs": {k: described(v, observer.torch) for k, v in got[1].items()},
                }
            except (Unwritable, RecursionError, TypeError, ValueError, RuntimeError):
                pass
        text = json.dumps(call, sort_keys=True)
        ident = f"{cls.__module__}.{cls.__qualname__}"
        if len(text) > MAX_CALL_CHARS or text in seen.setdefault(ident, []) or len(seen[ident]) >= PER_CLASS:
            continue
        seen[ident].append(text)
        out.append(dict(call, module=cls.__module__, name=cls.__qualname__, file=os.path.relpath(os.path.realpath(where), root)))
    return out


def parameters_of(block: Any) -> int:
    """How many parameters a block holds (0 when it cannot say: one whose constructor failed part way)."""
    try:
        return sum(int(p.numel()) for p in block.parameters())
    except Exception:  # noqa: BLE001 - a half-built block
        return 0


def files_imported(root: str, read: List[str]) -> List[str]:
    """The repository's files its modules were imported from so far, and those read as data (relative paths): an
    entry's observations stay true while these are unchanged."""
    out = {os.path.relpath(p, root) for p in read if p.startswith(root)}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.realpath(path).startswith(root):
            out.add(os.path.relpath(os.path.realpath(path), root))
    return sorted(out)
