/**
 * How the repository itself builds and calls a block, for the judge: its call sites (arguments), the calls its tests
 * made under the observer, its README's and tests' code that calls the block (examples), and the configuration class
 * a block's `config` parameter takes, with the folders that class comes from.
 */
import type { PullSession } from './session';
import { registeredUnits, type RegisteredName } from '../resolve/closureRegistrations';
import { freshEntries, observedCallsOf } from '../store/observed';
import { decodePython } from '../parse/decode';
import type { PythonParser } from '../parse/parser';
import type { ClassFact } from '../parse/types';
import { readmeBlocks, readmeUsesOf } from './readmeExamples';
import type { CallSite } from '../parse/types';
import type { ModuleRecord, ModuleTable } from '../resolve/moduleTable';
import { isImported, readIndexedFile } from '../store/sourceText';
import type { ValidateOptions } from '../validate/report';

/** Parameter names that mean "a configuration object" when nothing annotates them. */
const CONFIG_PARAMETERS = new Set(['config', 'cfg', 'model_config', 'configs']);

const CONFIG_CLASS = /(?:Config|Configuration|Cfg)$/;

/** The parameters of a signature as written (`config: GPTConfig, block_idx: int = 0`), split at top-level commas. */
function signatureParameters(signature: string): { name: string; annotation?: string }[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of signature) {
    if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  const out: { name: string; annotation?: string }[] = [];
  for (const p of parts) {
    const m = /^\s*(\w+)\s*(?::\s*([^=]+?))?\s*(?:=[\s\S]*)?$/.exec(p);
    if (m) out.push({ name: m[1], ...(m[2] ? { annotation: m[2].trim() } : {}) });
  }
  return out;
}

/**
 * The one configuration class an unannotated `config` parameter means (as `arguments.named_configuration` finds it in
 * the judge): of the module's classes named `*Config`, those no other of them derives from; else of the classes it
 * imports so named (a hub's `from .configuration_bert import BertConfig`); undefined unless exactly one.
 */
