/**
 * The pulled file's format: the header (the source lines, the provenance record, PEP 723 inline metadata) and the
 * body, whose hash tells whether the user edited it. Read by every front (hovers, CodeLens, status, update).
 */
import { createHash } from 'crypto';
import { NnragError } from '../base/errors';
import { oneLine } from '../base/text';
import { redactUrls } from '../sources/git';

export interface ProvenanceEntry {
  names: string[];
  module: string;
  repo: string;
  path: string;
  lines: [number, number];
  /** The git blob id of the whole source file (`git hash-object`). */
  blob: string;
  /** Software Heritage id of that file: `swh:1:cnt:<blob>`. Absent in files pulled before it was recorded. */
  swhid?: string;
  url?: string | null;
  commit?: string | null;
  /** Its file differs from its blob at `commit`: code with changes not committed (the blob is the file's own). */
  uncommitted?: boolean;
  /** A digest of the definition's own source text (`files.definitionDigest`): upstream changes are told apart by
   * definition, not by file. Absent in files pulled before it was recorded. */
  digest?: string;
  /** SPDX id from the repository's LICENSE file or package metadata. */
  license?: string | null;
}

export interface Provenance {
  version: 1;
  target: string;
  block: string;
  repo: string;
  url: string | null;
  commit: string | null;
  /** Some of the block's own code is not in `commit` (a checkout with changes not committed). */
  uncommitted?: boolean;
  license: string | null;
  /** sha256 of everything below the header. */
  hash: string;
  pulledAt: string;
  definitions: ProvenanceEntry[];
  /** Third-party top-level modules the file imports. */
  imports: string[];
  /** Renamed names: original `module.name` -> name in this file. */
  renamed: Record<string, string>;
  /** Definitions this file imports from a module of helpers shared with blocks pulled beside it (see shared.ts). */
  shared?: { module: string; ids: string[]; names: string[] };
  /** Filled in after validation. */
  validation?: {
    status: string;
    tier: string | null;
    category?: string;
    args?: unknown[];
    kwargs?: Record<string, unknown>;
    input_shapes?: unknown[];
    output_shapes?: unknown;
    builder?: string;
    /** The repository's own code (a test) whose call built and fed the block. */
    observed?: string;
    /** Why it failed, its first line. */
    message?: string;
    /** A block that ran but was not compared with its original: why not, its first line. */
    notCompared?: string;
    /** The hash of the body judged (`bodyHash`), when not the body as pulled (a validation after an edit). */
    body?: string;
  };
  /**
   * The arguments the repository's builder (`builder`, module-qualified) gave the block when no guessed argument set
   * builds it alone: `nn-rag validate`, Update and the editor build the file's block with them again.
   */
  builtWith?: { builder: string; args: unknown[]; kwargs: Record<string, unknown> };
}

export const PROVENANCE_PREFIX = '# nnrag-provenance: ';

/**
 * A value (a repository's name, URL, license, commit, a path, a name from indexed code) as text of one header comment
 * line: no character of it can end the line (each is written as `\uXXXX`), and a URL loses its user info and query.
 */
export function headerText(value: string): string {
  return oneLine(redactUrls(value));
}

/** The provenance record's line: JSON with every character that some reader takes for a line end escaped. */
export function provenanceLine(prov: Provenance): string {
  // (JSON already escapes the controls below U+0020)
  return `${PROVENANCE_PREFIX}${oneLine(JSON.stringify(prov))}`;
}

/**
 * The argument sets a pulled file is judged with again (`nn-rag validate`, Update, the editor): those its header
 * records the repository's builder gave the block, when no guessed set builds it alone.
 */
export function recordedArguments(prov: Provenance | undefined): { args: unknown[]; kwargs: Record<string, unknown> }[] | undefined {
  const b = prov?.builtWith;
  return b && Array.isArray(b.args) && b.kwargs && typeof b.kwargs === 'object' ? [{ args: b.args, kwargs: b.kwargs }] : undefined;
}

