/**
 * A pool of warm validators: each is `validate.py --serve` in the same sandbox as a one-shot run (isolated mode,
 * `unshare -rn` where it works, nothing of our environment), with torch imported once; every block then runs in a
 * forked child in its own process group, with its own folder, memory limit and timeout (the group is killed).
 * A validator that dies is replaced. The pool's size is how many blocks validate at once.
 */
import { spawn } from 'child_process';
import type { ChildProcess } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createInterface } from 'readline';
import { CancelledError, NnragError } from '../errors';
import { canUnshare, interpretRun, killProcessGroup, runnerArgs, sandboxEnv } from './runner';
import type { ValidateOptions, ValidationReport, ValidatorPoolLike } from './runner';

interface Job {
  file: string;
  options: ValidateOptions;
  resolve: (r: ValidationReport) => void;
  reject: (e: unknown) => void;
}

interface Worker {
  child: ChildProcess;
  home: string;
  /** Called with each line the server answers. */
  onLine?: (msg: { id: number; pid?: number; exit?: number; error?: string }) => void;
  busy: boolean;
  dead: boolean;
  /** Whether it ever answered (a validator that dies before cannot start at all: do not restart it). */
  answered: boolean;
  stderr: string;
  /** Why it died, once it has. */
  failure?: NnragError;
}

export class ValidatorPool implements ValidatorPoolLike {
  private readonly workers: Worker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly python: string,
    private readonly runner: string,
    readonly size: number = Math.max(1, os.cpus().length),
  ) {}

  validate(file: string, options: ValidateOptions): Promise<ValidationReport> {
    if (this.closed) return Promise.reject(new NnragError('usage', 'the validator pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ file, options, resolve, reject });
      void this.pump();
    });
  }

  private starting = 0;

  private async pump(): Promise<void> {
    while (this.queue.length && !this.closed) {
      let w = this.workers.find((x) => !x.busy && !x.dead);
      if (!w) {
        if (this.workers.filter((x) => !x.dead).length + this.starting >= this.size) return;
        this.starting++;
        try {
          w = await this.start();
        } finally {
          this.starting--;
        }
        if (w.busy || w.dead) continue;
      }
      const job = this.queue.shift();
      if (!job) return;
      const worker = w;
      worker.busy = true;
      void this.run(worker, job).finally(() => {
        worker.busy = false;
        void this.pump();
      });
    }
  }

  private async start(): Promise<Worker> {
    const home = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-pool-'));
    const pyArgs = ['-I', '-B', this.runner, '--serve'];
    const [cmd, args] = (await canUnshare()) ? ['unshare', ['-rn', this.python, ...pyArgs]] : [this.python, pyArgs];
    const child = spawn(cmd, args, { cwd: home, env: sandboxEnv(home), detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const w: Worker = { child, home, busy: false, dead: false, answered: false, stderr: '' };
    this.workers.push(w);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { id: number };
        w.answered = true;
        w.onLine?.(msg);
      } catch {
        // not ours: a stray print of the server's own imports
      }
    });
    child.stderr!.on('data', (d: Buffer) => (w.stderr = (w.stderr + d.toString('utf8')).slice(-2000)));
    child.stdin!.on('error', () => undefined); // a dead validator's pipe: 'exit' reports it
    const died = (failure?: NnragError): void => {
      if (w.dead) return;
      w.dead = true;
      const last = w.stderr.trim().split('\n').pop() ?? '';
      // the sandbox wrapper runs the interpreter: its "No such file" is the interpreter's absence
      const why =
        failure ??
        (!w.answered && /No such file or directory/.test(last)
          ? new NnragError('interpreter', `Python interpreter not found: ${this.python} (${last})`)
          : new NnragError('interpreter', `the validator (${this.python}) ended unexpectedly: ${last}`));
      w.failure = why;
      w.onLine?.({ id: -1, exit: -1, error: why.message });
      void fsp.rm(home, { recursive: true, force: true }).catch(() => undefined);
      this.workers.splice(this.workers.indexOf(w), 1);
      if (!w.answered && !w.busy) {
        // it never started (a missing or broken interpreter): restarting would fail the same way
        for (const job of this.queue.splice(0)) job.reject(why);
        return;
      }
      if (!this.closed) void this.pump();
    };
    child.on('exit', () => died());
    child.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      died(new NnragError('interpreter', code === 'ENOENT' ? `Python interpreter not found: ${this.python}` : `cannot run ${this.python}: ${err.message}`));
    });
    return w;
  }

  private async run(w: Worker, job: Job): Promise<void> {
    const { file, options } = job;
    const id = this.nextId++;
    const work = await fsp.mkdtemp(path.join(w.home, 'job-'));
    const started = Date.now();
    const timeoutMs = options.timeoutMs ?? 60_000;
    let pid: number | undefined;
    let timedOut = false;
    let cancelled = false;
    const kill = (): void => killProcessGroup(pid);
    const onAbort = (): void => {
      cancelled = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      const exit = await new Promise<number>((resolve, reject) => {
        if (w.dead) {
          reject(w.failure ?? new NnragError('interpreter', `the validator (${this.python}) could not start: ${w.stderr.trim().split('\n').pop() ?? ''}`));
          return;
        }
        w.onLine = (msg) => {
          if (msg.error && msg.id === -1) reject(new NnragError('interpreter', msg.error));
          else if (msg.id !== id) return;
          else if (msg.pid !== undefined) {
            pid = msg.pid;
            if (cancelled) kill();
            timer = setTimeout(() => {
              timedOut = true;
              kill();
            }, timeoutMs);
          } else if (msg.exit !== undefined) resolve(msg.exit);
        };
        w.child.stdin!.write(`${JSON.stringify({ id, argv: runnerArgs(file, options), cwd: work })}\n`);
      });
      if (cancelled) throw new CancelledError('validation cancelled');
      const read = (name: string): Promise<string> => fsp.readFile(path.join(work, name), 'utf8').catch(() => '');
      const [stdout, stderr] = await Promise.all([read('stdout.json'), read('stderr.txt')]);
      const sandbox = (await canUnshare()) ? 'netns+audit (warm pool)' : 'audit (warm pool)';
      job.resolve(
        interpretRun(
          { stdout, stderr: stderr.slice(-8000), code: exit, signal: exit === -9 ? 'SIGKILL' : null, timedOut, seconds: (Date.now() - started) / 1000, sandbox, lastTier: undefined },
          options,
        ),
      );
    } catch (err) {
      job.reject(err);
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      w.onLine = undefined;
      kill(); // whatever the block left running
      await fsp.rm(work, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Stops every validator (their process groups) and fails what still waits. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new CancelledError('the validator pool closed'));
    for (const w of [...this.workers]) {
      w.child.stdin!.end();
      killProcessGroup(w.child.pid);
      await fsp.rm(w.home, { recursive: true, force: true }).catch(() => undefined);
    }
    this.workers.length = 0;
  }
}
