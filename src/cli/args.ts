/** A small, strict argument parser: unknown options are errors, never silently ignored. */
import { NnragError } from '../core/errors';

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
      if (!s) throw new NnragError('usage', `unknown option --${name}`);
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
