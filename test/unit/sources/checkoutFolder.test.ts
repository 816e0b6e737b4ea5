/**
 * A git checkout added as a folder (or by a file:// URL) is recognised as one: its pulled files name the commit and
 * where it came from. ssh URLs and bare repositories are refused with what to give instead.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { pathToFileURL } from 'url';
import { git } from '../gitServer';
import { cli, tmpdir, writeTree } from '../helpers';

describe('a git checkout indexed as a folder', function () {
  this.timeout(60_000);

  it("records HEAD's commit and the origin URL (without credentials) in the pulled file", async () => {
    const dir = await tmpdir('nnrag-checkout-');
    const repo = path.join(dir, 'gated');
    await writeTree(repo, {
      'gated/__init__.py': '',
      'gated/blocks.py': 'from torch import nn\n\n\nclass Gate(nn.Module):\n    def forward(self, x):\n        return x.sigmoid() * x\n',
    });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@example.org', 'commit', '-qm', 'first');
    git(repo, 'remote', 'add', 'origin', 'https://someone:secret@example.org/lab/gated.git?token=abc');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const out = path.join(dir, 'gate.py');
    assert.strictEqual((await cli('pull', 'gated.blocks.Gate', '--db', db, '--out', out, '--no-validate')).code, 0);
    const text = fs.readFileSync(out, 'utf8');
    assert.ok(text.includes(head), 'the commit is named');
    assert.doesNotMatch(text, /secret|someone|token=abc/);
    assert.match(text, /example\.org\/lab\/gated\.git/);
    // the same checkout named by a file:// URL
    const db3 = path.join(dir, 'byurl.db');
    const byUrl = await cli('index', pathToFileURL(repo).href, '--db', db3);
    assert.strictEqual(byUrl.code, 0, byUrl.err);
    assert.strictEqual((await cli('pull', 'gated.blocks.Gate', '--db', db3, '--out', path.join(dir, 'gate3.py'), '--no-validate')).code, 0);
    assert.ok(fs.readFileSync(path.join(dir, 'gate3.py'), 'utf8').includes(head));
    // ssh and bare repositories: refused, saying what to give instead
    const ssh = await cli('index', 'git@example.org:lab/gated.git', '--db', path.join(dir, 'x.db'));
    assert.notStrictEqual(ssh.code, 0);
    assert.match(ssh.err, /ssh URL, which NN-RAG cannot fetch .*https URL, or clone it and add the folder/);
    const bare = path.join(dir, 'bare.git');
    git(dir, 'clone', '-q', '--bare', repo, bare);
    const bareRun = await cli('index', pathToFileURL(bare).href, '--db', path.join(dir, 'y.db'));
    assert.notStrictEqual(bareRun.code, 0);
    assert.match(bareRun.err, /is a bare repository .*clone it/);
    // a folder that is not a checkout says so, as before
    const plain = path.join(dir, 'plain');
    await writeTree(plain, { 'plainpkg/__init__.py': '', 'plainpkg/b.py': 'from torch import nn\n\n\nclass P(nn.Module):\n    pass\n' });
    const db2 = path.join(dir, 'plain.db');
    assert.strictEqual((await cli('index', plain, '--db', db2)).code, 0);
    assert.strictEqual((await cli('pull', 'plainpkg.b.P', '--db', db2, '--out', path.join(dir, 'p.py'), '--no-validate')).code, 0);
    assert.match(fs.readFileSync(path.join(dir, 'p.py'), 'utf8'), /commit unknown \(not a git checkout\)/);
  });
});
