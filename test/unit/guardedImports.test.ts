/**
 * Python's rules for guarded imports at every depth: an import inside a function or method, under a handler of the
 * failed import, of a module that exists nowhere is left to run its handler, as a module-level one is; an unguarded
 * one is still named.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from './helpers';

const LAYERS = `from torch import nn


def defaults():
    try:
        from guarded.optional_defaults import factor
    except ImportError:
        return 1
    return factor()


class Guarded(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim * defaults())

    def forward(self, x):
        try:
            import guarded._fast_ops as ops
        except (ModuleNotFoundError, AttributeError):
            ops = None
        return self.lin(x) if ops is None else ops.run(x)


class Unguarded(nn.Module):
    def forward(self, x):
        from guarded._compiled import kernel
        return kernel(x)
`;

describe('guarded imports at every depth', function () {
  this.timeout(120_000);
  let dir: string;
  let db: string;
  before(async () => {
    dir = await tmpdir('nnrag-guarded-');
    db = path.join(dir, 'index.db');
    await writeTree(path.join(dir, 'src'), { 'guarded/__init__.py': '', 'guarded/layers.py': LAYERS });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
  });

  it('a function-local import of a missing module under an ImportError handler stays as written and the block validates', async () => {
    const out = path.join(dir, 'guarded_block.py');
    const r = await cli('pull', 'guarded.layers.Guarded', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.notStrictEqual(report.category, 'native-extension', r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    const text = fs.readFileSync(out, 'utf8');
    assert.match(text, /from guarded\.optional_defaults import factor/);
    assert.match(text, /import guarded\._fast_ops as ops/);
  });

  it('an unguarded one is still named as the module it needs', async () => {
    const r = await cli('pull', 'guarded.layers.Unguarded', '--db', db, '--out', path.join(dir, 'unguarded.py'), '--no-validate', '--json');
    assert.match(r.out + r.err, /guarded\._compiled/);
  });
});
