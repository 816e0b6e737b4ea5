/**
 * Parsing on every core: a pool of worker threads, each with its own parser. The main thread keeps the
 * database; workers read local files, hash them, parse them and encode their facts (see analyse.ts), and answer
 * with what the database stores. Falls back to the caller's parser where workers cannot start.
 */
import * as os from 'os';
import { Worker } from 'worker_threads';
import { analyseFile } from './analyse';
import type { FileInput, FileOutcome } from './analyse';
import type { PythonParser, WasmPaths } from '../parse/parser';

export interface ParseRequest {
  id: number;
  input: FileInput;
}

export interface ParseResponse {
  id: number;
  outcome: FileOutcome;
}

/** Turns a file into what the index stores; `inlineParse` serves the in-process case. */
export type ParseFn = (input: FileInput) => Promise<FileOutcome>;

export function inlineParse(parser: PythonParser): ParseFn {
  return (input) => analyseFile(parser, input, { syncRead: true });
}

/**
 * The facts in an ArrayBuffer of their own, which can be transferred: Node marks Buffers from its pools (and, in
 * Node 24, those zlib returns) as untransferable, so the bytes are copied once here instead of being cloned on send.
 */
export function transferable(b: Uint8Array): Uint8Array {
  return new Uint8Array(b);
}

// a TypeScript worker (tests, running from source) is loaded through tsx's CommonJS hook
const TS_SHIM = "const { workerData } = require('worker_threads'); require('tsx/cjs'); require(workerData.script);";

/**
 * Requests a worker holds: it starts the next file while its answer crosses to the main thread (one at a time, a
 * worker waits for the main thread between files: a third slower here), and has work left while the main thread is
 * busy for a while (a rediscovery during a cold run takes up to a few hundred milliseconds).
 */
const IN_FLIGHT = 4;
/** Old-generation limit of a parse worker's heap, in MB. */
const WORKER_HEAP_MB = 384;
/** A file every worker parses before it takes work: a runtime the workers cannot run in shows at start, not file by file. */
const PROBE = new TextEncoder().encode('import torch\n\n\nclass Probe(torch.nn.Module):\n    pass\n');

interface Job {
  req: ParseRequest;
  resolve: (o: FileOutcome) => void;
  reject: (e: Error) => void;
  /** The worker that holds it, once sent. */
  worker?: Worker;
  /** Sent to a worker that died: the next death reports the file as failed. */
  retried?: boolean;
}

export class ParsePool {
  private readonly workers: Worker[] = [];
  /** Requests each worker holds (sent, not answered). */
  private readonly load = new Map<Worker, number>();
  private readonly queue: Job[] = [];
  private readonly pending = new Map<number, Job>();
  private nextId = 1;
  private closed = false;

  private constructor(
    private readonly script: string,
    private readonly wasm: WasmPaths,
    private readonly heapMb: number,
  ) {}

  /**
   * Starts `size` workers (default: one per core, at most 4) running `script` (dist/parseWorker.js), each with an
   * old generation of at most `heapMb`.
   */
  static async start(script: string, wasm: WasmPaths, size = Math.min(4, Math.max(1, os.cpus().length)), heapMb = WORKER_HEAP_MB): Promise<ParsePool> {
    const pool = new ParsePool(script, wasm, heapMb);
    await Promise.all(Array.from({ length: size }, () => pool.spawn()));
    return pool;
  }

