"""Judge side: the comparison of a copy with its original, from what two workers sent. The original's worker ran
only the original's code and chose the plan (the argument set and input that ran, the variants to probe); the copy's
worker ran only the copy's code and probed it by the same plan. Here each probe of one side is matched with the
other's and compared leaf by leaf: the structure of every output, parameter, buffer and gradient, each tensor's
dtype and shape, and its values bit for bit (sha256 of their bytes; both sides run the same code on the same device,
so no tolerance is needed: a difference is reported with the largest one seen in the values sent).

`equivalent` only when every probe of the original has its match, nothing differs and values were compared."""

from __future__ import annotations

import hashlib
import math
import os
import re
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..wire.jobs import Original
from ..wire.protocol import NATIVE_OPS, Failure
from .verdict import TENSOR_DTYPES

Frame = Tuple[Dict[str, Any], bytes]  # a probe: its header's value, and its values

SHA = re.compile(r"^[0-9a-f]{64}$")
MAX_DIFFERENCES = 6


# what each probe of a variant compares, in the words of a report
PROBE_WORDS = {
    "structure": "the module tree",
    "train": "a train step",
    "arguments": "the objects it was built from",
    "returned": "what the method called returned",
    "state": "the state as built",
}


def readable_key(key: str) -> str:
    """A probe's key (`the arguments that ran|eval|1`) as a report says it: `eval output under seed 1, with the
    arguments that ran`."""
    label, _, probe = key.partition("|")
    parts = probe.split("|")
    what = f"eval output under seed {parts[1]}" if parts[0] == "eval" and len(parts) > 1 else PROBE_WORDS.get(parts[0], parts[0] or "output")
    return f"{what}, with {label}" if label else what


class Side:
    """One side's probes, checked: key -> (body, tensor entries, values by tensor)."""

    def __init__(self, frames: List[Frame], who: str) -> None:
        self.probes: Dict[str, Tuple[Dict[str, Any], List[Dict[str, Any]], List[array]]] = {}
        for body, blob in frames:
            key = body.get("key")
            if not isinstance(key, str) or key in self.probes:
                raise ValueError(f"{who}: a probe without a key, or twice")
            entries = body.get("tensors", [])
            if not isinstance(entries, list):
                raise ValueError(f"{who}: tensors is not a list")
            data = array("d")
            if len(blob) % 8:
                raise ValueError(f"{who}: values are not float64")
            data.frombytes(blob)
            values: List[array] = []
            offset = 0
            for e in entries:
                ok = (
                    isinstance(e, dict)
                    and e.get("dtype") in TENSOR_DTYPES
                    and isinstance(e.get("sha"), str)
                    and SHA.match(e["sha"])
                    and isinstance(e.get("shape"), list)
                    and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in e["shape"])
                    and isinstance(e.get("count"), int)
                    and isinstance(e.get("numel"), int)
                    and 0 <= e["count"] <= e["numel"]
                )
                if not ok or offset + e["count"] > len(data):
                    raise ValueError(f"{who}: a tensor that is not ours")
                values.append(data[offset : offset + e["count"]])
                offset += e["count"]
            if offset != len(data):
                raise ValueError(f"{who}: values that belong to no tensor")
            self.probes[key] = (body, entries, values)


