"""Worker side: a repository's tests run as pytest runs them, for the observer: fixtures (conftest.py's, `tmp_path`,
`monkeypatch`), parametrize marks expanded, xunit setup and teardown, the name pytest imports a test file by, and,
where the interpreter has no pytest, the little of it test modules use. A package a test module imports that the
interpreter lacks stands in (MissingFinder), so one missing optional package does not stop a whole suite."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple, cast


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
                except Exception:  # noqa: BLE001, S110 - a teardown that fails does not hide what the test built
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
    # a repository that is itself a package (an installed package's folder indexed as it is): its files import by the
    # names the index gives them, from the folder above it
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
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
