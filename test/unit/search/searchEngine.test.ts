/**
 * The search held in memory (engine.ts) answers as FTS4 does: the same candidates, the same matchinfo figures, the
 * same hits, over a real index of a repository written to reach the porter tokenizer's corners (digits, `_`, words
 * longer than twenty letters, non-ASCII letters, capitals) and the examples' blocks.
 */
import * as assert from 'assert';
import * as path from 'path';
import { FTS_COLUMNS, SearchEngine } from '../../../src/core/search/engine';
import { buildSearchEngine, keepSearchEngine, searchBlocks, searchInMemory } from '../../../src/core/search/search';
import type { SearchQuery } from '../../../src/core/search/search';
import type { IndexDb } from '../../../src/core/store/database';
import { fieldQueries, writeCorpus } from '../../../bench/searchScale';
import { indexFolder, memoryDb, ROOT, tmpdir, writeTree } from '../helpers';

const BLOCKS = [
  ['MultiHeadAttention', 'Multi-head self attention over tokens, as in Attention Is All You Need.'],
  ['AttentionalPooling', 'Pools a sequence by attentional weights (résumé of tokens, naïve façade).'],
  ['Conv2d_BN_Act', 'A conv2d_block: convolution, batch normalization, activation; 3x3 kernels.'],
  ['SqueezeExcitation', 'Squeeze-and-excitation: channel attention by global pooling; SE block.'],
  ['RMSNorm', 'Root mean square layer normalization without the mean.'],
  ['FeedForward', 'Position-wise feed forward network (FFN) with GELU, runs twice as wide.'],
  ['SwiGLUMLP', 'A SiLU-gated MLP: silu(gate_proj(x)) * up_proj(x).'],
  ['SuperCalifragilisticExpialidociousBlock', 'Antidisestablishmentarianism-scale block with 123456789 units.'],
  ['GATConv', 'The graph attentional operator from Graph Attention Networks.'],
  ['ResidualBlock3D', 'Residual unit for video (3D) with bottleneck.'],
];

function repository(): Record<string, string> {
  const files: Record<string, string> = { 'corner/__init__.py': '' };
  BLOCKS.forEach(([name, doc], i) => {
    files[`corner/m${i % 4}.py`] =
      (files[`corner/m${i % 4}.py`] ?? 'import torch\nfrom torch import nn\n\n') +
      `class ${name}(nn.Module):\n    """${doc}"""\n\n    def __init__(self, dim=${8 + i}, num_heads=2):\n        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.proj(x)\n\n\n`;
  });
  // a class that is not a block: FTS4's statistics count it, the block filter leaves it out
  files['corner/util.py'] = 'class AttentionConfig:\n    """Settings of the attention layers."""\n\n    heads = 8\n';
  return files;
}

const QUERIES: SearchQuery[] = [
  { text: 'attention' },
  { text: 'multi head attention' },
  { text: 'attn' },
  { text: 'conv2d' },
  { text: 'conv2d_bn_act' },
  { text: 'se' },
  { text: 'ffn' },
  { text: 'swiglu mlp' },
  { text: 'gated feed forward' },
  { text: 'graph attention' },
  { text: 'gat' },
  { text: 'rms norm' },
  { text: 'résumé' },
  { text: 'supercalifragilisticexpialidociousblock' },
  { text: 'antidisestablishmentarianism' },
  { text: '123456789' },
  { text: 'residual block 3d' },
  { text: 'normalization', kind: 'class' },
  { text: 'attention', kind: 'class' },
  { text: 'attention', kind: 'abstract' },
  { text: 'attention', repo: 'corner' },
  { text: 'attention', repo: 'tinyblocks' },
  { text: 'block', category: 'attention' },
  { text: 'attention', validation: 'validated' },
  { text: 'attention', validation: 'failed' },
  { text: 'attention', validation: 'none' },
  { text: 'attention pooling', limit: 2, offset: 1 },
  { text: 'attention', group: false },
  { text: 'zzzz nothing here' },
  { text: 'convolution batch normalization activation' },
];

