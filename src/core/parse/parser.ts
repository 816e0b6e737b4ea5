/** web-tree-sitter with the Python grammar: bytes in, module facts (or the reason there are none) out. */
import { Language, Parser, Query } from 'web-tree-sitter';
import type { Tree } from 'web-tree-sitter';
import { decodePython } from './decode';
import { extractFacts, Python2Error, TooDeepError } from './facts';
import { copyTree, useRuntime } from './syntax';
import type { SyntaxNode } from './syntax';
import type { ParseOutcome } from './types';

export interface WasmPaths {
  /** web-tree-sitter's runtime, `web-tree-sitter.wasm`. */
  treeSitterWasm: string;
  /** The grammar, `tree-sitter-python.wasm`. */
  pythonWasm: string;
}

/** Files larger than this are skipped and reported (generated tables, vendored blobs). */
export const DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024;

/** Python 2 constructs, looked for on the line where the parse failed (and the one before): a file is Python 2 only
 * where Python 3 cannot read it and a Python 2 form stands there. */
const PY2_HINTS = [
  /^\s*print\s+[^\s(=,)]/,
  /^\s*except\s+[\w.]+\s*,\s*\w+\s*:/,
  /^\s*exec\s+["'\w]/,
  /\b0+[1-7][0-7]*L?\b/,
  /\b\d+[lL]\b/,
  /`[^`\n]+`/,
  /^\s*raise\s+[\w.]+\s*,/,
];
/** CPython's tokenizer refuses the line that would open this many indentation levels (its MAXINDENT). */
const MAX_INDENT_LEVELS = 100;

let runtime: Promise<void> | undefined;

/**
 * web-tree-sitter's tree, node and cursor, kept for the thread's life (see `KEPT_SHAPES` in syntax.ts): one set per
 * thread, never one per parser. A cursor must never be collected: web-tree-sitter's finalizer for a collected cursor
 * deletes whatever cursor its transfer buffer holds at that moment (the last walk's, long freed), not its own, and
 * that double free corrupted the runtime's heap (a parse then failed with "memory access out of bounds").
 */
let keptShapes: readonly object[] | undefined;

/** The docstring of a function or class: a string that is its body's first and only statement there. */
const DOCSTRING_QUERY = ['function_definition', 'class_definition'].map((d) => `(${d} body: (block . (expression_statement . (string) @doc .)))`).join(' ');

/** Where a docstring is in a text: its span (string indices) and the column it starts at. */
export interface DocstringSpan {
  start: number;
  end: number;
  column: number;
  text: string;
  /** The name of the function or class whose docstring it is. */
  owner?: string;
}

export class PythonParser {
  private docQuery: Query | undefined;

  private constructor(private readonly parser: Parser) {}

  static async create(paths: WasmPaths): Promise<PythonParser> {
    if (!runtime) {
      // Emscripten fills the options object with the runtime's exports: the tree copy calls its cursor functions
      const options = { locateFile: () => paths.treeSitterWasm };
      runtime = Parser.init(options).then(() => void useRuntime(options));
    }
    await runtime;
    const language = await Language.load(paths.pythonWasm);
    const parser = new Parser();
    parser.setLanguage(language);
    if (!keptShapes) {
      // a tree outlives the parser that made it
      const kept = parser.parse('pass\n');
      keptShapes = kept ? [kept, kept.rootNode, kept.walk()] : [];
    }
    return new PythonParser(parser);
  }

  /** Parses one file's bytes. Never throws for bad input: the outcome says why it was skipped. */
  parse(bytes: Uint8Array, maxBytes = DEFAULT_MAX_FILE_BYTES): ParseOutcome {
    if (bytes.length > maxBytes) {
      return { ok: false, reason: 'too-large', detail: `${bytes.length} bytes, over the ${maxBytes}-byte limit` };
    }
    const decoded = decodePython(bytes);
    if (!decoded.ok) {
      return { ok: false, reason: decoded.reason, detail: decoded.detail };
    }
    return this.parseText(decoded.text);
  }

  /** Runs `fn` over web-tree-sitter's own tree of `text` (freed afterwards), for callers that walk it themselves. */
  withRawTree<T>(text: string, fn: (tree: Tree) => T): T {
    const tree = this.parser.parse(text);
    if (!tree) throw new Error('the parser returned no tree');
    try {
      return fn(tree);
    } finally {
      tree.delete();
    }
  }

  /** The docstrings of the functions and classes in `text` (a query run inside the parser: no tree is copied). */
  docstrings(text: string): DocstringSpan[] {
    this.docQuery ??= new Query(this.parser.language!, DOCSTRING_QUERY);
    const query = this.docQuery;
    return this.withRawTree(text, (tree) =>
      query.captures(tree.rootNode).map((c) => ({
        start: c.node.startIndex,
        end: c.node.endIndex,
        column: c.node.startPosition.column,
        text: c.node.text,
        owner: c.node.parent?.parent?.parent?.childForFieldName('name')?.text,
      })),
    );
  }

  /** Runs `fn` over the syntax tree of `text` (freed afterwards: keep nothing of it). */
  withTree<T>(text: string, fn: (root: SyntaxNode) => T): T {
    const tree = this.parser.parse(text);
    if (!tree) throw new Error('the parser returned no tree');
    let root: SyntaxNode;
    try {
      root = copyTree(tree, text);
    } finally {
      tree.delete();
    }
    return fn(root);
  }

  parseText(text: string): ParseOutcome {
    const tree = this.parser.parse(text);
    if (!tree) {
      return { ok: false, reason: 'error', detail: 'the parser returned no tree' };
    }
    let deleted = false;
    try {
      const root = tree.rootNode;
      if (root.hasError) {
        const deep = tooManyIndents(text);
        if (deep) return { ok: false, reason: 'too-deep', detail: `IndentationError: too many levels of indentation (line ${deep}), as CPython says` };
        const line = firstErrorLine(root);
        const lines = text.split('\n', line).slice(Math.max(0, line - 2));
        const py2 = lines.some((l) => PY2_HINTS.some((re) => re.test(l)));
        if (py2) return { ok: false, reason: 'python2', detail: `Python 2 syntax (syntax error at line ${line})` };
        // a construct newer than the grammar (`return a, *(b for b in c)`) inside a function's body: the module's
        // definitions are read all the same, and the body is copied as written (CPython compiles it)
        if (!errorsOnlyInFunctionBodies(root)) return { ok: false, reason: 'syntax', detail: `syntax error at line ${line}` };
      }
      const copy = copyTree(tree, text);
      tree.delete();
      deleted = true;
      return { ok: true, ...extractFacts(copy, text) };
    } catch (err) {
      if (err instanceof TooDeepError) return { ok: false, reason: 'too-deep', detail: err.message };
      if (err instanceof Python2Error) return { ok: false, reason: 'python2', detail: err.message };
      if (err instanceof RangeError) return { ok: false, reason: 'too-deep', detail: `nesting too deep: ${err.message}` };
      return { ok: false, reason: 'error', detail: err instanceof Error ? err.message : String(err) };
    } finally {
      if (!deleted) tree.delete();
    }
  }
}

/** The line where indentation first goes deeper than CPython's tokenizer allows, or 0. Blank and comment lines do not
 * count; lines inside brackets or strings may (only asked of files that failed to parse). */
function tooManyIndents(text: string): number {
  const stack = [0];
  let lineNo = 0;
  for (const line of text.split('\n')) {
    lineNo++;
    const body = line.trimStart();
    if (!body || body.startsWith('#')) continue;
    const width = line.length - body.length;
    if (width > stack[stack.length - 1]) {
      stack.push(width);
      if (stack.length > MAX_INDENT_LEVELS) return lineNo;
    } else {
      while (width < stack[stack.length - 1]) stack.pop();
    }
  }
  return 0;
}

/** The error and missing nodes below `node`, in source order (subtrees without an error are not entered). */
function* errorNodes(node: import('web-tree-sitter').Node): Generator<import('web-tree-sitter').Node> {
  const stack = [node];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.isError || n.isMissing) yield n;
    if (!n.hasError) continue;
    for (let i = n.childCount - 1; i >= 0; i--) {
      const c = n.child(i);
      if (c) stack.push(c);
    }
  }
}

/** Whether every error of the tree lies inside a function definition, after its parameters (so the module's and its
 * classes' own statements are whole; the function is copied as written, and the judge's compile tier has the last
 * word on it). */
function errorsOnlyInFunctionBodies(root: import('web-tree-sitter').Node): boolean {
  for (const error of errorNodes(root)) {
    let inBody = false;
    for (let up = error.parent; up && !inBody; up = up.parent) {
      const params = up.type === 'function_definition' ? up.childForFieldName('parameters') : null;
      inBody = !!params && !params.hasError && !params.isMissing && error.startIndex >= params.endIndex;
    }
    if (!inBody) return false;
  }
  return true;
}

function firstErrorLine(root: import('web-tree-sitter').Node): number {
  for (const error of errorNodes(root)) return error.startPosition.row + 1;
  return root.startPosition.row + 1;
}
