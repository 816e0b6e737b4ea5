/**
 * A pool of warm judges: each is `judge.py --serve` in its own sandbox (judge.ts, bubblewrap.ts), with torch imported once (in
 * its zygote); every block then runs in a worker forked from it, killed with everything it started when its job ends.
 * A judge that dies is replaced. The pool's size is how many blocks validate at once. A judge is shown only the
 * repository folders its job's original needs (`OriginalClass.mounts`): a job that needs others gets a judge of its
 * own set, and an idle judge of another set makes way for it.
 */
import * as os from 'os';
import * as path from 'path';
import { CancelledError, NnragError } from '../base/errors';
import type { ValidateOptions, ValidationReport, ValidatorPoolLike } from './runner';
import { Judge } from './judge';
import { DEFAULT_MEMORY_MB } from './limits';

interface Job {
  file: string;
  options: ValidateOptions;
  /** The folders its judge shows (sorted). */
  roots: string[];
  resolve: (r: ValidationReport) => void;
  reject: (e: unknown) => void;
}

export class ValidatorPool implements ValidatorPoolLike {
  private readonly judges: Judge[] = [];
  private readonly queue: Job[] = [];
  private starting = 0;
  private closed = false;

  constructor(
    private readonly python: string,
    private readonly runner: string,
    readonly size: number = Math.max(1, os.cpus().length),
    private readonly memoryMb = DEFAULT_MEMORY_MB,
    /** Repository folders originals may be imported from: a job's original that names no mounts of its own is shown
     * those of them that hold its import path. */
    private readonly roots: string[] = [],
  ) {}

  validate(file: string, options: ValidateOptions): Promise<ValidationReport> {
    if (this.closed) return Promise.reject(new NnragError('usage', 'the validator pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ file, options, roots: this.rootsOf(options), resolve, reject });
      void this.pump();
    });
  }

  /** The repository folders a job's judge shows: its original's mounts, else the pool's roots that hold the
   * original's import path; none without an original. */
  private rootsOf(options: ValidateOptions): string[] {
    const original = options.original;
    if (!original) return [];
    if (original.mounts) return [...new Set(original.mounts)].sort();
    const wanted = [original.path, ...(original.also ?? [])].filter((p): p is string => !!p).map((p) => path.resolve(p));
    const holds = (root: string): boolean => wanted.some((p) => p === path.resolve(root) || p.startsWith(`${path.resolve(root)}${path.sep}`));
    return [...new Set(this.roots.filter(holds))].sort();
  }

  private async pump(): Promise<void> {
    while (this.queue.length && !this.closed) {
      for (const dead of this.judges.filter((j) => !j.alive && !j.busy)) {
        this.judges.splice(this.judges.indexOf(dead), 1);
        void dead.close();
      }
      const key = JSON.stringify(this.queue[0].roots);
      let judge = this.judges.find((j) => !j.busy && j.alive && JSON.stringify(j.roots) === key);
      if (!judge) {
        if (this.judges.length + this.starting >= this.size) {
          // an idle judge of another set of folders makes way
          const idle = this.judges.find((j) => !j.busy);
          if (!idle) return;
          this.judges.splice(this.judges.indexOf(idle), 1);
          await idle.close();
          continue;
        }
        this.starting++;
        try {
          judge = await Judge.start(this.python, this.runner, this.memoryMb, this.queue[0].roots);
        } catch (err) {
          // a missing or broken interpreter: every waiting job would fail the same way
          for (const job of this.queue.splice(0)) job.reject(err);
          return;
        } finally {
          this.starting--;
        }
        if (this.closed) {
          await judge.close();
          return;
        }
        this.judges.push(judge);
      }
      // (another pump may have taken the job this judge was started for: the first that wants its folders)
      const at = this.queue.findIndex((j) => JSON.stringify(j.roots) === JSON.stringify(judge.roots));
      if (at < 0) continue;
      const [job] = this.queue.splice(at, 1);
      const taken = judge;
      taken.busy = true;
      void taken
        .validate(job.file, job.options)
        .then(job.resolve, job.reject)
        .finally(() => {
          taken.busy = false;
          void this.pump();
        });
    }
  }

  /** Stops every judge (and its sandbox) and fails what still waits. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new CancelledError('the validator pool closed'));
    await Promise.all(this.judges.splice(0).map((j) => j.close()));
  }
}
