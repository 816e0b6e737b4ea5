/**
 * The optional semantic ranker (search/semantic.ts) against a real HTTP service on 127.0.0.1 speaking the
 * OpenAI-compatible `/v1/embeddings`, whose "model" is a small table of concepts (no model is downloaded in tests):
 * the first results ranked again, a block named by the query kept first, only a loopback address accepted, and a
 * service that answers wrong leaving the text ranking with a warning.
 */
import * as assert from 'assert';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { searchBlocks } from '../../../src/core/search/search';
import { embeddingsAt, searchSemantic, type Embeddings } from '../../../src/core/search/semantic';
import type { IndexDb } from '../../../src/core/store/database';
import { cli, indexFolder, memoryDb, tmpdir, writeTree } from '../helpers';

/** The test's model: each word's concept, a text's vector the count of each concept in it. */
const CONCEPTS: Record<string, number> = { car: 0, cars: 0, automobile: 0, vehicle: 0, attention: 1, attends: 1, window: 2, windows: 2, tokens: 3 };
const vectorOf = (text: string): number[] => {
  const v = [0, 0, 0, 0, 0.1];
  for (const w of text.toLowerCase().split(/[^a-z]+/)) if (w in CONCEPTS) v[CONCEPTS[w]]++;
  return v;
};

describe('search: the optional semantic ranker', function () {
  this.timeout(120_000);
  let db: IndexDb;
  let server: http.Server;
  let service: Embeddings;
  let answer: 'right' | 'short' = 'right';
  const asked: string[][] = [];
  before(async () => {
    const dir = await tmpdir();
    let made = 0;
    const block = (name: string, doc: string): string[] => [
      `class ${name}(nn.Module):`,
      `    """${doc}"""`,
      '    def __init__(self, dim):',
      '        super().__init__()',
      `        self.lin = nn.Linear(dim, dim * ${++made})`,
      '    def forward(self, x):',
      '        return self.lin(x)',
      '',
    ];
    await writeTree(dir, {
      'zoo/__init__.py': '',
      'zoo/layers.py': [
        'from torch import nn',
        '',
        ...block('Attention', 'Attention over tokens.'),
        ...block('WindowAttention', 'Attention within windows of tokens.'),
        ...block('VehicleAttention', 'Attention over the parts of an automobile.'),
      ].join('\n'),
    });
    db = await memoryDb();
    await indexFolder(db, path.join(dir, 'zoo'));
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const { input, model } = JSON.parse(body) as { input: string[]; model: string };
        asked.push(input);
        assert.strictEqual(model, 'concepts');
        const data = (answer === 'short' ? input.slice(1) : input).map((t, index) => ({ index, embedding: vectorOf(t) }));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ data }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    service = embeddingsAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/embeddings`, 'concepts');
  });
  after(() => server.close());

  it('ranks the first results again by their vectors, fused with their text ranks', async () => {
    const text = searchBlocks(db, { text: 'attention for cars' }).map((h) => h.name);
    const { hits, warning } = await searchSemantic(db, { text: 'attention for cars' }, service);
    assert.strictEqual(warning, undefined);
    const names = hits.map((h) => h.name);
    assert.deepStrictEqual([...names].sort(), [...text].sort(), 'the same blocks');
    assert.ok(names.indexOf('VehicleAttention') < text.indexOf('VehicleAttention'), `${text.join(' ')} -> ${names.join(' ')}`);
    assert.ok(hits.every((h) => typeof h.semantic === 'number'));
    // the vectors are asked once: a block's text is kept with its vector
    const before = asked.length;
    await searchSemantic(db, { text: 'attention for cars' }, service);
    assert.strictEqual(asked.length, before, 'nothing asked again');
  });

  it('keeps the block the query names first', async () => {
    const { hits } = await searchSemantic(db, { text: 'attention' }, service);
    assert.strictEqual(hits[0].name, 'Attention');
  });

  it('takes only an address on this machine', () => {
    assert.throws(() => embeddingsAt('http://example.com/v1/embeddings'), /on this machine/);
    assert.throws(() => embeddingsAt('file:///etc/passwd'), /on this machine/);
    assert.throws(() => embeddingsAt('not a url'), /address of an embedding service/);
    // a name is looked up elsewhere, whatever it begins with
    assert.throws(() => embeddingsAt('http://127.evil.example/v1/embeddings'), /on this machine/);
    assert.ok(embeddingsAt('http://127.0.0.2:8080/v1/embeddings') && embeddingsAt('http://[::1]:8080/v1/embeddings'));
    assert.ok(embeddingsAt('http://localhost:11434/v1/embeddings'));
  });

  it('leaves the text ranking, with a warning, where the service answers wrong', async () => {
    answer = 'short';
    try {
      const { hits, warning } = await searchSemantic(db, { text: 'window attention tokens' }, service);
      assert.match(warning ?? '', /vectors for .* texts/);
      assert.deepStrictEqual(
        hits.map((h) => h.name),
        searchBlocks(db, { text: 'window attention tokens' }).map((h) => h.name),
      );
    } finally {
      answer = 'right';
    }
  });

  it('is asked by nn-rag search --embeddings, and refuses an address elsewhere', async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'zoo/__init__.py': '',
      'zoo/m.py': [
        'from torch import nn',
        '',
        'class WindowAttention(nn.Module):',
        '    """Attention within windows of tokens."""',
        '',
        'class VehicleAttention(nn.Module):',
        '    """Attention over cars."""',
        '    def __init__(self, dim):',
        '        super().__init__()',
        '',
      ].join('\n'),
    });
    const file = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'zoo'), '--db', file)).code, 0);
    const r = await cli('search', 'attention for cars', '--db', file, '--embeddings', service.url, '--embedding-model', 'concepts', '--json');
    assert.strictEqual(r.code, 0, r.err);
    const hits = JSON.parse(r.out) as { name: string; semantic?: number }[];
    assert.deepStrictEqual(
      hits.map((h) => h.name),
      ['VehicleAttention', 'WindowAttention'],
    );
    assert.ok(hits.every((h) => typeof h.semantic === 'number'));
    const elsewhere = await cli('search', 'attention', '--db', file, '--embeddings', 'http://example.com/v1/embeddings');
    assert.notStrictEqual(elsewhere.code, 0);
    assert.match(elsewhere.err, /on this machine/);
  });
});
