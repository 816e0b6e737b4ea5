import * as assert from 'assert';
import * as path from 'path';
import { ValidatorPool } from '../../../src/core/validate/validatorPool';
import { validateFile } from '../../../src/core/validate/runner';
import { PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

const GOOD = `import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        assert torch.get_default_dtype() == torch.float32, "a previous block's global state leaked in"
        self.w = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.w
`;

const HANGS = `import torch
from torch import nn


class Hang(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        while True:
            pass
`;

const LEAKS_STATE = `import torch
from torch import nn

torch.set_default_dtype(torch.float64)


class Wide(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)
`;

describe('validation in a pool of warm interpreters', function () {
  this.timeout(120_000);

  it('validates concurrently in forked children, like a fresh process would, kills a block that hangs, and keeps no state between blocks', async () => {
    const dir = await tmpdir('nnrag-pool-test-');
    await writeTree(dir, { 'good.py': GOOD, 'hangs.py': HANGS, 'leaks.py': LEAKS_STATE });
    const pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 2);
    try {
      const opts = { python: PYTHON_WITH_TORCH, runner: RUNNER, timeoutMs: 60_000, pool };
      const [good, hang, leaks] = await Promise.all([
        validateFile(path.join(dir, 'good.py'), { ...opts, className: 'Scale' }),
        validateFile(path.join(dir, 'hangs.py'), { ...opts, className: 'Hang', timeoutMs: 8_000 }),
        validateFile(path.join(dir, 'leaks.py'), { ...opts, className: 'Wide' }),
      ]);
      assert.strictEqual(good.tier, 'forward', good.message);
      assert.match(good.sandbox ?? '', /bubblewrap/);
      assert.strictEqual(hang.category, 'timeout');
      assert.strictEqual(hang.tier, 'instantiated', 'the last tier reached before the hang');
      assert.strictEqual(leaks.tier, 'forward', leaks.message);
      // the block that changed torch's default dtype did it in its own child: the next block in the same
      // validator sees float32
      const single = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 1);
      let again;
      try {
        const first = await validateFile(path.join(dir, 'leaks.py'), { ...opts, pool: single, className: 'Wide' });
        assert.strictEqual(first.tier, 'forward');
        again = await validateFile(path.join(dir, 'good.py'), { ...opts, pool: single, className: 'Scale' });
        assert.strictEqual(again.tier, 'forward', again.message);
      } finally {
        await single.close();
      }
      const fresh = await validateFile(path.join(dir, 'good.py'), { python: PYTHON_WITH_TORCH, runner: RUNNER, className: 'Scale' });
      assert.deepStrictEqual([again.ok, again.tier, again.input_shapes, again.output_shapes], [fresh.ok, fresh.tier, fresh.input_shapes, fresh.output_shapes]);
    } finally {
      await pool.close();
    }
    await assert.rejects(pool.validate(path.join(dir, 'good.py'), { python: PYTHON_WITH_TORCH, runner: RUNNER }), /closed/);
  });

  it('reports a missing interpreter clearly', async () => {
    const pool = new ValidatorPool('/nonexistent/python3', RUNNER, 1);
    try {
      await assert.rejects(
        pool.validate(path.join(ROOT, 'examples', 'tinyblocks', 'tinyblocks', 'blocks.py'), { python: '/nonexistent/python3', runner: RUNNER }),
        /not found|cannot run|ended unexpectedly/,
      );
    } finally {
      await pool.close();
    }
  });
});
