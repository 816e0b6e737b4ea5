/** Named, idempotent schema migrations, applied in order and recorded in the `migrations` table. */

export interface Migration {
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-initial',
    sql: `
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS repos (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        location TEXT NOT NULL,
        url TEXT,
        ref TEXT,
        commit_id TEXT,
        root TEXT NOT NULL,
        module_prefix TEXT NOT NULL DEFAULT '',
        priority INTEGER NOT NULL DEFAULT 0,
        config TEXT NOT NULL DEFAULT '{}',
        license TEXT,
        indexed_at TEXT,
        last_run TEXT
      );
      CREATE TABLE IF NOT EXISTS files (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        module TEXT NOT NULL,
        is_package INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL,
        mtime REAL,
        hash TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        detail TEXT,
        facts BLOB,
        parse_ms REAL,
        UNIQUE (repo_id, path)
      );
      CREATE INDEX IF NOT EXISTS files_module ON files(module);
      CREATE TABLE IF NOT EXISTS classes (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        repo_id INTEGER NOT NULL,
        module TEXT NOT NULL,
        name TEXT NOT NULL,
        line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        bases TEXT NOT NULL,
        abstract INTEGER NOT NULL DEFAULT 0,
        is_block INTEGER NOT NULL DEFAULT 0,
        uses INTEGER NOT NULL DEFAULT 0,
        category TEXT NOT NULL DEFAULT 'other',
        words TEXT NOT NULL,
        doc TEXT NOT NULL,
        signature TEXT NOT NULL,
        path TEXT NOT NULL,
        repo TEXT NOT NULL,
        validation TEXT
      );
      CREATE INDEX IF NOT EXISTS classes_file ON classes(file_id);
      CREATE INDEX IF NOT EXISTS classes_name ON classes(name);
      CREATE INDEX IF NOT EXISTS classes_module ON classes(module, name);
      CREATE VIRTUAL TABLE IF NOT EXISTS classes_fts USING fts4(
        content="classes", name, words, doc, signature, path, repo, tokenize=porter
      );
    `,
  },
  {
    // duplicate detection (exact, lexical, structural): fingerprints from the parser, group representatives from
    // finishRun (the id of the group's original, by priority and age)
    name: '0002-duplicates',
    sql: `
      ALTER TABLE classes ADD COLUMN exact_hash TEXT;
      ALTER TABLE classes ADD COLUMN lex_sig BLOB;
      ALTER TABLE classes ADD COLUMN struct_sig BLOB;
      ALTER TABLE classes ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE classes ADD COLUMN dup_exact INTEGER;
      ALTER TABLE classes ADD COLUMN dup_lex INTEGER;
      ALTER TABLE classes ADD COLUMN dup_struct INTEGER;
      CREATE INDEX IF NOT EXISTS classes_dup_lex ON classes(dup_lex);
    `,
  },
  {
    // what discovery reads of every module, apart from the whole facts (see factsCodec.ts)
    name: '0003-slim-facts',
    sql: `ALTER TABLE files ADD COLUMN slim BLOB;`,
  },
  {
    // how the repository's own code (its tests) built and called its blocks (pull/observe.ts): per entry point run,
    // the files it imported (its observations hold while their blobs do) and, per class, the calls seen
    name: '0004-observed-calls',
    sql: `
      CREATE TABLE IF NOT EXISTS observed_entries (
        repo_id INTEGER NOT NULL,
        entry TEXT NOT NULL,
        key TEXT NOT NULL,
        files TEXT NOT NULL,
        seconds REAL,
        error TEXT,
        PRIMARY KEY (repo_id, entry)
      );
      CREATE TABLE IF NOT EXISTS observed_calls (
        repo_id INTEGER NOT NULL,
        entry TEXT NOT NULL,
        module TEXT NOT NULL,
        name TEXT NOT NULL,
        call TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS observed_calls_class ON observed_calls(module, name);
    `,
  },
  {
    // the files an observed entry imported, stored once per distinct set (the entries of one repository import the
    // same few sets: a test module and the package's modules it loads); an entry's \`files\` names its set by digest
    name: '0005-observed-filesets',
    sql: `
      CREATE TABLE IF NOT EXISTS observed_filesets (
        repo_id INTEGER NOT NULL,
        digest TEXT NOT NULL,
        files TEXT NOT NULL,
        PRIMARY KEY (repo_id, digest)
      );
    `,
  },
  {
    // the paths the file sets name, numbered once per repository: a set is the list of its paths' numbers
    name: '0006-observed-paths',
    sql: `
      CREATE TABLE IF NOT EXISTS observed_paths (
        repo_id INTEGER NOT NULL,
        num INTEGER NOT NULL,
        path TEXT NOT NULL,
        PRIMARY KEY (repo_id, num),
        UNIQUE (repo_id, path)
      );
    `,
  },
  {
    // the graph's prior for search: how much of the index builds on a block, whether its package exports it, whether
    // it is a variant of another (blocks/discover.ts computes it with the blocks)
    name: '0007-search-prior',
    sql: `ALTER TABLE classes ADD COLUMN prior REAL NOT NULL DEFAULT 0;`,
  },
];
