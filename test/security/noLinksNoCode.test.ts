/**
 * Trust, third round: no text reaches code (a header value cannot end its comment line), builds and writes follow no
 * link, the sandbox shows a repository's own folder and not the one above it, no unix socket is reachable from a
 * block, code assistants write only ordinary modules, and the Slurm scripts pass values as arguments. Each case is
 * an attack that worked before its fix.
 */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { readOwnFile } from '../../src/core/base/files';
import { assistantFileProblem } from '../../src/core/emit/moduleNames';
import { headerText } from '../../src/core/emit/pulledFile';
import { validateFile } from '../../src/core/validate/runner';
import { ASSETS, cli, hasTorch, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../unit/helpers';

const LAYER = `import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x) * 2
`;

/** The header of a pulled file: the lines before the first blank line. */
const headerOf = (text: string): string[] => text.slice(0, text.indexOf('\n\n')).split('\n');

describe('trust: no text becomes code, nothing follows a link', function () {
  this.timeout(600_000);
  let dir: string;

  before(async () => {
    dir = await tmpdir('nnrag-nolinks-');
  });

  it('a header value never ends its comment line: every line breaker and control character is escaped, user info dropped', () => {
    for (const breaker of ['\n', '\r', '\r\n', '\u2028', '\u2029', '\u0085', '\u000b', '\u000c', '\u001c', '\u0000']) {
      const v = headerText(`MIT${breaker}import os; os.system("id")`);
      assert.strictEqual(v.split(/\r\n|[\n\r\u2028\u2029\u0085\u000b\u000c\u001c-\u001e]/).length, 1, JSON.stringify(v));
      assert.ok(v.startsWith('MIT\\u'), v);
    }
    assert.strictEqual(headerText('https://bob:hunter2@h.invalid/x.git'), 'https://h.invalid/x.git');
  });

  it('a folder repository whose origin URL holds an escaped line break pulls a file whose header is comments only', async () => {
    const repo = path.join(dir, 'gitcfg', 'urlpkg');
    await writeTree(repo, {
      '__init__.py': '',
      'layers.py': LAYER,
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/refs/heads/main': `${'a'.repeat(40)}\n`,
      // git's own escape: the value read back holds a line feed, then Python
      '.git/config': '[remote "origin"]\n\turl = "https://h.invalid/x.git\\nimport os; open(\'PWNED\', \'w\')\\r# /// script"\n',
    });
    const db = path.join(dir, 'gitcfg.db');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const out = path.join(dir, 'gitcfg-out', 'scale.py');
    const r = await cli('pull', 'urlpkg.layers.Scale', '--db', db, '--out', out, '--no-validate');
    assert.strictEqual(r.code, 0, r.err);
    const text = fs.readFileSync(out, 'utf8');
    for (const line of headerOf(text)) assert.ok(line.startsWith('#'), `a header line that is not a comment: ${JSON.stringify(line)}`);
    assert.ok(!/[\r\u2028\u2029\u0085]/.test(text.slice(0, text.indexOf('\n\n'))), 'no other line breaker in the header');
    assert.strictEqual((text.match(/^# \/\/\/ script$/gm) ?? []).length, 0);
  });

  it('reads a file of its own only: not through a link, not a hard link to another file', async () => {
    const own = path.join(dir, 'own.so');
    fs.writeFileSync(own, 'built');
    assert.strictEqual(String(await readOwnFile(own, dir)), 'built');
    const secret = path.join(dir, 'host-secret');
    fs.writeFileSync(secret, "the user's key");
    fs.symlinkSync(secret, path.join(dir, 'link.so'));
    await assert.rejects(readOwnFile(path.join(dir, 'link.so')), /symbolic link/);
    fs.linkSync(secret, path.join(dir, 'hard.so'));
    await assert.rejects(readOwnFile(path.join(dir, 'hard.so')), /hard link/);
  });

  it('validate FILE does not carry a link planted in _nnrag_native/ into the sandbox', async function () {
    if (!hasTorch()) this.skip();
    const folder = path.join(dir, 'planted-native');
    fs.mkdirSync(path.join(folder, '_nnrag_native'), { recursive: true });
    const secret = path.join(dir, 'planted-secret');
    fs.writeFileSync(secret, "the user's key");
    fs.symlinkSync(secret, path.join(folder, '_nnrag_native', 'ops-0123456789ab.so'));
    const file = path.join(folder, 'block.py');
    fs.writeFileSync(file, `${LAYER}\n\ndef _nnrag_native(*a):\n    return None\n\n\n_C = _nnrag_native("ops._C", "ops", "ops-0123456789ab.so")\n`);
    await assert.rejects(validateFile(file, { python: PYTHON_WITH_TORCH, runner: ASSETS.runner, className: 'Scale' }), /symbolic link/);
  });

  it('pull --requirements and spec --all replace a link at their output, never write through it', async () => {
    const db = path.join(dir, 'tiny.db');
    assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db)).code, 0);
    const victim = path.join(dir, 'victim.txt');
    fs.writeFileSync(victim, "the user's file\n");
    const outDir = path.join(dir, 'req');
    fs.mkdirSync(outDir);
    fs.symlinkSync(victim, path.join(outDir, 'rb.requirements.txt'));
    const r = await cli(
      'pull',
      'tinyblocks.blocks.ResidualBlock',
      '--db',
      db,
      '--out',
      path.join(outDir, 'rb.py'),
      '--requirements',
      '--python',
      PYTHON_WITH_TORCH,
      '--no-validate',
    );
    assert.strictEqual(r.code, 0, r.err);
    assert.strictEqual(fs.readFileSync(victim, 'utf8'), "the user's file\n");
    assert.ok(!fs.lstatSync(path.join(outDir, 'rb.requirements.txt')).isSymbolicLink());
    const specs = path.join(dir, 'specs');
    fs.mkdirSync(specs);
    fs.symlinkSync(victim, path.join(specs, 'index.json'));
    const s = await cli('spec', '--all', '--db', db, '--out-dir', specs, '--json');
    assert.strictEqual(s.code, 0, s.err);
    assert.strictEqual(fs.readFileSync(victim, 'utf8'), "the user's file\n");
    assert.ok(!fs.lstatSync(path.join(specs, 'index.json')).isSymbolicLink());
  });

  it("the sandbox shows a package-root repository's own folder, not the folder above it (a .env beside it)", async function () {
    if (!hasTorch()) this.skip();
    const above = path.join(dir, 'above');
    fs.mkdirSync(above);
    fs.writeFileSync(path.join(above, '.env'), 'API_KEY=secret\n');
    await writeTree(path.join(above, 'envpkg'), {
      '__init__.py': '',
      'layers.py': `import os

import torch
from torch import nn

_ENV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".env")


class Peek(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        # the original sees the file only where the folder above its package is shown
        self.saw = float(os.path.exists(_ENV) and "secret" in open(_ENV).read())

    def forward(self, x):
        return self.lin(x) + self.saw
`,
    });
    const db = path.join(dir, 'env.db');
    assert.strictEqual((await cli('index', path.join(above, 'envpkg'), '--db', db)).code, 0);
    const r = await cli('pull', 'envpkg.layers.Peek', '--db', db, '--out', path.join(dir, 'env-out', 'peek.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out) as { tier: string; equivalence?: { status: string; differences?: string[] } };
    // the copy (in a folder of its own) reads no .env; the original must not either: then they are equal
    assert.strictEqual(report.tier, 'equivalent', r.out);
  });

  it('a block reaches no unix socket on the host (a service in a mounted folder)', async function () {
    if (!hasTorch()) this.skip();
    const repo = path.join(dir, 'sockrepo');
    const sock = path.join(repo, 'agent.sock');
    let reached = false;
    const server = net.createServer((c) => {
      reached = true;
      c.end();
    });
    await writeTree(repo, {
      'sockpkg/__init__.py': '',
      'sockpkg/layers.py': `import os
import socket
import subprocess
import sys

import torch
from torch import nn

_SOCK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agent.sock")


def _knock():
    # here, and through a child interpreter (which the judge's audit hook does not watch)
    knocked = 0.0
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(_SOCK)
        s.close()
        knocked = 1.0
    except Exception:
        pass
    try:
        code = "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])"
        if subprocess.run([sys.executable, "-c", code, _SOCK], capture_output=True, timeout=20).returncode == 0:
            knocked = 1.0
    except Exception:
        pass
    return knocked


class Knock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.knocked = _knock()

    def forward(self, x):
        return self.lin(x) + self.knocked
`,
    });
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      const db = path.join(dir, 'sock.db');
      assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
      const r = await cli('pull', 'sockpkg.layers.Knock', '--db', db, '--out', path.join(dir, 'sock-out', 'knock.py'), '--python', PYTHON_WITH_TORCH, '--json');
      assert.ok(JSON.parse(r.out).tier, r.out + r.err);
      assert.strictEqual(reached, false, 'a block connected to a unix socket on the host');
    } finally {
      server.close();
    }
  });

  it('a code assistant writes no file that test runners, doc builders or task runners load by convention', () => {
    for (const f of [
      'test_blocks.py',
      'blocks_test.py',
      'conftest.py',
      'docs/conf.py',
      'conf.py',
      'tasks.py',
      'fabfile.py',
      'dodo.py',
      'pavement.py',
      'noxfile.py',
      'setup.py',
      'manage.py',
      'tests/blocks.py',
      'docs/blocks.py',
      'src/tests/x.py',
    ]) {
      assert.ok(assistantFileProblem(path.join('/w', f), '/w'), `${f} was accepted`);
    }
    for (const f of ['blocks/residual.py', 'models/attention.py', 'testing_utils_free/x.py'])
      assert.strictEqual(assistantFileProblem(path.join('/w', f), '/w'), undefined, f);
  });

  it('the Slurm scripts pass SOURCES and WORK as arguments: a quote or $(...) in them runs nothing', async () => {
    const bin = path.join(dir, 'slurm-bin');
    fs.mkdirSync(bin);
    const calls = path.join(dir, 'slurm-calls.jsonl');
    const canary = path.join(dir, 'slurm-PWNED');
    // an sbatch that runs the job script at once with its arguments, as Slurm would on a node, and records its argv
    fs.writeFileSync(
      path.join(bin, 'sbatch'),
      `#!/bin/bash
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> ${JSON.stringify(calls)}
script=""; args=()
for a in "$@"; do if [ -n "$script" ]; then args+=("$a"); elif [ -f "$a" ]; then script="$a"; fi; done
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_TASK_MIN=1 bash "$script" "\${args[@]}" >/dev/null 2>&1 || true
echo $RANDOM
`,
      { mode: 0o755 },
    );
    const nnrag = path.join(dir, 'fake-nn-rag');
    const seen = path.join(dir, 'slurm-nnrag.jsonl');
    fs.writeFileSync(nnrag, `#!/bin/bash\npython3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> ${JSON.stringify(seen)}\n`, { mode: 0o755 });
    const evil = `$(touch ${canary})'";touch ${canary};"`;
    const work = path.join(dir, `work ${evil}`);
    execFileSync(path.join(ROOT, 'deploy', 'slurm', 'submit.sh'), [], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, NNRAG: nnrag, SOURCES: `https://h.invalid/a.git ${evil}`, WORK: work, SHARDS: '1' },
      encoding: 'utf8',
    });
    assert.ok(!fs.existsSync(canary), 'a value of SOURCES or WORK ran as shell');
    const ran = fs
      .readFileSync(seen, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as string[]);
    const index = ran.find((a) => a[0] === 'index')!;
    assert.ok(index, JSON.stringify(ran));
    assert.ok(index.includes(`$(touch`) && index.includes('--db') && index[index.indexOf('--db') + 1] === path.join(work, 'index.db'), JSON.stringify(index));
    const merge = ran.find((a) => a[0] === 'report')!;
    assert.ok(merge && merge.includes(path.join(work, 'report.json')), JSON.stringify(ran));
  });
});
