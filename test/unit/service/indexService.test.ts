import * as assert from 'assert';
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { searchBlocks } from '../../../src/core/search/search';
import { IndexService } from '../../../src/core/service/indexService';
import type { IndexStatus } from '../../../src/core/service/indexService';
import { shadowedRepositories, sharedRepositories } from '../../../src/core/store/sharedIndex';
import { ASSETS, cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

/** The language server's index service, in this process, with its events recorded. */
async function service(folder: string): Promise<{ svc: IndexService; statuses: IndexStatus[]; failed: string[]; changed: () => number }> {
  const storage = await tmpdir('nnrag-svc-');
  const statuses: IndexStatus[] = [];
  const failed: string[] = [];
  let changed = 0;
  const svc = new IndexService(
    {
      ...ASSETS,
      storageDir: storage,
      cacheDir: path.join(storage, 'cache'),
      maxFileKb: 2048,
      repositories: [{ location: folder }, { location: path.join(storage, 'missing') }],
    },
    { log: () => undefined, status: (s) => statuses.push(s), failed: (m) => failed.push(m), changed: () => void changed++ },
  );
  return { svc, statuses, failed, changed: () => changed };
}

/** A copy of the shipped example repository that a test may change. */
async function tinyblocksCopy(): Promise<string> {
  const folder = path.join(await tmpdir('nnrag-svc-repo-'), 'tinyblocks');
  await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), folder, { recursive: true });
  return folder;
}

async function until<T>(what: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the index service, in process (what the language server runs)', function () {
  this.timeout(60_000);

  it('indexes the configured folders, says which could not be indexed, follows edits live, and keeps one pull session', async () => {
    const folder = await tinyblocksCopy();
    const { svc, statuses, failed, changed } = await service(folder);
    try {
      const done = await svc.reindex();
      assert.strictEqual(done.state, 'ready');
      assert.ok(done.blocks > 0 && done.repos === 1, JSON.stringify(done));
      assert.ok(
        statuses.some((s) => s.state === 'indexing'),
        'progress is reported',
      );
      assert.strictEqual(failed.length, 1);
      assert.match(failed[0], /cannot index .*missing/);
      assert.strictEqual(done.failing, 1);
      assert.deepStrictEqual(
        svc.failing().map((f) => [f.name, /does not exist|no such|not found|cannot/i.test(f.message)]),
        [['missing', true]],
      );
      // the same failure again is not said again (the tree shows it); it stays listed
      const twice = await svc.reindex();
      assert.strictEqual(failed.length, 1, failed.join('\n'));
      assert.strictEqual(twice.failing, 1);
      assert.ok(changed() >= 1);

      assert.strictEqual(svc.configured('tinyblocks')?.location, folder, 'a folder indexes under its name');
      assert.strictEqual(svc.configured('nothing'), undefined);
      const { db } = await svc.ready();
      const session = (await svc.workspace()).session();
      assert.strictEqual((await svc.workspace()).session(), session, 'the session is kept while the index does not change');
      const report = await (await svc.workspace()).pull('tinyblocks.blocks.ResidualBlock', { validate: false });
      assert.strictEqual(report.status, 'extracted');

      // a new file in the watched folder: searchable without a full run
      await fsp.writeFile(
        path.join(folder, 'tinyblocks', 'gates.py'),
        'import torch\n\n\nclass SquishGate(torch.nn.Module):\n    def forward(self, x):\n        return x.sigmoid() * x\n',
      );
      await until(() => (searchBlocks(db, { text: 'SquishGate', limit: 5 }).some((h) => h.name === 'SquishGate') ? true : undefined));
      const ws = await svc.workspace();
      await until(() => (ws.session() !== session ? true : undefined));
    } finally {
      await svc.dispose();
    }
  });

  it('validates pulls in its warm validator, compared with the original, and stops it on dispose', async () => {
    const folder = await tinyblocksCopy();
    const { svc } = await service(folder);
    try {
      await svc.reindex();
      const out = await tmpdir('nnrag-svc-out-');
      for (const target of ['tinyblocks.blocks.ResidualBlock', 'tinyblocks.layers.se.SqueezeExcite']) {
        // (a single validating pull of the service's workspace runs in its warm validator)
        const ws = await svc.workspace();
        const report = await ws.pull(
          target,
          { validate: true, python: PYTHON_WITH_TORCH, memoryMb: 4096, allowWeakSandbox: true },
          { out: path.join(out, `${target.split('.').pop()}.py`) },
        );
        assert.strictEqual(report.status, 'validated', `${target}: ${report.category}: ${report.message}`);
        assert.strictEqual(report.tier, 'equivalent');
      }
      assert.ok((svc as unknown as { warm?: unknown }).warm, 'the pulls ran in the warm validator');
      await svc.dispose();
      assert.strictEqual((svc as unknown as { warm?: unknown }).warm, undefined, 'dispose stops it');
    } finally {
      await svc.dispose();
    }
  });

  it('stops a run when cancelled and keeps what was indexed', async () => {
    const folder = await tinyblocksCopy();
    const { svc } = await service(folder);
    try {
      const run = svc.reindex();
      svc.cancel();
      const s = await run;
      assert.strictEqual(s.state, 'ready');
      assert.match(s.message, /cancelled|Indexed/);
      const again = await svc.reindex();
      assert.ok(again.blocks > 0);
    } finally {
      await svc.dispose();
    }
  });
});

