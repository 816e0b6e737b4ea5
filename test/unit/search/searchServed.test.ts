/**
 * A team's index served (search/served.ts, `nn-rag serve`): a real HTTP server on 127.0.0.1 over a real index, asked by
 * `nn-rag search --server` and merged with the local index by score; what the server refuses (another method, another
 * Host for a loopback server, a query out of bounds) and what the client refuses of a server that answers wrong (not
 * JSON, too much, too slow, a redirect, hits of the wrong shape).
 */
import * as assert from 'assert';
import { existsSync, readdirSync } from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { runCli } from '../../../src/cli/cli';
import { searchBlocks } from '../../../src/core/search/search';
import { askServer, createSearchServer, hostsFor, mergeAnswers, searchWithServers, serverAt, type TeamServer } from '../../../src/core/search/served';
import { APPLICATION_ID, type IndexDb } from '../../../src/core/store/database';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ASSETS, cli, indexFolder, memoryDb, ROOT, tmpdir, writeTree } from '../helpers';

const block = (name: string, doc: string): string[] => [
  `class ${name}(nn.Module):`,
  `    """${doc}"""`,
  '    def __init__(self, dim):',
  '        super().__init__()',
  '        self.lin = nn.Linear(dim, dim)',
  '    def forward(self, x):',
  '        return self.lin(x)',
  '',
];