  private async spawn(): Promise<void> {
    const { script, wasm } = this;
    // a bounded heap: V8 collects before it grows far past what one file needs (a 2 MB file's tree is ~60 MB)
    const resourceLimits = { maxOldGenerationSizeMb: this.heapMb };
    const worker = script.endsWith('.ts')
      ? new Worker(TS_SHIM, { eval: true, workerData: { wasm, script }, resourceLimits })
      : new Worker(script, { workerData: { wasm }, resourceLimits });
    // ready, then the probe parsed: a worker that cannot work here fails now, and the caller parses in its thread
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: { ready?: boolean; fatal?: string } & Partial<ParseResponse>): void => {
        if (m.fatal) return settle(new Error(m.fatal));
        if (m.ready) return worker.postMessage({ id: 0, input: { bytes: PROBE } } satisfies ParseRequest);
        if (m.id === 0) settle(m.outcome?.kind === 'parsed' ? undefined : new Error(`the parse worker could not parse a probe: ${JSON.stringify(m.outcome)}`));
      };
      const onError = (err: Error): void => settle(err);
      const onExit = (code: number): void => settle(new Error(`the parse worker ended as it started (exit code ${code})`));
      const settle = (err?: Error): void => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (err) {
          void worker.terminate();
          reject(err);
        } else {
          resolve();
        }
      };
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    });
    if (this.closed) {
      await worker.terminate();
      return;
    }
    worker.on('message', (m: ParseResponse) => this.done(worker, m));
    worker.on('error', (err) => this.fail(worker, err.message || String(err)));
    worker.on('exit', (code) => this.fail(worker, `exit code ${code}`));
    this.workers.push(worker);
    this.load.set(worker, 0);
    this.pump();
  }

  get size(): number {
    return this.workers.length;
  }

  parse: ParseFn = (input) =>
    new Promise<FileOutcome>((resolve, reject) => {
      if (this.closed) {
        reject(new Error('the parse pool is closed'));
        return;
      }
      this.queue.push({ req: { id: this.nextId++, input }, resolve, reject });
      this.pump();
    });

  private pump(): void {
    while (this.queue.length) {
      // the least loaded worker, while it holds fewer than IN_FLIGHT requests
      let worker: Worker | undefined;
      for (const w of this.workers) if ((this.load.get(w) ?? 0) < IN_FLIGHT && (!worker || this.load.get(w)! < this.load.get(worker)!)) worker = w;
      if (!worker) return;
      this.load.set(worker, this.load.get(worker)! + 1);
      const job = this.queue.shift()!;
      job.worker = worker;
      this.pending.set(job.req.id, job);
      worker.postMessage(job.req);
    }
  }

  private done(worker: Worker, m: ParseResponse): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    this.load.set(worker, this.load.get(worker)! - 1);
    p.resolve(m.outcome);
    this.pump();
  }

  /**
   * A worker that died (out of memory on a pathological file, a crash): the files it held are tried once more in
   * another worker (the file that killed it was perhaps not theirs), then reported as failed, not lost; a new worker
   * takes its place.
   */
  private fail(worker: Worker, why: string): void {
    const at = this.workers.indexOf(worker);
    if (at < 0) return;
    this.workers.splice(at, 1);
    this.load.delete(worker);
    const failed: FileOutcome = { kind: 'failed', detail: `the parse worker ended while analysing this file (${why})` };
    for (const [id, job] of this.pending) {
      if (job.worker !== worker) continue;
      this.pending.delete(id);
      if (job.retried || this.closed) {
        job.resolve(failed);
      } else {
        job.retried = true;
        this.queue.unshift(job);
      }
    }
    if (this.closed) return;
    this.spawn().catch((err: unknown) => {
      if (this.workers.length) return;
      for (const job of this.queue.splice(0)) job.reject(err instanceof Error ? err : new Error(String(err)));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('the parse pool is closed'));
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()));
  }
}

/**
 * The largest file an index run parses in the calling thread beside the pool (`hereMaxBytes`): about 50 ms of parsing
 * here, the longest a search waits behind it during a cold run.
 */
export const HERE_MAX_BYTES = 256 * 1024;

/**
 * A pool that starts on the first file to parse: a run with nothing to parse (a warm start) pays nothing.
 * When workers cannot start (or cannot parse the probe), parsing falls back to `fallback` in this thread. `close` ends the workers and gives their
 * memory back; a later parse starts new ones.
 *
 * By default one worker fewer than cores (at least one, at most three): the calling thread, which owns the database,
 * parses small files between its own work (`hereMaxBytes`, see `IndexOptions`). On two cores that indexes as fast as
 * two workers, and a whole worker's memory less (its runtime, and the largest tree it has held).
 */
export function lazyPool(
  script: string | undefined,
  wasm: WasmPaths,
  fallback: PythonParser,
  size?: number,
): { parse: ParseFn; size: number; inFlight: number; hereMaxBytes: number; close: () => Promise<void> } {
  let pool: Promise<ParsePool | undefined> | undefined;
  const inline = inlineParse(fallback);
  // each holds IN_FLIGHT requests, so none waits for the main thread between files
  const workers = size ?? Math.min(3, Math.max(1, os.cpus().length - 1));
  return {
    size: script ? workers : 1,
    /** How many files to hand over at once to keep every worker busy (the `concurrency` of an index run). */
    inFlight: script ? workers * IN_FLIGHT : 1,
    /** Files up to this size are parsed in this thread too (0: without workers, everything is). */
    hereMaxBytes: script ? HERE_MAX_BYTES : 0,
    parse: async (input) => {
      if (!script) return inline(input);
      pool ??= ParsePool.start(script, wasm, workers).catch(() => undefined);
      const p = await pool;
      return p ? p.parse(input) : inline(input);
    },
    close: async () => {
      const p = await pool;
      pool = undefined;
      await p?.close();
    },
  };
}
