/**
 * The one description of a pulled file's state and of a validation verdict: the CodeLens, the Pulled Blocks view,
 * the block tree, the hover and the command line all show these words and icons, so a file never reads "up to date"
 * in one place and "conflicts" in another.
 */
export type PulledState = 'up-to-date' | 'changed' | 'unknown' | 'conflicted' | 'damaged';

export interface PulledFileStatus {
  target: string;
  /** `changed`: upstream changed since the pull; `unknown`: its repository or block is not in this index. */
  state: PulledState;
  /** The body differs from what was pulled. */
  edited: boolean;
  conflicts: number;
  reason?: string;
  /** The upstream sources that changed or disappeared, and the definitions taken from each. */
  changed: { names: string[]; path: string; state: string }[];
  /** The validation recorded in the header (at the pull, or after an edit), and why it failed. */
  validation?: { status: string; tier?: string | null; category?: string | null; message?: string };
  /** The body changed since that validation judged it: its verdict is not the file's any more. */
  stale: boolean;
  /** The code is upstream's, but the header names other sources than the index holds (its files changed elsewhere,
   * or the header was written by hand): `update` writes them again. */
  sourcesDiffer?: boolean;
}

/** A validation verdict as the header, the index and a report record it. */
export interface VerdictLike {
  status: string;
  tier?: string | null;
  category?: string | null;
}

/** Why a validation failed, as a person reads it (the failure categories of validate/report.ts). */
const FAILURE_WORDS: Record<string, string> = {
  syntax: 'the file does not parse',
  unresolved: 'a name it uses is not defined',
  'native-extension': 'it needs a compiled operator',
  'missing-package': 'a package it imports is not installed',
  'import-error': 'the file does not import',
  instantiate: 'the block could not be built',
  forward: 'the block was built but its forward did not run',
  timeout: 'it ran out of time',
  memory: 'it ran out of memory',
  interpreter: 'the interpreter could not run it',
  tampered: "it wrote into the validator's own channel",
  output: 'it printed more than the validator reads',
  differs: 'it differs from the original',
  abstract: 'it is an abstract base class, not runnable alone (pull a subclass)',
};

/** How far a file got before it failed, as a person reads it. */
const REACHED_WORDS: Record<string, string> = {
  'names-closed': 'the file compiles',
  imported: 'the file imports',
  instantiated: 'the block builds',
  forward: 'its forward runs',
};

/** The tier a failure's words already say it reached. */
const IMPLIED: Record<string, string> = { forward: 'instantiated', instantiate: 'imported', 'import-error': 'names-closed' };

/** "validated: equivalent", "failed: a name it uses is not defined (the file compiles)", "not validated". */
export function verdictWords(v: VerdictLike | null | undefined): string {
  if (!v || v.status === 'not-validated' || v.status === 'extracted') return 'not validated';
  if (v.status === 'validated') return `validated: ${v.tier ?? 'parsed'}`;
  // how far it got, unless the reason already says it ("built but its forward did not run", not "... (the block builds)")
  // (a record's words are data: `constructor` is a tier no table has, not the tables' own)
  const own = <T>(table: Record<string, T>, key: string | null | undefined): T | undefined => (key && Object.hasOwn(table, key) ? table[key] : undefined);
  const reached = v.tier && own(IMPLIED, v.category) !== v.tier ? own(REACHED_WORDS, v.tier) : undefined;
  return `failed: ${own(FAILURE_WORDS, v.category) ?? v.category ?? 'for an unknown reason'}${reached ? ` (${reached})` : ''}`;
}

/** The verdict of a report that says `ok` (a validation) or a `status` (a pull), in the shape `verdictWords` reads. */
export function reportVerdict(r: { ok?: boolean; status?: string; tier?: string | null; category?: string | null }): VerdictLike {
  const status =
    r.status === 'validated' || r.status === 'failed' ? r.status : r.ok === undefined || r.status ? 'not-validated' : r.ok ? 'validated' : 'failed';
  return { status, tier: r.tier, category: r.category };
}

/** What an `equivalent` verdict means, in the words every place that shows one uses. */
export const EQUIVALENT_MEANS = 'equivalent: behaves like the original on the inputs tried (a comparison, not a check that the code is safe to run)';

/** The sentence that explains a verdict where there is room (a tooltip, a hover, a report), or undefined. */
export function verdictMeaning(v: VerdictLike | null | undefined): string | undefined {
  return v?.status === 'validated' && v.tier === 'equivalent' ? EQUIVALENT_MEANS : undefined;
}

export interface PulledWords {
  /** Each fact, most important first: the upstream or file state, "edited locally", the verdict. */
  parts: string[];
  /** The parts joined, as a view's description. */
  label: string;
  /** A codicon name: the state that most needs the user's attention. */
  icon: string;
}

