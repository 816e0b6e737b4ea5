/**
 * What a researcher's query means: the words as typed, plus the field's abbreviations and synonyms, British
 * spellings, plurals, compounds split into the index's own words (`resblock`, `convbnrelu`) and typos corrected
 * against them (`atention`). The index side expands abbreviations the same way (words.ts).
 */
import { lowerBound } from '../base/sorted';
import { expansionsOf, splitIdentifier } from './words';

/** Synonyms and acronyms researchers type, by the word typed: the words the blocks' names and docs use. */
const SYNONYMS = new Map<string, string[]>(
  Object.entries({
    mha: ['multihead'],
    mhsa: ['multihead', 'selfattention'],
    msa: ['multihead', 'attention'],
    droppath: ['drop', 'path', 'stochastic', 'depth'],
    stochastic: ['drop', 'path'],
    mbconv: ['inverted', 'residual'],
    mobilenet: ['inverted', 'residual'],
    separable: ['depthwise', 'inverted', 'residual'],
    // (three words: never all in one name, so the inverted residuals come up without outranking a depthwise conv)
    depthwise: ['dw', 'inverted', 'residual'],
    dcn: ['deformable', 'deform', 'convolution'],
    deformable: ['deform'],
    aspp: ['atrous', 'spatial', 'pyramid', 'pooling'],
    atrous: ['aspp', 'dilated'],
    fpn: ['feature', 'pyramid', 'network'],
    rpn: ['region', 'proposal', 'network'],
    gap: ['adaptive', 'average', 'pooling', 'avg'],
    global: ['adaptive'],
    average: ['avg'],
    swish: ['silu', 'hardswish'],
    silu: ['swish'],
    resblock: ['residual', 'block'],
    se: ['squeeze', 'excite', 'excitation'],
    excite: ['excitation'],
    excitation: ['excite'],
    batchnorm: ['batch', 'norm'],
    layernorm: ['layer', 'norm'],
    groupnorm: ['group', 'norm'],
    normalization: ['norm'],
    ffn: ['feedforward', 'mlp'],
    feedforward: ['feed', 'forward', 'mlp'],
    roi: ['ro', 'region'],
    upsampling: ['upsample'],
    tconv: ['transposed', 'convtranspose'],
    // the field's terms for gated and mixture layers, caches and adapters (the index side says them from the code)
    moe: ['mixture', 'experts'],
    rope: ['rotary', 'position', 'embedding'],
    rotary: ['rope'],
    kv: ['key', 'value', 'cache'],
    lora: ['low', 'rank', 'adaptation'],
    swiglu: ['silu', 'gated', 'glu'],
    geglu: ['gelu', 'gated', 'glu'],
    glu: ['gated'],
    ff: ['feedforward', 'feed', 'forward', 'mlp'],
    feed: ['feedforward', 'mlp', 'ffn'],
    gated: ['gate', 'glu'],
  }),
);

/** Words of a description that name no block. */
const STOPWORDS = new Set([
  'a',
  'an',
  'the',
  'of',
  'for',
  'with',
  'and',
  'or',
  'to',
  'in',
  'on',
  'by',
  'from',
  'into',
  'between',
  'that',
  'which',
  'its',
  'per',
  'using',
]);

/** A word as British English spells it, in the American spelling code bases use (`colour`, `normalisation`). */
function american(word: string): string {
  return word
    .replace(/isation$/, 'ization')
    .replace(/(?<!w)ise$/, 'ize')
    .replace(/our$/, 'or')
    .replace(/tre$/, 'ter');
}

/** The index's own words: every word of every block name, split (see VOCABULARY_LIMIT). */
export interface Vocabulary {
  words: Set<string>;
  /** Sorted, for prefix tests. */
  sorted: string[];
}

export function vocabularyOf(names: Iterable<string>): Vocabulary {
  const words = new Set<string>();
  for (const n of names) for (const w of splitIdentifier(n)) if (w.length > 1 && !/^\d+$/.test(w)) words.add(w);
  return { words, sorted: [...words].sort() };
}

