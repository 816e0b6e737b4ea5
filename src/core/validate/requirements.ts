/** Requirements a pulled file can be installed with: PEP 440 specifiers (@renovatebot/pep440) for what it imports. */
import { oneLine } from '../base/text';
import { parse as parseToml } from 'smol-toml';
import { explain } from '@renovatebot/pep440';
import type { Requirement } from './runner';

/**
 * The PEP 440 specifier a requirement is written with: the compatible release of the installed version without its
 * local label (`1.13.0a0+gitunknown` -> `~=1.13.0a0`: 1.13.0 and 1.13.1 satisfy it, 1.14 does not; a local label names
 * a build no index serves). A version PEP 440 cannot read is left out (any version).
 */
export function requirementSpecifier(version: string): string {
  const v = explain(version);
  if (!v) return '';
  return v.release.length >= 2 ? `~=${v.public}` : `>=${v.public}`;
}

/** `requirements.txt` lines for the distributions a pulled file imports. */
export function requirementsText(reqs: Requirement[] | undefined, modules: string[]): string {
  const lines = new Set<string>();
  const known = new Map((reqs ?? []).map((r) => [r.module, r]));
  for (const m of modules) {
    const r = known.get(m);
    if (r?.distribution && r.version) lines.add(`${r.distribution}${requirementSpecifier(r.version)}`);
    else lines.add(`${m}  # not installed in the validating interpreter`);
  }
  return [...lines].sort().join('\n') + (lines.size ? '\n' : '');
}

/**
 * PEP 723 inline script metadata for a pulled file: its dependencies as the validating interpreter has them
 * installed (PEP 440 specifiers), the modules it could not place as a comment.
 */
export function inlineMetadata(reqs: Requirement[] | undefined, modules: string[]): string {
  const known = new Map((reqs ?? []).map((r) => [r.module, r]));
  const deps = new Set<string>();
  const unknown: string[] = [];
  for (const m of modules) {
    const r = known.get(m);
    if (r?.distribution && r.version) deps.add(`${r.distribution}${requirementSpecifier(r.version)}`);
    else unknown.push(m);
  }
  return [
    '# /// script',
    '# dependencies = [',
    ...[...deps].sort().map((d) => `#   ${oneLine(JSON.stringify(d))},`),
    ...(unknown.length ? [`#   # not installed in the validating interpreter: ${oneLine(unknown.sort().join(', '))}`] : []),
    '# ]',
    '# ///',
  ].join('\n');
}

/** PEP 503's normal form of a distribution name (`Foo_Bar.baz` -> `foo-bar-baz`). */
function normalName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** The distribution a requirements line names, if it names one (`torch>=2.1 ; python_version>"3.8"` -> `torch`). */
function lineName(line: string): string | undefined {
  const t = line.trim();
  if (!t || t.startsWith('#') || t.startsWith('-')) return undefined;
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(t);
  return m ? normalName(m[1]) : undefined;
}

/**
 * `adding` (what `requirementsText` gives for a block) merged into a project's requirements file: a distribution the
 * file already names keeps the user's line (their pin wins), the others are appended; a module the interpreter did not
 * have is appended as a comment once. Returns the new text and the lines added.
 */
export function mergeRequirements(existing: string, adding: string): { text: string; added: string[] } {
  const have = new Set(
    existing
      .split('\n')
      .map(lineName)
      .filter((n): n is string => !!n),
  );
  const lines = new Set(existing.split('\n').map((l) => l.trim()));
  const added: string[] = [];
  for (const raw of adding.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const name = lineName(line);
    if (name && have.has(name)) continue;
    // a module no distribution was found for: kept as a comment the user sees
    const entry = name && line.includes('# not installed') ? `# ${line}` : line;
    if (lines.has(entry)) continue;
    added.push(entry);
    lines.add(entry);
    if (name && !entry.startsWith('#')) have.add(name);
  }
  const base = existing.length && !existing.endsWith('\n') ? `${existing}\n` : existing;
  return { text: added.length ? `${base}${added.join('\n')}\n` : existing, added };
}

/** Where the `dependencies` array of `[project]` ends (its `]`), scanning strings and comments as TOML does. */
function arrayEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '"' || c === "'") {
      const triple = text.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      i += close.length;
      while (i < text.length && !text.startsWith(close, i)) i += c === '"' && text[i] === '\\' ? 2 : 1;
      i += close.length - 1;
    } else if (c === ']') {
      return i;
    }
  }
  return -1;
}

