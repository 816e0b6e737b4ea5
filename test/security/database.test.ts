/**
 * The database file as an attacker or an unlucky user meets it: special paths, links, other programs' files,
 * corruption that keeps size and time, two writers at once, unwritable places. Each ends in a clear error (exit 3,
 * no stack trace) before any work, or in a right result; nothing is lost or replaced that is not ours.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import initSqlJs from 'sql.js';
import { IndexDb } from '../../src/core/store/database';
import { ASSETS, cli, tmpdir, writeTree } from '../unit/helpers';

const BLOCK = (name: string): string => `from torch import nn\n\nclass ${name}(nn.Module):\n    def forward(self, x):\n        return x\n`;

describe('the database file (hazards)', () => {
  let dir: string;
  let repoA: string;
  let repoB: string;
  before(async () => {
    dir = await tmpdir('nnrag-db-hazards-');
    repoA = path.join(dir, 'alpha');
    repoB = path.join(dir, 'beta');
    await writeTree(repoA, { 'alpha/__init__.py': '', 'alpha/blocks.py': BLOCK('AlphaBlock') });
    await writeTree(repoB, { 'beta/__init__.py': '', 'beta/blocks.py': BLOCK('BetaBlock') });
  });

  function clearError(r: { code: number; err: string }, pattern: RegExp): void {
    assert.strictEqual(r.code, 3, r.err);
    assert.match(r.err, pattern);
    assert.doesNotMatch(r.err, /internal error|\n\s+at /, 'a stack trace');
  }

  it('refuses devices, /proc, folders and a bad parent before any work', async () => {
    clearError(await cli('index', repoA, '--db', '/dev/null'), /not a regular file|cannot live under/);
    assert.ok(fs.statSync('/dev/null').isCharacterDevice(), '/dev/null was replaced');
    clearError(await cli('index', repoA, '--db', '/dev/full'), /not a regular file|cannot live under/);
    clearError(await cli('index', repoA, '--db', '/proc/self/fd/1'), /cannot live under \/proc/);
    clearError(await cli('index', repoA, '--db', dir), /is a folder/);
    const file = path.join(dir, 'plain.txt');
    fs.writeFileSync(file, 'x');
    clearError(await cli('index', repoA, '--db', path.join(file, 'sub', 'index.db')), /not a folder/);
  });

  it('follows a symlinked database to its target and keeps the link', async () => {
    const real = path.join(dir, 'real', 'index.db');
    fs.mkdirSync(path.dirname(real));
    const link = path.join(dir, 'link.db');
    fs.symlinkSync(real, link);
    assert.strictEqual((await cli('index', repoA, '--db', link)).code, 0);
    assert.ok(fs.lstatSync(link).isSymbolicLink(), 'the link became a regular file');
    assert.ok(fs.statSync(real).size > 0, 'the target was not written');
    assert.strictEqual((await cli('index', repoB, '--db', link)).code, 0);
    const hits = JSON.parse((await cli('search', 'block', '--db', real, '--json')).out) as { name: string }[];
    assert.deepStrictEqual(hits.map((h) => h.name).sort(), ['AlphaBlock', 'BetaBlock']);
  });

  it("refuses another program's SQLite file and a text file, and leaves them as they were", async () => {
    const SQL = await initSqlJs({ locateFile: () => ASSETS.sqlWasm });
    const other = new SQL.Database();
    other.run('CREATE TABLE contacts (name TEXT)');
    other.run("INSERT INTO contacts VALUES ('Ada')");
    const foreign = path.join(dir, 'contacts.sqlite');
    fs.writeFileSync(foreign, other.export());
    const before = fs.readFileSync(foreign);
    clearError(await cli('index', repoA, '--db', foreign), /not an NN-RAG index/);
    assert.ok(fs.readFileSync(foreign).equals(before), 'the other program’s file changed');
    const notes = path.join(dir, 'notes.md');
    fs.writeFileSync(notes, '# my notes\n');
    clearError(await cli('index', repoA, '--db', notes), /not an NN-RAG index/);
    assert.strictEqual(fs.readFileSync(notes, 'utf8'), '# my notes\n');
    assert.deepStrictEqual(
      fs.readdirSync(dir).filter((f) => f.startsWith('notes.md.corrupt')),
      [],
    );
  });

  it('detects corruption that keeps the size and the modification time', async () => {
    const file = path.join(dir, 'damaged.db');
    assert.strictEqual((await cli('index', repoA, '--db', file)).code, 0);
    const st = fs.statSync(file);
    const bytes = fs.readFileSync(file);
    // garbage over every page after the first: same size, same time
    for (let i = 1024; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
    fs.writeFileSync(file, bytes);
    fs.utimesSync(file, st.atime, st.mtime);
    assert.strictEqual(fs.statSync(file).size, st.size);
    const { db, recovered } = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm });
    db.close();
    assert.ok(recovered, 'the damaged file was used as it was');
    assert.ok(fs.existsSync(recovered.movedTo));
  });

  it('two writers at once: the second waits, and neither repository is lost', async () => {
    const file = path.join(dir, 'shared.db');
    const [a, b] = await Promise.all([cli('index', repoA, '--db', file), cli('index', repoB, '--db', file)]);
    assert.strictEqual(a.code, 0, a.err);
    assert.strictEqual(b.code, 0, b.err);
    assert.match(a.err + b.err, /waiting for process \d+ to finish writing/);
    const hits = JSON.parse((await cli('search', 'block', '--db', file, '--json')).out) as { name: string }[];
    assert.deepStrictEqual(hits.map((h) => h.name).sort(), ['AlphaBlock', 'BetaBlock']);
    assert.ok(!fs.existsSync(`${file}.lock`), 'the lock was left behind');
  });

  it("a long-running reader ('or-read') opens a database another process writes read-only, and saves nothing", async () => {
    const file = path.join(dir, 'read-beside.db');
    assert.strictEqual((await cli('index', repoA, '--db', file)).code, 0);
    const writer = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'try' });
    try {
      await assert.rejects(IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'try' }), /being written by process \d+/);
      const reader = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'or-read' });
      assert.match(reader.readOnlyBecause ?? '', /being written by process \d+/);
      assert.strictEqual(reader.db.readOnly, true);
      reader.db.close();
    } finally {
      writer.db.close();
    }
    const alone = await IndexDb.open(file, { sqlWasm: ASSETS.sqlWasm, write: 'or-read' });
    assert.strictEqual(alone.readOnlyBecause, undefined, 'nobody writes it: the reader is its writer');
    alone.db.close();
  });

  it('a lock left by a process that died is taken over', async () => {
    const file = path.join(dir, 'stale.db');
    fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: 2 ** 22 + 17, host: os.hostname(), since: '2020-01-01' }));
    const r = await cli('index', repoA, '--db', file);
    assert.strictEqual(r.code, 0, r.err);
  });
});
