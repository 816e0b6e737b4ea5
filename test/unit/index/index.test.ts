import * as assert from 'assert';
import { execFileSync } from 'child_process';
import { createHash } from 'crypto';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { APPLICATION_ID, IndexDb } from '../../../src/core/store/database';
import { finishRun, indexSource, Rediscovery, removeRepositoriesExcept } from '../../../src/core/index/indexer';
import { blobId } from '../../../src/core/base/hash';
import { inlineParse } from '../../../src/core/analysis/parsePool';
import type { ParseFn } from '../../../src/core/analysis/parsePool';
import { indexStats } from '../../../src/core/store/stats';
import { searchBlocks } from '../../../src/core/search/search';
import { openFolder } from '../../../src/core/sources/folder';
import { ASSETS, indexFolder, memoryDb, parser, tmpdir, writeTree } from '../helpers';

const BLOCK = 'from torch import nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n';

describe('index: incremental updates', () => {
  it('adds, keeps, changes and deletes files by content hash', async () => {
    const dir = await tmpdir();
    await writeTree(dir, { 'pkg/__init__.py': '', 'pkg/a.py': BLOCK, 'pkg/b.py': 'X = 1\n' });
    const db = await memoryDb();
    const first = await indexFolder(db, dir);
    assert.deepStrictEqual([first.computed, first.kept, first.deleted], [3, 0, 0]);

    const again = await indexFolder(db, dir);
    assert.deepStrictEqual([again.computed, again.kept, again.deleted], [0, 3, 0], 'nothing changed: nothing parsed');

    // same content, new mtime: hashed, found equal, kept
    const now = new Date(Date.now() + 5000);
    await fsp.utimes(path.join(dir, 'pkg/b.py'), now, now);
    const touched = await indexFolder(db, dir);
    assert.deepStrictEqual([touched.computed, touched.kept], [0, 3]);

    await writeTree(dir, { 'pkg/b.py': 'from torch import nn\nclass Other(nn.Sequential):\n    pass\n' });
    await fsp.rm(path.join(dir, 'pkg/a.py'));
    const changed = await indexFolder(db, dir);
    assert.deepStrictEqual([changed.computed, changed.kept, changed.deleted], [1, 1, 1]);
    const names = db.all('SELECT name, is_block FROM classes ORDER BY name').map((r) => `${String(r.name)}:${Number(r.is_block)}`);
    assert.deepStrictEqual(names, ['Other:1'], 'the deleted file took its class and search rows along');
    const fts = db.all("SELECT docid FROM classes_fts WHERE classes_fts MATCH 'net'");
    assert.strictEqual(fts.length, 0, 'no stale full-text rows');
  });

  it('drops the repositories that left the configuration, with their files, classes and search rows', async () => {
    const a = await tmpdir();
    const b = await tmpdir();
    await writeTree(a, { 'a.py': BLOCK });
    await writeTree(b, { 'b.py': BLOCK.replace('Net', 'Other') });
    const db = await memoryDb();
    await indexFolder(db, a);
    await indexFolder(db, b);
    finishRun(db);
    const names = db.all('SELECT name FROM repos ORDER BY id').map((r) => String(r.name));
    assert.strictEqual(names.length, 2);
    assert.deepStrictEqual(removeRepositoriesExcept(db, new Set([names[0]])), [names[1]]);
    assert.deepStrictEqual(removeRepositoriesExcept(db, new Set([names[0]])), [], 'nothing more to remove');
    assert.deepStrictEqual(
      db.all('SELECT name FROM classes').map((r) => String(r.name)),
      ['Net'],
    );
    assert.strictEqual(Number(db.get('SELECT count(*) AS n FROM files')!.n), 1);
    assert.strictEqual(db.all("SELECT docid FROM classes_fts WHERE classes_fts MATCH 'other'").length, 0);
  });

  it('records a parse failure with its reason and retries when the file changes', async () => {
    const dir = await tmpdir();
    await writeTree(dir, { 'm.py': 'def broken(:\n' });
    const db = await memoryDb();
    await indexFolder(db, dir);
    let row = db.get("SELECT status, reason, detail FROM files WHERE path = 'm.py'")!;
    assert.strictEqual(row.status, 'skipped');
    assert.strictEqual(row.reason, 'syntax');
    assert.match(String(row.detail), /line 1/);
    const unchanged = await indexFolder(db, dir);
    assert.strictEqual(unchanged.computed, 0, 'a failed file is not parsed again while it is unchanged');
    await writeTree(dir, { 'm.py': BLOCK });
    await indexFolder(db, dir);
    row = db.get("SELECT status, reason FROM files WHERE path = 'm.py'")!;
    assert.strictEqual(row.status, 'parsed');
  });

  it('reports hostile files with reasons and never follows links out of the root', async () => {
    const outside = await tmpdir();
    await writeTree(outside, { 'secret.py': 'class Leak(nn.Module):\n    pass\n' });
    const dir = await tmpdir();
    await writeTree(dir, {
      'ok.py': BLOCK,
      'junk.py': Buffer.from([0, 1, 2, 3, 0xff]),
      'old.py': 'print "hi"\n',
      'big.py': `X = "${'a'.repeat(3000)}"\n`,
      'empty.py': '',
    });
    await fsp.symlink(path.join(outside, 'secret.py'), path.join(dir, 'link.py'));
    await fsp.symlink(path.join(dir, 'loop2.py'), path.join(dir, 'loop1.py'));
    await fsp.symlink(path.join(dir, 'loop1.py'), path.join(dir, 'loop2.py'));
    await fsp.symlink(outside, path.join(dir, 'outdir'));
    const db = await memoryDb();
    const source = await openFolder({ location: dir });
    await indexSource(db, source, { parser: await parser(), maxFileBytes: 2000 });
    finishRun(db);
    const stats = indexStats(db);
    const reasons = Object.fromEntries(stats.skipped_files.map((f) => [f.path, f.reason]));
    assert.deepStrictEqual(reasons, {
      'big.py': 'too-large',
      'junk.py': 'binary',
      'link.py': 'link-outside',
      'loop1.py': 'link-loop',
      'loop2.py': 'link-loop',
      'old.py': 'python2',
      outdir: 'link-outside',
    });
    assert.strictEqual(db.all("SELECT 1 FROM classes WHERE name = 'Leak'").length, 0, 'nothing indexed through a link');
    assert.strictEqual(stats.parsed, 2, 'ok.py and empty.py parse');
  });

  it('gives module paths: packages, src layout, and a root that is itself a package', async () => {
    const dir = await tmpdir();
    await writeTree(dir, { 'src/lib/__init__.py': '', 'src/lib/layers.py': BLOCK });
    const db = await memoryDb();
    await indexFolder(db, dir);
    assert.deepStrictEqual(
      db.all('SELECT module FROM files ORDER BY module').map((r) => r.module),
      ['lib', 'lib.layers'],
    );

    const pkgParent = await tmpdir();
    await writeTree(pkgParent, { 'vision/__init__.py': '', 'vision/models/__init__.py': '', 'vision/models/net.py': BLOCK });
    const db2 = await memoryDb();
    await indexFolder(db2, path.join(pkgParent, 'vision'));
    assert.deepStrictEqual(
      db2.all('SELECT module FROM files ORDER BY module').map((r) => r.module),
      ['vision', 'vision.models', 'vision.models.net'],
    );
    assert.strictEqual(db2.get('SELECT name FROM repos')!.name, 'vision');
  });

  it('refuses a second repository under the same name from elsewhere', async () => {
    const a = await tmpdir();
    const b = await tmpdir();
    await fsp.mkdir(path.join(a, 'repo'));
    await fsp.mkdir(path.join(b, 'repo'));
    const db = await memoryDb();
    await indexFolder(db, path.join(a, 'repo'));
    await assert.rejects(indexFolder(db, path.join(b, 'repo')), /already indexed from/);
  });

  it('uses git blob ids as content hashes', () => {
    // `printf 'hello\n' | git hash-object --stdin`
    assert.strictEqual(blobId(Buffer.from('hello\n')), 'ce013625030ba8dba906f756967f9e9ca394464a');
  });
});

