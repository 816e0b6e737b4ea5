/**
 * Where a block's code runs: python-runner/judge.py in `--serve` mode (the judge, package nnrag_judge) inside a
 * sandbox, fed one job at a time over its stdin and answering each with one line on its stdout.
 *
 * The strong sandbox is bubblewrap: new user, PID, network, IPC and UTS namespaces; a file system made of the system
 * folders and the interpreter's own folders, read-only, with secrets in /etc masked; a private /tmp and /dev/shm of
 * bounded size; one writable work folder; no environment of ours. Every process in it dies with the judge's PID
 * namespace, and bubblewrap dies with us (`--die-with-parent`). Memory is capped by a cgroup where we may create one
 * (shared mappings count there), else by the judge's own accounting of its workers' anonymous and shared memory.
 * Without bubblewrap, `unshare` gives network and PID namespaces only, and with neither the block runs with the
 * user's rights: each report then says "weaker sandbox: ...".
 *
 * Nothing inside names the tool: the runner, the input and the work folder are mounted at ordinary paths, HOME is a
 * plain home folder, and the judge empties the work folder (and the private /tmp and /dev/shm) before every worker,
 * so no job sees what another left.
 */
import { privateCopy, readOwnFile, removeTree } from '../base/files';
import { execFile, spawn } from 'child_process';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createInterface } from 'readline';
import { CancelledError, NnragError } from '../base/errors';
import { NATIVE_FOLDER } from './report';
import type { NativeFile, ValidateOptions, ValidationReport } from './report';
import { seccompProgram } from './seccomp';
import { DEFAULT_MEMORY_MB } from './limits';

/** The descriptor bubblewrap reads the seccomp filter from. */
const SECCOMP_FD = 3;

/** What an interpreter is, asked of it once (no block code runs for this). */
export interface InterpreterInfo {
  /** sys.executable: what the sandbox runs (a venv's own python, so the venv applies). */
  executable: string;
  version: string;
  hasTorch: boolean;
  /** Folders the interpreter reads: prefixes, the executable's folder, sys.path entries. */
  folders: string[];
}

export type SandboxKind = 'bubblewrap' | 'unshare' | 'none';

export interface SandboxDescription {
  kind: SandboxKind;
  /** Why this sandbox is weaker than bubblewrap's, when it is. */
  weaker?: string;
  memory: 'cgroup' | 'accounting';
  /** One line for reports and the UI. */
  label: string;
}

const PROBE = `import sys, os, json, importlib.util
folders = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))] + sys.path
print(json.dumps({"executable": sys.executable, "version": sys.version.split()[0], "hasTorch": importlib.util.find_spec("torch") is not None, "folders": [f for f in folders if f and os.path.isdir(f)]}))`;

const asked = new Map<string, Promise<unknown>>();

/**
 * Runs `code` with the interpreter in isolated mode (no block code: questions about the interpreter itself) and
 * parses the JSON of its last line; cached per interpreter, code and arguments while it succeeds.
 */
function askPython<T>(python: string, code: string, args: string[] = []): Promise<T> {
  const key = [python, code, ...args].join('\0');
  let known = asked.get(key) as Promise<T> | undefined;
  if (!known) {
    known = new Promise<T>((resolve, reject) => {
      execFile(
        python,
        ['-I', '-c', code, ...args],
        { timeout: 30_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' } },
        (err, stdout, stderr) => {
          if (err) {
            const errno = (err as NodeJS.ErrnoException).code;
            reject(
              new NnragError(
                'interpreter',
                errno === 'ENOENT'
                  ? `Python interpreter not found: ${python}`
                  : `cannot run ${python}: ${String(stderr || err.message)
                      .trim()
                      .split('\n')
                      .pop()}`,
              ),
            );
            return;
          }
          try {
            resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as T);
          } catch {
            reject(new NnragError('interpreter', `${python} does not answer like a Python interpreter`));
          }
        },
      );
    });
    asked.set(key, known);
    known.catch(() => asked.delete(key));
  }
  return known;
}

/** Asks the interpreter where it lives and whether it has torch (cached per path). */
export function interpreterInfo(python: string): Promise<InterpreterInfo> {
  return askPython<InterpreterInfo>(python, PROBE);
}

const STDLIB_NAMES = 'import json, sys\nprint(json.dumps(sorted(getattr(sys, "stdlib_module_names", []))))';

/** The interpreter's standard-library modules (`sys.stdlib_module_names`, Python 3.10+); undefined when it cannot say. */
export async function stdlibModules(python: string): Promise<ReadonlySet<string> | undefined> {
  const names = await askPython<string[]>(python, STDLIB_NAMES).catch(() => []);
  return names.length ? new Set(names) : undefined;
}

const FIND_SPEC = 'import importlib.util, json, sys\nprint(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is not None]))';

/** Which of `names` (top-level modules) the interpreter can import, asked without importing them (find_spec); none
 * when the interpreter cannot answer. */
