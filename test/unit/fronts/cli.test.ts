import * as assert from 'assert';
import { readdirSync, readFileSync } from 'fs';
import { chmod } from 'fs/promises';
import * as path from 'path';
import { cli, ROOT, tmpdir, writeTree } from '../helpers';

describe('command line', () => {
  let repo: string;
  let db: string;
  before(async () => {
    const dir = await tmpdir();
    repo = path.join(dir, 'mylib');
    db = path.join(dir, 'index.db');
    await writeTree(repo, {
      'mylib/__init__.py': '',
      'mylib/blocks.py':
        'from torch import nn\n\nclass SqueezeExcite(nn.Module):\n    """Channel attention."""\n    def __init__(self, ch=8):\n        super().__init__()\n',
      'mylib/bad.py': 'print "old"\n',
    });
  });

  it('indexes, then searches, shows and reports stats as JSON', async () => {
    const idx = await cli('index', repo, '--db', db);
    assert.strictEqual(idx.code, 0, idx.err);
    assert.match(idx.out, /\[index\] mylib: 3 files/);
    const search = await cli('search', 'squeeze', '--db', db, '--json');
    assert.strictEqual(search.code, 0);
    const hits = JSON.parse(search.out);
    assert.deepStrictEqual(
      { name: hits[0].name, qualname: hits[0].qualname, repo: hits[0].repo, path: hits[0].path, line: hits[0].line },
      { name: 'SqueezeExcite', qualname: 'mylib.blocks.SqueezeExcite', repo: 'mylib', path: 'mylib/blocks.py', line: 3 },
    );
    const show = await cli('show', 'mylib:mylib.blocks.SqueezeExcite', '--db', db, '--json');
    assert.strictEqual(show.code, 0, show.err);
    const details = JSON.parse(show.out);
    assert.deepStrictEqual(details.bases, [{ written: 'nn.Module', resolved: 'torch.nn.Module' }]);
    assert.ok(details.dependencies.some((d: { name: string; kind: string }) => d.name === 'nn' && d.kind === 'external'));
    const stats = JSON.parse((await cli('stats', '--db', db, '--json')).out);
    assert.strictEqual(stats.blocks, 1);
    assert.deepStrictEqual(stats.skipped_by_reason, { python2: 1 });
    assert.strictEqual(stats.skipped_files[0].path, 'mylib/bad.py');
  });

  it('says why each definition is pulled in (show --deps), and keeps classes whole when asked (--whole-classes)', async () => {
    const dir = await tmpdir();
    const lib = path.join(dir, 'deps');
    const depsDb = path.join(dir, 'deps.db');
    await writeTree(lib, {
      'deps/__init__.py': '',
      'deps/base.py':
        'from torch import nn\n\ndef loader(m):\n    return m\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n    def load(self):\n        return loader(self)\n',
      'deps/act.py': 'from torch import nn\n\ndef gelu(x):\n    return x\n\nclass Act(nn.Module):\n    def forward(self, x):\n        return gelu(x)\n',
      'deps/block.py':
        'from .base import Base\nfrom .act import Act\n\nclass Block(Base):\n    def __init__(self):\n        super().__init__()\n        self.act = Act()\n',
    });
    assert.strictEqual((await cli('index', lib, '--db', depsDb)).code, 0);
    const shown = await cli('show', '--deps', 'deps.block.Block', '--db', depsDb, '--json');
    assert.strictEqual(shown.code, 0, shown.err);
    const sizes = JSON.parse(shown.out);
    const gelu = sizes.largest.find((d: { names: string[] }) => d.names.includes('gelu'));
    assert.deepStrictEqual(gelu.chain, ['Block', 'Act', 'gelu']);
    assert.ok(!sizes.largest.some((d: { names: string[] }) => d.names.includes('loader')), 'a method nothing reaches took its helper in');
    const text = await cli('show', '--deps', 'deps.block.Block', '--db', depsDb);
    assert.match(text.out, /lines: the block \d+, pulled in with it \d+/);
    assert.match(text.out, /Block -> Act -> gelu/);
    const whole = JSON.parse((await cli('show', '--deps', 'deps.block.Block', '--db', depsDb, '--json', '--whole-classes')).out);
    assert.deepStrictEqual(whole.largest.find((d: { names: string[] }) => d.names.includes('loader'))?.chain, ['Block', 'Base', 'loader']);
  });

  it('exits 2 on usage errors and 3 on bad input, with a clear message', async () => {
    const cases: [string[], number, RegExp][] = [
      [['frobnicate'], 2, /unknown command/],
      [['search', 'x', '--db', db, '--colour'], 2, /unknown option --colour/],
      [['index', '--db', db], 2, /at least one SOURCE/],
      [['index', '/definitely/not/here', '--db', db], 3, /neither an http\(s\) git URL nor an existing folder/],
      [['index', 'ftp://example.org/x.git', '--db', db], 3, /only http:\/\/ and https:\/\//],
      [['search', 'x', '--db', path.join(path.dirname(db), 'nope.db')], 3, /no index at/],
      [['show', 'no.such.Thing', '--db', db], 3, /no class 'no.such.Thing'/],
      [['show', 'not a target', '--db', db], 2, /not a target/],
      [['search', 'x', '--db', db, '--limit', 'many'], 2, /whole number/],
      [['pull', 'mylib.blocks.SqueezeExcite', '--db', db], 2, /--out FILE/],
    ];
    for (const [argv, code, message] of cases) {
      const r = await cli(...argv);
      assert.strictEqual(r.code, code, `${argv.join(' ')}: ${r.err}`);
      assert.match(r.err, message, argv.join(' '));
    }
  });

  it('reports a missing interpreter as a failed pull, not a crash', async () => {
    const out = path.join(path.dirname(db), 'p.py');
    const r = await cli('pull', 'mylib.blocks.SqueezeExcite', '--db', db, '--out', out, '--python', '/no/such/python3', '--json');
    assert.strictEqual(r.code, 1);
    const report = JSON.parse(r.out);
    assert.strictEqual(report.status, 'failed');
    assert.strictEqual(report.category, 'interpreter');
    assert.match(report.message, /not found: \/no\/such\/python3/);
  });

  it('warns, naming it, before validating with an interpreter that has no torch', async function () {
    this.timeout(60_000);
    // Debian's python3 without its site folders: a real interpreter, without torch
    const bare = path.join(path.dirname(db), 'bare-python');
    await writeTree(path.dirname(bare), { 'bare-python': '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' });
    await chmod(bare, 0o755);
    const r = await cli('pull', 'mylib.blocks.SqueezeExcite', '--db', db, '--out', path.join(path.dirname(db), 'bare.py'), '--python', bare);
    assert.match(r.err, new RegExp(`warning: ${bare.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(Python [\\d.]+\\) has no torch`));
    assert.strictEqual(r.code, 1);
  });

  it('prints help with the exit codes', async () => {
    const r = await cli('--help');
    assert.strictEqual(r.code, 0);
    assert.match(r.out, /exit codes:/);
  });

  it("prints a command's own help, documents every option each command takes, and suggests what a typo meant", async () => {
    const pull = await cli('pull', '--help');
    assert.strictEqual(pull.code, 0, pull.err);
    assert.match(pull.out, /^usage:\n {2}nn-rag pull TARGET/);
    assert.doesNotMatch(pull.out, /nn-rag index/);
    assert.match(pull.out, /exit codes:/);
    // every option a command's parser accepts (read from its source) is in that command's help
    for (const file of readdirSync(path.join(ROOT, 'src', 'cli')).filter((f) => f.endsWith('Commands.ts'))) {
      const src = readFileSync(path.join(ROOT, 'src', 'cli', file), 'utf8');
      for (const m of src.matchAll(/export async function (\w+)Command\(argv[^]*?parse\(argv, (\{[^;]*?\}|[A-Z_]+)\)/g)) {
        const command = m[1] === 'showDeps' ? 'show' : m[1];
        const spec = /^[A-Z_]+$/.test(m[2]) ? (new RegExp(`const ${m[2]} = (\\{[^;]*?\\n\\});`).exec(src)?.[1] ?? '') : m[2];
        const help = (await cli(command, '--help')).out;
        for (const o of spec.matchAll(/'?([a-z][a-z-]*)'?: \{/g)) assert.ok(help.includes(`--${o[1]}`), `nn-rag ${command} --help does not mention --${o[1]}`);
      }
    }
    const typo = await cli('serach', 'attention');
    assert.strictEqual(typo.code, 2);
    assert.match(typo.err, /unknown command 'serach'; did you mean nn-rag search\?/);
    assert.match((await cli('search', 'x', '--limt', '3')).err, /unknown option --limt; did you mean --limit\?/);
    assert.doesNotMatch((await cli('search', 'x', '--zzzzzz')).err, /did you mean/);
  });
});
