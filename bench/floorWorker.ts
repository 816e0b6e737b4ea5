/**
 * The bench's parse worker: the product's (src/core/analysis/worker.ts) for ordinary requests, and for a request with
 * `floor` only that floor: `parse` decodes and parses, `walk` also reads every node (floors.ts); both keep nothing and
 * answer `same`.
 */
import { parentPort, workerData } from 'worker_threads';
import { analyseFile } from '../src/core/analysis/analyse';
import type { FileInput, FileOutcome } from '../src/core/analysis/analyse';
import { decodePython } from '../src/core/parse/decode';
import { PythonParser } from '../src/core/parse/parser';
import type { WasmPaths } from '../src/core/parse/parser';
import { countNodes } from './floors';
import { promises as fsp } from 'fs';

export type FloorInput = FileInput & { floor?: 'parse' | 'walk' };

async function main(): Promise<void> {
  const parser = await PythonParser.create(workerData.wasm as WasmPaths);
  parentPort!.on('message', (req: { id: number; input: FloorInput }) => {
    const { floor } = req.input;
    const work: Promise<FileOutcome> = floor
      ? (async () => {
          const bytes = req.input.bytes ?? (await fsp.readFile(req.input.file!));
          const decoded = decodePython(bytes);
          if (decoded.ok) parser.withRawTree(decoded.text, (tree) => (floor === 'walk' ? countNodes(tree) : tree.rootNode.endIndex));
          return { kind: 'same', hash: '', size: bytes.length };
        })()
      : analyseFile(parser, req.input);
    work
      .catch((err: unknown): FileOutcome => ({ kind: 'unreadable', detail: err instanceof Error ? err.message : String(err) }))
      .then((outcome) => parentPort!.postMessage({ id: req.id, outcome }));
  });
  parentPort!.postMessage({ ready: true });
}

main().catch((err: unknown) => {
  parentPort!.postMessage({ fatal: err instanceof Error ? err.message : String(err) });
});