export async function importableModules(python: string, names: string[]): Promise<Set<string>> {
  const wanted = [...new Set(names)].filter((n) => /^[\p{L}_][\p{L}\p{N}_]*$/u.test(n)).sort();
  return new Set(await askPython<string[]>(python, FIND_SPEC, wanted).catch(() => []));
}

function works(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile(cmd, args, { timeout: 10_000 }, (err) => resolve(!err)));
}

/** CPU seconds the judge's processes may use before their first answer, and the wall seconds at most. */
const START_CPU_S = 60;
const START_WALL_S = 600;

/** The CPU seconds (user and system) the process `pid` and its descendants have used, from /proc; undefined where
 * /proc cannot say. */
function treeCpuSeconds(pid: number): number | undefined {
  let names: string[];
  try {
    names = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return undefined;
  }
  const children = new Map<number, number[]>();
  const used = new Map<number, number>();
  for (const n of names) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
    } catch {
      continue;
    }
    // after the command's closing parenthesis: state, ppid, ... utime (14th field), stime (15th)
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(f[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(n)]);
    used.set(Number(n), Number(f[11]) + Number(f[12]));
  }
  if (!used.has(pid)) return undefined;
  const ticks = 100; // USER_HZ on Linux
  let total = 0;
  const queue = [pid];
  while (queue.length) {
    const p = queue.pop()!;
    total += used.get(p) ?? 0;
    queue.push(...(children.get(p) ?? []));
  }
  return total / ticks;
}

let kindProbe: Promise<SandboxKind> | undefined;

/** The strongest sandbox this machine runs (probed once; `NNRAG_SANDBOX=unshare|none` asks for a weaker one). */
export function sandboxKind(): Promise<SandboxKind> {
  kindProbe ??= (async (): Promise<SandboxKind> => {
    const wanted = process.env.NNRAG_SANDBOX;
    if (process.platform !== 'linux' || wanted === 'none') return 'none';
    if (wanted !== 'unshare') {
      const base = [...systemBinds(), '--unshare-all', '--die-with-parent', '--proc', '/proc'];
      // an unprivileged user of its own, whoever starts the tool (root included), when the kernel and bubblewrap allow
      for (const flags of [UNPRIVILEGED, ['--cap-drop', 'ALL']])
        if (await works('bwrap', [...base, ...flags, 'true'])) {
          privilegeFlags = flags;
          return 'bubblewrap';
        }
    }
    if (await works('unshare', ['-rn', '--pid', '--fork', '--kill-child', '--mount-proc', 'true'])) return 'unshare';
    return 'none';
  })();
  return kindProbe;
}

/** The uid and gid a block runs as inside the sandbox: never 0, and not the id the kernel shows for what is not
 * mapped (65534), so a process that is not dumpable (owned by "nobody" in /proc) is told from one of ours. */
const SANDBOX_ID = '1000';
/** No capability, in a user namespace of its own mapped to an unprivileged id, that can make no further one. */
const UNPRIVILEGED = ['--unshare-user', '--uid', SANDBOX_ID, '--gid', SANDBOX_ID, '--disable-userns', '--cap-drop', 'ALL'];
/** What this machine's bubblewrap takes of UNPRIVILEGED (found by the probe; --cap-drop ALL at least). */
let privilegeFlags: string[] = ['--cap-drop', 'ALL'];

/** Whether this process may make a cgroup (asked once). */
let cgroups: boolean | undefined;

/** What validation on this machine is protected by, for reports, the CLI and the extension's question. */
export async function describeSandbox(memoryMb = DEFAULT_MEMORY_MB): Promise<SandboxDescription> {
  const kind = await sandboxKind();
  if (cgroups === undefined) {
    const group = Cgroup.create(memoryMb);
    cgroups = group !== undefined;
    group?.release();
  }
  const memory = cgroups ? 'cgroup' : 'accounting';
  const weaker =
    kind === 'bubblewrap'
      ? undefined
      : kind === 'unshare'
        ? 'no file-system isolation: the block can read and write what you can (install bubblewrap)'
        : 'no namespaces: the block can use the network and read and write what you can (install bubblewrap)';
  const filter = seccompProgram() ? 'seccomp; ' : '';
  const user = privilegeFlags.includes('--uid') ? 'an unprivileged user, ' : '';
  const label = weaker
    ? `weaker sandbox: ${weaker}`
    : `bubblewrap (${user}no capabilities; user, PID, network and mount namespaces; ${filter}memory by ${memory})`;
  return { kind, weaker, memory, label };
}

const TORCH_VERSION =
  'import hashlib, importlib.util, json, os\nspec = importlib.util.find_spec("torch")\nloc = list(spec.submodule_search_locations or []) if spec else []\nfile = os.path.join(loc[0], "version.py") if loc else ""\nprint(json.dumps(hashlib.sha256(open(file, "rb").read()).hexdigest() if file and os.path.exists(file) else ""))';

/** What identifies the interpreter's torch for a cache key (its version.py, read without importing torch). */
export async function torchVersionKey(python: string): Promise<string> {
  return askPython<string>(python, TORCH_VERSION).catch(() => '');
}

