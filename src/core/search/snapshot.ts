/**
 * The in-memory search written beside its index (`index.db.search`), so that a process that opens the index answers
 * its first query from memory instead of building the search first (tens of seconds at 200,000 blocks) or asking FTS4
 * meanwhile (seconds a query). A snapshot is used only for the very content it was made from: its header names the
 * sha256 of the database file (`IndexDb.savedAs`), and a database changed since, even by one write, is not its own.
 *
 * The file is data from disk like any index a colleague shares: it is read from a regular file only (never through a
 * link) and never becomes a path or code. What could take the engine outside the index is checked before the engine
 * is made: every section within the file, every document number below the index's count (a row is read by it), every
 * list as long as its header says; a snapshot that fails any check is ignored and the search built as before. The
 * rest (the terms' order, the figures, the postings by document) can only change a ranking, as a database written by
 * someone else can, and is not read twice.
 *
 * Layout: 8 bytes `NNRAGSE1`, a 4-byte length and a JSON header (`Header`), then the sections, each at a multiple of 8
 * bytes, as typed arrays in the machine's byte order (the header says which; another is not read).
 */
import { promises as fsp } from 'fs';
import * as os from 'os';
import type { SqlValue } from 'sql.js';
import { readWhole, withRegularFile, writeReplacing } from '../base/files';
import { stampedSha256, type IndexDb, type Row } from '../store/database';
import { FTS_COLUMNS, KeyedDocs, SearchEngine, type Derived, type EngineParts, type RowTable } from './engine';

const MAGIC = Buffer.from('NNRAGSE1');
const FORMAT = 2;
/** A snapshot larger than this is not read (a 200,000-block index makes about 200 MB). */
const MAX_BYTES = 4 * 2 ** 30;
/** The bytes read first, the header within them (its sections' list: about 6 KB). */
const HEAD_BYTES = 64 << 10;
const C = FTS_COLUMNS.length;
/** The row's columns the ranking reads (engine.ts `RANKED`), in the order a snapshot keeps them. */
const ROW_COLUMNS = ['id', 'name', 'module', 'uses', 'prior', 'abstract', 'bases', 'dup_lex', 'signature'] as const;

type Typed = Uint8Array | Int32Array | Uint32Array | Float64Array;
const KINDS = { u8: Uint8Array, i32: Int32Array, u32: Uint32Array, f64: Float64Array } as const;
type Kind = keyof typeof KINDS;

interface Section {
  name: string;
  kind: Kind;
  offset: number;
  count: number;
}

interface Header {
  format: number;
  endian: string;
  /** The sha256 of the database file it was made from. */
  db: string;
  documents: number;
  average: number[];
  blockIds: { max: number; count: number };
  sections: Section[];
}

/** The snapshot's file beside the database `file`. */
export function snapshotFile(file: string): string {
  return `${file}.search`;
}

/** Strings as one text (UTF-8 in the file) and where each ends (UTF-16 code units, as JavaScript slices). */
function stringsOf(list: string[]): { text: Uint8Array; ends: Uint32Array } | undefined {
  const ends = new Uint32Array(list.length);
  let at = 0;
  list.forEach((x, k) => (ends[k] = at += x.length));
  const joined = list.join('');
  const text = Buffer.from(joined, 'utf8');
  // a lone surrogate would not come back as it went: such a list is not written
  if (text.toString('utf8') !== joined) return undefined;
  return { text, ends };
}

/** A column of SqlValues: a tag per value (0 null, 1 number, 2 string), the numbers, the strings. */
function columnOf(values: SqlValue[]): { tags: Uint8Array; numbers: Float64Array; strings: string[] } | undefined {
  const tags = new Uint8Array(values.length);
  const numbers = new Float64Array(values.length);
  const strings: string[] = [];
  for (let d = 0; d < values.length; d++) {
    const v = values[d];
    if (v === null || v === undefined) tags[d] = 0;
    else if (typeof v === 'number') {
      tags[d] = 1;
      numbers[d] = v;
    } else if (typeof v === 'string') {
      tags[d] = 2;
      strings.push(v);
    } else return undefined; // a blob: not written
  }
  return { tags, numbers, strings };
}

