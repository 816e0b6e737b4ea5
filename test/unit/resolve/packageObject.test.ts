/**
 * The package used as a module object in pulled code: what it defines (`pkg.__version__`, `pkg.utils.helper`) is
 * inlined and read by name; a module used as a value (scanned with `vars`, read with `getattr` by a name held in data)
 * is stood in for by a module object of the file holding every definition of that module.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';

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
      'mypkg/aggr.py':
        'from torch import nn\n\n\nclass Aggregation(nn.Module):\n    pass\n\n\nclass SumAggregation(Aggregation):\n    def forward(self, x):\n        return x.sum(dim=0)\n\n\nclass MeanAggregation(Aggregation):\n    def forward(self, x):\n        return x.mean(dim=0)\n',
      'mypkg/resolve.py':
        'import mypkg.aggr\nfrom mypkg import aggr\nfrom mypkg.aggr import Aggregation, SumAggregation\n\n\ndef resolve(query):\n    # the classes of a module found by scanning its namespace, or by a name held in data\n    found = [c for c in vars(aggr).values() if isinstance(c, type) and issubclass(c, Aggregation) and c.__name__.lower().startswith(query)]\n    return found[0]() if found else getattr(mypkg.aggr, query)()\n',
      'mypkg/conv.py':
        'from torch import nn\n\nfrom mypkg.resolve import resolve\n\n\nclass Conv(nn.Module):\n    def __init__(self, dim=4, aggr="mean"):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.aggr = resolve(aggr)\n\n    def forward(self, x):\n        return self.aggr(self.lin(x))\n',
      'mypkg/blocks.py':
        'from torch import nn\n\nimport mypkg\nimport mypkg.utils\n\n\nclass UsesPkg(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.version = mypkg.__version__\n\n    def forward(self, x):\n        return mypkg.utils.helper(self.lin(x)) * mypkg.utils.SCALE\n\n\nclass KeepsModule(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.names = sorted(vars(mypkg))\n\n    def forward(self, x):\n        return x\n',
    });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
  });

  it('a dunder the package defines and attributes of its submodules are inlined and read by name; the block validates', async () => {
    const out = path.join(dir, 'uses_pkg.py');
    const r = await cli('pull', 'mypkg.blocks.UsesPkg', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent', r.out);
    const body = fs
      .readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .join('\n');
    assert.match(body, /^__version__ = "1\.2\.0"$/m);
    assert.doesNotMatch(body, /\bmypkg\b/);
  });

  it('a module scanned (vars) or read by a name held in data: a module object of the file holds all it defines', async () => {
    const out = path.join(dir, 'conv.py');
    const r = await cli('pull', 'mypkg.conv.Conv', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent', r.out);
    const body = fs.readFileSync(out, 'utf8');
    // MeanAggregation is named by no code, only found by the scan
    assert.match(body, /^class MeanAggregation\(Aggregation\):/m);
    assert.match(body, /^_nnrag_module_mypkg_aggr = __import__\("types"\)\.ModuleType\("mypkg\.aggr"\)/m);
    assert.match(
      body,
      /^_nnrag_module_mypkg_aggr\.__dict__\.update\(\{"Aggregation": Aggregation, "SumAggregation": SumAggregation, "MeanAggregation": MeanAggregation\}\)$/m,
    );
  });

  it('a package scanned for what it imports from its submodules: the module object holds those classes too', async () => {
    const src = path.join(dir, 'src2');
    await writeTree(src, {
      // a package whose classes are in its submodules, imported into its namespace (as a graph library's aggregations)
      'mypkg2/aggrs/__init__.py':
        'from .base import Aggregation\nfrom .basic import MeanAggregation, SumAggregation\n\n__all__ = ["Aggregation", "MeanAggregation", "SumAggregation"]\n',
      'mypkg2/aggrs/base.py': 'from torch import nn\n\n\nclass Aggregation(nn.Module):\n    pass\n',
      'mypkg2/aggrs/basic.py':
        'from .base import Aggregation\n\n\nclass SumAggregation(Aggregation):\n    def forward(self, x):\n        return x.sum(dim=0)\n\n\nclass MeanAggregation(Aggregation):\n    def forward(self, x):\n        return x.mean(dim=0)\n',
      'mypkg2/conv2.py':
        'from torch import nn\n\nimport mypkg2.aggrs as aggrs\nfrom mypkg2.aggrs import Aggregation, SumAggregation\n\n\ndef resolve(query):\n    found = [c for c in vars(aggrs).values() if isinstance(c, type) and issubclass(c, Aggregation) and c.__name__.lower().startswith(query)]\n    if not found:\n        raise ValueError(f"Could not resolve {query!r}")\n    return found[0]()\n\n\nclass Conv2(nn.Module):\n    def __init__(self, dim=4, aggr="mean"):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.aggr = resolve(aggr)\n        self.default = SumAggregation()\n\n    def forward(self, x):\n        return self.aggr(self.lin(x)) + self.default(x)\n',
    });
    const db2 = path.join(dir, 'index2.db');
    assert.strictEqual((await cli('index', src, '--db', db2)).code, 0);
    const out = path.join(dir, 'conv2.py');
    const r = await cli('pull', 'mypkg2.conv2.Conv2', '--db', db2, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent', r.out);
    const body = fs.readFileSync(out, 'utf8');
    assert.match(body, /^class MeanAggregation\(Aggregation\):/m);
    assert.match(body, /^_nnrag_module_mypkg2_aggrs\.__dict__\.update\(\{.*"MeanAggregation": MeanAggregation/m);
  });

  it("a module's value read into a local of the same name (`flag = pkg.backend.flag`) keeps reading the module's", async () => {
    const src = path.join(dir, 'src3');
    await writeTree(src, {
      'ulpkg/__init__.py': '',
      'ulpkg/backend.py': 'use_segment_matmul = None\n',
      'ulpkg/linear.py':
        'from torch import nn\n\nimport ulpkg.backend\n\n\nclass HeteroLinear(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        use_segment_matmul = ulpkg.backend.use_segment_matmul\n        if use_segment_matmul is None:\n            use_segment_matmul = False\n        return self.lin(x) * (2 if use_segment_matmul else 1)\n',
    });
    const db3 = path.join(dir, 'index3.db');
    assert.strictEqual((await cli('index', src, '--db', db3)).code, 0);
    const r = await cli('pull', 'ulpkg.linear.HeteroLinear', '--db', db3, '--out', path.join(dir, 'hetero.py'), '--python', PYTHON_WITH_TORCH, '--json');
    // "UnboundLocalError: cannot access local variable 'use_segment_matmul'" when the module's name was kept
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent', r.out);
  });

  it('the module itself as a value: a module object of what it defines, compared (its other attributes are not there)', async () => {
    const r = await cli('pull', 'mypkg.blocks.KeepsModule', '--db', db, '--out', path.join(dir, 'keeps.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'differs', r.out);
    assert.match(report.message, /'__version__'/);
  });

  it('a batch runs the original of a block it could not run, and counts how far the originals get', async () => {
    const out = path.join(dir, 'batch');
    const r = await cli('pull', '--all', '--db', db, '--out-dir', out, '--python', PYTHON_WITH_TORCH, '--jobs', '1', '--json');
    assert.strictEqual(r.code, 1, r.err);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8'));
    type Item = {
      target: string;
      status: string;
      tier: string | null;
      original_reached?: string | null;
      stages?: { stage: string; seconds?: number; copy?: number }[];
    };
    const byName = new Map((report.items as Item[]).map((i) => [i.target.split('.').pop(), i] as const));
    // KeepsModule's copy runs and differs (its stand-in lacks the package's other attributes): an honest verdict
    assert.deepStrictEqual(
      [byName.get('KeepsModule')?.status, byName.get('KeepsModule')?.tier, byName.get('KeepsModule')?.original_reached],
      ['failed', 'forward', 'forward'],
    );
    assert.deepStrictEqual([byName.get('UsesPkg')?.tier, byName.get('UsesPkg')?.original_reached], ['equivalent', 'forward']);
    assert.deepStrictEqual([byName.get('Conv')?.tier, byName.get('Conv')?.original_reached], ['equivalent', 'forward']);
    // each item says where its seconds went: the judge's run of the file, with each side's own seconds
    const judged = byName.get('Conv')?.stages?.[0];
    assert.ok(judged?.stage === 'judge' && judged.seconds! > 0 && judged.copy! > 0, JSON.stringify(byName.get('Conv')));
    assert.deepStrictEqual([report.summary.originals.run, report.summary.originals.imported], [6, 6]);
    // the raw shares lead, over all the blocks
    assert.deepStrictEqual(Object.keys(report.summary)[0], 'raw');
    assert.strictEqual(report.summary.raw.blocks, 6);
  });
});