function namedConfiguration(table: ModuleTable, rec: ModuleRecord): string | undefined {
  // a class as it is defined (`class BertConfig(PretrainedConfig)`: bases by their last name) and as the module names it
  type Candidate = { defined: string; bases: string[]; bound: string };
  const mostDerived = (found: Candidate[]) => found.filter((c) => !found.some((o) => o !== c && o.bases.includes(c.defined)));
  const lastName = (b: string) => b.replace(/\[[\s\S]*$/, '').replace(/^.*\./, '');
  const own = mostDerived(
    rec.facts.classes.filter((c) => CONFIG_CLASS.test(c.name)).map((c) => ({ defined: c.name, bases: c.bases.map(lastName), bound: c.name })),
  );
  if (own.length) return own.length === 1 ? own[0].bound : undefined;
  const imported: Candidate[] = [];
  for (const imp of rec.facts.imports) {
    if (imp.kind !== 'from' || imp.inFunction || imp.typeChecking || !imp.bound || !CONFIG_CLASS.test(imp.bound)) continue;
    const t = table.resolveDotted(rec, imp.bound);
    const fact = t.kind === 'symbol' ? t.mod.facts.classes.find((c) => c.name === t.name) : undefined;
    if (fact) imported.push({ defined: fact.name, bases: fact.bases.map(lastName), bound: imp.bound });
  }
  const derived = mostDerived(imported);
  return derived.length === 1 ? derived[0].bound : undefined;
}

/**
 * The configuration classes block `fact` is built from: a parameter annotated with one (`config: GPTConfig`,
 * `Optional["BertConfig"]`), or named `config`/`cfg` where the block's module defines exactly one; taken into the
 * file whole, so that the judge builds an object of it from its defaults on both sides and the user has it.
 */
export function configRoots(
  table: ModuleTable,
  rec: ModuleRecord,
  fact: ClassFact,
  depth = 0,
): { rec: ModuleRecord; unit: number; methodsOnDemand: boolean }[] {
  const out: { rec: ModuleRecord; unit: number; methodsOnDemand: boolean }[] = [];
  // a class without an __init__ of its own is built by its first base's (GemmaMLP(LLaMAMLP))
  if (!fact.methods.includes('__init__')) {
    for (const base of fact.bases) {
      const t = table.resolveDotted(rec, base);
      const baseFact = t.kind === 'symbol' ? t.mod.facts.classes.find((c) => c.name === t.name) : undefined;
      if (t.kind === 'symbol' && baseFact && depth < 5) return configRoots(table, t.mod, baseFact, depth + 1);
    }
    return out;
  }
  for (const p of signatureParameters(fact.signature.trim().replace(/^\(([\s\S]*)\)$/, '$1'))) {
    let name: string | undefined;
    if (p.annotation) {
      const bare = p.annotation
        .replace(/['"]/g, '')
        .replace(/^(?:typing\.)?Optional\[(.*)\]$/, '$1')
        .trim();
      if (/^[\w.]+$/.test(bare) && CONFIG_CLASS.test(bare)) name = bare;
    } else if (CONFIG_PARAMETERS.has(p.name)) name = namedConfiguration(table, rec);
    if (!name) continue;
    const t = table.resolveDotted(rec, name);
    // its fields and dunders whole; its other methods (a factory that looks up the model module) only when reached
    if (t.kind === 'symbol' && !out.some((o) => o.rec === t.mod && o.unit === t.unit)) out.push({ rec: t.mod, unit: t.unit, methodsOnDemand: true });
  }
  return out;
}

/**
 * The definitions of the block's repository that its observed calls name (`{"$call": "Spec", "module": "pkg.specs"}`):
 * taken into the file as a configuration class is (fields and dunders whole, other methods when reached), so that
 * the copy can be built as the repository's tests built it; and the classes registered under a name a config dict of
 * those calls gives (`norm_cfg={"type": "BN"}`, in `registries`), whole: the copy's registry builds them by that name.
 */
export function observedRoots(
  session: PullSession,
  rec: ModuleRecord,
  name: string,
  registries: ReadonlyMap<string, RegisteredName>,
): { rec: ModuleRecord; unit: number; methodsOnDemand: boolean }[] {
  const out: { rec: ModuleRecord; unit: number; methodsOnDemand: boolean }[] = [];
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    const registered = typeof o.type === 'string' ? registries.get(o.type) : undefined;
    for (const unit of registered ? registeredUnits(session.table, registered) : []) {
      if (!out.some((r) => r.rec === registered!.rec && r.unit === unit)) out.push({ rec: registered!.rec, unit, methodsOnDemand: false });
    }
    const named = typeof o.$call === 'string' ? o.$call : typeof o.$name === 'string' ? o.$name : undefined;
    if (named && typeof o.module === 'string' && /^\w+$/.test(named)) {
      const m = session.table.lookupIn(o.module, rec.repoId);
      const unit = m?.facts.classes.find((c) => c.name === named)?.unit ?? m?.facts.functions.find((f) => f.name === named)?.unit;
      if (m && unit !== undefined && !(m === rec && unit === rec.facts.classes.find((c) => c.name === name)?.unit)) {
        if (!out.some((r) => r.rec === m && r.unit === unit)) out.push({ rec: m, unit, methodsOnDemand: true });
      }
    }
    Object.values(o).forEach(visit);
  };
  for (const c of observedUses(session, rec, name)) visit([c.args, c.kwargs]);
  return out;
}

/**
 * How the repository builds and calls block `name` of `rec`: the calls its own tests made (the catalog of observed
 * calls, while the files they imported are unchanged), its call sites' arguments, its README's, its tests' text.
 */
export async function repositoryUses(
  session: PullSession,
  rec: ModuleRecord,
  name: string,
  parser: PythonParser,
): Promise<Pick<ValidateOptions, 'candidates' | 'examples'>> {
  const readme = await readmeUses(session, rec, name, parser);
  return {
    candidates: [
      ...observedUses(session, rec, name),
      ...callSites(session, rec, name).slice(0, MAX_CANDIDATES - readme.calls.length),
      // the README's (full-size models) are marked: the judge tries them after its light argument sets
      ...readme.calls.map((c) => ({ ...c, documented: true })),
    ],
    examples: [...(await exampleTexts(session, rec, name)), ...readme.texts].slice(0, MAX_EXAMPLES),
  };
}

/** The repository's calls of class `name` of `rec` (resolved to that very class), with the module holding each. */
function callsOf(session: PullSession, rec: ModuleRecord, name: string): { m: ModuleRecord; c: CallSite }[] {
  const out: { m: ModuleRecord; c: CallSite }[] = [];
  for (const list of session.table.modules()) {
    for (const m of list) {
      if (m.repoId !== rec.repoId || !m.facts.calls) continue;
      for (const c of m.facts.calls) {
        if (c.callee.split('.').pop() !== name) continue;
        const t = session.table.resolveDotted(m, c.callee);
        if (t.kind === 'symbol' && t.mod.fileId === rec.fileId && t.name === name) out.push({ m, c });
      }
    }
  }
  return out;
}

/** The calls of block `name` the repository's own tests made, as the judge replays them (`observed`: where). */
function observedUses(session: PullSession, rec: ModuleRecord, name: string): NonNullable<ValidateOptions['candidates']> {
  // an imported index's catalog is another machine's word: it does not decide how code is called here
  const repo = session.repos.get(rec.repoId);
  if (!repo || isImported(repo)) return [];
  let fresh = session.observed.get(rec.repoId);
  if (!fresh) session.observed.set(rec.repoId, (fresh = freshEntries(session.db, rec.repoId)));
  return observedCallsOf(session.db, rec.repoId, rec.module, name, (entry) => fresh!.get(entry) === true)
    .slice(0, MAX_OBSERVED)
    .map((c) => ({ args: c.args, kwargs: c.kwargs, observed: c.entry, ...(c.inputs ? { inputs: c.inputs } : {}) }));
}

const MAX_OBSERVED = 4;

/** Argument sets and example texts sent to the judge, at most. */
const MAX_CANDIDATES = 6;

const MAX_EXAMPLES = 4;

/** How the repository's README builds and calls the block (readmeExamples.ts): two calls, the most complete first. */
async function readmeUses(session: PullSession, rec: ModuleRecord, name: string, parser: PythonParser): Promise<ReturnType<typeof readmeUsesOf>> {
  const repo = session.repos.get(rec.repoId);
  if (!repo) return { calls: [], texts: [] };
  let blocks = session.readmes.get(repo.id);
  if (!blocks) session.readmes.set(repo.id, (blocks = readmeBlocks(repo, parser).catch(() => [])));
  const uses = readmeUsesOf(await blocks, session.table, rec, name);
  return { calls: uses.calls.sort((a, b) => knownArguments(b) - knownArguments(a)).slice(0, 2), texts: uses.texts.slice(0, 2) };
}

/** How many of a call's arguments are known values (not `$unknown`). */
function knownArguments(c: { args: unknown[]; kwargs: Record<string, unknown> }): number {
  return [...c.args, ...Object.values(c.kwargs)].filter((v) => !(v && typeof v === 'object' && '$unknown' in v)).length;
}

/** How the repository itself builds the block: literal arguments of its call sites, most informative first. */
export function callSites(session: PullSession, rec: ModuleRecord, name: string): { args: unknown[]; kwargs: Record<string, unknown> }[] {
  const out: { args: unknown[]; kwargs: Record<string, unknown>; score: number }[] = [];
  const seen = new Set<string>();
  for (const { c } of callsOf(session, rec, name)) {
    const key = JSON.stringify([c.args, c.kwargs]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ args: c.args, kwargs: c.kwargs, score: knownArguments(c) });
  }
  return out
    .sort((a, b) => b.score - a.score)
    .slice(0, 6)
    .map(({ args, kwargs }) => ({ args, kwargs }));
}

/**
 * The repository's own code that builds and calls the block (a test, an example): the functions holding a call site
 * of it, tests first, for the judge to read inputs from (`x = torch.randn(1, 16, 512)`, `layer(x, coors, mask=mask)`).
 */
export async function exampleTexts(session: PullSession, rec: ModuleRecord, name: string): Promise<string[]> {
  const units = new Map<ModuleRecord, Set<number>>();
  for (const { m, c } of callsOf(session, rec, name)) {
    if (m.facts.units[c.unit]?.kind === 'function') units.set(m, (units.get(m) ?? new Set()).add(c.unit));
  }
  const found: { text: string; test: boolean }[] = [];
  for (const [m, us] of units) {
    const file = session.files.get(m.fileId);
    const repo = session.repos.get(m.repoId);
    if (!file || !repo) continue;
    const decoded = decodePython(await readIndexedFile(repo, file.path, file.hash, session.sources).catch(() => new Uint8Array()));
    if (!decoded.ok) continue;
    const test = /(?:^|\/)tests?(?:\/|_)|_test\.py$/.test(file.path);
    for (const u of us) found.push({ text: decoded.text.slice(m.facts.units[u].start, m.facts.units[u].end).slice(0, EXAMPLE_CHARS), test });
  }
  return found
    .sort((a, b) => Number(b.test) - Number(a.test))
    .slice(0, 3)
    .map((f) => f.text);
}

const EXAMPLE_CHARS = 4000;
