/**
 * The mutation bench (`npm run bench -- --mutants`): how often the judge notices a one-line change. From a batch pull
 * whose blocks were judged `equivalent`, each pulled file is mutated one line at a time, by kind (an activation
 * swapped, a constant, a default, a branch condition, a helper function's constant, a residual sum, an init), and
 * each mutant is judged against its original with the same request as the unchanged file (which must be judged
 * `equivalent` with it first). A mutant that is still `equivalent` survived; one that differs or fails was killed;
 * one that is not valid Python is not counted, nor one that changes a parameter default no call can use
 * (`unreadDefault.py`: never read, or passed by every call in the file), an equivalent mutant by construction.
 */
import { execFile } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { bodyHash, readProvenance, recordedArguments, splitPulled } from '../src/core/emit/pulledFile';
import type { PullSession } from '../src/core/pull/session';
import { originalOfPulled } from '../src/core/pull/original';
import { validateFile } from '../src/core/validate/runner';
import type { ValidationReport, ValidatorPoolLike } from '../src/core/validate/runner';

export const KINDS = ['activation', 'constant', 'default', 'branch', 'helper', 'residual', 'init'] as const;
export type Kind = (typeof KINDS)[number];

export interface Mutant {
  kind: Kind;
  line: number;
  before: string;
  after: string;
  text: string;
}

