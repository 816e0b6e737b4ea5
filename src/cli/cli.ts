/** The `nn-rag` command line: the core, in-process, for terminals, CI and batch extraction. */
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { findTarget } from '../core/blocks/target';
import { CancelledError, errorMessage, NnragError } from '../core/errors';
import { IndexDb } from '../core/index/database';
import { finishRun, indexSource } from '../core/index/indexer';
import type { IndexRunStats } from '../core/index/indexer';
import { indexStats } from '../core/index/stats';
import type { WasmPaths } from '../core/parse/parser';
import { PythonParser } from '../core/parse/parser';
import { lazyPool } from '../core/parse/pool';
import { describeClass } from '../core/resolve/describe';
import { searchBlocks, searchSuggestion } from '../core/search/search';
import type { BlockKind } from '../core/search/search';
import { openSource, sourceFromArgument } from '../core/sources/open';
import type { SourceConfig } from '../core/sources/types';
import { flag, intOpt, opt, parseArgs } from './args';
import type { OptionSpec, ParsedArgs } from './args';
import { pullCommand, showDepsCommand, validateCommand } from './pullCommands';
import { reportCommand, specCommand, statusCommand, updateCommand } from './specReport';

export interface CliAssets extends WasmPaths {
  sqlWasm: string;
  /** The parse worker script (dist/parseWorker.js); without it, parsing stays on the main thread. */
  parseWorker?: string;
  /** python-runner/validate.py */
  runner: string;
}

