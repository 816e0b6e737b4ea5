/**
 * A module the block's module imports only inside a function runs its module-level statements when that function
 * does (mmcv's `SparseSequential`: `is_sparse_conv` imports `sparse_conv`, whose chain loads a compiled operator at
 * import). The pulled file keeps that order: those statements wait in a function called where the import was.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';

const BLOCKS = `import torch
from torch import nn


def is_special(module):
    from .special import Special
    return isinstance(module, Special) and Special.scale > 1


class Seq(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)

    def fused(self):
        return [is_special(m) for m in self.modules()]
`;

/** Imported at module level by special.py: its statements run when is_special first runs. */
const OPS = `import importlib

LOADS = [0]


def _load(name):
    LOADS[0] += 1
    return importlib.import_module(name)


EXT = _load("lazypkg._ext")


def kernel(x):
    return EXT.run(x)
`;

const SPECIAL = `from torch import nn

from .ops import kernel

FACTOR = int("2")


class Special(nn.Module):
    scale = FACTOR

    def forward(self, x):
        return kernel(x) * self.scale
`;

const REGISTRY = `class Registry:
    def __init__(self, name):
        self.name = name
        self._module_dict = {}

    def register_module(self, name=None, module=None):
        def register(cls):
            self._module_dict[name or cls.__name__] = cls
            return cls

        return register

    def get(self, key):
        return self._module_dict.get(key)

    def build(self, cfg):
        cfg = dict(cfg)
        return self.get(cfg.pop("type"))(**cfg)


MODELS = Registry("models")
`;

/** A registered class whose module a function imports too: the package registers it when imported (its __init__). */
const FANCY = `from torch import nn

from .catalog import MODELS

SCALE = float("3")


@MODELS.register_module()
class Fancy(nn.Module):
    def forward(self, x):
        return x * SCALE
`;

const HOLDER = `from torch import nn

from .catalog import MODELS


def fancy_class():
    from .fancy import Fancy
    return Fancy


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        assert fancy_class().__name__ == "Fancy"
        self.inner = MODELS.build(dict(type="Fancy"))

    def forward(self, x):
        return self.inner(x)
`;

describe('statements of a module imported only inside a function', function () {
  this.timeout(120_000);
  let dir: string;
  let db: string;
  let text: string;
  const out = (): string => path.join(dir, 'out', 'seq.py');

  before(async () => {
    dir = await tmpdir('nnrag-lazy-');
    db = path.join(dir, 'index.db');
    await writeTree(path.join(dir, 'src'), { 'lazypkg/__init__.py': '', 'lazypkg/blocks.py': BLOCKS, 'lazypkg/ops.py': OPS, 'lazypkg/special.py': SPECIAL });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
    const r = await cli('pull', 'lazypkg.blocks.Seq', '--db', db, '--out', out(), '--no-validate', '--json');
    assert.strictEqual(r.code, 0, r.out + r.err);
    text = fs.readFileSync(out(), 'utf8');
  });

  it('wait in a function that runs them once, called where the original imported their module, dependencies first', () => {
    assert.doesNotMatch(text, /^EXT = /m, text);
    assert.match(text, /^ {4}EXT = _load\("lazypkg\._ext"\)$/m);
    const call = /^ {4}(_nnrag_import_lazypkg_ops_\d+\(\); )+_nnrag_import_lazypkg_ops_\d+\(\)$/m.exec(text);
    assert.ok(call, text);
    // a statement a definition needs while the file is imported (a class attribute) runs then, as before
    assert.match(text, /^FACTOR = int\("2"\)$/m);
  });

  it('the file imports where its original does, and runs them (once) when the function is called, as the original does', function () {
    if (!PYTHON_WITH_TORCH) this.skip();
    const script = `import sys
sys.path.insert(0, ${JSON.stringify(path.dirname(out()))})
import seq
assert not hasattr(seq, "EXT"), "ran at import"
for _ in range(2):
    try:
        seq.is_special(None)
    except ModuleNotFoundError as e:
        print("raised", type(e).__name__)
print(seq.LOADS)
`;
    const r = spawnSync(PYTHON_WITH_TORCH, ['-c', script], { encoding: 'utf8' });
    assert.strictEqual(r.status, 0, r.stderr);
    // a statement that failed runs again the next time, as Python imports a module that failed again
    assert.deepStrictEqual(r.stdout.trim().split('\n'), ['raised ModuleNotFoundError', 'raised ModuleNotFoundError', '[2]']);
  });

  it('stay at module level where a class of their module is found through a registry (looked up by a string)', async function () {
    await writeTree(path.join(dir, 'src'), {
      'lazyreg/__init__.py': 'from . import fancy\n',
      'lazyreg/catalog.py': REGISTRY,
      'lazyreg/fancy.py': FANCY,
      'lazyreg/holder.py': HOLDER,
    });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
    const file = path.join(dir, 'out', 'holder.py');
    const r = await cli('pull', 'lazyreg.holder.Holder', '--db', db, '--out', file, '--no-validate', '--json');
    assert.strictEqual(r.code, 0, r.out + r.err);
    const pulled = fs.readFileSync(file, 'utf8');
    assert.match(pulled, /^SCALE = float\("3"\)$/m, pulled);
    assert.doesNotMatch(pulled, /_nnrag_import_/);
    if (!PYTHON_WITH_TORCH) return;
    const v = await cli(
      'pull',
      'lazyreg.holder.Holder',
      '--db',
      db,
      '--out',
      path.join(dir, 'validated', 'holder.py'),
      '--python',
      PYTHON_WITH_TORCH,
      '--json',
    );
    assert.strictEqual((JSON.parse(v.out) as { tier: string }).tier, 'equivalent', v.out);
  });

  it('the block validates and is equivalent to its original', async function () {
    if (!PYTHON_WITH_TORCH) this.skip();
    const r = await cli('pull', 'lazypkg.blocks.Seq', '--db', db, '--out', path.join(dir, 'validated', 'seq.py'), '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual((JSON.parse(r.out) as { tier: string }).tier, 'equivalent', r.out);
  });
});
