"""Judge side: what is decided without running anything: names the file reads but never binds, the modules it
imports, and the distributions behind them with their installed versions."""

from __future__ import annotations

import ast
import builtins
import json
import symtable
import sys
from typing import Dict, List, Optional, Set, Tuple

MODULE_NAMES = {
    "__name__",
    "__file__",
    "__doc__",
    "__package__",
    "__spec__",
    "__loader__",
    "__builtins__",
    "__annotations__",
    "__dict__",
    "__path__",
    "__cached__",
}


def undefined_names(source: str, filename: str) -> List[Tuple[str, int]]:
    """Global names that are read somewhere but bound nowhere at module level and are not builtins."""
    top = symtable.symtable(source, filename, "exec")
    bound = set()
    star = False
    for sym in top.get_symbols():
        if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
            bound.add(sym.get_name())
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            star = True
        if isinstance(node, ast.Global):
            bound.update(node.names)
    if star:
        return []
    wanted = set()

    def visit(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            name = sym.get_name()
            is_module = table.get_type() == "module"
            if (is_module and not (sym.is_assigned() or sym.is_imported())) or (not is_module and sym.is_global()):
                wanted.add(name)
        for child in table.get_children():
            visit(child)

    visit(top)
    missing = sorted(n for n in wanted if n not in bound and not hasattr(builtins, n) and n not in MODULE_NAMES)
    lines = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in missing and node.id not in lines:
            lines[node.id] = node.lineno
    return [(n, lines.get(n, 0)) for n in missing]


def imported_top_levels(tree: ast.AST) -> List[str]:
    """Top-level module names the file imports (anywhere, function bodies too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(names)


def imports_anywhere(tree: ast.AST) -> Set[str]:
    """Top-level names of every module the file imports: `imported_top_levels`, and calls of
    `import_module`/`__import__` with a constant name."""
    names = set(imported_top_levels(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("import_module", "__import__"):
                names.add(node.args[0].value.lstrip(".").split(".")[0])
    return names


def requirements(modules: List[str]) -> List[Dict[str, Optional[str]]]:
    """Third-party distributions behind the imported modules, with the versions installed here."""
    stdlib = getattr(sys, "stdlib_module_names", set())
    out = []
    try:
        import importlib.metadata as md

        dists = md.packages_distributions() if hasattr(md, "packages_distributions") else {}
    except Exception:  # noqa: BLE001 - metadata is best effort
        md, dists = None, {}
    for mod in modules:
        if mod in stdlib or mod == "__future__":
            continue
        dist = (dists.get(mod) or [mod])[0]
        version = location = installer = url = None
        if md is not None:
            try:
                found = md.distribution(dist)
                version = found.version
                location = str(found.locate_file(""))
                installer = (found.read_text("INSTALLER") or "").strip() or None
                direct = found.read_text("direct_url.json")
                url = json.loads(direct).get("url") if direct else None
            except Exception:  # noqa: BLE001, S110 - metadata is best effort
                pass
        out.append({"module": mod, "distribution": dist if version else None, "version": version, "location": location, "installer": installer, "url": url})
    return out
