"""Worker side: what a worker sends of a block's behaviour. For the forward tier, the output tensors' values (the
judge checks shapes and finiteness itself); for the comparison with the original, *probes*: the parameters and
buffers as built, the outputs in eval mode under several seeds, and in train mode the outputs, the gradients of a
fixed weighted sum of them with respect to the inputs and parameters, and the state after the step. Every value is
digested (sha256 of its bytes) and a sample of it is sent, so the judge can compare bit for bit and name the largest
difference it saw. Runs only in a worker."""

from __future__ import annotations

import copy
import hashlib
import inspect
import math
import random
import re
from array import array
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..wire.protocol import PROBE
from ..wire.protocol import frame as make_frame

SAMPLE = 4096  # values sent of a large tensor (all of one up to WHOLE)
WHOLE = 1 << 16
MAX_ITEMS = 64
MAX_STATE = 1024  # entries of the state as built compared (within a frame's header limit)


def tensor_evidence(out: Any, torch: Any, limit: int) -> Tuple[Any, List[Dict[str, Any]], bytes]:
    """The output's structure with tensors as {"$t": i}, each tensor's dtype, shape and count of values sent, and the
    values themselves as float64 (complex tensors as their real and imaginary parts)."""
    tensors: List[Dict[str, Any]] = []
    chunks: List[bytes] = []
    budget = [limit]

    def walk(value: Any, depth: int) -> Any:
        if isinstance(value, torch.Tensor):
            t = plain(value, torch)
            entry = {"dtype": str(value.dtype).replace("torch.", ""), "shape": [int(d) for d in value.shape]}
            flat = t.reshape(-1)
            count = min(int(flat.numel()), budget[0])
            budget[0] -= count
            entry["count"] = count
            chunks.append(array("d", flat[:count].to(torch.float64).tolist()).tobytes())
            tensors.append(entry)
            return {"$t": len(tensors) - 1}
        if depth > 4:
            return type(value).__name__
        if isinstance(value, (list, tuple)):
            return [walk(v, depth + 1) for v in list(value)[:16]]
        if isinstance(value, dict):
            return {str(k): walk(v, depth + 1) for k, v in list(value.items())[:16]}
        for name in ("last_hidden_state", "logits", "sample", "out"):  # output dataclasses
            if hasattr(value, name) and isinstance(getattr(value, name), torch.Tensor):
                return {name: walk(getattr(value, name), depth + 1)}
        return type(value).__name__

    structure = walk(out, 0)
    return structure, tensors, b"".join(chunks)


def plain(value: Any, torch: Any) -> Any:
    """A tensor as a dense, contiguous CPU tensor of a dtype with a byte form (complex as real pairs)."""
    t = value.detach()
    if getattr(t, "is_sparse", False):
        t = t.to_dense()
    t = t.to("cpu")
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.to(torch.float32)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.contiguous()


def raw_bytes(t: Any, torch: Any) -> Any:
    """The bytes of a plain tensor, as a buffer over its memory (numpy when there: hashed in place, not copied first),
    else through float64."""
    try:
        return memoryview(t.numpy().reshape(-1)).cast("B")
    except Exception:  # noqa: BLE001 - no numpy in this interpreter
        return array("d", t.reshape(-1).to(torch.float64).tolist()).tobytes()