const ACTIVATIONS: [RegExp, string][] = [
  [/\bnn\.ReLU\b/, 'nn.SiLU'],
  [/\bnn\.SiLU\b/, 'nn.ReLU'],
  [/\bnn\.GELU\b/, 'nn.ReLU'],
  [/\bnn\.Hardswish\b/, 'nn.ReLU'],
  [/\bnn\.Sigmoid\b/, 'nn.Hardsigmoid'],
  [/\bnn\.Hardsigmoid\b/, 'nn.Sigmoid'],
  [/\bF\.relu\(/, 'F.silu('],
  [/\bF\.gelu\(/, 'F.relu('],
  [/\btorch\.relu\(/, 'torch.sigmoid('],
  [/\btorch\.sigmoid\(/, 'torch.relu('],
];
const NUMBER = /(?<![\w.])(\d+\.\d*(?:e-?\d+)?|\d+e-?\d+|\d*\.\d+)(?![\w.])/;
const INT_DEFAULT = /(\b\w+\s*(?::\s*[\w.[\], ]+)?\s*=\s*)(\d+)(?=\s*[,)])/;
const FLOAT_DEFAULT = /(\b\w+\s*(?::\s*[\w.[\], ]+)?\s*=\s*)(\d*\.\d+(?:e-?\d+)?|\d+e-?\d+)(?=\s*[,)])/;

function scaled(literal: string): string {
  const v = Number(literal) * 1.5;
  return v === 0 ? '0.5' : String(v);
}

/** Lines of the body that are code (not comments, docstring-looking lines or blank). */
function codeLines(body: string[]): number[] {
  const out: number[] = [];
  let inDoc = false;
  for (const [i, line] of body.entries()) {
    const t = line.trim();
    const quotes = (t.match(/"""|'''/g) ?? []).length;
    if (inDoc) {
      if (quotes % 2 === 1) inDoc = false;
      continue;
    }
    if (quotes % 2 === 1) {
      inDoc = true;
      continue;
    }
    if (!t || t.startsWith('#') || quotes) continue;
    out.push(i);
  }
  return out;
}

/** One mutant of each kind that has a place in the file (the first such line), or none of that kind. */
export function mutants(text: string): Mutant[] {
  const { header, body } = splitPulled(text);
  const lines = body.split('\n');
  const offset = header.split('\n').length - 1;
  const code = codeLines(lines);
  const out: Mutant[] = [];
  const make = (kind: Kind, i: number, after: string): void => {
    if (out.some((m) => m.kind === kind) || after === lines[i]) return;
    const next = [...lines];
    next[i] = after;
    out.push({ kind, line: offset + i + 1, before: lines[i].trim(), after: after.trim(), text: header + next.join('\n') });
  };
  // where each line is: inside a top-level function (a helper) or a class
  const owner: ('function' | 'class' | 'module')[] = [];
  let current: 'function' | 'class' | 'module' = 'module';
  for (const line of lines) {
    if (/^def /.test(line)) current = 'function';
    else if (/^class /.test(line)) current = 'class';
    else if (/^\S/.test(line) && !line.startsWith('#') && !line.startsWith('@') && !line.startsWith(')')) current = 'module';
    owner.push(current);
  }
  for (const i of code) {
    const line = lines[i];
    for (const [re, by] of ACTIVATIONS) if (re.test(line) && !/^\s*(from|import) /.test(line)) make('activation', i, line.replace(re, by));
    const isDef = /^\s*def /.test(line);
    if (isDef) {
      const f = FLOAT_DEFAULT.exec(line);
      if (f)
        make(
          'default',
          i,
          line.replace(FLOAT_DEFAULT, (_m, a: string, v: string) => `${a}${scaled(v)}`),
        );
      const n = INT_DEFAULT.exec(line);
      if (n && !line.includes('self, *'))
        make(
          'default',
          i,
          line.replace(INT_DEFAULT, (_m, a: string, v: string) => `${a}${Number(v) + 1}`),
        );
      continue;
    }
    const literal = NUMBER.exec(line);
    if (literal && !/^\s*(assert|raise|return f|warnings)/.test(line)) {
      if (owner[i] === 'function')
        make(
          'helper',
          i,
          line.replace(NUMBER, (v) => scaled(v)),
        );
      else if (owner[i] === 'class')
        make(
          'constant',
          i,
          line.replace(NUMBER, (v) => scaled(v)),
        );
    }
    const cond = /^(\s*)if (self\.\w+|not self\.\w+|\w+ is not None|\w+ is None|self\.\w+ is not None|self\.\w+ is None):\s*$/.exec(line);
    if (cond) make('branch', i, `${cond[1]}if not (${cond[2]}):`);
    if (/\bnn\.init\.\w+_\(/.test(line)) {
      const changed = NUMBER.test(line) ? line.replace(NUMBER, (v) => scaled(v)) : line.replace(/\bzeros_\(/, 'ones_(').replace(/\bones_\(/, 'zeros_(');
      make('init', i, changed);
    }
    const residual = /^(\s*)(\w+) \+= (.+)$/.exec(line) ?? /^(\s*)(?:return|out =|x =) .*\b(identity|shortcut|residual|x)\b.*\+/.exec(line);
    if (residual) {
      if (line.includes('+=')) make('residual', i, line.replace('+=', '-='));
      else make('residual', i, line.replace(/ \+ /, ' - '));
    }
  }
  return out;
}

export interface MutantResult {
  target: string;
  kind: Kind;
  line: number;
  before: string;
  after: string;
  /** `equivalent`: the changed line is a default no call uses (why in `how`); not counted either way */
  outcome: 'killed' | 'survived' | 'invalid' | 'equivalent';
  how: string;
  /** The top-level definition holding the changed line, and whether the probes of the unchanged file ran any of it. */
  definition?: string;
  reached?: boolean;
}

/** The top-level function or class holding line `line` (1-based) of `text`, by name. */
function definitionAt(text: string, line: number): string | undefined {
  const lines = text.split('\n');
  for (let i = Math.min(line, lines.length) - 1; i >= 0; i--) {
    const m = /^(?:async\s+)?(?:def|class)\s+(\w+)/.exec(lines[i]);
    if (m) return m[1];
    if (/^\S/.test(lines[i]) && !lines[i].startsWith('@') && !lines[i].startsWith('#') && i < line - 1) return undefined;
  }
  return undefined;
}

/** Where on line `line` (1-based) two texts first differ (0-based). */
export function changedColumn(before: string, after: string, line: number): number {
  const a = before.split('\n')[line - 1] ?? '';
  const b = after.split('\n')[line - 1] ?? '';
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

const UNREAD_DEFAULT = path.join(__dirname, 'unreadDefault.py');

/** Why the line of the unchanged file is a parameter default no call can use, or '' (run with the user's Python). */
export function unreadDefault(python: string, file: string, line: number, column: number, block: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(python, ['-I', UNREAD_DEFAULT, file, String(line), String(column), block], { timeout: 30_000 }, (err, stdout) =>
      resolve(err ? '' : stdout.trim()),
    );
  });
}

/** Judges one pulled file and its mutants; `undefined` when the unchanged file is not equivalent under the request. */
export async function judgeMutants(
  session: PullSession,
  file: string,
  python: string,
  runner: string,
  pool: ValidatorPoolLike,
  dir: string,
): Promise<MutantResult[] | undefined> {
  const text = await fsp.readFile(file, 'utf8');
  const prov = readProvenance(text);
  if (!prov || bodyHash(text) !== prov.hash) return undefined;
  const original = await originalOfPulled(session, prov, python);
  if (!('module' in original)) return undefined;
  const judge = async (name: string, source: string): Promise<ValidationReport> => {
    const where = path.join(dir, name);
    await fsp.mkdir(where, { recursive: true });
    const copy = path.join(where, path.basename(file));
    await fsp.writeFile(copy, source, 'utf8');
    // the arguments the repository's builder gave the block, as a pull records them: the file alone is judged
    return validateFile(copy, {
      python,
      runner,
      className: prov.block,
      original,
      pool,
      timeoutMs: 120_000,
      memoryMb: 4096,
      candidates: recordedArguments(prov),
    });
  };
  const base = await judge('base', text);
  if (base.tier !== 'equivalent') return undefined;
  const out: MutantResult[] = [];
  for (const [n, m] of mutants(text).entries()) {
    const r = await judge(`m${n}`, m.text);
    const invalid = r.category === 'syntax' || r.category === 'unresolved';
    const unread = invalid ? '' : await unreadDefault(python, file, m.line, changedColumn(text, m.text, m.line), prov.block);
    let outcome: MutantResult['outcome'] = invalid ? 'invalid' : r.tier === 'equivalent' ? 'survived' : 'killed';
    let how = r.category
      ? `${r.category}: ${(r.message ?? '').slice(0, 160)}`
      : `${r.equivalence?.compared_values ?? 0} values compared under ${r.equivalence?.variants?.length ?? 0} argument sets`;
    // a killed mutant the classifier calls equivalent is kept as killed and shown: the judge or the classifier is wrong
    if (unread && outcome === 'survived') [outcome, how] = ['equivalent', unread];
    else if (unread && outcome === 'killed') how = `killed although ${unread}: ${how}`;
    const definition = definitionAt(text, m.line);
    const unrun = base.equivalence?.not_exercised;
    out.push({
      target: prov.target,
      kind: m.kind,
      line: m.line,
      before: m.before,
      after: m.after,
      outcome,
      how,
      definition,
      ...(definition && unrun ? { reached: !unrun.includes(definition) } : {}),
    });
  }
  return out;
}

/** Score per kind and in all (killed / counted), and the survivors by name. */
export function score(results: MutantResult[]): Record<string, unknown> {
  const counted = results.filter((r) => r.outcome === 'killed' || r.outcome === 'survived');
  const perKind: Record<string, { killed: number; counted: number }> = {};
  for (const r of counted) {
    const k = (perKind[r.kind] ??= { killed: 0, counted: 0 });
    k.counted++;
    if (r.outcome === 'killed') k.killed++;
  }
  const killed = counted.filter((r) => r.outcome === 'killed').length;
  return {
    mutants: results.length,
    counted: counted.length,
    invalid: results.filter((r) => r.outcome === 'invalid').length,
    equivalent: results.filter((r) => r.outcome === 'equivalent').length,
    killed,
    score: counted.length ? Math.round((1000 * killed) / counted.length) / 10 : null,
    per_kind: perKind,
    survivors: counted
      .filter((r) => r.outcome === 'survived')
      .map((r) => ({ target: r.target, kind: r.kind, line: r.line, before: r.before, after: r.after, definition: r.definition, reached: r.reached })),
    // survivors in a definition none of whose code the probes of the unchanged file ran (the coverage line)
    survivors_never_run: counted.filter((r) => r.outcome === 'survived' && r.reached === false).length,
    // dropout's probability is seen through the train-mode probe; nothing generated here is invisible by design
    invisible_by_design: [],
    equivalent_mutants: results
      .filter((r) => r.outcome === 'equivalent')
      .map((r) => ({ target: r.target, kind: r.kind, line: r.line, before: r.before, why: r.how })),
    killed_though_unread: results
      .filter((r) => r.outcome === 'killed' && r.how.startsWith('killed although'))
      .map((r) => ({ target: r.target, line: r.line, how: r.how })),
  };
}
