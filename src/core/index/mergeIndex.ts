/**
 * `nn-rag merge`: the indexes that `index --shard K/N` made, each of some of the repositories, as one. Repositories,
 * files and classes are copied with new ids; what depends on the whole index (which classes are blocks, duplicate
 * groups, the popularity of names) is computed again over the merged one, and the units caches are joined, so the
 * merged index answers as one `index` run over every repository does. The catalog of observed calls comes along.
 */
import { promises as fsp } from 'fs';
import { NnragError } from '../base/errors';
import { finishRun } from './indexer';
import { PARSER_VERSION } from '../parse/facts';
import { IndexDb } from '../store/database';

/** Columns recomputed over the merged index, not copied. */
const RECOMPUTED = new Set(['id', 'dup_exact', 'dup_lex', 'dup_struct']);

function columnsOf(db: IndexDb, table: string): string[] {
  return db.all(`PRAGMA table_info(${table})`).map((r) => String(r.name));
}

export interface MergeResult {
  shards: { file: string; repositories: string[] }[];
  repositories: number;
  files: number;
  blocks: number;
}

/**
 * Copies the repositories of `from` that `keep` takes (all by default) into `to`, which must not hold one of the same
 * name (`file` names `from` in that error). The caller computes the whole-index columns again (`finishRun`).
 */
export function copyRepositories(to: IndexDb, from: IndexDb, file: string, keep: (name: string) => boolean = () => true): string[] {
  const repoCols = columnsOf(from, 'repos').filter((c) => c !== 'id');
  const fileCols = columnsOf(from, 'files').filter((c) => c !== 'id' && c !== 'repo_id');
  const classCols = columnsOf(from, 'classes').filter((c) => !RECOMPUTED.has(c) && c !== 'file_id' && c !== 'repo_id');
  const names: string[] = [];
  to.transaction(() => {
    for (const repo of from.all('SELECT * FROM repos ORDER BY id')) {
      const name = String(repo.name);
      if (!keep(name)) continue;
      if (to.get('SELECT id FROM repos WHERE name = ?', [name])) {
        throw new NnragError('usage', `${file} and another index both hold the repository ${name}: shards of one index hold each repository once`);
      }
      to.run(
        `INSERT INTO repos (${repoCols.join(', ')}) VALUES (${repoCols.map(() => '?').join(', ')})`,
        repoCols.map((c) => repo[c]),
      );
      const repoId = Number(to.get('SELECT id FROM repos WHERE name = ?', [name])!.id);
      names.push(name);
      for (const f of from.all('SELECT * FROM files WHERE repo_id = ? ORDER BY id', [repo.id])) {
        to.run(`INSERT INTO files (repo_id, ${fileCols.join(', ')}) VALUES (?, ${fileCols.map(() => '?').join(', ')})`, [repoId, ...fileCols.map((c) => f[c])]);
        const fileId = Number(to.get('SELECT id FROM files WHERE repo_id = ? AND path = ?', [repoId, f.path])!.id);
        for (const c of from.all('SELECT * FROM classes WHERE file_id = ? ORDER BY id', [f.id])) {
          to.run(`INSERT INTO classes (file_id, repo_id, ${classCols.join(', ')}) VALUES (?, ?, ${classCols.map(() => '?').join(', ')})`, [
            fileId,
            repoId,
            ...classCols.map((k) => c[k]),
          ]);
          const id = Number(to.get('SELECT last_insert_rowid() AS id')!.id);
          to.run('INSERT INTO classes_fts (docid, name, words, doc, signature, path, repo) VALUES (?, ?, ?, ?, ?, ?, ?)', [
            id,
            c.name,
            c.words,
            c.doc,
            c.signature,
            c.path,
            c.repo,
          ]);
        }
      }
      // the catalog of observed calls (keyed by the blobs of the files it read, which the merge keeps)
      for (const table of ['observed_entries', 'observed_calls', 'observed_filesets', 'observed_paths']) {
        const cols = columnsOf(from, table).filter((c) => c !== 'id' && c !== 'repo_id');
        for (const row of from.all(`SELECT * FROM ${table} WHERE repo_id = ? ORDER BY rowid`, [repo.id])) {
          to.run(`INSERT INTO ${table} (repo_id, ${cols.join(', ')}) VALUES (?, ${cols.map(() => '?').join(', ')})`, [repoId, ...cols.map((c) => row[c])]);
        }
      }
    }
  });
  return names;
}

/** Merges the shard indexes `shards` into `out` (created, or an index whose repositories are none of theirs). */
export async function mergeIndexes(shards: string[], out: string, sqlWasm?: string): Promise<MergeResult> {
  if (!shards.length) throw new NnragError('usage', 'merge needs the shard indexes: nn-rag merge shard-1.db shard-2.db --db merged.db');
  const { db } = await IndexDb.open(out, { sqlWasm, write: 'try' });
  const result: MergeResult = { shards: [], repositories: 0, files: 0, blocks: 0 };
  try {
    for (const file of shards) {
      if (
        !(await fsp.stat(file).then(
          (s) => s.isFile(),
          () => false,
        ))
      )
        throw new NnragError('usage', `${file} is not an index file`);
      const shard = (await IndexDb.open(file, { sqlWasm, readOnly: true })).db;
      try {
        const parser = shard.getMeta('parser_version');
        if (parser !== undefined && parser !== PARSER_VERSION) {
          throw new NnragError(
            'usage',
            `${file} was indexed by another version of NN-RAG's parser (${parser}; this one is ${PARSER_VERSION}): index that shard again`,
          );
        }
        result.shards.push({ file, repositories: copyRepositories(db, shard, file) });
      } finally {
        shard.close();
      }
      // what pulls keep of each file is keyed by its content: the caches join
      await fsp.cp(`${file}.units`, `${out}.units`, { recursive: true, force: false, errorOnExist: false }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    result.blocks = finishRun(db).blocks;
    result.repositories = Number(db.get('SELECT count(*) AS n FROM repos')!.n);
    result.files = Number(db.get('SELECT count(*) AS n FROM files')!.n);
    await db.save();
    return result;
  } finally {
    db.close();
  }
}
