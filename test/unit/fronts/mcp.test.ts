import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

describe('nn-rag mcp: the index for code assistants (the SDK client over stdio, a real child process)', function () {
  this.timeout(120_000);
  let client: Client;
  let work: string;
  let root: string;

  before(async () => {
    work = await tmpdir('nnrag-mcp-');
    root = path.join(work, 'project');
    await fsp.mkdir(root);
    const db = path.join(work, 'index.db');
    assert.strictEqual((await cli('index', path.join(ROOT, 'examples', 'tinyblocks'), '--db', db)).code, 0);
    client = new Client({ name: 'nnrag-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
          path.join(ROOT, 'src/cli/main.ts'),
          'mcp',
          '--db',
          db,
          '--root',
          root,
          '--allow-validate',
          '--python',
          PYTHON_WITH_TORCH,
        ],
        stderr: 'ignore',
      }),
    );
  });

  after(async () => {
    await client?.close();
  });

  const call = async (name: string, args: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<ToolResult> =>
    (await client.callTool({ name, arguments: args }, undefined, options)) as ToolResult;

  it('lists its tools with input schemas, searches, describes and reports the index', async () => {
    const { tools } = await client.listTools();
    assert.deepStrictEqual(tools.map((t) => t.name).sort(), [
      'describe_block',
      'get_context',
      'index_status',
      'list_repositories',
      'pull_block',
      'search_blocks',
    ]);
    const search = tools.find((t) => t.name === 'search_blocks')!;
    assert.ok((search.inputSchema.properties as Record<string, unknown>).query, 'the query is described to the model');
    assert.ok(search.description && search.description.length > 80);

    const hits = JSON.parse((await call('search_blocks', { query: 'squeeze excitation', limit: 3 })).content[0].text);
    assert.strictEqual(hits[0].name, 'SqueezeExcite');
    assert.match(hits[0].target, /^tinyblocks:tinyblocks\.layers\.se\.SqueezeExcite$/);
    assert.ok(hits[0].signature.startsWith('SqueezeExcite('));
    assert.strictEqual(hits[0].provenance.repository, 'tinyblocks');

    const spec = JSON.parse((await call('describe_block', { target: hits[0].target })).content[0].text);
    assert.ok(
      spec.constructor_params.some((p: { name: string }) => p.name === 'channels'),
      JSON.stringify(spec.constructor_params),
    );
    assert.strictEqual(spec.provenance.license, 'MIT');

    const status = JSON.parse((await call('index_status', {})).content[0].text);
    assert.ok(status.blocks > 0 && status.repos === 1);
    const repos = JSON.parse((await call('list_repositories', {})).content[0].text);
    assert.deepStrictEqual(
      repos.map((r: { name: string }) => r.name),
      ['tinyblocks'],
    );

    const context = JSON.parse((await call('get_context', { query: 'residual block', limit: 2 })).content[0].text);
    assert.strictEqual(context[0].name, 'ResidualBlock');
    assert.match(context[0].cite, /ResidualBlock from tinyblocks \(tinyblocks\/blocks\.py:\d+-\d+\), MIT/);
  });

  it('pulls into a root (closed, validated), refuses a path outside the roots, and answers a bad target with a tool error', async () => {
    const r = await call('pull_block', { target: 'tinyblocks.blocks.ResidualBlock', destination: 'blocks/residual.py' });
    assert.ok(!r.isError, r.content[0].text);
    const pulled = JSON.parse(r.content[0].text);
    assert.strictEqual(pulled.path, path.join(await fsp.realpath(root), 'blocks', 'residual.py'));
    assert.deepStrictEqual([pulled.status, pulled.tier], ['validated', 'equivalent']);
    assert.match(await fsp.readFile(pulled.path, 'utf8'), /^class ResidualBlock\(nn\.Module\):/m);
    assert.match(pulled.requirements, /^torch~=/m);

    const outside = await call('pull_block', { target: 'tinyblocks.blocks.ResidualBlock', destination: path.join(work, 'elsewhere.py'), validate: false });
    assert.strictEqual(outside.isError, true);
    assert.match(outside.content[0].text, /outside the roots/);
    await assert.rejects(fsp.access(path.join(work, 'elsewhere.py')));
    const climbing = await call('pull_block', { target: 'tinyblocks.blocks.ResidualBlock', destination: '../escape.py', validate: false });
    assert.strictEqual(climbing.isError, true);

    const bad = await call('describe_block', { target: 'tinyblocks.nothing.Here' });
    assert.strictEqual(bad.isError, true);
    assert.match(bad.content[0].text, /Here/);

    // the closed source as a resource
    const res = await client.readResource({ uri: `nnrag://block/${encodeURIComponent('tinyblocks:tinyblocks.layers.se.SqueezeExcite')}` });
    assert.match((res.contents[0] as { text: string }).text, /^class SqueezeExcite\(nn\.Module\):/m);
  });

  it('stops a cancelled call and goes on answering', async () => {
    const controller = new AbortController();
    const pending = call('pull_block', { target: 'tinyblocks.blocks.ResidualBlock', destination: 'blocks/cancelled.py' }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, /abort/i);
    const after = JSON.parse((await call('index_status', {})).content[0].text);
    assert.ok(after.blocks > 0);
  });
});
