/**
 * A verdict does not change with the machine's load: a job's limit counts its workers' own time (wall time less what
 * they waited for a CPU), so a batch beside CPU hogs reaches the verdicts a quiet one does.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { validateFile } from '../../../src/core/validate/runner';
import { ValidatorPool } from '../../../src/core/validate/validatorPool';
import { cli, hasTorch, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

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

/** A block no guessed argument builds (its spec needs a width); the repository's builder does. Each build works a while. */
const BUILT_BY_BUILDER = {
  'zoo/__init__.py': '',
  'zoo/net.py': `import torch
from torch import nn


def _work():
    total = 0
    for i in range(3_000_000):
        total += i & 7
    return total


class Spec:
    def __init__(self, width):
        self.width = width


class Net(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.total = _work()
        self.lin = nn.Linear(spec.width, 2)

    def forward(self, x):
        return self.lin(x)


def net_small():
    return Net(Spec(4))
`,
};

/** CPU hogs in sessions of their own with ten times a usual CPU weight, for as long as `during` runs. */
async function besideHogs<T>(during: () => Promise<T>): Promise<T> {
  const hogs: ChildProcess[] = [];
  try {
    // (a worker runs in a session of its own too, which autogroup scheduling would otherwise shield from them)
    for (let i = 0; i < 6; i++) hogs.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore', detached: true }));
    for (const h of hogs) {
      try {
        fs.writeFileSync(`/proc/${h.pid}/autogroup`, '-10');
      } catch {
        // not root: the hogs compete with their usual weight
      }
    }
    return await during();
  } finally {
    for (const h of hogs) h.kill('SIGKILL');
  }
}

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
    const loaded = await besideHogs(judged);
    assert.deepStrictEqual([loaded.tier, loaded.category], [quiet.tier, quiet.category], JSON.stringify(loaded));
  });

  it("a pull's stages share its time limit in the judge's own time: beside the hogs the builder is still tried", async () => {
    const repo = path.join(dir, 'zoo-repo');
    await writeTree(repo, BUILT_BY_BUILDER);
    const db = path.join(dir, 'zoo.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const pull = async (out: string): Promise<{ tier: string | null; category?: string; judged?: { stage: string }[]; message?: string }> =>
      JSON.parse(
        (await cli('pull', 'zoo.net.Net', '--db', db, '--out', path.join(dir, out), '--python', PYTHON_WITH_TORCH, '--timeout', '20', '--json')).out,
      ) as { tier: string | null; category?: string; judged?: { stage: string }[] };
    const quiet = await pull('quiet.py');
    assert.deepStrictEqual([quiet.tier, quiet.judged?.map((j) => j.stage)], ['equivalent', ['judge', 'builder', 'replay']], JSON.stringify(quiet));
    // (before: the limit was wall time, and under load "the repository's builders net_small() were not tried")
    const loaded = await besideHogs(() => pull('loaded.py'));
    assert.deepStrictEqual(
      [loaded.tier, loaded.category, loaded.judged?.map((j) => j.stage)],
      [quiet.tier, quiet.category, quiet.judged?.map((j) => j.stage)],
      JSON.stringify(loaded),
    );
  });
});
