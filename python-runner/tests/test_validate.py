"""Tests for the judge (judge.py, package nnrag_judge): they pass with or without torch in the interpreter that runs
them."""

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "judge.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None

sys.path.insert(0, os.path.join(HERE, ".."))
from nnrag_judge.worker import arguments, forward, variants  # noqa: E402
from nnrag_judge.wire import jobs  # noqa: E402
from nnrag_judge.judge import judge, static  # noqa: E402


def run_file(source: str, *args: str) -> dict:
    """Write `source` to a temporary file, run the validator on it in a child process, return its report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "block.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(source))
        proc = subprocess.run([sys.executable, "-I", "-B", RUNNER, path, *args], capture_output=True, text=True, timeout=300, cwd=tmp)
        return json.loads(proc.stdout.strip().splitlines()[-1])


class TiersWithoutTorch(unittest.TestCase):
    """Failures that must be reported cleanly whatever the interpreter has."""

    def test_a_source_encoding_other_than_utf8_is_refused(self) -> None:
        # unicode_escape turns what reads as a comment into code: the judge reads pulled files as UTF-8 only
        report = run_file("# -*- coding: unicode_escape -*-\nx = 1  # \\u000aimport os\n")
        self.assertEqual(report["category"], "syntax", report)
        self.assertIn("unicode_escape", report["message"])
        self.assertNotIn("source encoding", run_file("# -*- coding: utf-8 -*-\nx = 1\n").get("message") or "")

    def test_syntax_error(self) -> None:
        report = run_file("def broken(:\n    pass\n")
        self.assertFalse(report["ok"])
        self.assertIsNone(report["tier"])
        self.assertEqual(report["category"], "syntax")
        self.assertIn("line 1", report["message"])

    def test_undefined_names(self) -> None:
        report = run_file("""
            import os
            class K:
                X = 1
                def f(self):
                    return helper(os.sep) + X
        """)
        self.assertEqual(report["tier"], "compiled")
        self.assertEqual(report["category"], "unresolved")
        self.assertEqual(report["names"], ["X", "helper"])

    def test_missing_package_is_named(self) -> None:
        report = run_file("import surely_not_installed_pkg as s\nclass K:\n    pass\n")
        self.assertEqual(report["tier"], "names-closed")
        self.assertEqual(report["category"], "missing-package")
        self.assertIn("surely_not_installed_pkg", report["message"])
        self.assertEqual(report["package"], "surely_not_installed_pkg")

    def test_a_missing_package_met_while_running_is_named(self) -> None:
        # a pulled file imports a package only code inside functions uses where installed: the block's own use
        # meets the import's error when it runs, and that is the package to name
        self.assertEqual(forward.missing_package("no input worked: ModuleNotFoundError: No module named 'surely_absent.sub' (line 3)"), "surely_absent")
        self.assertIsNone(forward.missing_package("ModuleNotFoundError: No module named 'json'"))
        self.assertIsNone(forward.missing_package("RuntimeError: shapes do not match"))

    def test_a_kept_original_run_is_replayed_only_for_this_interpreter(self) -> None:
        frames = [({"plan": {"variants": []}}, b"\x00\x01")]
        kept = judge.kept_original(type("J", (), {"frames": frames})())
        replayed = judge.cached_original(jobs.ValidateJob(original_frames=kept))
        self.assertIsNotNone(replayed)
        self.assertEqual(replayed.frames, frames)
        versions = json.loads(kept)["versions"]
        other = json.dumps({"versions": dict(versions, torch="0.0.1"), "frames": json.loads(kept)["frames"]})
        self.assertIsNone(judge.cached_original(jobs.ValidateJob(original_frames=other)))
        self.assertIsNone(judge.cached_original(jobs.ValidateJob(original_frames=json.dumps({"versions": versions, "frames": [["x", "not base64!"]]}))))
        self.assertIsNone(judge.cached_original(jobs.ValidateJob(original_frames="{not json")))

    def test_import_error_names_the_line(self) -> None:
        report = run_file("x = 1\nraise RuntimeError('boom on import')\n")
        self.assertEqual(report["category"], "import-error")
        self.assertIn("boom on import", report["message"])
        self.assertIn("line 2", report["message"])

    @unittest.skipIf(HAS_TORCH, "this interpreter has torch")
    def test_missing_torch_is_a_missing_package(self) -> None:
        report = run_file("import torch\nfrom torch import nn\nclass K(nn.Module):\n    pass\n")
        self.assertEqual(report["category"], "missing-package")
        self.assertIn("torch", report["message"])

    def test_network_is_blocked(self) -> None:
        report = run_file("""
            import socket
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        """)
        self.assertEqual(report["category"], "import-error")
        self.assertIn("network access is disabled", report["message"])

    def test_prints_of_the_block_do_not_corrupt_the_report(self) -> None:
        report = run_file("print('{not json')\nimport surely_not_installed_pkg\n")
        self.assertEqual(report["category"], "missing-package")


class Templates(unittest.TestCase):
    """What a side's template imports before its workers fork from it (zygote.template_main)."""

    def test_the_copy_imports_first_only_what_its_file_imports_before_any_statement_of_its_own(self) -> None:
        import ast

        tree = ast.parse(
            textwrap.dedent("""\
            \"\"\"A pulled block.\"\"\"
            from __future__ import annotations
            import os
            import torch
            from torch import nn
            import numpy as np
            from PIL.Image import Image
            from . import sibling
            os.environ["X"] = "1"
            import einops
        """)
        )
        self.assertEqual(judge.copy_template(tree), {"modules": ["numpy", "PIL.Image"]})
        self.assertIsNone(judge.copy_template(ast.parse("import torch\nimport os\nx = 1\nimport numpy\n")))

    def test_the_original_imports_its_package_from_its_path_and_none_with_compiled_operators_first(self) -> None:
        original = jobs.Original("pk.sub.m", "Blk", "/repo", also=("/other",))
        self.assertEqual(judge.original_template(jobs.ValidateJob(), original), {"original": {"path": "/repo", "also": ["/other"]}, "package": "pk"})
        self.assertIsNone(judge.original_template(jobs.ValidateJob(natives=[jobs.Native("pk._C", "pk._C", "x.so")]), original))


