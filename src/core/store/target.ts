/** Pull and show targets: `module.path.ClassName`, `repo:module.path.ClassName`, or a unique class name. */
import { NnragError } from '../base/errors';
import type { IndexDb } from './database';

export interface ClassRef {
  id: number;
  repo: string;
  repoId: number;
  module: string;
  name: string;
  fileId: number;
  path: string;
  line: number;
  endLine: number;
  isBlock: boolean;
}

export function parseTarget(target: string): { repo?: string; module?: string; name: string } {
  const t = target.trim();
  const colon = t.indexOf(':');
  const repo = colon >= 0 ? t.slice(0, colon) : undefined;
  const dotted = colon >= 0 ? t.slice(colon + 1) : t;
  // the class is a Python identifier (Unicode too); module parts are what the index named them after the files, whose
  // names may hold spaces, dashes or any letters
  // eslint-disable-next-line no-control-regex
  if (!t || (t.startsWith('-') && colon < 0) || !/^(?:[^.:\u0000-\u001f]+\.)*[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(dotted)) {
    throw new NnragError('usage', `'${target}' is not a target; write module.path.ClassName or repo:module.path.ClassName`);
  }
  const i = dotted.lastIndexOf('.');
  return i < 0 ? { repo, name: dotted } : { repo, module: dotted.slice(0, i), name: dotted.slice(i + 1) };
}

/** Finds the one class a target names, or throws an error that lists the candidates. */
export function findTarget(db: IndexDb, target: string): ClassRef {
  const t = parseTarget(target);
  const where = ['c.name = ?'];
  const params: (string | number)[] = [t.name];
  if (t.module) {
    where.push('c.module = ?');
    params.push(t.module);
  }
  if (t.repo) {
    where.push('c.repo = ?');
    params.push(t.repo);
  }
  const rows = db.all(
    `SELECT c.id, c.repo, c.repo_id, c.module, c.name, c.file_id, f.path, c.line, c.end_line, c.is_block
     FROM classes c JOIN files f ON f.id = c.file_id WHERE ${where.join(' AND ')} ORDER BY c.id DESC`,
    params,
  );
  // a class defined twice in one module: the last definition wins, as in Python
  const seen = new Set<string>();
  const unique = rows.filter((r) => {
    const key = `${String(r.repo)}:${String(r.module)}.${String(r.name)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  if (unique.length === 0) {
    const repoNote = t.repo && !db.get('SELECT 1 AS x FROM repos WHERE name = ?', [t.repo]) ? ` (no repository named '${t.repo}' is indexed)` : '';
    throw new NnragError('not-found', `no class '${target}' in the index${repoNote}; try 'nn-rag search ${t.name}'`);
  }
  if (unique.length > 1) {
    const list = unique.slice(0, 10).map((r) => `${String(r.repo)}:${String(r.module)}.${String(r.name)}`);
    throw new NnragError('usage', `'${target}' is ambiguous; write one of: ${list.join(', ')}`);
  }
  const r = unique[0];
  return {
    id: Number(r.id),
    repo: String(r.repo),
    repoId: Number(r.repo_id),
    module: String(r.module),
    name: String(r.name),
    fileId: Number(r.file_id),
    path: String(r.path),
    line: Number(r.line),
    endLine: Number(r.end_line),
    isBlock: Number(r.is_block) === 1,
  };
}

/** `repo:module.Class` of every block in the index (or in one repository), in repository and source order. */
export function listBlockTargets(db: IndexDb, repo?: string): string[] {
  return db
    .all(`SELECT repo, module, name FROM classes WHERE is_block = 1 ${repo ? 'AND repo = ?' : ''} ORDER BY repo, module, line`, repo ? [repo] : [])
    .map((r) => `${String(r.repo)}:${String(r.module)}.${String(r.name)}`);
}
