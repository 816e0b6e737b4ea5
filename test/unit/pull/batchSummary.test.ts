/** A batch's summary: raw shares of all blocks first, abstract base classes counted apart with the shares of the rest. */
import * as assert from 'assert';
import { mergeBatches, summarise } from '../../../src/core/pull/batch';
import type { BatchItem } from '../../../src/core/pull/batch';

const item = (target: string, over: Partial<BatchItem>): BatchItem => ({ target, status: 'failed', tier: 'imported', ...over }) as BatchItem;

describe('a batch summary', () => {
  const items = [
    item('a', { status: 'validated', tier: 'equivalent', equivalence: 'equivalent' }),
    item('b', { status: 'validated', tier: 'forward' }),
    item('c', { category: 'abstract' }),
    item('d', { category: 'instantiate' }),
  ];

  it('counts abstract base classes apart, and gives the shares of the blocks that can run alone', () => {
    const s = summarise(items, 4, 10, true, 1);
    assert.deepStrictEqual(s.raw, { blocks: 4, forward: 2, equivalent: 1, forward_share: 50, equivalent_share: 25 });
    assert.deepStrictEqual(s.abstract, { blocks: 1, runnable: 3, forward_share: 66.67, equivalent_share: 33.33 });
    assert.strictEqual(s.categories.abstract, 1);
  });

  it('counts them again when shards are merged', () => {
    const one = { summary: summarise(items.slice(0, 2), 2, 5, true, 1), items: items.slice(0, 2), shard: { index: 1, count: 2 } };
    const two = { summary: summarise(items.slice(2), 2, 5, true, 1), items: items.slice(2), shard: { index: 2, count: 2 } };
    assert.deepStrictEqual(mergeBatches([one, two]).summary.abstract, summarise(items, 4, 10, true, 1).abstract);
  });
});
