"""Worker side: when a guessed argument set fails inside the block's own constructor, the statement that failed says
what the arguments must be (`assert 0 <= prob < 1`, `assert isinstance(depth, tuple)`, `if d_model % n_heads != 0:
raise ValueError(...)`, `self.ph, self.pw = patch_size`), and the arguments are changed to satisfy it. Both sides
repair the same way (the same source fails the same way), so the copy and the original are built alike. Runs only
in a worker."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from typing import Any, Dict, List, Optional, Set, Tuple

# an int where the code wanted a sequence, or None where it wanted a value
NOT_A_SEQUENCE = ("has no len()", "is not iterable", "cannot unpack non-iterable", "is not subscriptable")
EXISTS = ("exists", "is_not_none", "not_none", "defined")
DIVISIBLE = ("divisible_by", "divisible", "is_divisible")


def failing_statements(exc: BaseException, cls: Any) -> List[Tuple[ast.stmt, List[ast.AST], Any]]:
    """The statements of the block's `__init__`s where the exception was raised (or that called the code that raised
    it), each with its enclosing nodes (innermost last) and its frame, innermost first: the `__init__` of a base class
    the block's called (`super().__init__(depth=depth)`, then the base's `if depth not in self.arch_settings: raise`:
    its parameters that hold the block's own arguments are changed), then the block's own. None in the traceback: []."""
    inits: Dict[Any, Any] = {}
    for klass in getattr(cls, "__mro__", ()):
        init = klass.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
        if code is not None:
            inits.setdefault(code, init)
    own = getattr(getattr(cls, "__init__", None), "__code__", None)
    tb = exc.__traceback__
    innermost = last_own = None
    # the innermost frame of each: where it raised, or the statement whose call raised deeper
    # (`nn.Linear(hidden_size, ...)` with `hidden_size=None`)
    while tb is not None:
        if tb.tb_frame.f_code in inits:
            innermost = tb
        if tb.tb_frame.f_code is own:
            last_own = tb
        tb = tb.tb_next
    out = []
    for at in dict.fromkeys(t for t in (innermost, last_own) if t is not None):
        found = statement_at(inits[at.tb_frame.f_code], at.tb_lineno)
        if found is not None:
            out.append((found[0], found[1], at.tb_frame))
    return out


def statement_at(init: Any, lineno: int) -> Optional[Tuple[ast.stmt, List[ast.AST]]]:
    """The innermost statement of `init`'s source on the file's line `lineno`, and its enclosing nodes."""
    try:
        lines, start = inspect.getsourcelines(init)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    line = lineno - start + 1
    found: List[Tuple[ast.stmt, List[ast.AST]]] = []

    def walk(node: ast.AST, parents: List[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and child.lineno <= line <= (child.end_lineno or child.lineno):
                found.append((child, parents + [node]))
            walk(child, parents + [node])

    walk(tree, [])
    return found[-1] if found else None


def solve(test: ast.expr, values: Dict[str, Any], guess: Any, namespace: Dict[str, Any], build: Any = None) -> Dict[str, Any]:
    """Values for the parameters named in `test` that make it true (as many as it can say)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        for part in test.values:
            out = solve(part, values, guess, namespace, build)
            if out:
                return out
        return {}
    if isinstance(test, ast.BoolOp):
        out: Dict[str, Any] = {}
        bounds: Dict[str, List[Tuple[str, Any]]] = {}
        for part in test.values:
            if isinstance(part, ast.Compare):
                for name, op, value in comparisons(part, values):
                    bounds.setdefault(name, []).append((op, value))
            else:
                out.update(solve(part, values, guess, namespace, build))
        for name, links in bounds.items():
            out[name] = within(values[name], links)
        return {k: v for k, v in out.items() if v is not None}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = negated(test.operand)
        # `not f(x)`: nothing to push the negation into
        return {} if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not) else solve(inner, values, guess, namespace, build)
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.args:
        names = [a.id for a in test.args if isinstance(a, ast.Name)]
        if test.func.id in EXISTS and names and names[0] in values and values[names[0]] is None:
            return {names[0]: guess(names[0])}
        if test.func.id in DIVISIBLE and len(names) == 2:
            return multiple(names[0], names[1], values)
        if test.func.id == "isinstance" and len(test.args) == 2 and names and names[0] in values:
            return {names[0]: of_kind(values[names[0]], test.args[1], namespace, build)}
        if test.func.id == "all" and isinstance(test.args[0], (ast.List, ast.Tuple)):
            return solve(ast.BoolOp(op=ast.And(), values=list(test.args[0].elts)), values, guess, namespace, build)
        return {}
    if isinstance(test, ast.Name) and test.id in values and not values[test.id]:
        return {test.id: guess(test.id)}
    if not isinstance(test, ast.Compare):
        return {}
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if len(test.ops) == 1 and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and isinstance(op, ast.Eq):
        if isinstance(left.left, ast.Name) and isinstance(left.right, ast.Name):
            return multiple(left.left.id, left.right.id, values)
    if (
        len(test.ops) == 1
        and isinstance(left, ast.Call)
        and isinstance(left.func, ast.Name)
        and left.func.id == "len"
        and left.args
        and isinstance(left.args[0], ast.Name)
        and isinstance(op, ast.Eq)
    ):
        name = left.args[0].id
        count = right.value if isinstance(right, ast.Constant) else values.get(str(getattr(right, "id", "")))
        if name in values and isinstance(count, int) and 0 < count <= 8 and is_number(values[name]):
            return {name: tuple([values[name]] * count)}
        return {}
    # `mode in ("grid", "window")`: the first of the values listed
    if (
        len(test.ops) == 1
        and isinstance(op, ast.In)
        and isinstance(left, ast.Name)
        and left.id in values
        and isinstance(right, (ast.List, ast.Tuple, ast.Set))
        and right.elts
        and isinstance(right.elts[0], ast.Constant)
    ):
        listed = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        return {} if values[left.id] in listed else {left.id: listed[0]}
    # `depth in self.arch_settings`, `arch in set(self.arch_zoo)`: the first key of the table the class keeps
    if len(test.ops) == 1 and isinstance(op, ast.In) and isinstance(left, ast.Name) and left.id in values:
        keys = table_keys(right, namespace)
        return {left.id: keys[0]} if keys and values[left.id] not in keys else {}
    # `x is not None`, also as the attribute the constructor keeps it in (`if self.processor is None: raise`)
    kept = left.attr if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) and left.value.id == "self" else None
    if len(test.ops) == 1 and isinstance(op, ast.IsNot) and kept in values and values[kept] is None:
        return {kept: guess(kept)}
    if len(test.ops) == 1 and isinstance(op, ast.IsNot) and isinstance(left, ast.Name) and left.id in values and values[left.id] is None:
        return {left.id: guess(left.id)}
    pairs: Dict[str, List[Tuple[str, Any]]] = {}
    for name, o, value in comparisons(test, values):
        pairs.setdefault(name, []).append((o, value))
    return {k: v for k, v in ((k, within(values[k], p)) for k, p in pairs.items()) if v is not None}


