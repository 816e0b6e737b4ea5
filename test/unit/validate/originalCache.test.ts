/**
 * The original's runs, kept: a block validated again with the same original, interpreter and arguments runs only its
 * copy, with the same verdict; an edit of the copy is still judged against the kept original; a damaged entry, or one
 * made with another torch, is not used.
 */
import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { gunzipSync, gzipSync } from 'zlib';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';
import { environmentStamp, keepOriginal, keepsAsFailure, keptFailure } from '../../../src/core/validate/originalCache';
import type { ValidationReport } from '../../../src/core/validate/report';

interface Verdict {
  tier: string;
  category?: string;
  original_cached?: boolean;
  equivalence?: { status: string };
  message?: string;
  timings?: { reused?: boolean };
}

describe("the originals' runs, kept", function () {
  this.timeout(300_000);

  it('a second validation runs only the copy and gives the same verdict; a damaged or foreign entry is not used', async () => {
    const work = await tmpdir('nnrag-originals-');
    const repo = path.join(work, 'tinyblocks');
    await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), repo, { recursive: true });
    const db = path.join(work, 'index.db');
    const cache = path.join(work, 'cache');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    const pull = async (out: string): Promise<Verdict> => {
      const r = await cli(
        'pull',
        'tinyblocks.blocks.ResidualBlock',
        '--db',
        db,
        '--out',
        path.join(work, out),
        '--python',
        PYTHON_WITH_TORCH,
        '--cache',
        cache,
        '--force',
        '--json',
      );
      return (JSON.parse(r.out) as { validation: Verdict }).validation;
    };
    const validate = async (file: string): Promise<Verdict> =>
      JSON.parse((await cli('validate', path.join(work, file), '--db', db, '--python', PYTHON_WITH_TORCH, '--cache', cache, '--json')).out) as Verdict;
    const first = await pull('a.py');
    assert.strictEqual(first.tier, 'equivalent', JSON.stringify(first));
    assert.notStrictEqual(first.original_cached, true);
    const entries = (await fsp.readdir(path.join(cache, 'originals'))).filter((n) => n.endsWith('.json.gz'));
    assert.strictEqual(entries.length, 1);
    const second = await pull('b.py');
    assert.deepStrictEqual([second.tier, second.equivalence?.status, second.original_cached], ['equivalent', 'equivalent', true]);
    // a Sequential's module tree (children "0", "1" beside named settings): the kept run replays in its own order
    for (const out of ['s1.py', 's2.py']) {
      const r = await cli(
        'pull',
        'tinyblocks.layers.conv.ConvNormAct',
        '--db',
        db,
        '--out',
        path.join(work, out),
        '--python',
        PYTHON_WITH_TORCH,
        '--cache',
        cache,
        '--json',
      );
      const v = (JSON.parse(r.out) as { validation: Verdict }).validation;
      assert.deepStrictEqual([v.tier, v.original_cached === true], ['equivalent', out === 's2.py'], JSON.stringify(v));
    }
    // an edit of the copy is judged against the kept original: the difference is found
    const file = path.join(work, 'b.py');
    await fsp.writeFile(
      file,
      (await fsp.readFile(file, 'utf8')).replace(
        'return self.act(self.shortcut(x) + self.drop_path(y))',
        'return self.act(self.shortcut(x) + 2 * self.drop_path(y))',
      ),
    );
    const edited = await validate('b.py');
    assert.strictEqual(edited.category, 'differs', JSON.stringify(edited));
    assert.strictEqual(edited.original_cached, true);
    // a damaged entry is not used (and is replaced); one made with another torch is refused by the judge
    const entry = path.join(cache, 'originals', entries[0]);
    const kept = JSON.parse(gunzipSync(await fsp.readFile(entry)).toString('utf8')) as { versions: { torch: string } };
    await fsp.writeFile(entry, gzipSync('{"versions": '));
    assert.notStrictEqual((await pull('c.py')).original_cached, true);
    await fsp.writeFile(entry, gzipSync(JSON.stringify({ ...kept, versions: { ...kept.versions, torch: '0.0.1' } })));
    const foreign = await pull('d.py');
    assert.deepStrictEqual([foreign.tier, foreign.original_cached], ['equivalent', undefined]);
    // and replaced by the run just made
    assert.strictEqual((await pull('e.py')).original_cached, true);
    // a file of the repository the header does not name (the package's __init__, which the original imports) changed
    // and indexed again: the original runs again
    await fsp.appendFile(path.join(repo, 'tinyblocks', '__init__.py'), '\nEXTRA = 1\n');
    assert.strictEqual((await cli('index', repo, '--db', db)).code, 0);
    assert.notStrictEqual((await pull('f.py')).original_cached, true);
  });

  it("an original that fails of itself is kept too (its key holds the interpreter's packages: see the next test)", async () => {
    const work = await tmpdir('nnrag-originals-failing-');
    // a block whose original (and copy) stop at forward whatever input the judge tries
    await writeTree(path.join(work, 'repo'), {
      'pk/__init__.py': '',
      'pk/blocks.py':
        'from torch import nn\n\n\nclass Picky(nn.Module):\n    def __init__(self, width=4):\n        super().__init__()\n        self.lin = nn.Linear(width, width)\n\n    def forward(self, x):\n        assert x.dim() == 7, "seven dimensions"\n        return self.lin(x)\n',
    });
    const db = path.join(work, 'index.db');
    const cache = path.join(work, 'cache');
    assert.strictEqual((await cli('index', path.join(work, 'repo'), '--db', db)).code, 0);
    const pull = async (out: string): Promise<{ category?: string; validation: Verdict & { original_reached?: string } }> =>
      JSON.parse(
        (
          await cli(
            'pull',
            'pk.blocks.Picky',
            '--db',
            db,
            '--out',
            path.join(work, out),
            '--python',
            PYTHON_WITH_TORCH,
            '--cache',
            cache,
            '--no-observe',
            '--json',
          )
        ).out,
      ) as { category?: string; validation: Verdict & { original_reached?: string } };
    const first = await pull('a.py');
    assert.strictEqual(first.category, 'forward', JSON.stringify(first));
    assert.notStrictEqual(first.validation.original_cached, true);
    assert.notStrictEqual(first.validation.timings?.reused, true);
    // the second run repeats no failure's cost: the same failure, answered from the first's, nothing run
    const second = await pull('b.py');
    assert.deepStrictEqual(
      [second.category, second.validation.original_reached, second.validation.original_cached, second.validation.timings?.reused],
      ['forward', first.validation.original_reached, undefined, true],
      JSON.stringify(second),
    );
    assert.strictEqual(second.validation.message, first.validation.message);
    // the file edited: judged again (its original replayed from the kept run)
    const edited = path.join(work, 'b.py');
    await fsp.writeFile(edited, (await fsp.readFile(edited, 'utf8')).replace('x.dim() == 7', 'x.dim() >= 1'));
    const again = JSON.parse((await cli('validate', edited, '--db', db, '--python', PYTHON_WITH_TORCH, '--cache', cache, '--json')).out) as Verdict & {
      timings?: { reused?: boolean };
    };
    assert.deepStrictEqual([again.tier, again.original_cached, again.timings?.reused], ['forward', true, undefined], JSON.stringify(again));
  });

  it('a kept entry that is not a failure of the copy (a damaged or forged one) is never read as a verdict', async () => {
    const dir = await tmpdir('nnrag-kept-failures-');
    const forged = { ok: true, tier: 'equivalent', category: undefined, seconds: 1, equivalence: { status: 'equivalent' } };
    await keepOriginal(dir, 'k1', JSON.stringify(forged));
    assert.strictEqual(await keptFailure(dir, 'k1'), undefined);
    await keepOriginal(dir, 'k2', JSON.stringify({ ok: false, tier: 'instantiated', category: 'timeout', seconds: 1 }));
    assert.strictEqual(await keptFailure(dir, 'k2'), undefined);
    await keepOriginal(dir, 'k3', '{"ok": false');
    assert.strictEqual(await keptFailure(dir, 'k3'), undefined);
    await keepOriginal(dir, 'k4', JSON.stringify({ ok: false, tier: 'instantiated', category: 'forward', seconds: 3, own_seconds: 2.5, original_frames: 'x' }));
    const kept = await keptFailure(dir, 'k4');
    assert.deepStrictEqual(
      [kept?.ok, kept?.category, kept?.own_seconds, kept?.original_frames, kept?.timings?.reused],
      [false, 'forward', 2.5, undefined, true],
    );
    // what is kept: a failure of the copy beside an original that ended of itself, none a limit or a load decides
    const report = (category: string, ok = false) => ({ ok, tier: null, category, seconds: 1 }) as unknown as ValidationReport;
    assert.deepStrictEqual(
      ['instantiate', 'forward', 'native-extension', 'timeout', 'memory', 'differs', 'tampered', 'interpreter'].map((c) => keepsAsFailure(report(c), true)),
      [true, true, true, false, false, false, false, false],
    );
    assert.strictEqual(keepsAsFailure(report('forward'), false), false);
    assert.strictEqual(keepsAsFailure(report('forward', true), true), false);
  });

  it("the interpreter's environment stamp changes when a package is installed in one of its folders", async () => {
    const work = await tmpdir('nnrag-stamp-');
    const site = path.join(work, 'site-packages');
    await fsp.mkdir(site);
    // an interpreter that says where it lives (the probe's answer), as a venv's python would
    const python = path.join(work, 'python');
    await fsp.writeFile(python, `#!/bin/sh\necho '{"executable": "${python}", "version": "3.11.0", "hasTorch": true, "folders": ["${site}"]}'\n`, {
      mode: 0o755,
    });
    const before = await environmentStamp(python);
    assert.strictEqual(await environmentStamp(python), before);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await fsp.mkdir(path.join(site, 'newpkg-1.0.dist-info'));
    assert.notStrictEqual(await environmentStamp(python), before);
  });
});
