/**
 * `nn-rag mcp`: the index as a Model Context Protocol server over stdio, for code assistants (any MCP client). Tools
 * search, describe and pull blocks; resources give a block's closed source and its specification by URI. Writes go
 * only under the roots the client gives (or `--root`); block code runs only when the server was started with
 * `--allow-validate`, and then in the same sandbox as every validation.
 */
import { promises as fsp, realpathSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { errorMessage, NnragError } from '../core/base/errors';
import { assistantFileProblem, fileNameProblem } from '../core/emit/moduleNames';
import { requirementsText } from '../core/pull/pull';
import { keepSearchEngine, searchBlocks, searchInMemory, searchWarming, prepareSnapshot } from '../core/search/search';
import { searchSemantic, type Embeddings } from '../core/search/semantic';
import { embeddingsOption, serversOption } from './searchCommands';
import { searchWithServers, type TeamServer } from '../core/search/served';
import type { SearchHit, SearchQuery } from '../core/search/search';
import type { IndexDb } from '../core/store/database';
import { indexCounts, indexStats } from '../core/store/stats';
import { importableModules } from '../core/validate/interpreter';
import { VERSION } from '../shared/version';
import { cacheDir, dbPath, EXIT, flag, openDb, opt, parse, pythonOf } from './env';
import type { CliEnv, ParsedArgs } from './env';
import { Workspace } from '../core/workspace/workspace';

/** A search hit as an assistant reads it: what to pull, what it takes, what it is, whether it ran, where it is from. */
function hitSummary(h: SearchHit): Record<string, unknown> {
  return {
    target: h.target,
    name: h.name,
    signature: `${h.name}${h.signature || '()'}`,
    summary: h.doc.split('\n')[0] ?? '',
    category: h.category,
    validation: h.validation ? { status: h.validation.status, tier: h.validation.tier } : null,
    provenance: { repository: h.repo, path: h.path, lines: [h.line, h.endLine] },
    ...(h.copies ? { copies: h.copies } : {}),
    // a block of the team's search server: found there, pulled once its repository is indexed here
    ...(h.index !== undefined && h.id === -1 ? { server: h.index } : {}),
  };
}

const json = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 1) }] });
const toolError = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** Whether `file` (absolute, resolved through links where it exists) lies inside one of `roots`. */
function inside(file: string, roots: string[]): boolean {
  // the deepest existing ancestor decides where a not-yet-existing file really goes
  let probe = path.resolve(file);
  const rest: string[] = [];
  for (;;) {
    try {
      probe = path.join(realpathSync(probe), ...rest);
      break;
    } catch {
      rest.unshift(path.basename(probe));
      const up = path.dirname(probe);
      if (up === probe) return false;
      probe = up;
    }
  }
  return roots.some((r) => probe === r || probe.startsWith(r.endsWith(path.sep) ? r : r + path.sep));
}

/** The roots writes may go under: `--root`, and the client's (file: URIs). */
async function writableRoots(server: McpServer, givenRoots: string[]): Promise<string[]> {
  const out = [...givenRoots];
  if (server.server.getClientCapabilities()?.roots) {
    const listed = await server.server.listRoots().catch(() => ({ roots: [] as { uri: string }[] }));
    for (const r of listed.roots) {
      if (!r.uri.startsWith('file://')) continue;
      try {
        out.push(realpathSync(new URL(r.uri).pathname));
      } catch {
        // a root that does not exist here takes nothing
      }
    }
  }
  return out;
}

/** How search_blocks ranks: by the user's own embedding model (`--embeddings`), or merged with the team's search
 * servers (`--server`), not both. */
interface SearchOptions {
  embeddings?: Embeddings;
  servers: TeamServer[];
}

function searchOptions(args: ParsedArgs, env: CliEnv): SearchOptions {
  const embeddings = embeddingsOption(args, env);
  const servers = serversOption(args, env);
  if (servers.length && embeddings) throw new NnragError('usage', '--embeddings ranks one index: give no --server');
  return { embeddings, servers };
}

/** search_blocks's hits, summed up: ranked again by the user's own embedding model where one is named, or merged with
 * the team's search servers' (`--server`). */
