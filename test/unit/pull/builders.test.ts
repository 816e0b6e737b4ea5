import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { BuilderIndex, callableWithoutArguments, modulesTaken, namesTheBlock } from '../../../src/core/resolve/builders';
import { loadModuleTable } from '../../../src/core/resolve/loadTable';
import { cli, indexFolder, memoryDb, PYTHON_WITH_TORCH, hasTorch, pullValidated, tmpdir, writeTree } from '../helpers';
import { readProvenance } from '../../../src/core/emit/pulledFile';
import type { ValidatorPoolLike } from '../../../src/core/validate/report';

const REPO = {
  'zoo/__init__.py': '',
  'zoo/net.py': [
    'from torch import nn',
    '',
    'class Net(nn.Module):',
    '    def __init__(self, widths, depth_list):',
    '        super().__init__()',
    '        assert list(widths) == sorted(set(widths)), "widths must increase"',
    '        layers = [nn.Conv2d(3, widths[0], 3, padding=1)]',
    '        for a, b in zip(widths, widths[1:]):',
    '            layers += [nn.Conv2d(a, b, 3, padding=1) for _ in range(depth_list[0])]',
    '        self.body = nn.Sequential(*layers)',
    '    def forward(self, x):',
    '        return self.body(x)',
    '',
    'def _net(widths, depth, **kwargs):',
    '    return Net(widths, depth, **kwargs)',
    '',
    'def net_small(*, progress=True, **kwargs):',
    '    return _net([8, 16], [1], **kwargs)',
    '',
    'def needs_args(x):',
    '    return _net([x], [1])',
  ].join('\n'),
};

// (a plain object, not a configuration class the judge would build: only the bigger model builds the block)
const NESTED = {
  'nest/__init__.py': '',
  'nest/model.py': [
    'from dataclasses import dataclass',
    'from torch import nn',
    '',
    '@dataclass',
    'class Spec:',
    '    width: int',
    '',
    'class Inner(nn.Module):',
    '    def __init__(self, spec):',
    '        super().__init__()',
    '        self.fc = nn.Linear(spec.width, spec.width)',
    '    def forward(self, x):',
    '        return self.fc(x).relu()',
    '',
    'class Outer(nn.Module):',
    '    def __init__(self, widths):',
    '        super().__init__()',
    '        self.stem = nn.Linear(3, widths[0])',
    '        self.blocks = nn.Sequential(*[Inner(Spec(w)) for w in widths])',
    '    def forward(self, x):',
    '        return self.blocks(self.stem(x))',
    '',
    'def outer_small():',
    '    return Outer([6, 6])',
  ].join('\n'),
};

// a constructor that takes a module: a guessed Identity builds it and fails its forward; its builder gives the real one
const TAKES_MODULE = {
  'vgglike/__init__.py': '',
  'vgglike/model.py': [
    'from torch import nn',
    '',
    'class Classifier(nn.Module):',
    '    def __init__(self, features: nn.Module, num_classes: int = 5):',
    '        super().__init__()',
    '        self.features = features',
    '        self.head = nn.Linear(16 * 2 * 2, num_classes)',
    '    def forward(self, x):',
    '        return self.head(self.features(x).flatten(1))',
    '',
    'def classifier_small():',
    '    return Classifier(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2)))',
    '',
    '# no builder, and the guess stands in well: a residual around any module',
    'class Residual(nn.Module):',
    '    def __init__(self, fn: nn.Module):',
    '        super().__init__()',
    '        self.fn = fn',
    '    def forward(self, x):',
    '        return self.fn(x) + x',
  ].join('\n'),
};

