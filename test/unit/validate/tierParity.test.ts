/** The judge (Python) and the tool (TypeScript) share one vocabulary of tiers and failure categories. */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as path from 'path';
import { FAILURE_CATEGORIES, TIERS } from '../../../src/core/validate/runner';
import { ROOT } from '../helpers';

const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');

describe('one list of tiers and failure categories', () => {
  it('the validator (Python) and the tool (TypeScript) name the same tiers and categories, in the same order', () => {
    const code = `import importlib.util, json\nspec = importlib.util.spec_from_file_location("v", ${JSON.stringify(path.join(path.dirname(RUNNER), 'nnrag_judge', 'wire', 'protocol.py'))})\nv = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(v)\nprint(json.dumps({"tiers": v.TIERS, "categories": v.REPORT_CATEGORIES}))`;
    const got = JSON.parse(execFileSync('python3', ['-I', '-c', code], { encoding: 'utf8' })) as { tiers: string[]; categories: string[] };
    assert.deepStrictEqual(got.tiers, [...TIERS]);
    assert.deepStrictEqual(got.categories, [...FAILURE_CATEGORIES]);
  });
});