# a table's keys, at most this many read
MAX_KEYS = 64


def table_keys(node: ast.expr, namespace: Dict[str, Any]) -> List[Any]:
    """The keys (numbers, strings) of the table a membership test reads: an attribute of `self` (its class's, as the
    frame's `self` holds it: `self.arch_settings`) or a module-level name, through `set()`, `list()`, `tuple()`,
    `sorted()` or `.keys()`; none for anything else (nothing is called but reading it)."""
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1 and isinstance(node.func, ast.Name):
        return table_keys(node.args[0], namespace) if node.func.id in ("set", "list", "tuple", "sorted", "frozenset") else []
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
        return table_keys(node.func.value, namespace)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        owner = namespace.get(SELF)
        table = getattr(type(owner), node.attr, None) if owner is not None else None
        if table is None and owner is not None:
            table = vars(owner).get(node.attr) if hasattr(owner, "__dict__") else None
    elif isinstance(node, ast.Name):
        table = namespace.get(node.id)
    else:
        return []
    if not isinstance(table, (dict, list, tuple, set, frozenset)):
        return []
    keys = [k for k in list(table)[:MAX_KEYS] if isinstance(k, (int, str)) and not isinstance(k, bool)]
    return sorted(keys, key=lambda k: (str(type(k)), k)) if isinstance(table, (set, frozenset)) else keys


# the frame's `self`, in the namespace a test is solved in (a name no module defines)
SELF = " self"


OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def comparisons(test: ast.Compare, values: Dict[str, Any]) -> List[Tuple[str, str, Any]]:
    """(parameter, operator, number) for each link of a comparison chain between a parameter and a number."""
    out = []
    items = [test.left] + list(test.comparators)
    for i, op in enumerate(test.ops):
        a, b, sym = items[i], items[i + 1], OPS.get(type(op))
        if sym is None:
            continue
        if isinstance(a, ast.Name) and a.id in values and number(b) is not None:
            out.append((a.id, sym, number(b)))
        elif isinstance(b, ast.Name) and b.id in values and number(a) is not None:
            out.append((b.id, FLIP[sym], number(a)))
    return out


