/**
 * The units cache's file format: a pull's detail of one module (see unitsCache.ts) as unsigned LEB128 varints, with
 * every name written once in a string table.
 *
 * Not JSON: an object per reference repeats its keys, and building, deflating and writing that text would be the
 * largest part of a parse worker's time after the tree copy and the facts. This format is about a fifth of the JSON's
 * size before any compression, and reading it back makes no text.
 *
 * Layout: the magic `NNU2`; the string table (count, the UTF-16 length of each, then all of them as one UTF-8 run);
 * the unit count; per unit its references, binding sites, string literals and class body (0, or 1 + its statement
 * count and its methods); then the import ranges. Offsets within
 * a unit are written as differences from the one before (zigzag, since an order in the source is not promised).
 */
import type { BindSite, ClassBody, ParsedModule, Ref, StringRef } from '../parse/types';

/** What the units cache keeps of a parsed module beyond its facts (by blob id). */
export type UnitDetail = Pick<ParsedModule, 'refs' | 'bindSites' | 'strings' | 'importRanges' | 'bodies'>;

const MAGIC = [0x4e, 0x4e, 0x55, 0x32]; // NNU2

/** Names the cache folder with the parser version, so entries of another format are never opened, only pruned. */
export const UNITS_FORMAT = 'nnu2';

class Writer {
  private buf = new Uint8Array(1 << 16);
  private pos = 0;
  private readonly strings = new Map<string, number>();
  private readonly table: string[] = [];

  bytes(values: readonly number[]): void {
    for (const v of values) this.byte(v);
  }