describe('the index service under a burst of requests (a busy index never breaks)', function () {
  this.timeout(240_000);

  /** A folder of many small modules, each with a block: enough files that a run has several in flight when a new one cancels it. */
  async function manyBlocks(n: number): Promise<string> {
    const root = path.join(await tmpdir('nnrag-svc-burst-'), 'burst');
    await fsp.mkdir(path.join(root, 'burst'), { recursive: true });
    await fsp.writeFile(path.join(root, 'burst', '__init__.py'), '');
    const filler = Array.from({ length: 40 }, (_, i) => `    def helper_${i}(self, x):\n        return x * ${i + 1}\n`).join('\n');
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        fsp.writeFile(
          path.join(root, 'burst', `m${i}.py`),
          `import torch\nfrom torch import nn\n\n\nclass Block${i}(nn.Module):\n    def forward(self, x):\n        return x + ${i}\n\n${filler}`,
        ),
      ),
    );
    return root;
  }

  it('full runs requested while one runs (with parse workers) end with the index one run alone gives, and no error', async () => {
    const folder = await manyBlocks(400);
    const storage = await tmpdir('nnrag-svc-');
    const failed: string[] = [];
    const svc = new IndexService(
      {
        ...ASSETS,
        parseWorker: path.join(ROOT, 'src', 'core', 'analysis', 'worker.ts'),
        storageDir: storage,
        cacheDir: path.join(storage, 'cache'),
        maxFileKb: 2048,
        repositories: [{ location: folder }],
      },
      { log: () => undefined, status: () => undefined, failed: (m) => failed.push(m), changed: () => undefined },
    );
    try {
      const runs: Promise<IndexStatus>[] = [];
      for (let i = 0; i < 5; i++) {
        runs.push(svc.reindex());
        await new Promise((r) => setTimeout(r, 150 + 100 * i));
      }
      const outcomes = await Promise.allSettled(runs);
      assert.deepStrictEqual(
        outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason)),
        [],
      );
      assert.deepStrictEqual(failed, []);
      const last = (outcomes[4] as PromiseFulfilledResult<IndexStatus>).value;
      assert.strictEqual(last.state, 'ready');
      assert.strictEqual(last.blocks, 400, JSON.stringify(last));
      const { db } = await svc.ready();
      assert.strictEqual(Number(db.get('SELECT count(*) AS n FROM files')!.n), 401);
      assert.strictEqual(Number(db.get("SELECT count(*) AS n FROM files WHERE status != 'parsed'")!.n), 0);
    } finally {
      await svc.dispose();
    }
  });
});