describe('search held in memory', () => {
  let db: IndexDb;
  before(async function () {
    this.timeout(120_000);
    db = await memoryDb();
    const dir = await tmpdir();
    await writeTree(dir, repository());
    await indexFolder(db, path.join(dir, 'corner'));
    await indexFolder(db, path.join(ROOT, 'examples', 'tinyblocks'));
    // validation records of each kind, as pulls leave them (and one that is not an object)
    const ids = db.all('SELECT id FROM classes WHERE is_block = 1 ORDER BY id').map((r) => Number(r.id));
    db.run('UPDATE classes SET validation = ? WHERE id = ?', [JSON.stringify({ status: 'validated', tier: 'equivalent' }), ids[0]]);
    db.run('UPDATE classes SET validation = ? WHERE id = ?', [JSON.stringify({ status: 'failed', tier: 'forward' }), ids[1]]);
    db.run('UPDATE classes SET validation = ? WHERE id = ?', ['[1, 2]', ids[2]]);
  });

  it('finds the candidates FTS4 finds, with the same matchinfo', async () => {
    const engine = await SearchEngine.build(db);
    assert.strictEqual(engine.size, Number(db.get('SELECT count(*) AS n FROM classes')?.n));
    const words = [
      'attention',
      'attentions',
      'attent',
      'conv2d',
      'conv2d_block',
      'con',
      'se',
      'norm',
      'résumé',
      'naïve',
      'supercalifragilisticexpialidociousblock',
      '123456789',
      'x',
      '3d',
      'gate_proj',
      'zzz',
    ];
    let compared = 0;
    for (const and of [true, false])
      for (let i = 0; i < words.length; i++)
        for (const extra of [[], [words[(i + 3) % words.length]], [words[(i + 5) % words.length], words[(i + 7) % words.length]]]) {
          const phrase = [words[i], ...extra];
          const match = phrase.map((w) => (w.length >= 3 ? `${w}*` : w)).join(and ? ' ' : ' OR ');
          const fts = db.all(
            `SELECT c.id, matchinfo(classes_fts, 'pcnalx') AS info FROM classes_fts JOIN classes c ON c.id = classes_fts.docid WHERE classes_fts MATCH ? AND c.is_block = 1`,
            [match],
          );
          const held = engine.match(
            phrase.map((w) => ({ word: w, prefix: w.length >= 3 })),
            and,
            { kind: 'block' },
          );
          assert.ok(held, match);
          assert.deepStrictEqual(
            held.rows.map((r) => Number(r.id)),
            fts.map((r) => Number(r.id)),
            match,
          );
          fts.forEach((r, k) => {
            const blob = r.info as Uint8Array;
            const want = Array.from(new Uint32Array(blob.slice().buffer));
            assert.deepStrictEqual(Array.from(held.info(k)), want, `${match}: ${String(r.id)}`);
          });
          compared += fts.length;
        }
    assert.ok(compared > 100, `${compared} rows compared`);
    assert.strictEqual(FTS_COLUMNS.length, 6);
    // a word the tokenizer cuts in two is a phrase to FTS4: left to it
    assert.strictEqual(engine.match([{ word: 'conv-2d', prefix: true }], true, { kind: 'block' }), undefined);
  });

  it('ranks every query as FTS4 does, and drops itself when the index changes', async () => {
    const before = QUERIES.map((q) => searchBlocks(db, q));
    assert.ok(before.filter((h) => h.length).length > 20);
    await buildSearchEngine(db);
    const held = QUERIES.map((q) => searchBlocks(db, q));
    QUERIES.forEach((q, i) => assert.deepStrictEqual(held[i], before[i], q.text));
    // a class indexed after the engine was built is found (the engine is of an older index: FTS4 answers)
    const dir = await tmpdir();
    await writeTree(dir, { 'late/__init__.py': '', 'late/m.py': 'from torch import nn\n\nclass LateArrivalBlock(nn.Module):\n    pass\n' });
    await indexFolder(db, path.join(dir, 'late'));
    assert.strictEqual(searchBlocks(db, { text: 'late arrival' })[0]?.name, 'LateArrivalBlock');
  });

  it('ranks as FTS4 does where most blocks match a word typed and only bounds decide what is scored', async function () {
    this.timeout(120_000);
    // the field's words drawn by Zipf's law: a common word is in most blocks, prefixes reach thousands of terms; `m3`
    // names a file (a model named: the candidates counted one by one)
    const big = await memoryDb();
    const dir = await tmpdir();
    writeCorpus(dir, 1500);
    await indexFolder(big, path.join(dir, 'synth'));
    const queries: SearchQuery[] = [
      ...fieldQueries(40),
      'mlp block',
      'ffn',
      'feed forward network',
      'se block',
      'attention block layer norm',
      'm3 attention block',
      'm12 norm',
    ].flatMap((q) => [{ text: q }, { text: q, limit: 3, offset: 4, group: false }, { text: q, kind: 'class', limit: 25 }] as SearchQuery[]);
    const fts = queries.map((q) => searchBlocks(big, q));
    assert.ok(fts.filter((h) => h.length).length > 100);
    await buildSearchEngine(big);
    queries.forEach((q, i) => assert.deepStrictEqual(searchBlocks(big, q), fts[i], `${q.text} ${JSON.stringify(q)}`));
  });

  it('is built in the background for a kept index, and set aside by a write until the next one is built', async function () {
    this.timeout(60_000);
    const kept = await memoryDb();
    await indexFolder(kept, path.join(ROOT, 'examples', 'tinyblocks'));
    const wanted = searchBlocks(kept, { text: 'attention' });
    assert.strictEqual(searchInMemory(kept), false);
    keepSearchEngine(kept);
    const until = async (ok: () => boolean): Promise<void> => {
      for (let i = 0; i < 600 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    };
    await until(() => searchInMemory(kept));
    assert.strictEqual(searchInMemory(kept), true);
    assert.deepStrictEqual(searchBlocks(kept, { text: 'attention' }), wanted);
    kept.run('UPDATE classes SET validation = NULL WHERE id = (SELECT min(id) FROM classes)');
    assert.strictEqual(searchInMemory(kept), false);
    // the next search answers from the database and starts the next build
    assert.deepStrictEqual(searchBlocks(kept, { text: 'attention' }), wanted);
    await until(() => searchInMemory(kept));
    assert.strictEqual(searchInMemory(kept), true);
  });
});
