/**
 * Name resolution across indexed modules, the way Python's import system binds names: relative imports,
 * package re-exports, aliases, star imports with `__all__`, module attributes, the last binding winning.
 */
import type { ModuleFacts } from '../parse/types';

export const BUILTINS: ReadonlySet<string> = new Set(
  `ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError
BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError
ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning
EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError
FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError IndexError InterruptedError
IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None
NotADirectoryError NotImplemented NotImplementedError OSError OverflowError PendingDeprecationWarning
PermissionError ProcessLookupError RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning
StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True
TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError
UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__ __doc__ __import__
__loader__ __name__ __package__ __spec__ abs aiter all anext any ascii bin bool breakpoint bytearray bytes
callable chr classmethod compile complex copyright credits delattr dict dir divmod enumerate eval exec exit
filter float format frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter
len license list locals map max memoryview min next object oct open ord pow print property quit range repr
reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip __file__ __builtins__
__annotations__ __path__`.split(/\s+/),
);

export interface ModuleRecord {
  repoId: number;
  repo: string;
  module: string;
  isPackage: boolean;
  path: string;
  fileId: number;
  facts: ModuleFacts;
}

export type Target =
  | { kind: 'module'; mod: ModuleRecord }
  | { kind: 'symbol'; mod: ModuleRecord; name: string; unit: number }
  | {
      kind: 'external';
      qualname: string;
      /** The module to import. */
      module: string;
      /** `from module import name`; undefined for `import module`. */
      name?: string;
      /** `import a.b` binding `a`: keep the statement exactly as written. */
      plainDotted?: boolean;
    }
  | { kind: 'builtin'; name: string }
  /** `from` the module it is missing from, when that module is in the index (`from torch import Size`: torch's source
   * does not define the compiled `Size`). */
  | { kind: 'missing'; qualname: string; repo: string; from?: ModuleRecord }
  | { kind: 'unresolved'; name: string };

export interface RepoRecord {
  id: number;
  name: string;
  priority: number;
}

/** Folders of a repository that hold no code of its packages, whatever they import. */
const NOT_PACKAGE_CODE = /^(?:examples?|tests?|testing|docs?|scripts?|benchmarks?|bench|tools|demos?|notebooks?)$/i;

/** Whether a module is code of its repository's own packages: in a package folder (not at the top level as a script,
 * not under examples/, tests/, docs/, scripts/ or benchmarks/ at any depth). */
export function ownPackageFile(rec: Pick<ModuleRecord, 'module' | 'isPackage' | 'path'>): boolean {
  if (!rec.module.includes('.') && !rec.isPackage) return false;
  return !rec.path
    .split(/[\\/]/)
    .slice(0, -1)
    .some((part) => NOT_PACKAGE_CODE.test(part));
}

export class ModuleTable {
  private readonly byModule = new Map<string, ModuleRecord[]>();
  private readonly topNames = new Map<number, Set<string>>();
  private readonly priority = new Map<number, number>();
  private readonly bindingCache = new Map<ModuleRecord, { run: Map<string, number>; typeOnly: Map<string, number> }>();
  /** Names resolved from a module's top level, for every later pull of the session (a pull resolves thousands). */
  private readonly resolved = new Map<ModuleRecord, Map<string, Target>>();
  /** Per module: the last module-level import binding each name in each unit, and its star imports. */
  private readonly importsOf = new Map<ModuleRecord, { bindings: Map<string, ModuleFacts['imports'][number]>; stars: ModuleFacts['imports'] }>();

  /** Per repository, its modules; and the top-level names its code imports without a guard (its dependencies). */
  private readonly byRepo = new Map<number, ModuleRecord[]>();
  private readonly unguardedTops = new Map<number, Set<string>>();

  constructor(records: Iterable<ModuleRecord>, repos: RepoRecord[]) {
    for (const r of repos) this.priority.set(r.id, r.priority);
    for (const rec of records) {
      let mine = this.byRepo.get(rec.repoId);
      if (!mine) this.byRepo.set(rec.repoId, (mine = []));
      mine.push(rec);
      let list = this.byModule.get(rec.module);
      if (!list) this.byModule.set(rec.module, (list = []));
      list.push(rec);
      let tops = this.topNames.get(rec.repoId);
      if (!tops) this.topNames.set(rec.repoId, (tops = new Set()));
      tops.add(rec.module.split('.')[0]);
    }
    for (const list of this.byModule.values()) {
      list.sort((a, b) => (this.priority.get(b.repoId) ?? 0) - (this.priority.get(a.repoId) ?? 0) || a.repoId - b.repoId);
    }
  }

