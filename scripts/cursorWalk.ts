/**
 * An experiment behind a design decision: does reading web-tree-sitter's trees cost less from WebAssembly than from
 * JavaScript? Builds scripts/cursorWalk.c with clang (`apt-get install -y --no-install-recommends clang lld`), parses
 * a corpus once, then times in this thread, in rounds: parsing it again (for scale), the walk floor's walk (`countNodes`: type, field, start and end
 * of every node, from JavaScript), the same walk in WebAssembly through the same cursor functions, and the copy of
 * the whole tree the index makes (`copyTree`). Checks first that the WebAssembly walk sees the nodes the copy holds.
 *
 *   node --import tsx scripts/cursorWalk.ts [FOLDER...]    (default: Debian's torch, torchvision and torchaudio)
 *
 * Prints JSON. Not part of the build, the tests or the extension.
 */
import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Language, Parser } from 'web-tree-sitter';
import type { Tree } from 'web-tree-sitter';
import { decodePython } from '../src/core/parse/decode';
import { copyTree, countNodes, useRuntime, withCursor } from '../src/core/parse/syntax';
import type { SyntaxNode } from '../src/core/parse/syntax';
import { openFolder } from '../src/core/sources/folder';

const ROOT = path.resolve(__dirname, '..');
const DIST = '/usr/lib/python3/dist-packages';

/** The WebAssembly API (this project's TypeScript libraries declare no DOM types). */
const wasmApi = (globalThis as unknown as {
  WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object, imports: object) => { exports: object } };
}).WebAssembly;

interface Walker {
  memory: { buffer: ArrayBuffer };
  records(): number;
  walk(tree: number): number;
}

/** Compiles scripts/cursorWalk.c; exits 2 with what is missing when it cannot. */
function build(): object {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nnrag-cursor-walk-'));
  let failure: string | undefined;
  try {
    const out = path.join(dir, 'walk.wasm');
    const flags = ['--target=wasm32', '-O2', '-nostdlib', '-Wl,--no-entry', '-Wl,--allow-undefined'];
    execFileSync('clang', [...flags, '-o', out, path.join(__dirname, 'cursorWalk.c')], { stdio: 'inherit' });
    return new wasmApi.Module(readFileSync(out));
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    failure = missing ? 'needs clang and lld (apt-get install -y --no-install-recommends clang lld)' : (err as Error).message;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.error(`cursorWalk: ${failure}`);
  process.exit(2);
}

async function texts(folders: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const folder of folders) {
    const source = await openFolder({ location: folder });
    for (const file of (await source.list()).files) {
      const decoded = decodePython(readFileSync(source.localPath!(file)));
      if (decoded.ok) out.push(decoded.text);
    }
  }
  return out;
}

/** The copy's nodes in pre-order, as the WebAssembly walk stores them. */
function preOrder(root: SyntaxNode): SyntaxNode[] {
  const nodes: SyntaxNode[] = [];
  const stack = [root];
  while (stack.length) {
    const n = stack.pop()!;
    nodes.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return nodes;
}

async function main(): Promise<void> {
  const folders = process.argv.length > 2 ? process.argv.slice(2) : ['torch', 'torchvision', 'torchaudio'].map((p) => path.join(DIST, p));
  const wasm = build();
  const runtime: Record<string, unknown> = { locateFile: () => path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm') };
  await Parser.init(runtime);
  if (!useRuntime(runtime)) throw new Error("web-tree-sitter's cursor functions are not reachable");
  const language = await Language.load(path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'));
  const parser = new Parser();
  parser.setLanguage(language);
  const cursorFunction = (name: string): unknown => runtime[`_ts_tree_cursor_${name}_wasm`];
  const walker = new wasmApi.Instance(wasm, {
    ts: {
      first_child: cursorFunction('goto_first_child'),
      next_sibling: cursorFunction('goto_next_sibling'),
      parent: cursorFunction('goto_parent'),
      type_id: cursorFunction('current_node_type_id'),
      field_id: cursorFunction('current_field_id'),
      start: cursorFunction('start_index'),
      end: cursorFunction('end_index'),
    },
  }).exports as Walker;
  // through syntax.ts's cursor handling: the cursor copied into the transfer buffer, then its state given back to free
  const walkInWasm = (tree: Tree): Int32Array =>
    withCursor(
      tree,
      (_exports, handle) => {
        const n = walker.walk(handle);
        if (n < 0) throw new Error('the walk ran out of memory');
        return new Int32Array(walker.memory.buffer, walker.records(), n * 5);
      },
      () => {
        throw new Error("web-tree-sitter's cursor functions are not reachable");
      },
    );

  const sources = await texts(folders);
  const trees = sources.map((text) => parser.parse(text)!);
  let nodes = 0;
  trees.forEach((tree, i) => {
    const records = walkInWasm(tree);
    const copy = preOrder(copyTree(tree, sources[i]));
    if (records.length !== copy.length * 5 || countNodes(tree) !== copy.length) throw new Error(`file ${i}: the walks disagree on the number of nodes`);
    copy.forEach((node, k) => {
      const [type, , start, end] = records.subarray(k * 5, k * 5 + 4);
      if ((language.types[type] || 'ERROR') !== node.type || start !== node.startIndex || end !== node.endIndex) throw new Error(`file ${i}, node ${k}: the walks disagree`);
    });
    nodes += copy.length;
  });
  const time = (fn: (tree: Tree, i: number) => unknown): number => {
    const t0 = performance.now();
    trees.forEach(fn);
    return Math.round(performance.now() - t0);
  };
  const rounds: { parse_ms: number; javascript_walk_ms: number; wasm_walk_ms: number; javascript_copy_ms: number }[] = [];
  for (let round = 0; round < 3; round++) {
    rounds.push({
      parse_ms: time((_, i) => parser.parse(sources[i])!.delete()),
      javascript_walk_ms: time((tree) => countNodes(tree)),
      wasm_walk_ms: time((tree) => walkInWasm(tree)),
      javascript_copy_ms: time((tree, i) => copyTree(tree, sources[i])),
    });
  }
  for (const tree of trees) tree.delete();
  console.log(JSON.stringify({ files: sources.length, nodes, rounds }));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
