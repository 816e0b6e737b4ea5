/**
 * One pass over a tree-sitter Python tree: imports, top-level units, classes, and for every unit the
 * module-scope names it uses, split by when they are needed, following Python's scope rules.
 */
import { codeWordsOf } from './codeWords';
import { fingerprint } from './fingerprint';
import type { SyntaxNode as Node } from './syntax';
import type {
  BindSite,
  ClassBody,
  CallSite,
  Literal,
  ClassFact,
  FunctionFact,
  ImportFact,
  ModuleFacts,
  ParsedModule,
  Ref,
  RegistryUse,
  StringRef,
  Timing,
  Unit,
  UnitKind,
} from './types';

/** Bump when the facts extraction changes: every file is parsed again on the next run. */
export const PARSER_VERSION = '15';

/** Nesting deeper than this is refused (CPython's own parser stops at 200 parentheses). */
export const MAX_DEPTH = 400;

export class TooDeepError extends Error {
  constructor(line: number) {
    super(`nesting deeper than ${MAX_DEPTH} levels at line ${line}`);
  }
}

type ScopeKind = 'module' | 'function' | 'class' | 'comprehension';

/** A scope's bound names, with where each is first bound (the end of its binding statement: `def f` binds after its
 * decorators, defaults and annotations ran). */
class Bindings extends Set<string> {
  /** The end of the statement being collected; what `add` records. */
  at = 0;
  readonly first = new Map<string, number>();
  override add(name: string): this {
    if (!this.first.has(name) || this.first.get(name)! > this.at) this.first.set(name, this.at);
    return super.add(name);
  }
}

class Scope {
  readonly locals = new Bindings();
  readonly globals = new Set<string>();
  readonly nonlocals = new Set<string>();
  constructor(
    readonly kind: ScopeKind,
    readonly parent: Scope | undefined,
  ) {}

  /**
   * True when a bare name read in this scope reaches the module (global or builtin). `at`: where it is read; in a
   * class body, a name the class binds only later (`def device(self) -> device:` under `from torch import device`)
   * is the module's, as Python evaluates it when the method is defined.
   */
  isFree(name: string, at?: number): boolean {
    let scope: Scope | undefined = this;
    let first = true;
    while (scope) {
      if (scope.kind === 'module') return true;
      if (scope.globals.has(name)) return true;
      const notYet = first && scope.kind === 'class' && at !== undefined && !scope.nonlocals.has(name) && (scope.locals.first.get(name) ?? 0) > at;
      // class scopes are visible only to code directly in the class body
      if ((first || scope.kind !== 'class') && !notYet && (scope.locals.has(name) || scope.nonlocals.has(name))) {
        return false;
      }
      first = false;
      scope = scope.parent;
    }
    return true;
  }

  /** The scope a walrus binds in: the nearest non-comprehension scope. */
  walrusTarget(): Scope {
    let scope: Scope = this;
    while (scope.kind === 'comprehension' && scope.parent) scope = scope.parent;
    return scope;
  }
}

const PATTERN_CONTAINERS = new Set([
  'pattern_list',
  'tuple_pattern',
  'list_pattern',
  'tuple',
  'list',
  'parenthesized_expression',
  'list_splat_pattern',
  'list_splat',
  'expression_list',
]);
const IDENT_STRING = /^[A-Za-z_][A-Za-z0-9_]{0,79}$/;

function stringValue(node: Node): string | undefined {
  if (node.type !== 'string') return undefined;
  let out = '';
  for (const child of node.namedChildren) {
    if (!child) continue;
    if (child.type === 'interpolation') return undefined;
    if (child.type === 'string_content') out += child.text;
    else if (child.type === 'escape_sequence') out += child.text;
  }
  return out;
}

function docstringOf(body: Node | null): string {
  if (!body) return '';
  const first = body.namedChildren.find((c) => c && c.type !== 'comment');
  if (first?.type === 'expression_statement' && first.namedChildCount === 1) {
    const s = first.namedChild(0);
    if (s?.type === 'string') return (stringValue(s) ?? '').trim();
  }
  return '';
}

function collapse(text: string, max = 400): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** The definition node inside a possibly decorated definition. */
function definitionOf(node: Node): Node {
  return node.type === 'decorated_definition' ? (node.childForFieldName('definition') ?? node) : node;
}

function decoratorsOf(node: Node): Node[] {
  return node.type === 'decorated_definition' ? (node.namedChildren.filter((c) => c?.type === 'decorator') as Node[]) : [];
}

/** Text of a dotted expression (`a.b.c`), or undefined if it is not one. */
export function dottedText(node: Node | null): string | undefined {
  if (!node) return undefined;
  if (node.type === 'identifier') return node.text;
  if (node.type === 'attribute') {
    const obj = dottedText(node.childForFieldName('object'));
    const attr = node.childForFieldName('attribute');
    return obj && attr ? `${obj}.${attr.text}` : undefined;
  }
  return undefined;
}

export function extractFacts(root: Node, text: string): ParsedModule {
  return new Extractor(text).run(root);
}

