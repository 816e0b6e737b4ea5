/**
 * A verdict does not change with the machine's load: a job's limit counts its workers' own time (wall time less what
 * they waited for a CPU), so a batch beside CPU hogs reaches the verdicts a quiet one does.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { validateFile } from '../../src/core/validate/runner';
import { ValidatorPool } from '../../src/core/validate/validatorPool';
import { hasTorch, PYTHON_WITH_TORCH, ROOT, tmpdir } from './helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

/** A block whose every construction does a fixed amount of work (a few tenths of a second of one CPU). */
const BUSY = `import torch
from torch import nn


class Busy(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        total = 0
        for i in range(8_000_000):
            total += i & 7
        self.lin = nn.Linear(dim, dim)
        self.total = total

    def forward(self, x):
        return self.lin(x)
`;

describe('verdicts that do not depend on the machine load', function () {
  this.timeout(600_000);
  let dir: string;
  let pool: ValidatorPool;

  const cgroup = process.env.NNRAG_CGROUP;

  before(async function () {
    if (!hasTorch()) this.skip();
    // the judge shares the CPU with the hogs as a process of this one's (a cgroup of its own would shield it from
    // them where the CPU controller is on, and not on every machine)
    process.env.NNRAG_CGROUP = 'off';
    dir = await tmpdir('nnrag-load-');
    fs.writeFileSync(path.join(dir, 'busy.py'), BUSY);
    pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 1);
  });

  after(async () => {
    await pool?.close();
    if (cgroup === undefined) delete process.env.NNRAG_CGROUP;
    else process.env.NNRAG_CGROUP = cgroup;
  });

  const judged = async (): Promise<{ tier: string | null; category?: string; seconds?: number }> =>
    validateFile(path.join(dir, 'busy.py'), { python: PYTHON_WITH_TORCH, runner: RUNNER, className: 'Busy', pool, timeoutMs: 4_000 });

  it('a block judged beside CPU hogs (three times as many busy processes as cores, given more CPU weight) gets the verdict it gets alone', async () => {
    const quiet = await judged();
    assert.strictEqual(quiet.tier, 'forward', JSON.stringify(quiet));
    const hogs: ChildProcess[] = [];
    try {
      // in a session of their own with ten times the CPU weight of another (a worker runs in a session of its own
      // too, which autogroup scheduling would otherwise shield from them)
      for (let i = 0; i < 6; i++) hogs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore', detached: true }));
      for (const h of hogs) {
        try {
          fs.writeFileSync(`/proc/${h.pid}/autogroup`, '-10');
        } catch {
          // not root: the hogs compete with their usual weight
        }
      }
      const loaded = await judged();
      assert.deepStrictEqual([loaded.tier, loaded.category], [quiet.tier, quiet.category], JSON.stringify(loaded));
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
    }
  });
});
