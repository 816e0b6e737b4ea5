/** Worker thread entry: parses files sent by the main thread and answers with their facts (never the text). */
import { parentPort, workerData } from 'worker_threads';
import { PythonParser } from './parser';
import type { WasmPaths } from './parser';
import type { ParseRequest, ParseResponse } from './pool';

async function main(): Promise<void> {
  const parser = await PythonParser.create(workerData.wasm as WasmPaths);
  parentPort!.on('message', (req: ParseRequest) => {
    let res: ParseResponse;
    try {
      const out = parser.parse(req.bytes, req.maxBytes);
      res = out.ok ? { id: req.id, outcome: { ok: true, facts: out.facts } } : { id: req.id, outcome: out };
    } catch (err) {
      res = { id: req.id, outcome: { ok: false, reason: 'error', detail: err instanceof Error ? err.message : String(err) } };
    }
    parentPort!.postMessage(res);
  });
  parentPort!.postMessage({ ready: true });
}

main().catch((err: unknown) => {
  parentPort!.postMessage({ fatal: err instanceof Error ? err.message : String(err) });
});
