"""For the mutation bench: is a changed line a parameter default that no call can use?

Usage: python unreadDefault.py FILE LINE COLUMN BLOCK  (FILE: the unchanged pulled file; LINE: 1-based; COLUMN: 0-based,
where the change starts; BLOCK: the class judged). Prints one line, the reason the default is never used, or nothing when it may be used.

A default is never used when the parameter is never read in its function's body, or when the function is a helper
(not the block's own constructor or forward, which the judge calls itself) and every call that can reach it in the
file passes that argument: the function called by its name, or a class called by its name or through a parameter
whose default is the class (`attn_class=Attention`, then `attn_class(dim, attn_drop=...)`). Any other use of the
name (a subclass, `partial`, a table, `**kwargs` at a call; `isinstance` aside) and the default counts as possibly
used.
"""

import ast
import sys
from typing import List, Optional, Set, Tuple


def covers(node: ast.AST, line: int, column: int) -> bool:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]
    return start <= (line, column) < end


def defaults_of(fn: ast.AST) -> List[Tuple[ast.arg, ast.expr]]:
    """Each parameter of a function that has a default, with its default."""
    a = fn.args  # type: ignore[attr-defined]
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    return pairs + [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]


def owner_of(tree: ast.Module, line: int, column: int) -> Optional[Tuple[ast.FunctionDef, Optional[ast.ClassDef], ast.arg]]:
    """The function whose signature holds (line, column) in a parameter's default, its class, and the parameter."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for param, default in defaults_of(node):
            if covers(default, line, column):
                cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and node in c.body), None)
                return node, cls, param
    return None


def reads(fn: ast.AST, name: str) -> bool:
    body = fn.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for b in body for n in ast.walk(b)) \
        or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("locals", "vars") for b in body for n in ast.walk(b))


def passes(call: ast.Call, name: str, index: int) -> Optional[bool]:
    """True when the call gives the parameter, False when it does not, None when it cannot be told."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return any(k.arg == name for k in call.keywords) or len(call.args) > index


def locals_of(fn: ast.AST) -> Set[str]:
    """Names a function binds: its parameters and what it assigns."""
    a = fn.args  # type: ignore[attr-defined]
    out = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} | {p.arg for p in (a.vararg, a.kwarg) if p}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def global_uses(tree: ast.Module, name: str) -> List[ast.Name]:
    """Loads of `name` that mean the module's `name` (not a parameter or local of the same name)."""
    out: List[ast.Name] = []

    def visit(node: ast.AST, shadowed: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
                visit(d, shadowed)  # defaults are read where the function is defined
            for d in getattr(node, "decorator_list", []):
                visit(d, shadowed)
            inner = shadowed or name in locals_of(node)
            for b in (node.body if isinstance(node.body, list) else [node.body]):
                visit(b, inner)
            return
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and not shadowed:
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child, shadowed)

    visit(tree, False)
    return out


def aliases(tree: ast.Module, name: str) -> Tuple[List[str], bool]:
    """Names that call `name`: itself and parameters whose default is it; and whether every other use of it is one of
    those defaults or a call (False: a use that may reach it another way)."""
    out = [name]
    defaults: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for param, default in defaults_of(node):
                if isinstance(default, ast.Name) and default.id == name:
                    out.append(param.arg)
                    defaults.append(default)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # `isinstance(m, C)` reads the class without building it
    tested = {id(n.args[1]) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id in ("isinstance", "issubclass") and len(n.args) == 2}
    uses = global_uses(tree, name)
    if any(id(u) not in called | tested and all(u is not d for d in defaults) for u in uses):
        return out, False
    return out, True


def unread_default(text: str, line: int, column: int, block: str) -> Optional[str]:
    tree = ast.parse(text)
    found = owner_of(tree, line, column)
    if found is None:
        return None
    fn, cls, param = found
    if not reads(fn, param.arg):
        return f"`{param.arg}` is never read in {fn.name}"
    if cls is not None and (cls.name == block or fn.name != "__init__"):
        return None  # the block's own signature, or a method called through an attribute: the judge may use it
    if cls is None and any(isinstance(n, ast.FunctionDef) and fn in n.body for n in ast.walk(tree)):
        return None  # a nested function
    name = cls.name if cls is not None else fn.name
    if cls is not None and any(isinstance(n, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == name for b in n.bases) for n in ast.walk(tree)):
        return None  # a subclass may call it through super()
    names, only_calls = aliases(tree, name)
    if not only_calls:
        return None
    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    index = positional.index(param.arg) - (1 if cls is not None else 0) if param.arg in positional else 10 ** 6
    # calls of the name itself where it means the module's, and of the parameters defaulting to it
    direct = {id(u) for u in global_uses(tree, name)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and (id(n.func) in direct or (n.func.id in names[1:] and n.func.id != name))]
    if not calls:
        return None
    given = [passes(c, param.arg, index) for c in calls]
    if all(g is True for g in given):
        return f"every call of {name} in the file ({len(calls)}) passes `{param.arg}`"
    return None


def main(argv: List[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    reason = unread_default(text, int(argv[2]), int(argv[3]), argv[4])
    if reason:
        print(reason)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

