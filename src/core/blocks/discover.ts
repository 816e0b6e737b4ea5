/**
 * Which classes are blocks: those whose bases reach `torch.nn.Module`, through torch's own classes
 * (`nn.Sequential`, `nn.Conv2d`...) or through other classes of any indexed module or repository.
 */
import type { IndexDb } from '../store/database';
import { makeMatcher } from '../sources/glob';
import { loadModuleTable } from '../resolve/loadTable';
import type { ModuleTable, Target } from '../resolve/moduleTable';

const TORCH_NN_CLASS =
  /^torch\.nn\.(?:modules\.[a-z_0-9.]+\.|parallel\.(?:[a-z_]+\.)?|quantized\.(?:[a-z_.]+\.)?|intrinsic\.(?:[a-z_.]+\.)?|qat\.(?:[a-z_.]+\.)?)?([A-Z]\w*)$/;
const NOT_MODULES = new Set(['Parameter', 'UninitializedParameter', 'UninitializedBuffer', 'Buffer', 'ParameterList_', 'PackedSequence']);
const OTHER_ROOTS = new Set([
  'torch.jit.ScriptModule',
  'torch.jit.RecursiveScriptModule',
  'torch.ao.quantization.QuantStub',
  'torch.ao.quantization.DeQuantStub',
]);

/** True for a qualified name of torch's own nn.Module classes. */
export function isTorchModuleClass(qualname: string): boolean {
  if (OTHER_ROOTS.has(qualname)) return true;
  const m = TORCH_NN_CLASS.exec(qualname);
  return !!m && !NOT_MODULES.has(m[1]);
}

interface ClassRow {
  id: number;
  fileId: number;
  repoId: number;
  module: string;
  name: string;
  bases: string[];
  isBlock: boolean;
  uses: number;
  prior: number;
}

/** A vendor's or a framework's variant of a block (`QuantizableBottleneck`, `FusedMBConv`, `CuGraphGATConv`). */
const VARIANT_PREFIX =
  /^(?:Quantizable|Quantized|Fused|Dense|CuGraph|Cugraph|Legacy|Distillable|Sparse|Naive|Lite|Tensorflow|TF|Jit|Scripted|Onnx|Hf|HF)(?=[A-Z])/;
const VARIANT_SUFFIX = /(?:_?Sparse|_?Fused|_?Legacy|_?Onnx|_?Quantized|_?Jit|Wrapper)$/;

/**
 * The prior a block brings to search from the index's graph: classes that subclass it (each a sign it is the one
 * others build on), its package's export of it (`__all__`, the package's `__init__` importing it), less when it is a
 * variant of another class of the index (a vendor or framework prefix or suffix on another's name).
 */
function priorOf(r: ClassRow, subclassed: number, exported: boolean, names: Set<string>): number {
  const prefixed = VARIANT_PREFIX.exec(r.name);
  const suffixed = VARIANT_SUFFIX.exec(r.name);
  const variant =
    (prefixed !== null && names.has(r.name.slice(prefixed[0].length))) ||
    (suffixed !== null && suffixed.index > 0 && names.has(r.name.slice(0, suffixed.index)));
  return Math.round((2 * Math.log1p(subclassed) + (exported ? 3 : 0) - (variant ? 8 : 0)) * 1000) / 1000;
}

/** Whether a package above the class's module (or the module itself) exports its name. */
function exportedBy(table: ModuleTable, r: ClassRow): boolean {
  const parts = r.module.split('.');
  for (let n = parts.length; n >= 1; n--) {
    const rec = table.lookupIn(parts.slice(0, n).join('.'), r.repoId);
    if (!rec) continue;
    if (rec.facts.all?.includes(r.name)) return true;
    if (n < parts.length && rec.isPackage && rec.facts.imports.some((i) => i.name === r.name || i.bound === r.name)) return true;
  }
  return false;
}

/** The class a base expression refers to: a class row id, or 'torch' for torch's own modules. */
function baseOf(target: Target, classIds: Map<string, number>): number | 'torch' | undefined {
  if (target.kind === 'external') return isTorchModuleClass(target.qualname) ? 'torch' : undefined;
  if (target.kind === 'symbol') {
    if (isTorchModuleClass(`${target.mod.module}.${target.name}`)) return 'torch';
    return classIds.get(`${target.mod.fileId}:${target.name}`);
  }
  return undefined;
}

