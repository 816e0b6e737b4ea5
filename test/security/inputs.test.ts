/**
 * Hostile names and paths: a repository named `..`, files that a pull must not replace or write through, escape
 * sequences in docstrings. Nothing is written outside the folder the user chose, nothing the user owns is replaced
 * without --force, and nothing from indexed code reaches the terminal as a control sequence.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { cli, ROOT, tmpdir, writeTree } from '../unit/helpers';

const BLOCK =
  'from torch import nn\n\n\nclass Tiny(nn.Module):\n    """Tiny \x1b[2J\x1b]0;pwned\x07 block\x9b31m."""\n\n    def forward(self, x):\n        return x\n';

/** Every file under `dir`, relative. */
function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

describe('hostile names and paths', () => {
  let dir: string;
  let repo: string;
  let db: string;
  before(async () => {
    dir = await tmpdir('nnrag-inputs-');
    repo = path.join(dir, 'src', 'tiny');
    db = path.join(dir, 'index.db');
    await writeTree(repo, { 'tiny/__init__.py': '', 'tiny/layers.py': BLOCK });
    const r = await cli('index', repo, '--name', '..', '--db', db);
    assert.strictEqual(r.code, 0, r.err);
  });

  it('a repository named .. writes inside --out-dir for pull --all and spec --all', async () => {
    const out = path.join(dir, 'out', 'pulled');
    const before = files(dir).filter((f) => !f.startsWith(path.join('out', 'pulled')));
    const pulled = await cli('pull', '--all', '--db', db, '--out-dir', out, '--no-validate');
    assert.strictEqual(pulled.code, 0, pulled.err);
    const specs = path.join(dir, 'out', 'specs');
    const spec = await cli('spec', '--all', '--db', db, '--out-dir', specs);
    assert.strictEqual(spec.code, 0, spec.err);
    const after = files(dir).filter((f) => !f.startsWith(path.join('out', 'pulled')) && !f.startsWith(path.join('out', 'specs')));
    assert.deepStrictEqual(
      after.filter((f) => !f.startsWith('index.db')),
      before.filter((f) => !f.startsWith('index.db')),
      'a file was written outside the output folders',
    );
    assert.ok(
      files(out).some((f) => f.endsWith('tiny_layers__Tiny.py')),
      files(out).join(', '),
    );
    assert.ok(
      files(specs).some((f) => f.endsWith('tiny.layers.Tiny.json')),
      files(specs).join(', '),
    );
  });

  it('--out refuses to replace a file that was not pulled, an edited pull, or to write through a link, without --force', async () => {
    const mine = path.join(dir, 'mine.py');
    fs.writeFileSync(mine, 'print("my own code")\n');
    const refused = await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', mine, '--no-validate');
    assert.notStrictEqual(refused.code, 0);
    assert.match(refused.err, /was not pulled by NN-RAG; --force replaces it/);
    assert.strictEqual(fs.readFileSync(mine, 'utf8'), 'print("my own code")\n');

    const pulled = path.join(dir, 'pulled.py');
    assert.strictEqual((await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', pulled, '--no-validate')).code, 0);
    assert.strictEqual((await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', pulled, '--no-validate')).code, 0, 'an unedited pull is replaced');
    fs.appendFileSync(pulled, '\n# my edit\n');
    const edited = await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', pulled, '--no-validate');
    assert.notStrictEqual(edited.code, 0);
    assert.match(edited.err, /edited since it was pulled.*update/);
    assert.match(fs.readFileSync(pulled, 'utf8'), /# my edit/);

    const target = path.join(dir, 'target.txt');
    fs.writeFileSync(target, 'keep me\n');
    const link = path.join(dir, 'link.py');
    fs.symlinkSync(target, link);
    const through = await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', link, '--no-validate');
    assert.notStrictEqual(through.code, 0);
    assert.match(through.err, /symbolic link/);
    assert.strictEqual(fs.readFileSync(target, 'utf8'), 'keep me\n');

    const forced = await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', mine, '--no-validate', '--force');
    assert.strictEqual(forced.code, 0, forced.err);
    assert.match(fs.readFileSync(mine, 'utf8'), /class Tiny/);
    const forcedLink = await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', link, '--no-validate', '--force');
    assert.strictEqual(forcedLink.code, 0, forcedLink.err);
    assert.ok(!fs.lstatSync(link).isSymbolicLink(), 'the link is replaced, not written through');
    assert.strictEqual(fs.readFileSync(target, 'utf8'), 'keep me\n');
  });

  it('pulls blocks from files whose names hold spaces, other letters or a leading dash', async () => {
    const names = path.join(dir, 'names');
    const block = (n: string): string => `from torch import nn\n\n\nclass ${n}(nn.Module):\n    def forward(self, x):\n        return x\n`;
    await writeTree(names, { 'pk/__init__.py': '', 'pk/my file.py': block('Sp'), 'pk/módulo.py': block('Ünï'), 'pk/-dash.py': block('Da') });
    const ndb = path.join(dir, 'names.db');
    assert.strictEqual((await cli('index', names, '--db', ndb)).code, 0);
    for (const target of ['pk.my file.Sp', 'pk.módulo.Ünï', 'names:pk.-dash.Da']) {
      const out = path.join(dir, 'names-out', `${target.length}.py`);
      const r = await cli('pull', target, '--db', ndb, '--out', out, '--no-validate');
      assert.strictEqual(r.code, 0, `${target}: ${r.err}`);
      assert.match(fs.readFileSync(out, 'utf8'), new RegExp(`class ${target.split('.').pop()}\\(nn\\.Module\\)`));
    }
  });

  it('the language server survives malformed frames over stdio and answers the next good one', async function () {
    this.timeout(60_000);
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(ROOT, 'src/server/main.ts'), '--stdio'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const frame = (obj: unknown): string => {
      const body = Buffer.from(JSON.stringify(obj));
      return `Content-Length: ${body.length}\r\n\r\n${body.toString()}`;
    };
    try {
      child.stdin.write('Content-Length: abc\r\n\r\n{"jsonrpc":"2.0","id":0,"method":"x"}garbage\r\n\r\n');
      child.stdin.write('Content-Length: 99999999999\r\n\r\n');
      child.stdin.write(`${'x'.repeat(10_000)}\r\n\r\n`);
      child.stdin.write(
        frame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, rootUri: null, capabilities: {}, initializationOptions: {} } }),
      );
      const end = Date.now() + 45_000;
      while (!/"id":1,"result"/.test(out) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      assert.match(out, /"id":1,"result":\{"capabilities"/, `no answer after malformed frames; stderr: ${err.slice(-500)}`);
      assert.match(err, /\[lsp\] dropped a header without a valid Content-Length/);
      assert.match(err, /\[lsp\] dropped a frame of 99999999999 bytes/);
    } finally {
      child.kill();
    }
  });

  it('status and update on tampered headers: damaged ones are named, never "up to date", and nothing crashes', async () => {
    const pulled = path.join(dir, 'tamper', 'orig.py');
    assert.strictEqual((await cli('pull', 'tiny.layers.Tiny', '--db', db, '--out', pulled, '--no-validate')).code, 0);
    const text = fs.readFileSync(pulled, 'utf8');
    const line = text.split('\n').find((l) => l.startsWith('# nnrag-provenance: '))!;
    const prov = JSON.parse(line.slice('# nnrag-provenance: '.length)) as Record<string, unknown> & { definitions: Record<string, unknown>[] };
    const variants: Record<string, string> = {
      'not-json.py': '# nnrag-provenance: {"version":1',
      'bad-definitions.py': `# nnrag-provenance: ${JSON.stringify({ ...prov, definitions: [{ names: ['X'], module: 1, path: null, blob: 'zz' }] })}`,
      'no-definitions.py': `# nnrag-provenance: ${JSON.stringify({ ...prov, definitions: 'x' })}`,
      'bad-hash.py': `# nnrag-provenance: ${JSON.stringify({ ...prov, hash: 'md5:0' })}`,
    };
    for (const [name, record] of Object.entries(variants)) {
      const file = path.join(dir, 'tamper', name);
      fs.writeFileSync(file, text.replace(line, record));
      const status = await cli('status', file, '--db', db);
      assert.strictEqual(status.code, 1, `${name}: ${status.out}${status.err}`);
      assert.match(status.out, /damaged header/, name);
      const update = await cli('update', file, '--db', db);
      assert.strictEqual(update.code, 3, `${name}: ${update.out}${update.err}`);
      assert.match(update.err, /damaged NN-RAG header/);
      assert.doesNotMatch(status.err + update.err, /internal error/);
    }
    // a target that is not in the index is said to be unknown, not up to date
    const unknown = path.join(dir, 'tamper', 'unknown.py');
    fs.writeFileSync(unknown, text.replace(line, `# nnrag-provenance: ${JSON.stringify({ ...prov, target: 'nowhere:no.Such' })}`));
    const st = await cli('status', unknown, '--db', db);
    assert.match(st.out, /nowhere:no\.Such is not in this index/);
    // recorded sources that are not the real ones: upstream changed, and update writes the header again
    const forged = path.join(dir, 'tamper', 'forged.py');
    fs.writeFileSync(
      forged,
      text.replace(line, `# nnrag-provenance: ${JSON.stringify({ ...prov, definitions: prov.definitions.map((d) => ({ ...d, blob: '0'.repeat(40) })) })}`),
    );
    // (the code is upstream's: only a definition's own text decides upstream changes, and the header's sources are said)
    const forgedStatus = await cli('status', forged, '--db', db);
    assert.match(forgedStatus.out, /header names other sources than the index holds/, forgedStatus.out);
    const up = await cli('update', forged, '--db', db);
    assert.strictEqual(up.code, 0, up.err);
    assert.match(up.out, /header recorded other sources and was written again/);
    assert.strictEqual((await cli('status', forged, '--db', db)).code, 0);
  });

  it('escape sequences from docstrings never reach the terminal raw, and JSON still reads them back', async () => {
    const text = await cli('search', 'tiny', '--db', db);
    const json = await cli('search', 'tiny', '--db', db, '--json');
    const show = await cli('show', 'tiny.layers.Tiny', '--db', db);
    for (const r of [text, json, show]) {
      assert.strictEqual(r.code, 0, r.err);
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(r.out, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'a control character reached the output');
    }
    const hits = JSON.parse(json.out) as { doc?: string; docstring?: string }[];
    assert.ok(JSON.stringify(hits).includes('\\u001b[2J'), 'the docstring is in the JSON, escaped');
  });
});
