"""Worker side: what one observed entry stands for, as calls: a test function (once per parameter set), a test class's
method, a builder called and what it built fed, a configuration file's model built by its registry, a README code
block run as written."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Tuple

from .arguments import without_download
from .inputs import entry_layer, lighter
from .pytest_like import Fixtures, parametrized, xunit_call

if TYPE_CHECKING:  # (observe.py imports this module: the type only)
    from .observe import Observer


def entry_callables(module: Any, entry: Dict[str, Any], root: str, observer: "Observer", feeder: Feeder) -> List[Callable[[], Any]]:
    """The calls an entry stands for: a test function once per parameter set of its parametrize marks, with its
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
                except Exception:  # noqa: BLE001, S112 - a module with an optional dependency registers nothing here
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
            from mmengine.config import Config  # the repository's own reader, where installed
        except ImportError:
            Config = None  # noqa: N806
        if Config is not None:
            observer.read.append(path)
            return Config.fromfile(path)
    if depth > 8:
        raise ValueError("the config's _base_ files nest too deep")
    import runpy

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