class Digest:
    """Collects the tensors of one probe: a structure with {"$t": i} leaves, and per tensor its dtype, shape,
    sha256 and a sample of its values (within the worker's value budget)."""

    def __init__(self, torch: Any, budget: List[int], names: Optional[Dict[str, str]] = None) -> None:
        self.torch = torch
        self.budget = budget
        self.names = names or {}  # the copy's renamed classes and functions, by the original's names
        self.entries: List[Dict[str, Any]] = []
        self.chunks: List[bytes] = []

    def tensor(self, value: Any) -> Dict[str, Any]:
        torch = self.torch
        try:
            t = plain(value, torch)
            digest = hashlib.sha256(raw_bytes(t, torch)).hexdigest()
        except Exception as exc:  # noqa: BLE001 - a tensor kind without values (meta, quantized)
            return {"$type": f"tensor ({type(exc).__name__})"}
        flat = t.reshape(-1)
        n = int(flat.numel())
        count = min(n if n <= WHOLE else SAMPLE, max(0, self.budget[0]))
        self.budget[0] -= count
        sample = flat[:count].to(torch.float64)
        try:
            self.chunks.append(sample.numpy().tobytes())  # the bytes array("d", ...) makes, five times sooner
        except Exception:  # noqa: BLE001 - no numpy in this interpreter
            self.chunks.append(array("d", sample.tolist()).tobytes())
        self.entries.append(
            {"dtype": str(value.dtype).replace("torch.", ""), "shape": [int(d) for d in value.shape], "sha": digest, "count": count, "numel": n}
        )
        return {"$t": len(self.entries) - 1}

    def walk(self, value: Any, depth: int = 0, limit: int = MAX_ITEMS) -> Any:
        """Any output, leaf by leaf: tensors, numbers, strings, sequences, mappings, objects by their attributes
        (`limit`: how many entries of a mapping at this level; a state dict's are all the block's tensors)."""
        torch = self.torch
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if value is None or isinstance(value, (bool, int, str)):
            return {"$v": value if not isinstance(value, str) else value[:200]}
        if isinstance(value, float):
            return {"$v": value if math.isfinite(value) else repr(value)}
        if depth > 6:
            return {"$type": type(value).__name__}
        if isinstance(value, (list, tuple)):
            return {"$seq": type(value).__name__, "items": [self.walk(v, depth + 1) for v in list(value)[:MAX_ITEMS]]}
        if isinstance(value, dict):
            return {"$map": type(value).__name__, "items": {str(k): self.walk(v, depth + 1) for k, v in list(value.items())[:limit]}}
        if isinstance(value, torch.nn.Module):
            return {"$module": self.named(type(value))}
        if isinstance(value, type) or inspect.isfunction(value):  # a block class or a function given as an argument
            return {"$v": f"{'class' if isinstance(value, type) else 'function'} {self.named(value)}"}
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            items = {k: v for k, v in fields.items() if not k.startswith("_")}
            walked = {k: self.walk(items[k], depth + 1) for k in sorted(items)[:MAX_ITEMS]}
            if type(value).__repr__ is not object.__repr__:  # how an object of its own class prints itself
                walked["(repr)"] = {"$v": self.shown(value)}
            return {"$obj": self.named(type(value)), "items": walked}
        return {"$type": type(value).__name__}

    def shown(self, value: Any) -> str:
        """`repr(value)` with addresses left out and the copy's renamed names as the original's."""
        try:
            # a class prints with its module, which is the copy's file on one side and the repository's on the other
            text = CLASS_PATH.sub(r"<class '\1'>", ADDRESS.sub("0x?", repr(value)))
        except Exception as exc:  # noqa: BLE001 - a repr that fails is compared as such
            return f"repr fails: {type(exc).__name__}"
        for new, old in self.names.items():
            text = re.sub(rf"\b{re.escape(new)}\b", old, text)
        return text[:CONFIG_TEXT]  # cut after the names are the original's: a renamed name changes the length

    def named(self, thing: Any) -> str:
        name = str(getattr(thing, "__qualname__", None) or getattr(thing, "__name__", "?"))
        return self.names.get(name, name)

    def blob(self) -> bytes:
        return b"".join(self.chunks)


def seed_all(seed: int, torch: Any) -> None:
    """The same random state on both sides: torch, random, numpy when loaded."""
    torch.manual_seed(seed)
    random.seed(seed)
    np = __import__("sys").modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(seed)
        except Exception:  # noqa: BLE001, S110 - a numpy without the legacy seed
            pass


def fresh(inputs: List[Any], torch: Any, grad: bool = False) -> List[Any]:
    """A deep copy of the inputs for one call (a forward that changes its inputs in place changes only its own), with
    floating tensors requiring grad when asked."""
    out = copy.deepcopy(inputs)
    if grad:
        out = [v.detach().clone().requires_grad_(True) if isinstance(v, torch.Tensor) and v.dtype.is_floating_point else v for v in out]
    return out


def weighted_sum(out: Any, torch: Any) -> Any:
    """A scalar of every floating output tensor that carries a gradient, each weighted by fixed random weights (a
    plain sum would hide a change that keeps the total, as a softmax does)."""
    gen = torch.Generator().manual_seed(7)
    total = None
    stack = [out]
    seen = 0
    while stack and seen < 256:
        value = stack.pop(0)
        seen += 1
        if isinstance(value, torch.Tensor):
            if value.requires_grad and value.dtype.is_floating_point:
                w = torch.rand(value.shape, generator=gen).to(value.dtype)
                term = (value * w).sum()
                total = term if total is None else total + term
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return total


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


