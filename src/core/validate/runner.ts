/**
 * Runs python-runner/validate.py with the user's interpreter in a sandboxed child process: isolated mode,
 * a temporary working folder, a wall-clock and a memory limit, no network where the OS allows (a user
 * and network namespace via `unshare -rn`, plus an audit hook inside), the whole process group killed at the end.
 */
import { execFile, spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CancelledError, NnragError } from '../errors';

export const TIERS = ['parsed', 'compiled', 'names-closed', 'imported', 'instantiated', 'forward'] as const;
export type Tier = (typeof TIERS)[number];
export type FailureCategory =
  | 'syntax'
  | 'unresolved'
  | 'native-extension'
  | 'missing-package'
  | 'import-error'
  | 'instantiate'
  | 'forward'
  | 'timeout'
  | 'memory'
  | 'interpreter';

export interface Requirement {
  module: string;
  distribution: string | null;
  version: string | null;
  /** Where the interpreter has it installed (site-packages folder). */
  location?: string | null;
  /** Who installed it (`pip`, `conda`...; null for system packages such as Debian's). */
  installer?: string | null;
  /** PEP 610 direct URL (a VCS or local install), when recorded. */
  url?: string | null;
}

export interface ValidationReport {
  ok: boolean;
  tier: Tier | null;
  category?: FailureCategory;
  message?: string;
  class?: string;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
  input_shapes?: unknown[];
  output_shapes?: unknown;
  requirements?: Requirement[];
  /** Set when the block was built by a builder function of its repository. */
  builder?: string;
  /** The model the builder made, when the block was taken from inside it. */
  inside?: string;
  seconds: number;
  sandbox?: string;
}

export interface ValidateOptions {
  python: string;
  runner: string;
  timeoutMs?: number;
  memoryMb?: number;
  className?: string;
  /** Constructor arguments to try first (how the repository itself builds the block). */
  candidates?: { args: unknown[]; kwargs: Record<string, unknown> }[];
  /** Modules known to be compiled extensions, for the failure category. */
  native?: string[];
  /** A function of the file that builds the block without arguments (the repository's own builder). */
  builder?: string;
  signal?: AbortSignal;
  /** Validate in a warm interpreter of this pool instead of a fresh process. */
  pool?: ValidatorPoolLike;
}

/** What validateFile needs of a pool (the pool lives in pool.ts). */
export interface ValidatorPoolLike {
  validate(file: string, options: ValidateOptions): Promise<ValidationReport>;
}

let netns: Promise<boolean> | undefined;

/** Whether `unshare -rn` works here (unprivileged user namespaces); probed once. */
export function canUnshare(): Promise<boolean> {
  if (process.platform !== 'linux') return Promise.resolve(false);
  netns ??= new Promise((resolve) => {
    execFile('unshare', ['-rn', 'true'], { timeout: 5000 }, (err) => resolve(!err));
  });
  return netns;
}

export function tierAtLeast(reached: Tier | null, wanted: Tier): boolean {
  return reached !== null && TIERS.indexOf(reached) >= TIERS.indexOf(wanted);
}

