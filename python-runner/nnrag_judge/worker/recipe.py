"""Worker side: how a repository's builder function (`resnet18()`) built the block, as an argument set the pulled
file can replay without the builder (`ResNet(BasicBlock, [2, 2, 2, 2])`): the constructor calls made while the
builder ran are recorded, and the block's own call is written in the argument language of call sites (literals,
`{"$name": ...}` for a class or function the file can name, `{"$call": ...}` for an object of a class it can name,
built from its recorded arguments, `{"$partial": ...}`, `{"$tuple": [...]}`, `{"$float": 1.0}`). A value that cannot
be so written leaves no recipe (the verdict then stays the builder's). Runs only in a worker."""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from contextlib import contextmanager

MAX_DEPTH = 8
MAX_ITEMS = 256


class Unwritable(Exception):
    """A value the argument language cannot express."""


class Recorder:
    """The arguments of each object's outermost constructor call while the builder ran, by object id."""

    def __init__(self) -> None:
        self.calls: Dict[int, Tuple[type, Tuple[Any, ...], Dict[str, Any]]] = {}
        self.keep: List[Any] = []  # the objects recorded, alive so that their ids stay theirs


@contextmanager
def recording(namespace: Dict[str, Any], module_name: str) -> Iterator[Recorder]:
    """Record the constructor calls of the classes `namespace` defines (those of `module_name`) while the block runs."""
    rec = Recorder()
    wrapped: List[Tuple[type, Any]] = []
    for value in list(namespace.values()):
        if not inspect.isclass(value) or value.__module__ != module_name or "__init__" not in value.__dict__:
            continue
        if any(value is c for c, _ in wrapped):
            continue
        init = value.__dict__["__init__"]
        if not callable(init):
            continue

        def wrapper(self: Any, *args: Any, __init: Callable[..., Any] = init, **kwargs: Any) -> Any:
            if id(self) not in rec.calls:  # the outermost call: a subclass's own __init__ runs first
                rec.calls[id(self)] = (type(self), args, dict(kwargs))
                rec.keep.append(self)
            return __init(self, *args, **kwargs)

        functools.update_wrapper(wrapper, init)
        wrapped.append((value, init))
        try:
            value.__init__ = wrapper  # type: ignore[misc]
        except (TypeError, AttributeError):
            wrapped.pop()
    try:
        yield rec
    finally:
        for cls, init in wrapped:
            try:
                cls.__init__ = init  # type: ignore[misc]
            except (TypeError, AttributeError):
                pass


def name_of(value: Any, namespace: Dict[str, Any]) -> str:
    """A dotted name the file's namespace gives `value` (`BasicBlock`, `nn.BatchNorm2d`), or Unwritable."""
    for key, v in namespace.items():
        if v is value and not key.startswith("__"):
            return key
    short = getattr(value, "__name__", None)
    if isinstance(short, str):
        for key, v in namespace.items():
            if inspect.ismodule(v) and getattr(v, short, None) is value:
                return f"{key}.{short}"
    raise Unwritable(f"{getattr(value, '__qualname__', type(value).__name__)} has no name in the file")


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, str, float))


def scalar(value: Any) -> Any:
    """None, a bool, an int, a str or a float in the argument language (Unwritable for a float that is not finite)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unwritable("a float that is not finite")
        # JSON in JavaScript writes 1.0 as 1, an int: a whole float says it is one
        return {"$float": value} if value.is_integer() else value
    return value


def written(value: Any, rec: Recorder, namespace: Any, depth: int = 0) -> Any:
    """`value` in the argument language, or Unwritable. `namespace`: the file's names (a dict), or a function that
    names a class or function (`name_of` over a namespace by default)."""
    if depth > MAX_DEPTH:
        raise Unwritable("too deep")
    if is_scalar(value):
        return scalar(value)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise Unwritable("a long sequence")
        items = [written(v, rec, namespace, depth + 1) for v in value]
        return items if isinstance(value, list) else {"$tuple": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value) or len(value) > MAX_ITEMS:
            raise Unwritable("a mapping without string keys")
        return {"$dict": {k: written(v, rec, namespace, depth + 1) for k, v in value.items()}}
    if isinstance(value, functools.partial):
        return {
            "$partial": written(value.func, rec, namespace, depth + 1),
            "args": [written(v, rec, namespace, depth + 1) for v in value.args],
            "kwargs": {k: written(v, rec, namespace, depth + 1) for k, v in value.keywords.items()},
        }
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return tagged("$name", value, namespace)
    call = rec.calls.get(id(value))
    if call is not None and call[0] is type(value):
        cls, args, kwargs = call
        return dict(
            tagged("$call", cls, namespace),
            args=[written(v, rec, namespace, depth + 1) for v in args],
            kwargs={k: written(v, rec, namespace, depth + 1) for k, v in kwargs.items()},
        )
    fields = getattr(type(value), "__dataclass_fields__", None)
    if isinstance(fields, dict):
        # a dataclass (a configuration object) is rebuilt from the fields its constructor takes
        given = {k: getattr(value, k) for k, f in fields.items() if getattr(f, "init", False) and hasattr(value, k)}
        return dict(tagged("$call", type(value), namespace), args=[], kwargs={k: written(v, rec, namespace, depth + 1) for k, v in given.items()})
    raise Unwritable(f"a {type(value).__name__} built outside the file's classes")


def tagged(key: str, value: Any, namespace: Any) -> Dict[str, Any]:
    """`{key: name}` for a class or function; a naming function may also give the module that defines it
    (`(name, module)`), kept as `"module"` for a reader whose namespace lacks the name."""
    got = namespace(value) if callable(namespace) else name_of(value, namespace)
    if isinstance(got, tuple):
        return {key: str(got[0]), "module": str(got[1])}
    return {key: str(got)}


def recipe_of(block: Any, rec: Recorder, namespace: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The block's own constructor call as an argument set ({"args", "kwargs"}), or None when it cannot be written."""
    call = rec.calls.get(id(block))
    if call is None or call[0] is not type(block):
        return None
    _, args, kwargs = call
    try:
        return {"args": [written(v, rec, namespace) for v in args], "kwargs": {k: written(v, rec, namespace) for k, v in kwargs.items()}}
    except (Unwritable, RecursionError):
        return None
