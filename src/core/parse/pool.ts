/**
 * Parsing on every core: a pool of worker threads, each with its own parser. The main thread keeps the
 * database; workers only turn bytes into facts. Falls back to the caller's parser where workers cannot start.
 */
import * as os from 'os';
import { Worker } from 'worker_threads';
import type { PythonParser, WasmPaths } from './parser';
import type { ModuleFacts, ParseFailure } from './types';

export type FactsOutcome = { ok: true; facts: ModuleFacts } | ParseFailure;

export interface ParseRequest {
  id: number;
  bytes: Uint8Array;
  maxBytes?: number;
}

export interface ParseResponse {
  id: number;
  outcome: FactsOutcome;
}

/** Turns file bytes into facts; `inlineParser` serves the in-process case. */
export type ParseFn = (bytes: Uint8Array, maxBytes?: number) => Promise<FactsOutcome>;

export function inlineParse(parser: PythonParser): ParseFn {
  return async (bytes, maxBytes) => {
    const out = parser.parse(bytes, maxBytes);
    return out.ok ? { ok: true, facts: out.facts } : out;
  };
}

// a TypeScript worker (tests, running from source) is loaded through tsx's CommonJS hook
const TS_SHIM = "const { workerData } = require('worker_threads'); require('tsx/cjs'); require(workerData.script);";

export class ParsePool {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: { req: ParseRequest; resolve: (o: FactsOutcome) => void; reject: (e: Error) => void }[] = [];
  private readonly pending = new Map<number, { resolve: (o: FactsOutcome) => void; reject: (e: Error) => void; worker: Worker }>();
  private nextId = 1;
  private closed = false;

  private constructor() {}

  /** Starts `size` workers (default: one per core, at most 4) running `script` (dist/parseWorker.js). */
  static async start(script: string, wasm: WasmPaths, size = Math.min(4, Math.max(1, os.cpus().length))): Promise<ParsePool> {
    const pool = new ParsePool();
    const ts = script.endsWith('.ts');
    await Promise.all(
      Array.from({ length: size }, async () => {
        const worker = ts
          ? new Worker(TS_SHIM, { eval: true, workerData: { wasm, script } })
          : new Worker(script, { workerData: { wasm } });
        await new Promise<void>((resolve, reject) => {
          const onMessage = (m: { ready?: boolean; fatal?: string }): void => {
            worker.off('message', onMessage);
            if (m.fatal) reject(new Error(m.fatal));
            else resolve();
          };
          worker.on('message', onMessage);
          worker.once('error', reject);
        });
        worker.on('message', (m: ParseResponse) => pool.done(worker, m));
        worker.on('error', (err) => pool.fail(worker, err));
        pool.workers.push(worker);
        pool.idle.push(worker);
      }),
    );
    return pool;
  }

  get size(): number {
    return this.workers.length;
  }

  parse: ParseFn = (bytes, maxBytes) =>
    new Promise<FactsOutcome>((resolve, reject) => {
      if (this.closed) {
        reject(new Error('the parse pool is closed'));
        return;
      }
      this.queue.push({ req: { id: this.nextId++, bytes, maxBytes }, resolve, reject });
      this.pump();
    });

  private pump(): void {
    while (this.idle.length && this.queue.length) {
      const worker = this.idle.pop()!;
      const job = this.queue.shift()!;
      this.pending.set(job.req.id, { resolve: job.resolve, reject: job.reject, worker });
      worker.postMessage(job.req);
    }
  }

  private done(worker: Worker, m: ParseResponse): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    this.idle.push(worker);
    p.resolve(m.outcome);
    this.pump();
  }

  private fail(worker: Worker, err: Error): void {
    for (const [id, p] of this.pending) {
      if (p.worker !== worker) continue;
      this.pending.delete(id);
      p.reject(err);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('the parse pool is closed'));
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/**
 * A pool that starts on the first file to parse: a run with nothing to parse (a warm start) pays nothing.
 * When workers cannot start, parsing falls back to `fallback` in this thread.
 */
export function lazyPool(script: string | undefined, wasm: WasmPaths, fallback: PythonParser, size?: number): { parse: ParseFn; size: number; close: () => Promise<void> } {
  let pool: Promise<ParsePool | undefined> | undefined;
  const inline = inlineParse(fallback);
  // one more worker than cores: while one waits for its next file from the main thread, the cores stay busy
  const workers = size ?? Math.min(4, Math.max(1, os.cpus().length + 1));
  return {
    size: script ? workers : 1,
    parse: async (bytes, maxBytes) => {
      if (!script) return inline(bytes, maxBytes);
      pool ??= ParsePool.start(script, wasm, workers).catch(() => undefined);
      const p = await pool;
      return p ? p.parse(bytes, maxBytes) : inline(bytes, maxBytes);
    },
    close: async () => {
      const p = await pool;
      await p?.close();
    },
  };
}
