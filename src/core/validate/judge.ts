/**
 * The judge's client: one sandboxed judge (python-runner/judge.py --serve, in the sandbox bubblewrap.ts makes) started
 * once and fed one job at a time over its stdin, answering each with one line on its stdout; a pool keeps several.
 */
import { privateCopy, readOwnFile, removeTree } from '../base/files';
import { spawn } from 'child_process';
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
import { SECCOMP_FD, describeSandbox, sandboxArgv } from './bubblewrap';
import type { Mounts, RootCopy, SandboxDescription } from './bubblewrap';
import { Cgroup } from './cgroup';
import { interpreterInfo } from './interpreter';
import { observeRequest, validateRequest } from './judgeRequests';
import type { ObserveAnswer, ObserveSpec } from './judgeRequests';

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
