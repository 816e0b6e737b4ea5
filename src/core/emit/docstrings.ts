/**
 * Docstrings of the definitions a pull brings with a block are cut to their first paragraph: a helper's summary stays
 * with it, its argument lists and examples stay in the source the header names. The block's own docstrings are kept
 * whole, and `--full-docstrings` keeps every one.
 */
import type { SyntaxNode } from '../parse/syntax';

/** Runs `fn` over the syntax tree of `text` (PythonParser.withTree). */
export type WithTree = <T>(text: string, fn: (root: SyntaxNode) => T) => T;

const NOTE = '(shortened by NN-RAG: the whole docstring is in the source the header names)';

/** `text` (whole definitions) with each docstring of more than one paragraph cut to its first. */
export function shortenDocstrings(text: string, withTree: WithTree): string {
  if (!text.includes('"""') && !text.includes("'''")) return text;
  const cuts = withTree(text, (root) => {
    const out: { start: number; end: number; text: string }[] = [];
    for (const def of root.descendantsOfType(['function_definition', 'class_definition'])) {
      const first = def.childForFieldName('body')?.namedChildren[0];
      if (first?.type !== 'expression_statement' || first.namedChildCount !== 1) continue;
      const str = first.namedChildren[0];
      if (str.type !== 'string') continue;
      const m = /^([rRuU]?)("""|''')([^]*)\2$/.exec(str.text);
      if (!m) continue;
      const paragraphs = m[3].split(/\n[ \t]*\n/);
      if (paragraphs.length < 2 || !paragraphs.slice(1).join('').trim()) continue;
      const indent = ' '.repeat(str.startPosition.column);
      out.push({ start: str.startIndex, end: str.endIndex, text: `${m[1]}${m[2]}${paragraphs[0].trimEnd()}\n\n${indent}${NOTE}\n${indent}${m[2]}` });
    }
    return out;
  });
  let result = text;
  for (const c of cuts.sort((a, b) => b.start - a.start)) result = result.slice(0, c.start) + c.text + result.slice(c.end);
  return result;
}