/**
 * Runs one trusted script of the runner (`script`) with the interpreter in the same sandbox as the judge: `inHost`
 * read-only and `workHost` writable, seen inside at the paths `args` is given; no network; killed after `timeoutMs`.
 * Used to build a repository's compiled operator, whose sources and build tools are not to be trusted with more.
 */
export async function runInSandbox(
  python: string,
  script: string,
  options: { inHost: string; workHost: string; args: (inDir: string, workDir: string) => string[]; timeoutMs: number; signal?: AbortSignal; memoryMb?: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const info = await interpreterInfo(python);
  const sandbox = await describeSandbox(options.memoryMb);
  const inside = sandbox.kind === 'bubblewrap';
  const mounts: Mounts = {
    runnerHost: path.dirname(path.resolve(script)),
    runnerDir: inside ? '/opt/python-tools' : path.dirname(path.resolve(script)),
    inHost: options.inHost,
    inDir: inside ? '/srv/src' : options.inHost,
    workHost: options.workHost,
    workDir: inside ? '/home/user' : options.workHost,
  };
  const pyArgs = [info.executable, '-I', '-B', path.join(mounts.runnerDir, path.basename(script)), ...options.args(mounts.inDir, mounts.workDir)];
  const cgroup = Cgroup.create(options.memoryMb ?? DEFAULT_MEMORY_MB);
  const argv = sandboxArgv(sandbox.kind, info, mounts, [], pyArgs, cgroup);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: mounts.workDir,
    LANG: 'C.UTF-8',
    TMPDIR: mounts.workDir,
    MAX_JOBS: String(Math.max(1, os.cpus().length)),
  };
  const program = inside ? seccompProgram() : undefined;
  const child = spawn(argv[0], argv.slice(1), { cwd: options.workHost, env, stdio: ['ignore', 'pipe', 'pipe', ...(program ? ['pipe' as const] : [])] });
  if (program) {
    const fd = child.stdio[SECCOMP_FD] as import('stream').Writable;
    fd.on('error', () => undefined);
    fd.end(program);
  }
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout = (stdout + d.toString('utf8')).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-20_000)));
  const stop = (): void => {
    child.kill('SIGKILL');
    cgroup?.killAll();
  };
  const timer = setTimeout(stop, options.timeoutMs);
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    const code = await new Promise<number>((resolve) => {
      child.on('error', (err) => {
        stderr += `cannot start the sandbox: ${err.message}`;
        resolve(127);
      });
      child.on('close', (c) => resolve(c ?? 137));
    });
    if (options.signal?.aborted) throw new CancelledError('cancelled');
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', stop);
    cgroup?.release();
  }
}

/** The command that runs `pyArgs` in a sandbox of `kind` (inside `cgroup`, when there is one). */
function sandboxArgv(
  kind: SandboxKind,
  info: InterpreterInfo,
  mounts: Mounts,
  roots: string[],
  pyArgs: string[],
  cgroup: Cgroup | undefined,
  copies: ReadonlyMap<string, RootCopy> = new Map(),
): string[] {
  let argv: string[];
  if (kind === 'bubblewrap') argv = ['bwrap', ...bubblewrapArgs(info, mounts, roots, copies), ...pyArgs];
  else if (kind === 'unshare')
    argv = ['setpriv', '--pdeathsig', 'SIGKILL', '--', 'unshare', '-rn', '--pid', '--fork', '--kill-child', '--mount-proc', ...pyArgs];
  else argv = pyArgs;
  // the shell joins the group, then becomes the sandbox: nothing runs outside the group for a moment
  return cgroup
    ? ['/bin/sh', '-c', 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"', 'sh', ...cgroup.procs, '--', ...argv]
    : argv;
}

/** Read-only system folders, symlinks kept as symlinks (merged /usr). */
function systemBinds(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const st = fs.lstatSync(dir);
      if (st.isSymbolicLink()) args.push('--symlink', fs.readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    } catch {
      // not on this system
    }
  }
  return args;
}

/** Files and folders of /etc that hold secrets: masked inside the sandbox. */
const ETC_SECRETS = ['shadow', 'shadow-', 'gshadow', 'gshadow-', 'sudoers', 'security/opasswd', 'master.passwd'];
const ETC_SECRET_DIRS = ['ssh', 'sudoers.d', 'ssl/private', 'NetworkManager/system-connections', 'wireguard', 'docker', 'containers'];

/** A repository shown writable: its private copy (`privateCopy`), bound at the repository's path; its files too large
 * to copy are bound over their placeholders read-only. */
interface RootCopy {
  copy: string;
  large: string[];
}

