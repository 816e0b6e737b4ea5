/**
 * A plain JavaScript copy of a tree-sitter syntax tree, built in one cursor walk.
 *
 * web-tree-sitter answers every `node.type`, `node.children` or `childForFieldName` with a call into WebAssembly that
 * marshals nodes through a transfer buffer and builds a new `Node` object: the fact extractor spent most of its time
 * there, more than the parser itself. Copying the tree once costs a handful of WebAssembly calls per node; everything
 * after is ordinary property access. When the runtime's cursor exports are reachable (the module object that
 * `Parser.init` was given), the walk calls them directly, keeping the cursor in the transfer buffer between calls
 * instead of copying it in and out through `setValue`/`getValue` on each one; otherwise it uses the public
 * `TreeCursor` API, same result.
 */
import type { Language, Tree, TreeCursor } from 'web-tree-sitter';

export interface Position {
  row: number;
  column: number;
}

/** The cursor functions of web-tree-sitter's WebAssembly module (present on the object given to `Parser.init`). */
interface CursorExports {
  HEAP32: Int32Array;
  _ts_init(): number;
  _ts_tree_cursor_goto_first_child_wasm(tree: number): number;
  _ts_tree_cursor_goto_next_sibling_wasm(tree: number): number;
  _ts_tree_cursor_goto_parent_wasm(tree: number): number;
  _ts_tree_cursor_current_node_type_id_wasm(tree: number): number;
  _ts_tree_cursor_current_node_is_named_wasm(tree: number): number;
  _ts_tree_cursor_current_field_id_wasm(tree: number): number;
  _ts_tree_cursor_start_index_wasm(tree: number): number;
  _ts_tree_cursor_end_index_wasm(tree: number): number;
}

const CURSOR_FUNCTIONS = [
  '_ts_init',
  '_ts_tree_cursor_goto_first_child_wasm',
  '_ts_tree_cursor_goto_next_sibling_wasm',
  '_ts_tree_cursor_goto_parent_wasm',
  '_ts_tree_cursor_current_node_type_id_wasm',
  '_ts_tree_cursor_current_node_is_named_wasm',
  '_ts_tree_cursor_current_field_id_wasm',
  '_ts_tree_cursor_start_index_wasm',
  '_ts_tree_cursor_end_index_wasm',
] as const;

let direct: { exports: CursorExports; transfer: number } | undefined;

/**
 * Gives the walk the runtime's module object (the options object passed to `Parser.init`, which Emscripten fills with
 * the exports). Ignored, and the public API used, when it does not have what the walk needs.
 */
export function useRuntime(module: object): boolean {
  const m = module as Partial<Record<(typeof CURSOR_FUNCTIONS)[number], unknown>> & { HEAP32?: unknown };
  if (!CURSOR_FUNCTIONS.every((f) => typeof m[f] === 'function') || !(m.HEAP32 instanceof Int32Array)) {
    direct = undefined;
    return false;
  }
  const exports = module as CursorExports;
  direct = { exports, transfer: exports._ts_init() };
  return true;
}

/** Which cursor the walks use: the runtime's exports (`direct`) or web-tree-sitter's public API. */
export function cursorPath(): 'direct' | 'public' {
  return direct ? 'direct' : 'public';
}

/** Runs `fn` with the walks on the public API, as on a runtime whose exports are not reachable (both paths tested). */
export function withPublicCursor<T>(fn: () => T): T {
  const kept = direct;
  direct = undefined;
  try {
    return fn();
  } finally {
    direct = kept;
  }
}

/** Line starts of a text, for positions asked of a few nodes (the walk does not pay for rows and columns). */
class Source {
  private lines: number[] | undefined;
  constructor(readonly text: string) {}

  position(index: number): Position {
    if (!this.lines) {
      const lines = [0];
      for (let i = this.text.indexOf('\n'); i >= 0; i = this.text.indexOf('\n', i + 1)) lines.push(i + 1);
      this.lines = lines;
    }
    const lines = this.lines;
    let lo = 0;
    let hi = lines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lines[mid] <= index) lo = mid;
      else hi = mid - 1;
    }
    return { row: lo, column: index - lines[lo] };
  }
}

const NO_CHILDREN: SyntaxNode[] = [];

/** One node of the copied tree, with the part of web-tree-sitter's `Node` interface the extractors use. */
export class SyntaxNode {
  parent: SyntaxNode | null = null;
  children: SyntaxNode[] = NO_CHILDREN;
  private named: SyntaxNode[] | undefined;

  constructor(
    private readonly source: Source,
    readonly type: string,
    readonly isNamed: boolean,
    /** The field this node fills in its parent (`name`, `body`...), or undefined. */
    readonly field: string | undefined,
    readonly startIndex: number,
    readonly endIndex: number,
  ) {}

  get text(): string {
    return this.source.text.slice(this.startIndex, this.endIndex);
  }

  get startPosition(): Position {
    return this.source.position(this.startIndex);
  }

  get endPosition(): Position {
    return this.source.position(this.endIndex);
  }

  get namedChildren(): SyntaxNode[] {
    if (!this.named) {
      let all = true;
      for (const c of this.children) if (!c.isNamed) all = false;
      this.named = all ? this.children : this.children.filter((c) => c.isNamed);
    }
    return this.named;
  }

  get namedChildCount(): number {
    return this.namedChildren.length;
  }

  namedChild(index: number): SyntaxNode | null {
    return this.namedChildren[index] ?? null;
  }

  childForFieldName(field: string): SyntaxNode | null {
    for (const c of this.children) if (c.field === field) return c;
    return null;
  }

  childrenForFieldName(field: string): SyntaxNode[] {
    return this.children.filter((c) => c.field === field);
  }

