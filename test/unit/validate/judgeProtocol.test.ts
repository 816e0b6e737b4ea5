/**
 * The judge's requests have one description, python-runner/judge.schema.json: what validate/judgeRequests.ts writes fits it (here),
 * and what jobs.py reads is in it (python-runner/tests/test_messages.py), so a field one side adds that the other
 * does not know fails a test; the judge refuses a request of a kind it has no handler for, or with a field it does not
 * know, in words.
 */
import * as assert from 'assert';
import { readFileSync } from 'fs';
import * as path from 'path';
import { observeRequest, validateRequest } from '../../../src/core/validate/judgeRequests';
import { ROOT } from '../helpers';
import { validateSchema } from '../jsonSchema';

const schema = JSON.parse(readFileSync(path.join(ROOT, 'python-runner', 'judge.schema.json'), 'utf8')) as Record<string, unknown>;

describe("the judge's requests", () => {
  // every option a caller can give, so that every field the request can hold is written
  const validate = validateRequest(
    7,
    '/srv/src/7/block.py',
    '/home/user',
    'bubblewrap',
    {
      python: '/usr/bin/python3',
      runner: 'judge.py',
      className: 'Block',
      candidates: [{ args: [], kwargs: { dim: 4 } }],
      examples: ['Block(4)(x)'],
      native: ['pkg._C'],
      builder: 'make_block',
      memoryMb: 2048,
      timeoutMs: 30_000,
      original: { module: 'pkg.block', class: 'Block', path: '/repo', file: 'pkg/block.py', blob: 'a'.repeat(40) },
      originalOnly: true,
      upstreamUndefined: ['missing_name'],
      originalFrames: 'frames',
      keepOriginal: true,
    },
    [{ module: 'pkg._C', name: '_C', file: '/x/_C.so', fileName: '_C.so' }],
  );
  const observe = observeRequest(
    8,
    { root: '/repo', path: '/repo', also: [], entry_s: 20, entries: [{ id: 'tests/test_x.py::test_x', module: 'test_x', function: 'test_x' }] },
    '/home/user',
    'bubblewrap',
    { timeoutMs: 60_000, memoryMb: 2048 },
  );

  it('what judgeRequests.ts writes fits the schema the judge checks (messages.py), each with its kind', () => {
    assert.deepStrictEqual(validateSchema(schema, JSON.parse(JSON.stringify(validate))), []);
    assert.deepStrictEqual(validateSchema(schema, JSON.parse(JSON.stringify(observe))), []);
    assert.deepStrictEqual([validate.kind, observe.kind], ['validate', 'observe']);
  });

  it('a field the schema does not know, or a kind it does not name, does not fit', () => {
    assert.notDeepStrictEqual(validateSchema(schema, { ...validate, colour: 'red' }), []);
    assert.notDeepStrictEqual(validateSchema(schema, { ...observe, kind: 'explode' }), []);
    assert.notDeepStrictEqual(validateSchema(schema, { ...validate, kind: undefined }), []);
  });
});
