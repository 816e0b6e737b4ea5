import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { merge3 } from '../../../src/core/emit/merge';
import { withValidation } from '../../../src/core/pull/update';
import type { ValidationReport } from '../../../src/core/validate/runner';
import { cli, hasTorch, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

describe('three-way merge and nn-rag update', function () {
  this.timeout(60_000);

  it('merges edits to different regions, takes a change made on both sides once, and marks a real conflict', () => {
    const base = 'a\nb\nc\nd\ne';
    assert.deepStrictEqual(merge3(base, 'a\nB\nc\nd\ne', 'a\nb\nc\nD\ne'), { text: 'a\nB\nc\nD\ne', conflicts: 0, upstreamChanges: 1, yourEdits: 1 });
    assert.deepStrictEqual(merge3(base, 'a\nb\nX\nd\ne', 'a\nb\nX\nd\ne'), { text: 'a\nb\nX\nd\ne', conflicts: 0, upstreamChanges: 1, yourEdits: 0 });
    assert.deepStrictEqual(merge3(base, 'a\nb\nc\nd\ne\nmine', 'top\na\nb\nc\nd\ne'), {
      text: 'top\na\nb\nc\nd\ne\nmine',
      conflicts: 0,
      upstreamChanges: 1,
      yourEdits: 1,
    });
    assert.deepStrictEqual(
      merge3(base, 'a\nb\nd\ne', 'a\nb\nc\nd\ne'),
      { text: 'a\nb\nd\ne', conflicts: 0, upstreamChanges: 0, yourEdits: 1 },
      'a deletion on one side',
    );
    const conflict = merge3(base, 'a\nOURS\nc\nd\ne', 'a\nTHEIRS\nc\nd\ne');
    assert.strictEqual(conflict.conflicts, 1);
    assert.strictEqual(conflict.text, 'a\n<<<<<<< yours\nOURS\n=======\nTHEIRS\n>>>>>>> upstream\nc\nd\ne');
  });

  it('merges a 23,000-line file of repeated lines with an edit on each side, keeping both and the rest in order', () => {
    const base = Array.from({ length: 23_000 }, (_, i) => (i % 7 === 0 ? '' : i % 11 === 0 ? '        return x' : `    x = self.conv${i % 50}(x)`));
    const ours = base.slice();
    ours[500] = '    # yours';
    const theirs = base.slice();
    theirs.splice(20_000, 1, '    # upstream', '    # and more');
    const merged = merge3(base.join('\n'), ours.join('\n'), theirs.join('\n'));
    const expected = base.slice();
    expected[500] = '    # yours';
    expected.splice(20_000, 1, '    # upstream', '    # and more');
    assert.deepStrictEqual(merged, { text: expected.join('\n'), conflicts: 0, upstreamChanges: 1, yourEdits: 1 });
  });

  async function setup(): Promise<{ repo: string; db: string; file: string }> {
    const work = await tmpdir('nnrag-update-');
    const repo = path.join(work, 'tinyblocks');
    await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), repo, { recursive: true });
    const db = path.join(work, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const file = path.join(work, 'blocks', 'residual_block.py');
    assert.strictEqual((await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', file, '--no-validate')).code, 0);
    return { repo, db, file };
  }

  const se = (repo: string): string => path.join(repo, 'tinyblocks', 'layers', 'se.py');

  it('re-pulls an edited file and keeps the edits that do not collide with upstream', async () => {
    const { repo, db, file } = await setup();
    assert.match((await cli('update', file, '--db', db)).out, /up to date/);
    // the user changes the block, upstream changes a dependency
    const pulled = await fsp.readFile(file, 'utf8');
    await fsp.writeFile(file, pulled.replace('self.act = nn.ReLU(inplace=True)', 'self.act = nn.GELU()  # mine'));
    await fsp.writeFile(se(repo), (await fsp.readFile(se(repo), 'utf8')).replace('rd_ratio=0.25', 'rd_ratio=0.125'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    assert.strictEqual((await cli('status', file, '--db', db)).code, 1, 'status sees the upstream change');
    // --dry-run: the change as a diff, nothing written
    const before = await fsp.readFile(file, 'utf8');
    const dry = await cli('update', file, '--db', db, '--dry-run');
    assert.strictEqual(dry.code, 0, dry.out + dry.err);
    assert.match(dry.out, /^-.*rd_ratio=0\.25/m);
    assert.match(dry.out, /^\+.*rd_ratio=0\.125/m);
    assert.match(dry.out, /would be updated from upstream, your edits kept/);
    assert.strictEqual(await fsp.readFile(file, 'utf8'), before);
    // the update validates the merged file again (up to forward: with your edits it is meant to differ from upstream)
    const r = await cli('update', file, '--db', db, '--json', '--python', PYTHON_WITH_TORCH);
    assert.strictEqual(r.code, 0, r.out + r.err);
    const line = JSON.parse(r.out);
    assert.strictEqual(line.state, 'merged');
    assert.deepStrictEqual([line.validation.ok, line.validation.tier], [true, 'forward']);
    const after = await fsp.readFile(file, 'utf8');
    assert.ok(after.includes('self.act = nn.GELU()  # mine'), 'the edit is kept');
    assert.ok(after.includes('rd_ratio=0.125'), 'the upstream change is in');
    assert.strictEqual((await cli('status', file, '--db', db)).code, 0, 'up to date again');
  });

  it("a verdict goes stale when the body changes after it, and is the file's again once validated", async () => {
    const { file, db } = await setup();
    const judged = (text: string): string => withValidation(text, { ok: true, tier: 'equivalent' } as ValidationReport);
    const stale = async (): Promise<boolean> => (JSON.parse((await cli('status', file, '--db', db, '--json')).out) as { stale: boolean }[])[0].stale;
    await fsp.writeFile(file, judged(await fsp.readFile(file, 'utf8')));
    assert.strictEqual(await stale(), false);
    const edited = (await fsp.readFile(file, 'utf8')).replace('self.act = nn.ReLU(inplace=True)', 'self.act = nn.GELU()  # mine');
    await fsp.writeFile(file, edited);
    assert.strictEqual(await stale(), true, 'the verdict was on the body before the edit');
    assert.match((await cli('status', file, '--db', db)).out, /edited locally; edited, not validated since/);
    await fsp.writeFile(file, judged(edited));
    assert.strictEqual(await stale(), false, "validated after the edit: its verdict is the file's");
    await fsp.writeFile(file, `${judged(edited)}\n# another edit\n`);
    assert.strictEqual(await stale(), true);
  });

  it('leaves conflict markers and exits 1 when the edit and upstream change the same lines', async () => {
    const { repo, db, file } = await setup();
    const pulled = await fsp.readFile(file, 'utf8');
    await fsp.writeFile(file, pulled.replace('rd_ratio=0.25', 'rd_ratio=0.5'));
    await fsp.writeFile(se(repo), (await fsp.readFile(se(repo), 'utf8')).replace('rd_ratio=0.25', 'rd_ratio=0.125'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const r = await cli('update', file, '--db', db);
    assert.strictEqual(r.code, 1);
    assert.match(r.out, /1 conflict between your edits and upstream/);
    const after = await fsp.readFile(file, 'utf8');
    assert.match(after, /<<<<<<< yours\n.*rd_ratio=0\.5.*\n=======\n.*rd_ratio=0\.125.*\n>>>>>>> upstream/);
    // status names the conflict and the edit (it said "up to date" over conflict markers before)
    const s = await cli('status', path.dirname(file), '--db', db, '--json');
    assert.strictEqual(s.code, 1);
    const [row] = JSON.parse(s.out);
    assert.deepStrictEqual([row.state, row.conflicts, row.edited], ['conflicted', 1, true]);
  });

  it('says which pulled files were edited, and updates a folder of them (several files at once)', async () => {
    const { repo, db, file } = await setup();
    const other = path.join(path.dirname(file), 'se_block.py');
    assert.strictEqual((await cli('pull', 'tinyblocks.layers.se.SqueezeExcite', '--db', db, '--out', other, '--no-validate')).code, 0);
    await fsp.writeFile(file, (await fsp.readFile(file, 'utf8')).replace('self.act = nn.ReLU(inplace=True)', 'self.act = nn.GELU()  # mine'));
    const s = await cli('status', path.dirname(file), '--db', db);
    assert.strictEqual(s.code, 0, 'edits alone are not out of date');
    assert.match(s.out, /residual_block\.py .* up to date; edited locally/);
    assert.match(s.out, /se_block\.py .* up to date\n/);
    await fsp.writeFile(se(repo), (await fsp.readFile(se(repo), 'utf8')).replace('rd_ratio=0.25', 'rd_ratio=0.125'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const r = await cli('update', path.dirname(file), '--db', db, '--no-validate');
    assert.strictEqual(r.code, 0, r.out + r.err);
    assert.match(r.out, /residual_block\.py: updated from upstream, your edits kept/);
    assert.match(r.out, /se_block\.py: updated from upstream\n/);
    for (const f of [file, other]) assert.match(await fsp.readFile(f, 'utf8'), /rd_ratio=0\.125/);
    // a pulled file that cannot be updated (its header damaged) is named, and does not stop the others
    const pulled = await fsp.readFile(other, 'utf8');
    await fsp.writeFile(path.join(path.dirname(file), 'broken.py'), pulled.replace('# nnrag-provenance: {', '# nnrag-provenance: {oops'));
    await fsp.writeFile(se(repo), (await fsp.readFile(se(repo), 'utf8')).replace('rd_ratio=0.125', 'rd_ratio=0.0625'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const partial = await cli('update', path.dirname(file), '--db', db, '--no-validate');
    assert.strictEqual(partial.code, 1);
    assert.match(partial.out, /broken\.py: not updated: .*damaged NN-RAG header/);
    for (const f of [file, other]) assert.match(await fsp.readFile(f, 'utf8'), /rd_ratio=0\.0625/);
  });

  it('shows what a pull would write as a diff, and writes nothing (pull --dry-run)', async () => {
    const { db, file } = await setup();
    const fresh = path.join(path.dirname(file), 'new_block.py');
    const r = await cli('pull', 'tinyblocks.layers.se.SqueezeExcite', '--db', db, '--out', fresh, '--dry-run');
    assert.strictEqual(r.code, 0, r.err);
    assert.match(r.out, /^--- \/dev\/null\tnew file$/m);
    assert.match(r.out, /^\+class SqueezeExcite\(nn\.Module\):$/m);
    await assert.rejects(fsp.access(fresh));
    assert.match((await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', file, '--dry-run')).out, /unchanged/);
    await fsp.writeFile(file, (await fsp.readFile(file, 'utf8')).replace('self.act = nn.ReLU(inplace=True)', 'self.act = nn.GELU()  # mine'));
    const edited = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', file, '--dry-run');
    assert.match(edited.out, /^-.*nn\.GELU\(\)  # mine$/m);
    assert.match(edited.out, /^\+.*nn\.ReLU\(inplace=True\)$/m);
    // without --force the edited file is not replaced
    const refused = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', file, '--no-validate');
    assert.notStrictEqual(refused.code, 0);
    assert.match(refused.err, /edited since it was pulled .*--force replaces it/);
  });
});

describe('several blocks pulled together (pull A B C --out-dir D)', function () {
  this.timeout(180_000);

  it('writes the helpers the blocks share once, in _nnrag_common.py, and each file imports them and validates', async function () {
    if (!hasTorch()) this.skip();
    const work = await tmpdir('nnrag-together-');
    const db = path.join(work, 'index.db');
    assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db)).code, 0);
    const dir = path.join(work, 'blocks');
    const targets = ['tinyblocks.blocks.InvertedResidual', 'tinyblocks.blocks.ResidualBlock', 'tinyblocks.blocks.TransformerBlock'];
    const r = await cli('pull', ...targets, '--out-dir', dir, '--db', db, '--json', '--python', PYTHON_WITH_TORCH);
    assert.strictEqual(r.code, 0, r.err + r.out);
    const { shared, reports } = JSON.parse(r.out) as {
      shared: { file: string; names: string[] };
      reports: { status: string; tier: string | null; out: string }[];
    };
    assert.strictEqual(shared.file, path.join(dir, '_nnrag_common.py'));
    assert.deepStrictEqual(
      reports.map((x) => path.basename(x.out)),
      ['inverted_residual.py', 'residual_block.py', 'transformer_block.py'],
    );
    assert.deepStrictEqual(
      reports.map((x) => [x.status, x.tier]),
      Array(3).fill(['validated', 'equivalent']),
    );
    // ConvNormAct (needed by two of the blocks) is defined once in the folder, in the shared module
    const texts = await Promise.all(
      ['_nnrag_common.py', 'inverted_residual.py', 'residual_block.py', 'transformer_block.py'].map((f) => fsp.readFile(path.join(dir, f), 'utf8')),
    );
    assert.deepStrictEqual(
      texts.map((t) => (t.match(/^class ConvNormAct\(/gm) ?? []).length),
      [1, 0, 0, 0],
    );
    assert.match(texts[2], /^try:\n {4}from \._nnrag_common import .*ConvNormAct/m);
    assert.ok(shared.names.includes('ConvNormAct'));
    // status reads them as pulled files, up to date
    assert.match((await cli('status', dir, '--db', db)).out, /residual_block\.py +tinyblocks:tinyblocks\.blocks\.ResidualBlock +up to date/);
    // an update pulls the block again importing the same shared definitions: nothing to do
    assert.match(
      (await cli('update', path.join(dir, 'residual_block.py'), '--db', db, '--no-validate')).out,
      /up to date with tinyblocks:tinyblocks\.blocks\.ResidualBlock/,
    );
    // pulled together again: the shared module is ours and replaced; edited, it is not without --force
    assert.strictEqual((await cli('pull', ...targets, '--out-dir', dir, '--db', db, '--no-validate')).code, 0);
    await fsp.appendFile(path.join(dir, '_nnrag_common.py'), '\n# mine\n');
    const refused = await cli('pull', ...targets, '--out-dir', dir, '--db', db, '--no-validate');
    assert.strictEqual(refused.code, 2);
    assert.match(refused.err, /_nnrag_common\.py was edited since NN-RAG wrote it; --force replaces it/);
    assert.match(await fsp.readFile(path.join(dir, '_nnrag_common.py'), 'utf8'), /# mine\n$/);
  });
});

describe('upstream changes named by definition', function () {
  this.timeout(60_000);

  it('lists only the definitions whose own text changed, not every definition of a changed file', async () => {
    const dir = await tmpdir('nnrag-defs-');
    const repo = path.join(dir, 'defs');
    const layers =
      'from torch import nn\n\n\nclass Swish(nn.Module):\n    def forward(self, x):\n        return x * x.sigmoid()\n\n\nclass SqueezeExcite(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.act = Swish()\n        self.fc = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return x * self.act(self.fc(x))\n';
    await writeTree(repo, { 'defs/__init__.py': '', 'defs/layers.py': layers });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const file = path.join(dir, 'out', 'se.py');
    assert.strictEqual((await cli('pull', 'defs.layers.SqueezeExcite', '--db', db, '--out', file, '--no-validate')).code, 0);
    // only SqueezeExcite changes; Swish, in the same file, does not
    await fsp.writeFile(path.join(repo, 'defs', 'layers.py'), layers.replace('self.fc = nn.Linear(dim, dim)', 'self.fc = nn.Linear(dim, dim, bias=False)'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const s = JSON.parse((await cli('status', file, '--db', db, '--json')).out) as { state: string; changed: { names: string[] }[] }[];
    assert.strictEqual(s[0].state, 'changed');
    assert.deepStrictEqual(
      s[0].changed.map((c) => c.names),
      [['SqueezeExcite']],
    );
  });

  it('a block whose own text (and what it uses) did not change is up to date when another class of its file changed', async () => {
    const dir = await tmpdir('nnrag-defs-');
    const repo = path.join(dir, 'defs');
    const layers =
      'from torch import nn\n\n\nclass Swish(nn.Module):\n    def forward(self, x):\n        return x * x.sigmoid()\n\n\nclass Other(nn.Module):\n    def forward(self, x):\n        return x + 1\n';
    await writeTree(repo, { 'defs/__init__.py': '', 'defs/layers.py': layers });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const file = path.join(dir, 'out', 'swish.py');
    assert.strictEqual((await cli('pull', 'defs.layers.Swish', '--db', db, '--out', file, '--no-validate')).code, 0);
    await fsp.writeFile(path.join(repo, 'defs', 'layers.py'), layers.replace('return x + 1', 'return x + 2'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const status = async (): Promise<{ state: string; changed: { names: string[] }[] }> =>
      (JSON.parse((await cli('status', file, '--db', db, '--json')).out) as { state: string; changed: { names: string[] }[] }[])[0];
    assert.deepStrictEqual(await status(), { ...(await status()), state: 'up-to-date', changed: [] });
    // its own text changes: now it is said, by name
    await fsp.writeFile(path.join(repo, 'defs', 'layers.py'), layers.replace('x * x.sigmoid()', 'x * x.sigmoid() * 2'));
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const s = await status();
    assert.deepStrictEqual([s.state, s.changed.map((c) => c.names)], ['changed', [['Swish']]]);
  });
});
