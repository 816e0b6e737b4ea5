/**
 * Docstrings of the definitions a pull brings with a block are cut to their first paragraph: a helper's summary stays
 * with it, its argument lists and examples stay in the source the header names. The block's own docstrings are kept
 * whole, and `--full-docstrings` keeps every one; so is every `forward`'s (the judge reads the shapes a forward's
 * docstring gives, on the original's side and the copy's alike: a forward a block inherits keeps them too).
 */
import type { DocstringSpan } from '../parse/parser';

/** The docstrings of a text (PythonParser.docstrings). */
export type FindDocstrings = (text: string) => DocstringSpan[];

const NOTE = '(shortened by NN-RAG: the whole docstring is in the source the header names)';

/** `text` (whole definitions) with each docstring of more than one paragraph cut to its first. */
export function shortenDocstrings(text: string, find: FindDocstrings): string {
  if (!text.includes('"""') && !text.includes("'''")) return text;
  const cuts: { start: number; end: number; text: string }[] = [];
  for (const str of find(text)) {
    if (str.owner === 'forward') continue;
    const m = /^([rRuU]?)("""|''')([^]*)\2$/.exec(str.text);
    if (!m) continue;
    const paragraphs = m[3].split(/\n[ \t]*\n/);
    if (paragraphs.length < 2 || !paragraphs.slice(1).join('').trim()) continue;
    const indent = ' '.repeat(str.column);
    cuts.push({ start: str.start, end: str.end, text: `${m[1]}${m[2]}${paragraphs[0].trimEnd()}\n\n${indent}${NOTE}\n${indent}${m[2]}` });
  }
  let result = text;
  for (const c of cuts.sort((a, b) => b.start - a.start)) result = result.slice(0, c.start) + c.text + result.slice(c.end);
  return result;
}
