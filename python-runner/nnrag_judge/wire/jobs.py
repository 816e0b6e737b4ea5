"""Judge side: the judge's requests as types. A request that `messages.checked` let through (its kind and fields are
judge.schema.json's) becomes a `ValidateJob` or an `ObserveJob`; what is malformed inside a field (a native operator's
file with a folder in it, an entry whose module is not a dotted name) is dropped here, never passed on. A worker is
told of its job by `worker_request()`, plain data over its pipe.

Every field of a job names the request field it is read from (`wire`): `tests/test_messages.py` checks that the two
kinds' fields are exactly the schema's, so neither side can add one the other does not know."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

# what every request carries beside its job: read by serve.serve, not by a handler
ENVELOPE = ("kind", "id", "work", "scratch")


def wire(name: str, default: Any = None) -> Any:
    """A job's field read from the request field `name`."""
    return field(default=default, metadata={"wire": name})


def wire_list(name: str) -> Any:
    return field(default_factory=list, metadata={"wire": name})


def wire_names(job: type) -> List[str]:
    """The request fields a job reads (test_messages: they are the schema's)."""
    return [f.metadata["wire"] for f in fields(job) if "wire" in f.metadata]


def dotted(name: Any) -> bool:
    return isinstance(name, str) and all(part.isidentifier() for part in name.split("."))


