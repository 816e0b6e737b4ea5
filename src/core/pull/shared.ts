/**
 * Blocks pulled together into one folder: the definitions that several of their files would hold, identically, are
 * written once into a module beside them (`_nnrag_common.py`), which each file imports. A definition is shared only
 * with everything it needs, so the module stands on its own; the blocks themselves stay in their files.
 */
import { createHash } from 'crypto';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { readProvenance } from '../emit/pulledFile';
import { STDLIB } from '../emit/stdlib';
import { PROTECTED_PACKAGES, snakeCase } from '../emit/moduleNames';
import { NnragError } from '../base/errors';
import { writeSafely } from '../emit/writeSafe';
import type { ClassRef } from '../store/target';
import { pullBlock } from './pull';
import { emitBlock } from './stageEmit';
import { interpreterFailure } from './stageRecord';
import type { Emission, PullOptions, PullReport } from './types';
import type { PullSession } from './session';

export const SHARED_MODULE = '_nnrag_common';
/** The first line of the shared module after the coding line: ours to replace. */
export const SHARED_MARKER = '# Written by NN-RAG: definitions that several blocks pulled into this folder need';

export interface SharedPlan {
  /** Piece ids the module provides. */
  ids: Set<string>;
  /** The module's text; undefined when nothing is shared. */
  text?: string;
  /** The names it defines. */
  names: string[];
}

/** One import statement per match (a parenthesised `from` over several lines is one). */
const IMPORT_STATEMENT = /^(?:from \S+ import \([^)]*\)|from \S+ import [^\n]+|import [^\n]+)$/gm;

/** What `files` (named for the header) would share, from their emissions made without a shared module. */
export function planShared(emissions: Emission[], files: string[]): SharedPlan {
  const count = new Map<string, number>();
  for (const e of emissions) {
    for (const id of new Set(e.emitted.pieces.filter((p) => !p.root).map((p) => p.id))) count.set(id, (count.get(id) ?? 0) + 1);
  }
  const ids = new Set([...count].filter(([, n]) => n >= 2).map(([id]) => id));
  // closed under what the definitions need, in every file that holds them
  for (let changed = true; changed;) {
    changed = false;
    for (const e of emissions) {
      const pieces = e.emitted.pieces;
      for (const p of pieces) {
        if (ids.has(p.id) && p.needs.some((j) => pieces[j].root || !ids.has(pieces[j].id))) {
          ids.delete(p.id);
          changed = true;
        }
      }
    }
  }
  if (!ids.size) return { ids, names: [] };

  // in an order that defines what each needs first: depth first over the needs, in the order first met
  const byId = new Map<string, { text: string; names: string[]; needs: string[] }>();
  for (const e of emissions) {
    for (const p of e.emitted.pieces) {
      if (!ids.has(p.id)) continue;
      const entry = byId.get(p.id) ?? { text: p.text, names: p.names, needs: [] };
      for (const j of p.needs) if (!entry.needs.includes(e.emitted.pieces[j].id)) entry.needs.push(e.emitted.pieces[j].id);
      byId.set(p.id, entry);
    }
  }
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string): void => {
    const stack: { id: string; i: number }[] = [{ id, i: 0 }];
    seen.add(id);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const needs = byId.get(top.id)!.needs;
      if (top.i < needs.length) {
        const next = needs[top.i++];
        if (!seen.has(next)) {
          seen.add(next);
          stack.push({ id: next, i: 0 });
        }
      } else {
        order.push(top.id);
        stack.pop();
      }
    }
  };
  for (const id of byId.keys()) if (!seen.has(id)) visit(id);

  // the imports its definitions use, each statement once
  const statements = new Set<string>();
  let future = false;
  for (const e of emissions) {
    const mine = e.emitted.pieces.filter((p) => ids.has(p.id)).map((p) => p.text);
    if (!mine.length) continue;
    const block = e.emitted.importsFor(mine.join('\n'));
    if (block.includes('from __future__ import annotations')) future = true;
    for (const m of block.match(IMPORT_STATEMENT) ?? []) if (m !== 'from __future__ import annotations') statements.add(m);
  }
  // the standard library's first, as in the pulled files
  const group = (st: string): number => (STDLIB.has(st.split(/\s+/)[1].split('.')[0]) ? 0 : 1);
  const imports = [...(future ? ['from __future__ import annotations'] : []), ...[...statements].sort((a, b) => group(a) - group(b) || a.localeCompare(b))];
  const names = order.flatMap((id) => byId.get(id)!.names);
  const body = `${imports.join('\n')}\n\n\n${order.map((id) => byId.get(id)!.text).join('\n\n\n')}\n`;
  const header = [
    '# -*- coding: utf-8 -*-',
    SHARED_MARKER,
    ...wrap(
      `(${files.join(', ')}), held once and imported by each. Where each definition comes from is in those files' headers; pulling the blocks together again writes this file again.`,
    ),
    `${HASH_PREFIX}${sha256(body)}`,
  ].join('\n');
  return { ids, text: `${header}\n\n${body}`, names };
}

