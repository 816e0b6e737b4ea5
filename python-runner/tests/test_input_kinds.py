"""The registry of input kinds (inputs.input_kind): every source of inputs in one table, tried in priority order, the
same on both sides; a kind at a priority another holds is refused. Needs no torch."""

import sys
import unittest

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])

from nnrag_judge.worker import candidates, inputs  # candidates imports every inputs_* module


class InputKinds(unittest.TestCase):
    def test_every_kind_in_priority_order(self) -> None:
        self.assertEqual(
            [k.question for k in inputs.KINDS],
            [
                "the docstring example and the repository's tests",
                "the shapes forward's docstring gives",
                "forward's annotations",
                "a feature pyramid for a head or neck",
                "each input shaped for the layer it enters",
                "indices for the table forward indexes with them",
                "a graph as dense tensors",
                "a heterogeneous graph as dicts",
                "a graph batch object",
                "regions of a feature map for a pooler",
                "offsets for a deformable convolution",
                "the block's first layers, then common shapes",
                "forward's one input shaped for the layer it enters",
                "a diffusion step, one per sample",
            ],
        )

    def test_a_taken_priority_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "two input kinds at priority 10"):
            inputs.input_kind(10, "another")(lambda r: [])
        self.assertEqual(len(inputs.KINDS), 14)

    def test_a_new_kind_is_one_function(self) -> None:
        made = []
        make = inputs.input_kind(115, "a test's own kind")(lambda r: made.append(r.examples) or [["x"]])
        try:
            got = candidates.input_list(_Block(), _NoTorch(), None, {}, None, ["example"])
        finally:
            inputs.KINDS[:] = [k for k in inputs.KINDS if k.make is not make]
        self.assertIn(["x"], got)
        self.assertEqual(made, [("example",)])


class _Block:
    """A block whose forward takes one input."""

    def forward(self, x: object) -> object:
        return x


class _NoTorch:
    """Enough of torch for the registry's walk: seeding does nothing."""

    def manual_seed(self, _seed: int) -> None:
        pass

    def __getattr__(self, _name: str) -> "_NoTorch":
        return self

    def __call__(self, *_args: object, **_kwargs: object) -> "_NoTorch":
        return self


if __name__ == "__main__":
    unittest.main()
