/** The one description of a pulled file's state that the CodeLens, the views and the tree show. */
import * as assert from 'assert';
import { describePulled, tierRank, verdictWords } from '../../src/core/pull/pulledState';
import type { PulledFileStatus } from '../../src/core/pull/update';

const base: PulledFileStatus = { target: 't:m.Block', state: 'up-to-date', edited: false, conflicts: 0, changed: [], validation: { status: 'validated', tier: 'equivalent', category: null } };

describe('the words for a pulled file', () => {
  it('says conflicts, edits and failures wherever it is shown, each with its icon', () => {
    assert.deepStrictEqual(describePulled(base), { parts: ['up to date', 'validated: equivalent'], label: 'up to date · validated: equivalent', icon: 'pass' });
    assert.deepStrictEqual(describePulled({ ...base, edited: true }).parts, ['up to date', 'edited locally', 'validated: equivalent']);
    assert.strictEqual(describePulled({ ...base, edited: true }).icon, 'edit');
    const conflicted = describePulled({ ...base, state: 'conflicted', conflicts: 2, edited: true });
    assert.deepStrictEqual([conflicted.parts[0], conflicted.icon], ['2 conflicts', 'git-merge']);
    const failed = describePulled({ ...base, validation: { status: 'failed', tier: 'imported', category: 'instantiate' } });
    assert.deepStrictEqual([failed.parts[1], failed.icon], ['failed: instantiate (reached imported)', 'warning']);
    assert.strictEqual(describePulled({ ...base, state: 'changed' }).icon, 'cloud-download');
    assert.deepStrictEqual(describePulled({ ...base, state: 'damaged', edited: true }).parts, ['damaged header']);
  });

  it('names a verdict the same way for the header, the index and a report', () => {
    assert.strictEqual(verdictWords({ status: 'validated', tier: 'forward' }), 'validated: forward');
    assert.strictEqual(verdictWords({ status: 'failed', tier: null, category: 'syntax' }), 'failed: syntax');
    assert.strictEqual(verdictWords(undefined), 'not validated');
    assert.strictEqual(verdictWords({ status: 'extracted', tier: null }), 'not validated');
    assert.ok(tierRank('forward') < tierRank('equivalent') && tierRank(null) < tierRank('parsed'));
  });
});