def number(node: ast.AST) -> Any:
    """The number a literal (or a negated literal) is; None for anything else."""
    if isinstance(node, ast.Constant) and is_number(node.value):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value: Any = node.operand.value
        return -value if is_number(value) else None
    return None


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def within(current: Any, pairs: List[Tuple[str, Any]]) -> Any:
    """A number that satisfies every (operator, bound); the current value when it already does."""

    def ok(v: Any) -> bool:
        return all({"<": v < b, "<=": v <= b, ">": v > b, ">=": v >= b, "==": v == b, "!=": v != b}[o] for o, b in pairs)

    if is_number(current) and ok(current):
        return None
    exact = [b for o, b in pairs if o == "=="]
    if exact:
        return exact[0]
    real = isinstance(current, float) or any(isinstance(b, float) for _, b in pairs)
    lows = [(b, o == ">") for o, b in pairs if o in (">", ">=")]
    highs = [(b, o == "<") for o, b in pairs if o in ("<", "<=")]
    lo, hi = (max(lows) if lows else None), (min(highs) if highs else None)
    tries: List[Any] = []
    if lo is not None and hi is not None:
        tries += [(lo[0] + hi[0]) / 2] if real else [lo[0] + (1 if lo[1] else 0)]
    elif lo is not None:
        tries += [lo[0] + (0.5 if real else 1) if lo[1] else lo[0], lo[0] + 1]
    elif hi is not None:
        tries += [hi[0] / 2 if real and hi[0] > 0 else hi[0] - (1 if hi[1] else 0)]
    tries += [(current or 0) + 1] if is_number(current) else []
    return next((t for t in tries if ok(t)), None)


def multiple(name: str, divisor: str, values: Dict[str, Any]) -> Dict[str, Any]:
    a: Any = values.get(name)
    b: Any = values.get(divisor)
    if not (is_number(a) and is_number(b)) or b == 0 or a % b == 0:
        return {}
    if name in values and isinstance(a, int):
        return {name: int(b) * max(1, round(a / b))}
    return {}


def of_kind(current: Any, kind: ast.expr, namespace: Dict[str, Any], build: Any) -> Any:
    """`current` as the type an isinstance check asks for: a tuple or list of it, or an object of a module class the
    code names (`build(klass)` builds it as the block is built, None when it cannot)."""
    names = [e.id for e in (kind.elts if isinstance(kind, ast.Tuple) else [kind]) if isinstance(e, ast.Name)]
    if is_number(current) and ("tuple" in names or "list" in names or "Sequence" in names):
        return (current, current) if "tuple" in names or "Sequence" in names else [current, current]
    torch = sys.modules.get("torch")
    for name in names:
        klass = namespace.get(name)
        if build is not None and inspect.isclass(klass) and torch is not None and issubclass(klass, torch.nn.Module):
            built = build(klass)
            if built is not None:
                return built
    return None


LACKS = re.compile(r"^'(\w+)' object has no attribute '(\w+)'")


def with_attribute(exc: BaseException, stmt: ast.stmt, values: Dict[str, Any], namespace: Dict[str, Any], build: Any) -> Dict[str, Any]:
    """A guessed argument the statement reads an attribute of that it lacks (`train_features.chunk(...)`,
    `model.mask_decoder`): a tensor when tensors have the attribute, else an object of a module class of the file
    that has it (one whose name shares the parameter's first, in name order so both sides choose alike). The classes
    are those the block's own source names (`model: Sam`), which the copy and the original both have."""
    m = LACKS.match(str(exc))
    torch = sys.modules.get("torch")
    if m is None or torch is None:
        return {}
    kind, attribute = m.group(1), m.group(2)
    names = sorted(
        {
            n.value.id
            for n in ast.walk(stmt)
            if isinstance(n, ast.Attribute)
            and n.attr == attribute
            and isinstance(n.value, ast.Name)
            and n.value.id in values
            and type(values[n.value.id]).__name__ == kind
        }
    )
    if not names:
        return {}
    name = names[0]
    if hasattr(torch.Tensor, attribute):
        return {name: torch.randn(16, 16, generator=torch.Generator().manual_seed(0))}
    if build is None:
        return {}
    classes = sorted(
        (k, v)
        for k, v in namespace.items()
        if inspect.isclass(v) and issubclass(v, torch.nn.Module) and not v.__module__.startswith("torch") and has_attribute(v, attribute)
    )
    classes.sort(key=lambda kv: kv[0].lower() not in name.lower() and name.lower() not in kv[0].lower())
    for _, klass in classes[:2]:
        built = build(klass)
        if built is not None and hasattr(built, attribute):
            return {name: built}
    return {}