export interface CliEnv {
  assets: CliAssets;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is a terminal (progress lines are drawn only there). */
  tty: boolean;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export const EXIT = { ok: 0, failed: 1, usage: 2, input: 3, cancelled: 130 } as const;

export const HELP = `nn-rag: find PyTorch nn.Module blocks across repositories and pull a validated copy

usage:
  nn-rag index SOURCE... [--db F] [--name N] [--ref R] [--include G]... [--exclude G]... [--symbols G]...
                         [--priority P] [--python-env PY --packages a,b] [--cache DIR]
                         [--dup-lexical J] [--dup-structural J] [--inline | --no-inline] [--json]
                         --inline / --no-inline: pulls from other repositories always inline / import this one
  nn-rag search QUERY [--db F] [--repo R] [--category C] [--kind block|abstract|class] [--limit N]
                      [--all-copies] [--json]
  nn-rag show TARGET [--db F] [--json]
  nn-rag show --deps TARGET [--db F] [--python PY] [--inline | --no-inline] [--whole-classes] [--limit N] [--json]
                     the file a pull would write: the block's lines, the lines pulled in, and for the N largest
                     definitions pulled in (default 10) the chain of references that needs each
  nn-rag pull TARGET [--db F] --out FILE [--force] [--python PY] [--no-validate] [--timeout S] [--json]
                     [--inline | --no-inline] [--whole-classes]
                     --whole-classes copies every class the block needs whole (else they keep the methods reached)
                     --force replaces a file that was not pulled, or was edited since (see update)
                     code of other indexed repositories is inlined when --python cannot import them,
                     else imported (a block of an installed package imports the rest of that package);
                     --inline inlines all of it, --no-inline imports all of it
  nn-rag pull --all | --from names.json [--db F] --out-dir DIR [--limit N] [--start-from N] [--python PY]
              [--jobs N] [--no-pool] [--json]       validation in N warm interpreters (default: one per core)
  nn-rag validate FILE [--python PY] [--class NAME] [--timeout S] [--json]
  nn-rag stats [--db F] [--json]
  nn-rag spec TARGET [--db F]                       a neutral JSON specification of a block (no code)
  nn-rag spec --all [--repo R] [--limit N] --out-dir DIR [--db F] [--json]
  nn-rag status [PATH...] [--db F] [--json]        which pulled files' upstream code changed (exit 1 if any)
  nn-rag update FILE [--db F] [--json]               pull a pulled file again, keeping your edits (3-way merge)
  nn-rag report --from DIR/report.json [--db F] [--html FILE] [--json]
                                                    the batch extraction report as tables, or a page

SOURCE is a local folder (its basename names the repository) or an http(s) git URL.
TARGET is module.path.ClassName, or repo:module.path.ClassName where two repositories share module paths.
Duplicates: copies of a block are grouped at three levels (exact text, lexical and structural near-duplicates
with Jaccard >= 0.90 unless --dup-lexical/--dup-structural say otherwise); search lists a group once, as its
original (by priority, then age), unless --all-copies. \`stats --json\` counts unique blocks per level.
The database defaults to .nnrag/index.db in the current folder; git clones are cached in --cache
(default: $XDG_CACHE_HOME/nn-rag or ~/.cache/nn-rag).

exit codes:
  0    success
  1    the work ran but did not succeed (a pull that did not validate, a failed clone)
  2    usage error (unknown command or option, bad target)
  3    bad input (a missing folder, a bad URL, an unreadable database, a missing interpreter)
  130  cancelled (Ctrl-C)
`;

const COMMON: Record<string, OptionSpec> = { db: { value: true }, json: {}, help: {} };

/** Text for a terminal: control characters (from docstrings, names or paths of indexed code) shown as \u escapes,
 * which JSON reads back as the same characters; newlines and tabs kept. */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const CLEAR_LINE = '\r\x1b[K';

export async function runCli(argv: string[], rawEnv: CliEnv): Promise<number> {
  // our own progress redraw is the only control sequence that reaches the terminal
  const env: CliEnv = {
    ...rawEnv,
    out: (t) => rawEnv.out(terminalSafe(t)),
    err: (t) => rawEnv.err(t.startsWith(CLEAR_LINE) ? CLEAR_LINE + terminalSafe(t.slice(CLEAR_LINE.length)) : terminalSafe(t)),
  };
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        env.out(HELP);
        return command === undefined ? EXIT.usage : EXIT.ok;
      case '--version':
        env.out('0.1.0\n');
        return EXIT.ok;
      case 'index':
        return await indexCommand(rest, env);
      case 'search':
        return await searchCommand(rest, env);
      case 'show':
        return await showCommand(rest, env);
      case 'stats':
        return await statsCommand(rest, env);
      case 'pull':
        return await pullCommand(rest, env);
      case 'validate':
        return await validateCommand(rest, env);
      case 'spec':
        return await specCommand(rest, env);
      case 'report':
        return await reportCommand(rest, env);
      case 'status':
        return await statusCommand(rest, env);
      case 'update':
        return await updateCommand(rest, env);
      default:
        throw new NnragError('usage', `unknown command '${command}'; run 'nn-rag --help'`);
    }
  } catch (err) {
    return reportError(err, env);
  }
}

