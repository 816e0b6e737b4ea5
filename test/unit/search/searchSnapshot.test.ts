/**
 * The search written beside its index (search/snapshot.ts): `nn-rag index` writes it, a process that keeps the index
 * answers its first query from it as the search built from the index would, and a snapshot of other content, one
 * that points outside the index, or one reached through a link is not used.
 */
import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { buildSearchEngine, keepSearchEngine, searchBlocks, searchInMemory } from '../../../src/core/search/search';
import type { SearchQuery } from '../../../src/core/search/search';
import { partsOf, snapshotBytes, snapshotCurrent, snapshotFile } from '../../../src/core/search/snapshot';
import { IndexDb } from '../../../src/core/store/database';
import { fieldQueries, writeCorpus } from '../../../bench/searchScale';
import { ASSETS, cli, ROOT, tmpdir } from '../helpers';

const open = async (file: string): Promise<IndexDb> => (await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'or-read' })).db;

const QUERIES: SearchQuery[] = [
  ...fieldQueries(60).map((text) => ({ text })),
  { text: 'attention', kind: 'class' },
  { text: 'conv', repo: 'tinyblocks' },
  { text: 'attention block', limit: 3, offset: 2 },
  { text: 'norm', validation: 'none' },
  { text: 'attention', group: false },
];

/** A section of a snapshot's bytes by name, as an Int32Array over them (or a Uint8Array, a Float64Array). */
function section<T extends Int32Array | Uint8Array | Float64Array = Int32Array>(
  bytes: Buffer,
  name: string,
  Type: new (b: ArrayBufferLike, offset: number, length: number) => T = Int32Array as never,
): T {
  const length = bytes.readUInt32LE(8);
  const header = JSON.parse(bytes.toString('utf8', 12, 12 + length)) as { sections: { name: string; offset: number; count: number }[] };
  const s = header.sections.find((x) => x.name === name)!;
  const start = Math.ceil((12 + length) / 8) * 8;
  return new Type(bytes.buffer, bytes.byteOffset + start + s.offset, s.count);
}

describe('search snapshot beside the index', function () {
  this.timeout(300_000);
  let dir: string;
  let dbFile: string;
  before(async () => {
    dir = await tmpdir();
    writeCorpus(dir, 1_500);
    dbFile = path.join(dir, 'index.db');
    const indexed = await cli('index', path.join(dir, 'synth'), path.join(ROOT, 'examples', 'tinyblocks'), '--db', dbFile);
    assert.strictEqual(indexed.code, 0, indexed.err);
  });

  it('is written by index, and a kept index answers its first query from it as the search built from the index', async () => {
    await fsp.access(snapshotFile(dbFile));
    const kept = await open(dbFile);
    const built = await open(dbFile);
    const fts = await open(dbFile);
    try {
      await keepSearchEngine(kept);
      assert.ok(searchInMemory(kept), 'in memory before any query, without building');
      await buildSearchEngine(built);
      for (const q of QUERIES) {
        const want = searchBlocks(built, q);
        assert.deepStrictEqual(searchBlocks(kept, q), want, q.text);
        assert.deepStrictEqual(
          searchBlocks(fts, q).map((h) => h.id),
          want.map((h) => h.id),
          q.text,
        );
      }
    } finally {
      // (each holds the index's lock or reads beside it: released whatever happened)
      for (const db of [kept, built, fts]) db.close();
    }
  });

  it('is not used once the index changed, and the process that builds the search again writes it again', async () => {
    const writer = (await IndexDb.open(dbFile, { sqlWasm: ASSETS.sqlWasm, write: 'wait' })).db;
    const before = writer.savedAs!.sha256;
    writer.setMeta('touched', 'yes');
    await writer.save();
    const after = writer.savedAs!.sha256;
    writer.close();
    assert.notStrictEqual(after, before);
    assert.ok(await snapshotCurrent(dbFile, before));
    const db = await open(dbFile);
    await keepSearchEngine(db);
    assert.ok(!searchInMemory(db), 'a snapshot of other content is not used');
    for (let waited = 0; !searchInMemory(db) && waited < 60_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    for (let waited = 0; !(await snapshotCurrent(dbFile, after)) && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    assert.ok(await snapshotCurrent(dbFile, after), 'written again for the content as it is');
    db.close();
    const again = await open(dbFile);
    await keepSearchEngine(again);
    assert.ok(searchInMemory(again));
    again.close();
  });

  it('is not used when a document number leaves the index, when cut short, or when reached through a link', async () => {
    const db = await open(dbFile);
    const sha = db.savedAs!.sha256;
    const bytes = (await snapshotBytes(dbFile, sha))!;
    assert.ok(partsOf(bytes, sha), 'the snapshot as written is read');
    assert.strictEqual(partsOf(bytes, '0'.repeat(64)), undefined, 'made from other content');
    assert.strictEqual(partsOf(bytes.subarray(0, bytes.length >> 1), sha), undefined, 'cut short');
    const n = db.get('SELECT count(*) AS n FROM classes')!.n as number;
    for (const name of ['named.docs', 'trigrams.docs', 'postings.at', 'nameStarts']) {
      const copy = Buffer.from(bytes);
      const values = section(copy, name);
      values[values.length >> 1] = name === 'postings.at' ? (n + 5) * 8 : name === 'nameStarts' ? -1 : n + 5;
      assert.strictEqual(partsOf(copy, sha), undefined, name);
    }
    // a name's start off its newline (a document number past the index would follow), ids out of order
    const starts = Buffer.from(bytes);
    section(starts, 'nameStarts')[3] += 1;
    assert.strictEqual(partsOf(starts, sha), undefined, 'nameStarts off a newline');
    const ids = Buffer.from(bytes);
    const idValues = section(ids, 'row.id.numbers', Float64Array);
    [idValues[0], idValues[1]] = [idValues[1], idValues[0]];
    assert.strictEqual(partsOf(ids, sha), undefined, 'ids out of order');
    // a kind past its table, a standing that is not a number
    const kinds = Buffer.from(bytes);
    section(kinds, 'kinds', Uint8Array)[0] = 200;
    assert.strictEqual(partsOf(kinds, sha), undefined, 'kinds');
    const standings = Buffer.from(bytes);
    section(standings, 'standings', Float64Array)[1] = NaN;
    assert.strictEqual(partsOf(standings, sha), undefined, 'standings');
    // one planted where the snapshot goes: the search is built from the index instead
    const planted = Buffer.from(bytes);
    const docs = section(planted, 'named.docs');
    docs[0] = n + 5;
    await fsp.writeFile(snapshotFile(dbFile), planted);
    const fresh = await open(dbFile);
    await keepSearchEngine(fresh);
    assert.ok(!searchInMemory(fresh));
    fresh.close();
    // a link to a snapshot that is right in every other way is not followed
    const elsewhere = path.join(dir, 'elsewhere.bin');
    await fsp.writeFile(elsewhere, bytes);
    await fsp.rm(snapshotFile(dbFile));
    await fsp.symlink(elsewhere, snapshotFile(dbFile));
    assert.strictEqual(await snapshotBytes(dbFile, sha), undefined);
    const linked = await open(dbFile);
    await keepSearchEngine(linked);
    assert.ok(!searchInMemory(linked));
    linked.close();
    db.close();
  });
});
