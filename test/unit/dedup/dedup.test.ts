import * as assert from 'assert';
import * as path from 'path';
import { groupDuplicates } from '../../../src/core/dedup/groups';
import { indexStats } from '../../../src/core/store/stats';
import { searchBlocks } from '../../../src/core/search/search';
import { indexFolder, memoryDb, tmpdir, writeTree } from '../helpers';

const DROP_PATH = `import torch
from torch import nn


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()
    return x.div(keep_prob) * random_tensor


class DropPath(nn.Module):
    """Drop paths (Stochastic Depth) per sample, in the main path of residual blocks."""

    def __init__(self, drop_prob=None, scale_by_keep=True):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep_prob = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and self.scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"
`;

/** The same code, other comments, docstring and formatting. */
const EXACT_COPY = DROP_PATH.replace(
  '"""Drop paths (Stochastic Depth) per sample, in the main path of residual blocks."""',
  '# copied from timm\n    """Stochastic depth."""',
)
  .replace('self.drop_prob = drop_prob', 'self.drop_prob = drop_prob  # probability')
  .replace('x.new_empty(shape).bernoulli_(keep_prob)', 'x.new_empty( shape ).bernoulli_( keep_prob )\n')
  .replace('def forward(self, x):', 'def forward(self,\n                x):');
/** One default changed: a lexical near-duplicate, not an exact one. */
const NEAR = DROP_PATH.replace('scale_by_keep=True', 'scale_by_keep=False');
/** Every name changed: the same shape only. */
const RENAMED = DROP_PATH.replace(/DropPath/g, 'StochasticDepth')
  .replace(/drop_prob/g, 'p')
  .replace(/scale_by_keep/g, 'rescale')
  .replace(/keep_prob/g, 'q')
  .replace(/random_tensor/g, 'mask')
  .replace(/shape/g, 'dims');
/** A different block of similar size. */
const OTHER = `from torch import nn


class Mlp(nn.Module):
    """Two linear layers with an activation and dropout between them."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop1(self.act(self.fc1(x)))
        return self.drop2(self.fc2(x))
`;

describe('duplicates: exact, lexical and structural groups', function () {
  this.timeout(60_000);

  async function corpus(priorities: Record<string, number> = {}): Promise<Awaited<ReturnType<typeof memoryDb>>> {
    const root = await tmpdir('nnrag-dup-');
    const repos: Record<string, string> = { orig: DROP_PATH, copied: EXACT_COPY, near: NEAR, renamed: RENAMED, other: OTHER };
    const db = await memoryDb();
    for (const [name, code] of Object.entries(repos)) {
      await writeTree(path.join(root, name), { [`${name}_layers.py`]: code });
      await indexFolder(db, path.join(root, name), { priority: priorities[name] ?? 0 });
    }
    return db;
  }

  const groupOf = (db: Awaited<ReturnType<typeof memoryDb>>, level: string): Record<string, string> =>
    Object.fromEntries(
      db
        .all(`SELECT c.repo, o.repo AS original FROM classes c JOIN classes o ON o.id = c.${level} WHERE c.is_block = 1`)
        .map((r) => [String(r.repo), String(r.original)]),
    );

  it('groups copies at each level, keeps near-misses apart, and counts unique blocks per level', async () => {
    const db = await corpus();
    // the first indexed repository holds the original (same priority: age decides)
    assert.deepStrictEqual(groupOf(db, 'dup_exact'), { orig: 'orig', copied: 'orig', near: 'near', renamed: 'renamed', other: 'other' });
    assert.deepStrictEqual(groupOf(db, 'dup_lex'), { orig: 'orig', copied: 'orig', near: 'orig', renamed: 'renamed', other: 'other' });
    assert.deepStrictEqual(groupOf(db, 'dup_struct'), { orig: 'orig', copied: 'orig', near: 'orig', renamed: 'orig', other: 'other' });
    const u = indexStats(db).uniqueness;
    assert.deepStrictEqual([u.blocks, u.exact_unique, u.lexical_unique, u.structural_unique], [5, 4, 3, 2]);
    assert.deepStrictEqual(u.largest_groups, [{ original: 'orig:orig_layers.DropPath', copies: 3, repos: 3 }]);
  });

  it('lists a group once in search, as its original chosen by priority, with the number of copies', async () => {
    const db = await corpus({ copied: 5 });
    const hits = searchBlocks(db, { text: 'drop path' });
    const drop = hits.filter((h) => h.name === 'DropPath');
    assert.strictEqual(drop.length, 1, 'one entry for the three lexical copies');
    assert.strictEqual(drop[0].repo, 'copied', 'the higher-priority repository holds the original');
    assert.deepStrictEqual(drop[0].copies, { count: 3, repos: 3 });
    const all = searchBlocks(db, { text: 'drop path', group: false }).filter((h) => h.name === 'DropPath');
    assert.strictEqual(all.length, 3);
  });

  it('groups many forks that share one signature, and a near copy of any of them, under the original by priority', async () => {
    // each fork renames everything its own way: different tokens (no exact or lexical copies), one structure
    const forks: Record<string, string> = { orig: DROP_PATH, other: OTHER, near: RENAMED.replace('rescale=True', 'rescale=False') };
    for (let k = 1; k <= 6; k++) {
      forks[`fork${k}`] = DROP_PATH.replace(/DropPath/g, `Depth${k}`)
        .replace(/drop_prob/g, `p${k}`)
        .replace(/scale_by_keep/g, `keep${k}`)
        .replace(/keep_prob/g, `q${k}`)
        .replace(/random_tensor/g, `mask${k}`);
    }
    const root = await tmpdir('nnrag-dup-forks-');
    const db = await memoryDb();
    for (const [name, code] of Object.entries(forks)) {
      await writeTree(path.join(root, name), { [`${name}_layers.py`]: code });
      await indexFolder(db, path.join(root, name), { priority: name === 'fork4' ? 2 : 0 });
    }
    const struct = groupOf(db, 'dup_struct');
    const lex = groupOf(db, 'dup_lex');
    assert.deepStrictEqual(struct, {
      orig: 'fork4',
      near: 'fork4',
      other: 'other',
      fork1: 'fork4',
      fork2: 'fork4',
      fork3: 'fork4',
      fork4: 'fork4',
      fork5: 'fork4',
      fork6: 'fork4',
    });
    for (const k of [1, 2, 3, 5, 6]) assert.strictEqual(lex[`fork${k}`], `fork${k}`, 'renamed forks are not lexical copies');
    assert.strictEqual(indexStats(db).uniqueness.structural_unique, 2);
  });

  it('takes a stricter or looser threshold when asked, and keeps it for later runs', async () => {
    const db = await corpus();
    groupDuplicates(db, { lexical: 0.999 });
    assert.strictEqual(groupOf(db, 'dup_lex').near, 'near', 'a changed default is no longer a lexical copy at 0.999');
    groupDuplicates(db);
    assert.strictEqual(groupOf(db, 'dup_lex').near, 'near', 'the threshold stays');
    groupDuplicates(db, { lexical: 0.9 });
    assert.strictEqual(groupOf(db, 'dup_lex').near, 'orig');
  });
});
