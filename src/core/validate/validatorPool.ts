/**
 * A pool of warm judges: each is `judge.py --serve` in its own sandbox (sandbox.ts), with torch imported once;
 * every block then runs in a worker the judge forks, killed with everything it started when its job ends. A judge
 * that dies is replaced. The pool's size is how many blocks validate at once.
 */
import * as os from 'os';
import { CancelledError, NnragError } from '../base/errors';
import type { ValidateOptions, ValidationReport, ValidatorPoolLike } from './runner';
import { Judge } from './sandbox';
import { DEFAULT_MEMORY_MB } from './limits';

interface Job {
  file: string;
  options: ValidateOptions;
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
    /** Repository folders originals are imported from (shown read-only in every sandbox). */
    private readonly roots: string[] = [],
  ) {}

  validate(file: string, options: ValidateOptions): Promise<ValidationReport> {
    if (this.closed) return Promise.reject(new NnragError('usage', 'the validator pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ file, options, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length && !this.closed) {
      for (const dead of this.judges.filter((j) => !j.alive && !j.busy)) {
        this.judges.splice(this.judges.indexOf(dead), 1);
        void dead.close();
      }
      let judge = this.judges.find((j) => !j.busy && j.alive);
      if (!judge) {
        if (this.judges.length + this.starting >= this.size) return;
        this.starting++;
        try {
          judge = await Judge.start(this.python, this.runner, this.memoryMb, this.roots);
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
      const job = this.queue.shift();
      if (!job) return;
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