async function toolHits(db: IndexDb, q: SearchQuery, { embeddings, servers }: SearchOptions, env: CliEnv): Promise<Record<string, unknown>[]> {
  if (!embeddings && servers.length) {
    const merged = await searchWithServers((x) => searchBlocks(db, x), q, servers);
    for (const w of merged.warnings) env.err(`nn-rag mcp: ${w}\n`);
    return merged.hits.map(hitSummary);
  }
  if (!embeddings) return searchBlocks(db, q).map(hitSummary);
  const ranked = await searchSemantic(db, q, embeddings);
  if (ranked.warning) env.err(`nn-rag mcp: ${ranked.warning}\n`);
  return ranked.hits.map(hitSummary);
}

/** The folders `--root` names, as real paths; a clear error for one that does not exist. */
function rootsGiven(given: string[]): string[] {
  return given.map((r) => {
    try {
      return realpathSync(path.resolve(r));
    } catch {
      throw new NnragError('not-found', `--root ${r} does not exist`);
    }
  });
}

export async function mcpCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    root: { value: true, multiple: true },
    'allow-validate': {},
    python: { value: true },
    embeddings: { value: true },
    'embedding-model': { value: true },
    server: { value: true, multiple: true },
  });
  const allowValidate = flag(args, 'allow-validate');
  const python = pythonOf(args, env);
  const givenRoots = rootsGiven(args.options.get('root') ?? []);
  // the user's own embedding model (as `nn-rag search --embeddings`), or the team's search servers
  const ranking = searchOptions(args, env);
  // the search's snapshot read and checked while the index opens (both are read whole)
  const snapshot = prepareSnapshot(dbPath(args));
  const db: IndexDb = await openDb(args, env, true, 'or-read');
  await keepSearchEngine(db, snapshot);
  const ws = Workspace.over(db, env.assets, { runner: env.assets.runner, cacheDir: cacheDir(args, env) });

  const server = new McpServer({ name: 'nn-rag', version: VERSION }, { capabilities: { logging: {} } });

  const roots = (): Promise<string[]> => writableRoots(server, givenRoots);

  const context: McpContext = { server, db, ws, roots, python, allowValidate };

  server.registerTool(
    'search_blocks',
    {
      title: 'Search neural-network blocks',
      description:
        'Find PyTorch nn.Module building blocks in the indexed repositories. Write the query as a researcher would ("multi head attention", "SE block", "drop path"); abbreviations, synonyms and typos are understood. Each result has the target to pass to describe_block or pull_block, its constructor signature, a one-line summary, its category, whether a pulled copy was validated, and where it comes from.',
      inputSchema: {
        query: z.string().min(1).describe('What the block does or is called'),
        repository: z.string().optional().describe('Only blocks of this indexed repository (see list_repositories)'),
        category: z.string().optional().describe('Only this category, e.g. attention, conv, norm, activation, pooling, embedding, model'),
        validation: z
          .enum(['validated', 'failed', 'none'])
          .optional()
          .describe('Only blocks whose last validation passed, failed, or that were never validated'),
        limit: z.number().int().min(1).max(50).optional().describe('How many results (default 10)'),
      },
    },
    async ({ query, repository, category, validation, limit }) =>
      json(await toolHits(db, { text: query, repo: repository, category, validation, limit: limit ?? 10, kind: 'block', group: true }, ranking, env)),
  );

  server.registerTool(
    'describe_block',
    {
      title: 'Describe a block',
      description:
        "A block's neutral specification, without its code: constructor and forward parameters (annotations, defaults), the layers its constructor builds, the tensor shapes validation observed, what it depends on, its category, duplicates, license and provenance.",
      inputSchema: { target: z.string().min(1).describe('A target from search_blocks, e.g. "torchvision:torchvision.models.resnet.BasicBlock"') },
    },
    async ({ target }) => {
      try {
        return json(await ws.spec(target));
      } catch (err) {
        return toolError(errorMessage(err));
      }
    },
  );

  registerPullTool(context);

  server.registerTool(
    'list_repositories',
    {
      title: 'List indexed repositories',
      description: 'The repositories in the index: name, kind, location, commit, license, files and blocks.',
      inputSchema: {},
    },
    async () =>
      json(
        indexStats(db).repos.map((r) => ({
          name: r.name,
          kind: r.kind,
          location: r.location,
          commit: r.commit,
          license: r.license,
          files: r.files,
          blocks: r.blocks,
        })),
      ),
  );

  server.registerTool(
    'index_status',
    {
      title: 'Index status',
      description: 'How many files, blocks and repositories the index holds, where it is, and whether its search is held in memory.',
      inputSchema: {},
    },
    async () =>
      json({
        ...indexCounts(db),
        database: dbPath(args),
        validation: allowValidate ? `allowed, with ${python}` : 'off (start with --allow-validate)',
        search: searchWarming(db) ? 'in memory, warming up' : searchInMemory(db) ? 'in memory' : 'from the database (held in memory once built)',
      }),
  );

  server.registerTool(
    'get_context',
    {
      title: 'Context for a prompt',
      description:
        'A compact, model-ready pack for the best few blocks for a query: for each, its signature, summary, constructor and forward parameters, validation, and the provenance line to cite. Pull one with pull_block, or read its closed source at nnrag://block/{target}.',
      inputSchema: {
        query: z.string().min(1).describe('What the code being written needs'),
        limit: z.number().int().min(1).max(5).optional().describe('How many blocks (default 3)'),
      },
    },
    async ({ query, limit }) => json(await contextPack(ws, query, limit ?? 3)),
  );

  registerResources(context);

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.on('end', () => resolve());
    env.signal?.addEventListener('abort', () => resolve());
  });
  await server.connect(transport);
  env.err(`nn-rag mcp: serving ${dbPath(args)} over stdio${allowValidate ? `, validation with ${python}` : ''}\n`);
  await closed;
  await server.close().catch(() => undefined);
  db.close();
  return EXIT.ok;
}