export function reportError(err: unknown, env: CliEnv): number {
  if (err instanceof CancelledError) {
    env.err('nn-rag: cancelled\n');
    return EXIT.cancelled;
  }
  if (err instanceof NnragError) {
    env.err(`nn-rag: ${err.message}\n`);
    return err.code === 'usage' ? EXIT.usage : err.code === 'git' || err.code === 'internal' ? EXIT.failed : EXIT.input;
  }
  env.err(`nn-rag: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return EXIT.failed;
}

export function parse(argv: string[], spec: Record<string, OptionSpec>): ParsedArgs {
  return parseArgs(argv, { ...COMMON, ...spec });
}

export function dbPath(args: ParsedArgs): string {
  return path.resolve(opt(args, 'db') ?? path.join('.nnrag', 'index.db'));
}

/** Opens the index of `--db`; `write`: this command saves it, so it waits for another writer to finish first. */
export async function openDb(args: ParsedArgs, env: CliEnv, mustExist = true, write = false): Promise<IndexDb> {
  const file = dbPath(args);
  if (mustExist) {
    const fs = await import('fs');
    if (!fs.existsSync(file)) throw new NnragError('not-found', `no index at ${file}; run 'nn-rag index SOURCE --db ${opt(args, 'db') ?? file}' first`);
  }
  const { db, recovered } = await IndexDb.open(file, {
    sqlWasm: env.assets.sqlWasm,
    write: write ? 'wait' : undefined,
    signal: env.signal,
    onWait: (who) => env.err(`nn-rag: waiting for ${who} to finish writing ${file}\n`),
  });
  if (recovered) {
    env.err(`nn-rag: the index at ${file} was unreadable (${recovered.reason}); it was moved to ${recovered.movedTo} and a new one started\n`);
  }
  return db;
}

function cacheDir(args: ParsedArgs, env: CliEnv): string {
  const explicit = opt(args, 'cache');
  if (explicit) return path.resolve(explicit);
  const base = env.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'nn-rag');
}

/** A git commit shortened to 12 characters; a package version (`torchvision==0.14.1`) as it is. */
function shortCommit(commit: string): string {
  return /^[0-9a-f]{40}$/.test(commit) ? commit.slice(0, 12) : commit;
}

function progressLine(env: CliEnv): (text: string) => void {
  let last = 0;
  return (text: string) => {
    if (!env.tty) return;
    const now = performance.now();
    if (now - last < 80) return;
    last = now;
    env.err(`\r\x1b[K${text.slice(0, 110)}`);
  };
}

async function indexCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    name: { value: true },
    ref: { value: true },
    include: { value: true, multiple: true },
    exclude: { value: true, multiple: true },
    symbols: { value: true, multiple: true },
    priority: { value: true },
    inline: {},
    'no-inline': {},
    'python-env': { value: true },
    packages: { value: true },
    cache: { value: true },
    'max-file-kb': { value: true },
    'dup-lexical': { value: true },
    'dup-structural': { value: true },
  });
  if (flag(args, 'help')) {
    env.out(HELP);
    return EXIT.ok;
  }
  const extra: Partial<SourceConfig> = {
    include: args.options.get('include'),
    exclude: args.options.get('exclude'),
    symbols: args.options.get('symbols'),
    priority: intOpt(args, 'priority', 0),
    inline: flag(args, 'inline') ? true : flag(args, 'no-inline') ? false : undefined,
  };
  const configs: SourceConfig[] = [];
  for (const p of args.positionals) configs.push(await sourceFromArgument(p, { ...extra, ref: opt(args, 'ref') }));
  if (opt(args, 'name')) {
    if (configs.length !== 1) throw new NnragError('usage', '--name names one source; give exactly one');
    configs[0].name = opt(args, 'name');
  }
  const pyEnv = opt(args, 'python-env');
  const packages = opt(args, 'packages');
  if (pyEnv || packages) {
    if (!pyEnv || !packages) throw new NnragError('usage', '--python-env PY and --packages a,b go together');
    configs.push({ ...extra, kind: 'python-env', location: packages, python: pyEnv });
  }
  if (configs.length === 0) throw new NnragError('usage', 'index needs at least one SOURCE (a folder or an http(s) git URL)');

  const parser = await PythonParser.create(env.assets);
  const pool = lazyPool(env.assets.parseWorker, env.assets, parser);
  const db = await openDb(args, env, false, true);
  const draw = progressLine(env);
  const runs: IndexRunStats[] = [];
  const t0 = performance.now();
  try {
    for (const config of configs) {
      const sources = await openSource(config, { cacheDir: cacheDir(args, env), signal: env.signal, onMessage: (m) => draw(`[git] ${m}`) });
      for (const source of sources) {
        const run = await indexSource(db, source, {
          parser,
          parse: pool.parse,
          concurrency: pool.inFlight,
          hereMaxBytes: pool.hereMaxBytes,
          signal: env.signal,
          maxFileBytes: intOpt(args, 'max-file-kb', 2048) * 1024,
          onProgress: (p) => draw(`[index] ${p.step}/${p.total} ${p.message}`),
        });
        runs.push(run);
      }
    }
  } finally {
    await pool.close();
    // whatever finished is kept: every file's facts were written as it completed
    const changed = runs.length === 0 || runs.some((r) => r.changed > 0);
    const threshold = (name: string): number | undefined => {
      const v = opt(args, name);
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!(n > 0 && n <= 1)) throw new NnragError('usage', `--${name} is a Jaccard threshold in (0, 1], not '${v}'`);
      return n;
    };
    const dedup = { lexical: threshold('dup-lexical'), structural: threshold('dup-structural') };
    const regroup = dedup.lexical !== undefined || dedup.structural !== undefined;
    const blocks = changed || regroup ? finishRun(db, dedup).blocks : Number(db.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0);
    await db.save();
    if (env.tty) env.err('\r\x1b[K');
    if (runs.length && !flag(args, 'json')) {
      for (const r of runs) {
        env.out(
          `[index] ${r.repo}: ${r.files} files, ${r.computed} new or changed, ${r.kept} unchanged, ${r.deleted} removed, ` +
            `${r.skipped} skipped, ${r.seconds.toFixed(2)} s${r.commit ? ` (${shortCommit(r.commit)})` : ''}\n`,
        );
      }
      env.out(`[index] ${blocks} blocks in ${dbPath(args)}\n`);
    } else if (runs.length) {
      env.out(`${JSON.stringify({ runs, blocks, seconds: (performance.now() - t0) / 1000, db: dbPath(args) })}\n`);
    }
    db.close();
  }
  return EXIT.ok;
}

async function searchCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { repo: { value: true }, category: { value: true }, kind: { value: true }, limit: { value: true }, validation: { value: true }, 'all-copies': {} });
  const kind = opt(args, 'kind') ?? 'block';
  if (!['block', 'abstract', 'class'].includes(kind)) throw new NnragError('usage', `--kind is block, abstract or class, not '${kind}'`);
  const db = await openDb(args, env);
  try {
    const hits = searchBlocks(db, {
      text: args.positionals.join(' '),
      repo: opt(args, 'repo'),
      category: opt(args, 'category'),
      kind: kind as BlockKind,
      validation: opt(args, 'validation'),
      limit: intOpt(args, 'limit', 20),
      group: !flag(args, 'all-copies'),
    });
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(hits, null, 1)}\n`);
    } else if (hits.length === 0) {
      const meant = searchSuggestion(db, args.positionals.join(' '));
      env.out(`no blocks found${meant ? `; did you mean "${meant}"?` : ''}\n`);
    } else {
      for (const h of hits) {
        const copies = h.copies ? `  (${h.name}: ${h.copies.count} copies in ${h.copies.repos} repositories)` : '';
        env.out(`${h.target}  [${h.category}${h.abstract ? ', abstract' : ''}]  ${h.path}:${h.line}${copies}\n    ${h.name}${h.signature || '()'}\n`);
      }
    }
  } finally {
    db.close();
  }
  return EXIT.ok;
}

