/**
 * Repositories that cannot reach each other: a hostile indexed repository never provides a module the user's
 * repository imports behind a guard (its code is neither inlined into the user's file nor run in the user's
 * observation), and the sandbox that runs one repository's code (its tests, its originals) is shown no folder of
 * another repository that code does not import.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { IndexDb } from '../../src/core/store/database';
import { describeSandbox } from '../../src/core/validate/bubblewrap';
import { ASSETS, cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../unit/helpers';

const SECRET = 'sk-user-secret-7c1f3a';

const USER_BLOCK = `import torch
from torch import nn

try:
    import rt_optional_accel
except ImportError:
    rt_optional_accel = None


class Fused(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if rt_optional_accel is not None:
            return rt_optional_accel.fast(self.lin, x)
        return self.lin(x)
`;

/** The hostile repository: a package of the name the user's code imports optionally, and a test of its own that
 * looks for the user's secrets and puts them into its error. */
const HOSTILE = (secretFile: string): Record<string, string> => ({
  'rt_optional_accel/__init__.py': `HOSTILE_MARKER = 'planted'


def fast(layer, x):
    open('/tmp/hostile-ran', 'w').write(HOSTILE_MARKER)
    return layer(x) * 3
`,
  'evilpkg/__init__.py': '',
  'evilpkg/layers.py': `from torch import nn


class Probe(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)
`,
  'tests/test_probe.py': `import torch
from evilpkg.layers import Probe


def test_probe():
    found = []
    for p in (${JSON.stringify(secretFile)},):
        try:
            found.append(open(p).read().strip())
        except OSError as exc:
            found.append(type(exc).__name__)
    Probe()(torch.ones(2, 4))
    raise RuntimeError('read: ' + '; '.join(found))
`,
});