def named_in(cls: Any) -> Set[str]:
    """The names the source of a class uses."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def has_attribute(klass: Any, attribute: str) -> bool:
    """Whether objects of a class have an attribute: defined on the class, or set as `self.<attribute>` in its
    constructor."""
    if hasattr(klass, attribute):
        return True
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass.__init__)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(
        isinstance(n, ast.Attribute) and n.attr == attribute and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self"
        for n in ast.walk(tree)
    )


def negated(node: ast.expr) -> ast.expr:
    """`not node`, pushed into comparisons (De Morgan), so that `if x % n != 0: raise` reads as `x % n == 0`."""
    if isinstance(node, ast.BoolOp):
        return ast.BoolOp(op=ast.And() if isinstance(node.op, ast.Or) else ast.Or(), values=[negated(v) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        flip = {
            ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq,
            ast.Lt: ast.GtE,
            ast.GtE: ast.Lt,
            ast.Gt: ast.LtE,
            ast.LtE: ast.Gt,
            ast.Is: ast.IsNot,
            ast.IsNot: ast.Is,
            ast.In: ast.NotIn,
            ast.NotIn: ast.In,
        }.get(type(node.ops[0]))
        if flip is not None:
            return ast.Compare(left=node.left, ops=[flip()], comparators=node.comparators)
    return ast.UnaryOp(op=ast.Not(), operand=node)


def repaired(exc: BaseException, cls: Any, args: List[Any], kwargs: Dict[str, Any], guess: Any, build: Any = None) -> bool:
    """Change `args`/`kwargs` (in place) so that the statement of the block's constructor that raised `exc` holds;
    False when it says nothing the arguments can change. `guess(param)` is the guessed value of a parameter,
    `build(klass)` an object of a module class (or None)."""
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return False
    params = [p.name for p in list(signature.parameters.values())[1:] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    given = bound(params, args, kwargs)
    for stmt, parents, frame in failing_statements(exc, cls):
        # the parameters as the failing frame holds them, where it has not rebound them (a base's `__init__`: those
        # of its parameters that hold the block's own arguments, under the same names)
        local = dict(frame.f_locals)
        values = {p: local[p] for p in params if p in local and local[p] is (given[p] if p in given else signature.parameters[p].default)}
        # what the block passed on through its `**kwargs` (`ExampleNet(**kwargs)` -> `ResNet(depth)`)
        values.update({k: v for k, v in kwargs.items() if k not in params and k in local and local[k] is v})
        changes = {k: v for k, v in changes_for(exc, cls, stmt, parents, frame, values, signature, build, guess).items() if v is not None and k in values}
        if changes:
            for name, value in changes.items():
                index = params.index(name) if name in params else len(args)
                if index < len(args):
                    args[index] = value
                else:
                    kwargs[name] = value
            return True
    return False


def changes_for(
    exc: BaseException, cls: Any, stmt: ast.stmt, parents: List[ast.AST], frame: Any, values: Dict[str, Any], signature: Any, build: Any, guess: Any
) -> Dict[str, Any]:
    """The arguments that make the failing statement `stmt` hold, by what it is and what was raised."""
    namespace = dict(frame.f_globals)
    namespace[SELF] = frame.f_locals.get("self")

    def guess_of(name: str) -> Any:
        # (a name passed on through `**kwargs` has no parameter of the block's to guess from)
        return guess(signature.parameters[name]) if name in signature.parameters else None

    changes: Dict[str, Any] = {}
    if isinstance(stmt, ast.Assert):
        changes = solve(stmt.test, values, guess_of, namespace, build)
    elif isinstance(stmt, ast.Raise) and parents and isinstance(parents[-1], ast.If):
        changes = solve(negated(parents[-1].test), values, guess_of, namespace, build)
    if not changes and isinstance(exc, TypeError):
        named = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in values}
        if any(s in str(exc) for s in NOT_A_SEQUENCE):
            changes = {n: (values[n], values[n]) for n in sorted(named) if is_number(values[n])}
        elif "NoneType" in str(exc):
            changes = {n: guess_of(n) for n in sorted(named) if values[n] is None}
    if not changes and isinstance(exc, AttributeError):
        # the class's names read once (each read parses its whole file: once per name of a large pulled file's
        # namespace, tens of seconds)
        names = named_in(cls)
        changes = with_attribute(exc, stmt, values, {k: v for k, v in namespace.items() if k in names}, build)
    return changes


def bound(params: List[str], args: List[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The parameters the call passed, by name."""
    out = dict(zip(params, args))
    out.update({k: v for k, v in kwargs.items() if k in params})
    return out