/** What the MCP server's tools and resources share. */
interface McpContext {
  server: McpServer;
  db: IndexDb;
  ws: Workspace;
  /** The roots writes may go under. */
  roots: () => Promise<string[]>;
  python: string;
  allowValidate: boolean;
}

/** pull_block: a pull under one of the roots, never replacing a file a person must decide about. */
function registerPullTool({ server, db, ws, roots, python, allowValidate }: McpContext): void {
  server.registerTool(
    'pull_block',
    {
      title: 'Pull a block into one file',
      description:
        'Write a block and everything it needs into ONE Python file under the workspace (a root the client gave), with its provenance in the header. With validate, the file is run in a sandbox with the configured interpreter and compared with the original (only when the server allows validation). Returns the path, the validation tier reached, the failure category and message if any, and the requirements to install.',
      inputSchema: {
        target: z.string().min(1).describe('A target from search_blocks'),
        destination: z.string().min(1).describe('The .py file to write: a path inside one of the roots (relative paths are taken from the first root)'),
        validate: z.boolean().optional().describe('Run and check the pulled file (default: true when the server allows validation)'),
        force: z
          .boolean()
          .optional()
          .describe(
            'Refused when true: a tool never replaces a file that was not pulled or was edited since; only a person can (in the editor, with the diff)',
          ),
      },
    },
    async ({ target, destination, validate, force }, extra) => {
      const allowed = await roots();
      if (!allowed.length) return toolError('nn-rag has no root to write under: give the server roots (MCP roots) or start it with --root DIR');
      const file = path.isAbsolute(destination) ? path.resolve(destination) : path.resolve(allowed[0], destination);
      if (!file.endsWith('.py')) return toolError(`destination must be a .py file, not ${destination}`);
      if (!inside(file, allowed)) return toolError(`refused: ${file} is outside the roots nn-rag may write under (${allowed.join(', ')})`);
      if (force === true)
        return toolError(
          'refused: force is not for tools; a file that was not pulled, or was edited since its pull, is replaced only by a person (in the editor, with the diff)',
        );
      const installed = python ? await importableModules(python, [path.basename(file, '.py')]) : new Set<string>();
      const badName = fileNameProblem(path.basename(file), installed);
      if (badName) return toolError(`refused: ${badName}`);
      const root = allowed.find((r) => file === r || file.startsWith(r.endsWith(path.sep) ? r : r + path.sep)) ?? path.dirname(file);
      const conventional = assistantFileProblem(file, root);
      if (conventional) return toolError(`refused: ${conventional}`);
      const wantValidate = validate ?? allowValidate;
      if (wantValidate && !allowValidate)
        return toolError("validation runs the block's code and is off: start nn-rag mcp with --allow-validate, or pull with validate: false");
      const progress = extra._meta?.progressToken;
      const say = async (n: number, message: string): Promise<void> => {
        if (progress !== undefined)
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: progress, progress: n, total: 2, message } });
      };
      try {
        const ref = ws.target(target);
        await say(0, `pulling ${ref.name}`);
        const report = await ws.pull(ref, { validate: wantValidate, python, force: false }, { out: file, root, signal: extra.signal });
        await say(2, `${report.status}${report.tier ? ` (${report.tier})` : ''}`);
        await db.save();
        return json({
          path: report.out,
          status: report.status,
          tier: report.tier,
          ...(report.category ? { category: report.category, message: report.message } : {}),
          definitions: report.definitions,
          lines: report.sizes?.total,
          imports: report.imports,
          requirements: requirementsText(report.requirements, report.imports),
        });
      } catch (err) {
        if (extra.signal.aborted) return toolError('cancelled');
        return toolError(errorMessage(err));
      }
    },
  );
}

