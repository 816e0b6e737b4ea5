/**
 * The judge against blocks that try to make their own verdict: a copy that decides what "the original" is, a block
 * that looks for signs of validation, and jobs of one warm judge that try to leave something for the next. Each
 * attack below counts in the suite's tally.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { validateFile } from '../../src/core/validate/runner';
import { describeSandbox } from '../../src/core/validate/bubblewrap';
import { ValidatorPool } from '../../src/core/validate/validatorPool';
import { PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../unit/helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

const ORIGINAL = `import torch
from torch import nn


def scale(x):
    return x * 2


class Blk(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return scale(self.lin(x))
`;

describe('the judge cannot be made to say equivalent, told apart, or reached by an earlier job', function () {
  this.timeout(300_000);
  let dir: string;
  let pool: ValidatorPool;
  let tried = 0;
  let held = 0;

  before(async function () {
    const sandbox = await describeSandbox();
    if (sandbox.weaker && !process.env.CI) this.skip();
    dir = await tmpdir('nnrag-judge-');
    await writeTree(path.join(dir, 'orig'), { 'pk/__init__.py': '', 'pk/m.py': ORIGINAL });
    pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 1, 1024, [path.join(dir, 'orig')]);
  });

  after(async () => {
    await pool?.close();
    console.log(`      judge: ${tried} attacks tried, ${held} held`);
  });

  const original = (): { module: string; class: string; path: string; file: string } => ({
    module: 'pk.m',
    class: 'Blk',
    path: path.join(dir, 'orig'),
    file: path.join(dir, 'orig', 'pk', 'm.py'),
  });

  async function judged(name: string, source: string, withOriginal = true): Promise<Awaited<ReturnType<typeof validateFile>>> {
    const file = path.join(dir, `${name}.py`);
    fs.writeFileSync(file, source);
    return validateFile(file, {
      python: PYTHON_WITH_TORCH,
      runner: RUNNER,
      className: 'Blk',
      pool,
      timeoutMs: 60_000,
      original: withOriginal ? original() : undefined,
    });
  }

  it('the unchanged copy is equivalent (the suite can tell a pass)', async () => {
    const r = await judged('same', ORIGINAL);
    assert.strictEqual(r.tier, 'equivalent', JSON.stringify(r));
  });

  for (const [name, trick] of [
    ['aliases', "import sys as _s\n_s.modules['pk.m'] = _s.modules[__name__]\n_s.modules['pk'] = _s.modules[__name__]\n"],
    [
      'patches',
      "import sys as _s, importlib as _i\n_real = _i.import_module\ndef _fake(name, *a, _s=_s, _real=_real, **k):\n    return _s.modules[__name__] if name.startswith('pk') else _real(name, *a, **k)\n_i.import_module = _fake\n",
    ],
    [
      'replaces',
      "import os as _o\ntry:\n    _o.makedirs('/tmp/pk', exist_ok=True); open('/tmp/pk/__init__.py', 'w').close(); open('/tmp/pk/m.py', 'w').write(open(__file__).read())\nexcept OSError: pass\n",
    ],
  ]) {
    it(`a copy that ${name} the original and behaves otherwise is not equivalent`, async () => {
      tried++;
      const forged = ORIGINAL.replace('return x * 2', 'return x * 3').replace(
        'class Blk(nn.Module):\n',
        `class Blk(nn.Module):\n${trick.replace(/^/gm, '    ')}\n`,
      );
      const r = await judged(name, forged);
      assert.notStrictEqual(r.tier, 'equivalent', JSON.stringify(r));
      assert.strictEqual(r.category, 'differs', JSON.stringify(r));
      held++;
    });
  }

  it('a block finds no marker of validation: no variable, path, module name or HOME that names the tool', async () => {
    tried++;
    const probe = `import os, sys
_seen = [k for k in os.environ if 'NNRAG' in k.upper()]
_seen += [p for p in (os.getcwd(), os.environ.get('HOME', ''), os.environ.get('TMPDIR', ''), __file__, *sys.path) if 'nnrag' in p.lower()]
_seen += [m for m in sys.modules if 'nnrag' in m.lower() or 'judge' in m.lower()]
_seen += [d for d in ('/nnrag', '/opt/nnrag') if os.path.exists(d)]
if __name__ != 'probe' or os.path.basename(__file__) != 'probe.py':
    _seen.append(__name__)
if _seen:
    raise RuntimeError(f'validation markers: {_seen}')
${ORIGINAL}`;
    const r = await judged('probe', probe, false);
    assert.strictEqual(r.tier, 'forward', JSON.stringify(r));
    held++;
  });

  it('a later job finds nothing an earlier one left in /tmp, /dev/shm, its home, its folder or the folder above', async () => {
    tried++;
    const plant = `import os
_planted = False
for d in ('/tmp', '/dev/shm', os.environ.get('HOME', '/'), os.getcwd(), os.path.dirname(os.getcwd())):
    try:
        with open(os.path.join(d, 'planted.txt'), 'w') as fh:
            fh.write('from an earlier job')
        os.makedirs(os.path.join(d, 'planted-folder', 'project'), exist_ok=True)
        _planted = True
    except OSError:
        pass
assert _planted, 'nothing could be planted'
${ORIGINAL}`;
    const planted = await judged('plant', plant, false);
    assert.strictEqual(planted.tier, 'forward', JSON.stringify(planted));
    const look = `import os
_found = []
for d in ('/tmp', '/dev/shm', os.environ.get('HOME', '/'), os.getcwd(), os.path.dirname(os.getcwd())):
    try:
        _found += [os.path.join(d, e) for e in os.listdir(d) if e.startswith('planted')]
    except OSError:
        pass
if _found:
    raise RuntimeError(f'left by an earlier job: {_found}')
${ORIGINAL}`;
    const r = await judged('look', look, false);
    assert.strictEqual(r.tier, 'forward', JSON.stringify(r));
    held++;
  });
});
