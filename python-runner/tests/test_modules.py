"""The judge's rooms fit together: every relative import names something its module defines, and the worker modules
the zygote loads come in an order where each imports only those before it (it loads them one by one into a private
namespace). Needs no torch."""

import ast
import os
import unittest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nnrag_judge")


def parsed(name: str) -> ast.Module:
    with open(os.path.join(PACKAGE, f"{name}.py"), encoding="utf-8") as fh:
        return ast.parse(fh.read())


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


def relative_imports(tree: ast.Module) -> list:
    return [(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1 for a in n.names]


class Modules(unittest.TestCase):
    def test_every_relative_import_is_defined(self) -> None:
        modules = sorted(f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py"))
        definitions = {m: defined(parsed(m)) for m in modules}
        wrong = []
        for m in modules:
            for module, name in relative_imports(parsed(m)):
                if module is None:
                    if name not in modules:
                        wrong.append(f"{m}: from . import {name}")
                elif name not in definitions.get(module, set()):
                    wrong.append(f"{m}: from .{module} import {name}")
        self.assertEqual(wrong, [])

    def test_the_zygote_loads_each_worker_module_after_what_it_imports(self) -> None:
        order = next(
            ast.literal_eval(n.value) for n in parsed("zygote").body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "WORKER_MODULES"
        )
        wrong = []
        for i, m in enumerate(order):
            tree = parsed(m)
            # (an import only for the type checker never runs)
            checked = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test) for n in ast.walk(node)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 1 and id(node) not in checked:
                    needed = [node.module] if node.module else [a.name for a in node.names]
                    wrong += [f"{m} imports {n}" for n in needed if n not in order[:i]]
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