  /**
   * The module as seen from `fromRepo`: its own repository first, then others by priority, but only a repository
   * `fromRepo` depends on (its code imports that top-level name somewhere without a guard). An optional import the
   * repository guards (`try: import accel` / `except ImportError`) never resolves into an arbitrary other indexed
   * repository that happens to provide the name: it stays the repository's own, an import as written.
   */
  lookup(module: string, fromRepo?: number, guarded = false): ModuleRecord | undefined {
    const list = this.byModule.get(module);
    if (!list) return undefined;
    if (fromRepo === undefined) return list[0];
    const own = list.find((r) => r.repoId === fromRepo);
    // a guarded import site (`try`/`except ImportError`, `if find_spec(...)`, `if TYPE_CHECKING`) is the
    // repository's own or an import as written: never another indexed repository's code
    if (own || guarded) return own;
    return this.dependsOn(fromRepo, module.split('.')[0]) ? list[0] : undefined;
  }

  /** Whether `repoId`'s own packages import the top-level name `top` without a guard (not under a top-level `try` or
   * `if`, not for type checkers only): the name is then one of its dependencies, found in another repository. Its
   * examples, tests, docs, scripts, benchmarks and top-level scripts do not count (a benchmark's plain import of an
   * optional accelerator is not a dependency of the package). */
  dependsOn(repoId: number, top: string): boolean {
    let tops = this.unguardedTops.get(repoId);
    if (!tops) {
      tops = new Set();
      for (const rec of this.byRepo.get(repoId) ?? []) {
        if (!ownPackageFile(rec)) continue;
        for (const imp of rec.facts.imports) if (imp.level === 0 && !imp.guarded && !imp.typeChecking && imp.module) tops.add(imp.module.split('.')[0]);
      }
      this.unguardedTops.set(repoId, tops);
    }
    return tops.has(top);
  }

  lookupIn(module: string, repoId: number): ModuleRecord | undefined {
    return this.byModule.get(module)?.find((r) => r.repoId === repoId);
  }

  modules(): IterableIterator<ModuleRecord[]> {
    return this.byModule.values();
  }

  /** The top-level packages and modules of a repository (what `import` names first). */
  topLevelNames(repoId: number): string[] {
    return [...(this.topNames.get(repoId) ?? [])];
  }

  /** True when `module` belongs to the repository's own top-level packages or modules. */
  isInternal(module: string, repoId: number): boolean {
    return this.topNames.get(repoId)?.has(module.split('.')[0]) ?? false;
  }

  /** Absolute module path of a (possibly relative) import written in `from`. */
  absoluteModule(from: ModuleRecord, level: number, module: string): string {
    if (level === 0) return module;
    const parts = from.module.split('.');
    const pkg = from.isPackage ? parts : parts.slice(0, -1);
    const base = pkg.slice(0, Math.max(0, pkg.length - (level - 1)));
    return [...base, ...(module ? module.split('.') : [])].join('.');
  }

  /** Index of the unit that binds `name` last at module level (the binding Python would see after import). */
  bindingUnit(mod: ModuleRecord, name: string): number | undefined {
    return this.bindings(mod).run.get(name);
  }

  /** Index of the unit that binds `name` only for type checkers (`if TYPE_CHECKING:`), if one does. */
  private typeOnlyUnit(mod: ModuleRecord, name: string): number | undefined {
    return this.bindings(mod).typeOnly.get(name);
  }

  private bindings(mod: ModuleRecord): { run: Map<string, number>; typeOnly: Map<string, number> } {
    let cache = this.bindingCache.get(mod);
    if (!cache) {
      cache = { run: new Map(), typeOnly: new Map() };
      const c = cache;
      mod.facts.units.forEach((u, i) => {
        if (u.kind === 'main') return;
        for (const b of u.binds) (u.guard === 'type-checking' ? c.typeOnly : c.run).set(b, i);
      });
      this.bindingCache.set(mod, cache);
    }
    return cache;
  }

  private moduleImports(mod: ModuleRecord): { bindings: Map<string, ModuleFacts['imports'][number]>; stars: ModuleFacts['imports'] } {
    let got = this.importsOf.get(mod);
    if (!got) {
      const bindings = new Map<string, ModuleFacts['imports'][number]>();
      for (const f of mod.facts.imports) if (!f.inFunction && f.bound !== undefined) bindings.set(`${f.unit}:${f.bound}`, f);
      got = { bindings, stars: mod.facts.imports.filter((f) => f.kind === 'star' && !f.inFunction && !f.typeChecking) };
      this.importsOf.set(mod, got);
    }
    return got;
  }