/** Writes `engine` beside `dbFile` as made from the file whose sha256 is `sha256` (a temporary file renamed over). */
export async function writeSnapshot(dbFile: string, engine: SearchEngine, sha256: string): Promise<boolean> {
  const parts = engine.parts;
  const n = parts.rows.length;
  const sections: { name: string; data: Typed }[] = [];
  const add = (name: string, data: Typed): void => void sections.push({ name, data });
  const addStrings = (name: string, list: string[]): boolean => {
    const s = stringsOf(list);
    if (!s) return false;
    add(`${name}.text`, s.text);
    add(`${name}.ends`, s.ends);
    return true;
  };
  // a list of words (none holds a newline): one text, split again when read
  const addList = (name: string, list: string[]): boolean => {
    if (list.some((x) => x.includes('\n'))) return false;
    add(`${name}.count`, Uint32Array.of(list.length));
    return addStrings(name, [list.join('\n')]);
  };
  const table = (name: string, values: (string | null | undefined)[]): boolean => {
    const known = new Map<string, number>();
    const codes = new Int32Array(values.length);
    values.forEach((v, d) => {
      if (v === null) codes[d] = -1;
      else if (v === undefined) codes[d] = -2;
      else {
        let k = known.get(v);
        if (k === undefined) known.set(v, (k = known.size));
        codes[d] = k;
      }
    });
    add(`${name}.codes`, codes);
    return addList(`${name}.table`, [...known.keys()]);
  };
  const rows: Row[] = Array.from({ length: n }, (_, d) => parts.rows.at(d));
  for (const col of ROW_COLUMNS) {
    const c = columnOf(rows.map((r) => r[col]));
    if (!c) return false;
    add(`row.${col}.tags`, c.tags);
    add(`row.${col}.numbers`, c.numbers);
    if (!addStrings(`row.${col}`, c.strings)) return false;
  }
  add('isBlock', parts.isBlock);
  add('abstract', parts.abstract);
  add('kinds', parts.kinds);
  add('standings', parts.standings);
  add('lengths', parts.lengths);
  if (!table('validation', parts.validation) || !table('category', parts.category) || !table('repo', parts.repo)) return false;
  const { postings, named, trigrams } = parts;
  if (!addList('terms', parts.terms)) return false;
  add('postings.at', postings.at);
  add('postings.counts', postings.counts);
  add('postings.ends', postings.ends);
  const groups = [...parts.groups];
  add(
    'groups.keys',
    Float64Array.from(groups, ([g]) => g),
  );
  add(
    'groups.counts',
    Uint32Array.from(groups, ([, v]) => v.count),
  );
  add(
    'groups.repos',
    Uint32Array.from(groups, ([, v]) => v.repos),
  );
  if (!addList('named.words', Array.from(named.keys))) return false;
  add('named.docs', named.docs);
  add('named.ends', named.ends);
  if (!addList('owned.words', Array.from(parts.owned.keys))) return false;
  add('owned.docs', parts.owned.docs);
  add('owned.ends', parts.owned.ends);
  add('trigrams.keys', Float64Array.from(trigrams.keys));
  add('trigrams.docs', trigrams.docs);
  add('trigrams.ends', trigrams.ends);
  if (!addStrings('names', [parts.names]) || !addList('vocabulary', parts.vocabulary) || !addList('modules', parts.modules)) return false;
  const { figures, byDocument, nameStarts } = engine.derived;
  add('figures.docs', figures.termDocs);
  add('figures.hits', figures.termHits);
  add('figures.most', figures.termMost);
  add('byDocument.starts', byDocument.starts);
  add('byDocument.terms', byDocument.termOf);
  add('byDocument.cells', byDocument.cellOf);
  add('nameStarts', nameStarts);

  const kindOf = (data: Typed): Kind => (data instanceof Uint8Array ? 'u8' : data instanceof Int32Array ? 'i32' : data instanceof Uint32Array ? 'u32' : 'f64');
  const placed: Section[] = [];
  let offset = 0;
  for (const { name, data } of sections) {
    placed.push({ name, kind: kindOf(data), offset, count: data.length });
    offset += align(data.byteLength);
  }
  const header: Header = {
    format: FORMAT,
    endian: os.endianness(),
    db: sha256,
    documents: n,
    average: Array.from(parts.average),
    blockIds: parts.blockIds,
    sections: placed,
  };
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  const start = align(MAGIC.length + 4 + head.length);
  const out = Buffer.alloc(start + offset);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(head.length, MAGIC.length);
  head.copy(out, MAGIC.length + 4);
  sections.forEach(({ data }, k) => out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), start + placed[k].offset));
  return writeReplacing(snapshotFile(dbFile), out).then(
    () => true,
    () => false,
  );
}