function hasPrefix(v: Vocabulary, prefix: string): boolean {
  const lo = lowerBound(v.sorted, prefix);
  return lo < v.sorted.length && v.sorted[lo].startsWith(prefix);
}

/** Whether the index has a word as typed: itself, a word it begins, or a name whose parts it has (`LayerNorm2d`). */
function known(word: string, v: Vocabulary): boolean {
  const lower = word.toLowerCase();
  if (v.words.has(lower) || hasPrefix(v, lower)) return true;
  const parts = splitIdentifier(word);
  return parts.length > 1 && parts.every((p) => p.length < 2 || /^\d+$/.test(p) || v.words.has(p));
}

/** The longest word of the index's names that is `word` cut short, four letters or more, a plural `s` aside
 * (`coordinate`: coors); undefined when none is. */
export function truncated(word: string, v: Vocabulary): string | undefined {
  for (let end = word.length - 1; end >= 4; end--) {
    const head = word.slice(0, end);
    if (v.words.has(head)) return head;
    if (v.words.has(`${head}s`)) return `${head}s`;
  }
  return undefined;
}

/** `resblock` -> res block, `convbnrelu` -> conv bn relu: the fewest index words that spell the word, if any. */
export function splitCompound(word: string, v: Vocabulary): string[] | undefined {
  const best: (string[] | undefined)[] = [[]];
  for (let end = 1; end <= word.length; end++) {
    for (let start = Math.max(0, end - 20); start < end; start++) {
      const piece = word.slice(start, end);
      const before = best[start];
      if (!before || piece.length < 2 || !(v.words.has(piece) || expansionsOf(piece).length)) continue;
      const candidate = [...before, piece];
      if (!best[end] || candidate.length < best[end]!.length) best[end] = candidate;
    }
  }
  const out = best[word.length];
  return out && out.length > 1 ? out : undefined;
}

/** Damerau-Levenshtein distance (adjacent transpositions count one), stopping early past `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    let rowMin = Infinity;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      rowMin = Math.min(rowMin, d[i][j]);
    }
    if (rowMin > max) return max + 1;
  }
  return d[a.length][b.length];
}

/** The index word closest to a word the index does not have (one edit for short words, two for long ones). */
export function correct(word: string, v: Vocabulary): string | undefined {
  if (word.length < 4) return undefined;
  const max = word.length >= 7 ? 2 : 1;
  let best: string | undefined;
  let bestD = max + 1;
  for (const w of v.sorted) {
    if (w.length < 3) continue;
    const d = distance(word, w, max);
    if (d < bestD || (d === bestD && best !== undefined && w.length < best.length)) {
      best = w;
      bestD = d;
    }
  }
  return best;
}

export interface UnderstoodQuery {
  /** Words as typed (lower case, punctuation removed). */
  typed: string[];
  /** Every term to look for: typed words, their parts, expansions, synonyms, splits and corrections. */
  terms: string[];
  /** For each term, the typed word it stands for (an index into `typed`). */
  origins: number[];
  /** Per typed word, what an abbreviation or acronym stands for (`fpn` -> feature pyramid network). */
  meanings: string[][];
  /** Typed words the index does not have, with the word meant (`atention` -> attention). */
  corrections: Map<string, string>;
  /** Whether the terms say more than the typed words (an abbreviation, a synonym, a split or a correction). */
  widened: boolean;
  /** Terms that are only a synonym of a typed word (related, not the same: `depthwise` for `separable`). */
  loose: Set<string>;
  /** The initials of three or more typed words (`atrous spatial pyramid pooling` -> aspp). */
  acronym?: string;
  /** The initials of two or three typed words in a row that the index's names use as a word (`ms`). */
  initials: string[];
}