/** The block's closed source and its specification, as resources. */
function registerResources({ server, ws }: McpContext): void {
  server.registerResource(
    'block-source',
    new ResourceTemplate('nnrag://block/{target}', { list: undefined }),
    { title: "A block's closed source", description: 'The one file a pull would write (nothing is written)', mimeType: 'text/x-python' },
    async (uri, { target }) => {
      const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-mcp-'));
      try {
        const out = path.join(scratch, 'block.py');
        await ws.pull(decodeURIComponent(String(target)), { validate: false }, { out, manifest: false });
        return { contents: [{ uri: uri.href, mimeType: 'text/x-python', text: await fsp.readFile(out, 'utf8') }] };
      } finally {
        await fsp.rm(scratch, { recursive: true, force: true });
      }
    },
  );

  server.registerResource(
    'block-spec',
    new ResourceTemplate('nnrag://spec/{target}', { list: undefined }),
    { title: "A block's specification", description: 'The neutral JSON specification (no code)', mimeType: 'application/json' },
    async (uri, { target }) => ({
      contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(await ws.spec(decodeURIComponent(String(target))), null, 1) }],
    }),
  );
}

/** The best `limit` blocks for `query`, each with what a model needs to use and cite it. */
export async function contextPack(ws: Workspace, query: string, limit: number): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const h of searchBlocks(ws.db, { text: query, limit, kind: 'block', group: true })) {
    const spec = await ws.spec(h.target).catch(() => undefined);
    out.push({
      ...hitSummary(h),
      constructor: spec?.constructor_params,
      forward: spec?.forward,
      tensors: spec?.tensors ? { inputs: spec.tensors.inputs, outputs: spec.tensors.outputs } : undefined,
      cite: `${h.name} from ${h.repo} (${h.path}:${h.line}-${h.endLine})${spec?.provenance?.license ? `, ${spec.provenance.license}` : ''}`,
      source: `nnrag://block/${encodeURIComponent(h.target)}`,
    });
  }
  return out;
}

/** `nn-rag context QUERY`: the same pack as the get_context tool, as JSON on stdout. */
export async function contextCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { limit: { value: true } });
  if (!args.positionals.length) throw new NnragError('usage', 'context needs a QUERY');
  const db = await openDb(args, env);
  try {
    const ws = Workspace.over(db, env.assets);
    const limit = Math.min(5, Math.max(1, Number(opt(args, 'limit') ?? 3) || 3));
    env.out(`${JSON.stringify(await contextPack(ws, args.positionals.join(' '), limit), null, 1)}\n`);
  } finally {
    db.close();
  }
  return EXIT.ok;
}
