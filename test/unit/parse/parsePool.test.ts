import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { MessageChannel, markAsUntransferable } from 'worker_threads';
import { PythonParser } from '../../../src/core/parse/parser';
import { lazyPool, ParsePool, transferable } from '../../../src/core/analysis/parsePool';
import { ASSETS, ROOT } from '../helpers';

const WORKER = path.join(ROOT, 'src', 'core', 'analysis', 'worker.ts');

describe('parse workers', () => {
  it('send facts a Node runtime would refuse to transfer (its pooled Buffers, zlib output in Node 24)', () => {
    const facts = Buffer.from('encoded facts');
    markAsUntransferable(facts.buffer);
    const { port1, port2 } = new MessageChannel();
    try {
      const own = transferable(facts);
      port1.postMessage(own, [own.buffer as ArrayBuffer]);
      // Node 20 clones what it may not transfer, Node 24 throws: transferred, the sender's copy is detached
      assert.strictEqual(own.buffer.byteLength, 0, 'the bytes were transferred, not cloned');
      assert.deepStrictEqual(Buffer.from(facts).toString(), 'encoded facts', 'the original is left as it was');
    } finally {
      port1.close();
      port2.close();
    }
  });

  it('read, hash and analyse a local file, and say when its content is the one the index holds', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-pp-'));
    const file = path.join(dir, 'm.py');
    await fsp.writeFile(file, 'from torch import nn\n\n\nclass Block(nn.Module):\n    pass\n');
    const pool = await ParsePool.start(WORKER, ASSETS, 1);
    try {
      const first = await pool.parse({ file });
      assert.strictEqual(first.kind, 'parsed');
      if (first.kind !== 'parsed') return;
      assert.deepStrictEqual(
        first.classes.map((c) => c.name),
        ['Block'],
      );
      assert.ok(first.facts.length > 0, 'the encoded facts come back');
      const again = await pool.parse({ file, knownHash: first.hash });
      assert.deepStrictEqual(again, { kind: 'same', hash: first.hash, size: first.size });
      assert.strictEqual((await pool.parse({ file: path.join(dir, 'gone.py') })).kind, 'unreadable');
    } finally {
      await pool.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  it('report a file that kills its worker as failed, retry the files it shared the worker with, and go on with a new worker', async function () {
    this.timeout(120_000);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-pp-'));
    // a file whose tree does not fit a 24 MB heap
    const big = path.join(dir, 'big.py');
    await fsp.writeFile(big, Array.from({ length: 40_000 }, (_, i) => `v${i} = f(a${i}, b[${i}], c.d, (1, 2, 3))\n`).join(''));
    const small = path.join(dir, 'small.py');
    await fsp.writeFile(small, 'class Small:\n    pass\n');
    const pool = await ParsePool.start(WORKER, ASSETS, 1, 24);
    try {
      // both go to the one worker: the small file is tried again in the next worker, the big one is reported
      const [died, neighbour] = await Promise.all([pool.parse({ file: big, maxBytes: 16 * 1024 * 1024 }), pool.parse({ file: small })]);
      assert.strictEqual(died.kind, 'failed', `the big file: ${died.kind}`);
      assert.match(died.kind === 'failed' ? died.detail : '', /parse worker ended/);
      assert.strictEqual(neighbour.kind, 'parsed', 'the file that shared the worker is parsed by the next one');
      const next = await pool.parse({ file: small });
      assert.strictEqual(next.kind, 'parsed', 'a new worker parses the next file');
      assert.strictEqual(pool.size, 1);
    } finally {
      await pool.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  it('parse in the calling thread when workers cannot parse here (they die on the probe every worker parses first)', async function () {
    this.timeout(60_000);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-pp-'));
    // a worker that starts, then dies on every file: what a runtime the workers cannot run in looks like
    const script = path.join(dir, 'dies.js');
    await fsp.writeFile(
      script,
      "const { parentPort } = require('worker_threads');\nparentPort.on('message', () => process.exit(3));\nparentPort.postMessage({ ready: true });\n",
    );
    const files = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map(async (n) => {
        const file = path.join(dir, `${n}.py`);
        await fsp.writeFile(file, `class ${n.toUpperCase()}:\n    pass\n`);
        return file;
      }),
    );
    const pool = lazyPool(script, ASSETS, await PythonParser.create(ASSETS), 2);
    try {
      const outcomes = await Promise.all(files.map((file) => pool.parse({ file })));
      assert.deepStrictEqual(
        outcomes.map((o) => o.kind),
        files.map(() => 'parsed'),
      );
    } finally {
      await pool.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