function align(bytes: number): number {
  return Math.ceil(bytes / 8) * 8;
}

/** Whether the snapshot beside `dbFile` says it was made from the content whose sha256 is `sha256` (its header only). */
export async function snapshotCurrent(dbFile: string, sha256: string): Promise<boolean> {
  return (await withRegularFile(snapshotFile(dbFile), async (fh) => madeFrom(await readHead(fh), sha256))) === true;
}

/** The bytes of the snapshot beside the database `dbFile` made from the content whose sha256 is `sha256`, from a
 * regular file only (never through a link: a FIFO or a device would hang or never end), its header read first (a
 * snapshot of other content is not read on), at most twice the database's size and a little more; undefined when there
 * is none such. Read while the database opens (`prepareSnapshot`). */
export function snapshotBytes(dbFile: string, sha256: string): Promise<Buffer | undefined> {
  return withRegularFile(snapshotFile(dbFile), async (fh, size) => {
    const limit = Math.min(MAX_BYTES, 2 * (await fsp.stat(dbFile)).size + (64 << 20));
    return size > limit || !madeFrom(await readHead(fh), sha256) ? undefined : readWhole(fh, size);
  });
}

/** The first bytes of a snapshot (its header is within them). */
async function readHead(fh: fsp.FileHandle): Promise<Buffer> {
  const head = Buffer.alloc(HEAD_BYTES);
  const { bytesRead } = await fh.read(head, 0, head.length, 0);
  return head.subarray(0, bytesRead);
}

/** Whether a snapshot's first bytes say it was made from the content whose sha256 is `sha256`, in this format. */
function madeFrom(head: Buffer, sha256: string): boolean {
  const at = MAGIC.length + 4;
  if (head.length < at || !head.subarray(0, MAGIC.length).equals(MAGIC)) return false;
  const text = head.toString('utf8', at, Math.min(head.length, at + head.readUInt32LE(MAGIC.length)));
  return text.includes(`"db":${JSON.stringify(sha256)},`) && text.includes(`"format":${FORMAT},`);
}

/** A snapshot read and checked for the content its database's save stamp names, before that database has opened. */
export interface PreparedSnapshot {
  sha256: string;
  parts: EngineParts;
  derived: Derived;
  /** The documents' class ids, ascending. */
  ids: Float64Array;
}

/**
 * Reads and checks the snapshot beside the database `dbFile` for the content the database's save stamp names: done
 * while the database itself is read (`readSnapshot` then takes it only if the database opened is that content).
 */
export async function prepareSnapshot(dbFile: string): Promise<PreparedSnapshot | undefined> {
  const sha256 = await stampedSha256(dbFile);
  const bytes = sha256 && (await snapshotBytes(dbFile, sha256));
  if (!sha256 || !bytes) return undefined;
  const read = partsOf(bytes, sha256);
  return read && { sha256, ...read };
}