/** The header's account of where the definitions come from: one line per source file, wrapped at 118 columns. */
export function sourceLines(definitions: ProvenanceEntry[]): string[] {
  const files = new Map<string, ProvenanceEntry[]>();
  for (const d of definitions) {
    const key = `${d.repo} ${d.path} ${d.blob}`;
    files.set(key, [...(files.get(key) ?? []), d]);
  }
  const out: string[] = [];
  for (const list of files.values()) {
    const { repo, path: file, blob } = list[0];
    const span = (d: ProvenanceEntry): string => (d.lines[0] === d.lines[1] ? `${d.lines[0]}` : `${d.lines[0]}-${d.lines[1]}`);
    const named = list.filter((d) => d.names.length).map((d) => `${headerText(d.names.join(', '))} ${span(d)}`);
    const statements = list.filter((d) => !d.names.length);
    if (statements.length) {
      // consecutive lines as one range (`11 statements (11-21)`)
      const ranges: [number, number][] = [];
      for (const d of [...statements].sort((a, b) => a.lines[0] - b.lines[0])) {
        const last = ranges[ranges.length - 1];
        if (last && d.lines[0] <= last[1] + 1) last[1] = Math.max(last[1], d.lines[1]);
        else ranges.push([d.lines[0], d.lines[1]]);
      }
      const text = ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
      named.push(`${statements.length === 1 ? 'a statement' : `${statements.length} statements`} (${text})`);
    }
    let line = `#   ${headerText(repo)} ${headerText(file)} (${headerText(blob.slice(0, 12))}):`;
    for (const [i, item] of named.entries()) {
      const piece = ` ${item}${i < named.length - 1 ? ';' : ''}`;
      if (line.length + piece.length > 118 && !line.endsWith(':')) {
        out.push(line);
        line = '#     ';
      }
      line += piece;
    }
    out.push(line);
  }
  return out;
}

/** Reads the provenance record back from a pulled file's text, if it has one that is whole. */
export function readProvenance(text: string): Provenance | undefined {
  return parseProvenance(text).provenance;
}

/**
 * The provenance record of a pulled file: `provenance` when it is whole, `damaged` (why) when a record is there but
 * cannot be trusted (not JSON, or fields of the wrong kind: edited or cut by hand), neither when there is none.
 */
export function parseProvenance(text: string): { provenance?: Provenance; damaged?: string } {
  // in the header: the comment lines the file starts with (one per source file, so a large pull's runs long)
  let line: string | undefined;
  for (let at = 0; at < text.length;) {
    const end = text.indexOf('\n', at);
    const l = text.slice(at, end < 0 ? text.length : end);
    if (l.startsWith(PROVENANCE_PREFIX)) {
      line = l;
      break;
    }
    if (!l.startsWith('#') || end < 0) break;
    at = end + 1;
  }
  if (!line) return {};
  let record: unknown;
  try {
    record = JSON.parse(line.slice(PROVENANCE_PREFIX.length));
  } catch {
    return { damaged: 'the provenance record is not valid JSON' };
  }
  const damaged = provenanceProblem(record);
  return damaged ? { damaged } : { provenance: record as Provenance };
}

const isText = (v: unknown): v is string => typeof v === 'string';
const isTextOrNull = (v: unknown): boolean => v === null || v === undefined || typeof v === 'string';

