/**
 * `nn-rag validate FILE` compares a pulled file with the original its header names: `equivalent` where the pull was,
 * `differs` (and what) after a semantic edit, said to be the user's edit; a file whose original cannot be found says
 * why it was not compared.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

describe('nn-rag validate FILE compares with the original', function () {
  this.timeout(300_000);
  let dir: string;
  let db: string;
  let file: string;

  before(async () => {
    dir = await tmpdir('nnrag-validate-file-');
    db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db)).code, 0);
    file = path.join(dir, 'residual_block.py');
    const r = await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', db, '--out', file, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(r.code, 0, r.err);
    assert.strictEqual(JSON.parse(r.out).tier, 'equivalent');
  });

  it('search says what a block is before it is chosen: the verdict a pull recorded, and the license', async () => {
    const r = await cli('search', 'residual block', '--db', db, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const hit = (JSON.parse(r.out) as { name: string; license: string | null; validation: { tier: string } | null }[]).find((h) => h.name === 'ResidualBlock');
    assert.deepStrictEqual([hit?.license, hit?.validation?.tier], ['MIT', 'equivalent']);
  });

  it("judges an unedited file as its pull did: with the inputs the repository's tests feed the block", async () => {
    const repo = path.join(dir, 'odd');
    fs.mkdirSync(path.join(repo, 'oddpkg'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'tests'));
    fs.writeFileSync(path.join(repo, 'oddpkg', '__init__.py'), '');
    fs.writeFileSync(
      path.join(repo, 'oddpkg', 'layers.py'),
      'from torch import nn\n\n\nclass SevenTokens(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        assert x.shape[-2] == 7, "seven tokens"\n        return self.lin(x)\n',
    );
    fs.writeFileSync(
      path.join(repo, 'tests', 'test_layers.py'),
      'import torch\n\nfrom oddpkg.layers import SevenTokens\n\n\ndef test_seven():\n    m = SevenTokens(8)\n    x = torch.randn(2, 7, 8)\n    assert m(x).shape == (2, 7, 8)\n',
    );
    const odb = path.join(dir, 'odd.db');
    assert.strictEqual((await cli('index', repo, '--db', odb)).code, 0);
    const out = path.join(dir, 'seven_tokens.py');
    const pulled = JSON.parse((await cli('pull', 'oddpkg.layers.SevenTokens', '--db', odb, '--out', out, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(pulled.tier, 'equivalent', JSON.stringify(pulled));
    const again = JSON.parse((await cli('validate', out, '--db', odb, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(again.tier, 'equivalent', JSON.stringify(again));
  });

  it('an unedited pulled file is equivalent, as the pull said, with the values compared', async () => {
    const r = await cli('validate', file, '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    assert.ok(report.equivalence.compared_values > 0);
    assert.strictEqual(report.edited, false);
  });

  it("a semantic edit differs, says what differed and that it is the user's edit", async () => {
    const edited = path.join(dir, 'edited', 'residual_block.py');
    fs.mkdirSync(path.dirname(edited));
    const text = fs.readFileSync(file, 'utf8');
    const changed = text.replace('return self.act(self.shortcut(x) + self.drop_path(y))', 'return self.act(self.shortcut(x) + 0.5 * self.drop_path(y))');
    assert.notStrictEqual(changed, text);
    fs.writeFileSync(edited, changed);
    const r = await cli('validate', edited, '--db', db, '--python', PYTHON_WITH_TORCH, '--json');
    assert.notStrictEqual(r.code, 0);
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'differs', r.out);
    assert.strictEqual(report.edited, true);
    assert.match(report.message, /your edits/);
    assert.ok(report.equivalence.differences.length > 0);
  });

  it('without the index that names the original, it stops at forward and says why', async () => {
    const r = await cli('validate', file, '--db', path.join(dir, 'none.db'), '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'forward');
    assert.strictEqual(report.equivalence.status, 'unavailable');
    assert.match(report.equivalence.reason, /no index/);
  });
});