/** Listens on a free port of 127.0.0.1; the address. */
async function listening(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** A GET of `url` with `headers`: its status and body. */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("search: a team's index served", function () {
  this.timeout(120_000);
  let team: IndexDb;
  let local: IndexDb;
  let server: http.Server;
  let at: TeamServer;
  before(async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'teamzoo/__init__.py': '',
      'teamzoo/layers.py': [
        'from torch import nn',
        '',
        ...block('WindowAttention', 'Attention within windows of tokens.'),
        ...block('GatedMlp', 'A gated feed forward.'),
      ].join('\n'),
      'ownzoo/__init__.py': '',
      'ownzoo/layers.py': ['from torch import nn', '', ...block('LocalAttention', 'Attention over a local neighbourhood of tokens.')].join('\n'),
    });
    team = await memoryDb();
    await indexFolder(team, path.join(dir, 'teamzoo'));
    local = await memoryDb();
    await indexFolder(local, path.join(dir, 'ownzoo'));
    const made = createSearchServer([{ label: 'team', db: team }]);
    server = made.server;
    made.allowHost(hostsFor('127.0.0.1', []));
    at = serverAt(await listening(server));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it("answers a search with the index's own hits, and merges them with the local index's by score", async () => {
    const { hits: served } = await askServer(at, { text: 'window attention' });
    assert.deepStrictEqual(
      served.map((h) => [h.name, h.index, h.id]),
      [['WindowAttention', at.label, -1]],
    );
    // the same scores as the team's index gives them itself
    assert.strictEqual(served[0].score, searchBlocks(team, { text: 'window attention' })[0].score);
    const { hits, warnings } = await searchWithServers((q) => searchBlocks(local, q), { text: 'attention' }, [at]);
    assert.deepStrictEqual(warnings, []);
    const all = [...searchBlocks(local, { text: 'attention' }), ...(await askServer(at, { text: 'attention' })).hits].sort((a, b) => b.score - a.score);
    assert.deepStrictEqual(
      hits.map((h) => h.name),
      all.map((h) => h.name),
    );
    assert.ok(hits.some((h) => h.name === 'LocalAttention' && h.index === undefined));
    assert.ok(hits.some((h) => h.name === 'WindowAttention' && h.index === at.label));
  });

  it("lists a target in two answers once, from the first: a server's hit never stands for a block of this index", () => {
    const hit = searchBlocks(team, { text: 'gated' })[0];
    const merged = mergeAnswers([[{ ...hit, score: 1 }], [{ ...hit, score: 1e308, index: 'far' }]], { text: 'gated' });
    assert.deepStrictEqual(
      merged.map((h) => [h.index, h.score]),
      [[undefined, 1]],
    );
    assert.strictEqual(mergeAnswers([[], [{ ...hit, index: 'far' }], [{ ...hit, index: 'farther' }]], { text: 'gated' })[0].index, 'far');
  });

  it('answers only the names it goes by: loopback names on a loopback address; addresses and given names elsewhere', () => {
    const here = hostsFor('127.0.0.1', ['vm']);
    assert.ok(here('localhost') && here('127.0.0.1') && here('[::1]'));
    assert.ok(!here('vm') && !here('attacker.example') && !here('localhost.attacker.example') && !here('127.0.0.1.nip.io'));
    assert.ok(!hostsFor('::ffff:127.0.0.1', [])('attacker.example'));
    const lan = hostsFor('0.0.0.0', ['team-host']);
    assert.ok(lan('team-host') && lan('10.1.2.3') && lan('[fe80::1]') && lan('localhost'));
    assert.ok(!lan('attacker.example') && !lan('team-host.attacker.example'));
  });

  it('refuses another method, a Host that is not a loopback name, and a query out of bounds', async () => {
    const url = `${at.url}v1/search?q=attention`;
    assert.strictEqual((await get(url)).status, 200);
    assert.strictEqual((await get(url, {}, 'POST')).status, 405);
    // a page that renamed itself to 127.0.0.1 (DNS rebinding) sends its own name
    const rebound = await get(url, { host: 'attacker.example' });
    assert.strictEqual(rebound.status, 403);
    assert.doesNotMatch(rebound.body, /WindowAttention/);
    assert.strictEqual((await get(`${at.url}v1/search?q=`)).status, 400);
    assert.strictEqual((await get(`${at.url}v1/search?q=a&limit=-1`)).status, 400);
    assert.strictEqual((await get(`${at.url}v1/search?q=a&kind=table`)).status, 400);
    assert.strictEqual((await get(`${at.url}v1/search?q=${'a'.repeat(600)}`)).status, 400);
    assert.strictEqual((await get(`${at.url}v1/search?q=${'a'.repeat(5000)}`)).status, 414);
    assert.strictEqual((await get(`${at.url}etc/passwd`)).status, 404);
    const status = JSON.parse((await get(`${at.url}v1/status`)).body) as { indexes: { label: string; blocks: number }[] };
    assert.deepStrictEqual(
      status.indexes.map((x) => [x.label, x.blocks]),
      [['team', 2]],
    );
  });

  it('keeps only the hits that are what a hit is, and says why a server that answers wrong gave nothing', async () => {
    const good = (await askServer(at, { text: 'window attention' })).hits[0];
    let answer: (res: http.ServerResponse) => void = () => undefined;
    const hostile = http.createServer((_req, res) => answer(res));
    const there = serverAt(await listening(hostile));
    try {
      // a link VS Code would run from a message, a line that forges another hit, an icon, a target of another block
      const link = '[Add](command:workbench.action.terminal.sendSequence?%7B%7D "Add")';
      answer = (res) =>
        res.end(
          JSON.stringify({
            hits: [
              good,
              { ...good, name: 42 },
              { ...good, score: 'high' },
              { ...good, line: -1 },
              { ...good, doc: 'x'.repeat(3000) },
              { ...good, validation: { status: ['validated'] } },
              { ...good, repo: link, target: `${link}:${good.module}.${good.name}` },
              { ...good, name: 'A](command:x)', qualname: `${good.module}.A](command:x)`, target: `${good.repo}:${good.module}.A](command:x)` },
              { ...good, target: `${good.repo}:other.Block` },
              { ...good, signature: '()\nzoo:zoo.m.A  [other]  m.py:2' },
              { ...good, path: 'layers.py\u202e' },
              null,
              'WindowAttention',
            ],
          }),
        );
      const kept = await askServer(there, { text: 'x' });
      assert.deepStrictEqual(
        kept.hits.map((h) => h.name),
        ['WindowAttention'],
      );
      assert.strictEqual(kept.leftOut, 12);
      const wrong = async (respond: (res: http.ServerResponse) => void, said: RegExp, timeoutMs?: number): Promise<void> => {
        answer = respond;
        await assert.rejects(askServer(there, { text: 'x' }, { timeoutMs }), said);
        // the local hits stay, with the reason
        const { hits, warnings } = await searchWithServers((q) => searchBlocks(local, q), { text: 'attention' }, [there], { timeoutMs });
        assert.deepStrictEqual(
          hits.map((h) => h.name),
          ['LocalAttention'],
        );
        assert.strictEqual(warnings.length, 1);
      };
      await wrong((res) => res.end('<html>'), /Unexpected token|JSON/);
      await wrong((res) => res.end(JSON.stringify({ hits: 'none' })), /not a list of hits/);
      await wrong((res) => {
        res.writeHead(500);
        res.end();
      }, /500/);
      await wrong((res) => {
        res.writeHead(302, { location: `${at.url}v1/search?q=attention` });
        res.end();
      }, /fetch failed: .*redirect/);
      await wrong((res) => res.end(Buffer.alloc(3 << 20, 0x20)), /more than 2 MB/);
      await wrong((res) => res.end(`{"hits": ${'['.repeat(100_000)}`), /nested deeper than 8/);
      await wrong(() => undefined, /no whole answer within 0.3 s/, 300);
    } finally {
      hostile.closeAllConnections();
      hostile.close();
    }
  });

  it('serves an index as it is, and leaves a file that is not one where it is', async () => {
    const dir = await tmpdir();
    const bad = path.join(dir, 'bad.db');
    // (our application id: a file of ours, damaged; a reader never sets it aside as a writer does)
    const bytes = Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 7)]);
    bytes.writeUInt32BE(APPLICATION_ID, 68);
    await writeTree(dir, { 'bad.db': bytes });
    const r = await cli('serve', '--db', bad, '--port', '0');
    assert.notStrictEqual(r.code, 0);
    assert.match(r.err, /cannot be read as an index/);
    assert.ok(existsSync(bad));
    assert.deepStrictEqual(readdirSync(dir), ['bad.db']);
    assert.match((await cli('serve', '--db', path.join(dir, 'none.db'))).err, /no index at/);
    for (const port of ['', '1e3', '0x1F', '80.0', '99999999999999999999', '70000'])
      assert.match((await cli('serve', '--db', bad, '--port', port)).err, /--port is a port number/, port);
    assert.match((await cli('serve', '--db', bad, '--host', '')).err, /--host names an address/);
    assert.match((await cli('serve', '--db', bad, '--db', bad)).err, /given twice/);
  });

  it("lists the server's blocks beside this index's in nn-rag mcp --server (search_blocks), each saying which server", async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'ownzoo/__init__.py': '',
      'ownzoo/layers.py': ['from torch import nn', '', ...block('LocalAttention', 'Attention nearby.')].join('\n'),
    });
    const mine = path.join(dir, 'mine.db');
    assert.strictEqual((await cli('index', path.join(dir, 'ownzoo'), '--db', mine)).code, 0);
    const client = new Client({ name: 'nnrag-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(ROOT, 'src/cli/main.ts'), 'mcp', '--db', mine, '--server', at.url],
        stderr: 'ignore',
      }),
    );
    try {
      const r = (await client.callTool({ name: 'search_blocks', arguments: { query: 'attention' } })) as { content: { text: string }[] };
      const hits = JSON.parse(r.content[0].text) as { name: string; server?: string }[];
      assert.deepStrictEqual(hits.map((h) => [h.name, h.server]).sort(), [
        ['LocalAttention', undefined],
        ['WindowAttention', at.label],
      ]);
    } finally {
      await client.close();
    }
  });

  it('refuses an address that is not a server', () => {
    assert.throws(() => serverAt('ftp://team/'), /http or https/);
    assert.throws(() => serverAt('http://user:secret@team/'), /no user or password/);
    assert.throws(() => serverAt('team host'), /an address such as/);
    assert.strictEqual(serverAt('http://team:7723/search?x=1').url, 'http://team:7723/search/');
    assert.deepStrictEqual(serverAt('http://team:7723/v1/search'), { url: 'http://team:7723/', label: 'team:7723' });
    assert.strictEqual(serverAt('http://team:7723/b/').label, 'team:7723/b');
  });

  it('is served by nn-rag serve and asked by nn-rag search --server', async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'served/__init__.py': '',
      'served/m.py': ['from torch import nn', '', ...block('ServedAttention', 'Attention kept by the team.')].join('\n'),
      'mine/__init__.py': '',
      'mine/m.py': ['from torch import nn', '', ...block('MyAttention', 'Attention of my own.')].join('\n'),
    });
    const teamDb = path.join(dir, 'team.db');
    const mineDb = path.join(dir, 'mine.db');
    assert.strictEqual((await cli('index', path.join(dir, 'served'), '--db', teamDb)).code, 0);
    assert.strictEqual((await cli('index', path.join(dir, 'mine'), '--db', mineDb)).code, 0);
    const stop = new AbortController();
    let err = '';
    const serving = runCli(['serve', '--db', teamDb, '--port', '0'], {
      assets: ASSETS,
      out: () => undefined,
      err: (t) => (err += t),
      tty: false,
      env: {},
      signal: stop.signal,
    });
    try {
      for (let k = 0; k < 200 && !/ at http/.test(err); k++) await new Promise((resolve) => setTimeout(resolve, 50));
      const url = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(err)?.[1];
      assert.ok(url, err);
      const r = await cli('search', 'attention', '--db', mineDb, '--server', url, '--json');
      assert.strictEqual(r.code, 0, r.err);
      const hits = JSON.parse(r.out) as { name: string; index?: string }[];
      assert.deepStrictEqual(hits.map((h) => h.name).sort(), ['MyAttention', 'ServedAttention']);
      assert.strictEqual(hits.find((h) => h.name === 'ServedAttention')?.index, new URL(url).host);
      // a server that is not there: the local hits, and a warning
      const gone = await cli('search', 'attention', '--db', mineDb, '--server', 'http://127.0.0.1:9/', '--json');
      assert.strictEqual(gone.code, 0);
      assert.deepStrictEqual(
        (JSON.parse(gone.out) as { name: string }[]).map((h) => h.name),
        ['MyAttention'],
      );
      assert.match(gone.err, /search server 127\.0\.0\.1:9/);
      // the team indexes anew: the server reads its index again and serves the new block
      // (a block of its own: a copy of another would be listed as that one)
      const later = [
        'class NewlyServedAttention(nn.Module):',
        '    """Attention indexed later."""',
        '    def forward(self, q, k):',
        '        return (q @ k.T).softmax(-1)',
      ];
      await writeTree(dir, { 'served/n.py': ['from torch import nn', '', ...later, ''].join('\n') });
      assert.strictEqual((await cli('index', path.join(dir, 'served'), '--db', teamDb)).code, 0);
      // (the index may be saved more than once as it runs: each save is read again)
      let first: string | undefined;
      for (let k = 0; k < 100 && first !== 'NewlyServedAttention'; k++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        first = (JSON.parse((await cli('search', 'newly served attention', '--db', mineDb, '--server', url, '--json')).out) as { name: string }[])[0]?.name;
      }
      assert.strictEqual(first, 'NewlyServedAttention', err);
      assert.match(err, /read again/);
    } finally {
      stop.abort();
      assert.strictEqual(await serving, 0);
    }
  });
});