/** What is wrong with a provenance record read from a file (undefined when nothing). */
function provenanceProblem(r: unknown): string | undefined {
  if (!r || typeof r !== 'object' || Array.isArray(r)) return 'the provenance record is not an object';
  const p = r as Record<string, unknown>;
  if (p.version !== 1) return `unknown provenance version ${JSON.stringify(p.version)}`;
  for (const key of ['target', 'block', 'repo', 'pulledAt'] as const) if (!isText(p[key]) || !p[key]) return `the provenance record has no ${key}`;
  if (!isText(p.hash) || !/^sha256:[0-9a-f]{64}$/.test(p.hash)) return 'the provenance record has no content hash';
  for (const key of ['url', 'commit', 'license'] as const) if (!isTextOrNull(p[key])) return `the provenance record's ${key} is not text`;
  if (!Array.isArray(p.definitions) || p.definitions.length === 0) return 'the provenance record lists no definitions';
  for (const d of p.definitions as unknown[]) {
    const e = d as Record<string, unknown> | null;
    if (!e || typeof e !== 'object') return 'a provenance definition is not an object';
    if (!Array.isArray(e.names) || !e.names.every(isText)) return 'a provenance definition has no names';
    if (!isText(e.repo) || !isText(e.path) || !isText(e.module)) return 'a provenance definition has no repository, path or module';
    if (!isText(e.blob) || !/^[0-9a-f]{40}$/.test(e.blob)) return 'a provenance definition has no git blob id';
    if (!Array.isArray(e.lines) || e.lines.length !== 2 || !e.lines.every((n) => Number.isInteger(n))) return 'a provenance definition has no lines';
  }
  if (!Array.isArray(p.imports) || !p.imports.every(isText)) return 'the provenance record has no imports list';
  if (!p.renamed || typeof p.renamed !== 'object' || Array.isArray(p.renamed) || !Object.values(p.renamed).every(isText))
    return 'the provenance record has no renames';
  return undefined;
}

/** The file's text with its provenance record replaced (the body, and so its hash, stay as they are). */
export function replaceProvenance(text: string, prov: Provenance): string {
  const start = text.indexOf(PROVENANCE_PREFIX);
  if (start < 0) return text;
  const end = text.indexOf('\n', start);
  return `${text.slice(0, start)}${provenanceLine(prov)}${text.slice(end)}`;
}

/** The lines tools read as the start or end of a PEP 723 block (`# /// script`, `# ///`), at column 0. */
const MARKER = /^# \/\/\/(?: [A-Za-z0-9-]+)?$/gm;

/**
 * Indexed code with tool-read markers indented by one space (`#  /// script`): a repository cannot put a PEP 723
 * block (dependencies for `uv run`) into a pulled file; only the header the tool writes holds one.
 */
export function withoutMarkers(text: string): string {
  return text.replace(MARKER, (m) => `#  ${m.slice(2)}`);
}

/** The file's text with `block` (PEP 723 inline metadata) in its header after the coding line, replacing one there.
 * Refuses a text that would hold a second block. */
export function withInlineMetadata(text: string, block: string): string {
  const { header, body } = splitPulled(text);
  const lines = header.split('\n');
  const start = lines.indexOf('# /// script');
  if (start >= 0) lines.splice(start, lines.indexOf('# ///', start) - start + 1);
  lines.splice(1, 0, ...block.split('\n'));
  const out = `${lines.join('\n')}${body}`;
  const opened = out.match(/^# \/\/\/ [A-Za-z0-9-]+$/gm) ?? [];
  if (opened.length !== 1) throw new NnragError('internal', `the pulled file would hold ${opened.length} inline metadata blocks; none written`);
  return out;
}

/** A pulled file's header (through the blank line after the provenance record) and body. */
export function splitPulled(text: string): { header: string; body: string } {
  const idx = text.indexOf('\n', text.indexOf(PROVENANCE_PREFIX));
  return { header: text.slice(0, idx + 2), body: text.slice(idx + 2) };
}

/** The source encoding a file declares in its first two lines (PEP 263), lower-cased; undefined when none. */
export function declaredEncoding(text: string): string | undefined {
  for (const line of text.split('\n', 2)) {
    const m = /^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)/.exec(line);
    if (m) return m[1].toLowerCase();
  }
  return undefined;
}

/**
 * sha256 of a pulled file's body, to tell whether the user edited it since the pull. The header's encoding line is in
 * it too when it declares anything but UTF-8 (a `unicode_escape` line turns the same bytes into other code), so such
 * a file never reads as up to date.
 */
export function bodyHash(text: string): string {
  const encoding = declaredEncoding(text);
  const other = encoding !== undefined && !/^utf[-_]?8$/.test(encoding) ? `coding: ${encoding}\n` : '';
  return `sha256:${createHash('sha256').update(other).update(splitPulled(text).body).digest('hex')}`;
}
