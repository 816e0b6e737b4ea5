/**
 * Templates (python-runner's supervise.Template): a warm judge imports the original's package once, in a process
 * its original's workers fork from. What that process may run is the original's side only: it is stopped while any
 * other worker runs, and nothing it starts outlives the worker that follows it.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { validateFile } from '../../src/core/validate/runner';
import { describeSandbox } from '../../src/core/validate/bubblewrap';
import { ValidatorPool } from '../../src/core/validate/validatorPool';
import { PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../unit/helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

const BLOCK = (check: string): string => `import os
import torch
from torch import nn


class Blk(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
${check}        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
${FORWARD}`;

const FORWARD = `        # a file the original's package keeps writing (in the original's side only) changes this copy's output
        seen = any(os.path.exists(os.path.join(d, 'intruder.txt')) for d in ('/tmp', os.getcwd(), os.environ.get('HOME', '/')))
        return self.lin(x) * (3 if seen and INTRUDED else 1)
`;

/** The package's import starts a thread that keeps writing intruder.txt where the copy looks. */
const THREAD_INIT = `import os, threading, time
IMPORTED_IN = os.getpid()


def _write():
    while True:
        for d in ('/tmp', os.getcwd(), os.environ.get('HOME', '/')):
            try:
                with open(os.path.join(d, 'intruder.txt'), 'w') as fh:
                    fh.write('from the original')
            except OSError:
                pass
        time.sleep(0.002)


threading.Thread(target=_write, daemon=True).start()
`;

/** The same writer in a process of its own, out of its parent's reach (forked twice). */
const PROCESS_INIT = `${THREAD_INIT.replace(
  'threading.Thread(target=_write, daemon=True).start()',
  `if os.fork() == 0:
    if os.fork() == 0:
        _write()
    os._exit(0)`,
)}`;

describe('a judge imports the original package once, in a template that runs nothing while the other side does', function () {
  this.timeout(300_000);
  let dir: string;
  let pool: ValidatorPool;

  before(async function () {
    const sandbox = await describeSandbox();
    if (sandbox.weaker && !process.env.CI) this.skip();
    dir = await tmpdir('nnrag-templates-');
    const checked = BLOCK("        if pk.IMPORTED_IN == os.getpid():\n            raise RuntimeError('the package was imported in this worker')\n").replace(
      'import os\n',
      'import os\nimport pk\n',
    );
    const original = (text: string): string => text.replace('seen and INTRUDED', 'False');
    await writeTree(path.join(dir, 'orig'), {
      'pk/__init__.py': 'import os\nIMPORTED_IN = os.getpid()\n',
      'pk/m.py': original(checked),
      'ik/__init__.py': THREAD_INIT,
      'ik/m.py': original(checked.replace('import pk\n', 'import ik as pk\n')),
      // a template whose imports leave a process is not used: its workers import for themselves, as before
      'jk/__init__.py': PROCESS_INIT,
      'jk/m.py': original(BLOCK('')),
    });
    pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 1, 1024, [path.join(dir, 'orig')]);
  });

  after(async () => {
    await pool?.close();
  });

  async function judged(name: string, pkg: string): Promise<Awaited<ReturnType<typeof validateFile>>> {
    const file = path.join(dir, `${name}.py`);
    fs.writeFileSync(file, `INTRUDED = True\n${BLOCK('')}`);
    return validateFile(file, {
      python: PYTHON_WITH_TORCH,
      runner: RUNNER,
      className: 'Blk',
      pool,
      timeoutMs: 60_000,
      original: { module: `${pkg}.m`, class: 'Blk', path: path.join(dir, 'orig'), file: path.join(dir, 'orig', pkg, 'm.py') },
    });
  }

  it("the original's package is imported before its workers start, and again for no later job", async () => {
    for (const name of ['first', 'second']) {
      const r = await judged(name, 'pk');
      assert.strictEqual(r.tier, 'equivalent', JSON.stringify(r));
      assert.strictEqual(r.equivalence?.status, 'equivalent', JSON.stringify(r.equivalence));
    }
  });

  it("a thread the original's package starts in its template never runs while the copy's worker does", async () => {
    for (const name of ['watch1', 'watch2']) {
      const r = await judged(name, 'ik');
      assert.strictEqual(r.equivalence?.status, 'equivalent', JSON.stringify(r));
    }
  });

  it("a process the original's package starts is gone before the copy's worker starts", async () => {
    for (const name of ['watch3', 'watch4']) {
      const r = await judged(name, 'jk');
      assert.strictEqual(r.equivalence?.status, 'equivalent', JSON.stringify(r));
    }
  });
});
