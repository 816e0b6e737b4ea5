import * as assert from 'assert';
import type { ChildProcess } from 'child_process';
import { spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { CancellationTokenSource, createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { PullReport } from '../../../src/core/pull/types';
import type { SearchHit } from '../../../src/core/search/search';
import {
  GetIndexStatus,
  GetPulledStatus,
  IndexStatusChanged,
  ListTree,
  PlanUpdate,
  PullBlock,
  ReindexRepositories,
  SearchBlocks,
  ValidatePulled,
  WriteManifests,
} from '../../../src/shared/protocol';
import type { IndexStatus, InitOptions, TreeNode } from '../../../src/shared/protocol';
import { git, startGitServer } from '../gitServer';
import { ASSETS, hasTorch, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

describe('language server over stdio (the real server process)', function () {
  this.timeout(60_000);
  let child: ChildProcess;
  let conn: MessageConnection;
  let storage: string;
  const statuses: IndexStatus[] = [];
  const shown: string[] = [];

  before(async () => {
    storage = await tmpdir('nnrag-server-');
    child = spawn(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(ROOT, 'src/server/main.ts'), '--stdio'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.onNotification(IndexStatusChanged.method, (s: IndexStatus) => {
      statuses.push(s);
    });
    conn.onNotification('window/showMessage', (p: { message: string }) => {
      shown.push(p.message);
    });
    conn.onNotification('window/logMessage', () => undefined);

    conn.listen();
    const init: InitOptions = {
      storageDir: storage,
      treeSitterWasm: ASSETS.treeSitterWasm,
      pythonWasm: ASSETS.pythonWasm,
      sqlWasm: ASSETS.sqlWasm,
      // the TypeScript worker: the server parses on every core, as the extension's does
      parseWorker: path.join(ROOT, 'src', 'core', 'analysis', 'worker.ts'),
      runner: ASSETS.runner,
      cacheDir: path.join(storage, 'cache'),
      repositories: [{ location: path.join(ROOT, 'examples', 'tinyblocks') }, { location: path.join(storage, 'missing-folder') }],
      maxFileKb: 2048,
    };
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: init });
    conn.sendNotification('initialized', {});
  });

  after(async () => {
    await conn.sendRequest('shutdown').catch(() => undefined);
    conn.sendNotification('exit');
    conn.dispose();
    child.kill();
  });

  // the server runs from TypeScript and compiles its workers on start: a busy machine has taken over 20 s
  async function whenReady(): Promise<IndexStatus> {
    const deadline = Date.now() + 50_000;
    let s: IndexStatus | undefined;
    while (Date.now() < deadline) {
      s = await conn.sendRequest<IndexStatus>(GetIndexStatus.method);
      if (s.state === 'ready') return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the server never became ready in 50 s: ${JSON.stringify(s)}`);
  }

  it('indexes the configured repositories, reports progress, and survives a bad one', async () => {
    const s = await whenReady();
    assert.strictEqual(s.blocks, 7);
    assert.ok(
      statuses.some((x) => x.state === 'indexing'),
      'progress was pushed while indexing',
    );
    assert.ok(
      shown.some((m) => /cannot index .*missing-folder: no such folder/.test(m)),
      `the bad repository is reported: ${shown.join(' | ')}`,
    );
    await fsp.access(path.join(storage, 'index.db')).catch(async () => {
      await new Promise((r) => setTimeout(r, 1000));
      await fsp.access(path.join(storage, 'index.db'));
    });
  });

  it('answers search and the tree', async () => {
    await whenReady();
    const hits = await conn.sendRequest<SearchHit[]>(SearchBlocks.method, { text: 'squeeze' });
    assert.strictEqual(hits[0].name, 'SqueezeExcite');
    const repos = await conn.sendRequest<TreeNode[]>(ListTree.method, {});
    // every configured repository has a node; the one that cannot be indexed says why
    assert.deepStrictEqual(
      repos.map((r) => [r.label, /no such folder/.test(r.error ?? '')]),
      [
        ['tinyblocks', false],
        ['missing-folder', true],
      ],
    );
    const cats = await conn.sendRequest<TreeNode[]>(ListTree.method, { parent: repos[0] });
    assert.ok(cats.some((c) => c.category === 'attention'));
    const blocks = await conn.sendRequest<TreeNode[]>(ListTree.method, { parent: cats.find((c) => c.category === 'attention') });
    assert.ok(blocks.every((b) => b.kind === 'block' && b.hit));
  });

  it('pulls a block and gives a provenance hover on the pulled file', async () => {
    await whenReady();
    const out = path.join(storage, 'ws', 'se.py');
    const report = await conn.sendRequest<PullReport>(PullBlock.method, {
      target: 'tinyblocks.layers.se.SqueezeExcite',
      out,
      validate: false,
      timeoutSeconds: 60,
      memoryMb: 2048,
    });
    assert.strictEqual(report.status, 'extracted');
    const text = await fsp.readFile(out, 'utf8');
    const uri = `file://${out}`;
    conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
    const lines = text.split('\n');
    const line = lines.findIndex((l) => l.startsWith('def make_divisible'));
    const hover = await conn.sendRequest<{ contents: { value: string } } | null>('textDocument/hover', {
      textDocument: { uri },
      position: { line, character: 6 },
    });
    assert.ok(hover, 'a hover over an inlined helper');
    assert.match(hover.contents.value, /tinyblocks\/helpers\.py/);
    assert.match(hover.contents.value, /license: MIT/);
    assert.match(hover.contents.value, /swh:1:cnt:[0-9a-f]{40}/);
    // over a use of the same name: nothing (the editor's own language server answers there)
    const use = lines.findIndex((l, i) => i !== line && /\bmake_divisible\(/.test(l) && !l.startsWith('def '));
    assert.ok(use >= 0, 'the pulled file uses make_divisible');
    const at = lines[use].indexOf('make_divisible') + 2;
    assert.strictEqual(await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: use, character: at } }), null);
  });

  it('gives pulled files their state, what an update gives them, and validates a text for the editor to apply', async function () {
    this.timeout(180_000);
    await whenReady();
    const out = path.join(storage, 'ws2', 'drop.py');
    await conn.sendRequest<PullReport>(PullBlock.method, {
      target: 'tinyblocks.layers.drop.DropPath',
      out,
      validate: false,
      timeoutSeconds: 60,
      memoryMb: 2048,
    });
    const text = await fsp.readFile(out, 'utf8');
    const edited = `${text}\n# mine\n`;
    const states = await conn.sendRequest<{ uri: string; state: string; edited: boolean }[]>(GetPulledStatus.method, {
      files: [
        { uri: 'file:///a.py', text },
        { uri: 'file:///b.py', text: edited },
        { uri: 'file:///c.py', text: 'print(1)\n' },
        { uri: 'file:///d.py', text: `${text.slice(0, text.indexOf('# nnrag-provenance: ') + 30)}\n` },
      ],
    });
    assert.deepStrictEqual(
      states.map((s) => [s.uri, s.state, s.edited]),
      [
        ['file:///a.py', 'up-to-date', false],
        ['file:///b.py', 'up-to-date', true],
        ['file:///d.py', 'damaged', true],
      ],
    );
    const plan = await conn.sendRequest<{ state: string; next?: string; upstream: string }>(PlanUpdate.method, { file: out, text: edited });
    assert.strictEqual(plan.state, 'up-to-date');
    assert.strictEqual(plan.upstream.slice(plan.upstream.indexOf('\nclass ')), text.slice(text.indexOf('\nclass ')));
    // the file of the user's, not a pulled one: each request that takes a pulled file says so in words of its own
    for (const [method, params] of [
      [PlanUpdate.method, { file: out, text: 'x = 1\n' }],
      [ValidatePulled.method, { file: out, text: 'x = 1\n', python: 'python3', timeoutSeconds: 5, memoryMb: 512 }],
      [WriteManifests.method, { file: out, text: 'x = 1\n' }],
    ] as const) {
      await assert.rejects(conn.sendRequest(method, params), (err: Error) => {
        assert.match(err.message, /no NN-RAG provenance record/, method);
        assert.doesNotMatch(err.message, /Request .* failed/, method);
        return true;
      });
    }
    if (!hasTorch()) this.skip(); // the rest validates with torch
    const checked = await conn.sendRequest<{ validation: { ok: boolean; tier: string }; text: string }>(ValidatePulled.method, {
      file: out,
      text,
      python: PYTHON_WITH_TORCH,
      timeoutSeconds: 120,
      memoryMb: 4096,
      allowWeakSandbox: true,
    });
    assert.deepStrictEqual([checked.validation.ok, checked.validation.tier], [true, 'equivalent']);
    assert.match(checked.text, /"validation":\{"status":"validated","tier":"equivalent"/);
    // the body, and the file on disk, are untouched: the client applies the text
    assert.strictEqual(checked.text.slice(checked.text.indexOf('\nclass ')), text.slice(text.indexOf('\nclass ')));
    assert.strictEqual(await fsp.readFile(out, 'utf8'), text);
  });

  it('stops a re-index when its request is cancelled, keeping what it had indexed', async () => {
    await whenReady();
    const big = await tmpdir('nnrag-big-');
    for (let i = 0; i < 1500; i++) {
      await fsp.mkdir(path.join(big, `pkg${i % 30}`), { recursive: true });
      await fsp.writeFile(
        path.join(big, `pkg${i % 30}`, `m${i}.py`),
        `from torch import nn\n\nclass Layer${i}(nn.Module):\n    def forward(self, x):\n        return x * ${i}\n`,
      );
    }
    const tiny = { location: path.join(ROOT, 'examples', 'tinyblocks') };
    const cts = new CancellationTokenSource();
    statuses.length = 0;
    const started = new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (statuses.some((x) => x.state === 'indexing' && x.progress?.repo && x.progress.repo !== 'tinyblocks')) {
          clearInterval(timer);
          resolve();
        }
      }, 5);
    });
    const run = conn.sendRequest<IndexStatus>(ReindexRepositories.method, { repositories: [tiny, { location: big, name: 'big' }] }, cts.token);
    await started;
    cts.cancel();
    const outcome = await run.then(
      (s) => s.message,
      (err: Error) => err.message,
    );
    assert.match(outcome, /cancelled/i);
    const after = await whenReady();
    assert.ok(after.files < 1500 + 8, `the cancelled run stopped early (${after.files} files)`);
    assert.strictEqual(
      (await conn.sendRequest<SearchHit[]>(SearchBlocks.method, { text: 'squeeze' }))[0]?.name,
      'SqueezeExcite',
      'what was indexed stays searchable',
    );
  });

  it('keeps the index whole under bursts of re-index, remove and enable requests (the busy index of issue 35)', async function () {
    this.timeout(300_000);
    await whenReady();
    const big = await tmpdir('nnrag-burst-');
    for (let i = 0; i < 600; i++) {
      await fsp.mkdir(path.join(big, `pkg${i % 20}`), { recursive: true });
      await fsp.writeFile(
        path.join(big, `pkg${i % 20}`, `m${i}.py`),
        `from torch import nn\n\nclass Burst${i}(nn.Module):\n    def forward(self, x):\n        return x * ${i}\n`,
      );
    }
    const tiny = { location: path.join(ROOT, 'examples', 'tinyblocks') };
    const both = [tiny, { location: big, name: 'burst' }];
    const bursts: { label: string; requests: { repositories: unknown[] }[]; blocks: number }[] = [
      // add a repository and re-index it four times, 400 ms apart, while the first run is under way
      {
        label: 'add, then re-index',
        requests: [{ repositories: both }, { repositories: both }, { repositories: both }, { repositories: both }, { repositories: both }],
        blocks: 7 + 600,
      },
      // remove it, enable it again, remove it, enable it again
      {
        label: 'remove and enable',
        requests: [{ repositories: [tiny] }, { repositories: both }, { repositories: [tiny] }, { repositories: both }],
        blocks: 7 + 600,
      },
      { label: 'remove', requests: [{ repositories: both }, { repositories: [tiny] }], blocks: 7 },
    ];
    for (const burst of bursts) {
      shown.length = 0;
      const runs: Promise<unknown>[] = [];
      for (const r of burst.requests) {
        runs.push(conn.sendRequest(ReindexRepositories.method, r).catch((err: Error) => err.message));
        await new Promise((res) => setTimeout(res, 400));
      }
      await Promise.all(runs);
      const s = await whenReady();
      assert.strictEqual(s.blocks, burst.blocks, `${burst.label}: ${JSON.stringify(s)}`);
      assert.deepStrictEqual(
        shown.filter((m) => /cannot index|UNIQUE/.test(m)),
        [],
        burst.label,
      );
      const hits = await conn.sendRequest<SearchHit[]>(SearchBlocks.method, { text: 'Burst599', limit: 3 });
      assert.strictEqual(
        hits.some((h) => h.name === 'Burst599'),
        burst.blocks > 7,
        burst.label,
      );
    }
  });

  it('watches local folders: a new, changed or deleted file is searchable without a re-index', async () => {
    await whenReady();
    const live = await tmpdir('nnrag-live-');
    await fsp.mkdir(path.join(live, 'pkg'), { recursive: true });
    await fsp.writeFile(path.join(live, 'pkg', '__init__.py'), '');
    await conn.sendRequest(ReindexRepositories.method, {
      repositories: [{ location: path.join(ROOT, 'examples', 'tinyblocks') }, { location: live, name: 'live' }],
    });
    const until = async (text: string, present: boolean, module?: string): Promise<number> => {
      const t0 = Date.now();
      for (;;) {
        const hits = await conn.sendRequest<SearchHit[]>(SearchBlocks.method, { text, group: false });
        if (hits.some((h) => h.name === text && (!module || h.module === module)) === present) return Date.now() - t0;
        if (Date.now() - t0 > 15_000) throw new Error(`${text} ${module ?? ''} ${present ? 'never appeared' : 'never went away'}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const file = path.join(live, 'pkg', 'fresh.py');
    await fsp.writeFile(file, 'from torch import nn\n\n\nclass FreshBlock(nn.Module):\n    def forward(self, x):\n        return x\n');
    const added = await until('FreshBlock', true);
    await fsp.writeFile(file, 'from torch import nn\n\n\nclass RenamedBlock(nn.Module):\n    def forward(self, x):\n        return x\n');
    await until('RenamedBlock', true);
    await until('FreshBlock', false);
    await fsp.rm(file);
    const removed = await until('RenamedBlock', false);
    // a block through a base in another file: found when rediscovery follows the live update
    await fsp.writeFile(path.join(live, 'pkg', 'base.py'), 'from torch import nn\n\n\nclass LiveBase(nn.Module):\n    pass\n');
    await fsp.writeFile(path.join(live, 'pkg', 'derived.py'), 'from .base import LiveBase\n\n\nclass LiveDerived(LiveBase):\n    pass\n');
    await until('LiveDerived', true, 'pkg.derived');
    // pulls share the server's module table until the index changes: a pull after a live update sees the new code
    const pulled = path.join(storage, 'ws', 'live_derived.py');
    const pull = () =>
      conn.sendRequest<PullReport>(PullBlock.method, {
        target: 'live:pkg.derived.LiveDerived',
        out: pulled,
        validate: false,
        timeoutSeconds: 60,
        memoryMb: 2048,
      });
    assert.strictEqual((await pull()).status, 'extracted');
    assert.doesNotMatch(await fsp.readFile(pulled, 'utf8'), /return 41/);
    assert.strictEqual((await pull()).status, 'extracted', 'a second pull from the shared table');
    await fsp.writeFile(
      path.join(live, 'pkg', 'base.py'),
      'from torch import nn\n\n\nclass LiveBase(nn.Module):\n    def forward(self, x):\n        return 41\n\n\nclass LiveMarker(nn.Module):\n    pass\n',
    );
    await until('LiveMarker', true);
    assert.strictEqual((await pull()).status, 'extracted');
    assert.match(await fsp.readFile(pulled, 'utf8'), /return 41/, 'the pull after the change inlines the changed base');
    // a renamed folder: the watcher names the folder, and the whole repository is looked at again
    await fsp.rename(path.join(live, 'pkg'), path.join(live, 'moved'));
    await until('LiveDerived', true, 'moved.derived');
    await until('LiveDerived', false, 'pkg.derived');
    // informative only: the time includes the 25 ms debounce and the polling
    console.log(`      live update searchable after ${added} ms (added), ${removed} ms (deleted)`);
  });

  it('fetches git repositories on a schedule and indexes a new upstream commit', async () => {
    await whenReady();
    const root = await tmpdir('nnrag-sched-');
    const work = path.join(root, 'work');
    await writeTree(work, { 'netlib/__init__.py': '', 'netlib/a.py': 'from torch import nn\n\n\nclass FirstNet(nn.Module):\n    pass\n' });
    git(work, 'init', '-q', '-b', 'main');
    git(work, 'add', '-A');
    git(work, 'commit', '-qm', 'first');
    git(root, 'clone', '-q', '--bare', work, 'served.git');
    const server = await startGitServer(root);
    try {
      // every 0.6 s, for the test (the setting counts in minutes)
      await conn.sendRequest(ReindexRepositories.method, {
        repositories: [{ location: server.url('served.git'), name: 'netlib' }],
        gitFetchIntervalMinutes: 0.01,
      });
      const found = async (name: string): Promise<boolean> =>
        (await conn.sendRequest<SearchHit[]>(SearchBlocks.method, { text: name, group: false })).some((h) => h.name === name);
      assert.ok(await found('FirstNet'));
      await writeTree(work, { 'netlib/b.py': 'from torch import nn\n\n\nclass UpstreamNet(nn.Module):\n    pass\n' });
      git(work, 'add', '-A');
      git(work, 'commit', '-qm', 'second');
      git(root, '--git-dir', 'served.git', 'fetch', '-q', work, 'main:main');
      const t0 = Date.now();
      while (!(await found('UpstreamNet'))) {
        if (Date.now() - t0 > 20_000) throw new Error('the new upstream commit was never indexed');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await conn.sendRequest(ReindexRepositories.method, {
        repositories: [{ location: path.join(ROOT, 'examples', 'tinyblocks') }],
        gitFetchIntervalMinutes: 0,
      });
      await server.close();
    }
  });
});
