import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { findTarget } from '../../../src/core/store/target';
import { bodyHash, readProvenance } from '../../../src/core/emit/pulledFile';
import type { Manifest, RequiredRepos } from '../../../src/core/emit/manifest';
import { pullBlock } from '../../../src/core/pull/pull';
import { openPullSession } from '../../../src/core/pull/session';
import { loadModuleTable } from '../../../src/core/resolve/loadTable';
import { openPythonPackages } from '../../../src/core/sources/pythonEnv';
import { git } from '../gitServer';
import { cli, indexFolder, licenseFile, memoryDb, parser, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

const LICENSES: Record<string, string> = { MIT: licenseFile('MIT'), 'BSD-3-Clause': licenseFile('BSD-3-Clause'), 'Apache-2.0': licenseFile('Apache-2.0') };

describe('provenance a reviewer can check: manifest, SWHID, license, required_repos.json', function () {
  this.timeout(60_000);

  it('records per inlined definition the SWHID of its source file (git hash-object) and the SPDX id of its repository', async () => {
    const dir = await tmpdir('nnrag-prov-');
    const repos: Record<string, string> = { mitlib: 'MIT', bsdlib: 'BSD-3-Clause', apachelib: 'Apache-2.0' };
    // mitlib's block uses a helper from bsdlib and one from apachelib, both inlined
    await writeTree(path.join(dir, 'apachelib'), {
      LICENSE: LICENSES['Apache-2.0'],
      'apachelib/__init__.py': '',
      'apachelib/act.py': 'def act(x):\n    return x.clamp(min=0)\n',
    });
    await writeTree(path.join(dir, 'bsdlib'), {
      LICENSE: LICENSES['BSD-3-Clause'],
      'bsdlib/__init__.py': '',
      'bsdlib/width.py': 'def width(c):\n    return max(8, int(c))\n',
    });
    await writeTree(path.join(dir, 'mitlib'), {
      LICENSE: LICENSES.MIT,
      'mitlib/__init__.py': '',
      'mitlib/block.py':
        'import torch\nfrom torch import nn\nfrom apachelib.act import act\nfrom bsdlib.width import width\n\n\nclass Block(nn.Module):\n    def __init__(self, c=8):\n        super().__init__()\n        self.fc = nn.Linear(width(c), width(c))\n\n    def forward(self, x):\n        return act(self.fc(x))\n',
    });
    const db = await memoryDb();
    await indexFolder(db, path.join(dir, 'apachelib'), { inline: true });
    await indexFolder(db, path.join(dir, 'bsdlib'), { inline: true });
    await indexFolder(db, path.join(dir, 'mitlib'));
    for (const [name, spdx] of Object.entries(repos)) {
      assert.strictEqual(db.get('SELECT license FROM repos WHERE name = ?', [name])?.license, spdx, `${name}'s LICENSE is ${spdx}`);
    }
    const out = path.join(dir, 'out', 'block.py');
    const report = await pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, 'mitlib.block.Block'), {
      parser: await parser(),
      out,
      validate: true,
      python: PYTHON_WITH_TORCH,
      runner: path.join(ROOT, 'python-runner', 'judge.py'),
      timeoutMs: 120_000,
    });
    assert.strictEqual(report.status, 'validated', report.message);
    assert.strictEqual(report.manifest, path.join(dir, 'out', '.nnrag', 'block.manifest.json'));
    const manifest = JSON.parse(await fsp.readFile(report.manifest!, 'utf8')) as Manifest;
    const byName = new Map(manifest.definitions.map((d) => [d.names[0], d]));
    const expected: [string, string, string][] = [
      ['Block', 'mitlib', 'mitlib/block.py'],
      ['act', 'apachelib', 'apachelib/act.py'],
      ['width', 'bsdlib', 'bsdlib/width.py'],
    ];
    for (const [name, repo, file] of expected) {
      const d = byName.get(name);
      assert.ok(d, `${name} is in the manifest`);
      const gitBlob = execFileSync('git', ['hash-object', path.join(dir, repo, file)], { encoding: 'utf8' }).trim();
      assert.strictEqual(d.swhid, `swh:1:cnt:${gitBlob}`, `${name}'s SWHID is git hash-object of ${file}`);
      assert.strictEqual(d.blob, gitBlob);
      assert.strictEqual(d.license, repos[repo]);
      assert.strictEqual(d.repository, repo);
      assert.strictEqual(d.path, file);
    }
    assert.deepStrictEqual(byName.get('act')!.lines, [1, 2]);
    assert.strictEqual(manifest.validation?.status, 'validated');

    // the distributions it needs, with the versions the interpreter has and where they live
    const required = JSON.parse(await fsp.readFile(report.requiredRepos!, 'utf8')) as RequiredRepos;
    const torch = required.distributions.torch;
    assert.ok(torch, JSON.stringify(required));
    const version = execFileSync(PYTHON_WITH_TORCH, ['-c', 'import importlib.metadata as m; print(m.version("torch"))'], { encoding: 'utf8' }).trim();
    assert.strictEqual(torch.version, version);
    assert.ok(torch.location && (await fsp.stat(torch.location)).isDirectory());
    assert.deepStrictEqual(torch.needed_by, ['block.py']);
  });

  it('reads the license from package metadata when there is no LICENSE file (Debian torchvision says BSD)', async function () {
    const tv = '/usr/lib/python3/dist-packages/torchvision';
    try {
      await fsp.access(tv);
    } catch {
      this.skip();
    }
    const [source] = await openPythonPackages(PYTHON_WITH_TORCH, ['torchvision']);
    assert.strictEqual(source.info.license, 'BSD');
  });
});

