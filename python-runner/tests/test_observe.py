"""Tests for the observer (nnrag_judge/observe.py): how a repository's tests are run and what is recorded of them."""

import importlib.util
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HAS_TORCH = importlib.util.find_spec("torch") is not None
sys.path.insert(0, os.path.join(HERE, ".."))
from nnrag_judge.worker import entries, observe, pytest_like  # noqa: E402
from nnrag_judge.judge.judge import Place  # noqa: E402
from nnrag_judge.wire.jobs import ObserveJob  # noqa: E402
from nnrag_judge.judge.judge import observe as observe_job  # noqa: E402


def observe_repository(spec: dict, place: Place, memory_mb: int, timeout_s: float, control: object) -> dict:
    """The observer's answer for a request's `observe` (as serve.observe_request answers it)."""
    job = ObserveJob.parse({"observe": spec, "memory_mb": memory_mb, "timeout_s": timeout_s})
    assert job is not None
    return observe_job(job, place, None).plain()


def observed(root: str, entries: list, **spec: object) -> dict:
    """What the observer answers for `entries` of the repository at `root` (run in a work folder of its own); `spec`:
    the request's other fields (its `path`, its `package`)."""
    with tempfile.TemporaryDirectory() as work:
        before = os.getcwd()
        try:
            return observe_repository({"root": root, "path": root, "entry_s": 20, "entries": entries, **spec}, Place(work), 0, 120, None)
        finally:
            os.chdir(before)


def write_tree(root: str, files: dict) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(text))


# a block the repositories of several tests below define, built from one number
SCALE = """
from torch import nn


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor
"""


class Parametrize(unittest.TestCase):
    def test_every_value_of_each_mark_in_step(self) -> None:
        marks = pytest_like.Marks()

        @marks.parametrize("a, b", [(1, 2), (3, 4)])
        @marks.parametrize("c", ["x", "y", "z"])
        def test(a, b, c, tmp_path):
            return a, b, c, tmp_path

        self.assertEqual(pytest_like.parametrized(test), [{"a": 1, "b": 2, "c": "x"}, {"a": 3, "b": 4, "c": "y"}, {"a": 1, "b": 2, "c": "z"}])

    def test_a_param_of_one_name_is_its_value_not_a_tuple(self) -> None:
        # a device decorator as a repository writes one: parametrize("device", [pytest.param(torch.device("cpu"))])
        stand_in = pytest_like.pytest_stand_in()

        @stand_in.mark.parametrize("device", [stand_in.param("cpu", id="cpu"), stand_in.param("meta", id="meta")])
        @stand_in.mark.parametrize("n, m", [stand_in.param(1, 2, id="small")])
        def test(device, n, m):
            return device, n, m

        self.assertEqual(pytest_like.parametrized(test), [{"device": "cpu", "n": 1, "m": 2}, {"device": "meta", "n": 1, "m": 2}])

    def test_at_most_a_few_runs(self) -> None:
        @pytest_like.Marks().parametrize("a", list(range(100)))
        def test(a):
            return a

        self.assertEqual(len(pytest_like.parametrized(test)), pytest_like.MAX_PARAMETER_SETS)

    def test_an_empty_parametrize_runs_nothing(self) -> None:
        @pytest_like.Marks().parametrize("a", [])
        def test(a):
            return a

        self.assertEqual(pytest_like.parametrized(test), [])