MAX_MODULES = 2000
CONFIG_TEXT = 1000
REPR_TEXT = 100_000
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
CLASS_PATH = re.compile(r"<class '(?:[\w.]*\.)?(\w+)'>")
STRUCTURE_TEXT = 300_000  # characters of the module tree sent (a frame's header stays under MAX_HEADER)


def config_value(value: Any, torch: Any, names: Dict[str, str], depth: int = 0) -> Any:
    """A module attribute as configuration (numbers, strings, flags, dtypes, and which function or class it holds),
    or None where it is state or an object of its own (compared through the outputs)."""
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        # a path or an address differs between the copy and its original by where they are, not by what they do
        return None if len(value) > 200 or "/" in value or "\\" in value or "0x" in value else repr(value)
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    if isinstance(value, (list, tuple)) and depth < 2 and len(value) <= 16:
        items = [config_value(v, torch, names, depth + 1) for v in value]
        return None if any(i is None for i in items) else f"({', '.join(items)})"
    if callable(value) and not isinstance(value, torch.nn.Module):
        func = getattr(value, "func", None)  # functools.partial
        target = func if callable(func) else value
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        if isinstance(name, str):
            return f"{'partial ' if target is not value else ''}{names.get(name, name)}"
    return None


def structure(model: Any, torch: Any, names: Dict[str, str]) -> Dict[str, Any]:
    """The block's module tree as built: each submodule's class and configuration (`eps`, `momentum`, `inplace`, an
    activation function held as an attribute, a scale). A changed default, constant or activation that the outputs
    do not show for the inputs tried still shows here. `names`: the copy's renamed classes and functions, by the
    original's names."""
    items: Dict[str, Any] = {}
    left = STRUCTURE_TEXT
    for path, m in list(model.named_modules())[:MAX_MODULES]:
        kind = type(m).__name__
        parts = []
        for k, v in sorted(vars(m).items()):
            if k.startswith("_") or k == "training":
                continue
            c = config_value(v, torch, names)
            if c is not None:
                parts.append(f"{k}={c}")
        text = f"{names.get(kind, kind)}({', '.join(parts)})"[:CONFIG_TEXT]
        left -= len(text) + len(path) + 16
        if left < 0:
            break
        items[path or "."] = {"$v": text}
    # how the block prints itself (its own __repr__ or extra_repr included), addresses left out
    try:
        shown = ADDRESS.sub("0x?", repr(model))
        for new, old in names.items():
            shown = re.sub(rf"\b{re.escape(new)}\b", old, shown)
        items["(repr)"] = {"$v": shown[:REPR_TEXT]}
    except Exception as exc:  # noqa: BLE001 - a repr that fails is compared as such
        items["(repr)"] = {"$v": f"repr fails: {type(exc).__name__}"}
    return {"$map": "modules", "items": items}


