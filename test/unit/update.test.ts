import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { merge3 } from '../../src/core/emit/merge';
import { cli, ROOT, tmpdir } from './helpers';

describe('three-way merge and nn-rag update', function () {
  this.timeout(60_000);

  it('merges edits to different regions, takes a change made on both sides once, and marks a real conflict', () => {
    const base = 'a\nb\nc\nd\ne';
    assert.deepStrictEqual(merge3(base, 'a\nB\nc\nd\ne', 'a\nb\nc\nD\ne'), { text: 'a\nB\nc\nD\ne', conflicts: 0 });
    assert.deepStrictEqual(merge3(base, 'a\nb\nX\nd\ne', 'a\nb\nX\nd\ne'), { text: 'a\nb\nX\nd\ne', conflicts: 0 });
    assert.deepStrictEqual(merge3(base, 'a\nb\nc\nd\ne\nmine', 'top\na\nb\nc\nd\ne'), { text: 'top\na\nb\nc\nd\ne\nmine', conflicts: 0 });
    assert.deepStrictEqual(merge3(base, 'a\nb\nd\ne', 'a\nb\nc\nd\ne'), { text: 'a\nb\nd\ne', conflicts: 0 }, 'a deletion on one side');
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
    assert.deepStrictEqual(merged, { text: expected.join('\n'), conflicts: 0 });
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
    const r = await cli('update', file, '--db', db, '--json');
    assert.strictEqual(r.code, 0, r.out + r.err);
    assert.strictEqual(JSON.parse(r.out).state, 'merged');
    const after = await fsp.readFile(file, 'utf8');
    assert.ok(after.includes('self.act = nn.GELU()  # mine'), 'the edit is kept');
    assert.ok(after.includes('rd_ratio=0.125'), 'the upstream change is in');
    assert.strictEqual((await cli('status', file, '--db', db)).code, 0, 'up to date again');
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
  });
});