class Extractor {
  private readonly imports: ImportFact[] = [];
  private readonly units: Unit[] = [];
  private readonly classes: ClassFact[] = [];
  private readonly functions: FunctionFact[] = [];
  private readonly registrations: RegistryUse[] = [];
  private readonly calls: CallSite[] = [];
  private readonly refs: Ref[][] = [];
  private readonly strings: StringRef[][] = [];
  private readonly importRanges: ParsedModule['importRanges'] = [];
  private all: string[] | null = null;
  private futureAnnotations = false;
  private unitIndex = 0;
  private curRefs: Ref[] = [];
  private curStrings: StringRef[] = [];
  private curSites: BindSite[] = [];
  private readonly bindSites: BindSite[][] = [];
  private curBody: ClassBody | null = null;
  private readonly bodies: (ClassBody | null)[] = [];
  private depth = 0;

  constructor(private readonly text: string) {}

  run(root: Node): ParsedModule {
    const moduleScope = new Scope('module', undefined);
    const body = root.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
    // `from __future__ import annotations` must come first; find it before any analysis
    for (const stmt of body) {
      if (stmt.type === 'future_import_statement' && /\bannotations\b/.test(stmt.text)) {
        this.futureAnnotations = true;
      }
    }
    for (const stmt of body) {
      this.unitIndex = this.units.length;
      this.curRefs = [];
      this.curStrings = [];
      this.curSites = [];
      this.curBody = null;
      const unit = this.topLevel(stmt, moduleScope);
      this.units.push(unit);
      this.refs.push(this.curRefs);
      this.strings.push(this.curStrings);
      this.bindSites.push(this.curSites);
      this.bodies.push(this.curBody);
    }
    const facts: ModuleFacts = {
      docstring: docstringOf(root),
      all: this.all,
      futureAnnotations: this.futureAnnotations,
      imports: this.imports,
      units: this.units,
      classes: this.classes,
      functions: this.functions,
      registrations: this.registrations,
      calls: this.calls,
    };
    return {
      facts,
      text: this.text,
      refs: this.refs,
      strings: this.strings,
      bindSites: this.bindSites,
      importRanges: this.importRanges,
      bodies: this.bodies,
    };
  }

  // ---- top level -------------------------------------------------------------------------------

  private topLevel(stmt: Node, moduleScope: Scope): Unit {
    const unit: Unit = {
      kind: 'other',
      binds: [],
      defNames: [],
      callNames: [],
      start: stmt.startIndex,
      end: stmt.endIndex,
      startLine: stmt.startPosition.row + 1,
      endLine: stmt.endPosition.row + 1,
    };
    const binds = new Set<string>();
    const kind = this.classify(stmt, unit);
    unit.kind = kind;
    if (kind === 'main') {
      return unit; // `if __name__ == "__main__":` never runs on import
    }
    this.collectTopBindings(stmt, binds, false, unit.guard === 'type-checking');
    this.visit(stmt, moduleScope, 'def');
    unit.binds = [...binds];
    const def = new Set<string>();
    const call = new Set<string>();
    for (const r of this.curRefs) (r.timing === 'def' ? def : call).add(r.name);
    for (const n of def) call.delete(n);
    unit.defNames = [...def];
    unit.callNames = [...call];
    this.noteAll(stmt);
    this.noteRegistrationCall(stmt);
    return unit;
  }