/** Kills a process group (a validator and everything the block under test started), if it is still there. */
export function killProcessGroup(pid: number | undefined): void {
  try {
    if (pid) process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The validator's arguments after the file (shared by one-shot runs and the warm pool). */
export function runnerArgs(file: string, options: ValidateOptions): string[] {
  const args = [path.resolve(file), '--memory-mb', String(options.memoryMb ?? 4096), '--candidates', JSON.stringify(options.candidates ?? [])];
  if (options.className) args.push('--class', options.className);
  if (options.native?.length) args.push('--native', options.native.join(','));
  if (options.builder) args.push('--builder', options.builder);
  return args;
}

/** The environment of the sandboxed interpreter: nothing of ours but PATH, its home and temp in `work`. */
export function sandboxEnv(work: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: work, TMPDIR: work, LANG: 'C.UTF-8', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
}

/** How the validator process ended, as the caller saw it. */
export interface RunOutcome {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  seconds: number;
  sandbox: string;
  /** The last tier the validator announced (read from the whole stderr when not given). */
  lastTier?: Tier | null;
}

/** The report of one validator run, from what it printed and how it ended. Throws for a missing interpreter. */
export function interpretRun(run: RunOutcome, options: Pick<ValidateOptions, 'python' | 'timeoutMs'>): ValidationReport {
  const { stdout, stderr, code, signal, seconds, sandbox } = run;
  let lastTier: Tier | null = run.lastTier ?? null;
  if (run.lastTier === undefined) for (const m of stderr.matchAll(/nnrag-tier: ([\w-]+)/g)) lastTier = m[1] as Tier;
  if (run.timedOut) {
    return { ok: false, tier: lastTier, category: 'timeout', message: `no result within ${(options.timeoutMs ?? 60_000) / 1000} s (last tier reached: ${lastTier ?? 'none'})`, seconds, sandbox };
  }
  const line = stdout.trim().split('\n').pop() ?? '';
  try {
    const report = JSON.parse(line) as ValidationReport;
    return { ...report, seconds, sandbox };
  } catch {
    // no report: the interpreter died or is not a Python
  }
  if (signal === 'SIGKILL' || signal === 'SIGSEGV' || signal === 'SIGABRT' || code === -9 || code === -11 || code === -6 || /MemoryError|Cannot allocate memory|std::bad_alloc/.test(stderr)) {
    return { ok: false, tier: lastTier, category: 'memory', message: `the block was killed (${signal ?? `exit ${code}`}), most likely by the memory limit: ${lastLine(stderr)}`, seconds, sandbox };
  }
  if (/No such file or directory|not found/.test(stderr) && lastTier === null && code === 127) {
    throw new NnragError('interpreter', `Python interpreter not found: ${options.python}`);
  }
  return { ok: false, tier: lastTier, category: 'import-error', message: `the validator gave no report (exit ${code ?? signal}): ${lastLine(stderr)}`, seconds, sandbox };
}

export async function validateFile(file: string, options: ValidateOptions): Promise<ValidationReport> {
  if (options.pool) return options.pool.validate(file, options);
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-validate-'));
  const useNetns = await canUnshare();
  const pyArgs = ['-I', '-B', options.runner, ...runnerArgs(file, options)];
  const [cmd, args] = useNetns ? ['unshare', ['-rn', options.python, ...pyArgs]] : [options.python, pyArgs];
  try {
    return await new Promise<ValidationReport>((resolve, reject) => {
      const child = spawn(cmd, args, { cwd: work, env: sandboxEnv(work), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let lastTier: Tier | null = null;
      let timedOut = false;
      let cancelled = false;
      const killGroup = (): void => killProcessGroup(child.pid);
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, timeoutMs);
      const onAbort = (): void => {
        cancelled = true;
        killGroup();
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout.on('data', (d: Buffer) => {
        if (stdout.length < 1 << 20) stdout += d.toString('utf8');
      });
      child.stderr.on('data', (d: Buffer) => {
        const text = d.toString('utf8');
        for (const m of text.matchAll(/nnrag-tier: ([\w-]+)/g)) lastTier = m[1] as Tier;
        stderr = (stderr + text).slice(-8000);
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        const code = (err as NodeJS.ErrnoException).code;
        reject(
          new NnragError('interpreter', code === 'ENOENT' ? `Python interpreter not found: ${options.python}` : `cannot run ${options.python}: ${err.message}`),
        );
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        killGroup(); // anything the block left running dies with the group
        if (cancelled) {
          reject(new CancelledError('validation cancelled'));
          return;
        }
        try {
          resolve(interpretRun({ stdout, stderr, code, signal, timedOut, lastTier, seconds: (Date.now() - started) / 1000, sandbox: useNetns ? 'netns+audit' : 'audit' }, options));
        } catch (err) {
          reject(err);
        }
      });
    });
  } finally {
    await fsp.rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter((l) => !l.startsWith('nnrag-tier:')).pop()?.slice(0, 300) ?? '';
}
