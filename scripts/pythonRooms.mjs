// The judge's package (python-runner/nnrag_judge) is split by process: `judge/` runs in the judge and decides,
// `worker/` is what the zygote loads and every block process runs, `wire/` is what both share. `npm run lint` fails
// when a module sits outside the three rooms or imports a room it may not: judge and worker never import each other,
// and the wire imports only itself (both processes load it). Imports are read line by line (relative and absolute
// forms; the module part of a `from X import (...)` is always on its first line).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Which rooms each room may import. */
export const ROOM_IMPORTS = { judge: ['judge', 'wire'], worker: ['worker', 'wire'], wire: ['wire'] };

const IMPORT = /^\s*(?:from\s+(\.*)([\w.]*)\s+import\s+([\w\s,()*]+)|import\s+(nnrag_judge[\w.]*))/;

/** Every .py file under `dir` (no `__pycache__`), sorted: the lint's walk and the rooms' alike. */
export function pythonFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === '__pycache__') continue;
    if (statSync(p).isDirectory()) out.push(...pythonFiles(p));
    else if (name.endsWith('.py')) out.push(p);
  }
  return out.sort();
}

/** The room an import names, or undefined when it names none of the package (the standard library, torch). */
function importedRoom(room, dots, module, names) {
  const parts = module ? module.split('.') : [];
  if (dots === '' || dots === undefined) return parts[0] === 'nnrag_judge' ? (parts[1] ?? firstName(names)) : undefined;
  if (dots.length === 1) return room;
  if (dots.length === 2) return parts[0] || firstName(names);
  return '(above the package)';
}

function firstName(names) {
  return (names ?? '').replace(/[()\s]/g, '').split(',')[0] || undefined;
}

/** Each module of `packageDir` outside the rooms, and each import across rooms the rules refuse: `FILE:LINE message`. */
export function roomProblems(packageDir, root = packageDir) {
  const problems = [];
  for (const file of pythonFiles(packageDir)) {
    const rel = relative(packageDir, file).split(sep);
    const where = relative(root, file);
    if (rel.length === 1) {
      if (rel[0] !== '__init__.py') problems.push(`${where}:1 rooms: a module outside judge/, worker/ and wire/ names no process`);
      continue;
    }
    const room = rel[0];
    const allowed = ROOM_IMPORTS[room];
    if (!allowed || rel.length > 2) {
      problems.push(`${where}:1 rooms: ${rel.slice(0, -1).join('/')}/ is not a room (judge/, worker/, wire/)`);
      continue;
    }
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const m = IMPORT.exec(line);
        if (!m) return;
        const target = m[4] !== undefined ? importedRoom(room, '', m[4], '') : importedRoom(room, m[1], m[2], m[3]);
        if (target !== undefined && !allowed.includes(target))
          problems.push(`${where}:${i + 1} rooms: ${room}/ imports ${target}/ (it may import ${allowed.map((r) => `${r}/`).join(' and ')})`);
      });
  }
  return problems;
}

// `node scripts/pythonRooms.mjs DIR`: the problems of the package at DIR, one a line; exits 1 when there are any
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const problems = roomProblems(resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..', 'python-runner', 'nnrag_judge')));
  for (const p of problems) console.log(p);
  process.exit(problems.length ? 1 : 0);
}
