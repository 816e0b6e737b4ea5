/**
 * Builder functions: how a repository itself constructs a block (`resnet18()` -> `_resnet(...)` -> `ResNet(...)`).
 * A builder is a module-level function of the block's repository that reaches the class through calls (and
 * through other classes that build it) and can be called without arguments. Validation uses one when the block
 * cannot be built from guessed arguments: the builder's model is the block, or contains it.
 */
import type { ModuleRecord, ModuleTable } from './moduleTable';

export interface Builder {
  rec: ModuleRecord;
  unit: number;
  name: string;
}

/** The parameters of a parameter list as written (`(features: nn.Module, *, init=True)`), each as written. */
function parametersOf(signature: string): string[] {
  const inner = signature.trim().replace(/^\(|\)$/g, '');
  let depth = 0;
  let cur = '';
  const params: string[] = [];
  for (const ch of inner) {
    if ('([{'.includes(ch)) depth++;
    if (')]}'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      params.push(cur.trim());
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur.trim()) params.push(cur.trim());
  return params;
}

/** Whether a parameter as written must be given (not `*`, `/`, `*args`, `**kwargs`, nor one with a default). */
const required = (p: string): boolean => !(p === '*' || p === '/' || p.startsWith('*') || p.includes('='));

/** True when a parameter list as written (`(*, weights=None, **kwargs)`) has no required parameter. */
export function callableWithoutArguments(signature: string): boolean {
  return !parametersOf(signature).some(required);
}

/**
 * The required parameters a constructor annotates as a module (`features: nn.Module`; not a factory of modules,
 * `Callable[..., nn.Module]`): a guessed argument only stands in for them (an Identity), so the repository's builders
 * are asked first.
 */
export function modulesTaken(signature: string): string[] {
  return parametersOf(signature)
    .filter(required)
    .flatMap((p) => {
      const m = /^(\w+)\s*:\s*(.+)$/.exec(p);
      return m && /\bModule\b/.test(m[2]) && !/\bCallable\b|\bType\b|\btype\[/.test(m[2]) ? [m[1]] : [];
    });
}

/**
 * Whether a builder's name says it makes the block itself (`maxvit_t` for MaxVit, `resnet18` for ResNet), not a
 * model with the block inside (`ssd300_vgg16` for DefaultBoxGenerator): only then is the copy asked alone for its
 * arguments first (the replay of a block inside a model rarely stands: its inputs are the model's).
 */
export function namesTheBlock(builder: string, block: string): boolean {
  const letters = (s: string): string => s.toLowerCase().replace(/[^a-z]/g, '');
  const want = letters(block);
  return want.length > 0 && letters(builder).includes(want);
}

/** Reverse call edges among the module-level functions of one repository (built once per table and repository). */
export class BuilderIndex {
  private readonly callers = new Map<string, { rec: ModuleRecord; unit: number; name: string; isClass: boolean }[]>();

  constructor(table: ModuleTable, repoId: number) {
    for (const list of table.modules()) {
      for (const rec of list) {
        if (rec.repoId !== repoId) continue;
        rec.facts.units.forEach((u, i) => {
          // classes count as links of the chain (MobileNetV3 builds InvertedResidual; mobilenet_v3_large() builds it)
          if ((u.kind !== 'function' && u.kind !== 'class') || !u.name) return;
          // a name read only in the return annotation is also in defNames (`def _resnet(...) -> ResNet`)
          for (const n of [...u.callNames, ...u.defNames]) {
            const t = table.resolveName(rec, n);
            if (t.kind !== 'symbol') continue;
            const key = `${t.mod.fileId}:${t.name}`;
            const list2 = this.callers.get(key) ?? [];
            list2.push({ rec, unit: i, name: u.name, isClass: u.kind === 'class' });
            this.callers.set(key, list2);
          }
        });
      }
    }
  }

  /** Argument-free builders of `name` in `rec`, nearest first (a builder in the class's own module first). */
  buildersOf(rec: ModuleRecord, name: string, maxDepth = 4): Builder[] {
    const out: Builder[] = [];
    const seen = new Set<string>([`${rec.fileId}:${name}`]);
    let frontier = [`${rec.fileId}:${name}`];
    for (let depth = 0; depth < maxDepth && frontier.length && out.length < 4; depth++) {
      const next: string[] = [];
      for (const key of frontier) {
        for (const c of this.callers.get(key) ?? []) {
          const ckey = `${c.rec.fileId}:${c.name}`;
          if (seen.has(ckey)) continue;
          seen.add(ckey);
          next.push(ckey);
          if (c.isClass) continue;
          const fact = c.rec.facts.functions.find((f) => f.name === c.name && f.unit === c.unit);
          if (fact && !c.name.startsWith('_') && callableWithoutArguments(fact.signature)) out.push({ rec: c.rec, unit: c.unit, name: c.name });
        }
      }
      frontier = next;
    }
    // the class's own module first, then source order
    return out.sort((a, b) => Number(b.rec.fileId === rec.fileId) - Number(a.rec.fileId === rec.fileId) || a.unit - b.unit);
  }
}