function bubblewrapArgs(info: InterpreterInfo, mounts: Mounts, roots: string[], copies: ReadonlyMap<string, RootCopy>): string[] {
  const args = [...systemBinds(), '--ro-bind', '/etc', '/etc'];
  for (const f of ETC_SECRETS) if (fs.existsSync(`/etc/${f}`)) args.push('--ro-bind', '/dev/null', `/etc/${f}`);
  for (const d of ETC_SECRET_DIRS) if (fs.existsSync(`/etc/${d}`)) args.push('--tmpfs', `/etc/${d}`);
  args.push('--ro-bind-try', '/sys', '/sys', '--proc', '/proc', '--dev', '/dev');
  args.push('--size', String(256 << 20), '--tmpfs', '/tmp', '--size', String(256 << 20), '--tmpfs', '/dev/shm');
  for (const folder of interpreterFolders(info)) args.push('--ro-bind', fs.realpathSync(folder), folder);
  // repository roots the originals of pulled blocks are imported from, read-only (never a whole home)
  for (const root of roots) {
    if (NEVER_WHOLE.has(path.resolve(root)) || !fs.existsSync(root)) continue;
    const copy = copies.get(path.resolve(root));
    if (!copy) {
      args.push('--ro-bind', fs.realpathSync(root), path.resolve(root));
      continue;
    }
    // code that writes into its repository writes into its own copy
    args.push('--bind', copy.copy, path.resolve(root));
    for (const rel of copy.large) args.push('--ro-bind', path.join(fs.realpathSync(root), rel), path.join(path.resolve(root), rel));
  }
  args.push('--ro-bind', mounts.runnerHost, mounts.runnerDir, '--ro-bind', mounts.inHost, mounts.inDir, '--bind', mounts.workHost, mounts.workDir);
  args.push('--chdir', mounts.workDir, '--unshare-all', ...privilegeFlags, '--as-pid-1', '--die-with-parent', '--new-session');
  if (seccompProgram()) args.push('--seccomp', String(SECCOMP_FD));
  return args;
}

const NEVER_WHOLE = new Set(['/', '/home', '/root', '/tmp', '/var', os.homedir()]);

/** The interpreter's folders outside the system folders, without nesting and never a whole home. */
function interpreterFolders(info: InterpreterInfo): string[] {
  const system = ['/usr/', '/bin/', '/sbin/', '/lib/', '/lib64/', '/etc/'];
  const wanted = [...new Set(info.folders.map((f) => path.resolve(f)))]
    .filter((f) => !NEVER_WHOLE.has(f) && !system.some((s) => `${f}/`.startsWith(s)) && fs.existsSync(f))
    .sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const f of wanted) if (!kept.some((k) => f === k || f.startsWith(`${k}/`))) kept.push(f);
  return kept;
}

interface Mounts {
  runnerHost: string;
  runnerDir: string;
  inHost: string;
  inDir: string;
  workHost: string;
  workDir: string;
}

/** A memory (and process count) cgroup of our own under the one we run in, where the system lets us make one. */
export class Cgroup {
  private constructor(
    readonly dirs: string[],
    private readonly memoryFile: string | undefined,
  ) {}

  private static counter = 0;

  static create(memoryMb: number): Cgroup | undefined {
    if (process.platform !== 'linux' || process.env.NNRAG_CGROUP === 'off') return undefined;
    let lines: string[];
    try {
      lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
    } catch {
      return undefined;
    }
    const name = `nnrag-${process.pid}-${Cgroup.counter++}`;
    const bytes = String(memoryMb * 1024 * 1024);
    const made: string[] = [];
    const attempt = (dir: string, files: [string, string][]): boolean => {
      try {
        fs.mkdirSync(dir);
      } catch {
        return false;
      }
      made.push(dir);
      try {
        for (const [file, value] of files) if (fs.existsSync(path.join(dir, file)) || !file.includes('memsw')) fs.writeFileSync(path.join(dir, file), value);
        return true;
      } catch {
        return false;
      }
    };
    const byController = new Map<string, string>();
    for (const line of lines) {
      const [, controllers, where] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
      if (controllers === undefined) continue;
      for (const c of controllers.split(',')) byController.set(c, where);
    }
    let memoryFile: string | undefined;
    const v1 = byController.get('memory');
    if (v1 !== undefined && fs.existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) {
      const dir = path.join('/sys/fs/cgroup/memory', v1, name);
      if (
        attempt(dir, [
          ['memory.limit_in_bytes', bytes],
          ['memory.memsw.limit_in_bytes', bytes],
        ])
      )
        memoryFile = path.join(dir, 'memory.failcnt');
      const pids = byController.get('pids');
      if (memoryFile && pids !== undefined && fs.existsSync('/sys/fs/cgroup/pids'))
        attempt(path.join('/sys/fs/cgroup/pids', pids, name), [['pids.max', '512']]);
    } else if (byController.has('') && fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) {
      const dir = path.join('/sys/fs/cgroup', byController.get('') ?? '', name);
      if (
        attempt(dir, [
          ['memory.max', bytes],
          ['memory.swap.max', '0'],
          ['pids.max', '512'],
        ])
      )
        memoryFile = path.join(dir, 'memory.events');
    }
    if (!memoryFile) {
      for (const dir of made.reverse()) tryRmdir(dir);
      return undefined;
    }
    return new Cgroup(made, memoryFile);
  }

