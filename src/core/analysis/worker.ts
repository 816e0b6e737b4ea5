/** Worker thread entry: analyses files sent by the main thread and answers with what the index stores. */
import { parentPort, workerData } from 'worker_threads';
import { analyseFile } from './analyse';
import type { FileOutcome } from './analyse';
import { PythonParser } from '../parse/parser';
import type { WasmPaths } from '../parse/parser';
import { transferable } from './parsePool';
import type { ParseRequest, ParseResponse } from './parsePool';

async function main(): Promise<void> {
  const parser = await PythonParser.create(workerData.wasm as WasmPaths);
  parentPort!.on('message', (req: ParseRequest) => {
    analyseFile(parser, req.input)
      .catch((err: unknown): FileOutcome => ({ kind: 'unreadable', detail: err instanceof Error ? err.message : String(err) }))
      .then((outcome) => {
        const res: ParseResponse = { id: req.id, outcome };
        if (outcome.kind === 'parsed') {
          outcome.facts = transferable(outcome.facts);
          outcome.slim = transferable(outcome.slim);
          parentPort!.postMessage(res, [outcome.facts.buffer as ArrayBuffer, outcome.slim.buffer as ArrayBuffer]);
        } else {
          parentPort!.postMessage(res);
        }
      });
  });
  parentPort!.postMessage({ ready: true });
}

main().catch((err: unknown) => {
  parentPort!.postMessage({ fatal: err instanceof Error ? err.message : String(err) });
});