class Comparison:
    """Walks two probe values together, counting the values compared and naming each difference by its path."""

    def __init__(self, key: str, a: Tuple[Any, ...], b: Tuple[Any, ...]) -> None:
        self.key = key
        self.a, self.b = a, b
        self.compared = 0
        self.largest = 0.0
        self.differences: List[str] = []

    def differ(self, path: str, what: str) -> None:
        if len(self.differences) < MAX_DIFFERENCES:
            self.differences.append(f"{readable_key(self.key)}, {path if path and path != '.' else 'the block'}: {what}")

    def tensor(self, path: str, i: Any, j: Any) -> None:
        (_, ea, va), (_, eb, vb) = self.a, self.b
        if not (isinstance(i, int) and isinstance(j, int) and 0 <= i < len(ea) and 0 <= j < len(eb)):
            raise ValueError("a tensor reference out of range")
        ta, tb = ea[i], eb[j]
        if ta["dtype"] != tb["dtype"] or ta["shape"] != tb["shape"]:
            self.differ(path, f"{tb['dtype']}{tb['shape']} in the copy, {ta['dtype']}{ta['shape']} in the original")
            return
        self.compared += ta["numel"]
        if ta["sha"] == tb["sha"]:
            return
        sa, sb = va[i], vb[j]
        n = min(len(sa), len(sb))
        worst, at = 0.0, -1
        for k in range(n):
            x, y = sa[k], sb[k]
            if x == y or (math.isnan(x) and math.isnan(y)):
                continue
            d = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
            if d > worst or at < 0:
                worst, at = d, k
        self.largest = max(self.largest, worst)
        if at >= 0:
            self.differ(path, f"value {at} is {sb[at]!r} in the copy, {sa[at]!r} in the original (largest difference {worst:.3g})")
        else:
            self.differ(path, f"values differ beyond the first {n} sent")

    def walk(self, path: str, x: Any, y: Any, depth: int = 0) -> None:
        if depth > 12:
            raise ValueError("structure too deep")
        if isinstance(x, dict) and isinstance(y, dict) and "$t" in x and "$t" in y:
            self.tensor(path, x["$t"], y["$t"])
            return
        if not (isinstance(x, dict) and isinstance(y, dict)):
            raise ValueError("a value that is not ours")
        kind_x, kind_y = kind_of(x), kind_of(y)
        if kind_x != kind_y or (kind_x != "$v" and x.get(kind_x) != y.get(kind_y)):
            self.differ(path, f"{describe(y)} in the copy, {describe(x)} in the original")
            return
        if kind_x == "$v":
            if x["$v"] != y["$v"]:
                self.differ(path, f"{y['$v']!r} in the copy, {x['$v']!r} in the original")
            else:
                self.compared += 1
            return
        items_x, items_y = x.get("items"), y.get("items")
        if isinstance(items_x, list) and isinstance(items_y, list):
            if len(items_x) != len(items_y):
                self.differ(path, f"{len(items_y)} items in the copy, {len(items_x)} in the original")
                return
            for n, (u, v) in enumerate(zip(items_x, items_y)):
                self.walk(f"{path}[{n}]", u, v, depth + 1)
        elif isinstance(items_x, dict) and isinstance(items_y, dict):
            if list(items_x) != list(items_y):
                only_x = [k for k in items_x if k not in items_y][:3]
                only_y = [k for k in items_y if k not in items_x][:3]
                self.differ(path, f"keys differ (the copy lacks {only_x}, has {only_y} more)" if only_x or only_y else "key order differs")
                return
            for k in items_x:
                self.walk(f"{path}.{k}" if path else str(k), items_x[k], items_y[k], depth + 1)


LEAF_KINDS = ("$v", "$seq", "$map", "$obj", "$module", "$type", "$t")


def kind_of(x: Dict[str, Any]) -> Optional[str]:
    """Which kind of leaf or node of a probe value `x` is (the evidence module's tags)."""
    return next((k for k in LEAF_KINDS if k in x), None)


def describe(x: Any) -> str:
    if not isinstance(x, dict):
        return type(x).__name__
    for k in ("$seq", "$map", "$obj", "$module", "$type"):
        if k in x:
            return str(x[k])[:60]
    return "a tensor" if "$t" in x else repr(x.get("$v"))[:60]


