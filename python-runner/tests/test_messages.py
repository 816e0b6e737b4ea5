"""The judge's requests (messages.py): a request of a kind the judge has no handler for, or with a field judge.schema.json
does not name, is refused in words, by the running judge too; and every field serve.py reads of a request is one the
schema names, and every field the schema names is read (sandbox.ts's side is test/unit/judgeProtocol.test.ts).
Needs no torch."""

import ast
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.dirname(HERE)
sys.path.insert(0, RUNNER)

from nnrag_judge import messages, protocol, serve  # noqa: E402

SCHEMA = messages.load_schema()


def request(**fields: object) -> dict:
    return {"kind": "validate", "id": 1, "file": "/srv/src/1/b.py", "work": "/home/user", **fields}


class Checked(unittest.TestCase):
    def test_each_kind_goes_to_its_handler(self) -> None:
        self.assertEqual(messages.checked(request(), SCHEMA), "validate")
        self.assertEqual(messages.checked({"kind": "observe", "id": 2, "observe": {}, "work": "/w"}, SCHEMA), "observe")
        self.assertEqual(sorted(serve.HANDLERS), sorted(r["$ref"].rsplit("/", 1)[-1] for r in SCHEMA["oneOf"]))

    def test_unknown_kind_missing_kind_unknown_field_wrong_type_are_refused(self) -> None:
        cases = {
            "unknown request kind 'explode' (this judge takes: observe, validate)": request(kind="explode"),
            "unknown request kind None": {k: v for k, v in request().items() if k != "kind"},
            "a validate request has a field this judge does not know: 'colour'": request(colour="red"),
            "a validate request.timeout_s must be number": request(timeout_s="soon"),
            "a validate request lacks 'file'": {k: v for k, v in request().items() if k != "file"},
            "a validate request.natives[0] lacks 'file'": request(natives=[{"module": "m", "name": "n"}]),
        }
        for words, req in cases.items():
            with self.assertRaises(messages.BadRequest) as got:
                messages.checked(req, SCHEMA)
            self.assertIn(words, str(got.exception))

    def test_the_running_judge_answers_a_refused_request_with_its_reason(self) -> None:
        lines = [json.dumps(request(kind="explode", id=5)), json.dumps(request(id=6, colour="red"))]
        done = subprocess.run(
            [sys.executable, "-I", "-B", os.path.join(RUNNER, "judge.py"), "--serve"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        self.assertEqual(answers[0], {"ready": True})
        self.assertEqual(answers[1]["id"], 5)
        self.assertIn("unknown request kind 'explode'", answers[1]["error"])
        self.assertEqual(answers[2]["id"], 6)
        self.assertIn("does not know: 'colour'", answers[2]["error"])


class Frames(unittest.TestCase):
    def test_a_frame_names_its_kind(self) -> None:
        # an "instantiated" tier frame that carries what it observed is a tier frame (the key `observed` is a kind too)
        header = protocol.frame(protocol.TIER, "instantiated", observed="tests/test_x.py::test_x")
        self.assertEqual(protocol.kind_of(header), protocol.TIER)
        self.assertEqual(protocol.kind_of(protocol.frame(protocol.OBSERVED, {"entry": "e"})), protocol.OBSERVED)

    def test_a_header_without_its_kind_or_with_another_is_not_ours(self) -> None:
        self.assertIsNone(protocol.kind_of({"tier": "forward"}))
        self.assertIsNone(protocol.kind_of({"kind": "tier", "forward": {}}))
        self.assertIsNone(protocol.kind_of({"kind": "explode", "explode": 1}))
        with self.assertRaises(ValueError):
            protocol.frame("explode", 1)


def fields_read(function: ast.AST, name: str) -> set:
    """The keys `name[...]` and `name.get(...)` read in a function."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == name and isinstance(node.slice, ast.Constant):
            found.add(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and getattr(node.func.value, "id", None) == name
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(node.args[0].value)
    return found


class BothSides(unittest.TestCase):
    def test_what_serve_reads_is_what_the_schema_names(self) -> None:
        with open(os.path.join(RUNNER, "nnrag_judge", "serve.py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        common = fields_read(functions["serve"], "req")
        read = {
            "validate": common | fields_read(functions["validate_request"], "req") | fields_read(functions["request_of"], "req"),
            "observe": common | fields_read(functions["observe_request"], "req"),
        }
        for kind, fields in read.items():
            named = set(SCHEMA["$defs"][kind]["properties"]) - {"kind"}  # (messages.checked reads the kind)
            self.assertEqual(sorted(fields - named), [], f"{kind}: read by serve.py, not in judge.schema.json")
            self.assertEqual(sorted(named - fields), [], f"{kind}: in judge.schema.json, never read by serve.py")


if __name__ == "__main__":
    unittest.main()
