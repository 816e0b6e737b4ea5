/**
 * Python's rules for imports inside functions: one of a module that exists nowhere stays in its function as written
 * (under a handler of the failed import, the handler runs, as at module level; without one, it fails only where the
 * code runs it, as the original's does, and is then named as a compiled module).
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';

const LAYERS = `import torch
from torch import nn


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


class ExportAware(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            from guarded.core.export import dynamic_clip_for_onnx
            x = dynamic_clip_for_onnx(x)
        return self.lin(x)


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

  it('an unguarded one stays in its function too, named in the header, and is named as a compiled module when the block runs it', async () => {
    const out = path.join(dir, 'unguarded.py');
    const r = await cli('pull', 'guarded.layers.Unguarded', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out) as { category: string; message: string };
    assert.strictEqual(report.category, 'native-extension', r.out);
    assert.match(report.message, /guarded\._compiled/);
    assert.match(fs.readFileSync(out, 'utf8'), /^# imported inside functions as written, found nowhere \(compiled, or gone\): guarded\._compiled\.kernel;/m);
  });

  it('one the original never runs (an export path an old version had) leaves the block equivalent', async () => {
    const out = path.join(dir, 'export_aware.py');
    const r = await cli('pull', 'guarded.layers.ExportAware', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual((JSON.parse(r.out) as { tier: string }).tier, 'equivalent', r.out);
    assert.match(fs.readFileSync(out, 'utf8'), /^ {12}from guarded\.core\.export import dynamic_clip_for_onnx$/m);
  });
});
