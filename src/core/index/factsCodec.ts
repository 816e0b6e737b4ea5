/** Module facts as stored: trimmed to what resolution and `show` need, JSON, deflated. */
import { deflateRawSync, inflateRawSync } from 'zlib';
import type { ModuleFacts } from '../parse/types';

export function encodeFacts(facts: ModuleFacts): Uint8Array {
  const lean: ModuleFacts = {
    ...facts,
    docstring: facts.docstring.slice(0, 300),
    // class docstrings and comments live in the `classes` table, not twice
    classes: facts.classes.map((c) => ({ ...c, docstring: '', comments: '' })),
    functions: facts.functions.map((f) => ({ ...f, docstring: f.docstring.slice(0, 160) })),
  };
  return deflateRawSync(Buffer.from(JSON.stringify(lean)), { level: 1 });
}

export function decodeFacts(blob: unknown): ModuleFacts {
  const bytes = blob instanceof Uint8Array ? blob : Buffer.from(String(blob));
  return JSON.parse(inflateRawSync(bytes).toString('utf8')) as ModuleFacts;
}