const FAILED = new Set(['failed', 'error']);

/** A verdict the body changed since. */
export const STALE_WORDS = 'edited, not validated since';

export function describePulled(s: PulledFileStatus): PulledWords {
  const parts: string[] = [];
  if (s.state === 'conflicted') parts.push(`${s.conflicts} conflict${s.conflicts === 1 ? '' : 's'}`);
  else if (s.state === 'changed') parts.push('upstream changed');
  else if (s.state === 'up-to-date') parts.push('up to date');
  else if (s.state === 'damaged') parts.push('damaged header');
  else parts.push('not in this index');
  if (s.edited && s.state !== 'damaged') parts.push('edited locally');
  // a verdict on another body than the file's is not the file's: said as such until it is validated again
  if (s.state !== 'damaged') parts.push(s.stale ? `${STALE_WORDS} (was ${verdictWords(s.validation)})` : verdictWords(s.validation));
  const failed = !s.stale && s.validation !== undefined && FAILED.has(s.validation.status);
  const icon =
    s.state === 'conflicted'
      ? 'git-merge'
      : s.state === 'damaged'
        ? 'error'
        : failed
          ? 'warning'
          : s.state === 'changed'
            ? 'cloud-download'
            : s.state === 'unknown'
              ? 'question'
              : s.edited
                ? 'edit'
                : 'pass';
  return { parts, label: parts.join(' · '), icon };
}

const TIERS = ['parsed', 'compiled', 'names-closed', 'imported', 'instantiated', 'forward', 'equivalent'];

/** How far a verdict got, for telling a lower tier after an update or edit (-1: none). */
export function tierRank(tier: string | null | undefined): number {
  return tier ? TIERS.indexOf(tier) : -1;
}

/**
 * Arguments as a Python call reads them, code that runs (`(16, 16, activation=torch.nn.Identity)`): the one way the
 * hover, `pull`, `validate` and `observe` show how a block was built and fed. Names (`$name`) stay names, strings are
 * quoted, `True`/`False`/`None` are Python's; a tensor is described (`float32[5, 12]`, `int64[2, 30] in 0..9`).
 */
export function argumentsText(args: unknown[], kwargs: Record<string, unknown>): string {
  return `(${[...args.map(valueText), ...Object.entries(kwargs).map(([k, v]) => `${k}=${valueText(v)}`)].join(', ')})`;
}

/** "built as NAME(ARGS)": how a block was built, as a call that can be copied and run. */
export function builtAsWords(name: string, args: unknown[] | undefined, kwargs: Record<string, unknown> | undefined): string {
  return `built as ${name}${argumentsText(args ?? [], kwargs ?? {})}`;
}

/** "N argument set(s)". */
export function argumentSetsWords(n: number): string {
  return `${n} argument set${n === 1 ? '' : 's'}`;
}

/** One value of the argument language (the judge's JSON of a call's arguments) as Python code. */
export function valueText(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (Array.isArray(v)) return `[${v.map(valueText).join(', ')}]`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object') return String(v);
  const o = v as Record<string, unknown>;
  if (typeof o.$name === 'string') return o.$name;
  if (typeof o.$float === 'number') return Number.isInteger(o.$float) ? o.$float.toFixed(1) : String(o.$float);
  if (Array.isArray(o.$tuple)) return `(${o.$tuple.map(valueText).join(', ')}${o.$tuple.length === 1 ? ',' : ''})`;
  if (typeof o.$call === 'string') return `${o.$call}${argumentsText(Array.isArray(o.args) ? o.args : [], (o.kwargs as Record<string, unknown>) ?? {})}`;
  if (o.$partial) return `functools.partial(${valueText(o.$partial)})`;
  if (o.$dict && typeof o.$dict === 'object')
    return `{${Object.entries(o.$dict)
      .map(([k, x]) => `${JSON.stringify(k)}: ${valueText(x)}`)
      .join(', ')}}`;
  const t = o.$tensor as { dtype?: string; shape?: number[]; min?: number; max?: number } | undefined;
  if (t) {
    const range = t.dtype && !t.dtype.startsWith('float') && t.min !== undefined && t.max !== undefined ? ` in ${t.min}..${t.max}` : '';
    return `${t.dtype ?? 'tensor'}[${(t.shape ?? []).join(', ')}]${range}`;
  }
  // a plain mapping (keyword arguments of a recorded call)
  return `{${Object.entries(o)
    .map(([k, x]) => `${JSON.stringify(k)}: ${valueText(x)}`)
    .join(', ')}}`;
}