describe('a pulled file header', function () {
  this.timeout(120_000);

  it('is read however long it is (one line per source file), and can carry PEP 723 metadata', async () => {
    // a block that needs a definition from each of 60 modules: the provenance record is past line 60
    const files: Record<string, string> = { 'many/__init__.py': '' };
    for (let i = 0; i < 60; i++) files[`many/m${i}.py`] = `def f${i}(x):\n    return x + ${i}\n`;
    files['many/block.py'] = [
      'from torch import nn',
      ...Array.from({ length: 60 }, (_, i) => `from .m${i} import f${i}`),
      '',
      'class Block(nn.Module):',
      '    def forward(self, x):',
      `        return ${Array.from({ length: 60 }, (_, i) => `f${i}(x)`).join(' + ')}`,
      '',
    ].join('\n');
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'repo'), files);
    const db = await memoryDb();
    await indexFolder(db, path.join(dir, 'repo'));
    const out = path.join(dir, 'out', 'block.py');
    const session = openPullSession(db, loadModuleTable(db));
    const report = await pullBlock(session, findTarget(db, 'many.block.Block'), { parser: await parser(), out, validate: false, inlineMetadata: true });
    const text = await fsp.readFile(out, 'utf8');
    assert.ok(text.split('\n').findIndex((l) => l.startsWith('# nnrag-provenance: ')) > 60);
    assert.strictEqual(readProvenance(text)?.target, report.target);
    assert.strictEqual(bodyHash(text), readProvenance(text)?.hash, 'the metadata is in the header: the body and its hash are as pulled');
    // a header whose coding line is changed reads the same body as other code: never up to date
    const recoded = text.replace('# -*- coding: utf-8 -*-', '# -*- coding: unicode_escape -*-');
    assert.notStrictEqual(bodyHash(recoded), readProvenance(text)?.hash, 'a coding line other than UTF-8 is an edit');
    assert.strictEqual(bodyHash(text.replace('coding: utf-8', 'coding: utf8')), readProvenance(text)?.hash);
    // PEP 723 after the coding line; torch is not known without an interpreter, so it is named in a comment
    assert.match(
      text,
      /^# -\*- coding: utf-8 -\*-\n# \/\/\/ script\n# dependencies = \[\n# {3}# not installed in the validating interpreter: torch\n# \]\n# \/\/\/\n# Pulled by NN-RAG/,
    );
    // pulled again over it: the file is recognised as an untouched pull, and replaced
    await pullBlock(session, findTarget(db, 'many.block.Block'), { parser: await parser(), out, validate: false });
  });
});

