"""Judge side: the one door of the judge's requests. Each request names its `kind` and is checked against
judge.schema.json (beside judge.py; judgeRequests.ts's requests are tested against the same file), so the two sides cannot
drift: a field one side adds that the other does not know is refused, as is a kind the judge has no handler for."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

SCHEMA_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "judge.schema.json")

JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class BadRequest(ValueError):
    """A request the judge does not take: the message says which field or kind, for the caller's error."""


def load_schema(path: str = SCHEMA_FILE) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def of_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, JSON_TYPES[name])


def problem(value: Any, schema: Dict[str, Any], defs: Dict[str, Any], where: str) -> Optional[str]:
    """The first way `value` does not fit `schema` (the part of JSON Schema judge.schema.json uses), or None."""
    if "$ref" in schema:
        schema = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]
    if "const" in schema and value != schema["const"]:
        return f"{where} must be {schema['const']!r}"
    types = schema.get("type")
    if types is not None and not any(of_type(value, t) for t in ([types] if isinstance(types, str) else types)):
        return f"{where} must be {' or '.join([types] if isinstance(types, str) else types)}"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found = problem(item, schema["items"], defs, f"{where}[{i}]")
            if found:
                return found
    if isinstance(value, dict) and ("properties" in schema or "required" in schema):
        known: Dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"{where} lacks '{name}'"
        for name, item in value.items():
            if name not in known:
                if schema.get("additionalProperties") is False:
                    return f"{where} has a field this judge does not know: '{name}'"
                continue
            found = problem(item, known[name], defs, f"{where}.{name}")
            if found:
                return found
    return None


def checked(request: Any, schema: Dict[str, Any]) -> str:
    """The kind of a request that fits the schema; BadRequest saying why not otherwise."""
    if not isinstance(request, dict):
        raise BadRequest("a request is a JSON object")
    kinds: List[str] = [str(r["$ref"]).rsplit("/", 1)[-1] for r in schema.get("oneOf", [])]
    kind = request.get("kind")
    if kind not in kinds:
        raise BadRequest(f"unknown request kind {kind!r} (this judge takes: {', '.join(sorted(kinds))})")
    found = problem(request, schema["$defs"][kind], schema["$defs"], f"a {kind} request")
    if found:
        raise BadRequest(found)
    return str(kind)