  /** The files a process writes its pid to, to join. */
  get procs(): string[] {
    return this.dirs.map((d) => path.join(d, 'cgroup.procs'));
  }

  /** Whether the memory limit was hit. */
  hitLimit(): boolean {
    try {
      const text = fs.readFileSync(this.memoryFile!, 'utf8');
      return /^\d+$/.test(text.trim()) ? Number(text) > 0 : /(?:^|\n)oom_kill [1-9]/.test(text) || /(?:^|\n)max [1-9]/.test(text);
    } catch {
      return false;
    }
  }

  /** Kills every process still in the group. */
  killAll(): void {
    for (const file of this.procs) {
      try {
        for (const pid of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone
          }
        }
      } catch {
        // the group is gone
      }
    }
  }

  release(): void {
    this.killAll();
    for (const dir of [...this.dirs].reverse()) tryRmdir(dir);
  }
}

function tryRmdir(dir: string): void {
  for (let i = 0; i < 20; i++) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      // processes still leaving the group: the kernel empties it shortly
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
}

/** Time the judge gets beyond a job's own time limit to kill the worker and answer, before we kill the sandbox. */
const GRACE_MS = 15_000;
/** The judge counts a job's limit in its workers' own time (not what they waited for a CPU), and stops a worker held
 * past WALL_FACTOR times it in wall time: the caller waits that long before it gives up on the judge. */
const WALL_FACTOR = 4;
const WALL_GRACE_MS = 30_000;
const wallLimit = (timeoutMs: number): number => WALL_FACTOR * timeoutMs + WALL_GRACE_MS;

interface Answer {
  id?: number;
  ready?: boolean;
  report?: ValidationReport;
  error?: string;
}

/** What the observer is asked to run (python-runner's `jobs.ObserveJob`). */
/** One runnable entry point of a repository: a test, a builder (a function or a composite block's class that needs no
 * argument, run and then fed once) or a configuration file's `model`, built by the repository's registry. */
export interface ObserveEntry {
  id: string;
  module: string;
  function: string;
  class?: string;
  kind?: 'build' | 'config' | 'example';
  /** For a config: the file (relative to the repository's folder) and the registries its `model` may be built by,
   * as [module, name] (the one that knows the model's `type` is used). */
  file?: string;
  registries?: [string, string][];
  /** For a config: the modules that register classes in those registries. */
  modules?: string[];
  /** For an example: the README's code block, run as it is written (in the sandbox, as a test is). */
  code?: string;
}

export interface ObserveSpec {
  /** The repository's folder (mounted read-only) and the folder its modules import from. */
  root: string;
  path: string;
  /** Other folders its modules import from (its root, when `path` is a `src/` layout's folder). */
  also: string[];
  /** Seconds one entry may run. */
  entry_s: number;
  entries: ObserveEntry[];
  /** The repository's compiled operators built for it (`--build-native`), in `native_folder`'s `_nnrag_native/`. */
  natives?: { module: string; name: string; file: string }[];
  native_folder?: string;
  /** The repository's own package, imported once by a template the observer's workers are forked from (a worker that
   * dies is replaced without importing it again). */
  package?: string;
  /** The root is a private copy (set by the judge): the repository's `setup.py` runs there as an editable install
   * would, without building, so that the package data it places (links into the package) is there. */
  install?: boolean;
}

/** What the observer answers: per entry, what it saw (see store/observed.ts), or why the run stopped. */
export interface ObserveAnswer {
  ok: boolean;
  category?: string;
  message?: string;
  observed: { entry: string; seconds?: number; error?: string | null; calls?: unknown[]; files?: unknown[] }[];
}

/** What a sandbox's judge may write into besides its work folder, emptied before each worker. */
const scratchOf = (kind: SandboxKind): string[] => (kind === 'bubblewrap' ? ['/tmp', '/dev/shm'] : []);

/**
 * A `validate` request to the judge, as python-runner/judge.schema.json describes it (the judge refuses a field it does
 * not know; test/unit/judgeProtocol.test.ts checks these against the same file).
 */
export function validateRequest(
  id: number,
  file: string,
  work: string,
  kind: SandboxKind,
  options: ValidateOptions,
  natives: NativeFile[],
): Record<string, unknown> {
  return {
    kind: 'validate',
    id,
    file,
    work,
    scratch: scratchOf(kind),
    class: options.className,
    candidates: options.candidates ?? [],
    examples: options.examples ?? [],
    native: options.native ?? [],
    builder: options.builder,
    memory_mb: options.memoryMb ?? DEFAULT_MEMORY_MB,
    timeout_s: (options.timeoutMs ?? 60_000) / 1000,
    original: options.original,
    ...(options.originalOnly ? { original_only: true } : {}),
    ...(options.upstreamUndefined?.length ? { upstream_undefined: options.upstreamUndefined } : {}),
    ...(options.originalFrames !== undefined ? { original_frames: options.originalFrames } : {}),
    ...(options.keepOriginal ? { keep_original: true } : {}),
    natives: natives.map((n) => ({ module: n.module, name: n.name, file: n.fileName })),
  };
}