@unittest.skipUnless(HAS_TORCH, "torch is not installed")
class Observing(unittest.TestCase):
    def test_a_tests_folder_that_is_no_package_beside_another_repository_that_has_one(self) -> None:
        # mmcv's tests/ has no __init__.py; mmpretrain's, on the path for cross-repository imports, has one: pytest
        # imports `tests/test_ops/test_scale.py` as `test_scale`, so the other repository's `tests` never shadows it
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as other, tempfile.TemporaryDirectory() as work:
            write_tree(other, {"tests/__init__.py": ""})
            write_tree(
                root,
                {
                    "pkg/__init__.py": "",
                    "pkg/layers.py": SCALE,
                    "tests/test_ops/test_scale.py": """
                    import torch
                    from pkg.layers import Scale

                    def test_scale():
                        Scale(3.0)(torch.ones(2, 5))
                    """,
                },
            )
            entry = {"id": "tests/test_ops/test_scale.py::test_scale", "module": "tests.test_ops.test_scale", "function": "test_scale"}
            before = os.getcwd()
            try:
                got = observe_repository({"root": root, "path": root, "also": [other], "entry_s": 20, "entries": [entry]}, Place(work), 0, 120, None)
            finally:
                os.chdir(before)
        self.assertTrue(got["ok"], got)
        [seen] = got["observed"]
        self.assertIsNone(seen["error"], seen)
        self.assertEqual([(c["name"], c["args"], c["kwargs"]) for c in seen["calls"]], [("Scale", [], {"factor": {"$float": 3.0}})])

    def test_a_test_class_set_up_as_pytest_does(self) -> None:
        # mmcv's test classes make their inputs in `setup_class` (a classmethod) and `setup_method`
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pkg/__init__.py": "",
                    "pkg/layers.py": SCALE,
                    "tests/test_scale.py": """
                    import torch
                    from pkg.layers import Scale

                    class Base:
                        @classmethod
                        def setup_class(cls):
                            cls.factor = 3.0

                    class TestScale(Base):
                        def setup_method(self, method):
                            self.x = torch.ones(2, 5)

                        def test_scale(self):
                            Scale(self.factor)(self.x)
                    """,
                },
            )
            got = observed(
                root, [{"id": "tests/test_scale.py::TestScale::test_scale", "module": "tests.test_scale", "function": "test_scale", "class": "TestScale"}]
            )
        [seen] = got["observed"]
        self.assertIsNone(seen["error"], seen)
        self.assertEqual([(c["name"], c["kwargs"]) for c in seen["calls"]], [("Scale", {"factor": {"$float": 3.0}})])

    def test_a_package_that_reads_its_own_distribution(self) -> None:
        # mmpretrain's hub reads `distribution("mmpretrain")`: indexed in place, as after `pip install -e .`
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pkg/__init__.py": """
                    from importlib.metadata import distribution, version
                    __version__ = version("pkg")
                    DATA = distribution("pkg").locate_file("pkg") / "data.txt"
                    """,
                    "pkg/version.py": "__version__ = '1.2.3'\n",
                    "pkg/data.txt": "scale 3\n",
                    "pkg/layers.py": """
                    from torch import nn
                    from . import DATA, __version__

                    class Scale(nn.Module):
                        def __init__(self):
                            super().__init__()
                            assert __version__ == "1.2.3"
                            self.factor = float(DATA.read_text().split()[1])

                        def forward(self, x):
                            return x * self.factor
                    """,
                    "tests/test_scale.py": """
                    import torch
                    from pkg.layers import Scale

                    def test_scale():
                        Scale()(torch.ones(2, 5))
                    """,
                },
            )
            got = observed(root, [{"id": "tests/test_scale.py::test_scale", "module": "tests.test_scale", "function": "test_scale"}])
        [seen] = got["observed"]
        self.assertIsNone(seen["error"], seen)
        self.assertEqual([c["name"] for c in seen["calls"]], ["Scale"])

    def test_a_test_runs_from_the_repository_root(self) -> None:
        # mmcv's tests read `tests/data/...` by a relative path, as pytest run from the repository's root finds it; a
        # file the test writes beside it goes to its scratch folder
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pkg/__init__.py": "",
                    "pkg/layers.py": SCALE,
                    "tests/data/factor.txt": "3\n",
                    "tests/test_scale.py": """
                    import torch
                    from pkg.layers import Scale

                    def test_scale():
                        factor = float(open("tests/data/factor.txt").read())
                        open("written.txt", "w").write("ok")
                        Scale(factor)(torch.ones(2, 5))
                    """,
                },
            )
            got = observed(root, [{"id": "tests/test_scale.py::test_scale", "module": "tests.test_scale", "function": "test_scale"}])
            self.assertFalse(os.path.exists(os.path.join(root, "written.txt")))
        [seen] = got["observed"]
        self.assertIsNone(seen["error"], seen)
        self.assertEqual([(c["name"], c["kwargs"]) for c in seen["calls"]], [("Scale", {"factor": {"$float": 3.0}})])

    def test_fixtures_constructions_and_inputs(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pkg/__init__.py": "",
                    "pkg/layers.py": """
                    from torch import nn

                    class Scale(nn.Module):
                        def __init__(self, width, factor=2.0, *, bias=True):
                            super().__init__()
                            self.lin = nn.Linear(width, width, bias=bias)
                            self.factor = factor

                        def forward(self, x, index=None):
                            return self.lin(x)[index] * self.factor
                    """,
                    "tests/conftest.py": """
                    import pytest

                    @pytest.fixture
                    def width():
                        yield 6

                    @pytest.fixture
                    def layer(width, tmp_path):
                        from pkg.layers import Scale
                        assert tmp_path.is_dir()
                        return Scale(width, bias=False)
                    """,
                    "tests/test_layers.py": """
                    import torch

                    def test_scale(layer, width, monkeypatch):
                        monkeypatch.setenv("SEEN", "1")
                        layer(torch.randn(4, width), torch.tensor([3, 0]))

                    def test_needs_a_request(request):
                        pass
                    """,
                },
            )
            entries = [{"id": f"tests/test_layers.py::{f}", "module": "tests.test_layers", "function": f} for f in ("test_scale", "test_needs_a_request")]
            got = observed(root, entries)
        self.assertTrue(got["ok"], got)
        first, second = got["observed"]
        self.assertIsNone(first["error"], first)
        self.assertIn("needs the fixture 'request'", second["error"])
        self.assertNotIn("SEEN", os.environ)
        [call] = first["calls"]
        # the default left out, the keyword-only argument kept; the inputs by dtype, shape and range (whole when small)
        self.assertEqual((call["module"], call["name"], call["args"], call["kwargs"]), ("pkg.layers", "Scale", [], {"width": 6, "bias": False}))
        x = call["inputs"]["kwargs"]["x"]["$tensor"]
        index = call["inputs"]["kwargs"]["index"]["$tensor"]
        self.assertEqual((x["dtype"], x["shape"], len(x["values"])), ("float32", [4, 6], 24))
        self.assertEqual((index["dtype"], index["min"], index["max"], index["values"]), ("int64", 0.0, 3.0, [3, 0]))
        self.assertEqual(sorted(first["files"]), ["pkg/__init__.py", "pkg/layers.py", "tests/conftest.py", "tests/test_layers.py"])

    def test_a_builder_is_called_without_download_and_what_it_built_is_fed(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "net/__init__.py": "",
                    "net/model.py": """
                    import torch
                    from torch import nn

                    class Stem(nn.Module):
                        def __init__(self, width):
                            super().__init__()
                            self.conv = nn.Conv2d(3, width, 3, padding=1)

                        def forward(self, x):
                            return self.conv(x)

                    class Net(nn.Module):
                        def __init__(self, width=8):
                            super().__init__()
                            self.stem = Stem(width)
                            self.fc = nn.Linear(width, 2)

                        def forward(self, x):
                            if x.dim() != 4 or x.shape[1] != 3:
                                raise ValueError("an image batch")
                            return self.fc(self.stem(x).mean((2, 3)))

                    def net_tiny(*, pretrained=True):
                        if pretrained:
                            raise RuntimeError("would download the weights")
                        return Net(width=4)

                    def not_a_model():
                        return Stem(5).conv
                    """,
                },
            )
            entries = [{"id": f"net/model.py::{f}", "module": "net.model", "function": f, "kind": "build"} for f in ("net_tiny", "not_a_model")]
            got = observed(root, entries)
        self.assertTrue(got["ok"], got)
        tiny, other = got["observed"]
        self.assertIsNone(tiny["error"], tiny)
        calls = {c["name"]: c for c in tiny["calls"]}
        self.assertEqual(calls["Net"]["kwargs"], {"width": 4})
        self.assertEqual(calls["Stem"]["args"] + list(calls["Stem"]["kwargs"].values()), [4])
        # the stem is fed what the whole passed it, from the input that ran the whole (an image batch)
        [x] = list(calls["Stem"]["inputs"]["args"]) + list(calls["Stem"]["inputs"]["kwargs"].values())
        self.assertEqual(x["$tensor"]["shape"][1], 3)
        self.assertEqual(len(x["$tensor"]["shape"]), 4)
        # a builder that returns a layer of torch is run, and what it built is recorded, not fed
        self.assertIsNone(other["error"], other)
        self.assertEqual([c["name"] for c in other["calls"]], ["Stem"])
        self.assertNotIn("inputs", other["calls"][0])

    def test_a_whole_image_model_made_for_one_size_is_fed_that_size(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "fixed/__init__.py": "",
                    "fixed/mixer.py": """
                from torch import nn

                class Mixer(nn.Module):
                    def __init__(self, width=4):
                        super().__init__()
                        self.stem = nn.Conv2d(3, width, 16, stride=16)
                        self.head = nn.Linear(width * 196, 2)

                    def forward(self, img):
                        assert img.shape[-2:] == (224, 224), "no dynamic input size"
                        return self.head(self.stem(img).flatten(1))
                """,
                },
            )
            entries = [{"id": "fixed/mixer.py::Mixer", "module": "fixed.mixer", "function": "Mixer", "kind": "build"}]
            got = observed(root, entries)
        [seen] = got["observed"]
        self.assertIsNone(seen["error"], seen)
        [call] = seen["calls"]
        [img] = list(call["inputs"]["args"]) + list(call["inputs"]["kwargs"].values())
        self.assertEqual(img["$tensor"]["shape"], [1, 3, 224, 224])

    def test_what_an_entry_leaves_in_the_temporary_folder_is_gone_before_the_next(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "tests/test_tmp.py": """
                import os
                import tempfile

                def test_leaves():
                    with open(os.path.join(tempfile.gettempdir(), "left.txt"), "w") as fh:
                        fh.write("x" * 1000)

                def test_sees_nothing(tmp_path):
                    assert not os.path.exists(os.path.join(tempfile.gettempdir(), "left.txt"))
                    assert str(tmp_path).startswith(tempfile.gettempdir())
                """
                },
            )
            entries = [{"id": f"tests/test_tmp.py::{f}", "module": "tests.test_tmp", "function": f} for f in ("test_leaves", "test_sees_nothing")]
            got = observed(root, entries)
        self.assertEqual([o["error"] for o in got["observed"]], [None, None], got)

    def test_an_entry_that_ignores_its_alarm_is_stopped_from_outside_and_the_next_runs(self) -> None:
        from nnrag_judge.judge import judge

        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as work:
            write_tree(
                root,
                {
                    "tests/test_hang.py": """
                import signal

                def test_hangs():
                    # whatever alarm the worker set, the repository's code can ignore it
                    for sig in (signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM):
                        signal.signal(sig, signal.SIG_IGN)
                    for timer in (signal.ITIMER_REAL, signal.ITIMER_PROF, signal.ITIMER_VIRTUAL):
                        signal.setitimer(timer, 0)
                    while True:
                        pass

                def test_after():
                    pass
                """
                },
            )
            entries = [{"id": f"tests/test_hang.py::{f}", "module": "tests.test_hang", "function": f} for f in ("test_hangs", "test_after")]
            before, grace = os.getcwd(), judge.QUIET_GRACE_S
            judge.QUIET_GRACE_S = 1.0
            try:
                got = observe_repository({"root": root, "path": root, "entry_s": 1, "entries": entries}, Place(work), 0, 120, None)
            finally:
                judge.QUIET_GRACE_S = grace
                os.chdir(before)
        errors = [o["error"] for o in got["observed"]]
        self.assertEqual(len(errors), 2, got)
        self.assertIn("stopped from outside", errors[0])
        self.assertIsNone(errors[1], got)

    def test_a_repository_that_is_itself_a_package_imports_by_the_names_the_index_gives(self) -> None:
        # an installed package's folder indexed as it is (Debian's torchvision): its builders' modules import their
        # siblings relatively, so `models/net.py` is `pk.models.net`, imported from the folder above, never `models.net`
        with tempfile.TemporaryDirectory() as parent:
            root = os.path.join(parent, "pk")
            write_tree(
                root,
                {
                    "__init__.py": "",
                    "util.py": "WIDTH = 4\n",
                    "models/__init__.py": "",
                    "models/net.py": """
                from ..util import WIDTH


                def net():
                    return WIDTH
                """,
                },
            )
            entry = {"id": "models/net.py::net", "module": "pk.models.net", "function": "net", "kind": "build"}
            got = observed(root, [entry], path=parent)
        self.assertIsNone(got["observed"][0]["error"], got)

    def test_workers_that_die_are_forked_from_a_template_that_imported_the_package_once(self) -> None:
        # every entry ends its worker (a crash, a test that exits): the next worker starts from the template, which
        # imported the repository's package, and does not import it again
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as log:
            write_tree(
                root,
                {
                    "heavy/__init__.py": f"""
                with open({os.path.join(log, "imports")!r}, "a") as fh:
                    fh.write("imported\\n")
                """,
                    "tests/test_die.py": """
                import os

                import heavy


                def test_one():
                    os._exit(3)


                def test_two():
                    os._exit(3)


                def test_three():
                    pass
                """,
                },
            )
            entries = [{"id": f"tests/test_die.py::{f}", "module": "tests.test_die", "function": f} for f in ("test_one", "test_two", "test_three")]
            got = observed(root, entries, package="heavy")
            with open(os.path.join(log, "imports")) as fh:
                imports = fh.read().split()
        self.assertEqual([o["error"] is None for o in got["observed"]], [False, False, True], got)
        self.assertEqual(imports, ["imported"], got)

    @unittest.skipUnless(HAS_TORCH, "the observer's workers import torch")
    def test_a_worker_whose_memory_is_crowded_hands_the_rest_to_a_fresh_one(self) -> None:
        # an entry keeps memory (a module-level cache) until the worker's data is past its share of the limit: the
        # worker ends after that entry, nobody is blamed, and a fresh worker runs the next entries; a test that exits
        # with the same status itself, first in its worker, is blamed as any worker that ends
        from nnrag_judge.wire.protocol import HANDED_OVER

        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as log, tempfile.TemporaryDirectory() as work:
            write_tree(
                root,
                {
                    "tests/test_fill.py": f"""
                import os
                import resource

                from nnrag_judge.worker import observe

                KEPT = []


                def pid(name):
                    with open(os.path.join({log!r}, name), "w") as fh:
                        fh.write(str(os.getpid()))


                def test_fills():
                    pid("fills")
                    limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
                    with open("/proc/self/status") as fh:
                        data = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmData:"))
                    more = int(observe.CROWDED_SHARE * limit) - data + (64 << 20)
                    KEPT.append(bytearray(max(more, 1)))


                def test_next():
                    pid("next")


                def test_exits():
                    os._exit({HANDED_OVER})


                def test_last():
                    pid("last")
                """
                },
            )
            names = ("test_fills", "test_next", "test_exits", "test_last")
            entries = [{"id": f"tests/test_fill.py::{f}", "module": "tests.test_fill", "function": f} for f in names]
            before = os.getcwd()
            try:
                spec = {"root": root, "path": root, "entry_s": 20, "entries": entries, "also": [os.path.join(HERE, "..")]}
                got = observe_repository(spec, Place(work), 3072, 120, None)
            finally:
                os.chdir(before)
            pids = {}
            for name in ("fills", "next", "last"):
                with open(os.path.join(log, name)) as fh:
                    pids[name] = fh.read()
        errors = {o["entry"].split("::")[1]: o["error"] for o in got["observed"]}
        self.assertEqual(set(errors), set(names), got)
        self.assertIsNone(errors["test_fills"], got)
        self.assertIsNone(errors["test_next"], got)
        self.assertIsNotNone(errors["test_exits"], got)
        self.assertIsNone(errors["test_last"], got)
        self.assertNotEqual(pids["fills"], pids["next"], got)

    def test_a_package_the_interpreter_lacks_stops_only_the_entries_that_use_it(self) -> None:
        # a test module imports an optional package at module level for some of its tests (pycocotools in a detection
        # framework's suite): the others still run; pytest's warns, approx and importorskip work without pytest
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pkg/__init__.py": "",
                    "pkg/layers.py": SCALE,
                    "tests/test_opt.py": """
                import warnings
                import torch
                import pytest
                import not_installed_accel_xyz
                from not_installed_accel_xyz.ops import fused
                from pkg.layers import Scale

                def test_plain():
                    y = Scale(2.0)(torch.ones(2, 3))
                    assert float(y.sum()) == pytest.approx(12.0000000001)
                    with pytest.warns(UserWarning):
                        warnings.warn("careful", UserWarning)

                def test_uses_it():
                    Scale(3.0)
                    fused(torch.ones(1))

                def test_skips():
                    pytest.importorskip("not_installed_other_xyz")
                """,
                },
            )
            entries = [{"id": f"tests/test_opt.py::{f}", "module": "tests.test_opt", "function": f} for f in ("test_plain", "test_uses_it", "test_skips")]
            got = observed(root, entries)
        errors = {o["entry"].split("::")[1]: o["error"] for o in got["observed"]}
        self.assertIsNone(errors["test_plain"], got)
        self.assertIn("No module named 'not_installed_accel_xyz'", errors["test_uses_it"] or "")
        self.assertIn("not_installed_other_xyz", errors["test_skips"] or "")
        plain = [o for o in got["observed"] if o["entry"].endswith("test_plain")][0]
        self.assertEqual([c["name"] for c in plain["calls"]], ["Scale"])

    def test_inputs_are_rebuilt_alike_and_in_range(self) -> None:
        import torch

        desc = {
            "args": [{"$tensor": {"dtype": "int64", "shape": [2, 50], "min": 0, "max": 9}}],
            "kwargs": {
                "mask": {"$tensor": {"dtype": "bool", "shape": [3], "min": 1, "max": 1}},
                "x": {"$tensor": {"dtype": "float64", "shape": [2, 2], "min": -1.0, "max": 1.0}},
            },
        }
        one, two = observe.observed_inputs(desc, torch), observe.observed_inputs(desc, torch)
        assert one is not None and two is not None
        self.assertTrue(torch.equal(one[0][0], two[0][0]))
        self.assertTrue(0 <= int(one[0][0].min()) and int(one[0][0].max()) <= 9)
        self.assertTrue(bool(one[1]["mask"].all()))
        # a test's double default: the block is built in float, so are its inputs
        self.assertEqual(one[1]["x"].dtype, torch.float32)
        self.assertIsNone(observe.observed_inputs({"args": [{"$tensor": {"dtype": "nope", "shape": [1]}}], "kwargs": {}}, torch))

    def test_a_mapping_keyed_by_edge_types_is_described_and_made_again(self) -> None:
        import torch

        edges = {("paper", "cites", "paper"): torch.tensor([[0, 1], [1, 2]]), ("author", "writes", "paper"): torch.tensor([[0], [2]])}
        desc = {"args": [observe.described(edges, torch)], "kwargs": {}}
        [again], _ = observe.observed_inputs(desc, torch)
        self.assertEqual(list(again), list(edges))
        self.assertTrue(all(torch.equal(again[k], edges[k]) for k in edges))
        # a key that is not a literal is not made
        bad = {"args": [{"$items": [[{"$tensor": {"dtype": "int64", "shape": [1], "values": [1]}}, 1]]}], "kwargs": {}}
        self.assertIsNone(observe.observed_inputs(bad, torch))


class ObservedNames(unittest.TestCase):
    """An observed call from the index is data: it names the file's own classes, the original's package (on the
    original's side only) and torch's layers, never another module's functions."""

    def test_only_the_file_the_original_package_and_torch_layers(self) -> None:
        from nnrag_judge.worker import arguments, context

        context.begin()
        hostile = [
            {"$call": "system", "module": "os", "args": ["true"]},
            {"$name": "getcwd", "module": "os"},
            {"$call": "torch.load", "args": ["x.pt"]},
            {"$name": "torch.hub.load"},
            {"$name": "torch.nn.parallel.DataParallel"},
        ]
        for value in hostile:
            self.assertEqual(arguments.resolve_given(value, {}), (False, None), value)
        context.begin(own_packages={"os"})
        try:
            ok, got = arguments.resolve_given({"$name": "getcwd", "module": "os"}, {})
            self.assertTrue(ok and got is os.getcwd)
        finally:
            context.begin()

    @unittest.skipUnless(HAS_TORCH, "torch is not installed")
    def test_torch_layers_and_dtypes(self) -> None:
        import torch
        from nnrag_judge.worker import arguments

        self.assertEqual(arguments.resolve_given({"$name": "torch.nn.ReLU"}, {}), (True, torch.nn.ReLU))
        self.assertEqual(arguments.resolve_given({"$name": "torch.float16"}, {}), (True, torch.float16))
        self.assertEqual(arguments.resolve_given({"$name": "torch.save"}, {}), (False, None))


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(HAS_TORCH, "torch is not installed")
class WhatIsKept(unittest.TestCase):
    def test_a_whole_model_at_full_size_is_not_kept(self) -> None:
        import importlib
        import torch

        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "sized/__init__.py": "",
                    "sized/blocks.py": """
                import torch
                from torch import nn

                class Big(nn.Module):
                    def __init__(self, n):
                        super().__init__()
                        self.w = nn.Parameter(torch.empty(n, device="meta"))
                """,
                },
            )
            sys.path.insert(0, root)
            try:
                blocks = importlib.import_module("sized.blocks")
                observer = observe.Observer(root, torch)
                sys.setprofile(observer.profile)
                try:
                    kept = [blocks.Big(10), blocks.Big(observe.LARGEST_BLOCK + 1)]
                finally:
                    sys.setprofile(None)
                calls = observe.observations(observer, os.path.join(os.path.realpath(root), ""))
            finally:
                sys.path.remove(root)
                for name in [m for m in sys.modules if m == "sized" or m.startswith("sized.")]:
                    del sys.modules[name]
        self.assertEqual(len(kept), 2)
        self.assertEqual([c["args"] + list(c["kwargs"].values()) for c in calls], [[10]])

    def test_a_test_imports_the_helpers_beside_it_as_pytest_does(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "examples/helpers_here.py": "WIDTH = 3\n",
                    "examples/test_example.py": """
                                  from helpers_here import WIDTH

                                  def test_width():
                                      assert WIDTH == 3
                                  """,
                },
            )
            entries = [{"id": "examples/test_example.py::test_width", "module": "examples.test_example", "function": "test_width"}]
            got = observed(root, entries)
        self.assertTrue(got["ok"], got)
        self.assertIsNone(got["observed"][0]["error"], got)