describe('provenance of a checkout with changes not committed', function () {
  this.timeout(120_000);

  it('says the commit "with changes not committed on top of it", in the header, the record and the manifest; a clean tree keeps the commit', async () => {
    const dir = await tmpdir('nnrag-dirty-');
    const repo = path.join(dir, 'dirtyrepo');
    await writeTree(repo, {
      'dirt/__init__.py': '',
      'dirt/blocks.py':
        'from torch import nn\n\nfrom .extra import scale\n\n\nclass Clean(nn.Module):\n    def forward(self, x):\n        return x\n\n\nclass Uses(nn.Module):\n    def forward(self, x):\n        return scale(x)\n',
    });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'first');
    const head = git(repo, 'rev-parse', 'HEAD');
    // extra.py is in no commit
    fs.writeFileSync(path.join(repo, 'dirt', 'extra.py'), 'def scale(x):\n    return x * 2\n');
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const pull = async (target: string, out: string): Promise<string> => {
      const r = await cli('pull', target, '--db', db, '--out', path.join(dir, out), '--no-validate');
      assert.strictEqual(r.code, 0, r.err);
      return fs.readFileSync(path.join(dir, out), 'utf8');
    };
    const dirty = await pull('dirt.blocks.Uses', 'uses.py');
    assert.match(dirty, new RegExp(`^# commit ${head}, with changes not committed on top of it;`, 'm'));
    const prov = readProvenance(dirty)!;
    assert.strictEqual(prov.uncommitted, true);
    assert.deepStrictEqual(
      prov.definitions.map((d) => [d.path, d.uncommitted === true]),
      [
        ['dirt/extra.py', true],
        ['dirt/blocks.py', false],
      ],
    );
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, '.nnrag', 'uses.manifest.json'), 'utf8')) as {
      definitions: { path: string; uncommitted?: boolean }[];
    };
    assert.strictEqual(manifest.definitions.find((d) => d.path === 'dirt/extra.py')?.uncommitted, true);
    // a block whose code is all in the commit keeps it
    const clean = await pull('dirt.blocks.Clean', 'clean.py');
    assert.match(clean, new RegExp(`^# commit ${head};`, 'm'));
    assert.strictEqual(readProvenance(clean)?.uncommitted, undefined);
  });

  it('carries it whole through export and import: the manifest lists the files, a pull from the archive says so', async () => {
    const dir = await tmpdir('nnrag-dirty-share-');
    const repo = path.join(dir, 'dirtyrepo');
    await writeTree(repo, {
      'dirt/__init__.py': '',
      'dirt/blocks.py': 'from torch import nn\n\n\nclass Clean(nn.Module):\n    def forward(self, x):\n        return x\n',
    });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'first');
    const head = git(repo, 'rev-parse', 'HEAD');
    // a block in a file no commit holds
    fs.writeFileSync(
      path.join(repo, 'dirt', 'fresh.py'),
      'from torch import nn\n\n\nclass Fresh(nn.Module):\n    def forward(self, x):\n        return x + 1\n',
    );
    const team = path.join(dir, 'team.db');
    assert.strictEqual((await cli('index', repo, '--db', team)).code, 0);
    const archive = path.join(dir, 'team.tgz');
    const exported = await cli('export', '--db', team, '--to', archive, '--json');
    assert.strictEqual(exported.code, 0, exported.err);
    const listed = JSON.parse(exported.out) as { repositories: { name: string; commit: string; uncommitted?: string[] }[] };
    assert.deepStrictEqual(
      listed.repositories.map((r) => [r.name, r.commit, r.uncommitted]),
      [['dirtyrepo', head, ['dirt/fresh.py']]],
    );
    // another machine: the checkout is not there, the archive is
    await fsp.rename(repo, `${repo}.gone`);
    const mine = path.join(dir, 'mine', 'index.db');
    assert.strictEqual((await cli('import', archive, '--db', mine)).code, 0);
    const pull = async (target: string, out: string): Promise<string> => {
      const r = await cli('pull', target, '--db', mine, '--out', path.join(dir, 'out', out), '--no-validate');
      assert.strictEqual(r.code, 0, r.err);
      return fs.readFileSync(path.join(dir, 'out', out), 'utf8');
    };
    const fresh = await pull('dirt.fresh.Fresh', 'fresh.py');
    assert.match(fresh, new RegExp(`^# commit ${head}, with changes not committed on top of it;`, 'm'));
    const prov = readProvenance(fresh)!;
    assert.strictEqual(prov.uncommitted, true);
    assert.deepStrictEqual(
      prov.definitions.map((d) => [d.path, d.uncommitted === true, d.blob.length]),
      [['dirt/fresh.py', true, 40]],
    );
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'out', '.nnrag', 'fresh.manifest.json'), 'utf8')) as {
      definitions: { path: string; uncommitted?: boolean }[];
    };
    assert.strictEqual(manifest.definitions.find((d) => d.path === 'dirt/fresh.py')?.uncommitted, true);
    // the committed block keeps its commit; and an archive exported again from the import keeps the record
    const clean = await pull('dirt.blocks.Clean', 'clean.py');
    assert.match(clean, new RegExp(`^# commit ${head};`, 'm'));
    assert.strictEqual(readProvenance(clean)?.uncommitted, undefined);
    const again = await cli('export', '--db', mine, '--to', path.join(dir, 'again.tgz'), '--json');
    assert.deepStrictEqual((JSON.parse(again.out) as { repositories: { uncommitted?: string[] }[] }).repositories[0].uncommitted, ['dirt/fresh.py']);
  });
});