/** The search `db` holds, from the snapshot beside its file (`prepared`, when read while it opened) when that was made
 * from the content `db` holds now; undefined otherwise. */
export async function readSnapshot(db: IndexDb, prepared?: Promise<PreparedSnapshot | undefined>): Promise<SearchEngine | undefined> {
  const saved = db.savedAs;
  if (!db.file || !saved || saved.generation !== db.generation) return undefined;
  const read = await (prepared ?? prepareSnapshot(db.file));
  const stemmer = await SearchEngine.stemmer();
  if (!read || read.sha256 !== saved.sha256 || db.generation !== saved.generation) return undefined;
  // documents from the database's first class id to its last (its ends of the ids' tree: no scan; a row named that the
  // database lacks is left out of a page, search.ts)
  const { ids } = read;
  const lo = db.get('SELECT min(id) AS id FROM classes')?.id;
  const hi = db.get('SELECT max(id) AS id FROM classes')?.id;
  if (ids.length ? Number(lo) !== ids[0] || Number(hi) !== ids[ids.length - 1] : lo !== null && lo !== undefined) return undefined;
  return new SearchEngine(stemmer, read.parts, read.derived);
}

/** The engine's parts from a snapshot's bytes, every number checked; undefined when anything is not as written. */
export function partsOf(bytes: Buffer, sha256: string): { parts: EngineParts; derived: Derived; ids: Float64Array } | undefined {
  try {
    return checkedParts(bytes, sha256);
  } catch {
    return undefined;
  }
}

class Bad extends Error {}
function ensure(ok: boolean): void {
  if (!ok) throw new Bad('not a snapshot of this index');
}

/** The sections of a snapshot by name, read checked (each a method that throws `Bad` on what is not as written). */
class Sections {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  constructor(
    private readonly byName: Map<string, Typed>,
    readonly n: number,
  ) {}

  get = <K extends Kind>(name: string, kind: K, length?: number): InstanceType<(typeof KINDS)[K]> => {
    const a = this.byName.get(name);
    ensure(a instanceof KINDS[kind] && (length === undefined || a.length === length));
    return a as InstanceType<(typeof KINDS)[K]>;
  };

  /** Strings as one text and where each ends. */
  strings = (name: string, length?: number): { text: string; ends: Uint32Array } => {
    const text = this.decoder.decode(this.get(`${name}.text`, 'u8'));
    return { text, ends: this.ended(this.get(`${name}.ends`, 'u32', length), text.length) };
  };

  /** A list of words written one a line. */
  list = (name: string): string[] => {
    const [count] = this.get(`${name}.count`, 'u32', 1);
    const { text } = this.strings(name, 1);
    const words = count ? text.split('\n') : [];
    ensure(words.length === count);
    return words;
  };

  /** A value per document from a table of strings (-1: null, -2: undefined). */
  table = (name: string): (string | null | undefined)[] => {
    const codes = this.get(`${name}.codes`, 'i32', this.n);
    const values = this.list(`${name}.table`);
    return Array.from(codes, (c) => {
      ensure(c >= -2 && c < values.length);
      return c === -1 ? null : c === -2 ? undefined : values[c];
    });
  };

  /** Ends of slices of `total` entries: ascending, the last at the total. */
  ended = (ends: Uint32Array, total: number): Uint32Array => {
    ascending(ends, total);
    ensure(ends.length === 0 ? total === 0 : ends[ends.length - 1] === total);
    return ends;
  };

  /** Documents by key, every document within the index. */
  keyed = <K extends string | number>(keys: ArrayLike<K>, name: string): KeyedDocs<K> => {
    const docs = this.get(`${name}.docs`, 'i32');
    ensure(within(docs, this.n));
    return new KeyedDocs(keys, docs, this.ended(this.get(`${name}.ends`, 'u32', keys.length), docs.length));
  };
}

