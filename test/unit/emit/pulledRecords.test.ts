/**
 * One truth per pulled file: the manifest and required_repos.json are written from the header on every pull, update
 * and validation, keep what a write without a validation cannot know, and leave with the file.
 */
import * as assert from 'assert';
import { existsSync, promises as fsp } from 'fs';
import * as path from 'path';
import { manifestPath, readManifest, removeManifests, writeManifests } from '../../../src/core/emit/manifest';
import type { RequiredRepos } from '../../../src/core/emit/manifest';
import type { Provenance } from '../../../src/core/emit/pulledFile';
import { tmpdir } from '../helpers';

function prov(hash: string, blob: string, imports: string[], tier = 'equivalent'): Provenance {
  return {
    version: 1,
    target: 'tiny:tiny.blocks.Block',
    block: 'Block',
    repo: 'tiny',
    url: null,
    commit: null,
    license: 'MIT',
    hash,
    pulledAt: '2026-11-24T00:00:00.000Z',
    definitions: [{ names: ['Block'], module: 'tiny.blocks', repo: 'tiny', path: 'tiny/blocks.py', lines: [1, 9], blob }],
    imports,
    renamed: {},
    validation: { status: 'validated', tier },
  } as unknown as Provenance;
}

const TORCH = { module: 'torch', distribution: 'torch', version: '1.13.0', location: '/usr/lib/python3/dist-packages', installer: null, url: null };

describe('the records beside a pulled file', () => {
  let dir: string;
  let file: string;
  const required = async (): Promise<RequiredRepos> => JSON.parse(await fsp.readFile(path.join(dir, '.nnrag', 'required_repos.json'), 'utf8')) as RequiredRepos;

  beforeEach(async () => {
    dir = await tmpdir('nnrag-records-');
    file = path.join(dir, 'block.py');
    await fsp.writeFile(file, '# pulled\n');
  });

  it('a write after an update follows the header, keeps the base and what the validation found', async () => {
    await writeManifests(file, prov('sha256:a', 'blob1', ['torch']), [TORCH], 'BODY 1');
    assert.deepStrictEqual(Object.keys((await required()).distributions), ['torch']);
    // an update without a validation: the new header's blob and hash; torch is not turned into "missing"
    await writeManifests(file, prov('sha256:b', 'blob2', ['torch', 'numpy'], 'forward'), undefined, undefined);
    const m = await readManifest(file);
    assert.strictEqual(m?.content_hash, 'sha256:b');
    assert.strictEqual(m?.definitions[0].blob, 'blob2');
    assert.strictEqual(m?.validation?.tier, 'forward');
    assert.strictEqual(m?.base_body, 'BODY 1', 'the base is kept when none is given');
    const r = await required();
    assert.deepStrictEqual(r.distributions.torch.needed_by, ['block.py']);
    assert.deepStrictEqual(Object.keys(r.missing), ['numpy'], 'only what was never found is missing');
    // a validation that found numpy too
    await writeManifests(file, prov('sha256:b', 'blob2', ['torch', 'numpy']), [TORCH, { module: 'numpy', distribution: 'numpy', version: '1.24.2' }], 'BODY 2');
    assert.deepStrictEqual(Object.keys((await required()).distributions).sort(), ['numpy', 'torch']);
    assert.deepStrictEqual((await required()).missing, {});
    assert.strictEqual((await readManifest(file))?.base_body, 'BODY 2');
  });

  it('leave with the file: its manifest goes, its entries go, and required_repos.json goes when nothing is left', async () => {
    const other = path.join(dir, 'other.py');
    await writeManifests(file, prov('sha256:a', 'blob1', ['torch', 'numpy']), [TORCH], 'BODY');
    await writeManifests(other, prov('sha256:c', 'blob3', ['torch']), [TORCH], 'BODY');
    await removeManifests(file);
    assert.ok(!existsSync(manifestPath(file)));
    assert.ok(existsSync(manifestPath(other)));
    const r = await required();
    assert.deepStrictEqual(r.distributions.torch.needed_by, ['other.py']);
    assert.deepStrictEqual(r.missing, {}, 'numpy was needed by the deleted file only');
    await removeManifests(other);
    assert.ok(!existsSync(path.join(dir, '.nnrag')), 'the records folder goes with the last record');
    await removeManifests(other); // again: nothing there, no error
  });

  it('one file is one file: the records live in .nnrag/, and those an earlier version wrote beside the file move there', async () => {
    assert.strictEqual(manifestPath(file), path.join(dir, '.nnrag', 'block.manifest.json'));
    // as an earlier version left them
    await writeManifests(file, prov('sha256:a', 'blob1', ['torch']), [TORCH], 'BODY OLD');
    await fsp.rename(manifestPath(file), path.join(dir, 'block.manifest.json'));
    await fsp.rename(path.join(dir, '.nnrag', 'required_repos.json'), path.join(dir, 'required_repos.json'));
    assert.strictEqual((await readManifest(file))?.base_body, 'BODY OLD', 'read where an earlier version wrote it');
    await writeManifests(file, prov('sha256:b', 'blob2', ['torch']), undefined);
    assert.deepStrictEqual((await fsp.readdir(dir)).sort(), ['.nnrag', 'block.py']);
    assert.strictEqual((await readManifest(file))?.base_body, 'BODY OLD', 'the base moved with it');
    assert.deepStrictEqual((await required()).distributions.torch.needed_by, ['block.py'], 'what the last validation found moved too');
  });

  it('a link in place of the records folder is refused, and nothing is written through it', async () => {
    const elsewhere = await tmpdir('nnrag-elsewhere-');
    await fsp.symlink(elsewhere, path.join(dir, '.nnrag'));
    await assert.rejects(writeManifests(file, prov('sha256:a', 'blob1', ['torch']), [TORCH], 'BODY'), /refusing to write through the link/);
    assert.deepStrictEqual(await fsp.readdir(elsewhere), []);
  });
});
