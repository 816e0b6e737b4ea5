/**
 * A batch in parts for many machines: `pull --all --shard K/N` (or `auto` from Slurm's or Kubernetes' environment)
 * takes a stable part of the targets and writes its own report without saving the index; `report --merge` makes one
 * report and records every verdict in the index, block for block as one machine's run.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { inShard, parseShard } from '../../../src/core/pull/shard';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

describe('shards of a batch pull', function () {
  this.timeout(600_000);

  it("reads K/N and the engines' environments, and refuses what does not name a shard", () => {
    assert.deepStrictEqual(parseShard('2/4', {}), { index: 1, count: 4 });
    assert.deepStrictEqual(parseShard('auto', { SLURM_ARRAY_TASK_ID: '3', SLURM_ARRAY_TASK_COUNT: '4' }), { index: 3, count: 4 });
    assert.deepStrictEqual(parseShard('auto', { SLURM_ARRAY_TASK_ID: '4', SLURM_ARRAY_TASK_COUNT: '4', SLURM_ARRAY_TASK_MIN: '1' }), { index: 3, count: 4 });
    assert.deepStrictEqual(parseShard('auto', { JOB_COMPLETION_INDEX: '0' }, 3), { index: 0, count: 3 });
    assert.throws(() => parseShard('auto', { JOB_COMPLETION_INDEX: '0' }), /--shard-count/);
    assert.throws(() => parseShard('auto', {}), /no shard in the environment/);
    assert.throws(() => parseShard('5/4', {}), /does not exist/);
    assert.throws(() => parseShard('0/4', {}), /does not exist/);
    assert.throws(() => parseShard('two', {}), /K\/N/);
  });

  it('puts every target in exactly one shard, and a new target moves none of the others', () => {
    const targets = Array.from({ length: 500 }, (_, i) => `repo${i % 7}:pkg.mod${i}.Block${i}`);
    const parts = [0, 1, 2, 3].map((index) => targets.filter((t) => inShard(t, { index, count: 4 })));
    assert.strictEqual(
      parts.reduce((n, p) => n + p.length, 0),
      targets.length,
    );
    for (const p of parts) assert.ok(p.length > 80 && p.length < 170, `${p.length} of 500 in one of 4 shards`);
    const more = [...targets, 'newrepo:x.y.New'];
    const again = [0, 1, 2, 3].map((index) => more.filter((t) => inShard(t, { index, count: 4 })));
    for (const [k, p] of parts.entries())
      assert.deepStrictEqual(
        again[k].filter((t) => t !== 'newrepo:x.y.New'),
        p,
      );
  });

  it('two shards and their merge give, block for block, what one machine gives, and the merged verdicts are searchable', async () => {
    const dir = await tmpdir('nnrag-shard-');
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db)).code, 0);
    const before = fs.readFileSync(db);
    const shards = [];
    for (const k of [1, 2]) {
      const r = await cli(
        'pull',
        '--all',
        '--db',
        db,
        '--out-dir',
        path.join(dir, 'out'),
        '--python',
        PYTHON_WITH_TORCH,
        '--shard',
        `${k}/2`,
        '--jobs',
        '1',
        '--json',
      );
      assert.ok(r.code === 0 || r.code === 1, r.err);
      shards.push(JSON.parse(r.out) as { attempted: number; report: string });
      assert.strictEqual(path.basename(shards[k - 1].report), `report.shard-${k}-of-2.json`);
    }
    assert.ok(fs.readFileSync(db).equals(before), 'a shard saves nothing to the index');
    assert.strictEqual(shards[0].attempted + shards[1].attempted, 7);
    // a missing shard is said, and fails
    const partial = await cli('report', '--merge', shards[0].report, '--out', path.join(dir, 'partial.json'));
    assert.strictEqual(partial.code, 1);
    assert.match(partial.out, /shards missing: 2 of 2/);
    const validatedInIndex = async (): Promise<number> =>
      (JSON.parse((await cli('search', '', '--db', db, '--validation', 'validated', '--json', '--limit', '50')).out) as unknown[]).length;
    assert.strictEqual(await validatedInIndex(), 0);
    const merged = await cli('report', '--merge', shards[0].report, shards[1].report, '--out', path.join(dir, 'merged.json'), '--db', db, '--json');
    assert.strictEqual(merged.code, 0, merged.err);
    const m = JSON.parse(merged.out) as { attempted: number; recorded: number; equivalent: number };
    assert.deepStrictEqual([m.attempted, m.recorded], [7, 7]);
    // the merged verdicts are in the index
    const mergedItems = (JSON.parse(fs.readFileSync(path.join(dir, 'merged.json'), 'utf8')) as { items: { tier: string }[] }).items;
    assert.strictEqual(await validatedInIndex(), mergedItems.filter((i) => i.tier === 'equivalent' || i.tier === 'forward').length);
    assert.ok(mergedItems.some((i) => i.tier === 'equivalent'));
    // one machine, the same blocks
    const single = await cli('pull', '--all', '--db', db, '--out-dir', path.join(dir, 'single'), '--python', PYTHON_WITH_TORCH, '--jobs', '1', '--json');
    const one = JSON.parse(fs.readFileSync(JSON.parse(single.out).report, 'utf8')) as { items: { target: string; tier: string; equivalence?: string }[] };
    const all = JSON.parse(fs.readFileSync(path.join(dir, 'merged.json'), 'utf8')) as { items: { target: string; tier: string; equivalence?: string }[] };
    const byTarget = (items: { target: string; tier: string; equivalence?: string }[]): string[] =>
      items.map((i) => `${i.target} ${i.tier} ${i.equivalence}`).sort();
    assert.deepStrictEqual(byTarget(all.items), byTarget(one.items));
  });
});
