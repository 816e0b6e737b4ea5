"""Where a validation's seconds went (timings.py): each side's steps measured on the judge's clock and counted by the
worker, the comparison, and a worker's word about its own time read only where it is sane."""

import unittest

from nnrag_judge.wire.frames import spent_of
from nnrag_judge.wire.protocol import CLASS, FORWARD, PROBED, TIER, frame
from nnrag_judge.judge.supervise import WorkerRun
from nnrag_judge.judge.timings import side_timings
from tests.support import ORIGINAL, judged, needs_torch


class SpentOf(unittest.TestCase):
    def test_only_known_steps_with_sane_numbers_are_read(self) -> None:
        header = {"spent": {"build": 1.25, "forward": -1, "probes": 3, "evil": 2}}
        self.assertEqual(spent_of(header), {"build": 1.25})
        self.assertEqual(spent_of({"spent": {"build": True, "forward": "2"}}), {})
        self.assertEqual(spent_of({"spent": [1, 2]}), {})
        self.assertEqual(spent_of({}), {})


class SideTimings(unittest.TestCase):
    def test_the_steps_are_the_gaps_between_frames_as_the_judge_saw_them_arrive(self) -> None:
        job = WorkerRun()
        job.frames = [
            (frame(TIER, "imported"), b""),
            (frame(CLASS, "Blk"), b""),
            (frame(TIER, "instantiated"), b""),
            (frame(FORWARD, {}, spent={"build": 0.5, "forward": 0.25}), b""),
            (frame(PROBED, {}), b""),
        ]
        job.stamps = [0.1, 0.2, 0.8, 1.5, 4.0]
        job.wall_s, job.own_s = 4.5, 4.0
        t = side_timings(job, "copy")
        self.assertEqual(t["seconds"], 4.5)
        self.assertEqual(t["own_seconds"], 4.0)
        self.assertEqual(t["steps"], {"import": 0.2, "search": 1.3, "build": 0.5, "forward": 0.25, "probes": 2.5, "exit": 0.5})

    def test_a_run_that_stopped_early_has_no_later_steps(self) -> None:
        job = WorkerRun()
        job.frames = [(frame(TIER, "imported"), b"")]
        job.stamps = [0.3]
        job.wall_s = 0.4
        self.assertEqual(side_timings(job, "copy")["steps"], {"exit": 0.1})


@needs_torch
class Judged(unittest.TestCase):
    def test_a_report_says_where_its_seconds_went(self) -> None:
        report = judged(ORIGINAL)
        self.assertEqual(report["tier"], "equivalent", report)
        t = report["timings"]
        self.assertGreaterEqual(t["static"], 0)
        self.assertGreaterEqual(t["comparing"], 0)
        for side in ("original", "copy"):
            steps = t[side]["steps"]
            for step in ("import", "build", "forward", "probes"):
                self.assertIn(step, steps, (side, t))
            self.assertGreater(steps["probes"], 0, t)
            # the steps measured on the judge's clock fit in the worker's run
            self.assertLessEqual(steps["import"] + steps["search"] + steps["probes"], t[side]["seconds"] + 0.01, t)
            # (build and forward are the worker's own clock, search the judge's: compared with the whole run only, a
            # comparison of two clocks to the hundredth failed on a busy machine)
            self.assertLessEqual(steps["build"] + steps["forward"], t[side]["seconds"] + 0.01, t)
        self.assertLessEqual(t["original"]["seconds"] + t["copy"]["seconds"], report["seconds"] + 0.01, t)

    def test_a_copy_that_cannot_be_built_says_how_long_its_tries_took(self) -> None:
        report = judged(ORIGINAL.replace("self.lin = nn.Linear(dim, dim)", "self.lin = nn.Linear(dim, dim, nonsense=1)"))
        self.assertEqual(report.get("category"), "instantiate", report)
        steps = report["timings"]["copy"]["steps"]
        self.assertIn("build", steps, report["timings"])
        self.assertNotIn("probes", steps)
        self.assertNotIn("forward", steps)