describe('a shared index under the index service', function () {
  this.timeout(60_000);

  it('starts from a shared index (read-only) with the configured repositories on top, follows a new archive, refuses a tampered one', async () => {
    // the team's library, indexed and exported elsewhere, then gone from this machine
    const team = path.join(await tmpdir('nnrag-svc-team-'), 'teamlib');
    await fsp.mkdir(team, { recursive: true });
    await fsp.writeFile(path.join(team, '__init__.py'), '');
    const layer = (name: string): string =>
      `\n\nclass ${name}(nn.Module):\n    """A team layer."""\n\n    def __init__(self, c: int = 4):\n        super().__init__()\n        self.proj = nn.Linear(c, c)\n\n    def forward(self, x):\n        return self.proj(x)\n`;
    await fsp.writeFile(path.join(team, 'layers.py'), `from torch import nn${layer('TeamMixer')}`);
    const teamDb = path.join(path.dirname(team), 'team.db');
    const archive = path.join(path.dirname(team), 'team.nnrag.tgz');
    const publish = async (): Promise<void> => {
      assert.strictEqual((await cli('index', team, '--db', teamDb)).code, 0);
      const r = await cli('export', '--db', teamDb, '--to', archive);
      assert.strictEqual(r.code, 0, r.err);
    };
    await publish();
    await fsp.rename(team, `${team}.gone`);
    const folder = await tinyblocksCopy();
    const storage = await tmpdir('nnrag-svc-');
    const failed: string[] = [];
    const svc = new IndexService(
      { ...ASSETS, storageDir: storage, cacheDir: path.join(storage, 'cache'), maxFileKb: 2048, repositories: [{ location: folder }], sharedIndex: archive },
      { log: () => undefined, status: () => undefined, failed: (m) => failed.push(m), changed: () => undefined },
    );
    const names = async (): Promise<string[]> =>
      searchBlocks((await svc.ready()).db, { text: '', limit: 1000 })
        .map((h) => h.name)
        .sort();
    try {
      const first = await svc.reindex();
      assert.strictEqual(first.repos, 2, JSON.stringify(first));
      assert.ok((await names()).includes('TeamMixer') && (await names()).includes('ResidualBlock'));
      // a block of the shared index pulls from the sources the archive carries
      const report = await (await svc.workspace()).pull('teamlib.layers.TeamMixer', { validate: false }, { manifest: false });
      assert.strictEqual(report.status, 'extracted', JSON.stringify(report));
      // a new archive is published (one more layer): the index is made again from it, the user's repository on top
      await fsp.rename(`${team}.gone`, team);
      await fsp.appendFile(path.join(team, 'layers.py'), layer('TeamGate'));
      await publish();
      const second = await svc.useShared(archive);
      assert.strictEqual(second.repos, 2, JSON.stringify(second));
      // what Refresh Shared Index says comes with the status the run returns
      assert.strictEqual(second.shared?.state, 'downloaded', JSON.stringify(second));
      assert.ok((await names()).includes('TeamGate') && (await names()).includes('ResidualBlock'));
      // a tampered archive: said, and the copy in use kept
      const bytes = await fsp.readFile(archive);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      await fsp.writeFile(archive, bytes);
      await svc.useShared(archive);
      assert.match(failed.join('\n'), /not a usable NN-RAG index/);
      assert.ok((await names()).includes('TeamGate'));
      // the shared index is no longer used: its repositories leave, the user's stay
      const none = await svc.useShared(undefined);
      assert.strictEqual(none.repos, 1);
      assert.ok(!(await names()).includes('TeamGate') && (await names()).includes('ResidualBlock'));
    } finally {
      await svc.dispose();
    }
  });

  it("a window opened again parses none of the user's files: not with the same archive, not with a new one (their rows are carried over)", async () => {
    const team = path.join(await tmpdir('nnrag-svc-team-'), 'teamlib');
    await fsp.mkdir(team, { recursive: true });
    await fsp.writeFile(path.join(team, '__init__.py'), '');
    const layer = (name: string): string => `\n\nclass ${name}(nn.Module):\n    def forward(self, x):\n        return x\n`;
    await fsp.writeFile(path.join(team, 'layers.py'), `from torch import nn${layer('TeamMixer')}`);
    const teamDb = path.join(path.dirname(team), 'team.db');
    const archive = path.join(path.dirname(team), 'team.nnrag.tgz');
    const publish = async (): Promise<void> => {
      assert.strictEqual((await cli('index', team, '--db', teamDb)).code, 0);
      assert.strictEqual((await cli('export', '--db', teamDb, '--to', archive)).code, 0);
    };
    await publish();
    const folder = await tinyblocksCopy();
    const storage = await tmpdir('nnrag-svc-');
    // one window's life: its server starts, indexes, and ends
    const open = async (): Promise<{ logs: string[]; names: string[] }> => {
      const logs: string[] = [];
      const svc = new IndexService(
        { ...ASSETS, storageDir: storage, cacheDir: path.join(storage, 'cache'), maxFileKb: 2048, repositories: [{ location: folder }], sharedIndex: archive },
        { log: (_k, m) => logs.push(m), status: () => undefined, failed: (m) => logs.push(m), changed: () => undefined },
      );
      try {
        await svc.reindex();
        const names = searchBlocks((await svc.ready()).db, { text: '', limit: 1000 }).map((h) => h.name);
        return { logs, names };
      } finally {
        await svc.dispose();
      }
    };
    const ownRun = (logs: string[]): string | undefined => logs.find((l) => l.startsWith('tinyblocks: '));
    const first = await open();
    assert.match(ownRun(first.logs) ?? '', /tinyblocks: \d+ files, [1-9]\d* changed/, first.logs.join('\n'));
    const again = await open();
    assert.match(ownRun(again.logs) ?? '', /tinyblocks: \d+ files, 0 changed/, again.logs.join('\n'));
    // the team publishes a new archive: the index is made from it, and the user's files are not parsed again
    await fsp.appendFile(path.join(team, 'layers.py'), layer('TeamGate'));
    await publish();
    const next = await open();
    assert.ok(
      next.logs.some((l) => /the index starts from the shared index/.test(l)),
      next.logs.join('\n'),
    );
    assert.match(ownRun(next.logs) ?? '', /tinyblocks: \d+ files, 0 changed/, next.logs.join('\n'));
    assert.ok(next.names.includes('TeamGate') && next.names.includes('ResidualBlock'), next.names.join(', '));
    assert.deepStrictEqual(next.names.filter((n) => n === 'ResidualBlock').length, first.names.filter((n) => n === 'ResidualBlock').length);
  });
});