  private classify(stmt: Node, unit: Unit): UnitKind {
    const def = definitionOf(stmt);
    switch (def.type) {
      case 'class_definition':
        unit.name = def.childForFieldName('name')?.text;
        this.noteClass(stmt, def, true);
        return 'class';
      case 'function_definition':
        unit.name = def.childForFieldName('name')?.text;
        this.noteFunction(def);
        return 'function';
      case 'import_statement':
      case 'import_from_statement':
      case 'future_import_statement':
        return 'import';
      case 'expression_statement': {
        const inner = def.namedChild(0);
        if (inner && (inner.type === 'assignment' || inner.type === 'augmented_assignment')) return 'assign';
        return 'expr';
      }
      case 'if_statement': {
        const cond = def.childForFieldName('condition')?.text.replace(/\s+/g, '') ?? '';
        if (/^__name__==['"]__main__['"]$|^['"]__main__['"]==__name__$/.test(cond)) return 'main';
        unit.guard = /^(typing\.)?TYPE_CHECKING$/.test(cond) ? 'type-checking' : 'if';
        this.noteNested(def);
        return 'compound';
      }
      case 'try_statement':
        unit.guard = 'try';
        this.noteNested(def);
        return 'compound';
      case 'with_statement':
      case 'for_statement':
      case 'while_statement':
        this.noteNested(def);
        return 'compound';
      default:
        return 'other';
    }
  }

  /** Classes and functions defined inside a top-level if/try/with block. */
  private noteNested(node: Node): void {
    for (const child of node.namedChildren) {
      if (!child) continue;
      const def = definitionOf(child);
      if (def.type === 'class_definition') this.noteClass(child, def);
      else if (def.type === 'function_definition') this.noteFunction(def);
      else if (['block', 'else_clause', 'elif_clause', 'except_clause', 'finally_clause', 'except_group_clause'].includes(child.type)) {
        this.noteNested(child);
      }
    }
  }

  private noteFunction(def: Node): void {
    const name = def.childForFieldName('name')?.text;
    if (!name) return;
    this.functions.push({
      name,
      unit: this.unitIndex,
      startLine: def.startPosition.row + 1,
      endLine: def.endPosition.row + 1,
      signature: collapse(def.childForFieldName('parameters')?.text ?? '()'),
      docstring: docstringOf(def.childForFieldName('body')).slice(0, 2000),
    });
  }

  private noteClass(outer: Node, def: Node, topLevel = false): void {
    const name = def.childForFieldName('name')?.text;
    if (!name) return;
    const bases: string[] = [];
    let abstract = false;
    const superclasses = def.childForFieldName('superclasses');
    for (const arg of superclasses?.namedChildren ?? []) {
      if (!arg) continue;
      if (arg.type === 'keyword_argument') {
        const v = arg.childForFieldName('value')?.text ?? '';
        if (/ABCMeta$/.test(v)) abstract = true;
        continue;
      }
      bases.push(collapse(arg.text, 200));
      if (/(^|\.)ABC$/.test(arg.text)) abstract = true;
    }
    const decorators = decoratorsOf(outer).map((d) => collapse(d.text.replace(/^@\s*/, ''), 200));
    const body = def.childForFieldName('body');
    const methods: string[] = [];
    let signature = '';
    let forwardSignature = '';
    const comments: string[] = [];
    const members: ClassBody = { statements: 0, methods: [] };
    let leading = true;
    for (const stmt of body?.namedChildren ?? []) {
      if (!stmt) continue;
      if (stmt.type === 'comment') {
        if (leading) comments.push(stmt.text.replace(/^#+\s?/, ''));
        continue;
      }
      leading = false;
      members.statements++;
      const mdef = definitionOf(stmt);
      if (mdef.type !== 'function_definition') continue;
      const mname = mdef.childForFieldName('name')?.text ?? '';
      methods.push(mname);
      if (mname) members.methods.push({ name: mname, start: stmt.startIndex, end: stmt.endIndex });
      // without the source's comments (strings kept as they are): a signature reads on one line
      const params = (mdef.childForFieldName('parameters')?.text ?? '()').replace(
        /("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|#[^\n]*/g,
        (m, str: string | undefined) => str ?? '',
      );
      const sig = collapse(params.replace(/^\(\s*self\s*,?\s*/, '('), 300);
      if (mname === '__init__') signature = sig;
      if (mname === 'forward') forwardSignature = sig;
      if (decoratorsOf(stmt).some((d) => /abstractmethod/.test(d.text))) abstract = true;
    }
    if (topLevel) this.curBody = members;
    const fact: ClassFact = {
      name,
      unit: this.unitIndex,
      startLine: def.startPosition.row + 1,
      endLine: def.endPosition.row + 1,
      bases,
      decorators,
      docstring: docstringOf(body).slice(0, 4000),
      comments: comments.join(' ').slice(0, 2000),
      signature,
      forwardSignature,
      methods,
      abstract,
      does: codeWordsOf(def.text),
      dup: fingerprint(def, this.text),
    };
    for (const d of decoratorsOf(outer)) {
      const reg = registryDecorator(d);
      if (reg) fact.registry = reg;
    }
    this.classes.push(fact);
  }

  private noteAll(stmt: Node): void {
    if (stmt.type !== 'expression_statement') return;
    const inner = stmt.namedChild(0);
    if (!inner) return;
    let values: Node | null = null;
    let extend = false;
    if (inner.type === 'assignment' && inner.childForFieldName('left')?.text === '__all__') {
      values = inner.childForFieldName('right');
    } else if (inner.type === 'augmented_assignment' && inner.childForFieldName('left')?.text === '__all__') {
      values = inner.childForFieldName('right');
      extend = true;
    } else if (inner.type === 'call' && inner.childForFieldName('function')?.text === '__all__.extend') {
      values = inner.childForFieldName('arguments')?.namedChild(0) ?? null;
      extend = true;
    }
    if (!values || !['list', 'tuple'].includes(values.type)) return;
    const names = values.namedChildren.map((c) => (c ? stringValue(c) : undefined)).filter((s): s is string => !!s);
    this.all = extend && this.all ? [...this.all, ...names] : names;
  }

  /**
   * `MODELS.register_module(module=Foo)`, `MODELS.register_module('BN', module=nn.BatchNorm2d)`,
   * `MODELS.register_module(name='x', module=Foo)` at module level, also in an `if`/`try` block, and
   * `for m in [nn.ReLU, nn.ELU]: MODELS.register_module(module=m)` (each class of the list, by its own name).
   */
  private noteRegistrationCall(stmt: Node, loop?: { variable: string; classes: string[] }, depth = 0): void {
    if (depth > 4) return;
    if (
      stmt.type === 'if_statement' ||
      stmt.type === 'try_statement' ||
      stmt.type === 'else_clause' ||
      stmt.type === 'elif_clause' ||
      stmt.type === 'block' ||
      stmt.type === 'except_clause' ||
      stmt.type === 'finally_clause'
    ) {
      for (const child of stmt.namedChildren) if (child) this.noteRegistrationCall(child, loop, depth + 1);
      return;
    }
    if (stmt.type === 'for_statement' && !loop) {
      const variable = stmt.childForFieldName('left');
      const over = stmt.childForFieldName('right');
      if (variable?.type !== 'identifier' || !over || !['list', 'tuple'].includes(over.type)) return;
      const classes = over.namedChildren.map((c) => dottedText(c)).filter((c): c is string => !!c);
      const body = stmt.childForFieldName('body');
      if (body && classes.length) this.noteRegistrationCall(body, { variable: variable.text, classes }, depth + 1);
      return;
    }
    if (stmt.type !== 'expression_statement') return;
    const call = stmt.namedChild(0);
    if (call?.type !== 'call') return;
    const fn = dottedText(call.childForFieldName('function'));
    if (!fn || !/\.(register_module|register)$/.test(fn)) return;
    let target: string | undefined;
    let alias: string | undefined;
    for (const [i, arg] of (call.childForFieldName('arguments')?.namedChildren ?? []).entries()) {
      if (i === 0 && arg?.type === 'string') alias = stringValue(arg);
      if (arg?.type !== 'keyword_argument') continue;
      const key = arg.childForFieldName('name')?.text;
      const value = arg.childForFieldName('value');
      if (!value) continue;
      if (key === 'module' || key === 'cls') target = dottedText(value);
      if (key === 'name') alias = stringValue(value);
    }
    const registry = fn.replace(/\.[^.]+$/, '');
    const unit = this.unitIndex;
    if (loop && target === loop.variable) for (const c of loop.classes) this.registrations.push({ registry, target: c, unit });
    else if (target) this.registrations.push({ registry, alias, target, unit });
  }

  // ---- bindings ---------------------------------------------------------------------------------

  /** Names a top-level statement binds in the module, looking into if/try/with/for blocks. */
  private collectTopBindings(node: Node, out: Set<string>, guarded: boolean, typeChecking: boolean): void {
    const def = definitionOf(node);
    switch (def.type) {
      case 'class_definition':
      case 'function_definition': {
        const name = def.childForFieldName('name');
        if (name) {
          out.add(name.text);
          this.curSites.push({ name: name.text, start: name.startIndex, end: name.endIndex });
        }
        return;
      }
      case 'import_statement':
      case 'import_from_statement':
        this.recordImport(def, false, typeChecking, guarded, out);
        return;
      case 'expression_statement':
        for (const c of def.namedChildren) if (c) this.targetsOf(c, out);
        return;
      case 'for_statement':
        this.patternNames(def.childForFieldName('left'), out, this.curSites);
        break;
      case 'with_statement':
        for (const clause of def.namedChildren) {
          if (clause?.type !== 'with_clause') continue;
          for (const t of clause.descendantsOfType('as_pattern_target')) if (t) this.patternNames(t, out, this.curSites);
        }
        break;
      case 'except_clause':
        for (const c of def.namedChildren) {
          if (c?.type === 'as_pattern') this.patternNames(c.childForFieldName('alias'), out, this.curSites);
        }
        break;
      case 'if_statement':
      case 'try_statement':
      case 'while_statement':
      case 'else_clause':
      case 'elif_clause':
      case 'finally_clause':
      case 'except_group_clause':
        break;
      default:
        return;
    }
    for (const child of def.namedChildren) {
      if (!child) continue;
      if (child.type === 'block') {
        for (const stmt of child.namedChildren) if (stmt) this.collectTopBindings(stmt, out, true, typeChecking);
      } else if (child.type.endsWith('_clause') && child.type !== 'with_clause') {
        this.collectTopBindings(child, out, true, typeChecking);
      } else if (child.type === 'named_expression') {
        const n = child.childForFieldName('name');
        if (n) out.add(n.text);
      }
    }
  }

  /** Assignment targets inside an expression statement (`a = b = 1`, `x: int = 1`, `a += 1`). */
  private targetsOf(node: Node, out: Set<string>): void {
    if (node.type === 'assignment') {
      this.patternNames(node.childForFieldName('left'), out, this.curSites);
      const right = node.childForFieldName('right');
      if (right?.type === 'assignment') this.targetsOf(right, out);
    } else if (node.type === 'augmented_assignment') {
      this.patternNames(node.childForFieldName('left'), out, this.curSites);
    }
    // walrus at module level binds too (the text check spares a walk through the tree for nearly every statement)
    if (!this.text.slice(node.startIndex, node.endIndex).includes(':=')) return;
    for (const w of node.descendantsOfType('named_expression')) {
      const n = w?.childForFieldName('name');
      if (n) {
        out.add(n.text);
        this.curSites.push({ name: n.text, start: n.startIndex, end: n.endIndex });
      }
    }
  }

  private patternNames(node: Node | null, out: Set<string>, sites?: BindSite[]): void {
    if (!node) return;
    if (node.type === 'identifier') {
      out.add(node.text);
      sites?.push({ name: node.text, start: node.startIndex, end: node.endIndex });
    } else if (PATTERN_CONTAINERS.has(node.type) || node.type === 'as_pattern_target') {
      for (const c of node.namedChildren) if (c) this.patternNames(c, out, sites);
    }
  }

  private recordImport(node: Node, inFunction: boolean, typeChecking: boolean, guarded: boolean, out: Set<string>): void {
    const line = node.startPosition.row + 1;
    const base = { line, inFunction, typeChecking, guarded, unit: this.unitIndex };
    const first = this.imports.length;
    if (node.type === 'import_statement') {
      for (const item of node.namedChildren) {
        if (!item) continue;
        if (item.type === 'dotted_name') {
          const module = item.text.replace(/\s+/g, '');
          const bound = module.split('.')[0];
          out.add(bound);
          this.imports.push({ kind: 'import', module, level: 0, bound, ...base });
        } else if (item.type === 'aliased_import') {
          const module = (item.childForFieldName('name')?.text ?? '').replace(/\s+/g, '');
          const bound = item.childForFieldName('alias')?.text ?? module;
          out.add(bound);
          this.imports.push({ kind: 'import', module, level: 0, bound, ...base });
        }
      }
    } else if (node.type === 'import_from_statement') {
      const modNode = node.childForFieldName('module_name');
      let module = '';
      let level = 0;
      if (modNode?.type === 'relative_import') {
        const prefix = modNode.namedChildren.find((c) => c?.type === 'import_prefix');
        level = (prefix?.text ?? '').length;
        module = modNode.namedChildren.find((c) => c?.type === 'dotted_name')?.text ?? '';
      } else if (modNode) {
        module = modNode.text;
      }
      module = module.replace(/\s+/g, '');
      if (node.namedChildren.some((c) => c?.type === 'wildcard_import')) {
        this.imports.push({ kind: 'star', module, level, ...base });
      }
      for (const item of node.childrenForFieldName('name')) {
        if (!item) continue;
        if (item.type === 'dotted_name') {
          out.add(item.text);
          this.imports.push({ kind: 'from', module, level, name: item.text, bound: item.text, ...base });
        } else if (item.type === 'aliased_import') {
          const name = item.childForFieldName('name')?.text ?? '';
          const bound = item.childForFieldName('alias')?.text ?? name;
          out.add(bound);
          this.imports.push({ kind: 'from', module, level, name, bound, ...base });
        }
      }
    }
    if (this.imports.length > first) {
      this.importRanges.push({
        unit: this.unitIndex,
        start: node.startIndex,
        end: node.endIndex,
        imports: Array.from({ length: this.imports.length - first }, (_, i) => first + i),
      });
    }
  }

  /** Bindings of a function or class body (not descending into nested scopes, except for walrus in comprehensions). */
  private collectScope(body: Node | null, scope: Scope): void {
    if (!body) return;
    const stack: Node[] = [body];
    while (stack.length) {
      const node = stack.pop()!;
      // a binding takes effect where its statement ends (a nested one's own end is later or equal)
      scope.locals.at = node.endIndex;
      switch (node.type) {
        case 'function_definition':
        case 'class_definition': {
          const name = node.childForFieldName('name');
          if (name) scope.locals.add(name.text);
          if (node.type === 'function_definition') {
            // defaults and decorators run in this scope; walrus there is rare enough to ignore
          }
          continue;
        }
        case 'lambda':
          continue;
        case 'global_statement':
          for (const c of node.namedChildren) if (c?.type === 'identifier') scope.globals.add(c.text);
          continue;
        case 'nonlocal_statement':
          for (const c of node.namedChildren) if (c?.type === 'identifier') scope.nonlocals.add(c.text);
          continue;
        case 'import_statement':
        case 'import_from_statement': {
          const names = new Set<string>();
          if (scope.kind === 'function') {
            this.recordImport(node, true, false, catchesImportError(node), names);
          } else {
            for (const c of node.namedChildren) {
              if (c?.type === 'dotted_name') names.add(c.text.split('.')[0]);
              if (c?.type === 'aliased_import') names.add(c.childForFieldName('alias')?.text ?? '');
            }
          }
          for (const n of names) scope.locals.add(n);
          continue;
        }
        case 'assignment':
        case 'augmented_assignment':
          this.patternNames(node.childForFieldName('left'), scope.locals);
          break;
        case 'for_statement':
        case 'for_in_clause':
          if (node.type === 'for_statement') this.patternNames(node.childForFieldName('left'), scope.locals);
          break;
        case 'as_pattern_target':
          this.patternNames(node, scope.locals);
          break;
        case 'as_pattern':
          // `except E as e` uses as_pattern with an alias field
          if (node.parent?.type === 'except_clause') this.patternNames(node.childForFieldName('alias'), scope.locals);
          break;
        case 'named_expression': {
          const n = node.childForFieldName('name');
          if (n) scope.walrusTarget().locals.add(n.text);
          break;
        }
        case 'delete_statement':
          for (const c of node.namedChildren) if (c) this.patternNames(c, scope.locals);
          break;
        default:
          break;
      }
      for (let i = node.namedChildCount - 1; i >= 0; i--) {
        const c = node.namedChild(i);
        if (c) stack.push(c);
      }
    }
  }

  // ---- references -------------------------------------------------------------------------------

  private ref(node: Node, scope: Scope, timing: Timing, attrs: string[] = [], attrEnds: number[] = []): void {
    const name = node.text;
    if (!scope.isFree(name, node.startIndex)) return;
    this.curRefs.push({ name, start: node.startIndex, end: node.endIndex, timing, attrs, attrEnds });
  }

  private visitAll(nodes: (Node | null)[], scope: Scope, timing: Timing): void {
    for (const n of nodes) if (n) this.visit(n, scope, timing);
  }

  private visit(node: Node, scope: Scope, timing: Timing): void {
    if (++this.depth > MAX_DEPTH) {
      this.depth = 0;
      throw new TooDeepError(node.startPosition.row + 1);
    }
    try {
      this.visitInner(node, scope, timing);
    } finally {
      this.depth--;
    }
  }

  private visitInner(node: Node, scope: Scope, timing: Timing): void {
    switch (node.type) {
      case 'identifier':
        this.ref(node, scope, timing);
        return;
      case 'attribute':
        this.visitAttribute(node, scope, timing);
        return;
      case 'keyword_argument':
        this.visitAll([node.childForFieldName('value')], scope, timing);
        return;
      case 'call':
        this.noteCall(node);
        this.visitAll(node.namedChildren, scope, timing);
        return;
      case 'string': {
        const v = stringValue(node);
        if (v !== undefined && IDENT_STRING.test(v)) this.curStrings.push({ value: v, timing, at: node.startIndex });
        for (const c of node.namedChildren) if (c?.type === 'interpolation') this.visitAll(c.namedChildren, scope, timing);
        return;
      }
      case 'concatenated_string':
        this.visitAll(node.namedChildren, scope, timing);
        return;
      case 'decorated_definition':
        for (const d of decoratorsOf(node)) this.visitAll(d.namedChildren, scope, timing);
        this.visitAll([node.childForFieldName('definition')], scope, timing);
        return;
      case 'function_definition':
        this.visitFunction(node, scope, timing);
        return;
      case 'class_definition':
        this.visitClass(node, scope, timing);
        return;
      case 'lambda': {
        const params = node.childForFieldName('parameters');
        const fn = new Scope('function', scope);
        this.visitParameters(params, scope, fn, timing);
        const body = node.childForFieldName('body');
        this.collectScope(body, fn);
        if (body) this.visit(body, fn, 'call');
        return;
      }
      case 'list_comprehension':
      case 'set_comprehension':
      case 'dictionary_comprehension':
      case 'generator_expression':
        this.visitComprehension(node, scope, timing);
        return;
      case 'named_expression':
        this.visitAll([node.childForFieldName('value')], scope, timing);
        return;
      case 'assignment': {
        const left = node.childForFieldName('left');
        this.visitTarget(left, scope, timing);
        const type = node.childForFieldName('type');
        // module- and class-level variable annotations are evaluated; function-local ones are not, but
        // linters and the names-closed check read them, so they count as call-time uses
        if (type && !this.futureAnnotations) this.visit(type, scope, scope.kind === 'function' ? 'call' : timing);
        this.visitAll([node.childForFieldName('right')], scope, timing);
        return;
      }
      case 'augmented_assignment':
        this.visitAll([node.childForFieldName('left'), node.childForFieldName('right')], scope, timing);
        return;
      case 'for_statement':
        this.visitTarget(node.childForFieldName('left'), scope, timing);
        this.visitAll([node.childForFieldName('right'), node.childForFieldName('body'), node.childForFieldName('alternative')], scope, timing);
        return;
      case 'as_pattern_target':
        for (const c of node.namedChildren) this.visitTarget(c, scope, timing);
        return;
      case 'as_pattern':
        this.visitAll(
          node.namedChildren.filter((c) => c && c !== node.childForFieldName('alias')),
          scope,
          timing,
        );
        return;
      case 'import_statement':
      case 'import_from_statement':
      case 'future_import_statement':
      case 'global_statement':
      case 'nonlocal_statement':
      case 'comment':
        return;
      case 'print_statement':
      case 'exec_statement':
        throw new Python2Error(node.startPosition.row + 1, node.type);
      case 'raise_statement':
        // `raise E, "message"` is Python 2 only
        if (node.namedChild(0)?.type === 'expression_list') throw new Python2Error(node.startPosition.row + 1, 'raise_statement');
        this.visitAll(node.namedChildren, scope, timing);
        return;
      case 'integer':
        // `0777` and `10L` are Python 2 literals
        if (/^0+[1-9]\d*[lL]?$|^\d+[lL]$/.test(node.text)) throw new Python2Error(node.startPosition.row + 1, 'integer literal');
        return;
      default:
        this.visitAll(node.namedChildren, scope, timing);
    }
  }

  /** A dotted chain rooted at a bare name (`a.b.c`) is one reference with its attributes; else its object is visited. */
  private visitAttribute(node: Node, scope: Scope, timing: Timing): void {
    const attrs: string[] = [];
    const ends: number[] = [];
    let cur: Node = node;
    while (cur.type === 'attribute') {
      const attr = cur.childForFieldName('attribute');
      attrs.unshift(attr?.text ?? '');
      ends.unshift(cur.endIndex);
      const obj = cur.childForFieldName('object');
      if (!obj) return;
      cur = obj;
    }
    if (cur.type === 'identifier') this.ref(cur, scope, timing, attrs, ends);
    else this.visit(cur, scope, timing);
  }

  /** A nested class: its bases in the enclosing scope, its body in a class scope of its own. */
  private visitClass(node: Node, scope: Scope, timing: Timing): void {
    const superclasses = node.childForFieldName('superclasses');
    if (superclasses) this.visit(superclasses, scope, timing);
    const cls = new Scope('class', scope);
    const body = node.childForFieldName('body');
    this.collectScope(body, cls);
    if (body) this.visitAll(body.namedChildren, cls, timing);
  }

  /** Records `Block(64, k=3)`-style calls: literal arguments tell the validator how the repository builds a block. */
  private noteCall(node: Node): void {
    const callee = dottedText(node.childForFieldName('function'));
    if (!callee || !/^[A-Z]/.test(callee.split('.').pop() ?? '') || this.calls.length >= 2000) return;
    const argsNode = node.childForFieldName('arguments');
    if (argsNode?.type !== 'argument_list') return;
    const args: Literal[] = [];
    const kwargs: Record<string, Literal> = {};
    let known = 0;
    for (const a of argsNode.namedChildren) {
      if (!a || a.type === 'comment') continue;
      if (a.type === 'list_splat' || a.type === 'dictionary_splat') return; // *args: positions unknown
      if (a.type === 'keyword_argument') {
        const key = a.childForFieldName('name')?.text;
        const v = literalOf(a.childForFieldName('value'));
        if (!key) continue;
        kwargs[key] = v;
        if (informative(v)) known++;
      } else {
        const v = literalOf(a);
        args.push(v);
        if (informative(v)) known++;
      }
    }
    if (known > 0) this.calls.push({ callee, unit: this.unitIndex, args, kwargs });
  }

  /** Targets bind names; only the objects of attribute and subscript targets are read. */
  private visitTarget(node: Node | null, scope: Scope, timing: Timing): void {
    if (!node) return;
    if (node.type === 'identifier') {
      // writing a name declared `global` is a use of the module's binding
      if (scope.kind !== 'module' && scope.globals.has(node.text)) this.ref(node, scope, timing);
      return;
    }
    if (PATTERN_CONTAINERS.has(node.type)) {
      for (const c of node.namedChildren) this.visitTarget(c, scope, timing);
      return;
    }
    this.visit(node, scope, timing);
  }

  private visitParameters(params: Node | null, outer: Scope, inner: Scope, timing: Timing): void {
    for (const p of params?.namedChildren ?? []) {
      if (!p) continue;
      const nameNode = p.childForFieldName('name') ?? p.namedChildren.find((c) => c?.type === 'identifier') ?? null;
      switch (p.type) {
        case 'identifier':
          inner.locals.add(p.text);
          break;
        case 'default_parameter':
        case 'typed_default_parameter':
          if (nameNode) inner.locals.add(nameNode.text);
          this.visitAll([p.childForFieldName('value')], outer, timing);
          if (p.type === 'typed_default_parameter' && !this.futureAnnotations) {
            this.visitAll([p.childForFieldName('type')], outer, timing);
          }
          break;
        case 'typed_parameter': {
          const names = new Set<string>();
          for (const c of p.namedChildren) if (c && c.type !== 'type') this.patternNames(c, names);
          for (const c of p.namedChildren) {
            if (c?.type === 'list_splat_pattern' || c?.type === 'dictionary_splat_pattern') {
              for (const cc of c.namedChildren) if (cc?.type === 'identifier') names.add(cc.text);
            }
          }
          for (const n of names) inner.locals.add(n);
          if (!this.futureAnnotations) this.visitAll([p.childForFieldName('type')], outer, timing);
          break;
        }
        case 'list_splat_pattern':
        case 'dictionary_splat_pattern':
        case 'tuple_pattern':
          for (const c of p.descendantsOfType('identifier')) if (c) inner.locals.add(c.text);
          break;
        default:
          break;
      }
    }
  }

  private visitFunction(node: Node, scope: Scope, timing: Timing): void {
    const fn = new Scope('function', scope);
    this.visitParameters(node.childForFieldName('parameters'), scope, fn, timing);
    if (!this.futureAnnotations) this.visitAll([node.childForFieldName('return_type')], scope, timing);
    const body = node.childForFieldName('body');
    this.collectScope(body, fn);
    if (body) this.visitAll(body.namedChildren, fn, 'call');
  }

  private visitComprehension(node: Node, scope: Scope, timing: Timing): void {
    const clauses = node.namedChildren.filter((c): c is Node => !!c && (c.type === 'for_in_clause' || c.type === 'if_clause'));
    const comp = new Scope('comprehension', scope);
    for (const c of clauses) {
      if (c.type === 'for_in_clause') this.patternNames(c.childForFieldName('left'), comp.locals);
    }
    // walrus targets inside bind in the enclosing function scope
    const walrus = this.text.slice(node.startIndex, node.endIndex).includes(':=') ? node.descendantsOfType('named_expression') : [];
    for (const w of walrus) {
      const n = w?.childForFieldName('name');
      if (n) comp.walrusTarget().locals.add(n.text);
    }
    let firstIter = true;
    for (const c of clauses) {
      if (c.type === 'for_in_clause') {
        const right = c.childForFieldName('right');
        // the first iterable is evaluated in the enclosing scope
        if (right) this.visit(right, firstIter ? scope : comp, timing);
        firstIter = false;
        this.visitTarget(c.childForFieldName('left'), comp, timing);
      } else {
        this.visitAll(c.namedChildren, comp, timing);
      }
    }
    const body = node.childForFieldName('body');
    if (body) this.visit(body, comp, timing);
    for (const c of node.namedChildren) {
      if (c && c !== body && c.type !== 'for_in_clause' && c.type !== 'if_clause') this.visit(c, comp, timing);
    }
  }
}

/** An extractor and a scope kept for the life of the thread: see `KEPT_SHAPES` in syntax.ts. */
export const KEPT_FACT_SHAPES: readonly object[] = [new Extractor(''), new Scope('module', undefined)];

export class Python2Error extends Error {
  constructor(line: number, what: string) {
    super(`Python 2 syntax (${what.replace('_statement', ' statement')}) at line ${line}`);
  }
}

const UNKNOWN: Literal = { $unknown: true };

/** A value worth recording: a constant, or a class-like or dotted name (not a local variable). */
function informative(v: Literal): boolean {
  if (isUnknown(v)) return false;
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && '$name' in v) return /^[A-Z]|\./.test(v.$name);
  return true;
}

function isUnknown(v: Literal): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && '$unknown' in v;
}

/** The value of a literal expression (numbers, strings, booleans, None, lists and tuples of them, dotted names). */
function literalOf(node: Node | null, depth = 0): Literal {
  if (!node || depth > 3) return UNKNOWN;
  switch (node.type) {
    case 'integer':
    case 'float': {
      const n = Number(node.text.replace(/_/g, ''));
      return Number.isFinite(n) ? n : UNKNOWN;
    }
    case 'unary_operator': {
      const v = literalOf(node.namedChild(0), depth + 1);
      return typeof v === 'number' && node.text.trim().startsWith('-') ? -v : UNKNOWN;
    }
    case 'true':
      return true;
    case 'false':
      return false;
    case 'none':
      return null;
    case 'string': {
      const v = stringValue(node);
      return v === undefined || v.length > 200 ? UNKNOWN : v;
    }
    case 'list':
    case 'tuple': {
      const items = node.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
      if (items.length > 32) return UNKNOWN;
      const values = items.map((c) => literalOf(c, depth + 1));
      return values.some(isUnknown) ? UNKNOWN : values;
    }
    case 'identifier':
    case 'attribute': {
      const d = dottedText(node);
      return d ? { $name: d } : UNKNOWN;
    }
    default:
      return UNKNOWN;
  }
}

/** `@X.register_module()`, `@X.register_module(name="a")`, `@X.register`, `@X.register("a")`. */
function registryDecorator(decorator: Node): RegistryUse | undefined {
  let expr = decorator.namedChild(0);
  if (!expr) return undefined;
  let alias: string | undefined;
  if (expr.type === 'call') {
    for (const arg of expr.childForFieldName('arguments')?.namedChildren ?? []) {
      if (!arg) continue;
      if (arg.type === 'keyword_argument' && arg.childForFieldName('name')?.text === 'name') {
        alias = stringValue(arg.childForFieldName('value')!) ?? alias;
      } else if (arg.type === 'string') {
        alias = stringValue(arg) ?? alias;
      }
    }
    expr = expr.childForFieldName('function');
  }
  const text = dottedText(expr);
  if (!text) return undefined;
  const m = /^(.+)\.(register_module|register)$/.exec(text);
  return m ? { registry: m[1], alias } : undefined;
}

/** Exception names whose handler runs when an import fails. */
const IMPORT_ERRORS = /^(?:builtins\.)?(?:ImportError|ModuleNotFoundError|Exception|BaseException)$/;

/** An `if` condition that holds only where a module can be imported (or never, for type checkers). */
const GUARD_CONDITION = /\bfind_spec\s*\(|\bfind_loader\s*\(|\bTYPE_CHECKING\b|\bis_\w+_available\s*\(/;

/**
 * Whether an import inside a function body sits in the body of a `try` (within that function) whose handlers catch
 * a failed import (`except ImportError`, `ModuleNotFoundError`, `Exception`, a tuple holding one, or a bare
 * `except`): Python then runs the handler when the module does not exist.
 */
export function catchesImportError(node: Node): boolean {
  let child: Node = node;
  for (let at = node.parent; at; child = at, at = at.parent) {
    if (at.type === 'function_definition' || at.type === 'class_definition' || at.type === 'module') return false;
    // `if find_spec("x"):` / `if importlib.util.find_spec("x") is not None:` / `if TYPE_CHECKING:`, at any depth: the
    // import runs only where the module is there (or never)
    if ((at.type === 'if_statement' || at.type === 'elif_clause') && sameNode(at.childForFieldName('consequence'), child)) {
      const condition = at.childForFieldName('condition')?.text ?? '';
      if (GUARD_CONDITION.test(condition) && !/^\s*not\b/.test(condition)) return true;
    }
    if (at.type !== 'try_statement' || !sameNode(at.childForFieldName('body'), child)) continue;
    for (const clause of at.namedChildren) {
      if (clause?.type !== 'except_clause') continue;
      const caught = clause.namedChildren.filter((c): c is Node => !!c && c.type !== 'block' && c.type !== 'comment');
      if (!caught.length) return true;
      const first = caught[0].type === 'as_pattern' ? caught[0].namedChildren[0] : caught[0];
      const names = first?.type === 'tuple' ? first.namedChildren.map((c) => c?.text ?? '') : [first?.text ?? ''];
      if (names.some((n) => IMPORT_ERRORS.test(n.replace(/\s+/g, '')))) return true;
    }
  }
  return false;
}

function sameNode(a: Node | null | undefined, b: Node): boolean {
  return !!a && a.startIndex === b.startIndex && a.endIndex === b.endIndex && a.type === b.type;
}
