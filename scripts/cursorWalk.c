/*
 * The walk of src/core/parse/syntax.ts (`countNodes`), compiled to WebAssembly: every node of a tree visited with
 * web-tree-sitter's cursor, its type, field, start and end read. It calls the same exported cursor functions as the
 * JavaScript walk (they are given to it as imports, so each call goes from WebAssembly to WebAssembly), and stores
 * what it reads, five integers a node (type, field, start, end, parent), in its own memory.
 *
 * An experiment, not part of the extension: scripts/cursorWalk.ts builds it with clang and times it against the
 * JavaScript walk. Build: clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -Wl,--allow-undefined
 */
#define IMPORT(name) __attribute__((import_module("ts"), import_name(name)))
IMPORT("first_child") int ts_first_child(int tree);
IMPORT("next_sibling") int ts_next_sibling(int tree);
IMPORT("parent") int ts_parent(int tree);
IMPORT("type_id") int ts_type_id(int tree);
IMPORT("field_id") int ts_field_id(int tree);
IMPORT("start") int ts_start(int tree);
IMPORT("end") int ts_end(int tree);

extern unsigned char __heap_base;

#define FIELDS 5
static int *const out = (int *)&__heap_base;
static unsigned long room;

/* Grows the memory to hold `nodes` records; 0 when it cannot. */
static int reserve(unsigned long nodes) {
  unsigned long need = (unsigned long)&__heap_base + nodes * FIELDS * sizeof(int);
  unsigned long have = __builtin_wasm_memory_size(0) * 65536ul;
  if (need > have && __builtin_wasm_memory_grow(0, (need - have + 65535) / 65536) < 0) return 0;
  room = (__builtin_wasm_memory_size(0) * 65536ul - (unsigned long)&__heap_base) / (FIELDS * sizeof(int));
  return 1;
}

static void put(int n, int parent, int tree) {
  int *r = out + n * FIELDS;
  r[0] = ts_type_id(tree);
  r[1] = ts_field_id(tree);
  r[2] = ts_start(tree);
  r[3] = ts_end(tree);
  r[4] = parent;
}

/* Where the records start in this module's memory. */
__attribute__((export_name("records"))) int records(void) { return (int)out; }

/*
 * Walks the tree whose cursor is in web-tree-sitter's transfer buffer, in pre-order; returns the number of nodes
 * (records at `records()`), or -1 when the memory cannot grow.
 */
__attribute__((export_name("walk"))) int walk(int tree) {
  int n = 0, current = 0;
  if (!room && !reserve(1 << 16)) return -1;
  put(n++, -1, tree);
  for (;;) {
    if (n >= room && !reserve(2ul * n)) return -1;
    if (ts_first_child(tree)) {
      put(n, current, tree);
      current = n++;
      continue;
    }
    for (;;) {
      if (current == 0) return n;
      if (ts_next_sibling(tree)) break;
      ts_parent(tree);
      current = out[current * FIELDS + 4];
    }
    put(n, out[current * FIELDS + 4], tree);
    current = n++;
  }
}
