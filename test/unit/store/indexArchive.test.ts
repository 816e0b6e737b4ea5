/**
 * One index for the team: export writes the index, its units cache and a manifest into one archive; import checks
 * all of it before it replaces anything, so a tampered, foreign, stale or hostile archive is refused and the index in
 * use stays as it was.
 */
import * as assert from 'assert';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import * as tar from 'tar';
import { refreshShared } from '../../../src/core/store/sharedIndex';
import { git, startGitServer } from '../gitServer';
import { ASSETS, cli, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

describe('export and import of an index', function () {
  this.timeout(180_000);
  let dir: string;
  let db: string;
  let archive: string;
  let src: string;
  const search = async (file: string): Promise<string[]> =>
    (JSON.parse((await cli('search', 'residual', '--db', file, '--json')).out) as { target: string }[]).map((h) => h.target);

  before(async () => {
    dir = await tmpdir('nnrag-share-');
    db = path.join(dir, 'team.db');
    // a copy of the example: the tests take it away to be a machine that has none of the index's repositories
    src = path.join(dir, 'src', 'tinyblocks');
    fs.cpSync(path.join(ROOT, 'examples', 'tinyblocks'), src, { recursive: true });
    assert.strictEqual((await cli('index', src, '--db', db)).code, 0);
    // a pull fills the units cache beside the database
    assert.strictEqual((await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', path.join(dir, 'rb.py'), '--no-validate')).code, 0);
    archive = path.join(dir, 'team.nnrag.tgz');
    const r = await cli('export', '--db', db, '--to', archive, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const m = JSON.parse(r.out) as { repositories: { name: string }[]; blocks: number; sha256: Record<string, string> };
    assert.deepStrictEqual([m.repositories.map((x) => x.name), m.blocks], [['tinyblocks'], 7]);
    assert.ok(
      Object.keys(m.sha256).some((k) => k.startsWith('index.db.units/')),
      'the units cache travels with the index',
    );
    assert.ok(
      Object.keys(m.sha256).some((k) => k.startsWith('index.db.sources/')),
      'the indexed sources travel with the index',
    );
  });

  it('export says a missing or wrong destination folder before any work, in words, and writes nothing', async () => {
    const missing = path.relative(process.cwd(), path.join(dir, 'missing_dir', 'x.tgz'));
    const r = await cli('export', '--db', db, '--to', missing);
    assert.notStrictEqual(r.code, 0);
    assert.ok(r.err.includes(`the folder ${path.dirname(missing)} does not exist`), r.err);
    assert.doesNotMatch(r.err, /internal error|ENOENT|\.tmp/);
    assert.ok(!fs.existsSync(path.join(dir, 'missing_dir')));
    // a file where the folder should be, and a folder where the archive should be
    const file = path.join(dir, 'plain.txt');
    fs.writeFileSync(file, 'x');
    assert.match((await cli('export', '--db', db, '--to', path.join(file, 'x.tgz'))).err, /plain\.txt is not a folder/);
    assert.match((await cli('export', '--db', db, '--to', dir)).err, /it is a folder; name the archive file/);
  });

  it('an imported index pulls on a machine that has none of its repositories', async () => {
    const away = `${src}.away`;
    fs.renameSync(src, away);
    try {
      const mine = path.join(dir, 'elsewhere', 'models.db');
      assert.strictEqual((await cli('import', archive, '--db', mine)).code, 0);
      const out = path.join(dir, 'elsewhere', 'rb.py');
      const pulled = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', mine, '--out', out, '--no-validate');
      assert.strictEqual(pulled.code, 0, pulled.err);
      const body = (f: string): string =>
        fs
          .readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => !l.startsWith('#'))
          .join('\n');
      assert.strictEqual(body(out), body(path.join(dir, 'rb.py')));
      // and the same index, exported again from there, still carries every source
      const again = await cli('export', '--db', mine, '--to', path.join(dir, 'again.tgz'), '--json');
      assert.strictEqual(again.code, 0, again.err);
      assert.deepStrictEqual((JSON.parse(again.out) as { sources: { missing: string[] } }).sources.missing, []);
    } finally {
      fs.renameSync(away, src);
    }
  });

  it('imports from an http URL, downloading again only when the archive changed (ETag), and keeps the last good copy', async () => {
    let served = fs.readFileSync(archive);
    const sent: number[] = [];
    const server = http.createServer((req, res) => {
      const etag = `"${createHash('sha256').update(served).digest('hex').slice(0, 16)}"`;
      if (req.headers['if-none-match'] === etag) {
        sent.push(304);
        res.writeHead(304, { ETag: etag }).end();
        return;
      }
      sent.push(200);
      res.writeHead(200, { ETag: etag, 'Content-Type': 'application/gzip' }).end(served);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/team.nnrag.tgz`;
    try {
      const mine = path.join(dir, 'url', 'models.db');
      const first = await cli('import', url, '--db', mine);
      assert.strictEqual(first.code, 0, first.err);
      assert.match(first.out, /imported tinyblocks from http:\/\/127\.0\.0\.1/);
      const again = await cli('import', url, '--db', mine);
      assert.strictEqual(again.code, 0, again.err);
      assert.match(again.out, /is up to date/);
      assert.deepStrictEqual(sent, [200, 304], 'an unchanged index is not downloaded again');
      const before = fs.readFileSync(mine);
      // the published archive is tampered with: refused, the copy in use kept
      const bytes = Buffer.from(served);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      served = bytes;
      const bad = await cli('import', url, '--db', mine);
      assert.strictEqual(bad.code, 3, bad.out + bad.err);
      assert.match(bad.err, /not a usable NN-RAG index: .*the index in use is unchanged/);
      assert.ok(fs.readFileSync(mine).equals(before));
      assert.deepStrictEqual(await search(mine), await search(db));
      // a server that fails says so
      served = Buffer.alloc(0);
      server.removeAllListeners('request');
      server.on('request', (_req, res) => res.writeHead(404).end());
      const gone = await cli('import', url, '--db', mine);
      assert.strictEqual(gone.code, 3);
      assert.match(gone.err, /cannot fetch the shared index .*HTTP 404/);
      // an index that did not come from this URL is not replaced without --force
      const other = await cli('import', `${url}?other`, '--db', db);
      assert.strictEqual(other.code, 2);
      assert.match(other.err, /was not imported from .* only with --force/);
    } finally {
      server.close();
    }
    // nothing listens any more, and a host name that does not exist: a sentence, not the system's error code
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = await cli('import', url, '--db', path.join(dir, 'url', 'closed.db'));
    assert.strictEqual(closed.code, 3);
    assert.match(
      closed.err,
      /cannot fetch the shared index http:\/\/127\.0\.0\.1:\d+\/team\.nnrag\.tgz: nothing answers at 127\.0\.0\.1:\d+ \(the connection was refused\)/,
    );
    const unknown = await cli('import', 'http://nnrag-test.invalid/team.nnrag.tgz', '--db', path.join(dir, 'url', 'unknown.db'));
    assert.strictEqual(unknown.code, 3);
    assert.match(unknown.err, /the host name nnrag-test\.invalid (is not known|could not be looked up now)/);
    assert.doesNotMatch(unknown.err + closed.err, /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|getaddrinfo/);
  });

  it('an imported index answers the same searches and pulls as the one exported', async () => {
    const mine = path.join(dir, 'mine', 'models.db');
    const r = await cli('import', archive, '--db', mine);
    assert.strictEqual(r.code, 0, r.err);
    assert.deepStrictEqual(await search(mine), await search(db));
    const pulled = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', mine, '--out', path.join(dir, 'rb2.py'), '--no-validate');
    assert.strictEqual(pulled.code, 0, pulled.err);
    const body = (f: string): string =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n');
    assert.strictEqual(body(path.join(dir, 'rb2.py')), body(path.join(dir, 'rb.py')));
    // an existing index is replaced only when asked
    const again = await cli('import', archive, '--db', mine);
    assert.strictEqual(again.code, 2);
    assert.match(again.err, /exists: import replaces it .* only with --force/);
  });

  it('searches several indexes at once, merged by score, each hit naming its index', async () => {
    const other = path.join(dir, 'other.db');
    const src = await tmpdir('nnrag-share-other-');
    fs.mkdirSync(path.join(src, 'otherlib'));
    fs.writeFileSync(path.join(src, 'otherlib', '__init__.py'), '');
    fs.writeFileSync(
      path.join(src, 'otherlib', 'res.py'),
      'from torch import nn\n\n\nclass ResidualStack(nn.Module):\n    """A residual stack."""\n\n    def forward(self, x):\n        return x\n',
    );
    assert.strictEqual((await cli('index', src, '--db', other)).code, 0);
    const r = await cli('search', 'residual', '--db', db, '--db', other, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const hits = JSON.parse(r.out) as { target: string; index: string; score: number }[];
    assert.deepStrictEqual([...new Set(hits.map((h) => h.index))].sort(), [db, other].sort());
    assert.ok(hits.some((h) => h.target.endsWith('ResidualStack') && h.index === other));
    assert.deepStrictEqual(
      hits.map((h) => h.score),
      [...hits.map((h) => h.score)].sort((a, b) => b - a),
      'merged by score',
    );
    // one index alone is searched as before
    assert.ok((JSON.parse((await cli('search', 'residual', '--db', db, '--json')).out) as { index?: string }[]).every((h) => h.index === undefined));
  });

  /** The archive unpacked, changed by `change`, packed again. */
  async function altered(name: string, change: (stage: string) => void): Promise<string> {
    const stage = await tmpdir('nnrag-share-alter-');
    await tar.extract({ file: archive, cwd: stage });
    change(stage);
    const out = path.join(dir, name);
    await tar.create({ gzip: true, file: out, cwd: stage }, fs.readdirSync(stage));
    return out;
  }

  it('refuses a tampered, stale, foreign or hostile archive and leaves the index in use as it was', async () => {
    const mine = path.join(dir, 'kept', 'models.db');
    assert.strictEqual((await cli('import', archive, '--db', mine)).code, 0);
    const before = fs.readFileSync(mine);
    const tampered = await altered('tampered.tgz', (s) => {
      const f = path.join(s, 'index.db');
      const bytes = fs.readFileSync(f);
      bytes[bytes.length - 100] ^= 0xff;
      fs.writeFileSync(f, bytes);
    });
    const stale = await altered('stale.tgz', (s) => {
      const m = JSON.parse(fs.readFileSync(path.join(s, 'nnrag-index.json'), 'utf8')) as { parser_version: string };
      m.parser_version = '1';
      fs.writeFileSync(path.join(s, 'nnrag-index.json'), JSON.stringify(m));
    });
    const hostile = await altered('hostile.tgz', (s) => fs.symlinkSync('/etc/passwd', path.join(s, 'index.db.units', 'link')));
    const notTar = path.join(dir, 'junk.tgz');
    fs.writeFileSync(notTar, 'not an archive');
    for (const [bad, why] of [
      [tampered, /index\.db does not have the sha256 its manifest records/],
      [stale, /another version of NN-RAG's parser \(1; this one is \d+\)/],
      [hostile, /entries an index archive does not/],
      [notTar, /cannot be read as a gzipped tar archive/],
    ] as const) {
      const r = await cli('import', bad, '--db', mine, '--force');
      assert.strictEqual(r.code, 3, `${bad}: ${r.out}${r.err}`);
      assert.match(r.err, why);
      assert.match(r.err, /the index in use is unchanged/);
      assert.ok(fs.readFileSync(mine).equals(before), `${bad} changed the index`);
    }
    assert.ok(!fs.readdirSync(path.dirname(mine)).some((f) => f.startsWith('.nnrag-import-')), 'nothing is left behind');
    assert.deepStrictEqual(await search(mine), await search(db));
  });

  it('what export writes, import takes: an installed package, a folder and a git repository, by file and as a shared index', async () => {
    const work = await tmpdir('nnrag-share-kinds-');
    // a git repository served over HTTP on 127.0.0.1
    const served = path.join(work, 'served');
    const clone = path.join(work, 'gitwork');
    await writeTree(clone, { 'netlib/__init__.py': '', 'netlib/layers.py': 'from torch import nn\n\n\nclass Net(nn.Module):\n    pass\n' });
    git(clone, 'init', '-q', '-b', 'main');
    git(clone, 'add', '-A');
    git(clone, 'commit', '-qm', 'first');
    fs.mkdirSync(served);
    git(served, 'clone', '-q', '--bare', clone, 'netlib.git');
    const gitServer = await startGitServer(served);
    const team = path.join(work, 'team.db');
    try {
      const sources = [path.join(ROOT, 'examples', 'tinyblocks'), gitServer.url('netlib.git')];
      for (const s of sources) assert.strictEqual((await cli('index', s, '--db', team, '--cache', path.join(work, 'cache'))).code, 0);
      const env = await cli('index', '--python-env', PYTHON_WITH_TORCH, '--packages', 'distro', '--db', team);
      assert.strictEqual(env.code, 0, env.err);
    } finally {
      await gitServer.close();
    }
    const archive = path.join(work, 'team.tgz');
    const exported = await cli('export', '--db', team, '--to', archive, '--json');
    assert.strictEqual(exported.code, 0, exported.err);
    const kinds = (JSON.parse(exported.out) as { repositories: { kind: string }[] }).repositories.map((r) => r.kind).sort();
    assert.deepStrictEqual(kinds, ['folder', 'git', 'python-env']);
    const mine = path.join(work, 'mine', 'index.db');
    const imported = await cli('import', archive, '--db', mine);
    assert.strictEqual(imported.code, 0, imported.err);
    assert.match(imported.out, /^imported 3 repositories/);
    // as a team's shared index, served over HTTP: messages name the URL, never the download's temporary file
    const server = http.createServer((_req, res) => res.writeHead(200).end(fs.readFileSync(archive)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/team.tgz`;
      const shared = await refreshShared(url, path.join(work, 'shared', 'index.db'), { sqlWasm: ASSETS.sqlWasm });
      assert.strictEqual(shared.state, 'downloaded');
      assert.strictEqual(shared.repositories.length, 3);
    } finally {
      server.close();
    }
  });
});