def compare(original: List[Frame], copy: List[Frame], lacking: Sequence[str] = ()) -> Dict[str, Any]:
    """The equivalence record for the report; raises Failure("differs") with the record when the copy differs,
    ("tampered") when a side's evidence is malformed. `lacking`: the compiled libraries the original's process loaded
    that the judge saw the copy's process lack (`judge.lacking_compiled`); only then may a probe the copy could not run
    for want of compiled operators be left out (the record's `native` names them). What the copy raises is not
    evidence: with nothing lacking, every error where the original ran is a difference."""
    try:
        a, b = Side(original, "the original"), Side(copy, "the copy")
    except ValueError as exc:
        raise Failure("tampered", f"the block wrote to the validator's channel (equivalence evidence: {exc})")
    missing = [k for k in a.probes if k not in b.probes]
    compared = 0
    largest = 0.0
    differences: List[str] = []
    variants: List[str] = []
    # probes the copy could not run for want of compiled operators the judge saw its process lack, where the original
    # ran (its package loaded them): not compared, and never a pass (judge.equivalence_of)
    native: List[str] = []
    # train steps whose gradients the original's own code did not repeat (evidence.unstable_gradients): not compared
    unstable: List[str] = []
    try:
        for key, pa in a.probes.items():
            pb = b.probes.get(key)
            if pb is None:
                continue
            body_a, body_b = pa[0], pb[0]
            c = Comparison(key, pa, pb)
            if lacking and "error" in body_b and "error" not in body_a and NATIVE_OPS.search(str(body_b.get("error", ""))):
                native.append(f"{key.split('|')[0]}: {str(body_b.get('error'))[:200]}")
                continue
            if "error" in body_a or "error" in body_b:
                if body_a.get("error_type") != body_b.get("error_type"):
                    c.differ("", f"{str(body_b.get('error', 'runs'))[:160]} in the copy, {str(body_a.get('error', 'runs'))[:160]} in the original")
            else:
                left = unstable_items(body_a)
                if left:
                    unstable.append(f"{readable_key(key)}: {' and '.join(UNSTABLE_WORDS[k] for k in left)}")
                c.walk("", without(body_a.get("value"), left), without(body_b.get("value"), left))
            compared += c.compared
            largest = max(largest, c.largest)
            differences.extend(c.differences)
            label = key.split("|")[0]
            if label not in variants:
                variants.append(label)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise Failure("tampered", f"the block wrote to the validator's channel (equivalence evidence: {exc})")
    record: Dict[str, Any] = {"variants": variants, "compared_values": compared, "probes": len(a.probes)}
    if differences:
        record.update(status="differs", differences=differences[:MAX_DIFFERENCES], largest_difference=largest)
        raise Failure("differs", "; ".join(differences[:3]), equivalence=record)
    if native:
        record.update(
            status="unavailable",
            native=list(lacking)[:8],
            reason=(
                f"the copy needs compiled operators its process has not loaded ({', '.join(os.path.basename(p) for p in list(lacking)[:3])}), "
                f"which the original's process loaded ({len(native)} probes not compared; first: {native[0]})"
            ),
        )
    elif missing:
        record.update(status="unavailable", reason=f"the copy did not report {len(missing)} of the original's {len(a.probes)} probes (first: {missing[0]})")
    elif not compared:
        record.update(status="unavailable", reason="nothing to compare: the block's state, outputs and gradients hold no value")
    else:
        record.update(status="equivalent", tolerance="bit-identical")
    if unstable and record["status"] == "equivalent":
        probes = f"{len(unstable)} probe{'s' if len(unstable) > 1 else ''}"
        record.update(
            unstable=unstable[:MAX_DIFFERENCES],
            reason=f"gradients not compared where the original's own vary between two passes of one train step ({probes}; first: {unstable[0]})",
        )
    return record


# the items of a train frame the original may say vary between two passes of its own backward
UNSTABLE_WORDS = {"input_grads": "the inputs' gradients", "grads": "the parameters' gradients"}


def unstable_items(body: Dict[str, Any]) -> List[str]:
    """The items of a train frame the original said vary between two backward passes of its own; anything else in
    the field is not ours."""
    left = body.get("unstable")
    if left is None:
        return []
    if not (isinstance(left, list) and all(k in UNSTABLE_WORDS for k in left)) or not str(body.get("key", "")).endswith("|train"):
        raise ValueError("an unstable field that is not ours")
    return list(dict.fromkeys(left))


def without(value: Any, items: List[str]) -> Any:
    """A train frame's value without the named items."""
    if not items or not isinstance(value, dict) or not isinstance(value.get("items"), dict):
        return value
    return dict(value, items={k: v for k, v in value["items"].items() if k not in items})


def blob_id(path: str) -> Optional[str]:
    """The git blob id of a file (what the index keys sources by), or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()  # git's blob id


def origin_problem(origin: Dict[str, Any], original: Original) -> Optional[str]:
    """Why the class the original's worker imported is not the indexed original (another file, or the file changed
    since it was indexed), or None."""
    got = origin.get("file")
    if not isinstance(got, str):
        return "the original class has no source file"
    expected = original.file
    if isinstance(expected, str) and os.path.realpath(got) != os.path.realpath(expected):
        return f"the original was imported from {got}, not from the indexed {expected}"
    folder = original.path
    if not expected and isinstance(folder, str) and not os.path.realpath(got).startswith(os.path.realpath(folder) + os.sep):
        return f"the original was imported from {got}, outside its repository {folder}"
    want = original.blob
    if isinstance(want, str) and want:
        have = blob_id(got)
        if have != want:
            return f"the original's file changed since it was indexed or pulled ({got}: blob {want[:12]}, now {str(have)[:12]})"
    return None
