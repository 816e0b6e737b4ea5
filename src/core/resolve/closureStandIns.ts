/**
 * Type-only stand-ins: a class the file only tests objects against (`isinstance(x, C)`), or a value it only names in
 * annotations, becomes an empty stand-in, and what it needed may go with it; a pass learns which (`learnTypeOnly`),
 * and closure.ts walks again until a pass learns nothing.
 */
import type { ModuleRecord } from './moduleTable';
import type { ClosureContext, UnitNode } from './closureTypes';

/** What learning the type-only stand-ins needs of a walk (closureWalk.ts). */
export interface TypeOnlyWalk {
  readonly units: ReadonlyMap<string, UnitNode>;
  readonly uses: ReadonlyMap<string, Set<Use>>;
  readonly rootUnits: ReadonlySet<string>;
  readonly rootRec: ModuleRecord;
  readonly ctx: ClosureContext;
  readonly typeOnly: TypeOnly;
}

/** How a name is used: only tested against (`isinstance`), only named in an annotation, or anything else. */
export type Use = 'isinstance' | 'annotation' | 'other';

/**
 * How the name at `start..end` is used: tested against (the second argument of isinstance or issubclass, the right
 * of a membership test `x.__class__ in NAME`), named in a `def`'s parameter or return annotation, or otherwise
 * (a call, a default value, a loop over it, anything else).
 */
export function useAt(text: string, start: number, end: number): Use {
  const before = text.slice(Math.max(0, start - 400), start);
  const after = text.slice(end, end + 40);
  if (/\b(?:isinstance|issubclass)\s*\([^()]*,\s*\(?\s*(?:[\w.]+\s*,\s*)*$/.test(before)) return /^\s*[,)]/.test(after) ? 'isinstance' : 'other';
  const line = before.slice(before.lastIndexOf('\n') + 1);
  if (/\bin\s*$/.test(line) && !/\bfor\b/.test(line) && /^\s*(?:[):\],]|$|\n|\bfor\b|\bif\b|\band\b|\bor\b)/.test(after)) return 'isinstance';
  if (/->[^:\n]*$/.test(line)) return 'annotation';
  // inside the parameters of a def: in the current parameter, after its `:` and before any `=`
  const last = [...before.matchAll(/\bdef\s+\w+\s*\(/g)].pop();
  if (!last) return 'other';
  let depth = 0;
  let param = '';
  for (const ch of before.slice((last.index ?? 0) + last[0].length)) {
    if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) depth--;
    if (depth < 0) return 'other'; // the parameters closed: the body
    param = depth === 0 && ch === ',' ? '' : param + (depth === 0 ? ch : ' ');
  }
  return /^[^=]*:[^=]*$/.test(param) ? 'annotation' : 'other';
}

/** What a closure pass learnt for the next: names only tested against or named in annotations. */
export interface TypeOnly {
  /** Classes only tested against, and values only named in annotations: empty stand-ins. */
  stubbed: Set<string>;
  /** Values only tested against (`PROCESSORS = (A, B)`): the names in them are only tested against too. */
  aliases: Set<string>;
}

/** The stand-in written for a unit only tested against (a class) or only named in annotations (a value). */
export function typeOnlyStandIn(rec: ModuleRecord, kind: string, name: string): string {
  return kind === 'class'
    ? `class ${name}:\n    """A stand-in written by NN-RAG for ${rec.module}.${name}: this file only tests objects against it, and makes none."""\n`
    : `${name} = object  # a stand-in written by NN-RAG for ${rec.module}.${name}: this file only names it in annotations\n`;
}

/** What a pass learnt: classes only tested against, values only in annotations, values only tested against. */
export function learnTypeOnly(walk: TypeOnlyWalk): boolean {
  let learnt = false;
  for (const n of walk.units.values()) {
    const seen = walk.uses.get(n.key);
    const u = n.rec.facts.units[n.unit];
    if (!seen || seen.has('other') || walk.rootUnits.has(n.key) || n.replacement || walk.typeOnly.stubbed.has(n.key) || u.binds.length !== 1) continue;
    if (n.rec.repoId !== walk.rootRec.repoId && !walk.ctx.inlines(n.rec, walk.rootRec.repoId)) continue;
    if (u.kind === 'class' || (u.kind === 'assign' && !seen.has('isinstance'))) {
      walk.typeOnly.stubbed.add(n.key);
      learnt = true;
    } else if (u.kind === 'assign' && !walk.typeOnly.aliases.has(n.key)) {
      walk.typeOnly.aliases.add(n.key);
      learnt = true;
    }
  }
  return learnt;
}