describe('index: rediscovery during a run', () => {
  it('doubles its interval and waits at least nine times what the last discovery took', async () => {
    const db = await memoryDb();
    // the clock is read at construction, at each check, and before and after a discovery
    const clock = [0, 500, 1001, 1001, 1501, 5000, 6100, 6100, 6110, 15000];
    const schedule = new Rediscovery(1000, () => clock.shift()!);
    const ran = [1, 2, 3, 4].map(() => schedule.maybe(db));
    // 500: not yet; 1001: due (took 500 ms, next after max(2000, 4500)); 5000: not yet; 6100: due (next after 9000)
    assert.deepStrictEqual(ran, [false, true, false, true]);
    assert.strictEqual(schedule.maybe(db), false, '15000 - 6110 is not over 9000');
    assert.strictEqual(clock.length, 0);
  });
});

describe('index: this thread parses beside the pool', () => {
  it('takes the small files from the other end of the run, leaves the large ones to the pool, and indexes the same', async () => {
    const dir = await tmpdir();
    const sizes = new Map<string, number>();
    const tree: Record<string, string> = {};
    for (let i = 0; i < 16; i++) {
      // sizes from about 100 bytes to about 3,100: the last few are over the limit given to this thread
      const text = BLOCK.replace('Net', `Net${i}`) + '# padding\n'.repeat(i * 20);
      tree[`m${i}.py`] = text;
      sizes.set(`m${i}.py`, Buffer.byteLength(text));
    }
    await writeTree(dir, tree);
    const p = await parser();
    const inline = inlineParse(p);
    // a pool that answers late, as a busy worker does: this thread has time to take files meanwhile
    const byPool: string[] = [];
    const slowPool: ParseFn = async (input) => {
      byPool.push(path.basename(input.file!));
      await new Promise((resolve) => setTimeout(resolve, 15));
      return inline(input);
    };
    const hereMaxBytes = 2000;
    const both = await memoryDb();
    const stats = await indexSource(both, await openFolder({ location: dir, name: 'r' }), { parser: p, parse: slowPool, concurrency: 2, hereMaxBytes });
    finishRun(both);
    assert.strictEqual(stats.computed, 16);
    const here = [...sizes.keys()].filter((f) => !byPool.includes(f));
    assert.strictEqual(new Set(byPool).size, byPool.length, 'no file parsed twice');
    assert.ok(here.length >= 2, `this thread took ${here.length} files`);
    assert.ok(byPool.length >= 2, `the pool took ${byPool.length} files`);
    for (const [f, size] of sizes) if (size > hereMaxBytes) assert.ok(byPool.includes(f), `${f} (${size} bytes) is over the limit: the pool's`);
    const largestHere = Math.max(...here.map((f) => sizes.get(f)!));
    const smallestPooled = Math.min(...byPool.map((f) => sizes.get(f)!));
    assert.ok(largestHere <= smallestPooled, `this thread took the small end (${largestHere} <= ${smallestPooled} bytes)`);

    // the same rows as the pool alone gives
    const alone = await memoryDb();
    await indexSource(alone, await openFolder({ location: dir, name: 'r' }), { parser: p, parse: inline, concurrency: 2 });
    finishRun(alone);
    const rows = (db: IndexDb): unknown[] => [
      ...db.all('SELECT path, hash, status, hex(facts) AS facts, hex(slim) AS slim FROM files ORDER BY path'),
      ...db.all('SELECT module, name, is_block, bases, signature, lex_sig FROM classes ORDER BY module, name'),
    ];
    assert.deepStrictEqual(rows(both), rows(alone));
    assert.strictEqual(searchBlocks(both, { text: 'Net15', limit: 5 })[0]?.name, 'Net15');
  });
});