/**
 * `adding` (what `requirementsText` gives) merged into a `pyproject.toml`'s `[project] dependencies`, the rest of the
 * file untouched: a distribution it names keeps the user's entry; a module no distribution was found for becomes a
 * comment in the array. A file without a `[project]` table (Poetry, Hatch-only, not TOML) is not changed: `problem`
 * says why.
 */
export function mergePyproject(existing: string, adding: string): { text: string; added: string[] } | { problem: string } {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(existing) as Record<string, unknown>;
  } catch (err) {
    return { problem: `pyproject.toml is not valid TOML (${err instanceof Error ? err.message.split('\n')[0] : String(err)})` };
  }
  const project = doc.project as { dependencies?: unknown } | undefined;
  if (!project || typeof project !== 'object')
    return { problem: "pyproject.toml has no [project] table (a Poetry or other tool's layout): add the requirements there yourself" };
  const deps = project.dependencies;
  if (deps !== undefined && (!Array.isArray(deps) || deps.some((d) => typeof d !== 'string')))
    return { problem: "pyproject.toml's [project] dependencies is not a list of strings" };
  // (a module without a distribution is a comment in the array: there already when its line is)
  const added = mergeRequirements(((deps as string[] | undefined) ?? []).join('\n'), adding).added.filter((a) => !(a.startsWith('#') && existing.includes(a)));
  if (!added.length) return { text: existing, added };
  const entries = added.map((a) => (a.startsWith('#') ? a : JSON.stringify(a)));
  // the [project] header, and the array in its table (before the next table's header)
  const header = /^\[project\][ \t]*(#.*)?$/m.exec(existing);
  if (!header) return { problem: 'pyproject.toml defines [project] in a way NN-RAG does not edit (a dotted or inline table): add the requirements yourself' };
  const tableStart = header.index + header[0].length;
  const nextTable = /^\[/m.exec(existing.slice(tableStart));
  const tableEnd = nextTable ? tableStart + nextTable.index : existing.length;
  const key = /^dependencies[ \t]*=[ \t]*\[/m.exec(existing.slice(tableStart, tableEnd));
  let text: string;
  if (!key) {
    const lines = entries.map((e) => `    ${e}${e.startsWith('#') ? '' : ','}`).join('\n');
    text = `${existing.slice(0, tableStart)}\ndependencies = [\n${lines}\n]${existing.slice(tableStart)}`;
  } else {
    const open = tableStart + key.index + key[0].length - 1;
    const close = arrayEnd(existing, open);
    if (close < 0) return { problem: "pyproject.toml's dependencies array has no end" };
    const inside = existing.slice(open + 1, close);
    const multiline = inside.includes('\n');
    const body = inside.replace(/\s+$/, '');
    // a comma after the last entry, if the user did not leave one (comments after it are kept in place)
    const lastValue = body.replace(/#[^\n]*$/gm, '').trimEnd();
    const comma = lastValue && !lastValue.endsWith(',') && !lastValue.endsWith('[') ? ',' : '';
    const withComma = comma ? body.replace(/(["'])([ \t]*(#[^\n]*)?)$/, `$1${comma}$2`) : body;
    if (multiline || entries.some((e) => e.startsWith('#'))) {
      const indent = /\n([ \t]+)\S/.exec(inside)?.[1] ?? '    ';
      text = `${existing.slice(0, open + 1)}${withComma}${entries.map((e) => `\n${indent}${e}${e.startsWith('#') ? '' : ','}`).join('')}\n${existing.slice(close)}`;
    } else {
      text = `${existing.slice(0, open + 1)}${withComma}${withComma.trim() ? ' ' : ''}${entries.join(', ')}${existing.slice(close)}`;
    }
  }
  // what was written reads back as the user's list plus what was added
  try {
    const after = ((parseToml(text) as { project?: { dependencies?: string[] } }).project?.dependencies ?? []).join('\n');
    const want = [...((deps as string[] | undefined) ?? []), ...added.filter((a) => !a.startsWith('#'))].join('\n');
    if (after !== want) return { problem: 'pyproject.toml is laid out in a way NN-RAG could not edit safely: add the requirements yourself' };
  } catch {
    return { problem: 'pyproject.toml is laid out in a way NN-RAG could not edit safely: add the requirements yourself' };
  }
  return { text, added };
}