describe('a shared index that holds a repository the user indexes too', function () {
  this.timeout(90_000);

  it("uses the user's own copy (the shared one shadowed) without an error, across reloads, a new archive and the setting's removal", async () => {
    // the team indexed its own copy of tinyblocks (one class the user's has not) and a library of its own
    const teamDir = await tmpdir('nnrag-svc-team-');
    const teamCopy = path.join(teamDir, 'tinyblocks');
    await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), teamCopy, { recursive: true });
    await fsp.writeFile(
      path.join(teamCopy, 'teamonly.py'),
      'from torch import nn\n\n\nclass TeamOnlyCopy(nn.Module):\n    def forward(self, x):\n        return x\n',
    );
    const team = path.join(teamDir, 'teamlib');
    await fsp.mkdir(team);
    await fsp.writeFile(path.join(team, '__init__.py'), '');
    const layer = (name: string): string => `\n\nclass ${name}(nn.Module):\n    def forward(self, x):\n        return x\n`;
    await fsp.writeFile(path.join(team, 'layers.py'), `from torch import nn${layer('TeamMixer')}`);
    const teamDb = path.join(teamDir, 'team.db');
    const archive = path.join(teamDir, 'team.nnrag.tgz');
    const publish = async (): Promise<void> => {
      assert.strictEqual((await cli('index', team, teamCopy, '--db', teamDb)).code, 0);
      const r = await cli('export', '--db', teamDb, '--to', archive);
      assert.strictEqual(r.code, 0, r.err);
    };
    await publish();
    // the user's own tinyblocks, at another place, with a class of their own
    const folder = await tinyblocksCopy();
    await fsp.writeFile(path.join(folder, 'mine.py'), `from torch import nn${layer('UserOwnGate')}`);
    const storage = await tmpdir('nnrag-svc-');
    const failed: string[] = [];
    const open = (sharedIndex: string | undefined): IndexService =>
      new IndexService(
        { ...ASSETS, storageDir: storage, cacheDir: path.join(storage, 'cache'), maxFileKb: 2048, repositories: [{ location: folder }], sharedIndex },
        { log: () => undefined, status: () => undefined, failed: (m) => failed.push(m), changed: () => undefined },
      );
    const look = async (svc: IndexService): Promise<{ names: string[]; shared: string[]; shadowed: string[]; mine: string | undefined }> => {
      const { db } = await svc.ready();
      return {
        names: searchBlocks(db, { text: '', limit: 1000 })
          .map((h) => `${h.repo}:${h.name}`)
          .sort(),
        shared: [...sharedRepositories(db)],
        shadowed: [...shadowedRepositories(db)],
        mine: db.get("SELECT location FROM repos WHERE name = 'tinyblocks'")?.location as string | undefined,
      };
    };
    // a window, then a reload (a new server on the same storage), then another
    for (const round of [1, 2]) {
      const svc = open(archive);
      try {
        const s = await svc.reindex();
        assert.deepStrictEqual(failed, [], `round ${round}: ${failed.join('\n')}`);
        assert.strictEqual(s.state, 'ready');
        const seen = await look(svc);
        assert.ok(seen.names.includes('tinyblocks:UserOwnGate') && !seen.names.includes('tinyblocks:TeamOnlyCopy'), seen.names.join(', '));
        assert.ok(seen.names.includes('teamlib:TeamMixer'), seen.names.join(', '));
        assert.deepStrictEqual(seen.shared, ['teamlib']);
        assert.deepStrictEqual(seen.shadowed, ['tinyblocks']);
        assert.strictEqual(seen.mine, folder);
        assert.strictEqual(svc.failing().length, 0);
        // the user's later edits are indexed
        await fsp.writeFile(path.join(folder, `later${round}.py`), `from torch import nn${layer(`LaterEdit${round}`)}`);
        await svc.reindex();
        assert.ok((await look(svc)).names.includes(`tinyblocks:LaterEdit${round}`));
      } finally {
        await svc.dispose();
      }
    }
    // the team publishes again: the index is made from the new archive, the user's copy still wins
    await fsp.appendFile(path.join(team, 'layers.py'), layer('TeamGate'));
    await publish();
    const svc = open(archive);
    try {
      await svc.reindex();
      let seen = await look(svc);
      assert.deepStrictEqual(failed, [], failed.join('\n'));
      assert.ok(seen.names.includes('teamlib:TeamGate') && seen.names.includes('tinyblocks:LaterEdit2'), seen.names.join(', '));
      assert.ok(!seen.names.includes('tinyblocks:TeamOnlyCopy'));
      assert.deepStrictEqual(seen.shadowed, ['tinyblocks']);
      // the setting is removed: the shared rows go, the user's stay
      await svc.useShared(undefined);
      seen = await look(svc);
      assert.ok(!seen.names.some((n) => n.startsWith('teamlib:')), seen.names.join(', '));
      assert.ok(seen.names.includes('tinyblocks:UserOwnGate'));
      assert.deepStrictEqual([seen.shared, seen.shadowed], [[], []]);
      assert.deepStrictEqual(failed, [], failed.join('\n'));
    } finally {
      await svc.dispose();
    }
  });
});

