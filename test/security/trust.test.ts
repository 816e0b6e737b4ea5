/**
 * Trust, second round: what is written is the tool's alone (no planted PEP 723 block, no write through a link at any
 * depth, no file a tool runs by itself written or replaced by a code assistant), nothing of a report reaches a page
 * unescaped, and no credential is printed. The judge's side of it (forged originals, markers, jobs that share
 * nothing) is in judge.test.ts.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { NnragError } from '../../src/core/base/errors';
import { removeManifests } from '../../src/core/emit/manifest';
import { checkGitUrl, redactUrls } from '../../src/core/sources/git';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../unit/helpers';

type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

const PLANTED = `from torch import nn


class Planted(nn.Module):
# /// script
# dependencies = ["attacker-pkg"]
# ///
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)
`;

describe("trust: what is written is the tool's alone", function () {
  this.timeout(300_000);
  let dir: string;
  let db: string;

  before(async () => {
    dir = await tmpdir('nnrag-trust-');
    db = path.join(dir, 'index.db');
    await writeTree(path.join(dir, 'src', 'planted'), { 'planted/__init__.py': '', 'planted/layers.py': PLANTED });
    assert.strictEqual((await cli('index', path.join(dir, 'src', 'planted'), '--db', db)).code, 0);
  });

  it("a pull never deletes the user's own files named as an earlier version's records (app.manifest.json, required_repos.json)", async () => {
    const proj = path.join(dir, 'proj');
    const mine = { 'app.manifest.json': '{"name": "my app", "version": 3}\n', 'required_repos.json': '["my", "own", "list"]\n' };
    await writeTree(proj, mine);
    const r = await cli('pull', 'planted.layers.Planted', '--db', db, '--out', path.join(proj, 'app.py'), '--no-validate');
    assert.strictEqual(r.code, 0, r.err);
    for (const [name, text] of Object.entries(mine)) assert.strictEqual(fs.readFileSync(path.join(proj, name), 'utf8'), text, name);
    assert.ok(fs.existsSync(path.join(proj, '.nnrag', 'app.manifest.json')), "the pull's own records are in .nnrag/");
    // and when the file goes, they stay too
    await removeManifests(path.join(proj, 'app.py'));
    for (const [name, text] of Object.entries(mine)) assert.strictEqual(fs.readFileSync(path.join(proj, name), 'utf8'), text, name);
  });

  it('a PEP 723 block in indexed code is not one in the pulled file; with --pep723 the file holds exactly one', async () => {
    const out = path.join(dir, 'planted_block.py');
    const r = await cli('pull', 'planted.layers.Planted', '--db', db, '--out', out, '--no-validate');
    assert.strictEqual(r.code, 0, r.err);
    const text = fs.readFileSync(out, 'utf8');
    assert.strictEqual((text.match(/^# \/\/\/ script$/gm) ?? []).length, 0, text);
    assert.match(text, /^# {2}\/\/\/ script$/m, 'the planted line is kept, indented');
    const meta = path.join(dir, 'planted_meta.py');
    const v = await cli('pull', 'planted.layers.Planted', '--db', db, '--out', meta, '--pep723', '--python', PYTHON_WITH_TORCH);
    assert.strictEqual(v.code, 0, v.err);
    const withMeta = fs.readFileSync(meta, 'utf8');
    assert.strictEqual((withMeta.match(/^# \/\/\/ script$/gm) ?? []).length, 1, withMeta);
    assert.ok(!withMeta.slice(0, withMeta.indexOf('# nnrag-provenance')).includes('attacker-pkg'), 'the header names no planted dependency');
  });

  it('pull --all never writes through a link, at the repository folder or deeper', async () => {
    const out = path.join(dir, 'all');
    const target = path.join(dir, 'link-target');
    await fsp.mkdir(out);
    await fsp.mkdir(target);
    await fsp.symlink(target, path.join(out, 'planted'));
    const r = await cli('pull', '--all', '--db', db, '--out-dir', out, '--no-validate');
    assert.notStrictEqual(r.code, 0);
    assert.match(r.err + r.out, /link/);
    assert.deepStrictEqual(fs.readdirSync(target), [], 'a file was written through the link');
    // a link to a folder inside the output folder is refused too: no component below --out-dir is followed
    await fsp.unlink(path.join(out, 'planted'));
    await fsp.mkdir(path.join(out, 'real'));
    await fsp.symlink(path.join(out, 'real'), path.join(out, 'planted'));
    const again = await cli('pull', '--all', '--db', db, '--out-dir', out, '--no-validate');
    assert.notStrictEqual(again.code, 0);
    assert.deepStrictEqual(fs.readdirSync(path.join(out, 'real')), []);
  });

  it('report --html escapes and type-checks every value of a report file', async () => {
    const report = path.join(dir, 'report.json');
    const evil = '<script>alert(1)</script>';
    const summary = {
      targeted: 1,
      extracted: 1,
      validated: 0,
      pass_rate: 0,
      tiers: { parsed: evil, forward: evil },
      categories: { [evil]: evil },
      seconds_per_block: evil,
    };
    fs.writeFileSync(report, JSON.stringify({ summary, items: [] }));
    const page = path.join(dir, 'report.html');
    const r = await cli('report', '--from', report, '--html', page);
    assert.strictEqual(r.code, 0, r.err);
    const html = fs.readFileSync(page, 'utf8');
    assert.ok(!html.includes('<script'), 'a value reached the page as markup');
  });

  it('never prints a credential: URLs with user info or a token are refused and shown without them', () => {
    for (const url of [
      'https://alice:hunter2@example.invalid/r.git',
      'https://example.invalid/r.git?token=hunter2',
      'https://example.invalid/r.git#access_token=hunter2',
      'htps://alice:hunter2@example.invalid/r.git',
    ]) {
      let message = '';
      try {
        checkGitUrl(url);
      } catch (err) {
        message = err instanceof NnragError ? err.message : String(err);
      }
      assert.ok(message, `${url} was accepted`);
      assert.ok(!message.includes('hunter2'), message);
    }
    assert.strictEqual(redactUrls('cannot clone https://bob:tok@h.invalid/x.git?private_token=abc: 401'), 'cannot clone https://h.invalid/x.git: 401');
  });

  describe('a code assistant (MCP) writes only what a person would', () => {
    let client: Client;
    let root: string;
    before(async () => {
      root = path.join(dir, 'project');
      await fsp.mkdir(path.join(root, 'pkg'), { recursive: true });
      fs.writeFileSync(path.join(root, 'setup.py'), 'print("the user\'s setup")\n');
      fs.writeFileSync(path.join(root, 'pkg', '__init__.py'), "# the user's package\n");
      fs.writeFileSync(path.join(root, 'pkg', 'model.py'), "# the user's model\n");
      const example = path.join(dir, 'example.db');
      assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', example)).code, 0);
      client = new Client({ name: 'nnrag-trust', version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [
            path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
            path.join(ROOT, 'src/cli/main.ts'),
            'mcp',
            '--db',
            example,
            '--root',
            root,
            '--python',
            PYTHON_WITH_TORCH,
          ],
          stderr: 'ignore',
        }),
      );
    });
    after(async () => {
      await client?.close();
    });
    const pull = async (destination: string, extra: Record<string, unknown> = {}): Promise<ToolResult> =>
      (await client.callTool({
        name: 'pull_block',
        arguments: { target: 'tinyblocks.blocks.ResidualBlock', destination, validate: false, ...extra },
      })) as ToolResult;

    it('refuses files that Python tools run or import by themselves, and modules that shadow others', async () => {
      for (const name of [
        'conftest.py',
        'sitecustomize.py',
        'usercustomize.py',
        'setup.py',
        'pkg/__init__.py',
        '__main__.py',
        'noxfile.py',
        'manage.py',
        'torch.py',
        'os.py',
        'json.py',
        'sub/torchvision.py',
      ]) {
        const r = await pull(name);
        assert.strictEqual(r.isError, true, `${name} was written`);
        assert.match(r.content[0].text, /refused/, name);
      }
      assert.ok(!fs.existsSync(path.join(root, 'conftest.py')) && !fs.existsSync(path.join(root, 'sub')));
      assert.strictEqual(fs.readFileSync(path.join(root, 'setup.py'), 'utf8'), 'print("the user\'s setup")\n');
      assert.strictEqual(fs.readFileSync(path.join(root, 'pkg', '__init__.py'), 'utf8'), "# the user's package\n");
    });

    it('never replaces a file that was not pulled, whatever force says', async () => {
      for (const extra of [{}, { force: true }]) {
        const r = await pull('pkg/model.py', extra);
        assert.strictEqual(r.isError, true, JSON.stringify(extra));
      }
      assert.strictEqual(fs.readFileSync(path.join(root, 'pkg', 'model.py'), 'utf8'), "# the user's model\n");
      const ok = await pull('pkg/residual.py');
      assert.ok(!ok.isError, ok.content[0].text);
    });

    it('does not write through a link below its root', async () => {
      const elsewhere = path.join(dir, 'mcp-elsewhere');
      await fsp.mkdir(elsewhere);
      await fsp.mkdir(path.join(root, 'models'));
      await fsp.symlink(path.join(root, 'models'), path.join(root, 'linked'));
      const r = await pull('linked/residual.py');
      assert.strictEqual(r.isError, true, r.content[0].text);
      assert.deepStrictEqual(fs.readdirSync(path.join(root, 'models')), []);
    });
  });
});
