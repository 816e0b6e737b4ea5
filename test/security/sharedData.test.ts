/**
 * Trust, third round: a shared index is data. An imported archive holds NN-RAG's schema alone (no trigger, view or
 * other object), its repositories' rows are plain data whose folders are never opened, mounted or imported from,
 * a damaged database is refused, and an import is all or nothing, bounded in bytes and time, and follows a redirect
 * only to the same server. Each case is an attack that worked before its fix.
 */
import * as assert from 'assert';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import * as tar from 'tar';
import { IndexDb } from '../../src/core/store/database';
import { importIndex } from '../../src/core/store/indexArchive';
import { freshEntries, recordObserved } from '../../src/core/store/observed';
import { refreshShared } from '../../src/core/store/sharedIndex';
import { isImported, loadRepoRows } from '../../src/core/store/sourceText';
import { mountRoot } from '../../src/core/pull/roots';
import { Workspace } from '../../src/core/workspace/workspace';
import { ASSETS, cli, ROOT, tmpdir } from '../unit/helpers';

/** The archive `from` with its database changed by `change` (and the manifest's hash of it made to match), at `to`. */
async function tampered(from: string, to: string, change: (db: IndexDb, file: string) => Promise<void> | void): Promise<void> {
  const stage = await tmpdir('nnrag-tamper-');
  await tar.extract({ file: from, cwd: stage });
  const file = path.join(stage, 'index.db');
  const { db } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'try' });
  try {
    await change(db, file);
    // (saved even when nothing changed: the file is then written by this version's save)
    db.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('tampered', '1')");
    await db.save();
  } finally {
    db.close();
  }
  for (const f of ['index.db.saved', 'index.db.lock']) fs.rmSync(path.join(stage, f), { force: true });
  fixManifest(stage);
  const entries = fs.readdirSync(stage);
  await tar.create({ gzip: true, file: to, cwd: stage, portable: true }, entries);
}

function fixManifest(stage: string): void {
  const manifest = JSON.parse(fs.readFileSync(path.join(stage, 'nnrag-index.json'), 'utf8')) as { sha256: Record<string, string> };
  manifest.sha256['index.db'] = createHash('sha256')
    .update(fs.readFileSync(path.join(stage, 'index.db')))
    .digest('hex');
  fs.writeFileSync(path.join(stage, 'nnrag-index.json'), JSON.stringify(manifest));
}

/** Everything under `dir`, as relative paths (what an import may have left behind). */
function listing(dir: string): string[] {
  return fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).sort() : [];
}