def probe_variant(
    send: Callable[..., None],
    label: str,
    make: Callable[[], Any],
    inputs: List[Any],
    seeds: List[int],
    call: Callable[..., Any],
    torch: Any,
    budget: List[int],
    train: bool = True,
    names: Optional[Dict[str, str]] = None,
    extra: Optional[Tuple[str, Callable[[], Any]]] = None,
    steadiness: Optional[Dict[str, Any]] = None,
) -> None:
    """One variant of the block, probed as the other side probes it: its module tree and configuration and its state
    as built, one more value (`extra`, read after it was built: the objects it was built from, as the block left them,
    or what a method called after building returned), eval outputs per seed, a train step's outputs, gradients and state
    after. One frame per probe, each keyed `label|what`. `steadiness` (the original's side only, one dict for all the
    variants of a block): the first train step's gradients are computed twice, and those that vary between the two
    passes are said `unstable` in every train frame of the block (see `unstable_gradients`)."""

    def frame(key: str, body: Dict[str, Any], digest: Optional[Digest] = None) -> None:
        head = make_frame(PROBE, dict(body, key=f"{label}|{key}"))
        if digest is not None:
            head[PROBE]["tensors"] = digest.entries
        send(head, digest.blob() if digest is not None else b"")

    try:
        model = make()
        model.eval()
    except Exception as exc:  # noqa: BLE001 - a variant that does not build is compared as such
        frame("init", {"error": error_text(exc), "error_type": type(exc).__name__})
        return
    try:
        frame("structure", {"value": structure(model, torch, names or {})})
    except Exception as exc:  # noqa: BLE001 - a module whose attributes cannot be read is compared as such
        frame("structure", {"error": error_text(exc), "error_type": type(exc).__name__})
    if extra is not None:
        d = Digest(torch, budget, names)
        try:
            frame(extra[0], {"value": d.walk(extra[1]())}, d)
        except Exception as exc:  # noqa: BLE001 - a value whose attributes cannot be read is compared as such
            frame(extra[0], {"error": error_text(exc), "error_type": type(exc).__name__})
    d = Digest(torch, budget, names)
    frame("init", {"value": d.walk(dict(model.state_dict()), limit=MAX_STATE)}, d)
    for seed in seeds:
        d = Digest(torch, budget, names)
        try:
            seed_all(seed, torch)
            with torch.no_grad():
                out = call(model, *fresh(inputs, torch))
            frame(f"eval|{seed}", {"value": d.walk(out)}, d)
        except Exception as exc:  # noqa: BLE001
            frame(f"eval|{seed}", {"error": error_text(exc), "error_type": type(exc).__name__})
    if not train:
        return
    d = Digest(torch, budget, names)
    try:
        model.train()
        for grad_inputs in (True, False):
            model.zero_grad(set_to_none=True)
            x = fresh(inputs, torch, grad=grad_inputs)
            seed_all(seeds[0], torch)
            try:
                out = call(model, *x)
            except RuntimeError:
                if grad_inputs:  # an in-place operation on a leaf that requires grad: again without input gradients
                    continue
                raise
            break
        total = weighted_sum(out, torch)
        check = steadiness is not None and "unstable" not in steadiness and total is not None
        if total is not None:
            total.backward(retain_graph=check)
        grads_in = [v.grad if isinstance(v, torch.Tensor) else None for v in x]
        grads = {n: p.grad for n, p in model.named_parameters()}
        items = {
            "output": d.walk(out, 1),
            "input_grads": d.walk(grads_in, 1),
            "grads": d.walk(grads, 1),
            "state": d.walk(dict(model.state_dict()), 1),
        }
        if check and steadiness is not None:
            steadiness["unstable"] = unstable_gradients(total, x, grads_in, model, grads, torch)
        unstable = steadiness.get("unstable") if steadiness is not None else None
        frame("train", {"value": {"$map": "dict", "items": items}, **({"unstable": unstable} if unstable else {})}, d)
    except Exception as exc:  # noqa: BLE001
        frame("train", {"error": error_text(exc), "error_type": type(exc).__name__})


def unstable_gradients(total: Any, x: List[Any], grads_in: List[Any], model: Any, grads: Dict[str, Any], torch: Any) -> List[str]:
    """Which gradients of a train step its own code does not reproduce: `total`'s gradients computed a second time
    (after `total.backward(retain_graph=True)`, into new tensors: nothing accumulates into `.grad`) and compared bit
    for bit with the first pass's (`grads_in`, `grads`). A backward that reads memory it never wrote gives other
    values each time (seen in torch 1.13's CPU kernels); the copy's gradients then cannot be compared with the
    original's. Returns the train frame's items that vary (`input_grads`, `grads`), [] when both passes agree or the
    second cannot run."""
    groups = [
        ("input_grads", [(v, g) for v, g in zip(x, grads_in) if g is not None]),
        ("grads", [(p, grads[n]) for n, p in model.named_parameters() if grads.get(n) is not None]),
    ]
    leaves = [leaf for _, pairs in groups for leaf, _ in pairs]
    if not leaves:
        return []
    try:
        again = torch.autograd.grad(total, leaves, allow_unused=True)
    except Exception:  # noqa: BLE001 - a graph that cannot run backward twice is not checked
        return []
    unstable: List[str] = []
    i = 0
    for name, pairs in groups:
        same = True
        for _, first in pairs:
            second = again[i]
            i += 1
            if same and not (second is not None and same_values(first, second, torch)):
                same = False
        if not same:
            unstable.append(name)
    return unstable


def same_values(a: Any, b: Any, torch: Any) -> bool:
    """Whether two tensors would be the same to the comparison: dtype, shape and the bytes the digest hashes
    (`Digest.tensor`: a signed zero or a NaN's payload counts, as there)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    pa, pb = plain(a, torch), plain(b, torch)
    return bool(raw_bytes(pa, torch) == raw_bytes(pb, torch))