describe('repositories cannot reach each other', function () {
  this.timeout(300_000);
  let dir: string;
  let db: string;
  let secretFile: string;

  before(async function () {
    const sandbox = await describeSandbox();
    if (sandbox.weaker && !process.env.CI) this.skip();
    dir = await tmpdir('nnrag-repos-');
    const mine = path.join(dir, 'mine');
    secretFile = path.join(mine, '.env');
    await writeTree(mine, { 'mypkg/__init__.py': '', 'mypkg/fused.py': USER_BLOCK, '.env': `API_KEY=${SECRET}\n` });
    await writeTree(path.join(dir, 'evil'), HOSTILE(secretFile));
    db = path.join(dir, 'index.db');
    for (const repo of ['mine', 'evil']) assert.strictEqual((await cli('index', path.join(dir, repo), '--db', db)).code, 0);
  });

  it("an optional import the user's repository guards is never another indexed repository's code in the pulled file", async () => {
    const out = path.join(dir, 'out', 'fused.py');
    const r = await cli('pull', 'mypkg.fused.Fused', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const text = fs.readFileSync(out, 'utf8');
    assert.ok(!text.includes('HOSTILE_MARKER'), text);
    assert.match(text, /^ {4}import rt_optional_accel$/m, 'the guarded import stays as written');
    const report = JSON.parse(r.out) as { validation?: { tier?: string; equivalence?: { status?: string } } };
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent', r.out);
    assert.ok(!fs.existsSync('/tmp/hostile-ran'), 'the hostile package never ran on the host');
  });

  it("a guard is decided where it is written: an example's plain import is no dependency, and a guard inside a function holds", async () => {
    // the user's block guards the import; a benchmark script under examples/ imports the name plainly
    await writeTree(path.join(dir, 'mine2'), {
      'mypkg2/__init__.py': '',
      'mypkg2/fused.py': USER_BLOCK,
      'examples/bench_fused.py': 'import rt_optional_accel\nfrom mypkg2.fused import Fused\n',
    });
    // a package that does depend on the name (a plain import in its own package), whose block guards its own
    // import inside forward with find_spec
    await writeTree(path.join(dir, 'mine3'), {
      'mypkg3/__init__.py': '',
      'mypkg3/dep.py': 'import rt_optional_accel\n',
      'mypkg3/spec.py': `import importlib.util

import torch
from torch import nn


class Spec(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if importlib.util.find_spec("rt_optional_accel") is not None:
            import rt_optional_accel

            return rt_optional_accel.fast(self.lin, x)
        return self.lin(x)
`,
    });
    for (const repo of ['mine2', 'mine3']) assert.strictEqual((await cli('index', path.join(dir, repo), '--db', db)).code, 0);
    let tried = 0;
    let held = 0;
    for (const [target, name] of [
      ['mypkg2.fused.Fused', 'fused2'],
      ['mypkg3.spec.Spec', 'spec3'],
    ]) {
      tried++;
      const out = path.join(dir, 'out', `${name}.py`);
      const r = await cli('pull', target, '--db', db, '--out', out, '--no-validate', '--json');
      assert.strictEqual(r.code, 0, r.err);
      const text = fs.readFileSync(out, 'utf8');
      assert.ok(!text.includes('HOSTILE_MARKER'), text);
      assert.match(text, /^ +import rt_optional_accel$/m, 'the guarded import stays as written');
      assert.ok(!/inlined from evil/.test(r.out), r.out);
      held++;
    }
    console.log(`      guards: ${tried} attacks tried, ${held} held`);
  });

  it("a repository's observed tests see no folder of another repository they do not import, and store no secret", async () => {
    const r = await cli('observe', 'evil', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const { db: index } = await IndexDb.open(db, { sqlWasm: ASSETS.sqlWasm });
    let errors: string[];
    try {
      errors = index.all('SELECT error FROM observed_entries').map((row) => String(row.error));
    } finally {
      index.close();
    }
    assert.deepStrictEqual(errors, ['RuntimeError: read: FileNotFoundError'], 'the test ran, and the folder was not there');
    assert.ok(!fs.readFileSync(db).includes(SECRET), 'no secret in the index');
  });

  it("a repository's tests cannot make a catalog bomb: the trusted side keeps a few calls a class, a few KB a call", async () => {
    const bomb = path.join(dir, 'bomb');
    const tests: Record<string, string> = {
      'bombpkg/__init__.py': '',
      'bombpkg/layers.py': `from torch import nn


class Bomb(nn.Module):
    def __init__(self, blob='', n=0):
        super().__init__()
        self.lin = nn.Linear(2, 2)
`,
    };
    for (let t = 0; t < 8; t++)
      tests[`tests/test_bomb${t}.py`] = `import gc
import sys
from bombpkg.layers import Bomb


def test_bomb():
    # the worker that records the calls runs this code: its own limits are the repository's to lift (the namespaces
    # of the frames that called it, and whatever the collector lists)
    spaces, frame = [], sys._getframe()
    while frame is not None:
        spaces.append(frame.f_globals)
        frame = frame.f_back
    for o in spaces + gc.get_objects():
        if isinstance(o, dict) and 'PER_CLASS' in o and 'MAX_CALL_CHARS' in o:
            o['PER_CLASS'] = 10 ** 6
            o['MAX_CALL_CHARS'] = 10 ** 8
    for i in range(60):
        Bomb(blob='x' * 15000, n=i)
`;
    await writeTree(bomb, tests);
    assert.strictEqual((await cli('index', bomb, '--db', db)).code, 0);
    const r = await cli('observe', 'bomb', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const [summary] = JSON.parse(r.out) as { entries: number; bytes: number }[];
    assert.strictEqual(summary.entries, 8);
    assert.ok(summary.bytes < 1 << 20, `a catalog of ${summary.bytes} bytes`);
    assert.match(r.err, /observed calls not kept: over the catalog's limits/);
  });

  it('an entry that hides the files it imported still goes stale when one of them changes (the index knows them)', async () => {
    const hider = path.join(dir, 'hider');
    await writeTree(hider, {
      'hidepkg/__init__.py': '',
      'hidepkg/layers.py':
        'from torch import nn\n\n\nclass Hid(nn.Module):\n    def __init__(self, dim=2):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n',
      'tests/test_hid.py': `import sys
from hidepkg.layers import Hid


def test_hid():
    Hid()
    # what the worker reads to say which files the entry imported is the repository's to change
    for m in list(sys.modules.values()):
        if 'hidepkg' in str(getattr(m, '__file__', '')):
            m.__file__ = None
`,
    });
    assert.strictEqual((await cli('index', hider, '--db', db)).code, 0);
    const observe = async (): Promise<{ ran: number; cached: number }> => {
      const r = await cli('observe', 'hider', '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
      assert.strictEqual(r.code, 0, r.err);
      return (JSON.parse(r.out) as { ran: number; cached: number }[])[0];
    };
    assert.strictEqual((await observe()).ran, 1);
    const second = await observe();
    assert.deepStrictEqual([second.ran, second.cached], [0, 1], 'unchanged: kept');
    fs.appendFileSync(path.join(hider, 'hidepkg', 'layers.py'), '\nWIDTH = 3\n');
    assert.strictEqual((await cli('index', hider, '--db', db)).code, 0);
    const again = await observe();
    assert.deepStrictEqual([again.ran, again.cached], [1, 0], 'the changed module makes the entry run again');
  });

  it('an export says which catalogs it carries, and their errors are one short line', async () => {
    const archive = path.join(dir, 'team.tgz');
    const r = await cli('export', '--db', db, '--to', archive);
    assert.strictEqual(r.code, 0, r.err);
    assert.match(r.out, /observed calls of .*evil: 1 entry/);
    const imported = path.join(dir, 'imported', 'index.db');
    assert.strictEqual((await cli('import', archive, '--db', imported)).code, 0);
    const { db: index } = await IndexDb.open(imported, { sqlWasm: ASSETS.sqlWasm });
    try {
      const errors = index.all('SELECT error FROM observed_entries WHERE error IS NOT NULL').map((row) => String(row.error));
      assert.ok(errors.length > 0 && errors.every((e) => e.length <= 120 && !/[\n\r]/.test(e)), JSON.stringify(errors));
    } finally {
      index.close();
    }
  });
});
