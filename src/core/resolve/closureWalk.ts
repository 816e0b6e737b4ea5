/**
 * One pass of the dependency closure: from the block's unit, every unit it needs is visited once (a queue), each
 * reference placed where it resolves (a unit of the file, an import, a builtin, or a problem), registrations and
 * method deferral kept apart (closureRegistrations.ts, closureReach.ts). closure.ts runs passes until the type-only
 * stand-ins (closureStandIns.ts) learn nothing new.
 */
import { DirectedGraph } from 'graphology';
import type { Member, ParsedModule, Ref, Timing } from '../parse/types';
import { compactStandIn } from './compact';
import type { ModuleRecord, ModuleTable, Target } from './moduleTable';
import type { ClosureContext, ClosureResult, ExternalImport, ExtraRoot, NeedEdge, Problem, SymbolBinding, UnitNode } from './closureTypes';
import { externalKey, MODULE_OBJECT, moduleObjectName, ranWithin, symbolKey, unitKey } from './closureTypes';
import { codeOnly, droppable, STRINGS, MethodDeferral, outsideOf, reachedIn, reachesOf, refsWithin } from './closureReach';
import { registeredUnits, registrationSpan, registryIndex, type RegisteredName } from './closureRegistrations';
import type { Registration } from './closureRegistrations';
import { typeOnlyStandIn, useAt } from './closureStandIns';
import { modulesImported } from './closureLazy';
import type { TypeOnly, Use } from './closureStandIns';

/** The built compiled module `qualname` is (or is a name of: `pkg._C.op`), if one was built. */
function nativeOf(natives: ClosureContext['natives'], qualname: string): { module: string; name?: string; native: { file: string; name: string } } | undefined {
  if (!natives) return undefined;
  for (const [module, native] of natives) {
    if (qualname === module) return { module, native };
    if (qualname.startsWith(`${module}.`) && !qualname.slice(module.length + 1).includes('.'))
      return { module, name: qualname.slice(module.length + 1), native };
  }
  return undefined;
}

/**
 * How a function uses a name its own import binds (`from .sparse_conv import SparseConvolution` inside
 * `is_sparse_conv`): as every use after the import does (only tested against, only in annotations), else 'other'.
 */
function localUse(text: string, bound: string, from: number, to: number): Use {
  // strings blanked to their length, so that places in `code` are places in `text`
  const code = text.slice(from, to).replace(STRINGS, (m) => ' '.repeat(m.length));
  const uses = new Set<Use>();
  for (const m of code.matchAll(new RegExp(`(?<![\\w.])${bound}(?!\\w)`, 'g'))) {
    const at = from + (m.index ?? 0);
    uses.add(useAt(text, at, at + bound.length));
  }
  return uses.size === 1 ? [...uses][0] : 'other';
}

export class ClosureWalk {
  readonly units = new Map<string, UnitNode>();
  readonly graph = new DirectedGraph<UnitNode, NeedEdge>();
  /** Per unit needed: how it is used (see useAt). */
  readonly uses = new Map<string, Set<Use>>();
  readonly symbols = new Map<string, SymbolBinding>();
  readonly externals = new Map<string, ExternalImport>();
  readonly builtinsUsed = new Set<string>();
  readonly shadowed = new Set<string>();
  readonly problems: Problem[] = [];
  /** Modules that exist nowhere, imported inside functions without a handler: kept as written (see `keptMissing`). */
  readonly keptMissing = new Set<string>();
  /** Definitions the original's run never ran, left out (a slim copy). */
  readonly leftOut: string[] = [];
  /** Inlined modules the code uses as objects, with the definitions their stand-ins hold. */
  readonly modulesAsObjects = new Map<string, { name: string; key: string }[]>();
  private readonly problemKeys = new Set<string>();
  private registries: Map<string, RegisteredName> | undefined;
  /** Units needed and not visited yet. */
  readonly queue: UnitNode[] = [];
  /** Registration decorators whose registry nothing else in the file has needed so far. */
  registrations: Registration[] = [];
  /** Modules whose module-level registration calls were taken in (their registry is needed). */
  readonly scanned = new Set<number>();
  /** Modules whose functions registered by decorator into a needed registry were all taken in. */
  readonly scannedFunctions = new Set<number>();
  readonly table: ModuleTable;
  readonly root: UnitNode;
  /** The units copied whole: the block and the extra roots (but those whose methods are taken on demand). */
  readonly wholeUnits: Set<string>;
  /** The units that are never made type-only stand-ins: the block and every extra root. */
  readonly rootUnits: Set<string>;
  private readonly deferral: MethodDeferral;

