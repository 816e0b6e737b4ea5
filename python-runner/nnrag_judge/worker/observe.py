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
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .loading import load_natives, original_path
from ..wire.protocol import OBSERVED, frame, remove_tree
from .recipe import Recorder, Unwritable, is_scalar, scalar, written
from .entries import Feeder, entry_callables
from .pytest_like import MissingFinder, base_folder, import_name, pytest_stand_in


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
        except Exception:  # noqa: BLE001, S110 - watching never breaks what is watched
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


def run_observe(send: Callable[..., None], req: Dict[str, Any], torch: Any, feeder: Feeder) -> bool:
    """Run each entry under the hook; one frame per entry: its classes' constructions and inputs, the repository's
    files it imported (their paths), its time and its error. True when it stopped between two entries because its
    memory is crowded (a fresh worker runs the rest)."""
    spec = req["observe"]
    root, folder = str(spec["root"]), str(spec["path"])
    budget = float(spec.get("entry_s", 20))
    # the repository's folders first, in order (a `src/` layout's, then its root for its tests), and its own
    # distribution's metadata as `pip install -e .` leaves it (done once in a process: a template's worker finds it done)
    original_path({"path": folder, "also": [str(a) for a in spec.get("also") or []]})
    if spec.get("install") is True:
        installed(root)
    try:
        import pytest  # noqa: F401
    except ImportError:
        sys.modules["pytest"] = pytest_stand_in()
    sys.meta_path.append(MissingFinder(os.path.join(os.path.realpath(root), "")))
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
    # what the worker holds before its first entry (torch, the repository's package: a million objects) is never
    # garbage: frozen, a collection after each entry reads only what entries made (0.4 s a collection otherwise)
    gc.freeze()
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
            # a configuration file is read by the repository's own loader (mmengine's resolves `with read_base():`
            # relative imports of a folder that is no package), never imported as a module of its own
            config = entry.get("kind") == "config"
            module = None if config else importlib.import_module(import_name(real_root, relative, test_folder, str(entry["module"])))
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
        # long run otherwise meets the memory limit); what outlives it (modules it imported, caches) is frozen too
        observer = None
        gc.collect()
        gc.freeze()
        if crowded():
            return True
    return False


# seconds the repository's setup.py may take to place its package data
SETUP_S = 30.0

# written into the private copy once its setup.py ran (a later worker of the same judge does not run it again)
SETUP_DONE = ".nnrag-setup-ran"


def installed(root: str) -> None:
    """The package data an editable install (`pip install -e .`) places inside the package, placed in the root, which
    is this judge's private copy of the repository (`install` in the request; never the repository itself): the
    repository's `setup.py` runs as `setup.py develop --help`, so what it does while it is read (OpenMMLab's links of
    `configs/` and `model-index.yml` into `pkg/.mim/` when `develop` is asked; a `model_zoo/configs` link made while its
    `package_data` is computed) happens, and nothing is built or installed. Whatever fails here, the entries still run."""
    setup = os.path.join(root, "setup.py")
    done = os.path.join(root, SETUP_DONE)
    if not os.path.isfile(setup) or os.path.lexists(done):
        return
    try:
        with open(done, "x", encoding="ascii"):
            pass
        subprocess.run(
            [sys.executable, "setup.py", "develop", "--help"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=SETUP_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        pass


# the share of its data limit past which an observer worker hands the remaining entries to a fresh one
CROWDED_SHARE = 0.6


def crowded() -> bool:
    """Whether this process's data memory (what RLIMIT_DATA caps, `limit_memory`) is past CROWDED_SHARE of its limit
    once the freed memory is given back to the system. One worker runs hundreds of entries; its heap only grows
    (fragments; what the repository's code caches), and near the limit every allocation fails, the smallest included:
    oneDNN says 'could not create a primitive' for any convolution, and every later entry fails with it."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
        if limit == resource.RLIM_INFINITY or limit <= 0:
            return False
        try:
            import ctypes

            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass  # not glibc: what is held stays held
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024 > CROWDED_SHARE * limit
    except (ImportError, OSError, ValueError):
        pass
    return False


def observations(observer: Observer, root: str) -> List[Dict[str, Any]]:
    """The recorded constructions of the repository's nn.Module classes, at most PER_CLASS distinct ones per class,
    those whose forward ran first."""
    nn = observer.torch.nn
    namer = lambda v: dotted(v, root)
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
        if not isinstance(path, str):
            continue
        real = REAL_PATHS.get(path)
        if real is None:
            real = REAL_PATHS[path] = os.path.realpath(path)
        if real.startswith(root):
            out.add(os.path.relpath(real, root))
    return sorted(out)


# a module file's real path, resolved once in a worker (thousands of modules after each entry: 0.14 s a time)
REAL_PATHS: Dict[str, str] = {}
