/**
 * The package used as a module object in pulled code: what it defines (`pkg.__version__`, `pkg.utils.helper`) is
 * inlined and read by name; the module itself used as a value fails with a message that names the construct.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from './helpers';

describe('the package used as a module object', function () {
  this.timeout(120_000);
  let dir: string;
  let db: string;
  before(async () => {
    dir = await tmpdir('nnrag-pkgobj-');
    db = path.join(dir, 'index.db');
    await writeTree(path.join(dir, 'src'), {
      'mypkg/__init__.py': '__version__ = "1.2.0"\nfrom . import utils\n',
      'mypkg/utils.py': 'def helper(x):\n    return x * 2\n\n\nSCALE = 3\n',
      'mypkg/blocks.py':
        'from torch import nn\n\nimport mypkg\nimport mypkg.utils\n\n\nclass UsesPkg(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.version = mypkg.__version__\n\n    def forward(self, x):\n        return mypkg.utils.helper(self.lin(x)) * mypkg.utils.SCALE\n\n\nclass KeepsModule(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.names = sorted(vars(mypkg))\n\n    def forward(self, x):\n        return x\n',
    });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
  });

  it('a dunder the package defines and attributes of its submodules are inlined and read by name; the block validates', async () => {
    const out = path.join(dir, 'uses_pkg.py');
    const r = await cli('pull', 'mypkg.blocks.UsesPkg', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent', r.out);
    const body = fs.readFileSync(out, 'utf8').split('\n').filter((l) => !l.startsWith('#')).join('\n');
    assert.match(body, /^__version__ = "1\.2\.0"$/m);
    assert.doesNotMatch(body, /\bmypkg\b/);
  });

  it('the module itself as a value fails with a message that names it', async () => {
    const r = await cli('pull', 'mypkg.blocks.KeepsModule', '--db', db, '--out', path.join(dir, 'keeps.py'), '--no-validate', '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'unresolved', r.out);
    assert.match(report.message, /uses the module mypkg as an object: its code is inlined into this file, so no module mypkg exists/);
  });

  it('a batch runs the original of a block it could not run, and counts how far the originals get', async () => {
    const out = path.join(dir, 'batch');
    const r = await cli('pull', '--all', '--db', db, '--out-dir', out, '--python', PYTHON_WITH_TORCH, '--jobs', '1', '--json');
    assert.strictEqual(r.code, 1, r.err);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8'));
    type Item = { target: string; status: string; tier: string | null; original_reached?: string | null };
    const byName = new Map((report.items as Item[]).map((i) => [i.target.split('.').pop(), i] as const));
    // the copy of KeepsModule never ran (its file cannot work), yet its original reaches forward
    assert.deepStrictEqual([byName.get('KeepsModule')?.status, byName.get('KeepsModule')?.tier, byName.get('KeepsModule')?.original_reached], ['failed', null, 'forward']);
    assert.deepStrictEqual([byName.get('UsesPkg')?.tier, byName.get('UsesPkg')?.original_reached], ['equivalent', 'forward']);
    assert.deepStrictEqual(report.summary.originals, { run: 2, imported: 2, forward: 2, compared_share: 50, forward_share: 50 });
    // the raw shares lead, over all the blocks: the one whose file never ran counts against them
    assert.deepStrictEqual(Object.keys(report.summary)[0], 'raw');
    assert.deepStrictEqual(report.summary.raw, { blocks: 2, forward: 1, equivalent: 1, forward_share: 50, equivalent_share: 50 });
  });
});