  /** This node and every node under it whose type is one of `types`, in source order. */
  descendantsOfType(types: string | string[]): SyntaxNode[] {
    const want = typeof types === 'string' ? [types] : types;
    const out: SyntaxNode[] = [];
    const stack: SyntaxNode[] = [this];
    while (stack.length) {
      const n = stack.pop()!;
      if (want.includes(n.type)) out.push(n);
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
    }
    return out;
  }
}

/**
 * One node and its source, kept for the life of the thread. V8 drops a class's hidden class at a full collection that
 * finds no instance of it (a parse worker holds no tree between two files), and with it every function optimised for
 * that class, which are then compiled again on the next file (three passes over the bench corpus in one worker: 3.8 s of
 * optimising compiles, 2.0 s with the shapes kept). The fact extractor keeps its own classes the same way.
 */
export const KEPT_SHAPES: readonly object[] = [new SyntaxNode(new Source(''), 'module', true, undefined, 0, 0)];

/** The syntax tree of `text` (which `tree` was parsed from) as plain objects. The tree itself can be freed after. */
export function copyTree(tree: Tree, text: string): SyntaxNode {
  const make = maker(tree.language, new Source(text));
  return withCursor(
    tree,
    (c, handle, step) => {
      const namedOf: (boolean | undefined)[] = [];
      return walk(step, () => {
        const typeId = c._ts_tree_cursor_current_node_type_id_wasm(handle);
        let named = namedOf[typeId];
        if (named === undefined) named = namedOf[typeId] = c._ts_tree_cursor_current_node_is_named_wasm(handle) === 1;
        return make(
          typeId,
          named,
          c._ts_tree_cursor_current_field_id_wasm(handle),
          c._ts_tree_cursor_start_index_wasm(handle),
          c._ts_tree_cursor_end_index_wasm(handle),
        );
      });
    },
    (cursor, step) => walk(step, () => make(cursor.nodeTypeId, cursor.nodeIsNamed, cursor.currentFieldId, cursor.startIndex, cursor.endIndex)),
  );
}

type Make = (typeId: number, named: boolean, fieldId: number, start: number, end: number) => SyntaxNode;

function maker(language: Language, source: Source): Make {
  const types = language.types;
  const fields = language.fields;
  return (typeId, named, fieldId, start, end) =>
    new SyntaxNode(source, types[typeId] || 'ERROR', named, fieldId ? (fields[fieldId] ?? undefined) : undefined, start, end);
}

/** Moves the cursor (0 first child, 1 next sibling, 2 parent) and says whether it could. */
export type Step = (move: 0 | 1 | 2) => boolean;

/**
 * The same pre-order walk for both cursors: `step` moves (0 first child, 1 next sibling, 2 parent) and says whether it
 * could; `make` builds the node under the cursor.
 */
function walk(step: Step, make: () => SyntaxNode): SyntaxNode {
  const root = make();
  if (!step(0)) return root;
  // the open nodes, and in `seen` the children met so far of each, one after the other (`from`: where each open
  // node's children start). A node gets an array of its children's exact size once its last child is seen: an array
  // grown by `push` holds 16 slots or more, more than a small node itself: a tree's copy must not cost more heap than
  // its nodes
  const open: SyntaxNode[] = [root];
  const from: number[] = [0];
  const seen: SyntaxNode[] = [];
  let top = 0;
  for (;;) {
    const node = make();
    node.parent = open[open.length - 1];
    seen[top++] = node;
    if (step(0)) {
      open.push(node);
      from.push(top);
      continue;
    }
    while (!step(1)) {
      // every child of the top node has been seen
      const done = open.pop()!;
      const start = from.pop()!;
      done.children = seen.slice(start, top);
      top = start;
      if (!open.length || !step(2)) {
        if (open.length) throw new Error('the syntax tree cursor lost its place');
        return root;
      }
    }
  }
}

/**
 * Runs one walk over a cursor on `tree` and frees the cursor after. When the runtime's cursor exports are reachable,
 * `viaDirect` gets them, the tree's handle and a `step` that calls them (the cursor stays in the transfer buffer for the
 * whole walk: any getter copies it there first); otherwise `viaPublic` gets the cursor and a `step` through
 * web-tree-sitter's public API. A `step` moves (0 first child, 1 next sibling, 2 parent) and says whether it could.
 */
export function withCursor<T>(tree: Tree, viaDirect: (c: CursorExports, handle: number, step: Step) => T, viaPublic: (cursor: TreeCursor, step: Step) => T): T {
  const cursor = tree.walk();
  try {
    if (!direct) {
      return viaPublic(cursor, (move) => (move === 0 ? cursor.gotoFirstChild() : move === 1 ? cursor.gotoNextSibling() : cursor.gotoParent()));
    }
    const { exports: c, transfer } = direct;
    const handle = (tree as unknown as { 0: number })[0];
    void cursor.nodeTypeId; // copies the cursor into the transfer buffer
    try {
      return viaDirect(
        c,
        handle,
        (move) =>
          (move === 0
            ? c._ts_tree_cursor_goto_first_child_wasm(handle)
            : move === 1
              ? c._ts_tree_cursor_goto_next_sibling_wasm(handle)
              : c._ts_tree_cursor_goto_parent_wasm(handle)) === 1,
      );
    } finally {
      // the cursor's stack may have moved while it grew: give the JavaScript object the state it must free
      const state = cursor as unknown as Record<0 | 1 | 2 | 3, number>;
      const heap = c.HEAP32;
      for (let i = 0; i < 4; i++) state[i as 0 | 1 | 2 | 3] = heap[(transfer >> 2) + i];
    }
  } finally {
    cursor.delete();
  }
}