def strings(value: Any) -> List[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def relative_file(value: Any) -> bool:
    """A path inside a folder: relative, no `..` part, no empty part."""
    return (
        isinstance(value, str)
        and bool(value)
        and not value.startswith("/")
        and "\\" not in value
        and all(part not in ("", ".", "..") for part in value.split("/"))
    )


@dataclass(frozen=True)
class Native:
    """A compiled operator built for the repository (`--build-native`): a module's name, the function, the `.so` file
    (a bare name in the folder of built operators)."""

    module: str
    name: str
    file: str

    @staticmethod
    def listed(value: Any) -> Optional[List["Native"]]:
        """The well-formed operators of a request's list (None when the field is not a list)."""
        if not isinstance(value, list):
            return None
        return [
            Native(n["module"], n["name"], n["file"])
            for n in value
            if isinstance(n, dict) and all(isinstance(n.get(k), str) for k in ("module", "name", "file")) and "/" not in n["file"] and n["file"].endswith(".so")
        ]

    def plain(self) -> Dict[str, str]:
        return {"module": self.module, "name": self.name, "file": self.file}


@dataclass(frozen=True)
class Original:
    """The original class to compare with: its module and class, the folder it imports from (`path`, `also`), the
    indexed file and blob it is checked against, and the repository's builder of it."""

    module: str
    class_name: str
    path: Optional[str] = None
    file: Optional[str] = None
    blob: Optional[str] = None
    builder: Optional[Dict[str, str]] = None
    also: Tuple[str, ...] = ()

    @staticmethod
    def parse(value: Any) -> Optional["Original"]:
        """From the request's `original` (an object, or its JSON text from the command line); None when malformed."""
        try:
            got = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            return None
        if not isinstance(got, dict) or not isinstance(got.get("module"), str) or not isinstance(got.get("class"), str):
            return None
        builder = got.get("builder")
        made = None
        if isinstance(builder, dict) and isinstance(builder.get("module"), str) and isinstance(builder.get("name"), str):
            made = {"module": builder["module"], "name": builder["name"]}

        def text(k: str) -> Optional[str]:
            return got[k] if isinstance(got.get(k), str) else None

        return Original(got["module"], got["class"], text("path"), text("file"), text("blob"), made, tuple(strings(got.get("also"))))

    def plain(self) -> Dict[str, Any]:
        """As the original's worker reads it."""
        return {
            "module": self.module,
            "class": self.class_name,
            "path": self.path,
            "file": self.file,
            "blob": self.blob,
            "builder": self.builder,
            "also": list(self.also),
        }


def candidates(value: Any) -> List[Dict[str, Any]]:
    """Argument sets to try first: a list of objects (or its JSON text, from the command line)."""
    try:
        given = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return []
    return [g for g in given if isinstance(g, dict)] if isinstance(given, list) else []


def upstream_names(value: Any) -> Optional[List[str]]:
    """Names the original's module reads and never defines (None when the request has no list)."""
    return [n for n in strings(value) if n.isidentifier()][:200] if isinstance(value, list) else None


@dataclass(frozen=True)
class ValidateJob:
    """kind "validate": one pulled file judged against its original (judge.schema.json's `validate`)."""

    file: str = wire("file", "")
    class_name: Optional[str] = wire("class")
    candidates: List[Dict[str, Any]] = wire_list("candidates")
    examples: List[str] = wire_list("examples")
    native: List[str] = wire_list("native")
    builder: Optional[str] = wire("builder")
    memory_mb: int = wire("memory_mb", 0)
    timeout_s: float = wire("timeout_s", 600.0)
    original: Optional[Original] = wire("original")
    original_only: bool = wire("original_only", False)
    no_original: Optional[str] = wire("no_original")
    upstream_undefined: Optional[List[str]] = wire("upstream_undefined")
    # the original's run of an identical earlier job, kept by the caller (checked against this interpreter by the
    # judge, never shown to a worker), and whether to send this one's back to be kept
    original_frames: Optional[str] = wire("original_frames")
    keep_original: bool = wire("keep_original", False)
    natives: Optional[List[Native]] = wire("natives")

    @staticmethod
    def parse(req: Dict[str, Any]) -> "ValidateJob":
        return ValidateJob(
            file=str(req.get("file", "")),
            class_name=req.get("class") if isinstance(req.get("class"), str) else None,
            candidates=candidates(req.get("candidates", [])),
            examples=[str(e)[:8000] for e in req["examples"] if isinstance(e, str)][:4] if isinstance(req.get("examples"), list) else [],
            native=strings(req.get("native")),
            builder=req.get("builder") if isinstance(req.get("builder"), str) else None,
            memory_mb=int(req.get("memory_mb", 0)),
            timeout_s=float(req.get("timeout_s", 600)),
            original=Original.parse(req.get("original")),
            original_only=req.get("original_only") is True,
            no_original=req["no_original"] if isinstance(req.get("no_original"), str) else None,
            upstream_undefined=upstream_names(req.get("upstream_undefined")),
            original_frames=req["original_frames"] if isinstance(req.get("original_frames"), str) else None,
            keep_original=req.get("keep_original") is True,
            natives=Native.listed(req.get("natives")),
        )

    def worker_request(self, **more: Any) -> Dict[str, Any]:
        """What a worker is told of the job (never the kept original's run), with `more` (its file, the plan...)."""
        out: Dict[str, Any] = {"class": self.class_name, "candidates": self.candidates, "native": self.native, "builder": self.builder}
        if self.no_original is not None:
            out["no_original"] = self.no_original
        if self.examples:
            out["examples"] = self.examples
        if self.original_only:
            out["original_only"] = True
        if self.upstream_undefined is not None:
            out["upstream_undefined"] = self.upstream_undefined
        if self.natives is not None:
            out["natives"] = [n.plain() for n in self.natives]
        return {**out, **more}


@dataclass(frozen=True)
class ObserveEntry:
    """One entry of a repository the observer runs: a test or function (`kind` None), a builder fed what it builds
    ("build"), a configuration file's `model` ("config": `file` relative to the root, the `registries` it names and
    the `modules` registering classes in them) or a README code block ("example": its `code`)."""

    id: str
    module: str
    function: str
    class_name: Optional[str] = None
    kind: Optional[str] = None
    code: Optional[str] = None
    file: Optional[str] = None
    registries: Tuple[Tuple[str, str], ...] = ()
    modules: Tuple[str, ...] = ()

    @staticmethod
    def parse(e: Any) -> Optional["ObserveEntry"]:
        if not (
            isinstance(e, dict)
            and all(isinstance(e.get(k), str) for k in ("id", "module", "function"))
            and dotted(e["module"])
            and e["function"].isidentifier()
            and (e.get("class") is None or (isinstance(e["class"], str) and e["class"].isidentifier()))
            and e.get("kind") in (None, "build", "config", "example")
        ):
            return None
        entry = ObserveEntry(e["id"], e["module"], e["function"], e.get("class"), e.get("kind"))
        if entry.kind == "example":
            if not isinstance(e.get("code"), str) or len(e["code"]) > 20_000:
                return None
            return ObserveEntry(entry.id, entry.module, entry.function, entry.class_name, entry.kind, code=e["code"])
        if entry.kind == "config":
            file, registries = e.get("file"), e.get("registries")
            if not relative_file(file) or not isinstance(registries, list):
                return None
            pairs = tuple(
                (m, n)
                for m, n in (r for r in registries if isinstance(r, list) and len(r) == 2)
                if isinstance(m, str) and isinstance(n, str) and n.isidentifier() and dotted(m)
            )
            modules = tuple(m for m in strings(e.get("modules")) if dotted(m))
            return ObserveEntry(entry.id, entry.module, entry.function, entry.class_name, entry.kind, file=file, registries=pairs, modules=modules)
        return entry

    def plain(self) -> Dict[str, Any]:
        """As the observer's worker reads it."""
        out: Dict[str, Any] = {"id": self.id, "module": self.module, "function": self.function}
        if self.class_name is not None:
            out["class"] = self.class_name
        if self.kind is not None:
            out["kind"] = self.kind
        if self.kind == "example":
            out["code"] = self.code
        if self.kind == "config":
            out.update(file=self.file, registries=[list(r) for r in self.registries], modules=list(self.modules))
        return out


@dataclass(frozen=True)
class ObserveJob:
    """kind "observe": a repository's entries run under the observer (judge.schema.json's `observe`): its folder
    (`root`), where its modules import from (`path`, `also`), each entry's own time limit, and the compiled operators
    built for it (in `native_folder`'s `_nnrag_native/`), and its own package (`package`)."""

    root: str
    path: str
    also: Tuple[str, ...] = ()
    entries: Tuple[ObserveEntry, ...] = ()
    entry_s: float = 20.0
    natives: Optional[List[Native]] = None
    native_folder: Optional[str] = None
    # the repository's own package, imported once by the template its workers are forked from
    package: Optional[str] = None
    # the root is a private copy: its setup.py may place the package data an editable install would (observe.installed)
    install: bool = False
    memory_mb: int = 0
    timeout_s: float = 600.0

    WIRE = ("observe", "memory_mb", "timeout_s")  # the request fields it reads (the rest are `observe`'s own)

    @staticmethod
    def parse(req: Dict[str, Any]) -> Optional["ObserveJob"]:
        """From a checked request; None when its `observe` is malformed."""
        value = req.get("observe")
        if not isinstance(value, dict) or not isinstance(value.get("root"), str) or not isinstance(value.get("path"), str):
            return None
        entries = tuple(e for e in (ObserveEntry.parse(v) for v in value.get("entries") or []) if e is not None)
        budget = value.get("entry_s")
        natives = Native.listed(value.get("natives")) if isinstance(value.get("native_folder"), str) else None
        return ObserveJob(
            root=value["root"],
            path=value["path"],
            also=tuple(strings(value.get("also"))),
            entries=entries,
            entry_s=float(budget) if isinstance(budget, (int, float)) and not isinstance(budget, bool) and 0 < budget <= 600 else 20.0,
            natives=natives,
            native_folder=value["native_folder"] if natives is not None else None,
            package=value["package"] if isinstance(value.get("package"), str) and value["package"].isidentifier() else None,
            install=value.get("install") is True,
            memory_mb=int(req.get("memory_mb", 0)),
            timeout_s=float(req.get("timeout_s", 600)),
        )

    def worker_request(self, entries: Tuple[ObserveEntry, ...]) -> Dict[str, Any]:
        """What the observer's worker is told: the repository and the entries left to run."""
        spec: Dict[str, Any] = {"root": self.root, "path": self.path, "also": list(self.also), "entries": [e.plain() for e in entries], "entry_s": self.entry_s}
        if self.natives is not None:
            spec.update(natives=[n.plain() for n in self.natives], native_folder=self.native_folder)
        if self.install:
            spec["install"] = True
        return {"observe": spec}
