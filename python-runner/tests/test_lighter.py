"""A whole model is validated at the size the comparison needs (inputs.lighter): its resizing steps at an eighth, no
side below 64 px, and a detector's counts of proposals and detections capped; skipped without torch."""

import unittest

from tests.support import needs_torch


@needs_torch
class Lighter(unittest.TestCase):
    def test_sides_and_counts_of_a_detector(self) -> None:
        from torch import nn

        from nnrag_judge.worker.inputs import lighter

        class Transform(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.min_size, self.max_size = (800,), 1333

        class Proposals(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self._pre_nms_top_n = {"training": 2000, "testing": 1000}
                self._post_nms_top_n = {"training": 2000, "testing": 30}
                self.flag = True

        class Heads(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.detections_per_img, self.topk_candidates = 100, 1000

        class Small(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.min_size, self.max_size = 300, 300

        model = nn.Sequential(Transform(), Proposals(), Heads(), Small())
        lighter(model)
        self.assertEqual((model[0].min_size, model[0].max_size), ((100,), 166))
        self.assertEqual(model[1]._pre_nms_top_n, {"training": 64, "testing": 64})
        # a count already under its cap stays
        self.assertEqual(model[1]._post_nms_top_n, {"training": 64, "testing": 30})
        self.assertEqual((model[2].detections_per_img, model[2].topk_candidates), (16, 64))
        # never below 64 px
        self.assertEqual((model[3].min_size, model[3].max_size), (64, 64))