/** Comment lines of at most 118 columns. */
function wrap(text: string): string[] {
  const out: string[] = [];
  let line = '#';
  for (const word of text.split(' ')) {
    if (line.length + word.length + 1 > 118 && line !== '#') {
      out.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  out.push(line);
  return out;
}

const HASH_PREFIX = '# content sha256 of everything below this header: ';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Why the shared module at `file` may not be replaced (undefined when it may): not ours, or edited since written. */
export async function sharedReplaceProblem(file: string): Promise<string | undefined> {
  const text = await fsp.readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(HASH_PREFIX));
  if (!text.includes(SHARED_MARKER) || at < 0) return `${file} exists and was not written by NN-RAG`;
  const body = lines.slice(at + 2).join('\n');
  if (sha256(body) !== lines[at].slice(HASH_PREFIX.length)) return `${file} was edited since NN-RAG wrote it`;
  return undefined;
}

/** The files a pulled file imports from beside it (its shared module), to validate it with: `file`'s folder holds them. */
export function companionsOf(file: string, text: string): string[] | undefined {
  const shared = readProvenance(text)?.shared;
  return shared ? [path.join(path.dirname(path.resolve(file)), `${shared.module}.py`)] : undefined;
}

/** A file name for a block pulled with others: its class in snake case, never the name of a module it could shadow. */
export function blockFileName(className: string, taken: Set<string>): string {
  let base = snakeCase(className);
  if (STDLIB.has(base) || PROTECTED_PACKAGES.has(base) || base === SHARED_MODULE) base = `block_${base}`;
  let name = `${base}.py`;
  for (let i = 2; taken.has(name); i++) name = `${base}_${i}.py`;
  taken.add(name);
  return name;
}

export interface PulledTogether {
  reports: PullReport[];
  /** The blocks' files, in the order of `refs`. */
  files: string[];
  shared?: { file: string; definitions: number; names: string[] };
}

/**
 * Pulls `refs` into `dir`, each into its own file (`residual_block.py`), the definitions several of them need written
 * once into `_nnrag_common.py` beside them; then each is validated as `options` says. An edited or foreign shared
 * module is replaced only with `force`.
 */
export async function pullTogether(
  session: PullSession,
  refs: ClassRef[],
  dir: string,
  options: PullOptions,
  { force = false, interpreterFailure: reported = false }: { force?: boolean; interpreterFailure?: boolean } = {},
): Promise<PulledTogether> {
  const taken = new Set<string>();
  const files = refs.map((r) => path.join(dir, blockFileName(r.name, taken)));
  // what each file would hold alone, and so what they share
  const emissions: Emission[] = [];
  for (const ref of refs) emissions.push(await emitBlock(session, ref, { ...options, validate: false }));
  const plan = planShared(
    emissions,
    files.map((f) => path.basename(f)),
  );
  const sharedFile = path.join(dir, `${SHARED_MODULE}.py`);
  if (plan.text !== undefined) {
    const problem = await sharedReplaceProblem(sharedFile);
    if (problem && !force) throw new NnragError('usage', `${problem}; --force replaces it`);
    await writeSafely(sharedFile, plan.text, true);
  }
  const shared = plan.text !== undefined ? { module: SHARED_MODULE, ids: plan.ids, file: sharedFile } : undefined;
  const reports: PullReport[] = [];
  for (const [i, ref] of refs.entries()) {
    try {
      reports.push(await pullBlock(session, ref, { ...options, out: files[i], shared }));
    } catch (err) {
      if (!reported || !(err instanceof NnragError) || err.code !== 'interpreter') throw err;
      reports.push(interpreterFailure(ref, files[i], err.message));
    }
  }
  return { reports, files, ...(plan.text !== undefined ? { shared: { file: sharedFile, definitions: plan.ids.size, names: plan.names } } : {}) };
}
