/**
 * The bench's floors, outside the product: what parsing alone costs, and parsing plus reading every node the way any
 * analysis of the whole tree must. `floorWorker.ts` runs them in the parse workers.
 */
import type { Tree } from 'web-tree-sitter';
import { withCursor } from '../src/core/parse/syntax';
import type { Step } from '../src/core/parse/syntax';

/**
 * Visits every node of `tree` in the same walk as `copyTree` and reads what it reads of each (type, field, start and
 * end offsets), building nothing: what any analysis that reads the whole tree through web-tree-sitter's cursor pays on
 * top of parsing (the benchmark's walk floor). The cost is the cursor functions', not the crossing into WebAssembly:
 * the same walk compiled to WebAssembly, calling the same functions, took as long (an experiment recorded in
 * bench/README.md). Returns the number of nodes.
 */
export function countNodes(tree: Tree): number {
  return withCursor(
    tree,
    (c, handle, step) =>
      count(
        step,
        () =>
          c._ts_tree_cursor_current_node_type_id_wasm(handle) +
          c._ts_tree_cursor_current_field_id_wasm(handle) +
          c._ts_tree_cursor_start_index_wasm(handle) +
          c._ts_tree_cursor_end_index_wasm(handle),
      ),
    (cursor, step) => count(step, () => cursor.nodeTypeId + cursor.currentFieldId + cursor.startIndex + cursor.endIndex),
  );
}

function count(step: Step, read: () => number): number {
  let nodes = 0;
  let depth = 0;
  for (;;) {
    read();
    nodes++;
    if (step(0)) {
      depth++;
      continue;
    }
    while (!step(1)) {
      if (!depth || !step(2)) return nodes;
      depth--;
    }
  }
}
