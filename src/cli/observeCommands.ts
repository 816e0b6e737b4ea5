/** `nn-rag observe`: run the repositories' own tests under the observer; `nn-rag show TARGET --calls` reads it. */
import { argumentsText } from '../core/pull/pulledState';
import { cacheDir, EXIT, flag, intOpt, openDb, parse, pythonOf } from './env';
import type { CliEnv } from './env';
import { warnBeforeValidating } from './pullCommands';
import { Workspace } from '../core/workspace/workspace';
import { nativeDir } from '../core/workspace/request';
import type { ObservedCall } from '../core/store/observed';
import { observeLine } from './observeLine';
import { DEFAULT_MEMORY_MB } from '../core/validate/limits';

export async function observeCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    python: { value: true },
    'memory-mb': { value: true },
    'entry-seconds': { value: true },
    seconds: { value: true },
    'max-entries': { value: true },
    force: {},
    'build-native': {},
    cache: { value: true },
  });
  const python = pythonOf(args, env);
  const memoryMb = intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB);
  await warnBeforeValidating(env, python, memoryMb);
  const db = await openDb(args, env, true, true);
  try {
    const ws = Workspace.over(db, env.assets);
    const summaries = await ws.observe(
      {
        python,
        runner: env.assets.runner,
        memoryMb,
        entrySeconds: intOpt(args, 'entry-seconds', 20),
        repositorySeconds: intOpt(args, 'seconds', 3600),
        maxEntries: args.options.has('max-entries') ? intOpt(args, 'max-entries', 0) : undefined,
        force: flag(args, 'force'),
        buildNative: flag(args, 'build-native') ? { cacheDir: nativeDir({ cacheDir: cacheDir(args, env) })! } : undefined,
        signal: env.signal,
        onProgress: (m) => env.err(`nn-rag: ${m}\n`),
      },
      args.positionals,
    );
    await db.save();
    if (flag(args, 'json')) env.out(`${JSON.stringify(summaries, null, 1)}\n`);
    else for (const s of summaries) env.out(`${observeLine(s)}\n`);
  } finally {
    db.close();
  }
  return EXIT.ok;
}

/** `show TARGET --calls`: the calls of the block its repository's tests made. */
export function callsText(target: string, calls: (ObservedCall & { stale: boolean })[]): string {
  if (!calls.length) return `${target}: no call observed; run 'nn-rag observe' (its repository's tests, in the sandbox)\n`;
  const lines = [`${target}: ${calls.length} call${calls.length === 1 ? '' : 's'} observed`];
  for (const c of calls) {
    lines.push(`  in ${c.entry}${c.stale ? ' (a file it imported changed since; run nn-rag observe)' : ''}`);
    lines.push(`    built with ${elided(argumentsText(c.args, c.kwargs))}`);
    if (c.inputs) lines.push(`    forward got ${elided(argumentsText(c.inputs.args, c.inputs.kwargs))}`);
  }
  // what a repository's worker recorded is data: a line break in it never starts a line of ours
  return `${lines.map((l) => l.replace(/[\r\n\u0085\u2028\u2029]/g, ' ')).join('\n')}\n`;
}

/** A long text cut in its middle (`--json` has it whole). */
function elided(text: string, max = 400): string {
  return text.length <= max ? text : `${text.slice(0, max / 2)} … ${text.slice(-max / 2)}`;
}
