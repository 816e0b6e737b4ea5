/**
 * Recognises a repository's license from its LICENSE text as an SPDX id: the text's words against the SPDX license
 * texts (spdx-license-list), by the Sørensen–Dice coefficient of the two word sets, as licensee does. Copyright
 * lines and addresses are left out of both sides. Texts that say the same (`GPL-2.0-only`, `GPL-2.0-or-later`,
 * `GPL-2.0+`; the choice is made in a file's header, not in the license) are reported by their shortest id.
 */
import SPDX from 'spdx-license-list/full';
import licenseSet from './licenseSet.json';

/** Below this similarity to every known text, a license is not named. */
const THRESHOLD = 0.85;

export function isKnownLicense(id: string, osiApproved: boolean): boolean {
  return osiApproved || licenseSet.families.some((f) => id === f || id.startsWith(f));
}

function words(text: string): Set<string> {
  const kept = text
    .toLowerCase()
    .replace(/^.*copyright\s+(?:\(c\)|©|\d{4}|<year>|\[yyyy\]).*$/gm, ' ')
    .replace(/https?:\/\/\S+|<[^<>\s]+@[^<>\s]+>/g, ' ');
  return new Set(kept.match(/[a-z0-9]+(?:'[a-z]+)?/g) ?? []);
}

interface Known {
  id: string;
  words: Set<string>;
}

let known: Known[] | undefined;

/** The known texts' word sets, made on first use; a Lesser GPL's own part counts alone too (COPYING.LESSER). */
function knownTexts(): Known[] {
  if (known) return known;
  known = [];
  for (const [id, entry] of Object.entries(SPDX)) {
    if (!isKnownLicense(id, entry.osiApproved) || !entry.licenseText) continue;
    known.push({ id, words: words(entry.licenseText) });
    const gpl = entry.licenseText.search(/\n\s*GNU GENERAL PUBLIC LICENSE\s*\n\s*Version \d/);
    if (gpl > 1000) known.push({ id, words: words(entry.licenseText.slice(0, gpl)) });
  }
  return known;
}

function dice(a: Set<string>, b: Set<string>): number {
  let common = 0;
  for (const w of a) if (b.has(w)) common++;
  return (2 * common) / Math.max(1, a.size + b.size);
}

/** The SPDX id of a license text, or undefined when it is like none of the known texts. */
export function detectLicense(text: string): string | undefined {
  const w = words(text);
  if (w.size < 10) return undefined;
  // per license, without the `-only`/`-or-later`/`+` a file's header chooses
  const scores = new Map<string, number>();
  for (const k of knownTexts()) {
    const id = k.id.replace(/(?:-only|-or-later|\+)$/, '');
    scores.set(id, Math.max(scores.get(id) ?? 0, dice(w, k.words)));
  }
  let best: string | undefined;
  let top = THRESHOLD;
  for (const [id, score] of scores) {
    // equal texts (MPL-2.0 and MPL-2.0-no-copyleft-exception): the shorter id
    if (score > top + 1e-9 || (best && Math.abs(score - top) <= 1e-9 && id.length < best.length)) {
      best = id;
      top = score;
    }
  }
  return best;
}

export const LICENSE_FILES = ['LICENSE', 'LICENSE.txt', 'LICENSE.md', 'LICENCE', 'COPYING', 'LICENSE.rst'];