describe('trust: a shared index is data', function () {
  this.timeout(300_000);
  let dir: string;
  let archive: string;
  let canary: string;

  before(async () => {
    dir = await tmpdir('nnrag-shared-data-');
    const src = path.join(dir, 'src', 'tinyblocks');
    fs.cpSync(path.join(ROOT, 'examples', 'tinyblocks'), src, { recursive: true });
    const db = path.join(dir, 'team.db');
    assert.strictEqual((await cli('index', src, '--db', db)).code, 0);
    archive = path.join(dir, 'team.tgz');
    assert.strictEqual((await cli('export', '--db', db, '--to', archive)).code, 0);
    // a folder of the user's that an archive names
    canary = path.join(dir, 'private');
    fs.mkdirSync(canary);
    fs.writeFileSync(path.join(canary, 'secret.txt'), "the user's secret\n");
  });

  /** Imports `file` into a new index beside the others; the result or the error, and what was left on disk. */
  const tryImport = async (
    file: string,
    name: string,
    limits?: { maxBytes: number; maxEntries: number },
  ): Promise<{ error?: string; target: string; folder: string }> => {
    const folder = path.join(dir, `import-${name}`);
    fs.mkdirSync(folder, { recursive: true });
    const target = path.join(folder, 'index.db');
    try {
      await importIndex(file, target, { sqlWasm: ASSETS.sqlWasm, ...(limits ? { limits } : {}) });
      return { target, folder };
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err), target, folder };
    }
  };

  it('refuses an archive whose database carries a trigger, a view or a table of its own, and leaves nothing behind', async () => {
    const objects = {
      trigger: "CREATE TRIGGER rewrite AFTER INSERT ON repos BEGIN UPDATE repos SET license = 'MIT\nimport os' WHERE id = new.id; END",
      view: 'CREATE VIEW v AS SELECT * FROM repos',
      table: 'CREATE TABLE extra (x TEXT)',
      index: 'CREATE INDEX odd ON repos(license)',
    };
    for (const [kind, sql] of Object.entries(objects)) {
      const bad = path.join(dir, `with-${kind}.tgz`);
      await tampered(archive, bad, (db) => db.run(sql));
      const r = await tryImport(bad, kind);
      assert.match(r.error ?? '', /not NN-RAG's schema alone/, `${kind}: ${r.error ?? 'imported'}`);
      assert.deepStrictEqual(listing(r.folder), [], `${kind}: the import left ${listing(r.folder).join(', ')}`);
    }
  });

  it('refuses rows that are not plain data: a line break or control character in a license, URL or name', async () => {
    const rows: Record<string, string> = {
      'license-lf': 'UPDATE repos SET license = \'MIT\nimport os; os.system("id")\'',
      'license-cr': "UPDATE repos SET license = 'MIT\rimport os'",
      'url-ls': `UPDATE repos SET url = 'https://h.invalid/x${'\u2028'}import os'`,
      commit: "UPDATE repos SET commit_id = 'HEAD; rm -rf /'",
      name: "UPDATE repos SET name = '../../etc'",
      kind: "UPDATE repos SET kind = 'shell'",
    };
    for (const [what, sql] of Object.entries(rows)) {
      const bad = path.join(dir, `rows-${what}.tgz`);
      await tampered(archive, bad, (db) => db.run(sql));
      const r = await tryImport(bad, `rows-${what}`);
      assert.ok(r.error, `${what} was imported`);
      assert.match(r.error, /not a usable NN-RAG index/, what);
      assert.deepStrictEqual(listing(r.folder), [], what);
    }
  });

  it('accepts what is plain data: a folder name with a space', async () => {
    const ok = path.join(dir, 'spaced.tgz');
    await tampered(archive, ok, (db) => db.run("UPDATE repos SET name = 'my models'"));
    const r = await tryImport(ok, 'spaced');
    assert.strictEqual(r.error, undefined, r.error);
  });

  it("an imported repository names no folder: nothing of the user's is mounted, read or imported from a row", async () => {
    // the rows point at a folder of the user's, as the attack did
    const bad = path.join(dir, 'roots.tgz');
    await tampered(archive, bad, (db) => db.run('UPDATE repos SET root = ?, location = ?', [canary, canary]));
    const r = await tryImport(bad, 'roots');
    assert.strictEqual(r.error, undefined, r.error);
    const { db } = await IndexDb.open(r.target, { sqlWasm: ASSETS.sqlWasm });
    try {
      const repos = [...loadRepoRows(db).values()];
      assert.ok(repos.length > 0 && repos.every((x) => isImported(x) && x.root === ''), JSON.stringify(repos));
      assert.deepStrictEqual(
        repos.map(mountRoot),
        repos.map(() => null),
        'no folder of an imported repository is mounted',
      );
      const ws = Workspace.over(db, ASSETS);
      const found = ws.originalOf(ws.target('tinyblocks.blocks.ResidualBlock'));
      assert.ok('unavailable' in found, JSON.stringify(found));
      assert.deepStrictEqual(ws.originalRoots(), [], 'the sandbox is shown no folder of the imported index');
    } finally {
      db.close();
    }
    // and the pull reads the archive's own sources (the row's folder is never read)
    const out = path.join(dir, 'roots-rb.py');
    const pulled = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', r.target, '--out', out, '--no-validate');
    assert.strictEqual(pulled.code, 0, pulled.err);
  });

  it("an imported repository stays imported: indexing the user's folder it names never adopts its rows", async () => {
    // the archive names the user's own folder, by its name and its location (predictable in a dev container)
    const src = path.join(dir, 'src', 'tinyblocks');
    const bad = path.join(dir, 'adopt.tgz');
    await tampered(archive, bad, (db) => db.run('UPDATE repos SET location = ?', [src]));
    const r = await tryImport(bad, 'adopt');
    assert.strictEqual(r.error, undefined, r.error);
    const before = fs.readFileSync(r.target);
    const indexed = await cli('index', src, '--db', r.target);
    assert.notStrictEqual(indexed.code, 0, indexed.out);
    assert.match(indexed.err, /came with an imported index/);
    assert.ok(fs.readFileSync(r.target).equals(before), 'the index is as imported');
    const { db } = await IndexDb.open(r.target, { sqlWasm: ASSETS.sqlWasm });
    try {
      assert.ok([...loadRepoRows(db).values()].every(isImported), 'every repository is still imported');
    } finally {
      db.close();
    }
    // under another name, the folder is the user's own repository beside the archive's
    const own = await cli('index', src, '--db', r.target, '--name', 'mine');
    assert.strictEqual(own.code, 0, own.err);
  });

  it('refuses a damaged database (one that would need recovery); the index in use stays whole, nothing is left', async () => {
    const bad = path.join(dir, 'damaged.tgz');
    await tampered(archive, bad, () => undefined);
    // damage a page of the database after the save, then make the manifest agree
    const stage = await tmpdir('nnrag-damage-');
    await tar.extract({ file: bad, cwd: stage });
    const file = path.join(stage, 'index.db');
    const bytes = fs.readFileSync(file);
    for (let i = 3 * 1024; i < 3 * 1024 + 64; i++) bytes[i] = 0xa5;
    fs.writeFileSync(file, bytes);
    fixManifest(stage);
    await tar.create({ gzip: true, file: bad, cwd: stage, portable: true }, fs.readdirSync(stage));
    // over an index in use
    const folder = path.join(dir, 'import-damaged');
    fs.mkdirSync(folder, { recursive: true });
    const target = path.join(folder, 'index.db');
    await importIndex(archive, target, { sqlWasm: ASSETS.sqlWasm });
    const before = new Map(
      listing(folder)
        .filter((f) => fs.statSync(path.join(folder, f)).isFile())
        .map((f) => [f, fs.readFileSync(path.join(folder, f))]),
    );
    await assert.rejects(
      importIndex(bad, target, { sqlWasm: ASSETS.sqlWasm, force: true }),
      /not a usable NN-RAG index: its database (is damaged|does not open)/,
    );
    const names = listing(folder);
    assert.deepStrictEqual(
      names.filter((f) => /\.old|\.nnrag-import-|corrupt/.test(f)),
      [],
      names.join(', '),
    );
    for (const [f, b] of before) assert.ok(fs.readFileSync(path.join(folder, f)).equals(b), `${f} changed`);
  });

  it('refuses an archive that unpacks past the byte limit (a decompression bomb) and leaves nothing on disk', async () => {
    const bomb = path.join(dir, 'bomb.tgz');
    const stage = await tmpdir('nnrag-bomb-');
    await tar.extract({ file: archive, cwd: stage });
    // 64 MB of zeros under a name the archive may hold: a few kilobytes compressed
    fs.mkdirSync(path.join(stage, 'index.db.sources', 'zz'), { recursive: true });
    fs.writeFileSync(path.join(stage, 'index.db.sources', 'zz', 'zzzz'), Buffer.alloc(64 << 20));
    await tar.create({ gzip: true, file: bomb, cwd: stage, portable: true }, fs.readdirSync(stage));
    assert.ok(fs.statSync(bomb).size < 1 << 20);
    const r = await tryImport(bomb, 'bomb', { maxBytes: 16 << 20, maxEntries: 10_000 });
    assert.match(r.error ?? '', /unpacks to more than 16 MB/);
    assert.deepStrictEqual(listing(r.folder), []);
  });

  it('stops a decompression bomb refused by its ratio, awaits its writes, and leaves nothing, with memory bounded', async () => {
    // 400 MB of zeros (a sparse file: nothing on disk) first in the archive: a few hundred KB compressed, under the
    // byte limit, past the ratio
    const bomb = path.join(dir, 'ratio-bomb.tgz');
    const stage = await tmpdir('nnrag-ratio-bomb-');
    await tar.extract({ file: archive, cwd: stage });
    fs.mkdirSync(path.join(stage, 'index.db.sources', 'zz'), { recursive: true });
    const zeros = path.join(stage, 'index.db.sources', 'zz', 'zzzz');
    fs.closeSync(fs.openSync(zeros, 'w'));
    fs.truncateSync(zeros, 400 << 20);
    const sources = fs.readdirSync(path.join(stage, 'index.db.sources')).filter((n) => n !== 'zz');
    const names = [
      'index.db.sources/zz/zzzz',
      ...sources.map((n) => `index.db.sources/${n}`),
      ...fs.readdirSync(stage).filter((n) => n !== 'index.db.sources'),
    ];
    await tar.create({ gzip: true, file: bomb, cwd: stage, portable: true }, names);
    fs.rmSync(stage, { recursive: true, force: true });
    assert.ok(fs.statSync(bomb).size < 1 << 20);
    const before = process.memoryUsage().rss;
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
    const r = await tryImport(bomb, 'ratio-bomb');
    clearInterval(watch);
    assert.match(r.error ?? '', /decompression bomb/);
    assert.deepStrictEqual(listing(r.folder), [], 'nothing is left when the import returns');
    // no write of the stopped unpacking lands after it
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepStrictEqual(listing(r.folder), [], 'nothing is written after it');
    assert.ok(peak - before < 128 << 20, `memory grew by ${(peak - before) >> 20} MB while refusing`);
  });

  it("an imported repository's observed entry that names no file is stale, never fresh forever", async () => {
    const forged = path.join(dir, 'empty-fileset.tgz');
    await tampered(archive, forged, (db) => {
      const repoId = Number(db.get('SELECT id FROM repos LIMIT 1')!.id);
      recordObserved(db, repoId, [
        {
          entry: { entry: 'tests/test_x.py::t', key: 'k', files: {}, seconds: 1, error: null },
          calls: [{ entry: 'tests/test_x.py::t', module: 'm', name: 'B', args: [], kwargs: {} }],
        },
      ]);
    });
    const r = await tryImport(forged, 'empty-fileset');
    assert.strictEqual(r.error, undefined, r.error);
    const { db } = await IndexDb.open(r.target, { sqlWasm: ASSETS.sqlWasm });
    try {
      const repoId = Number(db.get('SELECT id FROM repos LIMIT 1')!.id);
      assert.strictEqual(freshEntries(db, repoId).get('tests/test_x.py::t'), false);
    } finally {
      db.close();
    }
  });

  it('what an import or a download stopped by a signal left (a stage with a read-only folder, a partial file) goes next time', async () => {
    const folder = path.join(dir, 'import-leftovers');
    // a pid that no process has: the process that made them is gone
    const dead = 4_000_000;
    const stage = path.join(folder, `.nnrag-import-${dead}-abc123`);
    fs.mkdirSync(path.join(stage, 'index.db.sources', 'ro'), { recursive: true });
    fs.writeFileSync(path.join(stage, 'index.db.sources', 'ro', 'big'), Buffer.alloc(1 << 20));
    fs.chmodSync(path.join(stage, 'index.db.sources', 'ro'), 0o500);
    fs.writeFileSync(path.join(folder, `index.db.download.${dead}.tmp`), 'partial');
    // one of a live process (this one) is its own: kept
    const live = path.join(folder, `.nnrag-import-${process.pid}-live`);
    fs.mkdirSync(live);
    const r = await tryImport(archive, 'leftovers');
    assert.strictEqual(r.error, undefined, r.error);
    assert.ok(!fs.existsSync(stage), 'the stage of a stopped import is gone');
    assert.ok(fs.existsSync(live), "a live process's stage is kept");
    fs.rmdirSync(live);
    // a refresh of the shared index, even one whose server does not answer, removes the partial download
    await refreshShared('http://127.0.0.1:1/team.tgz', r.target, { sqlWasm: ASSETS.sqlWasm }).catch(() => undefined);
    assert.ok(!fs.existsSync(path.join(folder, `index.db.download.${dead}.tmp`)), 'the partial download is gone');
  });

  describe('a download is bounded and stays on its server', () => {
    let server: http.Server;
    let other: http.Server;
    let base: string;
    let otherBase: string;
    const bytes = (): Buffer => fs.readFileSync(archive);

    before(async () => {
      other = http.createServer((_req, res) => res.writeHead(200).end(bytes()));
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
      otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      server = http.createServer((req, res) => {
        if (req.url === '/same') res.writeHead(302, { Location: '/team.tgz' }).end();
        else if (req.url === '/away') res.writeHead(302, { Location: `${otherBase}/team.tgz` }).end();
        else if (req.url === '/stall') {
          res.writeHead(200);
          res.write(bytes().subarray(0, 100));
          // and nothing more, ever
        } else if (req.url === '/endless') {
          res.writeHead(200);
          const chunk = Buffer.alloc(1 << 16, 7);
          const more = (): void => {
            while (res.write(chunk));
          };
          res.on('drain', more);
          more();
        } else res.writeHead(200).end(bytes());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
      other.close();
    });

    const fetchInto = async (url: string, name: string, limits: Record<string, unknown> = {}): Promise<{ error?: string; folder: string }> => {
      const folder = path.join(dir, `fetch-${name}`);
      fs.mkdirSync(folder, { recursive: true });
      try {
        await refreshShared(url, path.join(folder, 'index.db'), { sqlWasm: ASSETS.sqlWasm, limits });
        return { folder };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err), folder };
      }
    };

    it('follows a redirect on the same server; refuses one to another server unless allowed', async () => {
      assert.strictEqual((await fetchInto(`${base}/same`, 'same')).error, undefined);
      const away = await fetchInto(`${base}/away`, 'away');
      assert.match(away.error ?? '', /redirects to another origin/);
      assert.deepStrictEqual(listing(away.folder), []);
      assert.strictEqual((await fetchInto(`${base}/away`, 'away-allowed', { allowRedirects: true })).error, undefined);
    });

    it('gives up a server that stalls (idle timeout) and one that never ends (byte limit), leaving nothing', async () => {
      const t0 = Date.now();
      const stalled = await fetchInto(`${base}/stall`, 'stall', { idleMs: 500 });
      assert.match(stalled.error ?? '', /no byte came for/);
      assert.ok(Date.now() - t0 < 30_000);
      assert.deepStrictEqual(listing(stalled.folder), []);
      const endless = await fetchInto(`${base}/endless`, 'endless', { maxBytes: 4 << 20 });
      assert.match(endless.error ?? '', /larger than the limit of 4 MB/);
      assert.deepStrictEqual(listing(endless.folder), []);
      const slow = await fetchInto(`${base}/stall`, 'total', { idleMs: 60_000, totalMs: 700 });
      assert.match(slow.error ?? '', /took longer than/);
    });
  });
});