class CopyPlan(unittest.TestCase):
    """The copy probes exactly the variants its original probed within the time, never fewer on a busy machine."""

    def test_the_variants_the_original_did(self) -> None:
        side = judge.OriginalSide()
        side.plan = {"attempt": "a", "input": 0, "variants": [{"label": "base"}, {"label": "x=True"}, {"label": "y=2"}]}
        side.probed = {"variants": ["base", "x=True"]}
        plan = judge.copy_plan(side)
        assert plan is not None
        self.assertEqual([v["label"] for v in plan["variants"]], ["base", "x=True"])
        self.assertTrue(plan["exact"])
        side.reason = "the original fails"
        self.assertIsNone(judge.copy_plan(side))


class ReadableDifferences(unittest.TestCase):
    """A difference names the probe and the argument set in words, never the internal key."""

    def test_probe_keys_read_as_words(self) -> None:
        from nnrag_judge.judge.equivalence import readable_key

        self.assertEqual(readable_key("the arguments that ran|structure"), "the module tree, with the arguments that ran")
        self.assertEqual(readable_key("dim=9|eval|2"), "eval output under seed 2, with dim=9")
        self.assertNotIn("|", readable_key("a|train"))


class GuessedCounts(unittest.TestCase):
    """A count of layers is a number: `n_layer` is not taken for a layer factory (`norm_layer`)."""

    def test_n_layer_is_a_number(self) -> None:
        def init(n_state, n_layer, num_layer, norm_layer):  # a signature to read
            pass

        params = list(inspect.signature(init).parameters.values())
        guessed = [arguments.guess_value(p, _FakeNN) for p in params]
        self.assertTrue(all(isinstance(g, int) for g in guessed[:3]), guessed)
        self.assertFalse(isinstance(guessed[3], int))


class _FakeNN:
    """What guess_value reads of torch.nn without torch."""

    class Identity:
        pass

    class BatchNorm2d:
        pass

    class ReLU:
        pass


class UndefinedNames(unittest.TestCase):
    """The static names-closed check follows Python's scopes."""

    def check(self, source: str) -> list:
        return [n for n, _ in static.undefined_names(textwrap.dedent(source), "<t>")]

    def test_scopes(self) -> None:
        self.assertEqual(
            self.check("""
            G = 1
            def f(a, *b, **c):
                import json
                ys = [v for v in a if (n := v)]
                global LATER
                LATER = 2
                return G, ys, n, json, b, c, LATER, len
            class C:
                Y = 1
                Z = Y + 1
        """),
            [],
        )

    def test_conditional_definitions_count(self) -> None:
        self.assertEqual(self.check("try:\n    from x import y\nexcept ImportError:\n    y = None\nprint(y)\n"), [])


