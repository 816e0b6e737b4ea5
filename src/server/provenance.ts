/** Provenance on pulled files: hovers over a pulled definition's name (where it came from, how it validated) and the CodeLens of upstream changes. */
import { shortCommit } from '../core/base/text';
import type { CodeLens, Connection, Hover, TextDocuments } from 'vscode-languageserver';
import { MarkupKind } from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { bodyHash, readProvenance } from '../core/emit/pulledFile';
import type { Provenance } from '../core/emit/pulledFile';
import { argumentsText, describePulled, verdictMeaning, verdictWords } from '../core/pull/pulledState';
import { pulledFileStatus } from '../core/pull/update';
import type { PulledFileStatus } from '../core/pull/update';
import type { IndexService } from '../core/service/indexService';
import { GetProvenance } from '../shared/protocol';
import { onRequest } from './rpc';

/** Whether the identifier `word` around `offset` is the name a definition makes on its line. */
function definedAt(text: string, offset: number, word: string): boolean {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  let s = offset;
  while (s > lineStart && /\w/.test(text[s - 1])) s--;
  const before = text.slice(lineStart, s);
  const after = text.slice(s + word.length, text.indexOf('\n', s) < 0 ? undefined : text.indexOf('\n', s));
  return /^(?:async\s+)?(?:class|def)\s+$/.test(before) || (before === '' && /^\s*(?::[^=]*)?=(?!=)/.test(after));
}

/** The identifier around `offset`. */
function wordAt(text: string, offset: number): string | undefined {
  let s = offset;
  let e = offset;
  while (s > 0 && /\w/.test(text[s - 1])) s--;
  while (e < text.length && /\w/.test(text[e])) e++;
  return s < e ? text.slice(s, e) : undefined;
}

export function provenanceHover(text: string, offset: number): Hover | null {
  const prov = readProvenance(text);
  if (!prov) return null;
  const word = wordAt(text, offset);
  if (!word) return null;
  // only where a definition is made (`class NAME`, `def NAME`, `NAME = ...` at the top level), not over every use:
  // the language server of the editor answers there already
  if (!definedAt(text, offset, word)) return null;
  const def = prov.definitions.find((d) => d.names.includes(word));
  if (!def) return null;
  const edited = bodyHash(text) !== prov.hash;
  const where = prov.url ? `${prov.url}` : prov.repo;
  const lines = [
    `**${word}** — pulled by NN-RAG from \`${def.repo}\``,
    '',
    // the block's source opens from the hover (the client trusts this one command); other definitions show their place
    word === prov.block
      ? `- source: [\`${def.path}\` lines ${def.lines[0]}–${def.lines[1]}](command:nnrag.openSource?${encodeURIComponent(JSON.stringify([prov.target]))} "Open the original") (${def.module})`
      : `- source: \`${def.path}\` lines ${def.lines[0]}–${def.lines[1]} (${def.module})`,
    `- repository: ${where}${prov.commit ? ` @ \`${shortCommit(prov.commit)}\`` : ''}${def.uncommitted ? ' — **uncommitted changes on top of that commit** (the file is its blob below)' : ''}`,
    `- license: ${prov.license ?? 'not declared'}`,
    `- git blob: \`${def.blob}\` (swh:1:cnt:${def.blob})`,
    `- content hash: \`${prov.hash.slice(0, 23)}…\`${edited ? ' — **edited since the pull**' : ''}`,
  ];
  if (word === prov.block) {
    lines.push(
      `- dependencies: ${
        prov.definitions
          .filter((d) => !d.names.includes(word))
          .flatMap((d) => d.names)
          .join(', ') || 'none'
      }`,
    );
    lines.push(`- imports: ${prov.imports.join(', ') || 'standard library only'}`);
    if (prov.validation) {
      const v = prov.validation;
      lines.push(`- validation: **${verdictWords(v)}**`);
      const means = verdictMeaning(v);
      if (means) lines.push(`  (${means})`);
      if (v.notCompared) lines.push(`- not compared with the original: ${v.notCompared}`);
      if (v.observed) lines.push(`- built and fed as the repository's own \`${v.observed}\` does`);
      if (v.builder) lines.push(`- built by the repository's \`${v.builder}()\``);
      else if (v.kwargs || v.args) lines.push(`- built as \`${prov.block}${argumentsText(v.args ?? [], v.kwargs ?? {})}\``);
      if (v.input_shapes) lines.push(`- forward on: \`${JSON.stringify(v.input_shapes)}\` → \`${JSON.stringify(v.output_shapes)}\``);
    }
  }
  return { contents: { kind: MarkupKind.Markdown, value: lines.join('\n') } };
}

/** The line of `class NAME` (0-based), or of the provenance header when the class is not found. */
function classLine(text: string, name: string): number {
  const lines = text.split('\n');
  const i = lines.findIndex((l) => l.startsWith(`class ${name}(`) || l.startsWith(`class ${name}:`));
  return Math.max(0, i);
}

/** A CodeLens over the pulled block: up to date with its upstream, or which sources changed since the pull. */
export function upstreamLens(text: string, prov: Provenance, st: PulledFileStatus, uri: string): CodeLens[] {
  const line = classLine(text, prov.block);
  const range = { start: { line, character: 0 }, end: { line, character: 0 } };
  const at = `${prov.repo}${prov.commit ? `@${shortCommit(prov.commit)}${prov.uncommitted ? ' + uncommitted changes' : ''}` : ''}`;
  // the words every place shows for this state (the Pulled Blocks view too)
  const words = describePulled(st);
  let title: string;
  if (st.state === 'changed') {
    const files = [...new Set(st.changed.map((e) => e.path))];
    title = `$(warning) NN-RAG: upstream changed since the pull: ${st.changed.flatMap((e) => e.names).join(', ')} (${files.join(', ')}) · ${words.parts.slice(1).join(' · ')}`;
  } else title = `${words.icon === 'pass' ? '' : `$(${words.icon}) `}NN-RAG: pulled from ${at} · ${words.label}`;
  const lenses: CodeLens[] = [{ range, command: { title, command: 'nnrag.openSource', arguments: [prov.target] } }];
  // what the user can do about it: see the difference, take it (keeping their edits), both in the editor
  if (st.state === 'changed') {
    lenses.push({ range, command: { title: 'Compare with upstream', command: 'nnrag.compareUpstream', arguments: [uri] } });
    lenses.push({ range, command: { title: 'Update', command: 'nnrag.updatePulled', arguments: [uri] } });
  }
  return lenses;
}

/** Hovers and CodeLenses on open pulled files, and the provenance of a text on request. */
export function registerProvenance(connection: Connection, documents: TextDocuments<TextDocument>, service: () => IndexService | undefined): void {
  onRequest(connection, GetProvenance, ({ text }) => readProvenance(text) ?? null);
  connection.onHover((params): Hover | null => {
    const doc = documents.get(params.textDocument.uri);
    return doc ? provenanceHover(doc.getText(), doc.offsetAt(params.position)) : null;
  });
  connection.onCodeLens(async (params): Promise<CodeLens[]> => {
    const doc = documents.get(params.textDocument.uri);
    const prov = doc && readProvenance(doc.getText());
    const s = service();
    if (!doc || !prov || !s || s.status.state === 'starting') return [];
    const st = pulledFileStatus((await s.ready()).db, doc.getText());
    return st ? upstreamLens(doc.getText(), prov, st, params.textDocument.uri) : [];
  });
}
