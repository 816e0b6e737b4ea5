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

import ast
import importlib
import importlib.util
import inspect
import os
import sys
import textwrap
from typing import Any, Callable, Dict, List, Optional, Set

from .context import begin, job
from .variants import INPUT_FORM, takes_a_list, variants
from .evidence import tensor_evidence
from .candidates import input_list
from .inputs import shapes
from .loading import block_network, import_file, import_original, limit_files, limit_memory, load_natives, original_path, set_target
from ..wire.protocol import HANDED_OVER, NATIVE_OPS, CLASS, FAILURE, FORWARD, MAX_VALUES, ORIGIN, PLAN, REACHED, TIER, UNAVAILABLE, Failure, frame, sender
from .observe import run_observe
from .building import attempts_of, module_call
from .forward import ALIKE, MISSING_MODULE, Found, best_error, missing_package, search
from .probing import HEAVY_S, Trace, probe_plan, torch_twins


def examples_of(req: Dict[str, Any]) -> List[str]:
    """The repository's own code that builds and calls the block (its tests), as the request gives it."""
    return [e for e in req.get("examples") or [] if isinstance(e, str)]


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


def compiled_loaded(torch: Any) -> List[str]:
    """The compiled operators this process loaded (the original's side reports them with its plan): the libraries
    torch loaded as operators (`torch.ops.load_library`: torchvision's `_C`), and the extension modules of the
    original's own packages. Only the judge decides, from these and the copy's process as it reads it, that a probe
    the copy could not run needs them."""
    import importlib.machinery
    import sys

    found: Set[str] = set()
    try:
        found |= {str(p) for p in getattr(torch.ops, "loaded_libraries", set()) if isinstance(p, str)}
    except Exception:  # noqa: BLE001, S110 - none known
        pass
    own = job().own_packages
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.split(".")[0] in own and isinstance(path, str) and path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            found.add(path)
    return sorted(os.path.realpath(p) for p in found)[:256]


def abstract_reason(cls: Any, nn: Any) -> Optional[str]:
    """Why a block is a base class that does not run alone (abstract methods left to subclasses, a forward it never
    defines or that only raises NotImplementedError), or None."""
    if inspect.isabstract(cls):
        return f"its abstract methods {', '.join(sorted(getattr(cls, '__abstractmethods__', [])))} are left to subclasses"
    forward = getattr(cls, "forward", None)
    if forward is None or forward is getattr(nn.Module, "forward", None):
        return "it defines no forward"
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(forward)))
    except (OSError, TypeError, ValueError, SyntaxError):
        return None
    func = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    body = list(func.body) if func is not None else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    called = raised.func if isinstance(raised, ast.Call) else raised
    if isinstance(called, ast.Name) and called.id == "NotImplementedError":
        return "its forward raises NotImplementedError (subclasses implement it)"
    return None


