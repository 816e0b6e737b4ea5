"""Worker side: what a worker does before and around the block's code: its limits (memory, files, network), and
importing the pulled file and the original class the way a normal run would. Runs only in a worker."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
import traceback
import types
from typing import Any, Dict, List, Optional, Set, Tuple

from ..wire.protocol import Failure

FILE_SIZE_CAP = 1 << 30  # bytes of one file the block may write
# the file the block came from, for messages that name its line
TARGET = [""]


def set_target(path: str) -> None:
    TARGET[0] = path


def where(exc: BaseException) -> str:
    """' (line N of the pulled file)' when the traceback passes through it."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == TARGET[0]:
            return f" (line {frame.lineno} of the pulled file)"
    return ""


def limit_memory(megabytes: int) -> None:
    """Cap the data segment (RLIMIT_DATA; RLIMIT_AS breaks `import torch`) where the OS has it."""
    try:
        import resource
    except ImportError:
        return
    limit = megabytes * 1024 * 1024
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError, AttributeError):
        pass


def block_network() -> None:
    """Refuse outgoing connections and name lookups from the block under test (an audit hook)."""
    blocked = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto", "urllib.Request"}

    def hook(event: str, args: Tuple[Any, ...]) -> None:
        if event in blocked:
            raise PermissionError(f"network access is disabled during validation ({event})")

    sys.addaudithook(hook)


def limit_files() -> None:
    """No core files, and no single file larger than FILE_SIZE_CAP written by the block."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_CAP, FILE_SIZE_CAP))
    except (ImportError, ValueError, OSError, AttributeError):
        pass


def requested_module(exc: BaseException) -> Optional[str]:
    """The module a run-time import asked for (`importlib.import_module("pkg." + name)`), read from the call's frame
    in the traceback: the error itself names only the first part that failed (`pkg`)."""
    tb = exc.__traceback__
    asked = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "import_module" and os.path.basename(os.path.dirname(code.co_filename)) == "importlib":
            name, package = tb.tb_frame.f_locals.get("name"), tb.tb_frame.f_locals.get("package")
            if isinstance(name, str):
                try:
                    asked = importlib.util.resolve_name(name, package) if name.startswith(".") else name
                except (ImportError, ValueError):
                    asked = name
        tb = tb.tb_next
    return asked


def classify_import_error(exc: BaseException, native: List[str]) -> Failure:
    """Turn an exception raised while importing the file into a category and a message naming the cause."""
    if isinstance(exc, MemoryError):
        return Failure("memory", "out of memory while importing the file")
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or str(exc)
        top = name.split(".")[0]
        asked = requested_module(exc)
        # what the code asked for at run time, when more than what failed (pkg._ext, of which pkg failed)
        extra = {"requested_module": asked} if asked and asked != name and asked.startswith(name + ".") else {}
        if any(name == n or name.startswith(n + ".") or n.endswith("." + name) for n in native):
            return Failure("native-extension", f"needs the compiled module '{name}', which has no Python source", **extra)
        found = importlib.util.find_spec(top) is not None if top else False
        where_asked = f" (the code imports '{asked}' at run time)" if extra else ""
        if not found:
            return Failure("missing-package", f"missing package '{top}': No module named '{name}' in this interpreter{where_asked}", package=top, **extra)
        return Failure("import-error", f"No module named '{name}' (package '{top}' is installed but lacks it){where_asked}", **extra)
    if isinstance(exc, ImportError) and (".so" in str(exc) or "undefined symbol" in str(exc) or "DLL" in str(exc)):
        return Failure("native-extension", f"a compiled extension failed to load: {exc}")
    return Failure("import-error", f"{type(exc).__name__}: {exc}{where(exc)}")


def import_file(path: str, native: List[str]) -> Any:
    """Import the pulled file as a normal run would: under its own name, its folder on the path (last, so nothing
    is shadowed; helpers shared by blocks pulled together sit beside it)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_{stem}" if stem.isidentifier() else "block"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Failure("import-error", f"{os.path.basename(path)} cannot be imported as a module")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.append(folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # running the block is the point; the judge sandboxes us
    except BaseException as exc:  # noqa: BLE001 - anything the module does on import is a finding
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise Failure("import-error", f"the file called {type(exc).__name__} on import")
        raise classify_import_error(exc, native)
    return module


def load_natives(natives: List[Dict[str, str]], folder: str) -> None:
    """The compiled operators built for the pulled file (--build-native), loaded from its `_nnrag_native` folder and
    registered as the modules the original imports (`pkg._C`): the original's package has no built copy of its own."""
    for n in natives:
        path = os.path.join(folder, "_nnrag_native", n["file"])
        spec = importlib.util.spec_from_file_location(n["name"], path)
        if spec is None or spec.loader is None:
            raise ImportError(f"the compiled operator {n['module']} cannot be loaded from {path}")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        sys.modules[n["name"]] = loaded
        sys.modules[n["module"]] = loaded


