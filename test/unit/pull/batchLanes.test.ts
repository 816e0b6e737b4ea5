/** A batch's lanes (`inLanes`): every item once, never more at a time than there are lanes, and a stop honoured. */
import * as assert from 'assert';
import { inLanes } from '../../../src/core/pull/batch';

describe('a batch run in lanes', () => {
  it('runs every item once, at most one per lane at a time, and stops taking items when asked', async () => {
    const ran: number[] = [];
    let busy = 0;
    let most = 0;
    await inLanes(7, 3, async (i) => {
      busy++;
      most = Math.max(most, busy);
      await new Promise((r) => setTimeout(r, 5 + (i % 3) * 3));
      ran.push(i);
      busy--;
    });
    assert.deepStrictEqual(
      [...ran].sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6],
    );
    assert.strictEqual(most, 3);
    const taken: number[] = [];
    await inLanes(
      10,
      2,
      async (i) => void taken.push(i),
      () => taken.length >= 4,
    );
    assert.deepStrictEqual(taken, [0, 1, 2, 3]);
    let none = 0;
    await inLanes(0, 4, async () => void none++);
    assert.strictEqual(none, 0);
  });
});
