/**
 * One dependency-closed file: provenance header, grouped imports, definitions in a valid order,
 * colliding names renamed consistently, nothing the block does not use. The order and the names are order.ts's;
 * the file's format (header, provenance record, body hash) is pulledFile.ts's.
 */
import { createHash } from 'crypto';
import type { ParsedModule } from '../parse/types';
import type { ClosureResult, ExternalImport, UnitNode } from '../resolve/closure';
import { MODULE_OBJECT, moduleObjectName, symbolKey } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { redactUrls } from '../sources/git';
import { definitionDigest } from '../store/files';
import { isStdlib } from './stdlib';
import { NATIVE_FOLDER } from '../validate/report';
import { assignNames, orderUnits } from './order';
import { headerText, provenanceLine, sourceLines, withoutMarkers } from './pulledFile';
import type { Provenance, ProvenanceEntry } from './pulledFile';

/** Code that reads docstrings at run time. */
const DOCSTRINGS_READ = /\b__doc__\b|\bgetdoc\s*\(/;

export interface SourceInfo {
  repo: string;
  url: string | null;
  location: string;
  commit: string | null;
  license: string | null;
  path: string;
  blob: string;
  /** The file differs from its blob at `commit` (a checkout with changes not committed): the commit does not hold it. */
  uncommitted?: boolean;
}

export interface EmitResult {
  code: string;
  provenance: Provenance;
  /** Third-party (non-stdlib) top-level modules imported anywhere in the file. */
  thirdParty: string[];
  order: UnitNode[];
  /** The dependency graph of the file by name: one node per definition (in file order), edges to what each needs. */
  graph: DependencyGraph;
  /**
   * Every definition's text in file order (those a shared module provides too), with its identity: module, names and
   * a hash of the text, equal in two files only when the definition is the same in both.
   */
  pieces: { id: string; names: string[]; text: string; root: boolean; needs: number[] }[];
  /** The import statements (this file's) that text such as a shared module's needs. */
  importsFor(text: string): string;
}

export interface DependencyGraph {
  /** `lines`: what the definition takes in the file (methods left out are not counted). */
  nodes: { id: number; names: string[]; module: string; repo: string; lines: number }[];
  /** `when`: needed at definition time (bases, decorators, defaults) or only when called. */
  edges: { from: number; to: number; when: 'definition' | 'call' }[];
}

export interface EmitContext {
  parsed(rec: ModuleRecord): ParsedModule;
  source(rec: ModuleRecord): SourceInfo;
  now?: () => Date;
  /** Lines for the header after the license (why code of other repositories was inlined). */
  notes?: string[];
  /** The standard library of the interpreter the file is for (default: stdlib.ts's list). */
  stdlib?: ReadonlySet<string>;
  /** Rewrites a definition pulled in with the block (not the block itself): docstrings.ts cuts long docstrings. */
  shorten?: (text: string) => string;
  /** Definitions (piece ids) a module beside the file provides: imported from it, not written. */
  provided?: { module: string; ids: ReadonlySet<string> };
  /** Third-party packages the interpreter the file is for cannot import: each stood in for (`_NnragMissing`, which
   * can be subclassed and tested against), so that the file imports and only code that uses one fails. */
  absent?: ReadonlySet<string>;
}

function importLine(e: ExternalImport, as: string): string {
  if (e.name !== undefined) return `from ${e.module} import ${e.name}${as !== e.name ? ` as ${as}` : ''}`;
  if (e.plainDotted && as === e.module.split('.')[0]) return `import ${e.module}`;
  return as === e.module ? `import ${e.module}` : `import ${e.module} as ${as}`;
}

/** How a pulled file loads a compiled operator built by `--build-native` (from NATIVE_FOLDER beside it). */
const NATIVE_LOADER = `def _nnrag_native(module, name, file, register=False):
    """The compiled operator 'module' of the repository, built from its C++ sources by nn-rag pull --build-native
    and kept in the ${NATIVE_FOLDER} folder beside this file (register: importable as 'module' too, for code that
    loads it by that name at run time)."""
    import importlib.util
    import os
    import sys

    loaded = sys.modules.get(name)
    if loaded is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "${NATIVE_FOLDER}", file)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None or not os.path.exists(path):
            raise ImportError(f"{module} is a compiled operator: build it with nn-rag pull --build-native (no {path})")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        sys.modules[name] = loaded
    if register:
        sys.modules.setdefault(module, loaded)
    return loaded`;

/**
 * What stands in for a package the interpreter lacks that only code inside functions uses: the file imports, and the
 * code that uses the package fails when it runs, with the import's own error (as a function-local import would).
 */
const MISSING_STAND_IN = `class _NnragMissing:  # a package not installed here: code that uses it raises the import's error
    def __init__(self, error): self._nnrag = (str(error), error.name)
    def _nnrag_raise(self, *args, **kwargs): raise ModuleNotFoundError(self._nnrag[0], name=self._nnrag[1])
    __getattr__ = __call__ = __getitem__ = __iter__ = _nnrag_raise
    def __or__(self, other): return self  # in an annotation (\`torch.Tensor | Missing\`)
    __ror__ = __or__
    def __instancecheck__(self, obj): return False
    def __subclasscheck__(self, cls): return False
    def __mro_entries__(self, bases):  # a base class: made, and its instances raise the import's error
        return (type("_NnragMissingBase", (), {"__init__": self._nnrag_raise, "__init_subclass__": classmethod(lambda cls, **kw: None)}),)`;

/**
 * What stands in for the definitions a slim copy leaves out (the original's run never ran them): a function that
 * raises saying so, or (with method names) one per method, for a class body's namespace.
 */
const LEFT_OUT_STAND_IN = `class _NnragLeftOut(RuntimeError):
    """Code NN-RAG left out of this file: the original never ran it while the block was validated."""


def _nnrag_left_out(where, *methods):
    owner = where.rsplit(".", 1)[-1]
    def left_out(name, qualname):
        def stand_in(*args, **kwargs):
            raise _NnragLeftOut(f"{name} was left out of this file: the original never ran it when NN-RAG validated the block (nn-rag pull --full keeps it)")
        stand_in.__name__ = qualname.rsplit(".", 1)[-1]
        stand_in.__qualname__ = qualname  # as the original's prints itself (a module keeping it as an attribute)
        return stand_in
    return {m: left_out(f"{where}.{m}", f"{owner}.{m}") for m in methods} if methods else left_out(where, owner)`;

/** Packages every torch interpreter has in practice: plain imports whatever uses them. */
const ALWAYS_THERE = new Set(['torch', 'numpy']);

/**
 * The third-party packages only code inside functions uses (no definition needs them while the file is imported):
 * imported where installed, as the original does, and stood in for where not, so the block needs only the packages
 * its own use needs. The standard library, compiled operators, indexed repositories the file imports and what every
 * torch interpreter has stay plain imports.
 */
function optionalPackages(externals: ExternalImport[], stdlib?: ReadonlySet<string>): Set<string> {
  const top = (e: ExternalImport): string => e.module.split('.')[0];
  const eager = new Set(externals.filter((e) => e.timing !== 'call' || e.native || e.indexed).map(top));
  return new Set(externals.map(top).filter((m) => !eager.has(m) && !ALWAYS_THERE.has(m) && !isStdlib(m, stdlib)));
}

function importBlock(
  externals: ExternalImport[],
  names: Map<string, string>,
  future: boolean,
  stdlib?: ReadonlySet<string>,
  absent?: ReadonlySet<string>,
): { text: string; thirdParty: string[]; optional: string[]; absent: string[] } {
  const plain = new Set<string>();
  const froms = new Map<string, Set<string>>();
  const natives: string[] = [];
  const optional = optionalPackages(externals, stdlib);
  // a package the interpreter lacks that a definition needs while the file is imported (a configuration library's
  // base class): stood in for too, so that a block that never uses it builds
  const missing = new Set(
    externals
      .map((e) => e.module.split('.')[0])
      .filter(
        (m) =>
          absent?.has(m) &&
          !optional.has(m) &&
          !ALWAYS_THERE.has(m) &&
          !isStdlib(m, stdlib) &&
          !externals.some((e) => e.module.split('.')[0] === m && (e.native || e.indexed)),
      ),
  );
  for (const m of missing) optional.add(m);
  const guarded = new Map<string, { lines: string[]; bound: string[] }>();
  for (const e of externals) {
    const as = names.get(e.key) ?? e.bound;
    const pkg = e.module.split('.')[0];
    if (optional.has(pkg)) {
      const g = guarded.get(pkg) ?? { lines: [], bound: [] };
      const line = e.name !== undefined ? `from ${e.module} import ${e.name === as ? e.name : `${e.name} as ${as}`}` : importLine(e, as);
      if (!g.lines.includes(line)) g.lines.push(line);
      const bound = as.split('.')[0];
      if (!g.bound.includes(bound)) g.bound.push(bound);
      guarded.set(pkg, g);
      continue;
    }
    if (e.native) {
      const args = [e.module, e.native.name, e.native.file].map((a) => JSON.stringify(a)).join(', ');
      if (e.native.register) natives.push(`_nnrag_native(${args}, True)`);
      else natives.push(`${as} = _nnrag_native(${args})${e.name !== undefined ? `.${e.name}` : ''}`);
    } else if (e.name !== undefined) {
      const set = froms.get(e.module) ?? new Set<string>();
      set.add(e.name === as ? e.name : `${e.name} as ${as}`);
      froms.set(e.module, set);
    } else {
      plain.add(importLine(e, as));
    }
  }
  const lines: { group: number; sort: string; text: string }[] = [];
  const groupOf = (module: string): number => (isStdlib(module, stdlib) ? 1 : 2);
  for (const p of plain) {
    const module = p.replace(/^import\s+/, '').split(/\s+/)[0];
    lines.push({ group: groupOf(module), sort: `${module} 0`, text: p });
  }
  for (const [module, set] of froms) {
    const items = [...set].sort();
    const text = `from ${module} import ${items.join(', ')}`;
    lines.push({ group: groupOf(module), sort: `${module} 1`, text: text.length > 100 ? `from ${module} import (\n    ${items.join(',\n    ')},\n)` : text });
  }
  lines.sort((a, b) => a.group - b.group || a.sort.localeCompare(b.sort));
  const groups: string[] = [];
  if (future) groups.push('from __future__ import annotations');
  for (const g of [1, 2]) {
    const block = lines.filter((l) => l.group === g).map((l) => l.text);
    if (block.length) groups.push(block.join('\n'));
  }
  if (natives.length) groups.push(`\n${NATIVE_LOADER}\n\n\n${[...new Set(natives)].sort().join('\n')}`);
  if (guarded.size) {
    const blocks = [...guarded.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([, g]) =>
          `try:\n${g.lines
            .sort()
            .map((l) => `    ${l}`)
            .join('\n')}\nexcept ModuleNotFoundError as _nnrag_error:\n${g.bound.map((b) => `    ${b} = _NnragMissing(_nnrag_error)`).join('\n')}`,
      );
    groups.push(`\n${MISSING_STAND_IN}\n\n\n${blocks.join('\n')}`);
  }
  const thirdParty = [
    ...new Set(
      externals
        .filter((e) => !e.native)
        .map((e) => e.module.split('.')[0])
        .filter((m) => !isStdlib(m, stdlib)),
    ),
  ].sort();
  return { text: groups.join('\n\n'), thirdParty, optional: [...optional].filter((m) => !missing.has(m)).sort(), absent: [...missing].sort() };
}

/**
 * Import statements of a unit that stay as written (third-party code under a guard) and bind a name the file renamed:
 * each rewritten to bind the final name (`import torch_npu as torch_npu_activations`).
 */
function keptImportRenames(node: UnitNode, parsed: ParsedModule, names: Map<string, string>): { start: number; end: number; text: string }[] {
  const out: { start: number; end: number; text: string }[] = [];
  for (const range of parsed.importRanges) {
    if (range.unit !== node.unit || node.edits.some((e) => e.start <= range.start && e.end >= range.end)) continue;
    const facts = range.imports.map((i) => node.rec.facts.imports[i]);
    if (facts.some((f) => f.inFunction || f.level > 0 || f.kind === 'star')) continue;
    const finalOf = (bound: string): string => names.get(symbolKey(node.rec, bound)) ?? bound;
    if (!facts.some((f) => finalOf(f.bound ?? f.module.split('.')[0]) !== (f.bound ?? f.module.split('.')[0]))) continue;
    const statements = facts.map((f) => {
      const bound = f.bound ?? f.module.split('.')[0];
      const final = finalOf(bound);
      if (f.kind === 'from') return `from ${f.module} import ${f.name}${final !== f.name ? ` as ${final}` : ''}`;
      const plainDotted = f.module.includes('.') && bound === f.module.split('.')[0];
      if (plainDotted) return final === bound ? `import ${f.module}` : `import ${f.module}; ${final} = ${bound}`;
      return final === f.module ? `import ${f.module}` : `import ${f.module} as ${final}`;
    });
    out.push({ start: range.start, end: range.end, text: statements.join('; ') });
  }
  return out;
}

function unitText(node: UnitNode, parsed: ParsedModule, names: Map<string, string>): string {
  if (node.replacement) {
    let text = node.replacement.source;
    for (const [ident, key] of Object.entries(node.replacement.refs)) {
      const final = names.get(key);
      if (final && final !== ident) text = text.replace(new RegExp(`\\b${ident}\\b`, 'g'), final);
    }
    return text;
  }
  const u = node.rec.facts.units[node.unit];
  const edits: { start: number; end: number; text: string }[] = [];
  for (const e of node.edits) {
    if (e.imports) {
      const stmts = e.imports.map(({ bound, boundKey, to, attrs }) => {
        if (attrs)
          return `${bound} = __import__("types").SimpleNamespace(${attrs.map((x) => `${x.attr}=${x.to.startsWith(MODULE_OBJECT) ? moduleObjectName(x.to.slice(MODULE_OBJECT.length)) : (names.get(x.to) ?? x.attr)}`).join(', ')})`;
        const left = (boundKey && names.get(boundKey)) || bound;
        const right = to.startsWith(MODULE_OBJECT) ? moduleObjectName(to.slice(MODULE_OBJECT.length)) : (names.get(to) ?? bound);
        return left === right ? 'pass' : `${left} = ${right}`;
      });
      // what the original's import runs of the repository's modules, run first (closureLazy.ts)
      const runs = (e.loads ?? []).map((f) => `${f}()`);
      const bound = [...new Set(stmts)].filter((x) => x !== 'pass' || !runs.length);
      edits.push({ start: e.start, end: e.end, text: [...runs, ...bound].join('; ') || 'pass' });
    } else if (e.text !== undefined) {
      edits.push({ start: e.start, end: e.end, text: e.text });
    } else if (e.to) {
      const final = names.get(e.to);
      if (final !== undefined && final !== parsed.text.slice(e.start, e.end)) edits.push({ start: e.start, end: e.end, text: final });
    }
  }
  // a third-party import kept as written (under a guard) whose name was renamed: the statement binds the new name
  const rewritten = keptImportRenames(node, parsed, names);
  edits.push(...rewritten);
  for (const site of parsed.bindSites[node.unit]) {
    const final = names.get(symbolKey(node.rec, site.name));
    if (rewritten.some((r) => site.start >= r.start && site.end <= r.end)) continue;
    if (final !== undefined && final !== site.name) edits.push({ start: site.start, end: site.end, text: final });
  }
  // methods left out: whole lines, one comment where the first was, `pass` if nothing else is left; those the
  // original never ran (a slim copy) stood in for by functions that say so
  const leftOut = node.leftOut ?? [];
  const dropped = [...(node.dropped ?? []), ...leftOut].sort((a, b) => a.start - b.start);
  if (dropped.length) {
    const lineStart = (at: number): number => parsed.text.lastIndexOf('\n', at - 1) + 1;
    const lineEnd = (at: number): number => {
      const nl = parsed.text.indexOf('\n', at);
      return nl < 0 || nl + 1 > u.end ? at : nl + 1;
    };
    // with the blank lines before each: the class reads as if the methods had never been there
    const withBlanks = (start: number): number => {
      while (start > u.start) {
        const prev = lineStart(start - 1);
        if (parsed.text.slice(prev, start).trim() !== '' || prev <= u.start) break;
        start = prev;
      }
      return start;
    };
    const spans = dropped.map((m) => ({ start: withBlanks(lineStart(m.start)), end: lineEnd(m.end) }));
    const kept = edits.filter((e) => !spans.some((d) => e.start >= d.start && e.end <= d.end));
    edits.length = 0;
    edits.push(...kept);
    const indent = parsed.text.slice(lineStart(dropped[0].start), dropped[0].start);
    const body = parsed.bodies[node.unit];
    const names = (node.dropped ?? []).map((m) => m.name);
    let note = spans[0].start < lineStart(dropped[0].start) ? '\n' : '';
    if (names.length)
      note += `${indent}# NN-RAG left out ${names.length === 1 ? 'a method' : 'methods'} nothing in this file reaches: ${[...new Set(names)].join(', ')}\n`;
    const slim = [...new Set(leftOut.map((m) => m.name))];
    if (slim.length)
      note += `${indent}# NN-RAG left out what the original never ran (nn-rag pull --full keeps it):\n${indent}locals().update(_nnrag_left_out(${JSON.stringify(`${node.rec.module}.${u.name}`)}, ${slim.map((n) => JSON.stringify(n)).join(', ')}))\n`;
    else if (body && body.statements === dropped.length) note += `${indent}pass\n`;
    spans.forEach((d, i) => edits.push({ ...d, text: i === 0 ? note : '' }));
  }
  edits.sort((a, b) => b.start - a.start || b.end - a.end);
  // pieces from the end backwards (joined once: a large unit has thousands of edits)
  const pieces: string[] = [];
  let lastStart = u.end;
  for (const e of edits) {
    if (e.end > lastStart) continue; // overlapping (same site seen twice): the outer edit already applied
    pieces.push(parsed.text.slice(e.end, lastStart), e.text);
    lastStart = e.start;
  }
  pieces.push(parsed.text.slice(u.start, lastStart));
  return pieces.reverse().join('');
}

/** The imports of a file some of whose definitions come from a shared module: only what the rest uses, of the
 * packages and of the shared module. */
function importsLeft(
  body: string[],
  providedNames: string[],
  externals: ExternalImport[],
  names: Map<string, string>,
  future: boolean,
  ctx: EmitContext,
): string {
  const words = new Set(body.join('\n').match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
  const used = providedNames.filter((n) => words.has(n));
  const externalsLeft = externals.filter((e) => e.native?.register || words.has((names.get(e.key) ?? e.bound).split('.')[0]));
  return [importBlock(externalsLeft, names, future, ctx.stdlib, ctx.absent).text, sharedImport(ctx.provided!.module, used.length ? used : providedNames)]
    .filter(Boolean)
    .join('\n\n');
}

/**
 * A statement the original runs only when a function imports its module (closureLazy.ts), inside a function that
 * runs it once, called where that import was; the names it binds stay the module's (`global`).
 */
function waiting(runner: string, binds: string[], text: string, module: string, line: number): string {
  const body = text
    .split('\n')
    .map((l) => (l.trim() ? `    ${l}` : l))
    .join('\n');
  return [
    `def ${runner}():`,
    `    # ${module}, line ${line}: run when a function first imports that module, as the original runs it`,
    ...(binds.length ? [`    global ${[...new Set(binds)].join(', ')}`] : []),
    `    if "done" in ${runner}.__dict__:`,
    '        return',
    body,
    `    ${runner}.done = True`,
  ].join('\n');
}

/** A commit as the header says it (`# commit X, with changes not committed on top of it`), when the code is not all in it. */
export function commitWords(commit: string | null, uncommitted?: boolean): string {
  if (!commit) return 'unknown (not a git checkout)';
  return uncommitted ? `${commit}, with changes not committed on top of it` : commit;
}

/** Inlined modules used as objects: an empty module object for each after the imports, given its definitions at the end. */
function moduleObjects(closure: ClosureResult, names: Map<string, string>): { made: string; filled: string } | undefined {
  const objects = [...(closure.modulesAsObjects ?? new Map<string, { name: string; key: string }[]>())].sort(([a], [b]) => (a < b ? -1 : 1));
  if (!objects.length) return undefined;
  return {
    made: objects
      .map(
        ([m]) => `${moduleObjectName(m)} = __import__("types").ModuleType(${JSON.stringify(m)})  # stands in for the module ${m}, whose code is in this file`,
      )
      .join('\n'),
    filled: objects
      .map(
        ([m, symbols]) =>
          `${moduleObjectName(m)}.__dict__.update({${symbols
            .filter((x) => names.has(x.key))
            .map((x) => `${JSON.stringify(x.name)}: ${names.get(x.key)}`)
            .join(', ')}})`,
      )
      .join('\n'),
  };
}

export function emitFile(closure: ClosureResult, ctx: EmitContext, target: string): EmitResult {
  const order = orderUnits(closure, (n) => {
    const u = n.rec.facts.units[n.unit];
    return ctx.parsed(n.rec).text.slice(u.start, u.end);
  });
  const names = assignNames(closure, order);
  const future = order.some((n) => n.rec.facts.futureAnnotations);
  const externals = [...closure.externals.values()];
  const block = importBlock(externals, names, future, ctx.stdlib, ctx.absent);
  let imports = block.text;
  const thirdParty = block.thirdParty;
  const body: string[] = [];
  const definitions: ProvenanceEntry[] = [];
  const sizes: number[] = [];
  const all: EmitResult['pieces'] = [];
  const kept: UnitNode[] = [];
  const providedNames: string[] = [];
  const providedIds: string[] = [];
  const wholes = order.map((node) => withoutMarkers(unitText(node, ctx.parsed(node.rec), names)));
  // docstrings read at run time (`__doc__`, `inspect.getdoc`, a decorator parsing Args) are data: all kept whole
  const shorten = wholes.some((t) => DOCSTRINGS_READ.test(t)) ? undefined : ctx.shorten;
  for (const [at, node] of order.entries()) {
    const isRoot = node.key === closure.root.key;
    const u = node.rec.facts.units[node.unit];
    const finalNames = u.binds.map((b) => names.get(symbolKey(node.rec, b)) ?? b);
    const runner = closure.lazy?.get(node.key);
    const whole = shorten && !isRoot ? shorten(wholes[at]) : wholes[at];
    const text = runner ? waiting(runner, finalNames, whole, node.rec.module, u.startLine) : whole;
    const id = `${node.rec.module}:${finalNames.join(',')}:${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
    all.push({ id, names: finalNames, text, root: isRoot, needs: [] });
    // (a file with statements that wait for a function keeps every definition: a shared module's copy would read its
    // own globals, which only this file's functions set)
    if (!isRoot && !closure.lazy?.size && ctx.provided?.ids.has(id)) {
      providedNames.push(...finalNames);
      providedIds.push(id);
      continue;
    }
    kept.push(node);
    body.push(text);
    sizes.push(text.split('\n').length);
    const src = ctx.source(node.rec);
    const unitText = ctx.parsed(node.rec).text.slice(u.start, u.end);
    definitions.push({
      names: finalNames,
      module: node.rec.module,
      repo: src.repo,
      path: src.path,
      lines: [u.startLine, u.endLine],
      blob: src.blob,
      swhid: `swh:1:cnt:${src.blob}`,
      url: src.url,
      commit: src.commit,
      ...(src.uncommitted ? { uncommitted: true } : {}),
      license: src.license,
      digest: definitionDigest(unitText),
    });
  }
  // what each definition needs, by position in the file: for shared modules, and (those kept) for the graph
  const orderIndex = new Map(order.map((n, i) => [n.key, i]));
  const needEdges: { from: number; to: number; def: boolean }[] = [];
  for (const [i, n] of order.entries()) {
    closure.graph.forEachOutEdge(n.key, (_e, attr, _s, to) => {
      const j = orderIndex.get(to);
      if (j === undefined || j === i) return;
      needEdges.push({ from: i, to: j, def: !!attr.def });
      if (!all[i].needs.includes(j)) all[i].needs.push(j);
    });
  }
  if (providedNames.length && ctx.provided) imports = importsLeft(body, providedNames, externals, names, future, ctx);
  // the body in pieces, hashed one by one: a piece keeps the one-byte encoding of its source file, where the joined
  // whole is two-byte when any file is (UTF-8 from two-byte strings was most of a large pull's hashing)
  if (closure.leftOut?.length) imports = [imports, LEFT_OUT_STAND_IN].filter(Boolean).join('\n\n\n');
  const objects = moduleObjects(closure, names);
  if (objects) {
    imports = [imports, objects.made].filter(Boolean).join('\n\n');
    body.push(objects.filled);
  }
  const pieces = [...(imports ? [`${imports}\n\n\n`] : []), ...body.map((text, i) => (i ? `\n\n\n${text}` : text)), '\n'];
  const rest = pieces.join('');
  const digest = createHash('sha256');
  for (const piece of pieces) digest.update(piece);
  const hash = digest.digest('hex');
  const root = closure.root;
  const rootSrc = ctx.source(root.rec);
  const renamed: Record<string, string> = {};
  for (const s of closure.symbols.values()) {
    const n = names.get(s.key);
    if (n && n !== s.name) renamed[`${s.rec.module}.${s.name}`] = n;
  }
  const provenance: Provenance = {
    version: 1,
    target,
    // (a class defined under an `if` is a statement unit with several names: the target names the block)
    block: root.rec.facts.units[root.unit].name ?? target.slice(target.lastIndexOf('.') + 1),
    repo: rootSrc.repo,
    url: rootSrc.url ? redactUrls(rootSrc.url) : rootSrc.url,
    commit: rootSrc.commit,
    ...(definitions.some((d) => d.uncommitted && d.repo === rootSrc.repo) ? { uncommitted: true } : {}),
    license: rootSrc.license,
    hash: `sha256:${hash}`,
    pulledAt: (ctx.now?.() ?? new Date()).toISOString(),
    definitions,
    imports: thirdParty,
    renamed,
    ...(providedIds.length && ctx.provided ? { shared: { module: ctx.provided.module, ids: providedIds, names: providedNames } } : {}),
  };
  const notes = [
    ...(ctx.notes ?? []),
    ...(block.absent.length ? [`not installed for this interpreter, stood in for until code uses them: ${block.absent.join(', ')}`] : []),
  ];
  const header = fileHeader(provenance, rootSrc, { notes, optional: block.optional, sharedIds: providedIds.length, hash });
  const keptIndex = new Map(kept.map((n, i) => [orderIndex.get(n.key)!, i]));
  const graph: DependencyGraph = { nodes: definitions.map((d, id) => ({ id, names: d.names, module: d.module, repo: d.repo, lines: sizes[id] })), edges: [] };
  for (const e of needEdges) {
    const from = keptIndex.get(e.from);
    const to = keptIndex.get(e.to);
    if (from !== undefined && to !== undefined) graph.edges.push({ from, to, when: e.def ? 'definition' : 'call' });
  }
  // the imports text of other files needs: those of this file's that bind a name the text uses
  const importsFor = (text: string): string => {
    const words = new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
    const used = externals.filter((e) => words.has((names.get(e.key) ?? e.bound).split('.')[0]));
    return importBlock(used, names, future && used.length > 0, ctx.stdlib, ctx.absent).text;
  };
  return { code: `${header}\n\n${rest}`, provenance, thirdParty, order: kept, graph, pieces: all, importsFor };
}

/** The pulled file's header: where it comes from, what it inlines (each definition's blob and lines), its hash and
 * its provenance record. No line of it can read as a tool's marker. */
function fileHeader(
  provenance: Provenance,
  rootSrc: { repo: string; url: string | null; location: string; commit: string | null; license: string | null },
  { notes, optional, sharedIds, hash }: { notes: string[]; optional: string[]; sharedIds: number; hash: string },
): string {
  return (
    [
      // an explicit coding line: otherwise a block named like `PositionalEncoding:` would read as one (PEP 263)
      '# -*- coding: utf-8 -*-',
      `# Pulled by NN-RAG: ${headerText(provenance.block)} from ${headerText(rootSrc.repo)} (${headerText(rootSrc.url ?? rootSrc.location)})`,
      `# commit ${headerText(commitWords(rootSrc.commit, provenance.uncommitted))}; license ${headerText(rootSrc.license ?? 'not declared')}`,
      ...notes.map((n) => `# ${headerText(n)}`),
      ...(optional.length
        ? [
            `# needed only by code inside functions (the file loads without them; that code says so if they are missing): ${optional.map(headerText).join(', ')}`,
          ]
        : []),
      ...(provenance.shared
        ? [`# shared with the blocks pulled beside it: ${sharedIds} definitions imported from ${headerText(provenance.shared.module)}.py`]
        : []),
      '# inlined from (repository path, git blob: definitions and their lines; the manifest and the record below list each):',
      ...sourceLines(provenance.definitions),
      `# content sha256 of everything below this header: ${hash}`,
      provenanceLine(provenance),
    ]
      // (no header line can read as a tool's marker either: each value is one line, and is indented when it would)
      .map((l) => withoutMarkers(l))
      .join('\n')
  );
}

/** Imports a file's shared definitions from the module beside it: as a package member, else from the folder. */
function sharedImport(module: string, names: string[]): string {
  const list = [...new Set(names)].sort();
  const items = list.join(', ').length > 70 ? `(\n        ${list.join(',\n        ')},\n    )` : list.join(', ');
  return `try:\n    from .${module} import ${items}\nexcept ImportError:\n    from ${module} import ${items}`;
}