def literal_names(init: str) -> Dict[str, Any]:
    """What a package's `__init__.py` assigns from literals at its top level (`__version__ = "0.36.0"`), read without
    running it: a bare namespace standing in for a package whose `__init__` fails still has them for its modules."""
    try:
        with open(init, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), init)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    out: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return out


def declared_version(package_folder: str) -> str:
    """The `__version__` a package's `version.py` or `__init__.py` assigns as a literal (read, never run), else 0."""
    for name in ("version.py", "__init__.py", "_version.py"):
        value = literal_names(os.path.join(package_folder, name)).get("__version__")
        if isinstance(value, str) and value:
            return value
    return "0"


def develop_distributions(folders: List[str]) -> None:
    """Installed-package metadata for the indexed repositories' own packages, as `pip install -e` would give them:
    code that asks `importlib.metadata` for its own distribution (its version, a data file beside its package) finds
    one that names the package's folder. A real installed distribution of the same name wins (this finder is last)."""
    import importlib.metadata as metadata
    import pathlib

    found: Dict[str, Tuple[str, str]] = {}
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.isidentifier() and os.path.isfile(os.path.join(folder, name, "__init__.py")):
                found.setdefault(name.lower(), (folder, name))

    class Developed(metadata.Distribution):
        def __init__(self, folder: str, name: str) -> None:
            self.folder, self.name_ = folder, name

        def read_text(self, filename: str) -> Optional[str]:
            if filename in ("METADATA", "PKG-INFO"):
                version = declared_version(os.path.join(self.folder, self.name_))
                return f"Metadata-Version: 2.1\nName: {self.name_}\nVersion: {version}\n"
            return None

        def locate_file(self, path: Any) -> Any:
            return pathlib.Path(self.folder) / str(path)

    class Finder(metadata.DistributionFinder):
        def find_spec(self, *_args: Any, **_kwargs: Any) -> None:
            return None

        def find_distributions(self, context: Any = None) -> Any:
            name = getattr(context, "name", None)
            if not isinstance(name, str):
                return iter([])
            hit = found.get(name.lower().replace("-", "_"))
            return iter([Developed(*hit)] if hit else [])

    sys.meta_path.append(Finder())


# the folders whose packages' metadata this process has (`original_path`)
DEVELOPED: Set[Tuple[str, ...]] = set()


def original_path(original: Dict[str, Any]) -> None:
    """The path the original imports from: the folders of the other repositories the copy inlines, then the block's
    own first (the original uses the same code as the copy, not another version installed in site-packages), with
    their packages' metadata. Done once in a process (a template's worker finds it done)."""
    folder, also = original.get("path"), [a for a in original.get("also") or [] if isinstance(a, str)]
    for other in reversed(also):
        if other not in sys.path:
            sys.path.insert(0, other)
    if folder and folder not in sys.path:
        sys.path.insert(0, folder)
    developed = tuple([folder, *also]) if folder else ()
    if developed and developed not in DEVELOPED:
        DEVELOPED.add(developed)
        develop_distributions(list(developed))


def import_original(original: Dict[str, Any]) -> Tuple[Any, str]:
    """The original's module, from the folder it was indexed from (first on the path), and how it was imported. When
    the package's `__init__` fails (an optional dependency, a lazy loader), the module is imported again with its
    parent packages as bare namespaces. Raises ImportError naming the module and both causes."""
    folder, module = original.get("path"), str(original["module"])
    original_path(original)
    try:
        return importlib.import_module(module), "imported"
    except BaseException as exc:  # noqa: BLE001 - any failure is a reason, said below
        first = f"{type(exc).__name__}: {exc}"[:300]
    parts = module.split(".")
    if not folder or len(parts) < 2:
        raise ImportError(f"module {module}: {first}")
    for name in [m for m in list(sys.modules) if m == parts[0] or m.startswith(parts[0] + ".")]:
        del sys.modules[name]
    for i in range(1, len(parts)):
        name, where_ = ".".join(parts[:i]), os.path.join(folder, *parts[:i])
        if not os.path.isdir(where_):
            raise ImportError(f"module {module}: {first}")
        package = types.ModuleType(name)
        package.__path__ = [where_]
        package.__package__ = name
        package.__dict__.update(literal_names(os.path.join(where_, "__init__.py")))
        sys.modules[name] = package
        if i > 1:
            setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], package)
    try:
        return importlib.import_module(module), "imported without its package's __init__ (" + first[:200] + ")"
    except BaseException as exc:  # noqa: BLE001
        raise ImportError(f"module {module}: {first}; without its package's __init__: {type(exc).__name__}: {exc}"[:600])