/** The rows, each made when first asked from the columns. */
function rowsOf(sec: Sections): RowTable {
  const { n } = sec;
  const columns = ROW_COLUMNS.map((col) => {
    const tags = sec.get(`row.${col}.tags`, 'u8', n);
    const numbers = sec.get(`row.${col}.numbers`, 'f64', n);
    let strung = 0;
    for (let d = 0; d < n; d++) {
      ensure(tags[d] <= 2);
      if (tags[d] === 2) strung++;
    }
    const { text, ends } = sec.strings(`row.${col}`, strung);
    // where each document's string is, among the column's strings
    const nth = new Int32Array(n).fill(-1);
    for (let d = 0, k = 0; d < n; d++) if (tags[d] === 2) nth[d] = k++;
    return (d: number): SqlValue => (tags[d] === 0 ? null : tags[d] === 1 ? numbers[d] : text.slice(nth[d] ? ends[nth[d] - 1] : 0, ends[nth[d]]));
  });
  const made: (Row | undefined)[] = new Array<Row | undefined>(n);
  return {
    length: n,
    at: (d) => {
      if (!(d >= 0 && d < n)) throw new RangeError(`no document ${d} in the index`);
      return (made[d] ??= Object.fromEntries(ROW_COLUMNS.map((col, k) => [col, columns[k](d)])));
    },
  };
}