/** An `observe` request to the judge (python-runner/judge.schema.json). */
export function observeRequest(
  id: number,
  spec: ObserveSpec,
  work: string,
  kind: SandboxKind,
  options: { timeoutMs: number; memoryMb?: number },
): Record<string, unknown> {
  return {
    kind: 'observe',
    id,
    observe: spec,
    work,
    scratch: scratchOf(kind),
    memory_mb: options.memoryMb ?? DEFAULT_MEMORY_MB,
    timeout_s: options.timeoutMs / 1000,
  };
}

/**
 * One sandboxed judge: started once, it validates one file at a time (a pool keeps several). Files are copied into
 * its read-only input folder; each job gets a fresh folder in its work folder, removed afterwards.
 */
export class Judge {
  private child!: ChildProcess;
  private answers: ((a: Answer | undefined) => void)[] = [];
  private stderr = '';
  private exited = false;
  private nextId = 1;
  private cgroup: Cgroup | undefined;
  private sandbox!: SandboxDescription;
  private mounts!: Mounts;
  private root!: string;
  busy = false;

  private constructor(
    private readonly python: string,
    private readonly runner: string,
    /** The repository folders shown to it, read-only (`Judge.key` names the set). */
    readonly roots: string[],
    /** Those of `roots` shown as a private writable copy instead (tests that write into their repository). */
    private readonly writable: string[] = [],
  ) {}

  /** Starts a judge; resolves once it has imported what it warms (torch) and can take jobs. `roots`: repository
   * folders the sandbox shows read-only, for originals to be imported from. */
  static async start(
    python: string,
    runner: string,
    memoryMb = DEFAULT_MEMORY_MB,
    roots: string[] = [],
    options: { writable?: string[] } = {},
  ): Promise<Judge> {
    const judge = new Judge(python, runner, roots, options.writable ?? []);
    await judge.launch(memoryMb);
    return judge;
  }

  get description(): SandboxDescription {
    return this.sandbox;
  }

  get alive(): boolean {
    return !this.exited;
  }