  private byte(v: number): void {
    if (this.pos === this.buf.length) {
      const grown = new Uint8Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf[this.pos++] = v;
  }

  uint(v: number): void {
    // offsets and counts: non-negative integers far below 2^53 (anything else is a bug: no entry is written)
    if (!Number.isSafeInteger(v) || v < 0) throw new Error(`units entry: ${v} is not a count or an offset`);
    while (v >= 0x80) {
      this.byte((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(v);
  }

  int(v: number): void {
    this.uint(v < 0 ? -2 * v - 1 : 2 * v);
  }

  /** A named range of a unit (a reference's name, a binding site), its start told from `at`'s; returns its start. */
  site(name: string, start: number, end: number, at: number): number {
    this.string(name);
    this.int(start - at);
    this.uint(end - start);
    return start;
  }

  string(s: string): void {
    let i = this.strings.get(s);
    if (i === undefined) {
      i = this.table.length;
      this.strings.set(s, i);
      this.table.push(s);
    }
    this.uint(i);
  }

  /** The string table, then everything written so far. */
  finish(): Uint8Array {
    const head = new Writer();
    head.bytes(MAGIC);
    head.uint(this.table.length);
    for (const s of this.table) head.uint(s.length);
    const text = Buffer.from(this.table.join(''), 'utf8');
    head.uint(text.length);
    const out = new Uint8Array(head.pos + text.length + this.pos);
    out.set(head.buf.subarray(0, head.pos));
    out.set(text, head.pos);
    out.set(this.buf.subarray(0, this.pos), head.pos + text.length);
    return out;
  }
}

export function encodeUnits(detail: UnitDetail): Uint8Array {
  const w = new Writer();
  const units = detail.refs.length;
  w.uint(units);
  for (let u = 0; u < units; u++) {
    let at = 0;
    const refs = detail.refs[u];
    w.uint(refs.length);
    for (const r of refs) {
      at = w.site(r.name, r.start, r.end, at);
      w.uint(r.attrs.length * 2 + (r.timing === 'call' ? 1 : 0));
      let end = r.end;
      for (let i = 0; i < r.attrs.length; i++) {
        w.string(r.attrs[i]);
        w.uint(r.attrEnds[i] - end);
        end = r.attrEnds[i];
      }
    }
    at = 0;
    const binds = detail.bindSites[u];
    w.uint(binds.length);
    for (const b of binds) at = w.site(b.name, b.start, b.end, at);
    const strings = detail.strings[u];
    w.uint(strings.length);
    at = 0;
    for (const s of strings) {
      w.string(s.value);
      w.uint(s.timing === 'call' ? 1 : 0);
      w.int(s.at - at);
      at = s.at;
    }
    const body = detail.bodies[u];
    w.uint(body ? body.statements + 1 : 0);
    if (body) {
      w.uint(body.methods.length);
      at = 0;
      for (const m of body.methods) at = w.site(m.name, m.start, m.end, at);
    }
  }
  w.uint(detail.importRanges.length);
  for (const r of detail.importRanges) {
    w.uint(r.unit);
    w.uint(r.start);
    w.uint(r.end - r.start);
    w.uint(r.imports.length);
    for (const i of r.imports) w.uint(i);
  }
  return w.finish();
}

class Reader {
  private pos = 0;
  private table: string[] = [];

  constructor(private readonly buf: Uint8Array) {}

  uint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('units entry: truncated');
      const b = this.buf[this.pos++];
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 0x80;
      if (scale > 2 ** 49) throw new Error('units entry: varint too long');
    }
  }

  int(): number {
    const z = this.uint();
    return z % 2 ? -(z + 1) / 2 : z / 2;
  }

  /** What `Writer.site` wrote, after a range that started at `at`. */
  site(at: number): BindSite {
    const name = this.string();
    const start = at + this.int();
    return { name, start, end: start + this.uint() };
  }

  /** A count of items each at least one byte long: never more than the bytes left (a damaged entry allocates little). */
  count(n = this.uint()): number {
    if (n > this.buf.length - this.pos) throw new Error('units entry: count past its end');
    return n;
  }

  string(): string {
    const i = this.uint();
    if (i >= this.table.length) throw new Error('units entry: no such string');
    return this.table[i];
  }

  header(): void {
    for (const b of MAGIC) if (this.buf[this.pos++] !== b) throw new Error('units entry: not this format');
    const lengths: number[] = [];
    for (let n = this.count(); n > 0; n--) lengths.push(this.uint());
    const size = this.count();
    const text = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, size).toString('utf8');
    this.pos += size;
    let at = 0;
    for (const len of lengths) {
      if (at + len > text.length) throw new Error('units entry: string table past its end');
      this.table.push(text.slice(at, at + len));
      at += len;
    }
    if (at !== text.length) throw new Error('units entry: string table does not add up');
  }

  done(): boolean {
    return this.pos === this.buf.length;
  }
}

/** The detail in `bytes`; throws when they are not a whole entry of this format. */
export function decodeUnits(bytes: Uint8Array): UnitDetail {
  const r = new Reader(bytes);
  r.header();
  const units = r.count();
  const detail: UnitDetail = { refs: [], bindSites: [], strings: [], importRanges: [], bodies: [] };
  for (let u = 0; u < units; u++) {
    const refs: Ref[] = [];
    let at = 0;
    for (let n = r.count(); n > 0; n--) {
      const { name, start, end } = r.site(at);
      at = start;
      const head = r.uint();
      const attrs: string[] = [];
      const attrEnds: number[] = [];
      let last = end;
      for (let i = r.count(Math.floor(head / 2)); i > 0; i--) {
        attrs.push(r.string());
        last += r.uint();
        attrEnds.push(last);
      }
      refs.push({ name, start, end, timing: head % 2 ? 'call' : 'def', attrs, attrEnds });
    }
    const binds: BindSite[] = [];
    at = 0;
    for (let n = r.count(); n > 0; n--) {
      const site = r.site(at);
      binds.push(site);
      at = site.start;
    }
    const strings: StringRef[] = [];
    at = 0;
    for (let n = r.count(); n > 0; n--) {
      const value = r.string();
      const timing = r.uint() ? 'call' : 'def';
      at += r.int();
      strings.push({ value, timing, at });
    }
    let body: ClassBody | null = null;
    const bodyHead = r.uint();
    if (bodyHead) {
      body = { statements: bodyHead - 1, methods: [] };
      at = 0;
      for (let n = r.count(); n > 0; n--) {
        const m = r.site(at);
        body.methods.push(m);
        at = m.start;
      }
    }
    detail.refs.push(refs);
    detail.bindSites.push(binds);
    detail.strings.push(strings);
    detail.bodies.push(body);
  }
  for (let n = r.count(); n > 0; n--) {
    const unit = r.uint();
    const start = r.uint();
    const end = start + r.uint();
    const imports: number[] = [];
    for (let k = r.count(); k > 0; k--) imports.push(r.uint());
    detail.importRanges.push({ unit, start, end, imports });
  }
  if (!r.done()) throw new Error('units entry: bytes after its end');
  return detail;
}