function checkedParts(raw: Buffer, sha256: string): { parts: EngineParts; derived: Derived; ids: Float64Array } | undefined {
  if (raw.length < MAGIC.length + 4 || !raw.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const headLength = raw.readUInt32LE(MAGIC.length);
  ensure(MAGIC.length + 4 + headLength <= raw.length);
  const header = JSON.parse(raw.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + headLength)) as Header;
  if (header.format !== FORMAT || header.endian !== os.endianness() || header.db !== sha256) return undefined;
  const n = header.documents;
  ensure(Number.isInteger(n) && n >= 0 && n < 2 ** 28);
  ensure(Array.isArray(header.average) && header.average.length === C && header.average.every((a) => Number.isInteger(a) && a >= 0));
  const { max, count } = header.blockIds ?? {};
  ensure(Number.isFinite(max) && Number.isInteger(count) && count >= 0 && count <= n);
  // typed arrays view the bytes in place: their buffer must start on a multiple of 8
  const bytes = raw.byteOffset % 8 === 0 ? raw : Buffer.from(Uint8Array.prototype.slice.call(raw));
  const start = align(MAGIC.length + 4 + headLength);
  const byName = new Map<string, Typed>();
  ensure(Array.isArray(header.sections));
  for (const s of header.sections) {
    const Type = KINDS[s.kind];
    ensure(Type !== undefined && typeof s.name === 'string' && Number.isInteger(s.offset) && Number.isInteger(s.count));
    ensure(s.offset >= 0 && s.offset % 8 === 0 && s.count >= 0);
    const at = start + s.offset;
    ensure(at + s.count * Type.BYTES_PER_ELEMENT <= bytes.length);
    byName.set(s.name, new Type(bytes.buffer as ArrayBuffer, bytes.byteOffset + at, s.count));
  }
  const sec = new Sections(byName, n);
  const { get, strings, list, table, keyed, ended } = sec;
  const rows = rowsOf(sec);
  // the class ids, each a number, ascending (readSnapshot holds them to the database's)
  const idTags = get('row.id.tags', 'u8', n);
  const ids = get('row.id.numbers', 'f64', n);
  let unordered = false;
  for (let d = 0; d < n; d++) unordered ||= idTags[d] !== 1 || !Number.isSafeInteger(ids[d]) || (d > 0 && ids[d - 1] >= ids[d]);
  ensure(!unordered);

  const terms = list('terms');
  const at = get('postings.at', 'i32');
  let wrong = 0;
  for (let e = 0; e < at.length; e++) wrong |= (at[e] < 0 || at[e] >> 3 >= n || (at[e] & 7) >= C) as unknown as number;
  ensure(!wrong);
  const postings = { at, counts: get('postings.counts', 'u32', at.length), ends: ended(get('postings.ends', 'u32', terms.length), at.length) };

  const groupKeys = get('groups.keys', 'f64');
  const groupCounts = get('groups.counts', 'u32', groupKeys.length);
  const groupRepos = get('groups.repos', 'u32', groupKeys.length);
  const groups = new Map(Array.from(groupKeys, (g, k) => [g, { count: groupCounts[k], repos: groupRepos[k] }]));

  const named = keyed(list('named.words'), 'named');
  const owned = keyed(list('owned.words'), 'owned');
  const trigrams = keyed(get('trigrams.keys', 'f64'), 'trigrams');

  const names = strings('names', 1).text;
  // every document's name between two newlines, nothing more
  let lines = 0;
  for (let k = names.indexOf('\n'); k >= 0; k = names.indexOf('\n', k + 1)) lines++;
  ensure(names.startsWith('\n') && names.endsWith('\n') && lines === n + 1);
  const nameStarts = get('nameStarts', 'i32', n);
  // each where a name begins: just after a newline, in order
  let misplaced = false;
  for (let d = 0; d < n; d++) {
    const at = nameStarts[d];
    misplaced ||= !(at > 0 && at < names.length && names.charCodeAt(at - 1) === 10 && (d === 0 || nameStarts[d - 1] < at));
  }
  ensure(!misplaced);

  const starts = ended(get('byDocument.starts', 'u32', n + 1).subarray(1), at.length);
  const termOf = get('byDocument.terms', 'u32', at.length);
  const cellOf = get('byDocument.cells', 'u32', at.length);
  const cells = terms.length * C;
  const derived: Derived = {
    figures: { termDocs: get('figures.docs', 'u32', cells), termHits: get('figures.hits', 'u32', cells), termMost: get('figures.most', 'u32', cells) },
    byDocument: { starts: get('byDocument.starts', 'u32', n + 1), termOf, cellOf },
    nameStarts,
  };
  ensure(derived.byDocument.starts[0] === 0 && starts.length === n);

  // (a kind indexes a table of eight; a standing is added to every bound)
  const kinds = get('kinds', 'u8', n);
  const standings = get('standings', 'f64', n);
  let odd = false;
  for (let d = 0; d < n; d++) odd ||= kinds[d] > 7 || !Number.isFinite(standings[d]);
  ensure(!odd);
  const isBlock = get('isBlock', 'u8', n);
  let blocks = 0;
  for (let d = 0; d < n; d++) blocks += isBlock[d] ? 1 : 0;
  ensure(blocks === count);
  const parts: EngineParts = {
    rows,
    isBlock,
    abstract: get('abstract', 'u8', n),
    validation: table('validation'),
    category: table('category').map((v) => String(v)),
    repo: table('repo').map((v) => String(v)),
    lengths: get('lengths', 'u32', n * C),
    average: Uint32Array.from(header.average),
    terms,
    postings,
    groups,
    standings,
    kinds,
    named,
    owned,
    names,
    trigrams,
    vocabulary: list('vocabulary'),
    modules: list('modules'),
    blockIds: { max, count },
  };
  return { parts, derived, ids };
}

/** Whether every value of `values` is at least 0 and below `limit`. */
function within(values: Int32Array | Uint32Array, limit: number): boolean {
  let wrong = false;
  for (let k = 0; k < values.length; k++) wrong ||= values[k] < 0 || values[k] >= limit;
  return !wrong;
}

function ascending(ends: Uint32Array, limit: number): void {
  let wrong = ends.length > 0 && ends[ends.length - 1] > limit;
  for (let k = 1; k < ends.length; k++) wrong ||= ends[k - 1] > ends[k];
  ensure(!wrong);
}