  /**
   * What `name` means in `mod` while unit `unit` runs at import time: the latest binding before it (`class
   * Output(Output):` derives from the `Output` imported above, not from itself), else what the module means by it.
   */
  resolveNameBefore(mod: ModuleRecord, name: string, unit: number): Target {
    for (let i = unit - 1; i >= 0; i--) {
      const u = mod.facts.units[i];
      if (u.kind === 'main' || u.guard === 'type-checking' || !u.binds.includes(name)) continue;
      const imp = this.moduleImports(mod).bindings.get(`${i}:${name}`);
      if (u.kind === 'import' && imp)
        return this.resolveImport(mod, imp.kind, imp.level, imp.module, imp.name, name, new Set(), imp.guarded || imp.typeChecking);
      return { kind: 'symbol', mod, name, unit: i };
    }
    return this.resolveName(mod, name);
  }

  /**
   * Resolves a bare name at module scope of `mod`. A resolution from scratch (no `seen`) is kept: the table's
   * modules do not change while it lives.
   */
  resolveName(mod: ModuleRecord, name: string, seen?: Set<string>): Target {
    if (seen) return this.resolveNameUncached(mod, name, seen);
    let cache = this.resolved.get(mod);
    if (!cache) this.resolved.set(mod, (cache = new Map()));
    let t = cache.get(name);
    if (!t) cache.set(name, (t = this.resolveNameUncached(mod, name, new Set())));
    return t;
  }

  private resolveNameUncached(mod: ModuleRecord, name: string, seen: Set<string>): Target {
    const key = `${mod.repoId}:${mod.module}:${name}`;
    if (seen.has(key)) return { kind: 'unresolved', name };
    seen.add(key);
    const unit = this.bindingUnit(mod, name);
    const { bindings, stars } = this.moduleImports(mod);
    if (unit !== undefined) {
      const u = mod.facts.units[unit];
      const imp = bindings.get(`${unit}:${name}`);
      if (u.kind === 'import' && imp) return this.resolveImport(mod, imp.kind, imp.level, imp.module, imp.name, name, seen, imp.guarded || imp.typeChecking);
      // a package's guarded re-export (`if TYPE_CHECKING or SLOW_IMPORT: from .x import A`, beside a lazy module):
      // at run time the name comes from the module that defines it, not from the package's machinery
      if (imp && mod.isPackage && u.guard) {
        const t = this.resolveImport(mod, imp.kind, imp.level, imp.module, imp.name, name, new Set(seen), imp.guarded || imp.typeChecking);
        if (t.kind === 'symbol' || t.kind === 'module') return t;
      }
      return { kind: 'symbol', mod, name, unit };
    }
    // lazy exports: a package that binds the name only for type checkers (`_LazyModule`, a module `__getattr__`)
    // gives it at run time from the module its import names
    const lazy = mod.isPackage ? this.typeOnlyUnit(mod, name) : undefined;
    if (lazy !== undefined) {
      const imp = bindings.get(`${lazy}:${name}`);
      if (imp) {
        const t = this.resolveImport(mod, imp.kind, imp.level, imp.module, imp.name, name, new Set(seen), imp.guarded || imp.typeChecking);
        if (t.kind === 'symbol' || t.kind === 'module') return t;
      }
    }
    // star imports, last one first
    let circular: Target | undefined;
    for (let i = stars.length - 1; i >= 0; i--) {
      const abs = this.absoluteModule(mod, stars[i].level, stars[i].module);
      const rec = this.lookup(abs, mod.repoId, stars[i].guarded);
      if (rec) {
        if (!this.exports(rec, name, seen)) continue;
        const t = this.resolveName(rec, name, new Set(seen));
        // a module the star import runs that imports the name back from this module, half-initialized
        // (`from pkg import f` in `pkg/legacy.py`, star-imported by `pkg/__init__.py`): it binds what the earlier
        // star imports bound, so the search goes on with them
        if (i > 0 && (t.kind === 'unresolved' || (t.kind === 'missing' && t.from === mod))) {
          circular ??= t;
          continue;
        }
        return t;
      } else if (stars.length === 1 && !BUILTINS.has(name)) {
        return this.isInternal(abs, mod.repoId) || stars[i].level > 0
          ? { kind: 'missing', qualname: abs, repo: mod.repo }
          : { kind: 'external', qualname: `${abs}.${name}`, module: abs, name };
      }
    }
    if (circular) return circular;
    if (BUILTINS.has(name)) return { kind: 'builtin', name };
    return { kind: 'unresolved', name };
  }