describe('index: batched writes', () => {
  it("makes each file searchable as it lands, inside the run's one transaction", async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'pkg/__init__.py': '',
      'pkg/a.py': 'from torch import nn\n\nclass AlphaBlock(nn.Module):\n    """Mixes alpha channels."""\n',
      'pkg/b.py': 'import torch.nn as nn\n\nclass BetaBlock(nn.Module):\n    pass\n',
    });
    const db = await memoryDb();
    const seen: string[][] = [];
    const source = await openFolder({ location: dir, name: 'batch' });
    await indexSource(db, source, {
      parser: await parser(),
      // before the run ends (and its transaction commits): what a search answers after each file
      onProgress: () =>
        seen.push(
          searchBlocks(db, { text: 'block' })
            .map((h) => h.name)
            .sort(),
        ),
    });
    assert.deepStrictEqual(seen.at(-1), ['AlphaBlock', 'BetaBlock']);
    assert.ok(
      seen.some((names) => names.length === 1),
      `one block found before the other: ${JSON.stringify(seen)}`,
    );
    assert.deepStrictEqual(
      searchBlocks(db, { text: 'alpha channels' }).map((h) => h.name),
      ['AlphaBlock'],
    );
  });

  it('commits a batch on a save and goes on; a failure rolls back only what is not committed', async () => {
    const file = path.join(await tmpdir(), 'batch.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    await db.batch(async () => {
      db.transaction(() => db.setMeta('a', '1'));
      assert.strictEqual(db.getMeta('a'), '1');
      await db.save();
      db.transaction(() => db.setMeta('b', '2'));
      assert.throws(
        () =>
          db.transaction(() => {
            db.setMeta('c', '3');
            throw new Error('boom');
          }),
        /boom/,
      );
      assert.strictEqual(db.getMeta('b'), undefined, 'the failure rolled the open batch back');
      assert.strictEqual(db.getMeta('a'), '1', 'what the save committed stays');
      // prepared statements are made again after the save freed them
      db.transaction(() => db.setMeta('d', '4'));
    });
    await db.save();
    db.close();
    const { db: again } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.deepStrictEqual(
      ['a', 'b', 'c', 'd'].map((k) => again.getMeta(k)),
      ['1', undefined, undefined, '4'],
    );
    again.close();
  });

  it('merges the full-text segments that live updates leave when edits pause, and search still answers', async () => {
    const dir = await tmpdir();
    await writeTree(dir, { 'pkg/__init__.py': '', 'pkg/live.py': BLOCK, 'pkg/other.py': BLOCK.replace('Net', 'OtherNet') });
    const db = await memoryDb();
    await indexFolder(db, dir);
    const segments = (): number => Number(db.get('SELECT count(*) AS n FROM classes_fts_segdir')?.n);
    const lowest = (): number => Number(db.get('SELECT min(level) AS l FROM classes_fts_segdir')?.l);
    for (let i = 0; i < 3; i++) {
      await fsp.appendFile(path.join(dir, 'pkg', 'live.py'), `\nclass LiveEdit${i}(nn.Module):\n    pass\n`);
      await indexSource(db, await openFolder({ location: dir }), { parser: await parser(), only: ['pkg/live.py'] });
    }
    const before = segments();
    assert.ok(before >= 3 && lowest() === 0, `each live update left segments at level 0 (${before})`);
    finishRun(db, {}, { light: true });
    assert.ok(segments() < before && lowest() > 0, `merged: ${segments()} segments from ${before}, lowest level ${lowest()}`);
    for (const name of ['LiveEdit0', 'LiveEdit1', 'LiveEdit2']) assert.strictEqual(searchBlocks(db, { text: name })[0]?.name, name);
    assert.deepStrictEqual(
      searchBlocks(db, { text: 'OtherNet' }).map((h) => h.name),
      ['OtherNet'],
    );
    // the rows the updates replaced are gone from the merged index too: Net once (in live.py), and OtherNet
    assert.strictEqual(db.get("SELECT count(*) AS n FROM classes_fts WHERE classes_fts MATCH 'name:net'")?.n, 1);
  });
});

