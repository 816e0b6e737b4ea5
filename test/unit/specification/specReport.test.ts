import * as assert from 'assert';
import { promises as fsp, readFileSync } from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';
import { validateSchema } from '../jsonSchema';

/** The schema kept in the repository. */
const schema = JSON.parse(readFileSync(path.join(ROOT, 'src', 'core', 'specification', 'spec.schema.json'), 'utf8')) as Record<string, unknown>;

describe('neutral specifications and the extraction report', function () {
  this.timeout(180_000);
  let dir: string;
  let db: string;

  before(async () => {
    dir = await tmpdir('nnrag-spec-');
    db = path.join(dir, 'index.db');
    const r = await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db);
    assert.strictEqual(r.code, 0, r.err);
  });

  it('describes a block without its code, and the description validates against the schema in the repository', async () => {
    const r = await cli('spec', 'tinyblocks.blocks.ResidualBlock', '--db', db);
    assert.strictEqual(r.code, 0, r.err);
    const spec = JSON.parse(r.out);
    assert.deepStrictEqual(validateSchema(schema, spec), []);
    assert.deepStrictEqual(
      spec.constructor_params.map((p: { name: string; default: string | null; required: boolean }) => [p.name, p.default, p.required]),
      [
        ['in_channels', null, true],
        ['out_channels', null, true],
        ['stride', '1', false],
        ['use_se', 'False', false],
        ['drop_path', '0.0', false],
      ],
    );
    assert.deepStrictEqual(
      spec.layers.map((l: { attribute: string; type: string }) => `${l.attribute}=${l.type}`),
      [
        'conv1=ConvNormAct',
        'conv2=ConvNormAct',
        'se=SqueezeExcite | nn.Identity',
        'shortcut=nn.Identity | ConvNormAct',
        'drop_path=DropPath | nn.Identity',
        'act=nn.ReLU',
      ],
    );
    const names = spec.dependencies.nodes.map((n: { names: string[] }) => n.names[0]);
    for (const dep of ['ConvNormAct', 'SqueezeExcite', 'DropPath', 'ResidualBlock']) assert.ok(names.includes(dep), `${dep} is in the graph`);
    const block = names.indexOf('ResidualBlock');
    const conv = names.indexOf('ConvNormAct');
    assert.ok(spec.dependencies.edges.some((e: { from: number; to: number }) => e.from === block && e.to === conv));
    assert.strictEqual(spec.provenance.license, 'MIT');
    assert.match(spec.provenance.swhid, /^swh:1:cnt:[0-9a-f]{40}$/);
    // no code: no line of the class body is in the specification
    const source = await fsp.readFile(path.join(ROOT, 'examples', 'tinyblocks', 'tinyblocks', 'blocks.py'), 'utf8');
    assert.ok(!r.out.includes('self.act(self.shortcut(x) + self.drop_path(y))'));
    assert.ok(source.includes('self.act(self.shortcut(x) + self.drop_path(y))'));
    assert.strictEqual(spec.tensors, null, 'not validated yet');
  });

  it('adds the tensors the validator saw once the block was pulled and validated; the batch form writes one file per block', async () => {
    const pulled = await cli(
      'pull',
      'tinyblocks.blocks.ResidualBlock',
      '--db',
      db,
      '--out',
      path.join(dir, 'p', 'residual_block.py'),
      '--python',
      PYTHON_WITH_TORCH,
    );
    assert.strictEqual(pulled.code, 0, pulled.out + pulled.err);
    const spec = JSON.parse((await cli('spec', 'tinyblocks.blocks.ResidualBlock', '--db', db)).out);
    assert.deepStrictEqual(validateSchema(schema, spec), []);
    assert.strictEqual(spec.tensors.tier, 'equivalent', 'a folder repository: the copy was compared with its original');
    assert.ok(Array.isArray(spec.tensors.inputs) && spec.tensors.inputs.length > 0);
    assert.ok(spec.tensors.outputs);

    const out = path.join(dir, 'specs');
    const batch = await cli('spec', '--all', '--db', db, '--out-dir', out, '--json');
    assert.strictEqual(batch.code, 0, batch.err);
    const index = JSON.parse(await fsp.readFile(path.join(out, 'index.json'), 'utf8'));
    assert.strictEqual(index.specs.length, 7);
    for (const s of index.specs) {
      assert.ok(s.file, s.error);
      assert.deepStrictEqual(validateSchema(schema, JSON.parse(await fsp.readFile(path.join(out, s.file), 'utf8'))), [], s.file);
    }
  });

  it('the schema checker rejects what the schema forbids', () => {
    const bad = { schema: 'nn-rag/spec@1', target: 'no colon', name: '1bad' };
    const errors = validateSchema(schema, bad);
    assert.ok(
      errors.some((e) => /must have required property 'layers'/.test(e)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((e) => /^\/target must match pattern/.test(e)),
      errors.join('\n'),
    );
  });

  it("reports a batch as the paper's tables, and as a page with charts", async () => {
    const out = path.join(dir, 'batch');
    const batch = await cli('pull', '--all', '--db', db, '--out-dir', out, '--python', PYTHON_WITH_TORCH, '--json');
    assert.ok(batch.code === 0 || batch.code === 1, batch.err);
    const page = path.join(dir, 'report.html');
    const r = await cli('report', '--from', path.join(out, 'report.json'), '--db', db, '--html', page, '--json');
    assert.strictEqual(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    const summary = JSON.parse(await fsp.readFile(path.join(out, 'report.json'), 'utf8')).summary;
    assert.strictEqual(report.targeted, 7);
    assert.strictEqual(report.validated, summary.validated);
    assert.strictEqual(report.tiers.forward, summary.tiers.forward);
    assert.deepStrictEqual(report.uniqueness.blocks, 7);
    assert.ok(report.seconds_per_block > 0);
    const html = await fsp.readFile(page, 'utf8');
    assert.match(html, /<svg role="img" aria-label="Blocks reaching each stage"/);
    assert.match(html, /Table 3: uniqueness/);
    assert.ok(!/<script/i.test(html), 'a static page');
    const text = await cli('report', '--from', path.join(out, 'report.json'));
    assert.match(text.out, /Table 1: extraction and validation\n {2}blocks targeted {6}7/);
    const missing = await cli('report', '--from', path.join(dir, 'nope.json'));
    assert.strictEqual(missing.code, 3);
  });

  it('says which pulled files are out of date with their upstream (status), and exits 1 when one is', async () => {
    const work = await tmpdir('nnrag-status-');
    const repo = path.join(work, 'tinyblocks');
    await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), repo, { recursive: true });
    const sdb = path.join(work, 'index.db');
    assert.strictEqual((await cli('index', repo, '--db', sdb)).code, 0);
    const pulled = path.join(work, 'blocks');
    assert.strictEqual(
      (await cli('pull', 'tinyblocks.blocks.ResidualBlock', '--db', sdb, '--out', path.join(pulled, 'residual_block.py'), '--no-validate')).code,
      0,
    );
    const fresh = await cli('status', pulled, '--db', sdb);
    assert.strictEqual(fresh.code, 0, fresh.out + fresh.err);
    assert.match(fresh.out, /residual_block\.py {2}tinyblocks:tinyblocks\.blocks\.ResidualBlock {2}up to date/);
    // a definition the block uses changes upstream (a comment added to the file alone changes no definition)
    const se = path.join(repo, 'tinyblocks', 'layers', 'se.py');
    await fsp.writeFile(se, (await fsp.readFile(se, 'utf8')).replace('rd_ratio=0.25', 'rd_ratio=0.125'));
    assert.strictEqual((await cli('index', repo, '--db', sdb)).code, 0);
    const stale = await cli('status', pulled, '--db', sdb, '--json');
    assert.strictEqual(stale.code, 1);
    const rows = JSON.parse(stale.out);
    assert.strictEqual(rows[0].state, 'changed');
    assert.deepStrictEqual(
      rows[0].changed.map((c: { path: string }) => c.path),
      ['tinyblocks/layers/se.py'],
    );
  });
});
