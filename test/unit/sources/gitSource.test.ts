import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { CancelledError, NnragError } from '../../../src/core/base/errors';
import { finishRun, indexSource } from '../../../src/core/index/indexer';
import { checkGitUrl, openGit } from '../../../src/core/sources/git';
import { git, startGitServer } from '../gitServer';
import type { GitServer } from '../gitServer';
import { licenseFile, memoryDb, parser, tmpdir, writeTree } from '../helpers';

const MIT = licenseFile('MIT');

describe('git sources over HTTP (real git http-backend on 127.0.0.1)', function () {
  this.timeout(120_000);
  let root: string;
  let work: string;
  let server: GitServer;

  before(async () => {
    root = await tmpdir('nnrag-git-');
    work = path.join(root, 'work');
    await writeTree(work, {
      LICENSE: MIT,
      'netlib/__init__.py': '',
      'netlib/layers.py': 'from torch import nn\n\nclass Block(nn.Module):\n    pass\n',
      'netlib/other.py': 'X = 1\n',
    });
    await fsp.symlink('layers.py', path.join(work, 'netlib', 'alias.py'));
    git(work, 'init', '-q', '-b', 'main');
    git(work, 'add', '-A');
    git(work, 'commit', '-qm', 'first');
    git(work, 'tag', 'v1');
    git(root, 'clone', '-q', '--bare', work, 'served.git');
    server = await startGitServer(root);
  });

  after(async () => {
    await server.close();
  });

  it('clones shallow without checkout, indexes blobs, and notices a new commit', async () => {
    const cache = await tmpdir('nnrag-cache-');
    const db = await memoryDb();
    const first = await openGit({ location: server.url('served.git') }, { cacheDir: cache });
    assert.strictEqual(first.info.name, 'served');
    assert.strictEqual(first.info.commit, git(work, 'rev-parse', 'HEAD'));
    assert.strictEqual(first.updated, false);
    const run1 = await indexSource(db, first, { parser: await parser() });
    finishRun(db);
    assert.strictEqual(run1.computed, 3);
    assert.strictEqual(first.info.license, 'MIT');
    const skipped = db.get("SELECT reason FROM files WHERE path = 'netlib/alias.py'");
    assert.strictEqual(skipped?.reason, 'link', 'a symlink in the repository is reported, not followed');
    const hash = db.get("SELECT hash FROM files WHERE path = 'netlib/layers.py'")!.hash;
    assert.strictEqual(hash, git(work, 'rev-parse', 'HEAD:netlib/layers.py'), 'the content hash is the git blob id');
    // no working tree was checked out
    const entries = await fsp.readdir(path.join(cache, 'git'));
    assert.strictEqual(entries.length, 1);
    assert.ok(!(await fsp.readdir(path.join(cache, 'git', entries[0]))).includes('netlib'));

    await writeTree(work, { 'netlib/other.py': 'from torch import nn\nclass New(nn.Module):\n    pass\n' });
    git(work, 'commit', '-qam', 'second');
    git(root, '--git-dir', 'served.git', 'fetch', '-q', work, 'main:main');
    const second = await openGit({ location: server.url('served.git') }, { cacheDir: cache });
    assert.strictEqual(second.updated, true);
    assert.strictEqual(second.info.commit, git(work, 'rev-parse', 'HEAD'));
    const run2 = await indexSource(db, second, { parser: await parser() });
    finishRun(db);
    assert.deepStrictEqual([run2.computed, run2.kept], [1, 2], 'only the changed blob is parsed again');
    assert.ok(db.get("SELECT 1 AS x FROM classes WHERE name = 'New' AND is_block = 1"));
  });

  it('checks out a tag', async () => {
    const cache = await tmpdir('nnrag-cache-');
    const src = await openGit({ location: server.url('served.git'), ref: 'v1', name: 'tagged' }, { cacheDir: cache });
    assert.strictEqual(src.info.commit, git(work, 'rev-parse', 'v1^{commit}'));
  });

  it('fails clearly for a repository that does not exist, and leaves no half clone', async () => {
    const cache = await tmpdir('nnrag-cache-');
    await assert.rejects(
      openGit({ location: server.url('missing.git') }, { cacheDir: cache }),
      (err: unknown) => err instanceof NnragError && err.code === 'git' && /cannot clone/.test(err.message),
    );
    const left = await fsp.readdir(path.join(cache, 'git')).catch(() => []);
    assert.deepStrictEqual(left, []);
    // a host that does not answer is said in words, not as the system's error code
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(openGit({ location: `http://127.0.0.1:${port}/x.git` }, { cacheDir: cache }), (err: unknown) => {
      assert.match(
        String((err as Error).message),
        new RegExp(`cannot clone http://127\\.0\\.0\\.1:${port}/x\\.git: nothing answers at 127\\.0\\.0\\.1:${port}`),
      );
      return true;
    });
  });

  it('asks for credentials only when the server wants them, and reports refused ones', async () => {
    const secret = await startGitServer(root, { username: 'alice', password: 's3cret' });
    try {
      const url = secret.url('served.git');
      // no way to ask: a clear error
      await assert.rejects(openGit({ location: url, name: 'private' }, { cacheDir: await tmpdir('nnrag-cache-') }), /cannot clone/);
      // wrong credentials: asked once, then told they were refused
      const asked: string[] = [];
      const refused: string[] = [];
      await assert.rejects(
        openGit(
          { location: url, name: 'private' },
          {
            cacheDir: await tmpdir('nnrag-cache-'),
            onAuth: (u) => (asked.push(u), { username: 'alice', password: 'wrong' }),
            onAuthFailure: (u) => refused.push(u),
          },
        ),
        /cannot clone/,
      );
      assert.deepStrictEqual([asked, refused], [[url], [url]]);
      // the right ones, given asynchronously (as the extension's secret storage does)
      const ok = await openGit(
        { location: url, name: 'private' },
        { cacheDir: await tmpdir('nnrag-cache-'), onAuth: async () => ({ username: 'alice', password: 's3cret' }) },
      );
      assert.strictEqual(ok.info.commit, git(root, '--git-dir', 'served.git', 'rev-parse', 'main'));
    } finally {
      await secret.close();
    }
  });

  it('rejects bad URLs before any network use', () => {
    for (const bad of ['ftp://host/x.git', 'file:///etc', 'not a url', '--upload-pack=evil', 'https://user:pw@host/x.git', 'ssh://git@host/x.git']) {
      assert.throws(
        () => checkGitUrl(bad),
        (err: unknown) => err instanceof NnragError && err.code === 'bad-url',
        bad,
      );
    }
    assert.strictEqual(checkGitUrl('https://example.org/a/b.git/'), 'https://example.org/a/b.git');
  });

  it('gives up on a server that drips, one that never answers, and stops at once when cancelled', async () => {
    const sockets = new Set<import('net').Socket>();
    const slow = http.createServer((req, res) => {
      if (req.url?.includes('silent')) return; // never answers
      res.writeHead(200, { 'Content-Type': 'application/x-git-upload-pack-advertisement' });
      const drip = setInterval(() => res.write('0'), 200);
      res.on('close', () => clearInterval(drip));
    });
    slow.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(slow.address() as import('net').AddressInfo).port}`;
    const timeouts = { idleMs: 1000, windowMs: 1500, minBytes: 100 };
    try {
      let started = Date.now();
      await assert.rejects(openGit({ location: `${base}/drip.git` }, { cacheDir: await tmpdir('nnrag-cache-'), timeouts }), /giving up/);
      assert.ok(Date.now() - started < 10_000, 'the drip held the clone too long');
      started = Date.now();
      await assert.rejects(openGit({ location: `${base}/silent.git` }, { cacheDir: await tmpdir('nnrag-cache-'), timeouts }), /no answer from the server/);
      assert.ok(Date.now() - started < 10_000);
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 300);
      started = Date.now();
      const cache = await tmpdir('nnrag-cache-');
      await assert.rejects(
        openGit({ location: `${base}/drip.git` }, { cacheDir: cache, signal: abort.signal }),
        (err: unknown) => err instanceof CancelledError,
      );
      assert.ok(Date.now() - started < 3000, 'the cancel was not honoured at once');
      assert.deepStrictEqual(await fsp.readdir(path.join(cache, 'git')).catch(() => []), [], 'a half clone was left');
    } finally {
      for (const s of sockets) s.destroy();
      slow.close();
    }
  });
});
