/**
 * The private writable copy of a repository that observation shows its tests is capped by the bytes actually
 * written: a sparse file (a few bytes on disk, gigabytes of holes) is never copied as zeros.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { privateCopy } from '../../src/core/base/files';
import { tmpdir } from '../unit/helpers';

/** Bytes a folder takes on disk (its files' allocated blocks). */
function onDisk(dir: string): number {
  let total = 0;
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const st = fs.lstatSync(path.join(dir, name));
    if (st.isFile()) total += st.blocks * 512;
  }
  return total;
}

describe('trust: the private copy of a repository is capped by the bytes written', () => {
  it('leaves sparse files out of the copy (placeholders, named), and counts only what it wrote', async function () {
    const dir = await tmpdir('nnrag-private-copy-');
    const repo = path.join(dir, 'repo');
    fs.mkdirSync(path.join(repo, 'data'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'model.py'), 'x = 1\n');
    for (const n of [1, 2, 3]) {
      const f = path.join(repo, 'data', `hole${n}.bin`);
      fs.closeSync(fs.openSync(f, 'w'));
      fs.truncateSync(f, 12 << 20);
    }
    // the file system keeps holes (else there is nothing to test)
    if (onDisk(repo) > 1 << 20) this.skip();
    const copy = path.join(dir, 'copy');
    const made = await privateCopy(repo, copy, { maxFileBytes: 16 << 20, maxBytes: 20 << 20 });
    assert.ok(made, 'the copy is made: the sparse files do not count as 36 MB');
    assert.deepStrictEqual(made.large.sort(), ['data/hole1.bin', 'data/hole2.bin', 'data/hole3.bin']);
    assert.strictEqual(made.bytes, 6);
    assert.ok(onDisk(copy) < 1 << 20, `the copy takes ${onDisk(copy)} bytes on disk`);
    assert.strictEqual(fs.readFileSync(path.join(copy, 'model.py'), 'utf8'), 'x = 1\n');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