/** Recomputes `is_block` for every class; returns how many blocks the index holds. */
export function discoverBlocks(db: IndexDb): number {
  // how often each name is used by other code of the index: a popularity prior for search ranking (counted while the
  // facts are read: the table keeps only what name resolution needs)
  const uses = new Map<string, number>();
  const table: ModuleTable = loadModuleTable(db, {
    slim: true,
    onUses: (names) => {
      for (const [n, count] of names) uses.set(n, (uses.get(n) ?? 0) + count);
    },
  });
  const rows: ClassRow[] = db.all('SELECT id, file_id, repo_id, module, name, bases, is_block, uses, prior FROM classes ORDER BY id').map((r) => ({
    id: Number(r.id),
    fileId: Number(r.file_id),
    repoId: Number(r.repo_id),
    module: String(r.module),
    name: String(r.name),
    bases: JSON.parse(String(r.bases)) as string[],
    isBlock: Number(r.is_block) === 1,
    uses: Number(r.uses),
    prior: Number(r.prior),
  }));
  const classIds = new Map<string, number>();
  for (const r of rows) classIds.set(`${r.fileId}:${r.name}`, r.id);
  const recordOf = new Map<number, ReturnType<ModuleTable['lookupIn']>>();
  const symbolFilters = new Map<number, ((v: string) => boolean) | undefined>();
  for (const r of db.all('SELECT id, config FROM repos')) {
    const cfg = JSON.parse(String(r.config ?? '{}')) as { symbols?: string[] };
    symbolFilters.set(Number(r.id), makeMatcher(cfg.symbols));
  }

  const edges = new Map<number, (number | 'torch')[]>();
  for (const r of rows) {
    let rec = recordOf.get(r.fileId);
    if (!recordOf.has(r.fileId)) {
      rec = table.lookupIn(r.module, r.repoId);
      recordOf.set(r.fileId, rec);
    }
    const out: (number | 'torch')[] = [];
    for (const base of r.bases) {
      const dotted = base.replace(/\[.*$/s, '').trim();
      if (!/^[A-Za-z_][\w.]*$/.test(dotted)) continue;
      if (isTorchModuleClass(dotted)) {
        out.push('torch');
        continue;
      }
      if (!rec) continue;
      const b = baseOf(table.resolveDotted(rec, dotted), classIds);
      if (b !== undefined && b !== r.id) out.push(b);
    }
    edges.set(r.id, out);
  }

  // iterative fixpoint: a class is a block when one of its bases is
  const state = new Map<number, boolean>();
  for (const r of rows) {
    const stack: { id: number; i: number }[] = [{ id: r.id, i: 0 }];
    const onStack = new Set<number>([r.id]);
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (state.has(top.id)) {
        stack.pop();
        onStack.delete(top.id);
        continue;
      }
      const es = edges.get(top.id) ?? [];
      let decided: boolean | undefined;
      while (top.i < es.length) {
        const e = es[top.i];
        if (e === 'torch') {
          decided = true;
          break;
        }
        if (state.has(e)) {
          if (state.get(e)) {
            decided = true;
            break;
          }
          top.i++;
          continue;
        }
        if (onStack.has(e)) {
          top.i++;
          continue;
        }
        stack.push({ id: e, i: 0 });
        onStack.add(e);
        break;
      }
      if (decided === true || top.i >= es.length) {
        state.set(top.id, decided === true);
        stack.pop();
        onStack.delete(top.id);
      }
    }
  }

  const subclassed = new Map<number, number>();
  for (const es of edges.values()) for (const e of new Set(es)) if (e !== 'torch') subclassed.set(e, (subclassed.get(e) ?? 0) + 1);
  const names = new Set(rows.map((r) => r.name));
  let count = 0;
  const changes: [number, number, number, number][] = [];
  for (const r of rows) {
    const filter = symbolFilters.get(r.repoId);
    const block = (state.get(r.id) ?? false) && (!filter || filter(r.name));
    if (block) count++;
    const used = uses.get(r.name) ?? 0;
    const prior = block ? priorOf(r, subclassed.get(r.id) ?? 0, exportedBy(table, r), names) : 0;
    if (block !== r.isBlock || used !== r.uses || prior !== r.prior) changes.push([block ? 1 : 0, used, prior, r.id]);
  }
  if (changes.length) {
    db.transaction(() => {
      for (const [flag, used, prior, id] of changes) db.run('UPDATE classes SET is_block = ?, uses = ?, prior = ? WHERE id = ?', [flag, used, prior, id]);
    });
  }
  return count;
}
