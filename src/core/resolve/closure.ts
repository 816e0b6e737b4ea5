/**
 * The dependency closure of a block: every module-level statement it needs, transitively, each name
 * resolved the way Python would; third-party names become imports; string registries count as references.
 * A pass is a walk (closureWalk.ts) with its registrations settled (closureRegistrations.ts); passes repeat while
 * the type-only stand-ins (closureStandIns.ts) learn something.
 */
import type { ModuleRecord } from './moduleTable';
import type { ClosureContext, ClosureResult, ExtraRoot } from './closureTypes';
import { ClosureWalk } from './closureWalk';
import { settleRegistrations } from './closureRegistrations';
import { learnTypeOnly } from './closureStandIns';
import { markLazy } from './closureLazy';
import type { TypeOnly } from './closureStandIns';

export * from './closureTypes';

export async function computeClosure(
  ctx: ClosureContext,
  rootRec: ModuleRecord,
  rootUnit: number,
  /** More units to close over with the root (a builder function used only for validation, a configuration class). */
  extraRoots: ExtraRoot[] = [],
): Promise<ClosureResult> {
  // a class the file only tests objects against becomes an empty stand-in; what it needed may go with it, and
  // then another class may be left with type tests only
  const typeOnly: TypeOnly = { stubbed: new Set(), aliases: new Set() };
  for (;;) {
    const { result, learnt } = await closeOnce(ctx, rootRec, rootUnit, extraRoots, typeOnly);
    if (!learnt || ctx.wholeClasses) return result;
  }
}

/** One pass: walk from the roots, settle the registrations, and say what was learnt for the next pass. */
async function closeOnce(
  ctx: ClosureContext,
  rootRec: ModuleRecord,
  rootUnit: number,
  extraRoots: ExtraRoot[],
  typeOnly: TypeOnly,
): Promise<{ result: ClosureResult; learnt: boolean }> {
  const walk = new ClosureWalk(ctx, rootRec, rootUnit, extraRoots, typeOnly);
  await settleRegistrations(walk);
  const result = walk.result();
  await markLazy(ctx, result, walk.rootUnits, rootRec.repoId);
  return { result, learnt: learnTypeOnly(walk) };
}
