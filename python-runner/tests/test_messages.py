"""The judge's typed boundary: a request of a kind the judge has no handler for, or with a field judge.schema.json does
not name, is refused in words (messages.py), by the running judge too; every field jobs.py reads of a request is one
the schema names and every field the schema names is read (judgeRequests.ts's side: test/unit/validate/judgeProtocol.test.ts); a
report names exactly the fields report.ts reads; each frame reads into its variant (frames.py). Needs no torch."""

import json
import re
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.dirname(HERE)
sys.path.insert(0, RUNNER)

from nnrag_judge.wire import frames, jobs, messages, protocol, reports  # noqa: E402
from nnrag_judge.judge import serve  # noqa: E402

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
        # (the second line is megabytes long: read in many pieces, then the next request still answered)
        lines = [json.dumps(request(kind="explode", id=5)), json.dumps(request(id=6, colour="red" * (1 << 20))), json.dumps(request(kind="explode", id=7))]
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
        self.assertEqual(answers[3]["id"], 7)


class Read(unittest.TestCase):
    """What comes over a pipe in pieces of any size is read as the same frames and lines."""

    @staticmethod
    def framed(header: dict, blob: bytes = b"") -> bytes:
        head = json.dumps(header).encode("utf-8")
        return protocol.FRAME.pack(len(head), len(blob)) + head + blob

    def test_frames_cut_anywhere_read_the_same(self) -> None:
        from nnrag_judge.judge.supervise import WorkerRun

        big = bytes(range(256)) * 40_000  # a frame of 10 MB, many pipe reads long
        stream = self.framed(protocol.frame(protocol.TIER, "imported")) + self.framed({"probe": {"key": "a|init"}}, big) + self.framed({"probed": {}})
        for size in (1 << 16, 4096, 7, len(stream)):
            job = WorkerRun()
            for piece in [stream[i : i + size] for i in range(0, len(stream), size)]:
                job.feed(piece)
            self.assertIsNone(job.problem, size)
            self.assertEqual([h for h, _ in job.frames], [protocol.frame(protocol.TIER, "imported"), {"probe": {"key": "a|init"}}, {"probed": {}}])
            self.assertEqual(job.frames[1][1], big)
            self.assertEqual(len(job.buffer), 0)
        # one byte at a time, the last frame's header cut short: nothing of it yet
        job = WorkerRun()
        for b in stream[:-3]:
            job.feed(bytes([b]))
        self.assertEqual(len(job.frames), 2)
        self.assertIsNone(job.problem)
        job.feed(stream[-3:])
        self.assertEqual(len(job.frames), 3)
        # a header that is not an object is not ours, wherever it is cut
        job = WorkerRun()
        bad = self.framed([1, 2])  # type: ignore[arg-type]
        job.feed(bad[:5])
        job.feed(bad[5:])
        self.assertEqual(job.problem and job.problem[0], "tampered")


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


class BothSides(unittest.TestCase):
    def test_the_jobs_read_exactly_the_fields_the_schema_names(self) -> None:
        read = {"validate": set(jobs.wire_names(jobs.ValidateJob)), "observe": set(jobs.ObserveJob.WIRE)}
        for kind, fields in read.items():
            fields |= set(jobs.ENVELOPE) - {"kind"}  # (messages.checked reads the kind)
            named = set(SCHEMA["$defs"][kind]["properties"]) - {"kind"}
            self.assertEqual(sorted(fields - named), [], f"{kind}: read by jobs.py, not in judge.schema.json")
            self.assertEqual(sorted(named - fields), [], f"{kind}: in judge.schema.json, never read by jobs.py")

    def test_a_report_names_the_fields_report_ts_reads(self) -> None:
        with open(os.path.join(RUNNER, "..", "src", "core", "validate", "report.ts"), encoding="utf-8") as fh:
            text = fh.read()
        body = text[text.index("export interface ValidationReport {") : text.index("export interface ValidateOptions")]
        # a field's line: two spaces, its name, `?:` or `:` (nested records are indented further)
        typescript = set(re.findall(r"^  ([a-z_A-Z]+)\??:", body, re.M)) - {"sandbox", "weakSandbox"}  # (set by judge.ts)
        python = set(reports.report_fields())
        self.assertEqual(sorted(python - typescript), [], "sent by reports.Report, unknown to report.ts")
        self.assertEqual(sorted(typescript - python), [], "read by report.ts, never sent by reports.Report")

    def test_a_report_leaves_out_what_is_unset_and_says_an_original_that_was_not_imported(self) -> None:
        report = reports.Report(file="/p/b.py", class_name="Blk")
        self.assertEqual(report.plain(), {"file": "/p/b.py", "tier": None, "ok": False, "class": "Blk"})
        report.failed("forward", "boom", {"names": ["x"], "colour": "red"})
        report.original_ran = True
        self.assertEqual(report.plain()["names"], ["x"])
        self.assertNotIn("colour", report.plain())
        self.assertIn("original_reached", report.plain())
        self.assertIsNone(report.plain()["original_reached"])

    def test_a_job_drops_what_is_malformed_inside_a_field(self) -> None:
        job = jobs.ValidateJob.parse(
            request(
                natives=[{"module": "m", "name": "n", "file": "../x.so"}, {"module": "m", "name": "n", "file": "ok.so"}],
                upstream_undefined=["fine", "not a name"],
                original={"module": "pk.m", "class": "Blk", "also": ["/a", 3]},
            )
        )
        self.assertEqual([n.file for n in job.natives or []], ["ok.so"])
        self.assertEqual(job.upstream_undefined, ["fine"])
        self.assertEqual(job.original and job.original.plain()["also"], ["/a"])
        self.assertNotIn("original_frames", job.worker_request())
        self.assertIsNone(jobs.ObserveJob.parse({"observe": {"root": 1}}))


class FrameVariants(unittest.TestCase):
    def test_each_kind_reads_into_its_variant_and_a_wrong_value_is_not_ours(self) -> None:
        tier = frames.read(protocol.frame(protocol.TIER, "instantiated", args=[1], observed="t.py::t"), b"")
        self.assertEqual(tier, frames.Tier("instantiated", {"args": [1], "observed": "t.py::t"}))
        self.assertIsInstance(frames.read(protocol.frame(protocol.FORWARD, {"tensors": []}), b"xx"), frames.Forward)
        for header in (protocol.frame(protocol.CLASS, 3), protocol.frame(protocol.FAILURE, "x"), {"tier": "forward"}, {"kind": "explode"}):
            self.assertIsInstance(frames.read(header, b""), frames.NotOurs, header)
        self.assertEqual(sorted(frames.READERS), sorted(protocol.FRAME_KINDS))


if __name__ == "__main__":
    unittest.main()
