/**
 * The sandbox a block's code runs in: the command that starts python-runner/judge.py (`--serve`, the judge: judge.ts
 * is its client) or a trusted script of ours (`runInSandbox`) in it, and what this machine's sandbox is.
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
import { execFile, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CancelledError } from '../base/errors';
import { seccompProgram } from './seccomp';
import { DEFAULT_MEMORY_MB } from './limits';
import { Cgroup } from './cgroup';
import { interpreterInfo } from './interpreter';
import type { InterpreterInfo } from './interpreter';

/** The descriptor bubblewrap reads the seccomp filter from. */
export const SECCOMP_FD = 3;

export type SandboxKind = 'bubblewrap' | 'unshare' | 'none';

export interface SandboxDescription {
  kind: SandboxKind;
  /** Why this sandbox is weaker than bubblewrap's, when it is. */
  weaker?: string;
  memory: 'cgroup' | 'accounting';
  /** One line for reports and the UI. */
  label: string;
}

function works(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile(cmd, args, { timeout: 10_000 }, (err) => resolve(!err)));
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
export function sandboxArgv(
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
export interface RootCopy {
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

export interface Mounts {
  runnerHost: string;
  runnerDir: string;
  inHost: string;
  inDir: string;
  workHost: string;
  workDir: string;
}
