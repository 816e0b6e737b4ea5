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
}

let netns: Promise<boolean> | undefined;

/** Whether `unshare -rn` works here (unprivileged user namespaces); probed once. */
function canUnshare(): Promise<boolean> {
  if (process.platform !== 'linux') return Promise.resolve(false);
  netns ??= new Promise((resolve) => {
    execFile('unshare', ['-rn', 'true'], { timeout: 5000 }, (err) => resolve(!err));
  });
  return netns;
}

export function tierAtLeast(reached: Tier | null, wanted: Tier): boolean {
  return reached !== null && TIERS.indexOf(reached) >= TIERS.indexOf(wanted);
}

export async function validateFile(file: string, options: ValidateOptions): Promise<ValidationReport> {
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-validate-'));
  const useNetns = await canUnshare();
  const pyArgs = [
    '-I',
    '-B',
    options.runner,
    path.resolve(file),
    '--memory-mb',
    String(options.memoryMb ?? 4096),
    '--candidates',
    JSON.stringify(options.candidates ?? []),
  ];
  if (options.className) pyArgs.push('--class', options.className);
  if (options.native?.length) pyArgs.push('--native', options.native.join(','));
  if (options.builder) pyArgs.push('--builder', options.builder);
  const [cmd, args] = useNetns ? ['unshare', ['-rn', options.python, ...pyArgs]] : [options.python, pyArgs];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    TMPDIR: work,
    LANG: 'C.UTF-8',
    OMP_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
  };
  try {
    return await new Promise<ValidationReport>((resolve, reject) => {
      const child = spawn(cmd, args, { cwd: work, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let lastTier: Tier | null = null;
      let timedOut = false;
      let cancelled = false;
      const killGroup = (): void => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
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
        const s = d.toString('utf8');
        for (const m of s.matchAll(/nnrag-tier: ([\w-]+)/g)) lastTier = m[1] as Tier;
        stderr = (stderr + s).slice(-8000);
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
        const seconds = (Date.now() - started) / 1000;
        const sandbox = useNetns ? 'netns+audit' : 'audit';
        if (cancelled) {
          reject(new CancelledError('validation cancelled'));
          return;
        }
        if (timedOut) {
          resolve({ ok: false, tier: lastTier, category: 'timeout', message: `no result within ${timeoutMs / 1000} s (last tier reached: ${lastTier ?? 'none'})`, seconds, sandbox });
          return;
        }
        const line = stdout.trim().split('\n').pop() ?? '';
        try {
          const report = JSON.parse(line) as ValidationReport;
          resolve({ ...report, seconds, sandbox });
          return;
        } catch {
          // no report: the interpreter died or is not a Python
        }
        if (signal === 'SIGKILL' || signal === 'SIGSEGV' || signal === 'SIGABRT' || /MemoryError|Cannot allocate memory|std::bad_alloc/.test(stderr)) {
          resolve({ ok: false, tier: lastTier, category: 'memory', message: `the block was killed (${signal ?? `exit ${code}`}), most likely by the memory limit: ${lastLine(stderr)}`, seconds, sandbox });
          return;
        }
        if (/No such file or directory|not found/.test(stderr) && lastTier === null && code === 127) {
          reject(new NnragError('interpreter', `Python interpreter not found: ${options.python}`));
          return;
        }
        resolve({ ok: false, tier: lastTier, category: 'import-error', message: `the validator gave no report (exit ${code ?? signal}): ${lastLine(stderr)}`, seconds, sandbox });
      });
    });
  } finally {
    await fsp.rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter((l) => !l.startsWith('nnrag-tier:')).pop()?.slice(0, 300) ?? '';
}