@unittest.skipUnless(HAS_TORCH, "needs torch")
class TiersWithTorch(unittest.TestCase):
    """The full ladder on small blocks (runs where torch is installed)."""

    def test_forward_with_inferred_arguments(self) -> None:
        report = run_file(
            """
            from torch import nn
            class Proj(nn.Module):
                def __init__(self, in_channels, out_channels, kernel_size=3):
                    super().__init__()
                    self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
                def forward(self, x):
                    return self.conv(x)
        """,
            "--class",
            "Proj",
        )
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["tier"], "forward")
        self.assertEqual(report["kwargs"], {"in_channels": 16, "out_channels": 16})
        self.assertEqual(report["input_shapes"], [[2, 16, 16, 16]])

    def test_a_result_printed_by_the_block_is_not_a_verdict(self) -> None:
        report = run_file("""
            import os, sys
            from torch import nn
            class Bad(nn.Module):
                def forward(self, x):
                    raise ValueError("always")
            os.write(1, b'{"ok": true, "tier": "forward"}\\n')
            sys.__stdout__.write('{"ok": true, "tier": "forward"}\\n')
        """)
        self.assertFalse(report["ok"], report)
        self.assertEqual(report["category"], "forward")

    def test_a_patched_module_call_does_not_skip_forward(self) -> None:
        report = run_file("""
            import torch
            from torch import nn
            nn.Module.__call__ = lambda self, *a, **k: torch.zeros(1)
            class Bad(nn.Module):
                def forward(self, x):
                    raise ValueError("always")
        """)
        self.assertFalse(report["ok"], report)
        self.assertIn("always", report["message"])

    def test_the_judge_checks_the_output_values(self) -> None:
        report = run_file("""
            import torch
            from torch import nn
            class Inf(nn.Module):
                def forward(self, x):
                    return (x * float("inf"), {"n": torch.zeros(3, dtype=torch.long)})
        """)
        self.assertTrue(report["ok"], report)
        self.assertFalse(report["output_finite"])
        self.assertEqual(report["output_shapes"][1], {"n": [3]})

    ORIGINAL = """
        from torch import nn
        class Blk(nn.Module):
            def __init__(self, dim=8, scale=True):
                super().__init__()
                self.lin = nn.Linear(dim, dim)
                self.scale = scale
            def forward(self, x):
                y = self.lin(x)
                return y * 2 if self.scale else %s
    """

    def compared(self, copy: str, module: str = "pk.m") -> dict:
        """Validate `copy` (a source in ORIGINAL's form) against ORIGINAL installed as pk.m in a folder."""
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "orig", "pk"))
            open(os.path.join(tmp, "orig", "pk", "__init__.py"), "w").close()
            with open(os.path.join(tmp, "orig", "pk", "m.py"), "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(self.ORIGINAL % "y"))
            path = os.path.join(tmp, "copy.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(copy))
            original = json.dumps({"module": module, "class": "Blk", "path": os.path.join(tmp, "orig")})
            proc = subprocess.run(
                [sys.executable, "-I", "-B", RUNNER, path, "--class", "Blk", "--original", original], capture_output=True, text=True, timeout=300, cwd=tmp
            )
            return json.loads(proc.stdout.strip().splitlines()[-1])

    def test_a_copy_equal_to_its_original_is_equivalent(self) -> None:
        report = self.compared(self.ORIGINAL % "y")
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["tier"], "equivalent")
        self.assertEqual(report["equivalence"]["variants"], ["the arguments that ran", "scale=False", "dim=9"])

    def test_a_list_or_tuple_of_numbers_by_annotation_wins_over_the_name(self) -> None:
        from typing import List, Tuple

        def f(in_channels: List[int], input_size: Tuple[int, int, int], sizes: "tuple[float, float]", kernel_size: int): ...

        params = list(inspect.signature(f).parameters.values())
        self.assertEqual([arguments.guess_value(p, None) for p in params], [[16, 16], [16, 16, 16], [1.0, 1.0], 3])

    def test_a_module_factory_is_identity_and_a_configuration_gets_its_required_arguments(self) -> None:
        import torch.nn as nn
        from typing import Callable

        class BlockConfig:
            def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int) -> None:
                self.expand_ratio, self.kernel, self.stride, self.input_channels = expand_ratio, kernel, stride, input_channels

        def f(conv_builder: Callable[..., nn.Module], cnf: BlockConfig): ...

        builder, cnf = [arguments.guess_value(p, nn, {"BlockConfig": BlockConfig, "__name__": "m"}) for p in inspect.signature(f).parameters.values()]
        self.assertIs(builder, nn.Identity)
        self.assertEqual((cnf.kernel, cnf.stride, cnf.input_channels), (3, 1, 16))

    def test_a_forward_parameter_annotated_as_a_number_gets_one(self) -> None:
        import torch
        import torch.nn as nn

        class Partition(nn.Module):
            def forward(self, x: torch.Tensor, p: int) -> torch.Tensor:
                b, c, h, w = x.shape
                return x.reshape(b, c, h // p, p, w // p, p)

        ran, error, out, inputs, _ = forward.run_forward(Partition(), Partition, torch, nn, {})
        self.assertTrue(ran, error)
        self.assertEqual(inputs[1], 4)
        self.assertEqual(out.shape[3], 4)

    def test_string_options_take_the_other_values_the_code_compares_them_with(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "blk.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(
                    textwrap.dedent("""
                    class Blk:
                        def __init__(self, dim=4, mode="sum", act="relu", norm="bn", bias=True):
                            self.mode = mode
                            self.act = act
                        def forward(self, x):
                            if self.mode == "sum":
                                return x + 1
                            elif self.mode == "mean":
                                return x / 2
                            return x * 2 if self.act in ("relu", "gelu") else x
                """)
                )
            spec_ = importlib.util.spec_from_file_location("blk", path)
            module = importlib.util.module_from_spec(spec_)
            sys.modules["blk"] = module  # inspect finds a class's source through its module, as an import leaves it
            spec_.loader.exec_module(module)
            labels = [label for _, label in variants.variants(module.Blk, [], {"act": "gelu"})]
        # norm is compared with nothing: no value to try; act's other value is the one the defaults already skip to
        self.assertEqual(labels, ["the arguments that ran", "mode='mean'", "act='relu'", "bias=False", "dim=5"])

    def test_an_optional_rate_or_scale_is_given_a_number(self) -> None:
        from typing import Optional

        class Blk:
            def __init__(self, dim=4, drop_prob=None, init_values: Optional[float] = None, out_features: Optional[int] = None, norm_layer=None, act=None):
                pass

        labels = [label for _, label in variants.variants(Blk, [], {})]
        # a count or a layer left out by default has no number that surely builds: not tried
        self.assertEqual(labels, ["the arguments that ran", "dim=5", "drop_prob=0.5", "init_values=0.5"])

    def test_a_copy_that_differs_in_a_branch_the_defaults_skip_fails(self) -> None:
        report = self.compared(self.ORIGINAL % "y + 1")
        self.assertFalse(report["ok"], report)
        self.assertEqual(report["category"], "differs")
        self.assertIn("scale=False", report["message"])

    def test_the_original_passing_where_the_copy_fails_is_reported(self) -> None:
        broken = (self.ORIGINAL % "y").replace("y = self.lin(x)", "y = self.lin(x); raise ValueError('the copy is broken')")
        report = self.compared(broken)
        self.assertEqual(report["category"], "forward", report)
        self.assertEqual(report["original_passes"], "forward")

    def test_an_original_that_cannot_be_imported_stops_at_forward(self) -> None:
        report = self.compared(self.ORIGINAL % "y", module="nowhere.m")
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["tier"], "forward")
        self.assertEqual(report["equivalence"]["status"], "unavailable")

    def test_a_configuration_object_is_built_for_a_parameter_that_takes_one(self) -> None:
        report = run_file(
            """
            from __future__ import annotations
            from torch import nn
            class TinyConfig:
                def __init__(self, hidden_size=768, intermediate_size=3072, layer_norm_eps=1e-12):
                    self.hidden_size, self.intermediate_size, self.layer_norm_eps = hidden_size, intermediate_size, layer_norm_eps
            class Layer(nn.Module):
                def __init__(self, config: TinyConfig):
                    super().__init__()
                    self.up = nn.Linear(config.hidden_size, config.intermediate_size)
                    self.down = nn.Linear(config.intermediate_size, config.hidden_size)
                    self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
                def forward(self, x):
                    return self.norm(x + self.down(self.up(x)))
        """,
            "--class",
            "Layer",
        )
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["kwargs"], {"config": "TinyConfig(...)"})
        self.assertEqual(report["input_shapes"][0][-1], 32, "the configuration's sizes were not shrunk")

    def test_forward_failure_is_categorised(self) -> None:
        report = run_file("""
            from torch import nn
            class Bad(nn.Module):
                def forward(self, x):
                    raise ValueError("always")
        """)
        self.assertEqual(report["tier"], "instantiated")
        self.assertEqual(report["category"], "forward")
        self.assertIn("always", report["message"])

    def test_an_abstract_base_is_said_apart(self) -> None:
        # three ways a base class leaves forward to its subclasses: abstract methods, no forward, one that only raises
        for body, words in (
            ("import abc\nclass Base(nn.Module, abc.ABC):\n    @abc.abstractmethod\n    def forward(self, x): ...\n", "abstract methods forward"),
            ("class Base(nn.Module):\n    def __init__(self, c=4):\n        super().__init__()\n        self.c = c\n", "defines no forward"),
            (
                'class Base(nn.Module):\n    def forward(self, x):\n        """Subclasses run."""\n        raise NotImplementedError(\'subclasses\')\n',
                "NotImplementedError",
            ),
        ):
            report = run_file("from torch import nn\n" + body)
            self.assertEqual(report["category"], "abstract", report)
            self.assertIn(words, report["message"])
        # a forward that raises NotImplementedError only on one branch is a block that failed, not an abstract one
        report = run_file("""
            from torch import nn
            class Partial(nn.Module):
                def forward(self, x):
                    if x.dim() == 5:
                        raise NotImplementedError("volumes")
                    raise ValueError("always")
        """)
        self.assertEqual(report["category"], "forward", report)
        # one that cannot even be built says why it cannot be built
        head = "class Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n        raise RuntimeError('download it first')\n"
        report = run_file("from torch import nn\n" + head)
        self.assertEqual(report["category"], "instantiate", report)
        self.assertIn("download it first", report["message"])

    BUILT = """
        import torch
        from torch import nn
        RAN = []
        class Inner(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.conv = nn.Conv2d(channels, channels, 3, padding=1)
            def forward(self, x):
                %s
                return self.conv(x)
        class After(nn.Module):
            def forward(self, x):
                RAN.append(1)
                open("after-ran", "w").close()
                return x
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 4, 1)
                self.inner = Inner(4)
                self.after = After()
            def forward(self, x):
                # a detector's way: whatever it is given, its layers see 512 px
                x = nn.functional.interpolate(self.stem(x), size=(512, 512))
                return self.after(self.inner(x))
        def build_model():
            return Model()
    """

    def built(self, check: str = "pass") -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "block.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(self.BUILT % check))
            proc = subprocess.run(
                [sys.executable, "-I", "-B", RUNNER, path, "--class", "Inner", "--builder", "build_model"], capture_output=True, text=True, timeout=300, cwd=tmp
            )
            report = json.loads(proc.stdout.strip().splitlines()[-1])
            report["after_ran"] = os.path.exists(os.path.join(tmp, "after-ran"))
            return report

    def test_builder_inputs_stop_the_model_at_the_block_and_a_cut_runs_first(self) -> None:
        report = self.built()
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["builder"], "build_model")
        self.assertFalse(report["after_ran"], "the model's forward went on past the block")
        # the model gives the block 512 px: a quarter of each side runs first
        self.assertEqual(report["input_shapes"][0][-2:], [128, 128])

    def test_the_whole_recorded_input_when_the_cut_does_not_run(self) -> None:
        report = self.built("assert x.shape[-1] == 512, x.shape")
        self.assertTrue(report["ok"], report)
        self.assertEqual(report["input_shapes"][0][-2:], [512, 512])

    def test_resizing_inside_the_model_is_lighter_while_recording(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "block.py")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(
                    textwrap.dedent("""
                    from torch import nn
                    class Resize(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.min_size, self.max_size = (800,), 1333
                        def forward(self, x):
                            return nn.functional.interpolate(x, size=(self.min_size[0],) * 2)
                    class Head(nn.Module):
                        def __init__(self, channels):
                            super().__init__()
                            self.conv = nn.Conv2d(channels, 2, 1)
                        def forward(self, x):
                            return self.conv(x)
                    class Detector(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.transform, self.head = Resize(), Head(3)
                        def forward(self, x):
                            return self.head(self.transform(x))
                    def detector():
                        return Detector()
                """)
                )
            proc = subprocess.run(
                [sys.executable, "-I", "-B", RUNNER, path, "--class", "Head", "--builder", "detector"], capture_output=True, text=True, timeout=300, cwd=tmp
            )
            report = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertTrue(report["ok"], report)
        # 800 px brought to 100 for the recording pass (below the size that is cut again)
        self.assertEqual(report["input_shapes"][0][-2:], [100, 100])


if __name__ == "__main__":
    unittest.main()
