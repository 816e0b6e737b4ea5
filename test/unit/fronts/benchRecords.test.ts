/** `npm run bench` keeps every figure with its date and names the ones more than 20% worse than the last record. */
import * as assert from 'assert';
import { mergeRecords } from '../../../bench/records';

describe('the bench record', () => {
  const last = {
    cold_index_s: 10,
    files_per_s: 100,
    small_files_cold_index_s: 12.9,
    small_files: 20000,
    recall_at_5: 0.9,
    measured_on: {
      cold_index_s: '2026-11-20',
      files_per_s: '2026-11-20',
      small_files_cold_index_s: '2026-11-23',
      small_files: '2026-11-23',
      recall_at_5: '2026-11-20',
    },
  };

  it('names a time or a rate more than 20% worse, and nothing within it', () => {
    const { worse } = mergeRecords(last, { cold_index_s: 11.9, files_per_s: 80, recall_at_5: 0.7 }, '2026-11-25');
    assert.deepStrictEqual(
      worse.map((w) => [w.figure, w.ratio]),
      [
        ['files_per_s', 0.8],
        ['recall_at_5', 0.78],
      ],
    );
    assert.deepStrictEqual(
      mergeRecords(last, { cold_index_s: 12.5 }, '2026-11-25').worse.map((w) => [w.figure, w.last_measured_on]),
      [['cold_index_s', '2026-11-20']],
    );
    assert.deepStrictEqual(mergeRecords(last, { cold_index_s: 5, files_per_s: 300 }, '2026-11-25').worse, [], 'better is not worse');
  });

  it("keeps a skipped scenario's figures with the date they were measured, and dates what was measured now", () => {
    const { record, carried, worse } = mergeRecords(last, { cold_index_s: 9 }, '2026-11-25');
    assert.strictEqual(record.small_files_cold_index_s, 12.9);
    assert.deepStrictEqual(carried.small_files_cold_index_s, '2026-11-23');
    assert.strictEqual(record.measured_on?.cold_index_s, '2026-11-25');
    assert.strictEqual(record.measured_on?.small_files_cold_index_s, '2026-11-23');
    assert.deepStrictEqual(worse, []);
    // the next run that measures it again is compared with that old figure
    const again = mergeRecords(record, { small_files_cold_index_s: 117.9 }, '2026-11-26');
    assert.deepStrictEqual(
      again.worse.map((w) => [w.figure, w.last, w.last_measured_on]),
      [['small_files_cold_index_s', 12.9, '2026-11-23']],
    );
  });

  it('starts a record from nothing', () => {
    const { record, worse, carried } = mergeRecords(undefined, { cold_index_s: 9 }, '2026-11-25');
    assert.deepStrictEqual([record.cold_index_s, record.measured_on, worse, carried], [9, { cold_index_s: '2026-11-25' }, [], {}]);
  });
});
