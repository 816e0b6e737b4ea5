/**
 * Separation by construction: a block process is never a fork of the judge (it descends from a zygote the judge
 * started with exec, which never held a job), and it runs without a privilege whoever started the tool (CI runs as
 * root): no capability, no way into another process's memory or descriptors, no namespace of its own. Each attack
 * counts in the suite's tally.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { validateFile } from '../../src/core/validate/runner';
import { describeSandbox } from '../../src/core/validate/bubblewrap';
import { ValidatorPool } from '../../src/core/validate/validatorPool';
import { PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../unit/helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

const ORIGINAL = `import torch
from torch import nn


def scale(x):
    return x * 2


class Blk(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return scale(self.lin(x))
`;

/** What a block finds of the judge in its own process: frames of the judge's modules on any thread's stack, and
 * objects of the judge's classes (the original's side, a supervised job, a forker) anywhere in its heap. */
const TRACES = `import gc as _gc, os as _os, sys as _sys
_JUDGE_FILES = tuple(f'nnrag_judge/judge/{_n}.py' for _n in ('serve', 'supervise', 'verdict', 'equivalence', 'static', 'judge', 'timings', 'places', 'processes'))
_found = set()
for _f in _sys._current_frames().values():
    while _f is not None:
        if _f.f_code.co_filename.replace(_os.sep, '/').endswith(_JUDGE_FILES):
            _found.add(f'frame {_f.f_code.co_name}')
        if 'side' in _f.f_locals and type(_f.f_locals['side']).__name__ == 'OriginalSide':
            _found.add('the original side')
        _f = _f.f_back
_found.update(f'object {type(_o).__name__}' for _o in _gc.get_objects() if type(_o).__name__ in ('OriginalSide', 'Job', 'Forker', 'Template'))
`;

/** What a block may do to other processes and to its own privileges: each line it can do is a finding. */
const PRIVILEGES = `import ctypes as _ct, errno as _errno, os as _os
_found = []
_status = open('/proc/self/status').read().splitlines()
for _key in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'):
    _value = [l.split()[1] for l in _status if l.startswith(_key + ':')][0]
    if int(_value, 16):
        _found.append(f'{_key} {_value}')
if 0 in _os.getresuid() or 0 in _os.getresgid():
    _found.append('runs as uid or gid 0')
_me = _os.getpid()
for _p in [p for p in _os.listdir('/proc') if p.isdigit() and int(p) != _me]:
    for _what in ('mem', 'environ'):
        try:
            with open(f'/proc/{_p}/{_what}', 'rb') as _fh:
                _fh.read(1)
            _found.append(f'read /proc/{_p}/{_what}')
        except OSError:
            pass
    # the numbers of a process's descriptors may be listed (its folder is its owner's); none is reachable
    try:
        _fds = _os.listdir(f'/proc/{_p}/fd')
    except OSError:
        _fds = []
    for _fd in _fds:
        try:
            _os.readlink(f'/proc/{_p}/fd/{_fd}')
            _found.append(f'read the link /proc/{_p}/fd/{_fd}')
        except OSError:
            pass
        try:
            _os.close(_os.open(f'/proc/{_p}/fd/{_fd}', _os.O_RDONLY | _os.O_NONBLOCK))
            _found.append(f'opened /proc/{_p}/fd/{_fd}')
        except OSError:
            pass
    try:
        _os.close(_os.pidfd_open(int(_p)))
        _found.append(f'pidfd_open({_p})')
    except OSError:
        pass
_libc = _ct.CDLL(None, use_errno=True)
def _refused(nr, *args):
    _ct.set_errno(0)
    return _libc.syscall(nr, *args) == -1 and _ct.get_errno() == _errno.EPERM
for _name, _nr, _args in (('pidfd_getfd', 438, (3, 3, 0)), ('pidfd_open', 434, (_os.getppid(), 0)),
                          ('ptrace attach', 101, (16, _os.getppid(), 0, 0)), ('kcmp', 312, (_me, _os.getppid(), 0, 0, 0)),
                          ('process_vm_readv', 310, (_os.getppid(), 0, 0, 0, 0, 0)),
                          ('io_uring_setup', 425, (1, 0)), ('io_uring_enter', 426, (-1, 1, 0, 0, 0, 0)),
                          ('io_uring_register', 427, (-1, 0, 0, 0))):
    if not _refused(_nr, *_args):
        _found.append(f'{_name} not refused')
if _libc.unshare(0x10000000) == 0:
    _found.append('made a user namespace')
`;

