/**
 * `index --shard K/N` then `nn-rag merge`: the shards' indexes, joined, answer the same searches and pulls as one
 * `index` run over every source (Debian's torchvision and the shipped example).
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { inShard } from '../../../src/core/pull/shard';
import { APPLICATION_ID } from '../../../src/core/store/database';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

const TORCHVISION = '/usr/lib/python3/dist-packages/torchvision';

describe('index shards merged into one index', function () {
  this.timeout(600_000);
  let dir: string;
  let one: string;
  let merged: string;
  const sources = (): string[] => [path.join(ROOT, 'examples', 'tinyblocks'), '--python-env', PYTHON_WITH_TORCH, '--packages', 'torchvision'];

  before(async function () {
    if (!fs.existsSync(TORCHVISION)) this.skip();
    dir = await tmpdir('nnrag-index-shards-');
    one = path.join(dir, 'one.db');
    const r = await cli('index', ...sources(), '--db', one);
    assert.strictEqual(r.code, 0, r.err);
    // four shards: each indexes the sources whose name falls in it (here two of them are empty)
    const shardDbs: string[] = [];
    for (let k = 1; k <= 4; k++) {
      const db = path.join(dir, `shard-${k}.db`);
      const s = await cli('index', ...sources(), '--db', db, '--shard', `${k}/4`, '--json');
      assert.strictEqual(s.code, 0, s.err);
      const names = (JSON.parse(s.out) as { runs: { repo: string }[] }).runs.map((x) => x.repo);
      assert.deepStrictEqual(
        names,
        ['tinyblocks', 'torchvision'].filter((n) => inShard(n, { index: k - 1, count: 4 })),
        `shard ${k}`,
      );
      shardDbs.push(db);
    }
    merged = path.join(dir, 'merged.db');
    const m = await cli('merge', ...shardDbs, '--db', merged, '--json');
    assert.strictEqual(m.code, 0, m.err);
    assert.strictEqual((JSON.parse(m.out) as { repositories: number }).repositories, 2);
  });

  it('has the same repositories, files, blocks and duplicate groups', async () => {
    const stats = async (db: string): Promise<unknown> => {
      const s = JSON.parse((await cli('stats', '--db', db, '--json')).out) as {
        repos: { name: string; parsed: number; skipped: number; blocks: number }[];
        files: number;
        modules: number;
        blocks: number;
      };
      return { repos: s.repos.map((r) => [r.name, r.parsed, r.skipped, r.blocks]).sort(), files: s.files, modules: s.modules, blocks: s.blocks };
    };
    assert.deepStrictEqual(await stats(merged), await stats(one));
  });

  it('answers the same searches (scores and duplicate groups too)', async () => {
    for (const q of ['residual block', 'attention', 'squeeze excitation', 'drop path', 'feature pyramid', 'normalization']) {
      const hits = async (db: string): Promise<string[]> =>
        (
          JSON.parse((await cli('search', q, '--db', db, '--limit', '20', '--json')).out) as { target: string; score: number; copies?: { count: number } }[]
        ).map((h) => `${h.target} ${h.score.toFixed(6)} ${h.copies?.count ?? 1}`);
      assert.deepStrictEqual(await hits(merged), await hits(one), q);
    }
  });

  it('pulls the same files', async () => {
    const body = (f: string): string =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n');
    for (const target of [
      'tinyblocks.blocks.ResidualBlock',
      'torchvision.ops.misc.SqueezeExcitation',
      'torchvision.models.resnet.Bottleneck',
      'torchvision.ops.feature_pyramid_network.FeaturePyramidNetwork',
    ]) {
      const out = (db: string): string => path.join(dir, `${path.basename(db)}-${target}.py`);
      for (const db of [one, merged]) {
        const r = await cli('pull', target, '--db', db, '--out', out(db), '--no-validate');
        assert.strictEqual(r.code, 0, `${target} from ${db}: ${r.err}`);
      }
      assert.strictEqual(body(out(merged)), body(out(one)), target);
    }
  });

  it('refuses to merge two indexes that both hold a repository, and leaves the target as it was', async () => {
    const target = path.join(dir, 'twice.db');
    const r = await cli('merge', one, merged, '--db', target);
    assert.strictEqual(r.code, 2);
    assert.match(r.err, /both hold the repository/);
    assert.ok(!fs.existsSync(target) || fs.statSync(target).size === 0);
  });

  it('refuses a shard it cannot read, and leaves it where it is', async () => {
    const work = await tmpdir('nnrag-merge-damaged-');
    const damaged = path.join(work, 'damaged.db');
    // (our application id: a file of ours, damaged; a reader never sets it aside as a writer does)
    const bytes = Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 7)]);
    bytes.writeUInt32BE(APPLICATION_ID, 68);
    fs.writeFileSync(damaged, bytes);
    const r = await cli('merge', one, damaged, '--db', path.join(work, 'out.db'));
    assert.notStrictEqual(r.code, 0);
    assert.match(r.err, /cannot be read as an index/);
    assert.deepStrictEqual(
      fs.readdirSync(work).filter((f) => f.startsWith('damaged')),
      ['damaged.db'],
    );
  });

  it('carries the catalog of observed calls', async () => {
    const work = await tmpdir('nnrag-merge-observed-');
    const repo = path.join(work, 'obs');
    fs.mkdirSync(path.join(repo, 'obs'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'tests'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'obs', '__init__.py'), '');
    fs.writeFileSync(
      path.join(repo, 'obs', 'layers.py'),
      'from torch import nn\n\n\nclass Gate(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n        self.lin = nn.Linear(width, width)\n\n    def forward(self, x):\n        return self.lin(x).sigmoid() * x\n',
    );
    fs.writeFileSync(
      path.join(repo, 'tests', 'test_gate.py'),
      'import torch\n\nfrom obs.layers import Gate\n\n\ndef test_gate():\n    assert Gate(5)(torch.randn(2, 5)).shape == (2, 5)\n',
    );
    const shard = path.join(work, 'shard.db');
    assert.strictEqual((await cli('index', repo, '--db', shard)).code, 0);
    assert.strictEqual((await cli('observe', '--db', shard, '--python', PYTHON_WITH_TORCH)).code, 0);
    const target = path.join(work, 'merged.db');
    assert.strictEqual((await cli('merge', shard, one, '--db', target)).code, 0);
    const shown = await cli('show', 'obs.layers.Gate', '--calls', '--db', target);
    assert.match(shown.out, /in tests\/test_gate\.py::test_gate\n {4}built with \(width=5\)\n {4}forward got \(x=float32\[2, 5\]/, shown.out);
  });
});
