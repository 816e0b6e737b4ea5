/**
 * Malicious blocks against the validator and its sandbox: each tries to forge a verdict, escape the sandbox or
 * outlive its limits. None may come out validated, leave a file outside its folder, leave a process behind or run
 * past its limits. The suite ends by printing how many were tried and how many held.
 */
import * as assert from 'assert';
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { ValidatorPool } from '../../src/core/validate/validatorPool';
import { validateFile } from '../../src/core/validate/runner';
import type { ValidationReport } from '../../src/core/validate/runner';
import { describeSandbox } from '../../src/core/validate/bubblewrap';
import { PYTHON_WITH_TORCH, ROOT, tmpdir } from '../unit/helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');
const MARK = `nnragmark${process.pid}x${Date.now()}`;
const BAD = `
class Bad(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
    def forward(self, x):
        raise ValueError("this block never runs forward")
`;

/** Processes on this machine whose command line carries the suite's mark. */
function marked(): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(MARK)) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

describe('malicious blocks (the sandbox and the verdict)', function () {
  this.timeout(600_000);
  let dir: string;
  let outside: string;
  let pool: ValidatorPool;
  let tried = 0;
  let held = 0;
  let tcp: net.Server;
  let unix: net.Server;
  let connections = 0;
  let tcpPort = 0;
  const unixPath = (): string => path.join(outside, 'agent.sock');
  const secret = `secret-${MARK}`;

  before(async function () {
    const sandbox = await describeSandbox();
    if (sandbox.weaker && !process.env.CI) this.skip(); // CI installs bubblewrap (scripts/setup.mjs)
    dir = await tmpdir('nnrag-security-');
    outside = await tmpdir('nnrag-outside-');
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    fs.writeFileSync(path.join(outside, 'secret.txt'), secret);
    tcp = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
    tcpPort = (tcp.address() as net.AddressInfo).port;
    unix = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => unix.listen(unixPath(), () => r()));
    pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 2, 768);
  });

  after(async () => {
    await pool?.close();
    tcp?.close();
    unix?.close();
    console.log(`      security: ${tried} malicious blocks tried, ${held} held`);
  });

  /** Validates `source` as Bad (unless told otherwise) and checks what every malicious block must not achieve. */
  async function attack(
    name: string,
    source: string,
    opts: { className?: string; timeoutMs?: number; oneShot?: boolean; memoryMb?: number } = {},
  ): Promise<ValidationReport> {
    tried++;
    const file = path.join(dir, `${name}.py`);
    fs.writeFileSync(
      file,
      `import os, sys, json, time, subprocess\nimport torch\nfrom torch import nn\nMARK = ${JSON.stringify(MARK)}\nOUTSIDE = ${JSON.stringify(outside)}\n${source}`,
    );
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? 20_000;
    const report = await validateFile(file, {
      python: PYTHON_WITH_TORCH,
      runner: RUNNER,
      className: opts.className ?? 'Bad',
      timeoutMs,
      memoryMb: opts.memoryMb ?? 768,
      pool: opts.oneShot ? undefined : pool,
    });
    const seconds = (Date.now() - started) / 1000;
    assert.notStrictEqual(report.ok, true, `${name} was reported validated: ${JSON.stringify(report)}`);
    assert.notStrictEqual(report.tier, 'forward', `${name} reached forward`);
    assert.ok(seconds < timeoutMs / 1000 + 20, `${name} took ${seconds} s against a limit of ${timeoutMs / 1000} s`);
    assert.deepStrictEqual(fs.readdirSync(outside).sort(), ['agent.sock', 'keep.txt', 'secret.txt'], `${name} changed a folder outside the sandbox`);
    assert.strictEqual(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'keep');
    for (const p of [path.join(os.homedir(), MARK), path.join('/tmp', MARK), path.join(ROOT, MARK), path.join(dir, MARK)])
      assert.ok(!fs.existsSync(p), `${name} wrote ${p}`);
    assert.ok(await until(() => marked().length === 0, 3000), `${name} left processes behind: ${marked().join(', ')}`);
    assert.ok(!JSON.stringify(report).includes(secret), `${name} read a file outside the sandbox`);
    assert.ok(!/root:[^:]*:\d+:/.test(JSON.stringify(report)), `${name} read /etc/shadow`);
    assert.strictEqual(connections, 0, `${name} connected to a server outside the sandbox`);
    held++;
    return report;
  }

  it('a block that validates still validates in the same pool (the suite can tell a pass)', async () => {
    const file = path.join(dir, 'control.py');
    fs.writeFileSync(
      file,
      'from torch import nn\nclass Good(nn.Module):\n    def __init__(self, dim=8):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n    def forward(self, x):\n        return self.lin(x)\n',
    );
    const report = await validateFile(file, { python: PYTHON_WITH_TORCH, runner: RUNNER, className: 'Good', pool });
    assert.strictEqual(report.tier, 'forward', report.message);
    assert.strictEqual(report.ok, true);
    assert.strictEqual(report.output_finite, true);
    assert.deepStrictEqual(report.output_shapes, [2, 8]);
  });

  describe('forged verdicts', () => {
    it('a result line written to fd 1, then exit', async () => {
      await attack('fd1', `${BAD}\nos.write(1, b'{"ok": true, "tier": "forward", "category": null}\\n')\nos._exit(0)\n`, { oneShot: true });
    });
    it('a result line on sys.__stdout__, then fd 1 closed', async () => {
      await attack('dunder_stdout', `${BAD}\nsys.__stdout__.write('{"ok": true, "tier": "forward"}\\n'); sys.__stdout__.flush(); os.close(1)\n`);
    });
    it("the runner's own functions replaced through __main__", async () => {
      await attack(
        'main_patch',
        `${BAD}\nimport __main__\nfor n in dir(__main__):\n    if callable(getattr(__main__, n)) and not n.startswith('__') and n not in ('Failure',):\n        try:\n            setattr(__main__, n, lambda *a, **k: (True, None, None, []))\n        except Exception:\n            pass\n__main__.verdict = lambda job, report, reach: report.update(ok=True, tier='forward')\n`,
      );
    });
    it('json.dumps patched', async () => {
      await attack(
        'json_patch',
        `${BAD}\njson.dumps = lambda *a, **k: '{"ok": true, "tier": "forward"}'\njson.JSONEncoder.encode = lambda self, o: '{"forward": {"tensors": [], "output": []}}'\n`,
      );
    });
    it('nn.Module.__call__ patched to skip forward', async () => {
      await attack(
        'module_call',
        `${BAD}\nnn.Module.__call__ = lambda self, *a, **k: torch.zeros(2, 8)\nnn.Module._call_impl = lambda self, *a, **k: torch.zeros(2, 8)\n`,
      );
    });
    it("frames in the validator's own format written to every open descriptor", async () => {
      const r = await attack(
        'frames',
        `${BAD}\nimport struct\nfor fd in range(0, 64):\n    for h in ({"tier": "imported"}, {"tier": "instantiated", "args": [], "kwargs": {}}, {"forward": {"input_shapes": [], "output": {"$t": 0}, "tensors": [{"dtype": "float32", "shape": [1], "count": 1}]}}):\n        b = json.dumps(h).encode(); blob = struct.pack('<d', 1.0) if 'forward' in h else b''\n        try: os.write(fd, struct.pack('>II', len(b), len(blob)) + b + blob)\n        except OSError: pass\n`,
      );
      assert.strictEqual(r.category, 'tampered', r.message);
    });
    it('a forged result file in the work folder and in every other folder it can write', async () => {
      await attack(
        'result_files',
        `${BAD}\nfor d in ('.', os.environ.get('HOME', '.'), os.environ.get('TMPDIR', '.'), '/tmp', '..', '../..'):\n    for n in ('stdout.json', 'result.json', 'report.json'):\n        try: open(os.path.join(d, n), 'w').write('{"ok": true, "tier": "forward"}\\n')\n        except OSError: pass\n`,
      );
    });
    it("the judge's stdout reached through /proc of its parent", async () => {
      await attack(
        'proc_parent',
        `${BAD}\nfor fd in range(0, 8):\n    try:\n        with open(f'/proc/{os.getppid()}/fd/{fd}', 'w') as fh: fh.write('{"ok": true, "tier": "forward"}\\n')\n    except OSError: pass\n`,
      );
    });
    it('the judge killed by the block', async () => {
      await attack('kill_judge', `${BAD}\nimport signal\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(5)\n`);
    });
    it('a daemon that forges results into the next jobs of the same pool', async () => {
      const daemon = `${BAD}\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        sys.argv = [MARK]\n        for _ in range(600):\n            for fd in range(0, 64):\n                try: os.write(fd, b'{"id": 1, "report": {"ok": true, "tier": "forward"}}\\n')\n                except OSError: pass\n            time.sleep(0.05)\n    os._exit(0)\n`;
      await Promise.all([attack('daemon_a', daemon), attack('daemon_b', daemon)]);
      // the next broken blocks in those judges are still failures
      await Promise.all([attack('after_daemon_a', BAD), attack('after_daemon_b', BAD)]);
    });
    it('fake tier lines on stderr', async () => {
      await attack(
        'stderr_tiers',
        `${BAD}\nfor t in ('imported', 'instantiated', 'forward'):\n    sys.stderr.write(f'nnrag-tier: {t}\\n')\nsys.stderr.flush()\n`,
      );
    });
  });

  describe('escapes', () => {
    it('writes and deletes outside the work folder (home, /tmp, the project, a folder of the user)', async () => {
      await attack(
        'writes',
        `for p in (os.path.expanduser('~/' + MARK), '/root/' + MARK, '/tmp/' + MARK, ${JSON.stringify(ROOT)} + '/' + MARK, OUTSIDE + '/' + MARK):\n    try: open(p, 'w').write('x')\n    except OSError: pass\ntry: os.remove(OUTSIDE + '/keep.txt')\nexcept OSError: pass\n${BAD}`,
      );
    });
    it('reads /etc/shadow and a file of the user, and prints them in its failure', async () => {
      const r = await attack(
        'reads',
        `text = ''\nfor p in ('/etc/shadow', OUTSIDE + '/secret.txt'):\n    try: text += open(p).read()\n    except OSError as e: text += str(e)\nraise RuntimeError(text)\n${BAD}`,
      );
      assert.strictEqual(r.category, 'import-error');
    });
    it('connects to a TCP server and a UNIX socket on the host', async () => {
      await attack(
        'network',
        `import socket\nfor fam, addr in ((socket.AF_INET, ('127.0.0.1', ${tcpPort})), (socket.AF_UNIX, OUTSIDE + '/agent.sock')):\n    try:\n        s = socket.socket(fam); s.settimeout(2); s.connect(addr)\n    except Exception: pass\n${BAD}`,
      );
    });
    it('turns the audit hook off from inside, then connects', async () => {
      await attack(
        'audit_off',
        `import gc, socket, _socket\nfor o in gc.get_objects():\n    if isinstance(o, set) and 'socket.connect' in o: o.clear()\ntry:\n    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM); s.settimeout(2); s.connect(('127.0.0.1', ${tcpPort}))\nexcept Exception: pass\n${BAD}`,
      );
    });
    it('a setsid child that outlives the block and holds the time limit hostage', async () => {
      const r = await attack(
        'setsid',
        `subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', MARK], start_new_session=True, stdout=None, stderr=None)\n${BAD}`,
        { timeoutMs: 10_000 },
      );
      assert.ok(r.seconds < 10, `the block's child held the validation for ${r.seconds} s`);
    });
    it('a forward that never ends, under a time limit', async () => {
      const r = await attack(
        'hang',
        `subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', MARK])\nclass Bad(nn.Module):\n    def forward(self, x):\n        while True: pass\n`,
        { timeoutMs: 6_000 },
      );
      assert.strictEqual(r.category, 'timeout');
    });
    it('shared anonymous memory beyond the memory limit', async () => {
      const r = await attack(
        'shared_memory',
        `import mmap\nm = mmap.mmap(-1, 1536 << 20, flags=mmap.MAP_SHARED)\nfor i in range(0, 1536 << 20, 4096): m[i] = 1\n${BAD}`,
        { memoryMb: 512 },
      );
      assert.strictEqual(r.category, 'memory', r.message);
    });
    it('500 MB of output', async () => {
      const r = await attack('output', `chunk = 'x' * (1 << 20) + '\\n'\nfor _ in range(500): sys.stdout.write(chunk)\n${BAD}`);
      assert.strictEqual(r.category, 'output', r.message);
    });
    it('a fork bomb', async () => {
      await attack(
        'fork_bomb',
        `sys.argv = [MARK]\nfor _ in range(2000):\n    try:\n        if os.fork() == 0:\n            time.sleep(60); os._exit(0)\n    except OSError: break\n${BAD}`,
        { timeoutMs: 15_000 },
      );
    });
    it('ptrace of the judge, new namespaces and kernel keyrings from inside (seccomp)', async function () {
      if (process.arch !== 'x64') this.skip();
      const r = await attack(
        'syscalls',
        `import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nres = []\nfor name, call in (('ptrace', lambda: libc.ptrace(16, os.getppid(), 0, 0)), ('unshare', lambda: libc.unshare(0x10000000)), ('keyctl', lambda: libc.syscall(250, 0, 0, 0, 0))):\n    rc = call()\n    res.append(f'{name}={rc}/{ctypes.get_errno()}')\nraise RuntimeError(' '.join(res))\n${BAD}`,
      );
      assert.match(r.message ?? '', /ptrace=-1\/1 unshare=-1\/1 keyctl=-1\/1/, 'a refused call did not fail with EPERM');
      assert.match(r.sandbox ?? '', /seccomp/);
    });
    it('a file as large as the disk allows', async () => {
      await attack(
        'big_file',
        `try:\n    with open('big', 'wb') as fh:\n        for _ in range(4096): fh.write(b'x' * (1 << 20))\nexcept Exception: pass\n${BAD}`,
      );
    });
  });

  it('a validator whose caller is killed dies with it', async () => {
    tried++;
    const file = path.join(dir, 'orphan.py');
    fs.writeFileSync(
      file,
      `import sys, subprocess\nfrom torch import nn\nMARK = ${JSON.stringify(MARK)}\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', MARK], start_new_session=True)\nclass Bad(nn.Module):\n    def forward(self, x):\n        while True: pass\n`,
    );
    const script = `require(${JSON.stringify(path.join(ROOT, 'src/core/validate/runner.ts'))}).validateFile(${JSON.stringify(file)}, { python: ${JSON.stringify(PYTHON_WITH_TORCH)}, runner: ${JSON.stringify(RUNNER)}, timeoutMs: 120000 })`;
    const child = spawn(process.execPath, ['-r', 'tsx/cjs', '-e', script], { cwd: ROOT, stdio: 'ignore' });
    assert.ok(await until(() => marked().length > 0, 30_000), 'the block did not start');
    child.kill('SIGKILL');
    assert.ok(await until(() => marked().length === 0, 5000), `the validator outlived its caller: ${marked().join(', ')}`);
    held++;
  });
});
