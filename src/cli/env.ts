/** What every command shares: the environment it runs in, exit codes, argument parsing, errors, the index. */
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { CancelledError, NnragError } from '../core/base/errors';
import { IndexDb } from '../core/store/database';
import { didYouMean } from './help';
import type { WasmPaths } from '../core/parse/parser';

export interface CliAssets extends WasmPaths {
  sqlWasm: string;
  /** The parse worker script (dist/parseWorker.js); without it, parsing stays on the main thread. */
  parseWorker?: string;
  /** python-runner/judge.py */
  runner: string;
}

export interface CliEnv {
  assets: CliAssets;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is a terminal (progress lines are drawn only there). */
  tty: boolean;
  /** The terminal's width (progress lines are cut to it). */
  columns?: number;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export const EXIT = { ok: 0, failed: 1, usage: 2, input: 3, cancelled: 130 } as const;

const COMMON: Record<string, OptionSpec> = { db: { value: true }, json: {}, help: {} };

/** Text for a terminal: control characters (from docstrings, names or paths of indexed code) shown as \u escapes,
 * which JSON reads back as the same characters; newlines and tabs kept. */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export const CLEAR_LINE = '\r\x1b[K';

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

/**
 * Opens the index of `--db`; `write`: this command saves it, so it waits for another writer to finish first;
 * 'or-read' (a long-running reader: the MCP server): its writer when nobody writes it, else read-only beside the
 * process that does (the language server), saving nothing.
 */
export async function openDb(args: ParsedArgs, env: CliEnv, mustExist = true, write: boolean | 'or-read' = false): Promise<IndexDb> {
  const file = dbPath(args);
  if (mustExist) {
    const fs = await import('fs');
    if (!fs.existsSync(file)) throw new NnragError('not-found', `no index at ${file}; run 'nn-rag index SOURCE --db ${opt(args, 'db') ?? file}' first`);
  }
  const { db, recovered, readOnlyBecause } = await IndexDb.open(file, {
    sqlWasm: env.assets.sqlWasm,
    write: write === 'or-read' ? 'or-read' : write ? 'wait' : undefined,
    signal: env.signal,
    onWait: (who) => env.err(`nn-rag: waiting for ${who} to finish writing ${file}\n`),
  });
  if (readOnlyBecause) env.err(`nn-rag: ${readOnlyBecause}: reading it, saving nothing\n`);
  if (recovered) {
    env.err(`nn-rag: the index at ${file} was unreadable (${recovered.reason}); it was moved to ${recovered.movedTo} and a new one started\n`);
  }
  return db;
}

/** The interpreter that validates: `--python`, else `NNRAG_PYTHON`, else `python3` on PATH. */
export function pythonOf(args: ParsedArgs, env: CliEnv): string {
  return opt(args, 'python') ?? (env.env.NNRAG_PYTHON || 'python3');
}

export function cacheDir(args: ParsedArgs, env: CliEnv): string {
  const explicit = opt(args, 'cache');
  if (explicit) return path.resolve(explicit);
  const base = env.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'nn-rag');
}

export { shortCommit } from '../core/base/text';

export function progressLine(env: CliEnv): (text: string) => void {
  let last = 0;
  return (text: string) => {
    if (!env.tty) return;
    const now = performance.now();
    if (now - last < 80) return;
    last = now;
    env.err(`\r\x1b[K${text.slice(0, Math.max(20, (env.columns ?? 80) - 1))}`);
  };
}

// a small, strict argument parser: unknown options are errors, never silently ignored

export interface OptionSpec {
  /** Takes a value (`--db FILE`) rather than being a flag (`--json`). */
  value?: boolean;
  /** May be given more than once. */
  multiple?: boolean;
}

export interface ParsedArgs {
  positionals: string[];
  options: Map<string, string[]>;
}

export function parseArgs(argv: string[], spec: Record<string, OptionSpec>): ParsedArgs {
  const positionals: string[] = [];
  const options = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
      const s = spec[name];
      if (!s) throw new NnragError('usage', `unknown option --${name}${didYouMean(name, Object.keys(spec), '--')}`);
      let value = 'true';
      if (s.value) {
        if (eq >= 0) value = a.slice(eq + 1);
        else {
          if (i + 1 >= argv.length || argv[i + 1].startsWith('--')) throw new NnragError('usage', `--${name} needs a value`);
          value = argv[++i];
        }
      } else if (eq >= 0) {
        throw new NnragError('usage', `--${name} takes no value`);
      }
      const list = options.get(name) ?? [];
      if (list.length && !s.multiple) throw new NnragError('usage', `--${name} given twice`);
      list.push(value);
      options.set(name, list);
    } else if (a.startsWith('-') && a.length > 1 && !/^-\d/.test(a)) {
      if (a === '-h') {
        options.set('help', ['true']);
        continue;
      }
      throw new NnragError('usage', `unknown option ${a} (options are written --name)`);
    } else {
      positionals.push(a);
    }
  }
  return { positionals, options };
}

export function opt(args: ParsedArgs, name: string): string | undefined {
  return args.options.get(name)?.[0];
}

export function flag(args: ParsedArgs, name: string): boolean {
  return args.options.has(name);
}

export function intOpt(args: ParsedArgs, name: string, fallback: number): number {
  const v = opt(args, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new NnragError('usage', `--${name} needs a whole number, not '${v}'`);
  return n;
}
