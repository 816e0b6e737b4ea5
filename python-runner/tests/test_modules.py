"""The judge's rooms fit together: every relative import names something its module defines, and the worker modules
the zygote loads come in an order where each imports only those before it (it loads them one by one into a private
namespace). Which room may import which is the lint's rule (scripts/pythonRooms.mjs). Needs no torch."""

import ast
import os
import unittest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nnrag_judge")


ROOMS = ("judge", "wire", "worker")


def parsed(name: str) -> ast.Module:
    """The module `room.name` (or `room/name`) of the package, parsed."""
    room, base = name.replace("/", ".").split(".")
    with open(os.path.join(PACKAGE, room, f"{base}.py"), encoding="utf-8") as fh:
        return ast.parse(fh.read())


def resolved(module: str, node: ast.ImportFrom) -> list:
    """The modules (`room.name`) a relative import of `module` names: `from .x import y`, `from ..room.x import y`,
    `from . import x`."""
    room = module.split(".")[0]
    if node.level == 1:
        return [f"{room}.{node.module}"] if node.module else [f"{room}.{a.name}" for a in node.names]
    if node.level == 2 and node.module and "." in node.module:
        return [node.module]
    if node.level == 2 and node.module in ROOMS:
        return [f"{node.module}.{a.name}" for a in node.names]
    return [f"? {'.' * node.level}{node.module or ''}"]


def defined(tree: ast.Module) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node in tree.body:
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in tree.body:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
    return names


def all_modules() -> list:
    return sorted(f"{room}.{f[:-3]}" for room in ROOMS for f in os.listdir(os.path.join(PACKAGE, room)) if f.endswith(".py") and f != "__init__.py")


class Modules(unittest.TestCase):
    def test_every_relative_import_is_defined(self) -> None:
        modules = all_modules()
        definitions = {m: defined(parsed(m)) for m in modules}
        wrong = []
        for m in modules:
            for node in ast.walk(parsed(m)):
                if not isinstance(node, ast.ImportFrom) or node.level == 0:
                    continue
                targets = resolved(m, node)
                if node.module is None or node.module in ROOMS:
                    wrong += [f"{m}: imports {t}" for t in targets if t not in modules]
                else:
                    wrong += [f"{m}: from {targets[0]} import {a.name}" for a in node.names if a.name not in definitions.get(targets[0], set())]
        self.assertEqual(wrong, [])

    def test_the_zygote_loads_each_worker_module_after_what_it_imports(self) -> None:
        order = next(
            ast.literal_eval(n.value) for n in parsed("worker.zygote").body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "WORKER_MODULES"
        )
        wrong = []
        for i, m in enumerate(order):
            tree = parsed(m)
            # (an import only for the type checker never runs)
            checked = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test) for n in ast.walk(node)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level and id(node) not in checked:
                    wrong += [f"{m} imports {n}" for n in resolved(m, node) if n not in order[:i]]
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
