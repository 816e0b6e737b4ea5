/** What the index holds: files, blocks, skipped files with reasons, and the last runs' timings. */
import type { IndexDb } from './database';
import { observedCoverage, type ObservedCoverage } from './observed';

export interface RepoStats {
  name: string;
  kind: string;
  location: string;
  commit: string | null;
  license: string | null;
  files: number;
  parsed: number;
  skipped: number;
  classes: number;
  blocks: number;
  indexedAt: string | null;
  lastRun: unknown;
  /** How much of it observation covers, once it was observed. */
  observed?: ObservedCoverage;
}

export interface IndexStats {
  repos: RepoStats[];
  files: number;
  parsed: number;
  skipped: number;
  modules: number;
  classes: number;
  blocks: number;
  abstract_blocks: number;
  categories: Record<string, number>;
  skipped_by_reason: Record<string, number>;
  skipped_files: { repo: string; path: string; reason: string; detail: string }[];
  db_bytes: number;
  migrations: string[];
  /**
   * Unique blocks at each duplicate level (the paper's Table 4): distinct groups among the blocks, and the largest
   * groups of copies (lexical level).
   */
  uniqueness: {
    blocks: number;
    exact_unique: number;
    lexical_unique: number;
    structural_unique: number;
    largest_groups: { original: string; copies: number; repos: number }[];
  };
}

export function indexStats(db: IndexDb): IndexStats {
  const repos: RepoStats[] = db
    .all(
      `SELECT r.id, r.name, r.kind, r.location, r.commit_id, r.license, r.indexed_at, r.last_run,
        (SELECT count(*) FROM files f WHERE f.repo_id = r.id) AS files,
        (SELECT count(*) FROM files f WHERE f.repo_id = r.id AND f.status = 'parsed') AS parsed,
        (SELECT count(*) FROM files f WHERE f.repo_id = r.id AND f.status = 'skipped') AS skipped,
        (SELECT count(*) FROM classes c WHERE c.repo_id = r.id) AS classes,
        (SELECT count(*) FROM classes c WHERE c.repo_id = r.id AND c.is_block = 1) AS blocks
       FROM repos r ORDER BY r.name`,
    )
    .map((r) => ({ r, observed: observedCoverage(db, Number(r.id)) }))
    .map(({ r, observed }) => ({
      name: String(r.name),
      kind: String(r.kind),
      location: String(r.location),
      commit: r.commit_id === null ? null : String(r.commit_id),
      license: r.license === null ? null : String(r.license),
      files: Number(r.files),
      parsed: Number(r.parsed),
      skipped: Number(r.skipped),
      classes: Number(r.classes),
      blocks: Number(r.blocks),
      indexedAt: r.indexed_at === null ? null : String(r.indexed_at),
      lastRun: r.last_run ? JSON.parse(String(r.last_run)) : null,
      ...(observed ? { observed } : {}),
    }));
  const categories: Record<string, number> = {};
  for (const r of db.all('SELECT category, count(*) AS n FROM classes WHERE is_block = 1 GROUP BY category ORDER BY n DESC')) {
    categories[String(r.category)] = Number(r.n);
  }
  const skipped_by_reason: Record<string, number> = {};
  for (const r of db.all("SELECT reason, count(*) AS n FROM files WHERE status = 'skipped' GROUP BY reason ORDER BY n DESC")) {
    skipped_by_reason[String(r.reason)] = Number(r.n);
  }
  const skipped_files = db
    .all("SELECT r.name AS repo, f.path, f.reason, f.detail FROM files f JOIN repos r ON r.id = f.repo_id WHERE f.status = 'skipped' ORDER BY r.name, f.path")
    .map((r) => ({ repo: String(r.repo), path: String(r.path), reason: String(r.reason), detail: String(r.detail ?? '') }));
  const sum = (k: keyof RepoStats): number => repos.reduce((a, r) => a + Number(r[k]), 0);
  const modules = Number(db.get("SELECT count(DISTINCT repo_id || ':' || module) AS n FROM files WHERE status = 'parsed'")?.n ?? 0);
  const abstract = Number(db.get('SELECT count(*) AS n FROM classes WHERE is_block = 1 AND abstract = 1')?.n ?? 0);
  const u = (col: string): number => Number(db.get(`SELECT count(DISTINCT ${col}) AS n FROM classes WHERE is_block = 1`)?.n ?? 0);
  const largest = db
    .all(
      `SELECT o.repo, o.module, o.name, g.n, g.repos FROM
         (SELECT dup_lex, count(*) AS n, count(DISTINCT repo_id) AS repos FROM classes WHERE is_block = 1 AND dup_lex IS NOT NULL
          GROUP BY dup_lex HAVING count(*) > 1 ORDER BY count(*) DESC, dup_lex LIMIT 10) g
       JOIN classes o ON o.id = g.dup_lex`,
    )
    .map((r) => ({ original: `${String(r.repo)}:${String(r.module)}.${String(r.name)}`, copies: Number(r.n), repos: Number(r.repos) }));
  return {
    uniqueness: {
      blocks: sum('blocks'),
      exact_unique: u('dup_exact'),
      lexical_unique: u('dup_lex'),
      structural_unique: u('dup_struct'),
      largest_groups: largest,
    },
    repos,
    files: sum('files'),
    parsed: sum('parsed'),
    skipped: sum('skipped'),
    modules,
    classes: sum('classes'),
    blocks: sum('blocks'),
    abstract_blocks: abstract,
    categories,
    skipped_by_reason,
    skipped_files,
    db_bytes: db.sizeBytes(),
    migrations: db.appliedMigrations(),
  };
}

/** How many blocks the index holds. */
export function blockCount(db: IndexDb): number {
  return Number(db.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0);
}

/** The counts of each index as last read, by its state (`indexCounts`: a status asked often reads them once). */
const counted = new WeakMap<IndexDb, { generation: number; counts: { files: number; blocks: number; repos: number } }>();

/** How many files, blocks and repositories the index holds. */
export function indexCounts(db: IndexDb): { files: number; blocks: number; repos: number } {
  const known = counted.get(db);
  if (known?.generation === db.generation) return { ...known.counts };
  const counts = {
    files: Number(db.get('SELECT count(*) AS n FROM files')?.n ?? 0),
    blocks: blockCount(db),
    repos: Number(db.get('SELECT count(*) AS n FROM repos')?.n ?? 0),
  };
  counted.set(db, { generation: db.generation, counts });
  return { ...counts };
}

/** Each repository's name and number of blocks, by name. */
export function blocksPerRepo(db: IndexDb): { repo: string; blocks: number }[] {
  return db
    .all('SELECT r.name, count(c.id) AS n FROM repos r LEFT JOIN classes c ON c.repo_id = r.id AND c.is_block = 1 GROUP BY r.id ORDER BY r.name')
    .map((r) => ({ repo: String(r.name), blocks: Number(r.n) }));
}
