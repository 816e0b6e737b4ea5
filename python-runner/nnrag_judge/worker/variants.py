"""Worker side: the argument variants a comparison probes beyond the set that ran (each boolean flipped, each string
option set to another value the code compares it with, numbers perturbed, a rate left at None given one), and the
methods a framework calls after building or instead of forward (`init_weights`, a method the tests call)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from typing import Any, Dict, List, Optional, Tuple
from .arguments import init_parameters

MAX_VARIANTS = 14


# the second value a float default of 0 takes
SMALL_RATE = 0.05


# constructor parameters that count layers, blocks or repeats
COUNTS = {"depth", "num_layers", "n", "layers", "repeats", "num_blocks", "n_layers", "num_convs", "num_stages"}


def compared_strings(cls: Any) -> Dict[str, List[str]]:
    """Per name, the string literals the class's code compares it with (`mode == "nearest"`, `self.act in ("relu",
    "gelu")`): the values a string option takes in the branches its default skips."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return {}

    def name_of(node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        return None

    def strings(node: ast.AST) -> List[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []

    out: Dict[str, List[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for i, side in enumerate(sides):
            name = name_of(side)
            if name is None:
                continue
            for other in sides[:i] + sides[i + 1 :]:
                for value in strings(other):
                    if value not in out.setdefault(name, []):
                        out[name].append(value)
    return out


def looked_up_strings(cls: Any, value: str) -> List[str]:
    """Other keys of the tables of the class's module that hold `value` as a key (`ACTIVATIONS[act]`): the names an
    option that is looked up from a string may take."""
    module = sys.modules.get(getattr(cls, "__module__", ""), None)
    out: List[str] = []
    tables = [t for n, t in vars(module).items() if not n.startswith("__")] if module else []
    for table in tables:
        if isinstance(table, dict) and value in table and all(isinstance(k, str) and not k.startswith("_") for k in table):
            out.extend(k for k in table if k != value and k not in out)
    return out[:3]


def perturbed(value: Any) -> Any:
    """Another value of a numeric default, near enough to build (1 -> 2, 0.1 -> 0.15, 1e-6 -> 1.5e-6)."""
    if isinstance(value, int):
        return value + 1
    return value * 1.5 if value else 0.5


# names of an optional number that switches a part on when given (`drop_prob=None`, `init_values=None`)
RATE_WORDS = ("drop", "prob", "rate", "init_value", "layer_scale", "ls_init", "eps", "momentum", "scale")


def number_for_none(param: inspect.Parameter) -> Optional[float]:
    """A number to give an option whose default is None, when its annotation says it takes a number or its name says
    it is a rate or a scale: the part that the default leaves out then runs (a drop path, a layer scale)."""
    ann = param.annotation
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or str(ann)
    takes_float = "float" in text
    takes_int = not takes_float and "int" in text and "Tensor" not in text
    if takes_int:
        return None
    if takes_float or any(w in param.name.lower() for w in RATE_WORDS):
        return 0.5
    return None


# an override that is not an argument: the method of the built block to call before it is probed
AFTER_BUILD = "__nnrag_then__"


# an override that is not an argument: the inputs given in another form ("listed": the first as a list of two)
INPUT_FORM = "__nnrag_inputs__"


NOT_ARGUMENTS = (AFTER_BUILD, INPUT_FORM)


def takes_a_list(model: Any, inputs: List[Any]) -> bool:
    """Whether forward's first parameter also takes a list of what it was given (`x_or_x_list`, `List[Tensor]`,
    `Union[Tensor, List[Tensor]]`): the list path is then probed too."""
    try:
        first = next(iter(inspect.signature(model.forward).parameters.values()))
    except (StopIteration, TypeError, ValueError):
        return False
    if not inputs or isinstance(inputs[0], (list, tuple)) or first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
        return False
    ann = first.annotation if isinstance(first.annotation, str) else repr(first.annotation)
    return "list" in first.name.lower() or bool(re.search(r"\b(?:List|Sequence|list)\[", ann))


def in_form(inputs: List[Any], form: Any) -> List[Any]:
    """The inputs of a variant: as they ran, or in the form its override names."""
    return [[inputs[0], inputs[0]]] + list(inputs[1:]) if form == "listed" and inputs else inputs


INIT_METHODS = ("init_weights", "reset_parameters", "_reset_parameters")


def after_build_methods(cls: Any) -> List[str]:
    """The initialisation methods the block's class itself defines that take no required argument: a framework calls
    them after building, and a changed constant in them changes the weights. (One it inherits is not called: a pulled
    file keeps only the methods of other classes that something in it reaches, so the copy may not have it.)"""
    out = []
    for name in INIT_METHODS:
        if name not in vars(cls):
            continue
        try:
            params = list(inspect.signature(getattr(cls, name)).parameters.values())[1:]
        except (TypeError, ValueError):
            continue
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return out[:1]


# methods never called to probe a block: they write, fetch, show or run for long (both sides alike, but to no use)
UNCALLED = re.compile(
    r"^(?:to_|cuda|cpu|half|float|double|bfloat16|train|eval|apply)|(?:^|_)(?:export|save|load|download|fetch|"
    r"upload|bench|benchmark|profile|plot|show|visuali[sz]e|print|summary|compile|fit|serve|demo|test|"
    r"register|hook|state_dict|parameters|modules|zero_grad|requires_grad|share_memory)(?:_|$)",
    re.I,
)


MAX_METHODS = 3


def called_methods(cls: Any) -> List[str]:
    """The other public methods the block's class itself defines that take no required argument (`flops()`,
    `switch_to_deploy()`, `fuse()`): each is called on a block just built, and what it returns and the block after it
    are compared. Only the class's own: a pulled file keeps only the methods of other classes something reaches."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_") or name in INIT_METHODS or name in ("forward", "extra_repr") or UNCALLED.search(name):
            continue
        if not inspect.isfunction(value):
            continue
        try:
            params = list(inspect.signature(value).parameters.values())[1:]
        except (TypeError, ValueError):
            continue
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return sorted(out)[:MAX_METHODS]


def variants(cls: Any, args: List[Any], kwargs: Dict[str, Any], source: Any = None) -> List[Tuple[Dict[str, Any], str]]:
    """The argument set that ran (no override), then overrides of it: each boolean option flipped, each string option
    set to another value the code of `source` (the original class) compares it with or looks it up by, each numeric
    default perturbed (a float 0 twice: 0.5 and a small rate), and an optional rate or scale left at None given 0.5.
    Overrides are JSON values, so the other side of a comparison can apply them too."""
    out: List[Tuple[Dict[str, Any], str]] = [({}, "the arguments that ran")]
    # what a framework does after building (mmengine's `model.init_weights()`): the block's own initialisation
    out += [({AFTER_BUILD: name}, f"then {name}()") for name in after_build_methods(cls)]
    # what a user calls on it besides forward (a count of operations, a re-parameterisation for deployment)
    out += [({AFTER_BUILD: name}, f"then {name}()") for name in called_methods(cls)]
    params = init_parameters(cls)
    positional = {p.name for p in params[: len(args)]}
    options = [p for p in params if p.name not in positional and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    strings = compared_strings(source or cls) if any(isinstance(kwargs.get(p.name, p.default), str) for p in options) else {}
    numeric: List[Tuple[Dict[str, Any], str]] = []
    small: List[Tuple[Dict[str, Any], str]] = []
    for p in options:
        value = kwargs[p.name] if p.name in kwargs else p.default
        given = number_for_none(p) if value is None and p.name not in kwargs else None
        if isinstance(value, bool):
            out.append(({p.name: not value}, f"{p.name}={not value}"))
        elif isinstance(value, str):
            compared = list(dict.fromkeys(v for v in strings.get(p.name, []) if v != value))[:2]
            # a value both compared with and looked up by is one variant (two would send the same probe twice)
            looked = [v for v in looked_up_strings(source or cls, value) if v not in compared][:1]
            for other in compared + looked:
                out.append(({p.name: other}, f"{p.name}={other!r}"))
        elif isinstance(value, (int, float)) and p.name not in kwargs and value == value and abs(value) < 1e6:
            numeric.append(({p.name: perturbed(value)}, f"{p.name}={perturbed(value)!r}"))
            if isinstance(value, float) and value == 0.0:
                # a rate at 0 (dropout, drop path) taken slightly up as well: code often branches on a threshold
                # (`if rate > 0.1: ... elif rate > 0: ...`), and 0.5 takes only the first branch
                small.append(({p.name: SMALL_RATE}, f"{p.name}={SMALL_RATE!r}"))
        elif given is not None:
            # an optional rate or scale left out by default: given, the part it switches on runs too
            numeric.append(({p.name: given}, f"{p.name}={given!r}"))
        elif isinstance(value, int) and not isinstance(value, bool) and p.name in kwargs and 0 < value <= 2 and p.name in COUNTS:
            # a guessed count of layers or repeats: one more takes the branches a single one skips (`i < n - 1`)
            numeric.append(({p.name: value + 1}, f"{p.name}={value + 1}"))
    # numbers after the options: a changed default shows in the set that ran already, a perturbed one in its own;
    # each variant once (its label is its probe's key)
    unique: Dict[str, Tuple[Dict[str, Any], str]] = {}
    for overrides, label in out + numeric + small:
        unique.setdefault(label, (overrides, label))
    return list(unique.values())[:MAX_VARIANTS]