  constructor(
    readonly ctx: ClosureContext,
    readonly rootRec: ModuleRecord,
    readonly rootUnit: number,
    extraRoots: ExtraRoot[],
    readonly typeOnly: TypeOnly,
  ) {
    this.table = ctx.table;
    this.deferral = new MethodDeferral(
      ctx.table,
      this.units,
      (rec, repo) => ctx.inlines(rec, repo),
      rootRec.repoId,
      (node, parsed, where, inside, member) => this.takeIn(node, parsed, where, inside, undefined, member),
    );
    this.root = this.need(rootRec, rootUnit);
    for (const extra of extraRoots) this.need(extra.rec, extra.unit);
    this.wholeUnits = new Set([this.root.key, ...extraRoots.filter((e) => !e.methodsOnDemand).map((e) => unitKey(e.rec, e.unit))]);
    this.rootUnits = new Set([this.root.key, ...extraRoots.map((e) => unitKey(e.rec, e.unit))]);
  }

  /** What the walk found. */
  result(): ClosureResult {
    const { root, units, graph, symbols, externals, builtinsUsed, shadowed, problems, modulesAsObjects, keptMissing, leftOut } = this;
    return {
      root,
      units,
      graph,
      symbols,
      externals,
      builtinsUsed,
      shadowed,
      problems,
      modulesAsObjects,
      keptMissing: [...keptMissing].sort(),
      lazy: new Map(),
      leftOut,
    };
  }

  /** Records that `from` needs `to`; a definition-time need wins over a call-time one. */
  depend(from: UnitNode, to: UnitNode, timing: Timing, use: Use = 'other'): void {
    const seen = this.uses.get(to.key) ?? new Set<Use>();
    seen.add(use);
    this.uses.set(to.key, seen);
    if (from.key === to.key) return;
    const def = timing === 'def';
    if (this.graph.hasEdge(from.key, to.key)) {
      if (def) this.graph.setEdgeAttribute(from.key, to.key, 'def', true);
    } else {
      this.graph.addEdge(from.key, to.key, { def });
    }
  }

  /** Records a problem once (by kind and name). */
  problem(p: Problem): void {
    const k = `${p.kind}:${p.name}`;
    if (!this.problemKeys.has(k)) {
      this.problemKeys.add(k);
      this.problems.push(p);
    }
  }

  /** The node of a unit the file needs, queued for a visit the first time. */
  need(rec: ModuleRecord, unit: number): UnitNode {
    const key = unitKey(rec, unit);
    let node = this.units.get(key);
    if (!node) {
      node = { key, rec, unit, edits: [], order: this.units.size };
      this.units.set(key, node);
      this.graph.addNode(key, node);
      this.queue.push(node);
      for (const b of rec.facts.units[unit].binds) {
        this.symbols.set(symbolKey(rec, b), { key: symbolKey(rec, b), rec, name: b, unitKey: key });
      }
      // a binding under try/if may not happen: the earlier unconditional binding of the name is its fallback
      if (rec.facts.units[unit].guard) {
        for (const b of rec.facts.units[unit].binds) {
          for (let i = unit - 1; i >= 0; i--) {
            const earlier = rec.facts.units[i];
            if (earlier.kind === 'main' || earlier.kind === 'import' || !earlier.binds.includes(b)) continue;
            this.depend(node, this.need(rec, i), 'def');
            if (!earlier.guard) break;
          }
        }
      }
    }
    return node;
  }

