/** The batch extraction report as one self-contained page (no scripts, no external resources) with SVG charts. */
import type { ExtractionReport } from '../core/pull/batch';

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** A count read from a report file: a finite number, else 0 (a report.json may come from anywhere). */
const num = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) ? n : 0);

/** A horizontal bar chart: one labelled bar per entry, scaled to `max`. */
function bars(title: string, given: [string, number][], max: number, colour: string): string {
  const entries = given.map(([label, n]): [string, number] => [String(label), num(n)]);
  max = num(max);
  const rowH = 26;
  const labelW = 170;
  const width = 640;
  const barW = width - labelW - 70;
  const height = entries.length * rowH + 34;
  const rows = entries
    .map(([label, n], i) => {
      const y = 30 + i * rowH;
      const w = max > 0 ? Math.max(1, Math.round((barW * n) / max)) : 1;
      return `<text x="${labelW - 8}" y="${y + 15}" text-anchor="end">${esc(label)}</text>
<rect x="${labelW}" y="${y}" width="${w}" height="18" rx="3" fill="${esc(colour)}"><title>${esc(label)}: ${n}</title></rect>
<text x="${labelW + w + 6}" y="${y + 14}">${n}</text>`;
    })
    .join('\n');
  return `<figure><svg role="img" aria-label="${esc(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif" font-size="13">
<text x="0" y="16" font-weight="600">${esc(title)}</text>
${rows}
</svg></figure>`;
}

export function reportHtml(r: ExtractionReport): string {
  const tierRows: [string, number][] = [['targeted', r.targeted], ['extracted', r.extracted], ...Object.entries(r.tiers)];
  const failures = Object.entries(r.failure_categories).sort((a, b) => b[1] - a[1]);
  const u = r.uniqueness;
  const table = (head: string[], rows: (string | number)[][]): string =>
    `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
      .map((row) => `<tr>${row.map((c, i) => `<td${i ? ' class="n"' : ''}>${esc(String(c))}</td>`).join('')}</tr>`)
      .join('')}</tbody></table>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>NN-RAG extraction report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 760px; color: #1b1f24; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; } th, td { padding: .25rem .8rem; border-bottom: 1px solid #d0d7de; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .muted { color: #57606a; font-size: .9rem; }
</style></head><body>
<h1>NN-RAG extraction report</h1>
<p class="muted">From <code>${esc(r.source)}</code>. A block counts as validated only when it ran a forward pass. <em>Equivalent</em> means it behaves like the original on the inputs tried: a comparison, not a check that the code is safe to run.</p>
<h2>Table 1: extraction and validation</h2>
${table(
  ['', 'blocks', 'share'],
  tierRows.map(([k, n]) => [k, n, r.targeted ? `${((100 * n) / r.targeted).toFixed(1)}%` : '-']),
)}
${bars('Blocks reaching each stage', tierRows, r.targeted, '#2f81f7')}
${table(
  ['', 'NN-RAG (this run)', 'NN-RAG paper (arXiv 2512.04329)'],
  [
    ['validation pass rate', `${r.pass_rate}%`, `${r.paper.pass_rate}%`],
    ['time per block', `${r.seconds_per_block} s`, `${r.paper.seconds_per_block} s`],
  ],
)}
<h2>Table 2: failure categories</h2>
${failures.length ? `${table(['category', 'blocks'], failures)}${bars('Failures by category', failures, failures[0][1], '#cf222e')}` : '<p>No failures.</p>'}
${
  u
    ? `<h2>Table 3: uniqueness of the indexed blocks</h2>
${table(
  ['level', 'unique blocks', 'of'],
  [
    ['exact (normalised text)', u.exact_unique, u.blocks],
    ['lexical (MinHash, Jaccard ≥ threshold)', u.lexical_unique, u.blocks],
    ['structural (tree shape)', u.structural_unique, u.blocks],
  ],
)}
${bars(
  'Unique blocks per level',
  [
    ['blocks', u.blocks],
    ['exact', u.exact_unique],
    ['lexical', u.lexical_unique],
    ['structural', u.structural_unique],
  ],
  u.blocks,
  '#1a7f37',
)}
${
  u.largest_groups.length
    ? table(
        ['largest groups of copies (original)', 'copies', 'repositories'],
        u.largest_groups.map((g) => [g.original, g.copies, g.repos]),
      )
    : ''
}`
    : ''
}
</body></html>
`;
}
