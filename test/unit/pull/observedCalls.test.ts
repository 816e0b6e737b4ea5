/**
 * The catalog of observed calls: a repository's tests run in the sandbox under the observer, which records how they
 * built and fed each block; the pull then builds and feeds the block that way (a configuration object of a class no
 * guess can make, a dict of tensors with an index in range), takes the classes those calls name into the file, and
 * says where the call was seen. An entry runs again only when a file it imported changed.
 */
import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { spreadAcrossFiles } from '../../../src/core/pull/observe';
import { ASSETS, cli, hasTorch, indexFolder, memoryDb, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';
import { Workspace } from '../../../src/core/workspace/workspace';
import { blobsOf, forgetObserved, freshEntries, observedEntries, observedSize, recordObserved, stillTrue } from '../../../src/core/store/observed';
import type { ObservedEntry } from '../../../src/core/store/observed';

const REPO = {
  'pkg/__init__.py': '',
  'pkg/specs.py': `class Spec:
    """What a head is made of."""

    def __init__(self, width, out, scale=1.0):
        self.width = width
        self.out = out
        self.scale = scale
`,
  'pkg/layers.py': `import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.proj = nn.Linear(spec.width, spec.out)
        self.scale = spec.scale

    def forward(self, batch):
        picked = self.proj(batch["feats"])[batch["index"]]
        return picked * self.scale
`,
  'tests/test_layers.py': `import pytest
import torch

from pkg.layers import Head
from pkg.specs import Spec


@pytest.mark.parametrize("width", [6, 10])
def test_head(width):
    head = Head(Spec(width, 3, scale=0.5))
    out = head({"feats": torch.randn(5, width), "index": torch.tensor([0, 4, 2])})
    assert out.shape == (3, 3)


def test_needs_a_fixture(request):
    Head(Spec(4, 4))
`,
};

describe("observed calls: blocks built and fed as their repository's tests do", function () {
  this.timeout(600_000);
  before(function () {
    if (!hasTorch()) this.skip();
  });

  it('a block no guess builds is built and fed as its test did, compared with its original, and the catalog is cached by blob', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, REPO);
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);

    // guessed: the spec cannot be made from an integer
    const before = await cli('pull', 'pkg.layers.Head', '--db', db, '--out', path.join(dir, 'before.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const guessed = JSON.parse(before.out) as { validation?: { tier?: string; category?: string } };
    assert.notStrictEqual(guessed.validation?.tier, 'equivalent', before.out);

    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(observed.code, 0, observed.err);
    const [summary] = JSON.parse(observed.out) as { ran: number; entries: number; failed: number; classes: number; fed: number; cached: number }[];
    assert.deepStrictEqual([summary.entries, summary.ran, summary.failed, summary.classes, summary.fed], [2, 2, 1, 1, 1], observed.out);
    // how much of the repository it covers, and why an entry failed, in the summary and in stats
    assert.deepStrictEqual((summary as unknown as { failedBy: Record<string, number> }).failedBy, { LookupError: 1 }, observed.out);
    assert.match((await cli('stats', '--db', db)).out, /repo \(folder\): .*; observed 2 of 2 entries \(1 block fed\)/);

    const shown = await cli('show', 'pkg.layers.Head', '--calls', '--db', db);
    assert.match(
      shown.out,
      /in tests\/test_layers\.py::test_head\n {4}built with \(spec=Spec\(width=6, out=3, scale=0\.5\)\)\n {4}forward got \(batch=\{"feats": float32\[5, 6\], "index": int64\[3\] in 0\.\.4\}\)/,
      shown.out,
    );

    const out = path.join(dir, 'after.py');
    const after = await cli('pull', 'pkg.layers.Head', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(after.out) as { tier?: string; message?: string; validation?: { observed?: string; equivalence?: { status: string } } };
    assert.strictEqual(report.tier, 'equivalent', after.out);
    assert.strictEqual(report.validation?.observed, 'tests/test_layers.py::test_head');
    assert.match(report.message ?? '', /built and fed as the repository's own tests\/test_layers\.py::test_head does/);
    const text = await fsp.readFile(out, 'utf8');
    assert.match(text, /^class Spec:\n/m, 'the class the test built the block with is in the file');
    // validate FILE judges it as the pull did
    const again = await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual((JSON.parse(again.out) as { tier: string }).tier, 'equivalent', again.out);

    // unchanged files: nothing runs again; a changed file the test imported: its entries run again
    const cached = JSON.parse((await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { ran: number; cached: number }[];
    assert.deepStrictEqual([cached[0].ran, cached[0].cached], [0, 2]);
    await fsp.appendFile(path.join(repo, 'pkg/specs.py'), '\n# a comment\n');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const stale = await cli('show', 'pkg.layers.Head', '--calls', '--db', db);
    assert.match(stale.out, /a file it imported changed since/);
    const rerun = JSON.parse((await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { ran: number; cached: number }[];
    assert.deepStrictEqual([rerun[0].ran, rerun[0].cached], [2, 0]);
  });

  it("a builder that needs no argument is run and what it built is fed; a program's main is not run; a test class runs its mixins' tests", async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'toy/__init__.py': '',
      'toy/model.py': `import torch
from torch import nn


class Stem(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)

    def forward(self, x):
        return self.conv(x).relu()


class Head(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(x.mean((2, 3)))


class Net(nn.Module):
    def __init__(self, width=8, classes=5):
        super().__init__()
        self.stem = Stem(width)
        self.head = Head(width, classes)

    def forward(self, x):
        return self.head(self.stem(x))


def net_small(*, pretrained=True, **kwargs):
    if pretrained:
        raise RuntimeError("would download the weights")
    return Net(width=4, **kwargs)


def main():
    open("/tmp/nnrag-main-ran", "w").write("ran")
    return Net()
`,
      'tests/__init__.py': '',
      'tests/mixins.py': `import torch

from toy.model import Head


class HeadChecks:
    width = 3

    def test_shape(self):
        head = Head(self.width, 2)
        assert head(torch.randn(1, self.width, 2, 2)).shape == (1, 2)
`,
      'tests/test_head.py': `import unittest

from tests.mixins import HeadChecks


class HeadTests(HeadChecks, unittest.TestCase):
    width = 6
`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(observed.code, 0, observed.err);
    const [summary] = JSON.parse(observed.out) as { ran: number; entries: number; failed: number; classes: number; fed: number }[];
    // net_small and Net (a composite block that needs no argument), the test its test class has from its mixin; main
    // is a program, not a builder, and the mixin alone is not a test class
    assert.deepStrictEqual([summary.entries, summary.ran, summary.failed, summary.classes, summary.fed], [3, 3, 0, 3, 3], observed.out);
    const shown = await cli('show', 'toy.model.Head', '--calls', '--db', db);
    assert.match(
      shown.out,
      /in toy\/model\.py::net_small\n {4}built with \(width=4, classes=5\)\n {4}forward got \(x=float32\[\d+, 4, \d+, \d+\]\)/,
      shown.out,
    );
    assert.match(shown.out, /in toy\/model\.py::Net\n/, shown.out);
    assert.match(
      shown.out,
      /in tests\/test_head\.py::HeadTests::test_shape\n {4}built with \(width=6, classes=2\)\n {4}forward got \(x=float32\[1, 6, 2, 2\]/,
      shown.out,
    );

    // a batch pull observes first: here nothing changed since, so nothing runs again
    const batch = await cli('pull', '--all', '--db', db, '--out-dir', path.join(dir, 'all'), '--python', PYTHON_WITH_TORCH, '--jobs', '1', '--json');
    assert.match(batch.err, /\[observe\] repo: observed 3 of 3 entries \(3 blocks fed\); 0 run now, 3 unchanged since the last run/, batch.err);
    assert.strictEqual((JSON.parse(batch.out) as { raw: { equivalent: number } }).raw.equivalent, 3, batch.out);
  });

  it('a batch pull observes the repositories first, unless told not to', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, REPO);
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const without = await cli(
      'pull',
      '--all',
      '--no-observe',
      '--db',
      db,
      '--out-dir',
      path.join(dir, 'without'),
      '--python',
      PYTHON_WITH_TORCH,
      '--jobs',
      '1',
      '--json',
    );
    assert.doesNotMatch(without.err, /\[observe\]/);
    assert.notStrictEqual((JSON.parse(without.out) as { raw: { equivalent: number } }).raw.equivalent, 1, without.out);
    const batch = await cli('pull', '--all', '--db', db, '--out-dir', path.join(dir, 'all'), '--python', PYTHON_WITH_TORCH, '--jobs', '1', '--json');
    assert.match(batch.err, /\[observe\] repo: observed 2 of 2 entries \(1 block fed\); 2 run now, 1 stopped with an error \(1 LookupError\)/, batch.err);
    assert.strictEqual((JSON.parse(batch.out) as { raw: { equivalent: number } }).raw.equivalent, 1, batch.out);
  });

  it("the README's code blocks that use the repository are run as written, and what they built is observed", async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'vitlite/__init__.py': 'from vitlite.vit import ViT\n',
      'vitlite/vit.py': `import torch
from torch import nn


class Patches(nn.Module):
    def __init__(self, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)

    def forward(self, img):
        return self.proj(img).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, dim, num_classes):
        super().__init__()
        assert image_size % patch_size == 0
        self.patches = Patches(patch_size, dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img):
        return self.head(self.patches(img).mean(1))
`,
      'README.md': `# vitlite

\`\`\`bash
pip install vitlite
\`\`\`

\`\`\`python
import torch
from vitlite import ViT

v = ViT(image_size = 32, patch_size = 8, dim = 24, num_classes = 10)
img = torch.randn(1, 3, 32, 32)
preds = v(img)
\`\`\`

\`\`\`python
import torch
x = torch.randn(2)
\`\`\`
`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    const [summary] = JSON.parse(observed.out) as { entries: number; ran: number; failed: number; classes: number; fed: number }[];
    // the code block that imports the repository (the one of torch alone is not the repository's use)
    assert.deepStrictEqual([summary.entries, summary.ran, summary.failed, summary.classes, summary.fed], [1, 1, 0, 2, 2], observed.out);
    const shown = await cli('show', 'vitlite.vit.Patches', '--calls', '--db', db);
    assert.match(
      shown.out,
      /in README\.md::example-1-[0-9a-f]{12}\n {4}built with \(patch=8, dim=24\)\n {4}forward got \(img=float32\[1, 3, 32, 32\]\)/,
      shown.out,
    );
  });

  it('entries the time ran out before are not recorded: the next run runs them', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    const busy = 'def busy():\n    total = 0\n    for i in range(25_000_000):\n        total += i & 7\n';
    await writeTree(repo, {
      ...REPO,
      'tests/test_layers.py': `${busy}\n${['a', 'b', 'c', 'd'].map((n) => `\ndef test_${n}():\n    busy()\n`).join('')}`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const run = async (): Promise<{ ran: number; notRun?: number; coverage: { observed: number; entries: number } }> =>
      (JSON.parse((await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--seconds', '1', '--json')).out) as never[])[0];
    const first = await run();
    assert.ok((first.notRun ?? 0) > 0, JSON.stringify(first));
    assert.strictEqual(first.coverage.observed, 4 - (first.notRun ?? 0), JSON.stringify(first));
    // (before, they were recorded as failed, counted as observed, and never run again while their files were unchanged)
    const second = await run();
    assert.strictEqual(second.ran, first.notRun, JSON.stringify(second));
    assert.strictEqual(second.coverage.observed, 4, JSON.stringify(second));
  });

  it('a test that writes into its repository writes into a private copy; the repository is never written', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'wr/__init__.py': '',
      'wr/block.py': `from torch import nn


class Store(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.proj = nn.Linear(spec["width"], 2)

    def forward(self, x):
        return self.proj(x)
`,
      'data/README': 'the processed files go here\n',
      'tests/test_store.py': `import json
import os

import torch

from wr.block import Store

DATA = os.path.join(os.path.dirname(__file__), "..", "data")


def test_store():
    # as a dataset's test does: process once into the repository's data folder, then read it back
    os.makedirs(os.path.join(DATA, "processed"), exist_ok=True)
    with open(os.path.join(DATA, "processed", "spec.json"), "w") as f:
        json.dump({"width": 3}, f)
    with open(os.path.join(DATA, "README"), "a") as f:
        f.write("processed\\n")
    with open(os.path.join(DATA, "processed", "spec.json")) as f:
        spec = json.load(f)
    assert Store(spec)(torch.randn(4, 3)).shape == (4, 2)
`,
    });
    const before = await fsp.readdir(path.join(repo, 'data'));
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    const [summary] = JSON.parse(observed.out) as { ran: number; failed: number; fed: number }[];
    // (it failed before: "Read-only file system" as it made data/processed)
    assert.deepStrictEqual([summary.ran, summary.failed, summary.fed], [1, 0, 1], observed.out);
    assert.deepStrictEqual(await fsp.readdir(path.join(repo, 'data')), before, 'nothing was written into the repository');
    assert.strictEqual(await fsp.readFile(path.join(repo, 'data', 'README'), 'utf8'), 'the processed files go here\n');
  });

  it("what an editable install places in the package (its setup.py's links) is there in the private copy only", async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'setup.py': `import os
import sys

# as OpenMMLab's setup.py does for \`pip install -e .\`: the configs linked into the package, read through it
if "develop" in sys.argv:
    here = os.path.dirname(os.path.abspath(__file__))
    mim = os.path.join(here, "zoo", ".mim")
    os.makedirs(mim, exist_ok=True)
    link = os.path.join(mim, "configs")
    if not os.path.lexists(link):
        os.symlink(os.path.relpath(os.path.join(here, "configs"), mim), link)
`,
      'configs/net.json': '{"width": 3}\n',
      'zoo/__init__.py': '',
      'zoo/block.py': `import json
import os

from torch import nn


class Zoo(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 2)

    def forward(self, x):
        return self.proj(x)


def from_zoo(name):
    with open(os.path.join(os.path.dirname(__file__), ".mim", "configs", name + ".json")) as f:
        return Zoo(**json.load(f))
`,
      'tests/test_zoo.py': `import torch

from zoo.block import from_zoo


def test_from_zoo():
    assert from_zoo("net")(torch.randn(4, 3)).shape == (4, 2)
`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    const [summary] = JSON.parse(observed.out) as { ran: number; failed: number; fed: number }[];
    // (it failed before: "No such file or directory: .../zoo/.mim/configs/net.json")
    assert.deepStrictEqual([summary.ran, summary.failed, summary.fed], [1, 0, 1], observed.out);
    assert.deepStrictEqual((await fsp.readdir(path.join(repo, 'zoo'))).sort(), ['__init__.py', 'block.py'], 'nothing was written into the repository');
    assert.deepStrictEqual((await fsp.readdir(repo)).sort(), ['configs', 'setup.py', 'tests', 'zoo']);
  });

  it('a src/ layout: its package imports from src/, its tests from the root, and its original is compared', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'src/lay/__init__.py': '',
      'src/lay/block.py': `from torch import nn


class Gate(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.proj = nn.Linear(spec["width"], spec["width"])

    def forward(self, x):
        return self.proj(x).sigmoid() * x
`,
      'tests/test_gate.py': `import torch

from lay.block import Gate


def test_gate():
    assert Gate({"width": 5})(torch.randn(2, 5)).shape == (2, 5)
`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    const [summary] = JSON.parse(observed.out) as { ran: number; failed: number; fed: number }[];
    assert.deepStrictEqual([summary.ran, summary.failed, summary.fed], [1, 0, 1], observed.out);
    const pulled = await cli('pull', 'lay.block.Gate', '--db', db, '--out', path.join(dir, 'gate.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(pulled.out) as { tier?: string; validation?: { observed?: string } };
    assert.strictEqual(report.tier, 'equivalent', pulled.out);
    assert.strictEqual(report.validation?.observed, 'tests/test_gate.py::test_gate');
  });

  it("a configuration file's model is built by the repository's registry (its _base_ merged) and fed", async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, {
      'mini/__init__.py': '',
      'mini/registry.py': `class Registry:
    def __init__(self):
        self.known = {}

    def register_module(self):
        def put(cls):
            self.known[cls.__name__] = cls
            return cls
        return put

    def get(self, name):
        return self.known.get(name)

    def build(self, cfg):
        cfg = dict(cfg)
        return self.known[cfg.pop("type")](**cfg)


MODELS = Registry()
`,
      'mini/models.py': `import torch
from torch import nn

from mini.registry import MODELS


@MODELS.register_module()
class Backbone(nn.Module):
    def __init__(self, width, act=dict(type="ReLU")):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)

    def forward(self, x):
        return self.conv(x).relu()


@MODELS.register_module()
class Head(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.fc = nn.Linear(width, classes)

    def forward(self, feats):
        return self.fc(feats.mean((2, 3)))


@MODELS.register_module()
class Classifier(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = MODELS.build(backbone)
        self.head = MODELS.build(head)

    def forward(self, inputs):
        return self.head(self.backbone(inputs))
`,
      'configs/_base_/models/tiny.py': `model = dict(type="Classifier", backbone=dict(type="Backbone", width=8), head=dict(type="Head", width=8, classes=3))
`,
      'configs/tiny/tiny_w4.py': `_base_ = ["../_base_/models/tiny.py"]
model = dict(backbone=dict(width=4), head=dict(width=4))
`,
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const observed = await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    const [summary] = JSON.parse(observed.out) as { entries: number; ran: number; failed: number; fed: number }[];
    assert.deepStrictEqual([summary.entries, summary.ran, summary.failed, summary.fed], [2, 2, 0, 3], observed.out);
    const shown = await cli('show', 'mini.models.Head', '--calls', '--db', db);
    assert.match(
      shown.out,
      /in configs\/tiny\/tiny_w4\.py::model\n {4}built with \(width=4, classes=3\)\n {4}forward got \(feats=float32\[\d+, 4, \d+, \d+\]\)/,
      shown.out,
    );
    assert.match(shown.out, /in configs\/_base_\/models\/tiny\.py::model\n {4}built with \(width=8, classes=3\)/, shown.out);
    // the base file is part of what the derived config's observation depends on
    await fsp.writeFile(
      path.join(repo, 'configs/_base_/models/tiny.py'),
      'model = dict(type="Classifier", backbone=dict(type="Backbone", width=8), head=dict(type="Head", width=8, classes=2))\n',
    );
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const rerun = JSON.parse((await cli('observe', '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { ran: number; cached: number }[];
    assert.deepStrictEqual([rerun[0].ran, rerun[0].cached], [2, 0]);
  });
});

describe('which entries a capped observation runs', () => {
  it('the tests of the blocks a batch is about to pull first (a sample of a large repository)', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120_000);
    const dir = await tmpdir();
    const layer = (name: string): string =>
      `from torch import nn\n\n\nclass ${name}(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n        self.lin = nn.Linear(width, width)\n\n    def forward(self, x):\n        return self.lin(x)\n`;
    const test = (name: string): string =>
      `import torch\n\nfrom pk.layers_${name.toLowerCase()} import ${name}\n\n\ndef test_${name.toLowerCase()}():\n    ${name}(5)(torch.randn(2, 5))\n`;
    const files: Record<string, string> = { 'pk/__init__.py': '' };
    for (const n of ['Alpha', 'Beta', 'Gamma', 'Delta']) {
      files[`pk/layers_${n.toLowerCase()}.py`] = layer(n);
      files[`tests/test_${n.toLowerCase()}.py`] = test(n);
    }
    await writeTree(path.join(dir, 'repo'), files);
    const db = await memoryDb();
    await indexFolder(db, path.join(dir, 'repo'));
    const ws = Workspace.over(db, ASSETS, { runner: ASSETS.runner });
    const [summary] = await ws.observe({ python: PYTHON_WITH_TORCH, maxEntries: 1, focus: new Set(['Gamma']), allowWeakSandbox: true });
    assert.strictEqual(summary.ran, 1, JSON.stringify(summary));
    assert.deepStrictEqual(
      observedEntries(db, 1).map((e) => e.entry),
      ['tests/test_gamma.py::test_gamma'],
    );
  });

  it('in turn across files, configs by folder, the files that name more blocks first', () => {
    const e = (id: string, kind?: 'config'): { id: string; module: string; function: string; kind?: 'config' } => ({
      id,
      module: 'm',
      function: 'f',
      ...(kind ? { kind } : {}),
    });
    const entries = [
      e('configs/a/x.py::model', 'config'),
      e('configs/a/y.py::model', 'config'),
      e('configs/b/z.py::model', 'config'),
      e('tests/test_tok.py::test_1'),
      e('tests/test_tok.py::test_2'),
      e('tests/test_model.py::test_1'),
      e('tests/test_model.py::test_2'),
    ];
    const weight = (file: string): number => (file === 'tests/test_model.py' ? 3 : 0);
    assert.deepStrictEqual(
      spreadAcrossFiles(entries, weight).map((x) => x.id),
      [
        'tests/test_model.py::test_1',
        'configs/a/x.py::model',
        'configs/b/z.py::model',
        'tests/test_tok.py::test_1',
        'tests/test_model.py::test_2',
        'configs/a/y.py::model',
        'tests/test_tok.py::test_2',
      ],
    );
  });
});

describe("the catalog's file sets", () => {
  it('stores each distinct set of files once, reads an older row that holds its set, and drops a set no entry names', async () => {
    const db = await memoryDb();
    db.run("INSERT INTO repos (id, name, kind, location, root) VALUES (1, 'r', 'folder', '/r', '/r')");
    const indexed = (p: string, blob: string): void =>
      db.run("INSERT OR REPLACE INTO files (repo_id, path, module, size, hash, status) VALUES (1, ?, 'm', 1, ?, 'indexed')", [p, blob]);
    const closure: Record<string, string> = {};
    for (let i = 0; i < 300; i++) closure[`src/pkg/models/transformers/m${i}.py`] = `${i}`.padStart(40, 'a');
    for (const [p, blob] of Object.entries(closure)) indexed(p, blob);
    for (const t of ['tests/test_a.py', 'tests/test_b.py']) indexed(t, 'b'.repeat(40));
    const entry = (id: string, test: string): ObservedEntry => ({
      entry: id,
      key: 'k',
      files: { ...closure, [test]: 'b'.repeat(40) },
      seconds: 1,
      error: null,
    });
    const tests = Array.from({ length: 40 }, (_, i) => entry(`tests/test_a.py::test_${i}`, 'tests/test_a.py'));
    recordObserved(
      db,
      1,
      [...tests, entry('tests/test_b.py::test_b', 'tests/test_b.py')].map((e) => ({ entry: e, calls: [] })),
    );
    assert.strictEqual(db.get('SELECT COUNT(*) AS n FROM observed_filesets')?.n, 2);
    // the 41 entries hold two sets, each smaller than one entry's files written out
    const one = JSON.stringify(tests[0].files).length;
    assert.ok(observedSize(db, 1).bytes < one, `${observedSize(db, 1).bytes} bytes, one entry's files ${one}`);
    assert.deepStrictEqual(observedEntries(db, 1)[0].files, tests[0].files);
    assert.ok(freshEntries(db, 1).get('tests/test_a.py::test_0'));
    // a file of the set changed: the entries that imported it no longer hold, the other set's do
    indexed('tests/test_a.py', 'c'.repeat(40));
    assert.strictEqual(freshEntries(db, 1).get('tests/test_a.py::test_0'), false);
    assert.strictEqual(freshEntries(db, 1).get('tests/test_b.py::test_b'), true);
    // a row written before file sets (its set in the row) reads as it did
    db.run("INSERT INTO observed_entries (repo_id, entry, key, files, seconds, error) VALUES (1, 'old::t', 'k', ?, 1, NULL)", [
      JSON.stringify({ 'old.py': 'c'.repeat(40) }),
    ]);
    assert.deepStrictEqual(observedEntries(db, 1).find((e) => e.entry === 'old::t')?.files, { 'old.py': 'c'.repeat(40) });
    // an entry whose set is gone no longer holds (it runs again)
    db.run("INSERT INTO observed_entries (repo_id, entry, key, files, seconds, error) VALUES (1, 'lost::t', 'k', '@00', 1, NULL)");
    assert.strictEqual(
      stillTrue(
        observedEntries(db, 1).find((e) => e.entry === 'lost::t')!,
        blobsOf(db, 1),
      ),
      false,
    );
    forgetObserved(db, 1, new Set(tests.map((t) => t.entry)));
    assert.strictEqual(db.get('SELECT COUNT(*) AS n FROM observed_filesets')?.n, 1);
    forgetObserved(db, 1, new Set());
    assert.strictEqual(db.get('SELECT COUNT(*) AS n FROM observed_filesets')?.n, 0);
  });
});