describe('index: the database file', () => {
  it('saves atomically and reopens with the same content', async () => {
    const dir = await tmpdir();
    await writeTree(dir, { 'm.py': BLOCK });
    const file = path.join(await tmpdir(), 'sub', 'index.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    await indexFolder(db, dir);
    await db.save();
    db.close();
    const leftovers = (await fsp.readdir(path.dirname(file))).filter((f) => f.endsWith('.tmp'));
    assert.deepStrictEqual(leftovers, []);
    const { db: again, recovered } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.strictEqual(recovered, undefined);
    assert.deepStrictEqual(
      again.all('SELECT name FROM classes').map((r) => r.name),
      ['Net'],
    );
    assert.deepStrictEqual(again.appliedMigrations(), [
      '0001-initial',
      '0002-duplicates',
      '0003-slim-facts',
      '0004-observed-calls',
      '0005-observed-filesets',
      '0006-observed-paths',
      '0007-search-prior',
    ]);
    again.close();
  });

  it('sets a corrupt file of ours aside and starts a new one', async () => {
    const file = path.join(await tmpdir(), 'index.db');
    const damaged = Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 7)]);
    damaged.writeUInt32BE(APPLICATION_ID, 68); // our application id: ours, damaged
    await fsp.writeFile(file, damaged);
    const { db, recovered } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.ok(recovered, 'the corrupt file is reported');
    assert.match(recovered.movedTo, /index\.db\.corrupt-/);
    await fsp.access(recovered.movedTo);
    assert.deepStrictEqual(db.all('SELECT count(*) AS n FROM files')[0].n, 0);
    db.close();
  });

  it('checks in full a saved file that changed after the save (the stamp no longer matches)', async () => {
    const file = path.join(await tmpdir(), 'index.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    db.setMeta('k', 'v');
    await db.save();
    db.close();
    const stamp = JSON.parse(await fsp.readFile(`${file}.saved`, 'utf8')) as { sha256: string };
    assert.strictEqual(
      stamp.sha256,
      createHash('sha256')
        .update(await fsp.readFile(file))
        .digest('hex'),
      'the save stamps the file it wrote',
    );
    // damage past the header, same size: only a full check sees it
    const bytes = await fsp.readFile(file);
    bytes.fill(0x5a, 1024, bytes.length);
    await new Promise((r) => setTimeout(r, 20));
    await fsp.writeFile(file, bytes);
    const { db: again, recovered } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.ok(recovered, 'the damaged file is reported');
    assert.strictEqual(again.getMeta('k'), undefined);
    again.close();
  });

  it('knows a file as saved by its stamped stat, else by its hash, and not once its content changed', async () => {
    const file = path.join(await tmpdir(), 'index.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    db.setMeta('k', 'v');
    await db.save();
    const saved = db.savedAs;
    db.close();
    assert.ok(saved && saved.generation === db.generation);
    const stamp = JSON.parse(await fsp.readFile(`${file}.saved`, 'utf8')) as { sha256: string; stat: string };
    assert.strictEqual(stamp.sha256, saved.sha256);
    assert.match(stamp.stat, /^\d+:\d+:\d+:\d+:\d+$/, 'device, inode, size, modification and change times');
    const reopened = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.deepStrictEqual(reopened.db.savedAs, { sha256: saved.sha256, generation: 0 });
    reopened.db.close();
    // the same bytes written again: another stat, the same hash
    await new Promise((r) => setTimeout(r, 20));
    await fsp.writeFile(file, await fsp.readFile(file));
    const rewritten = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.strictEqual(rewritten.db.savedAs?.sha256, saved.sha256);
    rewritten.db.close();
    // one byte of a page changed (a database still): not the content saved
    const bytes = await fsp.readFile(file);
    bytes[bytes.length - 1] ^= 1;
    await fsp.writeFile(file, bytes);
    const changed = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.strictEqual(changed.db.savedAs, undefined);
    changed.db.close();
  });

  it('reads no stamp from a FIFO and writes none through a link', async function () {
    if (process.platform === 'win32') this.skip();
    const dir = await tmpdir();
    const file = path.join(dir, 'index.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    db.setMeta('k', 'v');
    await db.save();
    db.close();
    // a FIFO where the stamp goes: opened as a file never stamped (checked in full), without waiting for a writer
    await fsp.rm(`${file}.saved`);
    execFileSync('mkfifo', [`${file}.saved`]);
    const opened = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.strictEqual(opened.db.savedAs, undefined);
    assert.strictEqual(opened.db.getMeta('k'), 'v');
    // a link where the stamp goes: the save replaces the link, the file it pointed to stays as it was
    await fsp.rm(`${file}.saved`);
    const precious = path.join(dir, 'precious.txt');
    await fsp.writeFile(precious, 'keep me');
    await fsp.symlink(precious, `${file}.saved`);
    opened.db.setMeta('k', 'w');
    await opened.db.save();
    opened.db.close();
    assert.strictEqual(await fsp.readFile(precious, 'utf8'), 'keep me');
    assert.ok((await fsp.lstat(`${file}.saved`)).isFile());
  });

  it('debounces saves', async () => {
    const file = path.join(await tmpdir(), 'index.db');
    const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    db.setMeta('k', 'v');
    db.scheduleSave(30);
    db.setMeta('k', 'w');
    db.scheduleSave(30);
    await assert.rejects(fsp.access(file), 'not written before the delay');
    await new Promise((r) => setTimeout(r, 120));
    await fsp.access(file);
    db.close();
    const { db: again } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    assert.strictEqual(again.getMeta('k'), 'w');
    again.close();
  });
});