async function showCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { deps: {}, python: { value: true }, inline: {}, 'no-inline': {}, 'whole-classes': {}, limit: { value: true } });
  if (args.positionals.length !== 1) throw new NnragError('usage', 'show needs one TARGET');
  if (flag(args, 'deps')) return showDepsCommand(args, env);
  const db = await openDb(args, env);
  try {
    const ref = findTarget(db, args.positionals[0]);
    const details = describeClass(db, ref);
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

async function statsCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  const db = await openDb(args, env);
  try {
    const s = indexStats(db);
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(s, null, 1)}\n`);
      return EXIT.ok;
    }
    for (const r of s.repos) {
      env.out(`${r.name} (${r.kind}${r.commit ? ` ${shortCommit(r.commit)}` : ''}${r.license ? `, ${r.license}` : ''}): ${r.parsed} parsed, ${r.skipped} skipped, ${r.blocks} blocks\n`);
    }
    env.out(`total: ${s.files} files, ${s.modules} modules, ${s.blocks} blocks, database ${(s.db_bytes / 1024).toFixed(0)} KiB\n`);
    for (const f of s.skipped_files) env.out(`  skipped ${f.repo}/${f.path}: ${f.reason} (${f.detail})\n`);
  } finally {
    db.close();
  }
  return EXIT.ok;
}

export { errorMessage };