  /** An import the file keeps, once per module, name and binding; its key. `timing`: when this use needs it. */
  external(e: Omit<ExternalImport, 'key' | 'timing'>, timing: Timing): string {
    const key = externalKey(e);
    const known = this.externals.get(key);
    if (!known) this.externals.set(key, { ...e, key, timing });
    else if (timing === 'def') known.timing = 'def';
    return key;
  }

  /** Where a resolved target goes in the output: a symbol key, an external key, or nothing. */
  place(from: UnitNode, t: Target, bound: string, timing: Timing, where: string, use: () => Use = () => 'other'): string | undefined {
    switch (t.kind) {
      case 'symbol': {
        if (!this.ctx.inlines(t.mod, this.rootRec.repoId)) {
          return this.external({ module: t.mod.module, name: t.name, plainDotted: false, bound, indexed: true }, timing);
        }
        const target = this.need(t.mod, t.unit);
        const kind = t.mod.facts.units[t.unit].kind;
        this.depend(from, target, timing, kind === 'class' || kind === 'assign' ? use() : 'other');
        return symbolKey(t.mod, t.name);
      }
      case 'external':
        return this.external({ module: t.module, name: t.name, plainDotted: !!t.plainDotted, bound }, timing);
      case 'module': {
        if (!this.ctx.inlines(t.mod, this.rootRec.repoId)) return this.external({ module: t.mod.module, plainDotted: false, bound, indexed: true }, timing);
        // the module as an object (`getattr(litgpt.model, name)`, `vars(aggr)`): its code is in this file, so a
        // module object of the file stands in for it, holding every definition of that module (what is looked up by
        // a name held in data cannot be known here)
        if (!this.modulesAsObjects.has(t.mod.module)) {
          const symbols: { name: string; key: string }[] = [];
          this.modulesAsObjects.set(t.mod.module, symbols);
          const u = t.mod.facts.units;
          const exported = t.mod.facts.all;
          for (let i = 0; i < u.length; i++) {
            if (!u[i].binds.length || u[i].guard) continue;
            if (u[i].kind === 'import') {
              // a package's namespace holds what it imports too (`from .basic import MeanAggregation`: a resolver that
              // enumerates it finds the class by a name held in data): its public classes and functions of inlined code
              for (const b of u[i].binds) {
                if (symbols.some((x) => x.name === b) || (exported ? !exported.includes(b) : b.startsWith('_'))) continue;
                const to = this.table.resolveName(t.mod, b);
                if (to.kind !== 'symbol' || !this.ctx.inlines(to.mod, this.rootRec.repoId)) continue;
                const kind = to.mod.facts.units[to.unit].kind;
                if (kind !== 'class' && kind !== 'function') continue;
                this.wholeUnits.add(unitKey(to.mod, to.unit));
                this.depend(from, this.need(to.mod, to.unit), 'call');
                symbols.push({ name: b, key: symbolKey(to.mod, to.name) });
              }
              continue;
            }
            if (u[i].kind !== 'class' && u[i].kind !== 'function' && u[i].kind !== 'assign') continue;
            // whole: a class found by its name is then built and called as any other
            this.wholeUnits.add(unitKey(t.mod, i));
            this.depend(from, this.need(t.mod, i), 'call');
            for (const b of u[i].binds) if (!symbols.some((x) => x.name === b)) symbols.push({ name: b, key: symbolKey(t.mod, b) });
          }
        }
        return MODULE_OBJECT + t.mod.module;
      }
      case 'builtin':
        this.builtinsUsed.add(t.name);
        return undefined;
      case 'missing': {
        // a name a module the file imports (not inlines) has only once it runs (an installed torch's `Size`, from its
        // compiled part): imported from it as written, as the interpreter that imports the package finds it
        if (t.from && !this.ctx.inlines(t.from, this.rootRec.repoId)) {
          return this.external({ module: t.from.module, name: t.qualname.slice(t.from.module.length + 1), plainDotted: false, bound, indexed: true }, timing);
        }
        const built = nativeOf(this.ctx.natives, t.qualname);
        if (built) return this.external({ module: built.module, name: built.name, plainDotted: false, bound, native: built.native }, 'def');
        const reason = this.ctx.skippedReason(t.qualname, this.rootRec.repoId);
        this.problem(
          reason
            ? { kind: 'unparsed', name: t.qualname, detail: `${where} needs ${t.qualname}, which could not be indexed (${reason})` }
            : {
                kind: 'native-extension',
                name: t.qualname,
                detail: `${where} needs the compiled module ${t.qualname}, which has no Python source in ${t.repo}`,
              },
        );
        return undefined;
      }
      default:
        this.problem({ kind: 'unresolved', name: t.name, detail: `${where}: name '${t.name}' is not defined` });
        return undefined;
    }
  }