# a registry that builds a config's `type` given as the class itself (mmengine's Python configs)
TYPE_REGISTRY = """
class Registry:
    def get(self, name):
        return None

    def build(self, cfg):
        args = dict(cfg)
        return args.pop("type")(**args)

MODELS = Registry()
"""


class ConfigFiles(unittest.TestCase):
    """A configuration entry reads only files inside the repository."""

    def test_the_spec_keeps_only_relative_files_inside(self) -> None:
        from nnrag_judge.wire.jobs import ObserveJob

        entry = {"id": "c", "module": "configs.x", "function": "model", "kind": "config", "registries": [["pkg.registry", "MODELS"], ["os;x", "y"]]}
        job = ObserveJob.parse(
            {"observe": {"root": "/r", "path": "/r", "entries": [dict(entry, file=f) for f in ("configs/x.py", "../x.py", "/etc/x.py", "a/../../x.py", "")]}}
        )
        assert job is not None
        spec = job.worker_request(job.entries)["observe"]
        self.assertEqual([e["file"] for e in spec["entries"]], ["configs/x.py"])
        self.assertEqual(spec["entries"][0]["registries"], [["pkg.registry", "MODELS"]])

    def test_a_config_written_with_imports_names_its_type_by_the_class(self) -> None:
        # mmengine's Python configs (`mmpretrain/configs/`): `model = dict(type=BEiT, ...)` with BEiT imported
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pyconf/__init__.py": "",
                    "pyconf/registry.py": TYPE_REGISTRY,
                    "pyconf/models.py": """
                                  class Net:
                                      def __init__(self, width):
                                          self.width = width
                                  """,
                    "pyconf/configs/net_w4.py": "from pyconf.models import Net\n\nmodel = dict(type=Net, width=4)\n",
                },
            )
            sys.path.insert(0, root)
            try:
                observer = observe.Observer(root, None)
                built = entries.from_config(
                    os.path.realpath(root) + "/", {"file": "pyconf/configs/net_w4.py", "registries": [["pyconf.registry", "MODELS"]]}, observer
                )
            finally:
                sys.path.remove(root)
                for name in [m for m in sys.modules if m == "pyconf" or m.startswith("pyconf.")]:
                    del sys.modules[name]
        self.assertEqual((type(built).__name__, built.width), ("Net", 4))

    @unittest.skipUnless(HAS_TORCH, "the observer's workers import torch")
    def test_a_config_is_read_by_the_loader_never_imported_as_a_module(self) -> None:
        # mmengine's Python configs import their bases relatively inside `with read_base():` from folders that are no
        # packages: only the loader resolves that; importing the file as a module fails before the loader runs
        with tempfile.TemporaryDirectory() as root:
            write_tree(
                root,
                {
                    "pk/__init__.py": "",
                    "pk/registry.py": TYPE_REGISTRY,
                    "pk/net.py": SCALE,
                    # the framework's loader, as the repository's users have it: runs a config as part of a package
                    "mmengine/__init__.py": "",
                    "mmengine/config.py": """
                                  import importlib.util, os, sys, types

                                  class Config(dict):
                                      @staticmethod
                                      def fromfile(path):
                                          folder = os.path.dirname(os.path.dirname(path))
                                          top = types.ModuleType("_cfg")
                                          top.__path__ = [folder]
                                          sys.modules["_cfg"] = top
                                          name = "_cfg." + os.path.relpath(path, folder)[:-3].replace(os.sep, ".")
                                          spec = importlib.util.spec_from_file_location(name, path)
                                          module = importlib.util.module_from_spec(spec)
                                          sys.modules[name] = module
                                          spec.loader.exec_module(module)
                                          return Config({k: v for k, v in vars(module).items() if not k.startswith("_")})
                                  """,
                    "configs/_base_/width.py": "FACTOR = 3\n",
                    "configs/x/cfg.py": """
                                  from pk.net import Scale

                                  from .._base_.width import FACTOR

                                  model = dict(type=Scale, factor=FACTOR)
                                  """,
                },
            )
            entry = {
                "id": "configs/x/cfg.py::model",
                "module": "configs.x.cfg",
                "function": "model",
                "kind": "config",
                "file": "configs/x/cfg.py",
                "registries": [["pk.registry", "MODELS"]],
            }
            got = observed(root, [entry])
        self.assertIsNone(got["observed"][0]["error"], got)
        self.assertEqual([c["kwargs"] for c in got["observed"][0]["calls"]], [{"factor": 3}], got)

    def test_a_base_outside_the_repository_is_refused(self) -> None:
        with tempfile.TemporaryDirectory() as top:
            root = os.path.join(top, "repo")
            write_tree(
                top,
                {
                    "outside.py": "model = dict(type='X')\n",
                    "repo/configs/a.py": "_base_ = ['../../outside.py']\n",
                    "repo/configs/b.py": "_base_ = ['%s']\n" % os.path.join(top, "outside.py"),
                },
            )
            os.symlink(os.path.join(top, "outside.py"), os.path.join(root, "configs", "link.py"))
            observer = observe.Observer(root, None)
            for name in ("configs/a.py", "configs/b.py", "configs/link.py"):
                with self.assertRaisesRegex(ValueError, "not inside the repository"):
                    entries.from_config(os.path.realpath(root) + "/", {"file": name, "registries": []}, observer)
