/**
 * What a pull needs of a module beyond the facts the index keeps: per unit, the references to module-level names,
 * the binding sites, the string literals and the import statements, with their offsets in the text. The parse that
 * indexes a file finds them anyway; kept on disk beside the database under the file's git blob id, they spare a pull
 * from parsing every module it inlines again (the first pull of a large block parsed a hundred files).
 *
 * A cache only: a file that is missing, unreadable or does not fit the module's facts is ignored and the module is
 * parsed as before (and written again). Files live in
 * `<database>.units/parser-<version>-<format>/<2 hex>/<blob>.bin`, in the format of unitsCodec.ts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import * as path from 'path';
import { threadId } from 'worker_threads';
import { PARSER_VERSION } from '../parse/facts';
import type { IndexDb } from './database';
import { decodeUnits, encodeUnits, UNITS_FORMAT } from './unitsCodec';
import type { UnitDetail } from './unitsCodec';

export type { UnitDetail } from './unitsCodec';

function fileOf(dir: string, hash: string): string {
  return path.join(dir, hash.slice(0, 2), `${hash}.bin`);
}

/**
 * Writes the detail of the file with blob id `hash`, unless it is there already (`replace`: also then, over an entry
 * that would not load); never throws.
 */
export function saveUnits(dir: string, hash: string, parsed: UnitDetail, replace = false): void {
  if (!/^[0-9a-f]{40}$/.test(hash)) return;
  const file = fileOf(dir, hash);
  if (!replace && existsSync(file)) return;
  try {
    const bytes = encodeUnits(parsed);
    if (replace) {
      // over an entry a reader may be loading: whole or not at all
      const tmp = `${file}.${process.pid}-${threadId}.tmp`;
      writeInFolder(tmp, bytes, 'w');
      renameSync(tmp, file);
    } else {
      // a new entry in one open: two writers of one blob write the same bytes and the second finds it there
      // (EEXIST); a reader that meets a half-written entry parses the module instead and replaces the entry
      writeInFolder(file, bytes, 'wx');
    }
  } catch {
    // a cache: a full disk or a read-only folder only costs a parse at pull time
  }
}

/** Writes `bytes` to `file`, making its folder only when the write finds it missing (one system call, not three). */
function writeInFolder(file: string, bytes: Uint8Array, flag: 'w' | 'wx'): void {
  try {
    writeFileSync(file, bytes, { flag });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, bytes, { flag });
  }
}

/** The detail of blob `hash` for a module with `units` units, or undefined (absent, damaged, or not this module's). */
export function loadUnits(dir: string, hash: string, units: number): UnitDetail | undefined {
  if (!/^[0-9a-f]{40}$/.test(hash)) return undefined;
  try {
    const d = decodeUnits(readFileSync(fileOf(dir, hash)));
    return d.refs.length === units ? d : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Removes what no indexed file needs any more: the folders of other parser versions under `root`, and the blobs of
 * `dir` (one of root's folders) that are not in `keep`. Never throws.
 */
export function pruneUnits(root: string, dir: string, keep: ReadonlySet<string>): number {
  let removed = 0;
  const list = (d: string): string[] => {
    try {
      return readdirSync(d);
    } catch {
      return [];
    }
  };
  for (const name of list(root)) {
    if (name === path.basename(dir)) continue;
    try {
      rmSync(path.join(root, name), { recursive: true, force: true });
    } catch {
      // removed next time
    }
  }
  for (const sub of list(dir)) {
    for (const name of list(path.join(dir, sub))) {
      const hash = name.replace(/\.bin$/, '');
      if (name.endsWith('.bin') && keep.has(hash)) continue;
      try {
        rmSync(path.join(dir, sub, name), { force: true });
        removed++;
      } catch {
        // removed next time
      }
    }
  }
  return removed;
}

/** Where pulls find what they need of indexed files beyond the facts (beside the database file; none in memory). */
export function unitsDirOf(db: IndexDb): { root: string; dir: string } | undefined {
  if (!db.file) return undefined;
  const root = `${db.file}.units`;
  return { root, dir: path.join(root, `parser-${PARSER_VERSION}-${UNITS_FORMAT}`) };
}