  placeRef(node: UnitNode, ref: Ref, where: string, text?: string): void {
    let t = this.table.resolveName(node.rec, ref.name);
    // a definition that reads its own name while it is made reads the binding before it (`class Output(Output):`)
    if (ref.timing === 'def' && t.kind === 'symbol' && t.mod === node.rec && t.unit === node.unit)
      t = this.table.resolveNameBefore(node.rec, ref.name, node.unit);
    let end = ref.end;
    if (t.kind === 'module' && ref.attrs.length && this.ctx.inlines(t.mod, this.rootRec.repoId)) {
      // `a.init_weights`, `pkg.sub.f`: the module attribute becomes a plain name in the output
      const r = this.table.resolveAttrs(t, ref.attrs);
      if (r.consumed > 0) {
        t = r.target;
        end = ref.attrEnds[r.consumed - 1];
        // the plain name would be a local of the code around it (`flag = pkg.backend.flag`): it gets another name
        if (t.kind === 'symbol' && text && bindsLocally(text.slice(node.rec.facts.units[node.unit].start, node.rec.facts.units[node.unit].end), t.name))
          this.shadowed.add(symbolKey(t.mod, t.name));
      }
    }
    // a name inside a value only tested against is only tested against; else what the code around it says (asked
    // only of the classes and values that could become stand-ins)
    // (the block's own constructor says what a user builds it with: `cnf: FusedMBConvConfig` and
    // `assert isinstance(vit, ViT)` keep the class, or no object a user passes would pass the test)
    const use = (): Use => {
      if (end !== ref.end || !text) return 'other';
      if (this.typeOnly.aliases.has(node.key)) return 'isinstance';
      const u = useAt(text, ref.start, ref.end);
      if (u === 'other' || node.rec !== this.rootRec || node.unit !== this.rootUnit) return u;
      const def = [...text.slice(Math.max(0, ref.start - 2000), ref.start).matchAll(/\bdef\s+(\w+)\s*\(/g)].pop();
      return def?.[1] === '__init__' ? 'other' : u;
    };
    const to = this.place(node, t, ref.name, ref.timing, where, use);
    if (to?.startsWith(MODULE_OBJECT)) node.edits.push({ start: ref.start, end, text: moduleObjectName(to.slice(MODULE_OBJECT.length)) });
    else if (to) node.edits.push({ start: ref.start, end, to });
  }

  /** Takes in what the part of a unit that `inside` accepts needs: its references, string registries, inner imports. */
  takeIn(node: UnitNode, parsed: ParsedModule, where: string, inside: (at: number) => boolean, registration?: Registration, range?: Member): void {
    const { rec, unit } = node;
    for (const ref of range ? refsWithin(parsed, unit, range) : parsed.refs[unit]) {
      if (!inside(ref.start)) continue;
      if (registration && ref.start >= registration.start && ref.end <= registration.end) registration.refs.push(ref);
      else this.placeRef(node, ref, where, parsed.text);
    }

    // string registries: dict(type="MLPHead") names a registered class
    const strings = parsed.strings[unit].filter((s) => inside(s.at));
    if (strings.length) {
      // the root repository's registrations, then those of the repositories whose code the file inlines
      this.registries ??= registryIndex(
        this.table,
        this.rootRec.repoId,
        (rec) => rec.repoId === this.rootRec.repoId || this.ctx.inlines(rec, this.rootRec.repoId),
      );
      for (const s of strings) {
        const hit = this.registries.get(s.value);
        if (!hit) continue;
        for (const unit of registeredUnits(this.table, hit)) this.depend(node, this.need(hit.rec, unit), s.timing);
      }
    }

    // import statements inside the unit (in a function body or a try/if block) that reach repository code
    if (rec.facts.units[unit].kind === 'import') return;
    for (const range of parsed.importRanges) {
      if (range.unit !== unit || !inside(range.start)) continue;
      const resolved = range.imports
        .map((i) => rec.facts.imports[i])
        // a star import binds what its module exports: those names resolve through it where they are read
        .filter((imp) => !imp.typeChecking && imp.kind !== 'star')
        .map((imp) => {
          const bound = imp.bound ?? imp.module.split('.')[0];
          return { imp, bound, t: this.table.resolveImport(rec, imp.kind, imp.level, imp.module, imp.name, bound, undefined, imp.guarded) };
        });
      // an import inside a function of a module that exists nowhere (a compiled operator, an export path an old
      // version had) stays as written: it runs only if the function does, as in the original (and a handler of the
      // failed import runs, at any depth as at module level); one the file builds (`--build-native`) is loaded
      const handled = ({ imp, t }: (typeof resolved)[number]): boolean => imp.inFunction && t.kind === 'missing' && !nativeOf(this.ctx.natives, t.qualname);
      for (const r of resolved) if (handled(r) && !r.imp.guarded && r.t.kind === 'missing') this.keptMissing.add(r.t.qualname);
      if (resolved.length && resolved.every(handled)) continue;
      const internal = resolved.some(
        (r) => (r.t.kind === 'missing' && !handled(r)) || ((r.t.kind === 'symbol' || r.t.kind === 'module') && this.ctx.inlines(r.t.mod, this.rootRec.repoId)),
      );
      // an import of third-party code stays where it is, as written
      if (!internal) continue;
      const lines: { bound: string; boundKey?: string; to: string; attrs?: { attr: string; to: string }[] }[] = [];
      for (const r of resolved) {
        const { imp, bound, t } = r;
        if (handled(r)) continue;
        const body = codeOnly(parsed.text.slice(range.end, rec.facts.units[unit].end));
        if (imp.inFunction && t.kind === 'module' && this.ctx.inlines(t.mod, this.rootRec.repoId) && usedAsWhole(body, bound)) {
          // the module as an object that the function enumerates or passes on (`vars(aggr)`, `getattr(aggr, name)`):
          // the module object of the file, holding every definition of the module (a resolver finds a class by a
          // name held in data)
          const to = this.place(node, t, bound, 'call', where);
          if (to) lines.push({ bound, to });
          continue;
        }
        if (imp.inFunction && t.kind === 'module' && this.ctx.inlines(t.mod, this.rootRec.repoId)) {
          // the module as an object, inside the function: a namespace of the attributes read through the name
          const attrs: { attr: string; to: string }[] = [];
          for (const m of body.matchAll(new RegExp(`(?<![\\w.])${bound}\\s*\\.\\s*([A-Za-z_]\\w*)`, 'g'))) {
            if (attrs.some((a) => a.attr === m[1])) continue;
            const r = this.table.resolveAttrs(t, [m[1]]);
            const to = r.consumed ? this.place(node, r.target, m[1], 'call', where) : undefined;
            if (to) attrs.push({ attr: m[1], to });
            else this.problem({ kind: 'unresolved', name: `${t.mod.module}.${m[1]}`, detail: `${where}: ${t.mod.module} has no '${m[1]}'` });
          }
          lines.push({ bound, to: '', attrs });
          continue;
        }
        const to = this.place(
          node,
          t,
          bound,
          imp.inFunction ? 'call' : 'def',
          where,
          imp.inFunction ? () => localUse(parsed.text, bound, range.end, rec.facts.units[unit].end) : undefined,
        );
        if (to) lines.push({ bound, boundKey: imp.inFunction ? undefined : symbolKey(rec, bound), to });
      }
      // the repository modules an import inside a function runs (closureLazy.ts)
      const modules: ModuleRecord[] = [];
      for (const { imp } of resolved) if (imp.inFunction) for (const m of modulesImported(this.table, rec, imp)) if (!modules.includes(m)) modules.push(m);
      node.edits.push({ start: range.start, end: range.end, imports: lines, ...(modules.length ? { modules } : {}) });
    }
  }

  /** The lines of `node`'s file that the original ran, when the copy is slim and the unit may be left out: code of
   * another module than the block's, inlined, not needed whole (a module used as an object) nor kept. */
  private ranLines(node: UnitNode, own: boolean): readonly number[] | undefined {
    const ran = this.ctx.ran;
    if (!ran || !own || node.rec.fileId === this.rootRec.fileId || this.wholeUnits.has(node.key) || ran.keep.has(node.key)) return undefined;
    return ran.linesOf(node.rec);
  }

  /** Takes in what one unit needs: its references, the registered classes its strings name, its inner imports. */
  async visit(node: UnitNode): Promise<void> {
    const { rec, unit } = node;
    const parsed = await this.ctx.parse(rec);
    const u = rec.facts.units[unit];
    const where = `${rec.module}${u.name ? `.${u.name}` : ''} (line ${u.startLine})`;
    const own = rec.repoId === this.rootRec.repoId || this.ctx.inlines(rec, this.rootRec.repoId);

    if (this.typeOnly.stubbed.has(node.key) && u.binds.length === 1) {
      const name = u.binds[0];
      node.replacement = { source: typeOnlyStandIn(rec, u.kind, name), refs: { [name]: symbolKey(rec, name) } };
      return;
    }
    // a framework's registry machinery: a minimal stand-in, and nothing the original needed
    const standIn = own ? compactStandIn(rec, unit) : undefined;
    if (standIn) {
      const refs: Record<string, string> = u.name ? { [u.name]: symbolKey(rec, u.name) } : {};
      const needs = [
        ...standIn.needs.map((name) => ({ name, timing: 'call' as const })),
        ...(standIn.needsAtDefinition ?? []).map((name) => ({ name, timing: 'def' as const })),
      ];
      for (const { name, timing } of needs) {
        // a name the original imports inside a method (mmengine's Registry and its build_from_cfg)
        let t = this.table.resolveName(rec, name);
        const inner = rec.facts.imports.find((i) => i.inFunction && i.kind === 'from' && (i.bound ?? i.name) === name);
        if (t.kind === 'unresolved' && inner)
          t = this.table.resolveImport(rec, inner.kind, inner.level, inner.module, inner.name, name, undefined, inner.guarded);
        const to = this.place(node, t, name, timing, where);
        if (to) refs[name] = to;
      }
      node.replacement = { source: standIn.source, refs };
      return;
    }
    // a slim copy: a function of another module that the original's run never ran is stood in for
    const ran = this.ranLines(node, own);
    if (ran && u.kind === 'function' && u.name && u.binds.length === 1 && !ranWithin(ran, u.startLine, u.endLine)) {
      this.leftOut.push(`${rec.module}.${u.name}`);
      node.replacement = { source: `${u.name} = _nnrag_left_out(${JSON.stringify(`${rec.module}.${u.name}`)})`, refs: { [u.name]: symbolKey(rec, u.name) } };
      return;
    }
    // registering the class is a side effect: its registry is needed only if the file builds from it
    const span = own ? registrationSpan(rec, unit, parsed.text) : undefined;
    const registration: Registration | undefined = span && { ...span, node, refs: [], where, text: parsed.text.slice(span.start, span.end).trim() };

    // a class the block needs, not the block: the methods nothing in the file reaches wait for their name
    const body = parsed.bodies[unit];
    const fact = body && u.kind === 'class' ? rec.facts.classes.find((c) => c.unit === unit && c.name === u.name) : undefined;
    const trim = own && !this.ctx.wholeClasses && !this.wholeUnits.has(node.key) && !!fact && this.deferral.plainClass(rec, fact);
    // (a method on a line of its own: a one-line class keeps them all)
    const ownLine = (m: Member): boolean => /^[ \t]*$/.test(parsed.text.slice(parsed.text.lastIndexOf('\n', m.start - 1) + 1, m.start));
    // (a slim copy: the methods of a class of another module that the original's run never ran, under any of their
    // definitions of one name, a property's setter too, are left out and stood in for)
    const lineOf = ran && body ? lineCounter(parsed.text, u.start, u.startLine) : undefined;
    const ranName = new Set(lineOf ? body!.methods.filter((m) => ranWithin(ran!, lineOf(m.start), lineOf(m.end))).map((m) => m.name) : []);
    const leftOut = lineOf && u.kind === 'class' ? body!.methods.filter((m) => droppable(m.name) && ownLine(m) && !ranName.has(m.name)) : [];
    const deferred = trim ? body!.methods.filter((m) => droppable(m.name) && !this.deferral.isReached(m.name, node) && ownLine(m) && !leftOut.includes(m)) : [];
    if (leftOut.length) {
      node.leftOut = leftOut;
      this.leftOut.push(...[...new Set(leftOut.map((m) => m.name))].map((m) => `${rec.module}.${u.name}.${m}`));
    }
    const outside = outsideOf([...deferred, ...leftOut].sort((a, b) => a.start - b.start));
    this.takeIn(node, parsed, where, outside, registration);
    if (registration) this.registrations.push(registration);

    // what the kept code reaches members by (a class's own statements: its bare names too, `forward = _impl`)
    const family = u.kind === 'class' ? node.key : undefined;
    const outsideMethods = outsideOf(body?.methods ?? []);
    const classLevel = (at: number): boolean => u.kind === 'class' && outsideMethods(at);
    reachesOf(reachedIn(parsed, unit, u.start, u.end), this.deferral.toReach, family, outside, classLevel);
    if (deferred.length) this.deferral.wait(node, deferred, parsed, where);
    this.deferral.reachAll();
  }
}

/** The line of an offset at or after `from` (whose line is `fromLine`) of `text`, counted forwards (offsets asked in
 * increasing order cost one pass). */
function lineCounter(text: string, from: number, fromLine: number): (at: number) => number {
  let at = from;
  let line = fromLine;
  return (to) => {
    if (to < at) {
      at = from;
      line = fromLine;
    }
    for (let i = text.indexOf('\n', at); i >= 0 && i < to; i = text.indexOf('\n', i + 1)) line++;
    at = to;
    return line;
  };
}

/** Whether `code` (strings and comments blanked) uses the module bound to `name` as a whole, not only to read its
 * attributes by name: passed to a call (`vars(aggr)`, `getattr(aggr, key)`, `dir(aggr)`), read through a dunder
 * (`aggr.__dict__`), stored or returned. */
function usedAsWhole(code: string, name: string): boolean {
  const n = name.replace(/[^\w]/g, '');
  for (const m of code.matchAll(new RegExp(`(?<![\\w.])${n}(?!\\w)(\\s*\\.\\s*([A-Za-z_]\\w*))?`, 'g'))) {
    if (!m[1] || /^__\w+__$/.test(m[2])) return true;
  }
  return false;
}

/** Whether `code` binds `name` as a plain name other than at module level: an assignment, a loop or `with` target,
 * or a parameter (read from the text: enough to avoid a collision, at worst a rename that was not needed). */
function bindsLocally(code: string, name: string): boolean {
  const n = name.replace(/[^\w]/g, '');
  return (
    new RegExp(`(?:^|[^.\\w])${n}\\s*(?::[^=\\n]+)?=(?!=)`, 'm').test(code) ||
    new RegExp(`\\bfor\\s+(?:[\\w, ]*,\\s*)?${n}\\b[^\\n]*\\bin\\b`).test(code) ||
    new RegExp(`\\bas\\s+${n}\\b`).test(code) ||
    new RegExp(`\\bdef\\s+\\w+\\s*\\([^)]*\\b${n}\\b`).test(code)
  );
}