describe('no block process is a fork of the judge, and none has a privilege (as root too)', function () {
  this.timeout(300_000);
  let dir: string;
  let pool: ValidatorPool;
  let tried = 0;
  let held = 0;

  before(async function () {
    const sandbox = await describeSandbox();
    if (sandbox.weaker && !process.env.CI) this.skip();
    dir = await tmpdir('nnrag-separation-');
    await writeTree(path.join(dir, 'orig'), { 'pk/__init__.py': '', 'pk/m.py': ORIGINAL });
    pool = new ValidatorPool(PYTHON_WITH_TORCH, RUNNER, 1, 1024, [path.join(dir, 'orig')]);
  });

  after(async () => {
    await pool?.close();
    console.log(`      separation: ${tried} attacks tried, ${held} held`);
  });

  async function judged(name: string, source: string, withOriginal = true): Promise<Awaited<ReturnType<typeof validateFile>>> {
    const file = path.join(dir, `${name}.py`);
    fs.writeFileSync(file, source);
    return validateFile(file, {
      python: PYTHON_WITH_TORCH,
      runner: RUNNER,
      className: 'Blk',
      pool,
      timeoutMs: 60_000,
      original: withOriginal ? { module: 'pk.m', class: 'Blk', path: path.join(dir, 'orig'), file: path.join(dir, 'orig', 'pk', 'm.py') } : undefined,
    });
  }

  /** A block that raises what it found when it is built: a block that found nothing reaches forward. */
  const reporting = (probe: string, body = ORIGINAL): string =>
    body.replace(
      '        super().__init__()\n',
      `        super().__init__()\n${probe.replace(/^(?=.)/gm, '        ')}        if _found:\n            raise RuntimeError(f'found: {sorted(_found)}')\n`,
    );

  for (const [side, withOriginal] of [
    ['a copy judged against its original', true],
    ['a block judged alone', false],
  ] as const)
    it(`${side} finds no frame, object or module of the judge in its process`, async () => {
      tried++;
      // a copy that behaves otherwise (x * 3): were it able to reach the original's side, it would copy its probes
      const r = await judged(`traces${withOriginal ? 1 : 0}`, reporting(TRACES, ORIGINAL.replace('return x * 2', 'return x * 3')), withOriginal);
      assert.ok(!/found:/.test(r.message ?? ''), JSON.stringify(r));
      if (withOriginal) assert.strictEqual(r.category, 'differs', JSON.stringify(r));
      else assert.strictEqual(r.tier, 'forward', JSON.stringify(r));
      held++;
    });

  it("the original's worker finds nothing of the judge either (an original is indexed code too)", async () => {
    tried++;
    await writeTree(path.join(dir, 'orig'), { 'pk/traced.py': reporting(TRACES) });
    const file = path.join(dir, 'traced.py');
    fs.writeFileSync(file, ORIGINAL);
    const r = await validateFile(file, {
      python: PYTHON_WITH_TORCH,
      runner: RUNNER,
      className: 'Blk',
      pool,
      timeoutMs: 60_000,
      original: { module: 'pk.traced', class: 'Blk', path: path.join(dir, 'orig'), file: path.join(dir, 'orig', 'pk', 'traced.py') },
    });
    // the original found nothing, so it was built as the copy is: the two are the same block
    assert.strictEqual(r.tier, 'equivalent', JSON.stringify(r));
    held++;
  });

  it('a read-only folder a job leaves (mode 0500, with files in it) is gone before the next job', async () => {
    tried++;
    const plant = `import os
_made = 0
for d in (os.environ.get('HOME', '/'), os.getcwd(), '/tmp', '/dev/shm'):
    try:
        os.makedirs(os.path.join(d, 'kept-ro', 'inner'), exist_ok=True)
        open(os.path.join(d, 'kept-ro', 'inner', 'left.txt'), 'w').write('left')
        os.chmod(os.path.join(d, 'kept-ro', 'inner'), 0o500)
        os.chmod(os.path.join(d, 'kept-ro'), 0o500)
        _made += 1
    except OSError:
        pass
assert _made, 'nothing could be planted'
${ORIGINAL}`;
    assert.strictEqual((await judged('plantro', plant, false)).tier, 'forward');
    const look = `import os
_found = [d for d in (os.environ.get('HOME', '/'), os.getcwd(), '/tmp', '/dev/shm') if os.path.exists(os.path.join(d, 'kept-ro'))]
if _found:
    raise RuntimeError(f'found: {_found}')
${ORIGINAL}`;
    const r = await judged('lookro', look, false);
    assert.strictEqual(r.tier, 'forward', JSON.stringify(r));
    held++;
  });

  it('a block that signals every process it sees cannot stop its judge, its zygote or a template; the pool still judges', async () => {
    tried++;
    // INT, TERM, USR1, HUP, then KILL and STOP, to every other process its PID namespace shows it (the judge, the zygote)
    const killer = reporting(
      `import os as _os, signal as _sg
_found = []
for _sig in (_sg.SIGINT, _sg.SIGTERM, _sg.SIGUSR1, _sg.SIGHUP, _sg.SIGKILL, _sg.SIGSTOP):
    for _p in [int(p) for p in _os.listdir('/proc') if p.isdigit() and int(p) != _os.getpid()]:
        try:
            _os.kill(_p, _sig)
            _found.append(f'signalled {_p}')
        except OSError:
            pass
`,
    );
    const r = await judged('killer', killer);
    // the judge (its PID namespace's init, deaf to what a block may send it) gives the block's own verdict: it was
    // built, found what it signalled, and raised it
    assert.strictEqual(r.category, 'instantiate', JSON.stringify(r));
    assert.match(r.message ?? '', /found:/, JSON.stringify(r));
    // the same pool judges the next block
    const after = await judged('after-killer', ORIGINAL);
    assert.strictEqual(after.tier, 'equivalent', JSON.stringify(after));
    held++;
  });

  it(`a block runs with no capability and cannot open the judge or any other process (run as uid ${process.getuid?.()})`, async () => {
    tried++;
    const r = await judged('privileges', reporting(PRIVILEGES), false);
    assert.ok(!/found:/.test(r.message ?? ''), JSON.stringify(r));
    assert.strictEqual(r.tier, 'forward', JSON.stringify(r));
    held++;
  });
});
