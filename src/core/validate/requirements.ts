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