def run_copy(send: Callable[..., None], req: Dict[str, Any], torch: Any, nn: Any) -> None:
    """The copy's side: import, instantiate and forward, each tier reached a frame (the forward's with its outputs);
    then the probes of the original's plan, when one was given."""
    module = import_file(req["file"], req.get("native", []))
    send(frame(TIER, "imported"))
    job().twins.update(torch_twins(req["file"], vars(module), nn))
    cls = find_block(module, req.get("class"), nn)
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    send(frame(CLASS, str(cls.__name__), source=source))
    builder = req.get("builder")
    # abstract methods: nothing can build it; a forward left to subclasses: said once it is built (a failure to build
    # says more)
    if not builder and inspect.isabstract(cls):
        raise Failure("abstract", f"{cls.__name__} is an abstract base class, not runnable alone: {abstract_reason(cls, nn)}")
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
        examples_of(req),
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
            if job().skipped:
                tried += f"; {job().skipped} more guessed argument sets left untried: the last {ALIKE} failed alike"
            raise Failure("instantiate", f"cannot build {cls.__name__}: {best_error(errors)}{tried}")
        why = None if builder else abstract_reason(cls, nn)
        if why:
            raise Failure("abstract", f"{cls.__name__} is an abstract base class, not runnable alone: {why}")
        if forward_error and NATIVE_OPS.search(forward_error):
            raise Failure("native-extension", f"{cls.__name__}.forward needs compiled operators that are not loaded: {forward_error}")
        raise Failure("forward", f"no input worked for {cls.__name__}.forward: {forward_error}")
    structure, tensors, values = tensor_evidence(found.out, torch, MAX_VALUES // 2)
    send(
        frame(
            FORWARD,
            {"input_shapes": [shapes(t) for t in found.inputs], "output": structure, "tensors": tensors, "attempt": found.attempt[0], "input": found.index},
            spent=job().told(),
        ),
        values,
    )
    if plan is not None:
        probe_plan(send, cls, attempts, factory, plan, torch, nn, coverage=req["file"], found=found, examples=examples_of(req))


def run_original(send: Callable[..., None], req: Dict[str, Any], torch: Any, nn: Any) -> None:
    """The original's side: import it, search as the copy does, report how far it got; when it ran forward, send the
    plan (the argument set and input that ran, the variants to probe) and probe it."""
    original = req["original"]
    # which of the repository's functions the original runs from here on, its import included where a template did
    # not import it first (the pull's slim copy keeps what ran)
    trace = Trace(traced_roots(original))
    try:
        load_natives(req.get("natives", []), os.path.dirname(str(req["file"])))
        module, how = import_original(original)
        cls = getattr(module, str(original["class"]))
    except BaseException as exc:  # noqa: BLE001 - a reason, not a verdict
        send(frame(UNAVAILABLE, f"the original cannot be imported: {type(exc).__name__}: {exc}"[:600]))
        return
    trace.mark()
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
    job().own_packages.add(str(original["module"]).split(".")[0])
    for name in sorted(modules_named(req.get("candidates", []))):
        if name.split(".")[0] != str(original["module"]).split(".")[0] or not all(p.isidentifier() for p in name.split(".")):
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001, S110 - that observation then cannot be replayed here
            pass
    attempts = attempts_of(cls, module, req.get("candidates", []), factory, nn)
    reached = ["imported"]
    # run again to check its gradients' steadiness (judge.steadiness_checked): the plan it made the first time
    given = req.get("plan") if isinstance(req.get("plan"), dict) else None
    found, errors, forward_error, _ = search(cls, attempts, factory, torch, nn, lambda r: reached.append("instantiated"), given, examples_of(req))
    if found is None:
        why = forward_error or best_error(errors)
        send(frame(REACHED, reached[-1], error=str(why)[:500], spent=job().told()))
        return
    send(frame(REACHED, "forward", spent=job().told()))
    plan = given if given is not None else plan_of(cls, found, original)
    send(frame(PLAN, plan, compiled=compiled_loaded(torch)))
    checked = req.get("check_gradients") is True
    probe_plan(send, cls, attempts, factory, plan, torch, nn, found=found, examples=examples_of(req), trace=trace, check_gradients=checked)


def plan_of(cls: Any, found: Found, original: Dict[str, Any]) -> Dict[str, Any]:
    """The comparison's plan from the original's first run: the argument set and input that ran, the variants to
    probe, and whether its forward is heavy."""
    key, args, kwargs = found.attempt
    chosen = variants(cls, args, kwargs, cls) if key != "builder" else [({}, f"built by {original.get('builder', {}).get('name', 'its builder')}()")]
    if takes_a_list(found.model, found.inputs):
        chosen.insert(1, ({INPUT_FORM: "listed"}, "inputs as a list"))
    return {
        "attempt": key,
        "input": found.index,
        "variants": [{"label": label, "overrides": o} for o, label in chosen],
        "heavy": job().last_forward_s > HEAVY_S,
    }


def traced_roots(original: Dict[str, Any]) -> List[str]:
    """The folders whose code a trace of the original records: the ones it imports from, or (an installed package)
    its top-level package's folder."""
    roots = [r for r in [original.get("path"), *(original.get("also") or [])] if isinstance(r, str) and r]
    if not roots:
        name = str(original["module"]).split(".")[0]
        top = sys.modules.get(name)
        where = getattr(top, "__file__", None)
        if not isinstance(where, str):
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            where = spec.origin if spec is not None else None
        if isinstance(where, str):
            roots.append(os.path.dirname(where))
    return roots


def limited(memory_mb: int) -> None:
    """A worker's limits (and a template's, before its imports): memory, files, no network."""
    if memory_mb:
        limit_memory(memory_mb)
    limit_files()
    block_network()


def prepare(role: str, spec: Dict[str, Any], memory_mb: int) -> None:
    """In a template (zygote.template_main), under a worker's limits: what every worker of `role` with `spec` imports
    first, imported once. The original's and the observer's: the package, from the path its worker imports it from
    (the observer's workers run only the repository's code, never a copy); the copy's: the
    installed modules its file imports before any statement of its own (the copy's own code never runs here).
    Raises when any of it fails (then there is no template, and each worker imports for itself)."""
    limited(memory_mb)
    import torch  # noqa: F401 - the zygote's, already loaded

    if role in ("original", "observe"):
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
        begin()
        limited(memory_mb)
        set_target(str(req.get("file", "")))
        try:
            import torch
            from torch import nn

            begin(call=torch.nn.Module.__call__)
        except Exception:  # noqa: BLE001 - the block's import names what is missing
            torch = nn = None
        if role == "observe":
            if torch is None:
                raise Failure("missing-package", "missing package 'torch': the interpreter cannot import torch", package="torch")
            if run_observe(send, req, torch, (input_list, module_call)):
                exit_(HANDED_OVER)
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
        send(frame(FAILURE, dict(failure.extra, category=failure.category, message=failure.message), spent=job().told()))
    except BaseException as exc:  # noqa: BLE001 - never leave the judge without a word
        try:
            send(frame(FAILURE, {"category": "error", "message": f"{type(exc).__name__}: {exc}"}))
        except BaseException:  # noqa: BLE001, S110 - the channel is gone: nothing more can be said
            pass
    exit_(0)