describe('builders: how the repository itself builds a block', () => {
  it('reads which required parameters take a module', () => {
    assert.deepStrictEqual(modulesTaken('(features: nn.Module, num_classes: int = 1000, init_weights: bool = True )'), ['features']);
    assert.deepStrictEqual(modulesTaken('(backbone: torch.nn.Module, head: Optional[nn.Module], rpn: nn.Module = None)'), ['backbone', 'head']);
    // a factory of modules, a class, a defaulted module, an unannotated one: guesses build those as well as anything
    assert.deepStrictEqual(modulesTaken('(block: Callable[..., nn.Module], cls: Type[nn.Module], norm: nn.Module = nn.Identity(), fn)'), []);
  });

  it('asks the builders first for a constructor that takes a module, and guesses where none builds it', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(240_000);
    const built = await pullValidated(TAKES_MODULE, 'vgglike.model.Classifier');
    assert.strictEqual(built.tier, 'equivalent', JSON.stringify(built.validation));
    assert.strictEqual(built.validation?.builder, 'vgglike.model.classifier_small');
    // the file as pulled is not judged with guesses first
    assert.strictEqual(built.judged?.[0]?.stage, 'builder', JSON.stringify(built.judged));
    assert.ok(!built.judged?.some((j) => j.stage === 'judge'), JSON.stringify(built.judged));
    assert.match(built.message ?? '', /its constructor takes features, a module the builder gives it/);
    const guessed = await pullValidated(TAKES_MODULE, 'vgglike.model.Residual');
    assert.strictEqual(guessed.tier, 'equivalent', JSON.stringify(guessed.validation));
    assert.strictEqual(guessed.validation?.builder, undefined);
    assert.deepStrictEqual(
      guessed.judged?.map((j) => j.stage),
      ['judge'],
      JSON.stringify(guessed.judged),
    );
  });

  it('reads whether a signature needs arguments', () => {
    assert.ok(callableWithoutArguments('()'));
    assert.ok(callableWithoutArguments('(*, weights=None, progress: bool = True, **kwargs: Any)'));
    assert.ok(callableWithoutArguments('(a=(1, 2), b={"k": [1, 2]})'));
    assert.ok(!callableWithoutArguments('(x)'));
    assert.ok(!callableWithoutArguments('(x, y=1)'));
  });

  it("reads whether a builder's name says it makes the block itself, not a model with the block inside", () => {
    assert.ok(namesTheBlock('maxvit_t', 'MaxVit'));
    assert.ok(namesTheBlock('resnet18', 'ResNet'));
    assert.ok(namesTheBlock('net_small', 'Net'));
    assert.ok(!namesTheBlock('ssd300_vgg16', 'DefaultBoxGenerator'));
    assert.ok(!namesTheBlock('ssd300_vgg16', 'SSDScoringHead'));
    assert.ok(!namesTheBlock('fasterrcnn_resnet50_fpn', 'AnchorGenerator'));
  });

  it('finds argument-free public builders through private helpers', async () => {
    const dir = await tmpdir();
    await writeTree(dir, REPO);
    const db = await memoryDb();
    await indexFolder(db, dir);
    const table = loadModuleTable(db);
    const rec = table.lookup('zoo.net')!;
    const repoId = rec.repoId;
    assert.deepStrictEqual(
      new BuilderIndex(table, repoId).buildersOf(rec, 'Net').map((b) => b.name),
      ['net_small'],
    );
  });

  it('validates a block through its builder when guessed arguments cannot build it', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120_000);
    const report = await pullValidated(REPO, 'zoo.net.Net');
    assert.strictEqual(report.status, 'validated', JSON.stringify(report.validation));
    assert.strictEqual(report.validation?.builder, 'zoo.net.net_small');
    assert.deepStrictEqual(report.validation?.input_shapes, [[2, 3, 16, 16]]);
    assert.match(report.message ?? '', /builder zoo\.net\.net_small\(\)/);
    // the report says each time the judge ran, and why: the file, the builders, the builder's arguments on the file
    assert.deepStrictEqual(
      report.judged?.map((j) => j.stage),
      ['judge', 'builder', 'replay'],
      JSON.stringify(report.judged),
    );
    // and where each run's seconds went: the sides' steps, each builder tried with how it ended
    const [first, builder, replay] = report.judged!;
    assert.ok(first.seconds! > 0 && first.timings?.copy?.steps?.build !== undefined, JSON.stringify(first));
    assert.ok(first.timings?.starting !== undefined && first.timings.static !== undefined, JSON.stringify(first));
    assert.deepStrictEqual(
      builder.builders?.map((b) => [b.name, b.ended]),
      [['net_small', report.validation?.tier]],
      JSON.stringify(builder),
    );
    // the builder's arguments came from the copy's build alone, and the file written with them was equivalent: the
    // builder's own run of both sides was not needed (its stage has no sides' timings), the replay compared
    assert.strictEqual(builder.timings, undefined, JSON.stringify(builder));
    assert.match(replay.why, /from the copy's build alone/);
    assert.ok(replay.timings?.original?.steps?.probes !== undefined, JSON.stringify(replay));
  });

  it('records the arguments the builder gave the block: the file written is judged, and validate FILE builds it again', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(240_000);
    const dir = await tmpdir();
    await writeTree(dir, REPO);
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', dir, '--db', db)).code, 0);
    const out = path.join(dir, 'out', 'net.py');
    const r = await cli('pull', 'zoo.net.Net', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out + r.err);
    assert.match(report.message, /the arguments the repository's builder zoo\.net\.net_small\(\) gives it/);
    const text = fs.readFileSync(out, 'utf8');
    assert.doesNotMatch(text, /def net_small/, 'the builder is not written into the file');
    assert.deepStrictEqual(readProvenance(text)?.builtWith, { builder: 'zoo.net.net_small', args: [[8, 16], [1]], kwargs: {} });
    const same = JSON.parse((await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(same.tier, 'equivalent', JSON.stringify(same));
    const edited = path.join(dir, 'out', 'edited.py');
    fs.writeFileSync(edited, text.replace('return self.body(x)', 'return self.body(x) * 2'));
    const differs = JSON.parse((await cli('validate', edited, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(differs.equivalence?.status, 'differs', JSON.stringify(differs));
    assert.strictEqual(differs.edited, true);
  });

  it('in the editor, stops trying builders at its budget and says which were not tried', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120_000);
    const slow = {
      ...REPO,
      'zoo/net.py': REPO['zoo/net.py'].replace(
        'def net_small(*, progress=True, **kwargs):\n',
        'def net_small(*, progress=True, **kwargs):\n    import time\n    time.sleep(30)\n',
      ),
    };
    const t0 = Date.now();
    const report = await pullValidated(slow, 'zoo.net.Net', { builderBudgetMs: 500 });
    assert.ok(Date.now() - t0 < 25_000, 'the builder was stopped, not waited for');
    assert.strictEqual(report.status, 'failed');
    assert.match(report.message ?? '', /the repository's builders net_small\(\) were not tried within 0\.5 s \(nn-rag pull tries them all\)/);
  });

  it('tries no further builder after one ends for want of compiled operators (a fact of the process, not the builder)', async function () {
    this.timeout(60_000);
    // two argument-free builders; a judge that says no guessed argument set builds the block, and that the model the
    // first builder makes needs compiled operators the copy's process lacks (MaskRCNN's two builders, a minute each)
    const two = { ...REPO, 'zoo/net.py': `${REPO['zoo/net.py']}\n\ndef net_big():\n    return _net([8, 16, 32], [2])\n` };
    const runs: (string | undefined)[] = [];
    const pool: ValidatorPoolLike = {
      validate: async (_file, options) => {
        runs.push(options.builder);
        return options.builder
          ? { ok: false, tier: 'instantiated', category: 'native-extension', message: "the copy's process lacks torchvision's _C", seconds: 0.1 }
          : { ok: false, tier: 'imported', category: 'instantiate', message: 'no argument set built Net', seconds: 0.1 };
      },
    };
    const report = await pullValidated(two, 'zoo.net.Net', { pool });
    const stage = report.judged?.find((j) => j.stage === 'builder');
    assert.deepStrictEqual(
      stage?.builders?.map((b) => [b.name, b.ended]),
      [['net_small', 'native-extension']],
      JSON.stringify(report.judged),
    );
    assert.strictEqual(stage?.untried, undefined, 'the rest are not said untried for time');
    assert.deepStrictEqual(runs, [undefined, 'net_small'], 'one judge for the file, one builder');
    assert.match(report.validation?.message ?? '', /the repository's builders ended: net_small\(\) native-extension/);
  });

  it("calls a builder without a download of weights: a default that fetches a backbone's weights is given None", async function () {
    // torchvision's segmentation and detection builders default to `weights_backbone=...IMAGENET1K_V1`: called with
    // their defaults in the sandbox (no network), they failed, and so did the blocks only they build
    if (!hasTorch()) this.skip();
    this.timeout(120_000);
    const fetching = {
      ...REPO,
      'zoo/net.py': REPO['zoo/net.py'].replace(
        'def net_small(*, progress=True, **kwargs):\n',
        'def net_small(*, progress=True, weights_backbone="IMAGENET1K_V1", **kwargs):\n' +
          '    if weights_backbone is not None:\n        raise RuntimeError(f"downloading {weights_backbone}: no network")\n',
      ),
    };
    const report = await pullValidated(fetching, 'zoo.net.Net');
    assert.strictEqual(report.status, 'validated', JSON.stringify(report.validation));
    assert.strictEqual(report.validation?.builder, 'zoo.net.net_small');
  });

  it('validates a block that only a bigger model builds, on the inputs that model gives it', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120_000);
    const report = await pullValidated(NESTED, 'nest.model.Inner');
    assert.strictEqual(report.status, 'validated', JSON.stringify(report.validation));
    assert.strictEqual(report.validation?.inside, 'Outer');
    assert.deepStrictEqual(report.validation?.input_shapes, [[2, 6]], 'the input the Outer model gave it');
  });

  it("validate FILE judges an unedited file inside its builder's model again, as its pull did, when no argument set can be written", async function () {
    if (!hasTorch()) this.skip();
    this.timeout(300_000);
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'lam'), {
      'lam/__init__.py': '',
      // the block's argument is a lambda its model makes: no recipe can be written into the header
      'lam/model.py':
        'from torch import nn\n\n\nclass Inner(nn.Module):\n    def __init__(self, act):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n        self.act = act\n\n    def forward(self, x):\n        return self.act(self.fc(x)) + x.sum(-1, keepdim=True) * self.act(x[..., :1])\n\n\nclass Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.stem = nn.Linear(3, 4)\n        self.inner = Inner(lambda t: t * 2 + 1)\n\n    def forward(self, x):\n        return self.inner(self.stem(x))\n\n\ndef outer():\n    return Outer()\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'lam'), '--db', db)).code, 0);
    const out = path.join(dir, 'out', 'inner.py');
    const r = JSON.parse((await cli('pull', 'lam.model.Inner', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json')).out) as {
      tier: string;
      validation: { builder?: string };
    };
    assert.deepStrictEqual([r.tier, r.validation.builder], ['equivalent', 'lam.model.outer']);
    assert.doesNotMatch(await fs.promises.readFile(out, 'utf8'), /"builtWith"/);
    const again = JSON.parse((await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { tier: string; builder?: string };
    assert.deepStrictEqual([again.tier, again.builder], ['equivalent', 'lam.model.outer']);
    // an edited file is judged as it is: the builder's model holds the code as pulled, not the edit
    await fs.promises.appendFile(out, '\n\nEDITED = True\n');
    const edited = JSON.parse((await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { tier: string };
    assert.notStrictEqual(edited.tier, 'equivalent');
  });
});
