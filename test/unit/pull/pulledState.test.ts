/** The one description of a pulled file's state that the CodeLens, the views and the tree show. */
import * as assert from 'assert';
import { describePulled, tierRank, verdictWords } from '../../../src/core/pull/pulledState';
import type { PulledFileStatus } from '../../../src/core/pull/update';
import { FAILURE_CATEGORIES } from '../../../src/core/validate/report';
import { sentence } from '../../../src/core/base/text';

const base: PulledFileStatus = {
  target: 't:m.Block',
  state: 'up-to-date',
  edited: false,
  stale: false,
  conflicts: 0,
  changed: [],
  validation: { status: 'validated', tier: 'equivalent', category: null },
};

describe('the words for a pulled file', () => {
  it('says conflicts, edits and failures wherever it is shown, each with its icon', () => {
    assert.deepStrictEqual(describePulled(base), { parts: ['up to date', 'validated: equivalent'], label: 'up to date · validated: equivalent', icon: 'pass' });
    assert.deepStrictEqual(describePulled({ ...base, edited: true }).parts, ['up to date', 'edited locally', 'validated: equivalent']);
    assert.strictEqual(describePulled({ ...base, edited: true }).icon, 'edit');
    // a verdict on the body before the edit is not the file's: said so, and a failure before the edit is no warning
    assert.deepStrictEqual(describePulled({ ...base, edited: true, stale: true }).parts, [
      'up to date',
      'edited locally',
      'edited, not validated since (was validated: equivalent)',
    ]);
    const staleFailure = describePulled({ ...base, edited: true, stale: true, validation: { status: 'failed', tier: 'imported', category: 'instantiate' } });
    assert.strictEqual(staleFailure.icon, 'edit');
    const conflicted = describePulled({ ...base, state: 'conflicted', conflicts: 2, edited: true });
    assert.deepStrictEqual([conflicted.parts[0], conflicted.icon], ['2 conflicts', 'git-merge']);
    const failed = describePulled({ ...base, validation: { status: 'failed', tier: 'imported', category: 'instantiate' } });
    assert.deepStrictEqual([failed.parts[1], failed.icon], ['failed: the block could not be built', 'warning']);
    assert.strictEqual(describePulled({ ...base, state: 'changed' }).icon, 'cloud-download');
    assert.deepStrictEqual(describePulled({ ...base, state: 'damaged', edited: true }).parts, ['damaged header']);
  });

  it('names a verdict the same way for the header, the index and a report', () => {
    assert.strictEqual(verdictWords({ status: 'validated', tier: 'forward' }), 'validated: forward');
    assert.strictEqual(verdictWords({ status: 'failed', tier: null, category: 'syntax' }), 'failed: the file does not parse');
    // no tier id or category key reaches a person: every category has its words
    for (const c of FAILURE_CATEGORIES)
      assert.doesNotMatch(
        verdictWords({ status: 'failed', tier: 'names-closed', category: c }),
        /names-closed|instantiate\b|missing-package|native-extension|import-error/,
        c,
      );
    assert.strictEqual(verdictWords(undefined), 'not validated');
    // a record's words are data, not the tables' own keys
    assert.strictEqual(verdictWords({ status: 'failed', tier: 'constructor', category: 'toString' }), 'failed: toString');
    assert.strictEqual(verdictWords({ status: 'extracted', tier: null }), 'not validated');
    assert.ok(tierRank('forward') < tierRank('equivalent') && tierRank(null) < tierRank('parsed'));
  });
});

describe('sentences a person reads', () => {
  it('a long message is cut at a word, ends as a sentence, and the next one stays apart', () => {
    const long = `failed: ${'word '.repeat(100)}fasterrcnn_mobilenet_v3_large_fpn`;
    const s = sentence(long, 80);
    assert.ok(s.length <= 81 && s.endsWith('…'), s);
    assert.ok(!/\bwor…$/.test(s), 'not cut inside a word');
    assert.strictEqual(sentence('validated: equivalent', 80), 'validated: equivalent.');
  });
});
