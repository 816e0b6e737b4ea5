/** Requirements a pulled file can be installed with: PEP 440 specifiers (@renovatebot/pep440) for what it imports. */
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
    ...[...deps].sort().map((d) => `#   ${JSON.stringify(d)},`),
    ...(unknown.length ? [`#   # not installed in the validating interpreter: ${unknown.sort().join(', ')}`] : []),
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
  const have = new Set(existing.split('\n').map(lineName).filter((n): n is string => !!n));
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
