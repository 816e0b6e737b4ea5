/** `nn-rag search` and `nn-rag show`: finding blocks and what one needs. */
import { NnragError } from '../core/base/errors';
import { searchBlocks, searchMany, searchSuggestion } from '../core/search/search';
import type { BlockKind, SearchHit, SearchQuery } from '../core/search/search';
import { searchWithServers, serverAt, type TeamServer } from '../core/search/served';
import { embeddingsAt, searchSemantic, type Embeddings } from '../core/search/semantic';
import { EXIT, flag, intOpt, openDb, opt, parse } from './env';
import type { CliEnv, ParsedArgs } from './env';
import { showDepsCommand } from './pullCommands';
import { callsText } from './observeCommands';
import { Workspace } from '../core/workspace/workspace';

/** The embedding service `--embeddings` (else NNRAG_EMBEDDINGS) names, for `--embedding-model` (else
 * NNRAG_EMBEDDING_MODEL); undefined when none is named. */
export function embeddingsOption(args: ParsedArgs, env: CliEnv): Embeddings | undefined {
  const url = opt(args, 'embeddings') ?? (env.env.NNRAG_EMBEDDINGS || undefined);
  return url ? embeddingsAt(url, opt(args, 'embedding-model') ?? (env.env.NNRAG_EMBEDDING_MODEL || undefined)) : undefined;
}

/** The team's search servers `--server` (else NNRAG_SERVERS, addresses separated by spaces) names. */
export function serversOption(args: ParsedArgs, env: CliEnv): TeamServer[] {
  const given = args.options.get('server') ?? (env.env.NNRAG_SERVERS ?? '').split(/\s+/).filter(Boolean);
  return given.map(serverAt);
}

export async function searchCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    db: { value: true, multiple: true },
    repo: { value: true },
    category: { value: true },
    kind: { value: true },
    limit: { value: true },
    validation: { value: true },
    'all-copies': {},
    embeddings: { value: true },
    'embedding-model': { value: true },
    server: { value: true, multiple: true },
  });
  const kind = opt(args, 'kind') ?? 'block';
  const servers = serversOption(args, env);
  // a semantic ranker only where the user serves an embedding model on this machine
  const embeddings = embeddingsOption(args, env);
  if (embeddings && ((args.options.get('db') ?? []).length > 1 || servers.length))
    throw new NnragError('usage', '--embeddings ranks one index: give one --db and no --server');
  if (!['block', 'abstract', 'class'].includes(kind)) throw new NnragError('usage', `--kind is block, abstract or class, not '${kind}'`);
  const query = {
    text: args.positionals.join(' '),
    repo: opt(args, 'repo'),
    category: opt(args, 'category'),
    kind: kind as BlockKind,
    validation: opt(args, 'validation'),
    limit: intOpt(args, 'limit', 20),
    group: !flag(args, 'all-copies'),
  };
  // several --db: one search over all of them, merged by score, each hit naming its index
  const files = args.options.get('db') ?? [];
  const others: { label: string; db: Awaited<ReturnType<typeof openDb>> }[] = [];
  try {
    for (const f of files.slice(1)) others.push({ label: f, db: await openDb({ ...args, options: new Map([...args.options, ['db', [f]]]) }, env) });
  } catch (err) {
    for (const o of others) o.db.close();
    throw err;
  }
  const db = await openDb(args, env);
  try {
    const ranked = embeddings ? await searchSemantic(db, query, embeddings) : undefined;
    if (ranked?.warning) env.err(`nn-rag: ${ranked.warning}\n`);
    const here = (q: SearchQuery): SearchHit[] => (others.length ? searchMany([{ label: files[0], db }, ...others], q) : searchBlocks(db, q));
    let hits: SearchHit[];
    if (ranked) hits = ranked.hits;
    else if (servers.length) {
      // the team's servers beside the local index; one that fails leaves the others
      const merged = await searchWithServers(here, query, servers);
      for (const w of merged.warnings) env.err(`nn-rag: ${w}\n`);
      hits = merged.hits;
    } else hits = here(query);
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(hits, null, 1)}\n`);
    } else if (hits.length === 0) {
      const meant = searchSuggestion(db, args.positionals.join(' '));
      env.out(`no blocks found${meant ? `; did you mean "${meant}"?` : ''}\n`);
    } else {
      for (const h of hits) {
        const copies = h.copies ? `  (${h.name}: ${h.copies.count} copies in ${h.copies.repos} repositories)` : '';
        env.out(
          `${h.target}  [${h.category}${h.abstract ? ', abstract' : ''}]  ${h.path}:${h.line}${copies}${h.index ? `  (${h.index})` : ''}\n    ${h.name}${h.signature || '()'}\n`,
        );
      }
    }
  } finally {
    db.close();
    for (const o of others) o.db.close();
  }
  return EXIT.ok;
}

export async function showCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    deps: {},
    calls: {},
    python: { value: true },
    inline: {},
    'no-inline': {},
    'whole-classes': {},
    'full-docstrings': {},
    limit: { value: true },
  });
  if (args.positionals.length !== 1) throw new NnragError('usage', 'show needs one TARGET');
  if (flag(args, 'deps')) return showDepsCommand(args, env);
  const db = await openDb(args, env);
  try {
    const ws = Workspace.over(db, env.assets);
    const ref = ws.target(args.positionals[0]);
    if (flag(args, 'calls')) {
      const calls = ws.observedCalls(ref);
      env.out(flag(args, 'json') ? `${JSON.stringify(calls, null, 1)}\n` : callsText(`${ref.module}.${ref.name}`, calls));
      return EXIT.ok;
    }
    const details = ws.describe(ref);
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(details, null, 1)}\n`);
    } else {
      env.out(`${details.target}  (${details.isBlock ? 'block' : 'class'}, ${details.category}${details.abstract ? ', abstract' : ''})\n`);
      env.out(`  ${details.path}:${details.line}-${details.endLine}\n`);
      env.out(`  bases: ${details.bases.map((b) => `${b.written} -> ${b.resolved}`).join(', ') || '(none)'}\n`);
      if (details.signature) env.out(`  __init__${details.signature}\n`);
      if (details.doc) env.out(`  ${details.doc.split('\n')[0]}\n`);
      env.out('  needs:\n');
      for (const d of details.dependencies) env.out(`    ${d.name} (${d.timing}) -> ${d.kind}${d.target ? ` ${d.target}` : ''}\n`);
    }
  } finally {
    db.close();
  }
  return EXIT.ok;
}