/**
 * One interpreter per class head given (venvs whose site-packages point each to a folder of its own), each with its own
 * copy of the package `mylayers` holding that class (a forward returning its input).
 */
async function interpretersWith(work: string, heads: string[]): Promise<string[]> {
  const interpreters: string[] = [];
  for (const [i, head] of heads.entries()) {
    const pkg = path.join(work, `site${i}`, 'mylayers');
    await fsp.mkdir(pkg, { recursive: true });
    await fsp.writeFile(path.join(pkg, '__init__.py'), '');
    await fsp.writeFile(path.join(pkg, 'blocks.py'), `from torch import nn\n\n\n${head}\n    def forward(self, x):\n        return x\n`);
    const venv = path.join(work, `venv${i}`);
    execFileSync('python3', ['-m', 'venv', '--without-pip', venv]);
    const site = execFileSync(path.join(venv, 'bin', 'python'), ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], {
      encoding: 'utf8',
    }).trim();
    await fsp.writeFile(path.join(site, 'mine.pth'), `${path.join(work, `site${i}`)}\n`);
    interpreters.push(path.join(venv, 'bin', 'python'));
  }
  return interpreters;
}

describe('installed-package repositories under the index service', function () {
  this.timeout(60_000);

  it('installed packages follow the interpreter the settings give: the same package of another interpreter replaces them', async () => {
    // two interpreters, each with its own copy of one package (venvs whose site-packages point to two folders)
    const work = await tmpdir('nnrag-svc-envs-');
    const interpreters = await interpretersWith(work, [`class Gate0(nn.Module):\n    """first copy"""\n`, `class Gate1(nn.Module):\n    """second copy"""\n`]);
    const storage = await tmpdir('nnrag-svc-');
    const failed: string[] = [];
    const config = (python: string): { location: string; kind: 'python-env'; python: string }[] => [{ location: 'mylayers', kind: 'python-env', python }];
    const svc = new IndexService(
      { ...ASSETS, storageDir: storage, cacheDir: path.join(storage, 'cache'), maxFileKb: 2048, repositories: config(interpreters[0]) },
      { log: () => undefined, status: () => undefined, failed: (m) => failed.push(m), changed: () => undefined },
    );
    const names = async (): Promise<string[]> =>
      searchBlocks((await svc.ready()).db, { text: '', limit: 100 })
        .map((h) => h.name)
        .sort();
    try {
      assert.strictEqual((await svc.reindex()).failing, 0, failed.join('\n'));
      assert.deepStrictEqual(await names(), ['Gate0']);
      svc.configure({ repositories: config(interpreters[1]) });
      const second = await svc.reindex();
      assert.deepStrictEqual([second.failing, second.repos], [0, 1], failed.join('\n'));
      assert.deepStrictEqual(await names(), ['Gate1'], "the other interpreter's copy replaced the first");
      assert.doesNotMatch(failed.join('\n'), /--name/);
    } finally {
      await svc.dispose();
    }
  });

  it("a shared index's copy of an installed package, made with another interpreter, is shadowed by the user's own, across reloads and the setting's removal", async () => {
    // the team's package copy and the user's live in two interpreters' site folders (two locations of one name)
    const work = await tmpdir('nnrag-svc-shared-pkg-');
    const interpreters = await interpretersWith(work, ['class TeamGate(nn.Module):\n', 'class UserGate(nn.Module):\n']);
    const teamDb = path.join(work, 'team.db');
    const archive = path.join(work, 'team.nnrag.tgz');
    assert.strictEqual((await cli('index', '--python-env', interpreters[0], '--packages', 'mylayers', '--db', teamDb)).code, 0);
    assert.strictEqual((await cli('export', '--db', teamDb, '--to', archive)).code, 0);
    const storage = await tmpdir('nnrag-svc-');
    const failed: string[] = [];
    const open = (sharedIndex: string | undefined): IndexService =>
      new IndexService(
        {
          ...ASSETS,
          storageDir: storage,
          cacheDir: path.join(storage, 'cache'),
          maxFileKb: 2048,
          repositories: [{ location: 'mylayers', kind: 'python-env', python: interpreters[1] }],
          sharedIndex,
        },
        { log: () => undefined, status: () => undefined, failed: (m) => failed.push(m), changed: () => undefined },
      );
    const look = async (svc: IndexService): Promise<{ names: string[]; shared: string[]; shadowed: string[] }> => {
      const { db } = await svc.ready();
      return {
        names: searchBlocks(db, { text: '', limit: 100 })
          .map((h) => `${h.repo}:${h.name}`)
          .sort(),
        shared: [...sharedRepositories(db)],
        shadowed: [...shadowedRepositories(db)],
      };
    };
    // a window, then two reloads (a new server on the same storage each time)
    for (const round of [1, 2, 3]) {
      const svc = open(archive);
      try {
        await svc.reindex();
        assert.deepStrictEqual(failed, [], `round ${round}: ${failed.join('\n')}`);
        assert.deepStrictEqual(await look(svc), { names: ['mylayers:UserGate'], shared: [], shadowed: ['mylayers'] }, `round ${round}`);
        assert.strictEqual(svc.failing().length, 0);
        if (round === 3) {
          await svc.useShared(undefined);
          assert.deepStrictEqual(await look(svc), { names: ['mylayers:UserGate'], shared: [], shadowed: [] });
        }
      } finally {
        await svc.dispose();
      }
    }
    assert.deepStrictEqual(failed, [], failed.join('\n'));
  });
});
