/** `show`: a class's facts, resolved bases and the names it needs, each resolved the way Python would. */
import type { ClassRef } from '../store/target';
import type { IndexDb } from '../store/database';
import { loadModuleTable } from './loadTable';
import type { ModuleTable, Target } from './moduleTable';

export interface Dependency {
  name: string;
  timing: 'def' | 'call';
  kind: Target['kind'];
  target?: string;
}

export interface ClassDetails {
  target: string;
  name: string;
  repo: string;
  module: string;
  path: string;
  line: number;
  endLine: number;
  isBlock: boolean;
  abstract: boolean;
  category: string;
  signature: string;
  forwardSignature: string;
  doc: string;
  methods: string[];
  decorators: string[];
  bases: { written: string; resolved: string }[];
  dependencies: Dependency[];
  commit: string | null;
  license: string | null;
  url: string | null;
  validation: unknown;
}

export function describeTarget(t: Target): string | undefined {
  switch (t.kind) {
    case 'module':
      return `${t.mod.repo}:${t.mod.module}`;
    case 'symbol':
      return `${t.mod.repo}:${t.mod.module}.${t.name}`;
    case 'external':
    case 'missing':
      return t.qualname;
    case 'builtin':
      return t.name;
    default:
      return undefined;
  }
}

export function describeClass(db: IndexDb, ref: ClassRef, table: ModuleTable = loadModuleTable(db)): ClassDetails {
  const row = db.get('SELECT c.*, r.commit_id, r.license, r.url FROM classes c JOIN repos r ON r.id = c.repo_id WHERE c.id = ?', [ref.id])!;
  const rec = table.lookupIn(ref.module, ref.repoId);
  const fact = rec?.facts.classes.filter((c) => c.name === ref.name).pop();
  const bases = (JSON.parse(String(row.bases)) as string[]).map((written) => ({
    written,
    resolved: rec && /^[A-Za-z_][\w.]*$/.test(written) ? (describeTarget(table.resolveDotted(rec, written)) ?? 'unresolved') : 'expression',
  }));
  const dependencies: Dependency[] = [];
  if (rec && fact) {
    const unit = rec.facts.units[fact.unit];
    for (const [names, timing] of [
      [unit.defNames, 'def'],
      [unit.callNames, 'call'],
    ] as const) {
      for (const name of names) {
        const t = table.resolveName(rec, name);
        if (t.kind === 'builtin') continue;
        dependencies.push({ name, timing, kind: t.kind, target: describeTarget(t) });
      }
    }
  }
  return {
    target: `${ref.repo}:${ref.module}.${ref.name}`,
    name: ref.name,
    repo: ref.repo,
    module: ref.module,
    path: ref.path,
    line: ref.line,
    endLine: ref.endLine,
    isBlock: ref.isBlock,
    abstract: Number(row.abstract) === 1,
    category: String(row.category),
    signature: String(row.signature),
    forwardSignature: fact?.forwardSignature ?? '',
    doc: String(row.doc),
    methods: fact?.methods ?? [],
    decorators: fact?.decorators ?? [],
    bases,
    dependencies,
    commit: row.commit_id === null ? null : String(row.commit_id),
    license: row.license === null ? null : String(row.license),
    url: row.url === null ? null : String(row.url),
    validation: row.validation ? JSON.parse(String(row.validation)) : null,
  };
}
