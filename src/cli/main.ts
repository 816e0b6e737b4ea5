#!/usr/bin/env node
/** Entry of the `nn-rag` command: finds the bundled assets, wires the process, runs the command. */
import { existsSync } from 'fs';
import * as path from 'path';
import { runCli } from './cli';
import type { CliAssets } from './cli';

/** Assets sit next to the bundle in dist/; run from source (src/cli), they come from node_modules. */
function assets(): CliAssets {
  const here = __dirname;
  const bundled = existsSync(path.join(here, 'tree-sitter-python.wasm'));
  const top = path.resolve(here, bundled ? '..' : '../..');
  const nm = (p: string): string => path.join(top, 'node_modules', p);
  return {
    treeSitterWasm: bundled ? path.join(here, 'web-tree-sitter.wasm') : nm('web-tree-sitter/web-tree-sitter.wasm'),
    pythonWasm: bundled ? path.join(here, 'tree-sitter-python.wasm') : nm('tree-sitter-python/tree-sitter-python.wasm'),
    sqlWasm: bundled ? path.join(here, 'sql-wasm.wasm') : nm('sql.js/dist/sql-wasm.wasm'),
    runner: path.join(top, 'python-runner', 'judge.py'),
    parseWorker: bundled ? path.join(here, 'parseWorker.js') : path.join(top, 'src', 'core', 'analysis', 'worker.ts'),
  };
}

// the reader went away (`nn-rag search x | head`): stop quietly, as Unix tools do
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const controller = new AbortController();
let interrupted = 0;
process.on('SIGINT', () => {
  interrupted++;
  if (interrupted > 1) process.exit(130);
  controller.abort();
});

runCli(process.argv.slice(2), {
  assets: assets(),
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  tty: !!process.stderr.isTTY,
  columns: process.stderr.columns,
  env: process.env,
  signal: controller.signal,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`nn-rag: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