  /** Whether `from rec import *` brings `name`. */
  private exports(rec: ModuleRecord, name: string, seen: Set<string>): boolean {
    if (rec.facts.all) return rec.facts.all.includes(name);
    if (name.startsWith('_')) return false;
    if (this.bindingUnit(rec, name) !== undefined) return true;
    const t = this.resolveName(rec, name, new Set(seen));
    return t.kind !== 'unresolved' && t.kind !== 'builtin';
  }

  /** What an import statement binds: `import a.b` binds module `a`; `import a.b as c` binds `a.b`. */
  resolveImport(
    mod: ModuleRecord,
    kind: 'import' | 'from' | 'star',
    level: number,
    module: string,
    importedName: string | undefined,
    bound: string,
    seen = new Set<string>(),
    guarded = false,
  ): Target {
    const abs = this.absoluteModule(mod, level, module);
    if (kind === 'import') {
      const plainDotted = bound === module.split('.')[0] && module.includes('.');
      const t = this.moduleTarget(plainDotted ? bound : abs, mod, level > 0, guarded);
      return t.kind === 'external' && plainDotted ? { ...t, module: abs, qualname: bound, plainDotted } : t;
    }
    return this.fromImport(abs, importedName ?? bound, mod, level > 0, seen, guarded);
  }

  private moduleTarget(abs: string, from: ModuleRecord, relative: boolean, guarded = false): Target {
    const rec = this.lookup(abs, from.repoId, guarded);
    if (rec) return { kind: 'module', mod: rec };
    if (relative || this.isInternal(abs, from.repoId)) return { kind: 'missing', qualname: abs, repo: from.repo };
    return { kind: 'external', qualname: abs, module: abs };
  }

  private fromImport(abs: string, name: string, from: ModuleRecord, relative: boolean, seen: Set<string>, guarded = false): Target {
    const rec = this.lookup(abs, from.repoId, guarded);
    if (rec) {
      const t = this.resolveName(rec, name, seen);
      if (t.kind !== 'unresolved' && t.kind !== 'builtin') return t;
      const sub = this.lookup(`${abs}.${name}`, rec.repoId);
      if (sub) return { kind: 'module', mod: sub };
      return { kind: 'missing', qualname: `${abs}.${name}`, repo: rec.repo, from: rec };
    }
    const sub = this.lookup(`${abs}.${name}`, from.repoId, guarded);
    if (sub) return { kind: 'module', mod: sub };
    if (relative || this.isInternal(abs, from.repoId)) return { kind: 'missing', qualname: `${abs}.${name}`, repo: from.repo };
    return { kind: 'external', qualname: `${abs}.${name}`, module: abs, name };
  }

  /** Follows attribute access from a target: `mod.attr`, `pkg.sub.mod.f`, `external.x`. */
  resolveAttrs(target: Target, attrs: string[], seen = new Set<string>()): { target: Target; consumed: number } {
    let cur = target;
    let consumed = 0;
    for (const attr of attrs) {
      if (cur.kind === 'module') {
        const t = this.resolveName(cur.mod, attr, seen.size ? new Set(seen) : undefined);
        // `mod.__dict__`, `mod.__name__`: the module object itself is in use, not a submodule; a dunder the module
        // defines itself (`pkg.__version__`) is a definition like any other
        if (/^__\w+__$/.test(attr) && t.kind !== 'symbol') break;
        if (t.kind !== 'unresolved' && t.kind !== 'builtin') {
          cur = t;
        } else {
          const sub = this.lookup(`${cur.mod.module}.${attr}`, cur.mod.repoId);
          if (!sub) return { target: { kind: 'missing', qualname: `${cur.mod.module}.${attr}`, repo: cur.mod.repo }, consumed: consumed + 1 };
          cur = { kind: 'module', mod: sub };
        }
        consumed++;
      } else if (cur.kind === 'external') {
        cur = { ...cur, qualname: `${cur.qualname}.${attr}` };
        consumed++;
      } else {
        break;
      }
    }
    return { target: cur, consumed };
  }

  /** Resolves a dotted expression written in `mod` (`nn.Module`, `layers.Base`). */
  resolveDotted(mod: ModuleRecord, dotted: string): Target {
    const [head, ...rest] = dotted.split('.');
    const t = this.resolveName(mod, head);
    return rest.length ? this.resolveAttrs(t, rest).target : t;
  }
}