  private async launch(memoryMb: number): Promise<void> {
    const info = await interpreterInfo(this.python);
    this.sandbox = await describeSandbox(memoryMb);
    this.root = await fsp.mkdtemp(path.join(os.tmpdir(), 'pyrun-'));
    const host = { runnerHost: path.dirname(path.resolve(this.runner)), inHost: path.join(this.root, 'in'), workHost: path.join(this.root, 'work') };
    await fsp.mkdir(host.inHost);
    await fsp.mkdir(host.workHost);
    const inside = this.sandbox.kind === 'bubblewrap';
    this.mounts = {
      ...host,
      runnerDir: inside ? '/opt/python-tools' : host.runnerHost,
      inDir: inside ? '/srv/src' : host.inHost,
      workDir: inside ? '/home/user' : host.workHost,
    };
    const pyArgs = [info.executable, '-I', '-B', path.join(this.mounts.runnerDir, path.basename(this.runner)), '--serve'];
    this.cgroup = Cgroup.create(memoryMb);
    const copies = await this.copies(inside);
    this.copied = new Set(copies.keys());
    const argv = sandboxArgv(this.sandbox.kind, info, this.mounts, this.roots, pyArgs, this.cgroup, copies);
    // in bubblewrap, /tmp is the sandbox's own (emptied before each worker); elsewhere temporary files go to the work
    // folder, which is emptied the same way
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.mounts.workDir,
      LANG: 'C.UTF-8',
      OMP_NUM_THREADS: '1',
      MKL_NUM_THREADS: '1',
    };
    if (!inside) env.TMPDIR = this.mounts.workDir;
    const program = this.sandbox.kind === 'bubblewrap' ? seccompProgram() : undefined;
    const child = spawn(argv[0], argv.slice(1), {
      cwd: host.workHost,
      env,
      detached: this.sandbox.kind === 'none',
      stdio: ['pipe', 'pipe', 'pipe', ...(program ? ['pipe' as const] : [])],
    });
    this.child = child;
    if (program) {
      // bubblewrap reads the filter from this descriptor before it starts the judge
      const fd = child.stdio[SECCOMP_FD] as import('stream').Writable;
      fd.on('error', () => undefined);
      fd.end(program);
    }
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let msg: Answer;
      try {
        msg = JSON.parse(line) as Answer;
      } catch {
        return; // the judge writes only JSON lines; anything else is not an answer
      }
      this.answers.shift()?.(msg);
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-8000);
    });
    child.stdin!.on('error', () => undefined);
    const ended = new Promise<void>((resolve) => {
      child.on('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        this.startError = new NnragError(
          'interpreter',
          code === 'ENOENT' ? `cannot start the sandbox: ${argv[0]} not found` : `cannot start the sandbox: ${err.message}`,
        );
        resolve();
      });
      child.on('close', () => resolve());
    });
    void ended.then(() => {
      this.exited = true;
      for (const answer of this.answers.splice(0)) answer(undefined);
    });
    const ready = await this.ready(child.pid);
    if (!ready?.ready) {
      await this.close();
      throw this.startError ?? new NnragError('interpreter', `the validator (${this.python}) could not start in the sandbox: ${this.lastError()}`);
    }
  }

  private startError: NnragError | undefined;

  /** The roots shown as their private copy (`copies`): what the judge's workers write there stays there. */
  private copied = new Set<string>();

  /** The private copies of the writable roots (bubblewrap only: elsewhere nothing is mounted over a folder). */
  private async copies(inside: boolean): Promise<Map<string, RootCopy>> {
    const out = new Map<string, RootCopy>();
    if (!inside) return out;
    for (const [i, root] of this.writable.entries()) {
      const at = path.resolve(root);
      if (!this.roots.some((r) => path.resolve(r) === at) || !fs.existsSync(at)) continue;
      const copy = path.join(this.root, `copy-${i}`);
      const made = await privateCopy(fs.realpathSync(at), copy);
      // too large to copy: shown read-only, as every other root
      if (made) out.set(at, { copy, large: made.large });
      else await removeTree(copy);
    }
    return out;
  }

  /**
   * The judge's first answer (`ready`, once its zygote imported torch): waited for until its processes have used
   * START_CPU_S of CPU time between them, so that a loaded machine does not fail a start that only waited for a CPU
   * (START_WALL_S at most; the wall time alone where /proc cannot say).
   */
  private ready(pid: number | undefined): Promise<Answer | undefined> {
    if (this.exited) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const started = Date.now();
      const timer = setInterval(() => {
        const wall = (Date.now() - started) / 1000;
        const cpu = pid === undefined ? undefined : treeCpuSeconds(pid);
        if (wall >= START_WALL_S || (cpu === undefined ? wall >= START_CPU_S : cpu >= START_CPU_S)) {
          clearInterval(timer);
          this.kill();
        }
      }, 1000);
      this.answers.push((a) => {
        clearInterval(timer);
        resolve(a);
      });
    });
  }

  private next(timeoutMs: number): Promise<Answer | undefined> {
    if (this.exited) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.kill();
      }, timeoutMs);
      this.answers.push((a) => {
        clearTimeout(timer);
        resolve(a);
      });
    });
  }

  private lastError(): string {
    return (
      this.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('nnrag-tier:'))
        .pop()
        ?.slice(0, 300) ?? 'it printed nothing'
    );
  }

  /** Validates one file; the report says which sandbox held it. */
  async validate(file: string, options: ValidateOptions): Promise<ValidationReport> {
    if (this.exited) throw new NnragError('interpreter', `the validator (${this.python}) is not running: ${this.lastError()}`);
    const id = this.nextId++;
    const started = Date.now();
    const timeoutMs = options.timeoutMs ?? 60_000;
    const name = safeName(path.basename(file));
    const inFolder = path.join(this.mounts.inHost, String(id));
    await fsp.mkdir(inFolder);
    await fsp.copyFile(file, path.join(inFolder, name));
    // what goes in beside the file is read as itself, never through a link planted in its place
    for (const c of options.companions ?? []) await fsp.writeFile(path.join(inFolder, safeName(path.basename(c))), await readOwnFile(c));
    const natives = options.natives ?? (await nativesBeside(file));
    if (natives.length) await fsp.mkdir(path.join(inFolder, NATIVE_FOLDER));
    for (const n of natives) await fsp.writeFile(path.join(inFolder, NATIVE_FOLDER, n.fileName), await readOwnFile(n.file));
    const lastTier = (): string | null => [...this.stderr.matchAll(/nnrag-tier: ([\w-]+)/g)].pop()?.[1] ?? null;
    this.stderr = '';
    const request = validateRequest(id, path.join(this.mounts.inDir, String(id), name), this.mounts.workDir, this.sandbox.kind, options, natives);
    try {
      const got = await this.exchange(request, wallLimit(timeoutMs), options.signal);
      const seconds = (Date.now() - started) / 1000;
      if (options.signal?.aborted) throw new CancelledError('validation cancelled');
      if (!got?.report) {
        const memory = this.cgroup?.hitLimit();
        const tier = lastTier() as ValidationReport['tier'];
        this.kill();
        if (memory)
          return {
            ok: false,
            tier,
            category: 'memory',
            message: `the sandbox hit its memory limit (${options.memoryMb ?? DEFAULT_MEMORY_MB} MB)`,
            seconds,
            sandbox: this.sandbox.label,
          };
        if (got === undefined && Date.now() - started >= wallLimit(timeoutMs) + GRACE_MS - 100) {
          return {
            ok: false,
            tier,
            category: 'timeout',
            message: `no result within ${timeoutMs / 1000} s (last tier reached: ${tier ?? 'none'})`,
            seconds,
            sandbox: this.sandbox.label,
          };
        }
        if (got?.error) throw new NnragError('internal', `the validator refused the job: ${got.error}`);
        // the judge was ready and died during the job: only the block's code was running beside it
        return {
          ok: false,
          tier,
          category: 'tampered',
          message: `the validator was killed while the block ran: ${this.lastError()}`,
          seconds,
          sandbox: this.sandbox.label,
        };
      }
      const report = got.report;
      if ((report.category as string) === 'cancelled') throw new CancelledError('validation cancelled');
      return {
        ...report,
        file: undefined,
        seconds,
        sandbox: this.sandbox.label,
        ...(this.sandbox.weaker ? { weakSandbox: this.sandbox.weaker } : {}),
      } as ValidationReport;
    } finally {
      await removeTree(inFolder);
    }
  }

  /** Sends one request and waits for its answer (undefined when the judge died or `timeoutMs` and the grace passed);
   * an abort of `signal` cancels the job. */
  private async exchange(request: object, timeoutMs: number, signal?: AbortSignal): Promise<Answer | undefined> {
    const onAbort = (): void => {
      this.child.stdin!.write('cancel\n');
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const answer = this.next(timeoutMs + GRACE_MS);
      this.child.stdin!.write(`${JSON.stringify(request)}\n`);
      return await answer;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Puts built compiled operators where the observer loads them from (`spec.native_folder`), read as themselves
   * (never through a link); returns the fields to add to an ObserveSpec.
   */
  async stageNatives(
    natives: { module: string; buildName: string; file: string; fileName: string }[],
  ): Promise<Pick<ObserveSpec, 'natives' | 'native_folder'>> {
    const folder = `natives-${this.nextId++}`;
    await fsp.mkdir(path.join(this.mounts.inHost, folder, NATIVE_FOLDER), { recursive: true });
    for (const n of natives) {
      if (!/^[\w.-]+\.so$/.test(n.fileName)) throw new NnragError('native-build', `not a compiled operator's file name: ${n.fileName}`);
      await fsp.writeFile(path.join(this.mounts.inHost, folder, NATIVE_FOLDER, n.fileName), await readOwnFile(n.file));
    }
    return { natives: natives.map((n) => ({ module: n.module, name: n.buildName, file: n.fileName })), native_folder: path.join(this.mounts.inDir, folder) };
  }

  /**
   * Runs a repository's entry points (its tests) under the observer (python-runner's observe.py) and returns what
   * each observed. The repository's folder must be among the judge's roots.
   */
  async observe(spec: ObserveSpec, options: { timeoutMs: number; memoryMb?: number; signal?: AbortSignal }): Promise<ObserveAnswer> {
    if (this.exited) throw new NnragError('interpreter', `the validator (${this.python}) is not running: ${this.lastError()}`);
    // a private copy may be given what an editable install places in the package (its setup.py's links)
    const install = this.copied.has(path.resolve(spec.root));
    const request = observeRequest(this.nextId++, { ...spec, ...(install ? { install } : {}) }, this.mounts.workDir, this.sandbox.kind, options);
    const got = await this.exchange(request, wallLimit(options.timeoutMs), options.signal);
    if (options.signal?.aborted) throw new CancelledError('observation cancelled');
    const report = got?.report as unknown as ObserveAnswer | undefined;
    if (!report || !Array.isArray(report.observed)) {
      this.kill();
      return { ok: false, category: 'error', message: `the observer ended without an answer: ${this.lastError()}`, observed: [] };
    }
    return report;
  }

  private kill(): void {
    if (this.sandbox?.kind === 'none') {
      try {
        if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    this.child?.kill('SIGKILL');
    this.cgroup?.killAll();
  }

  /** Stops the judge and everything in its sandbox; removes its folders and its cgroup. */
  async close(): Promise<void> {
    if (this.child && !this.exited) {
      this.child.stdin!.end();
      const gone = new Promise<void>((resolve) => this.child.once('close', () => resolve()));
      const timer = setTimeout(() => this.kill(), 2000);
      await gone;
      clearTimeout(timer);
    }
    this.cgroup?.release();
    if (this.root) await removeTree(this.root);
  }
}

/** The compiled operators a pulled file's loader calls name (`_nnrag_native("pkg._C", "name", "file.so")`) that are in
 * the `_nnrag_native` folder beside it. */
export async function nativesBeside(file: string): Promise<NativeFile[]> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '');
  const out: NativeFile[] = [];
  const folder = path.join(path.dirname(file), NATIVE_FOLDER);
  for (const m of text.matchAll(/_nnrag_native\("([\w.]+)", "(\w+)", "([\w.-]+\.so)"(?:, True)?\)/g)) {
    const on = path.join(folder, m[3]);
    // (the folder itself is not a link either: its files are read without following one)
    const real = fs.existsSync(on) && fs.lstatSync(folder).isDirectory();
    if (real && !out.some((n) => n.fileName === m[3])) out.push({ module: m[1], name: m[2], file: on, fileName: m[3] });
  }
  return out;
}

/** A file name the sandbox can take whatever the pulled file was called (no separators or control characters). */
function safeName(name: string): string {
  const cleaned = name.replace(/[^\w.-]/g, '_').replace(/^[-.]+/, '_');
  return cleaned.endsWith('.py') ? cleaned : `${cleaned}.py`;
}
