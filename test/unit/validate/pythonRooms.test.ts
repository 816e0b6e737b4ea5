/**
 * The judge's package is split by process (python-runner/nnrag_judge: judge/, worker/, wire/), and `npm run lint`
 * holds the split (scripts/pythonRooms.mjs, run by scripts/lintPython.mjs): each probe below breaks one rule.
 */
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as path from 'path';
import { ROOT, tmpdir, writeTree } from '../helpers';

const CHECK = path.join(ROOT, 'scripts', 'pythonRooms.mjs');

function rooms(dir?: string): { code: number | null; lines: string[] } {
  const r = spawnSync(process.execPath, [CHECK, ...(dir ? [dir] : [])], { encoding: 'utf8' });
  return { code: r.status, lines: r.stdout.split('\n').filter(Boolean) };
}

const CLEAN = {
  '__init__.py': '',
  'judge/__init__.py': '',
  'judge/verdict.py': 'from ..wire.protocol import TIERS\nfrom .static import names\nimport os\n',
  'judge/static.py': 'names = 1\n',
  'worker/__init__.py': '',
  'worker/forward.py': 'from ..wire import protocol\nfrom . import inputs\nimport torch\n',
  'worker/inputs.py': '',
  'wire/__init__.py': '',
  'wire/protocol.py': 'TIERS = ()\nfrom .frames import read\n',
  'wire/frames.py': 'read = 1\n',
};

describe("the judge's rooms (one per process)", () => {
  it('the package as it is keeps to its rooms', () => {
    assert.deepStrictEqual(rooms(), { code: 0, lines: [] });
  });

  it('a tree that keeps to the rules passes, and each probe that breaks one fails on its line', async () => {
    const clean = await tmpdir('rooms-');
    await writeTree(clean, CLEAN);
    assert.deepStrictEqual(rooms(clean), { code: 0, lines: [] });
    const probes: [string, Record<string, string>, RegExp][] = [
      [
        'the judge imports a worker module',
        { 'judge/verdict.py': 'import os\nfrom ..worker.forward import run\n' },
        /judge\/verdict\.py:2 rooms: judge\/ imports worker\//,
      ],
      ['the judge imports the worker room', { 'judge/verdict.py': 'from .. import worker\n' }, /judge\/verdict\.py:1 rooms: judge\/ imports worker\//],
      [
        'a worker imports the judge by its absolute name',
        { 'worker/forward.py': '    from nnrag_judge.judge import verdict\n' },
        /worker\/forward\.py:1 rooms: worker\/ imports judge\//,
      ],
      [
        'a worker imports a judge module',
        { 'worker/forward.py': 'import nnrag_judge.judge.static\n' },
        /worker\/forward\.py:1 rooms: worker\/ imports judge\//,
      ],
      [
        'the wire imports a worker module',
        { 'wire/frames.py': 'from ..worker.inputs import (\n    x,\n)\n' },
        /wire\/frames\.py:1 rooms: wire\/ imports worker\//,
      ],
      ['a module outside the rooms', { 'helpers.py': '' }, /helpers\.py:1 rooms: a module outside/],
      ['a folder that is no room', { 'shared/util.py': '' }, /shared\/util\.py:1 rooms: shared\/ is not a room/],
    ];
    for (const [what, files, expected] of probes) {
      const dir = await tmpdir('rooms-');
      await writeTree(dir, { ...CLEAN, ...files });
      const got = rooms(dir);
      assert.strictEqual(got.code, 1, `${what}: ${got.lines.join('; ')}`);
      assert.strictEqual(got.lines.length, 1, `${what}: ${got.lines.join('; ')}`);
      assert.match(got.lines[0], expected, what);
    }
  });
});