/** The terms a query stands for, over the index's vocabulary. */
export function understand(text: string, v: Vocabulary): UnderstoodQuery {
  const typed: string[] = [];
  const terms = new Map<string, number>();
  const corrections = new Map<string, string>();
  const meanings: string[][] = [];
  const unknown = new Set<string>();
  const loose = new Set<string>();
  const add = (w: string): void => {
    if (!w || /^\d+$/.test(w)) return;
    const origin = typed.length - 1;
    for (const t of [w, ...expansionsOf(w)]) if (!terms.has(t)) terms.set(t, origin);
    for (const t of SYNONYMS.get(w) ?? []) {
      if (terms.has(t)) continue;
      terms.set(t, origin);
      loose.add(t);
    }
  };
  // `(2+1)D` is written Conv2Plus1D
  const raws = text
    .replace(/\+/g, ' plus ')
    .split(/[\s\-/]+/)
    .map((raw) => raw.replace(/[^A-Za-z0-9_]/g, ''))
    .filter(Boolean);
  // a description's little words (`attention with a causal mask`) say nothing of a block; a query of them alone does
  const content = raws.filter((w) => !STOPWORDS.has(w.toLowerCase()));
  for (const w of content.length ? content : raws) {
    const lower = w.toLowerCase();
    if (typed.includes(lower)) continue;
    typed.push(lower);
    // (an abbreviation's, or a word's spelled out from its start: `upsample`, up sampling; a word of its own,
    // `bottleneck`, is what it says, not another name for a residual block)
    const meaning = expansionsOf(lower).length > 1 ? expansionsOf(lower) : (SYNONYMS.get(lower) ?? []).length > 1 ? SYNONYMS.get(lower)! : [];
    meanings.push(lower.length <= 5 || meaning[0]?.slice(0, 2) === lower.slice(0, 2) ? meaning : []);
    add(lower);
    for (const part of splitIdentifier(w)) if (part.length > 1) add(part);
    const us = american(lower);
    if (us !== lower) add(us);
    if (lower.length > 3 && lower.endsWith('s') && v.words.has(lower.slice(0, -1))) add(lower.slice(0, -1));
    if (known(w, v) || expansionsOf(lower).length || SYNONYMS.has(lower)) continue;
    unknown.add(lower);
    const pieces = splitCompound(lower, v);
    if (pieces) {
      for (const p of pieces) add(p);
      continue;
    }
    // a word no name has, that a name has cut short (`coordinate`: the Coors of CoorsNorm): the abbreviation code
    // writes most, learned from the index's own names
    const cut = truncated(lower, v);
    if (cut) {
      add(cut);
      continue;
    }
    const fixed = correct(lower, v);
    if (fixed) {
      corrections.set(lower, fixed);
      add(fixed);
    }
  }
  const acronym = typed.length >= 3 && typed.every((w) => /^[a-z]/.test(w)) ? typed.map((w) => w[0]).join('') : undefined;
  // a block named by the initials (`positional encoding generator`: PEG) is a candidate though it says none of them
  if (acronym && acronym.length <= 6 && v.words.has(acronym) && !terms.has(acronym)) terms.set(acronym, 0);
  // two or three words in a row whose initials are a word of the index's names (`multi scale`: the MS of
  // MSDeformAttn): abbreviations learned from the names themselves
  const initials: string[] = [];
  for (let n = 2; n <= 3; n++) {
    for (let i = 0; i + n <= typed.length; i++) {
      const run = typed.slice(i, i + n);
      if (!run.every((w) => /^[a-z]{3,}$/.test(w))) continue;
      // (`cross` is written X in names: XCA for cross covariance attention)
      const a = run.map((w) => (w === 'cross' && i === 0 ? 'x' : w[0])).join('');
      // (an abbreviation the tables already know, `bn`, is said by its words on both sides)
      if (a === acronym || !v.words.has(a) || terms.has(a) || expansionsOf(a).length || SYNONYMS.has(a)) continue;
      terms.set(a, i);
      initials.push(a);
    }
  }
  const kept = [...terms].slice(0, 24);
  const widened = unknown.size > 0 || typed.some((w) => expansionsOf(w).length > 0 || SYNONYMS.has(w)) || (acronym !== undefined && terms.has(acronym));
  return { typed, terms: kept.map(([t]) => t), origins: kept.map(([, o]) => o), meanings, corrections, widened, acronym, loose, initials };
}
