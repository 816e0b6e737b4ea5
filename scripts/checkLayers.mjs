// Fails when a layer imports what it must not (see CONVENTIONS.md, rule 1). Run by `npm run build`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const RULES = [
  { layer: 'src/core', forbidden: ['vscode', 'vscode-languageserver', 'vscode-languageclient', '../extension', '../server', '../cli'] },
  { layer: 'src/shared', forbidden: ['vscode', 'vscode-languageserver', 'vscode-languageclient'] },
  { layer: 'src/server', forbidden: ['vscode', 'vscode-languageclient'] },
  { layer: 'src/cli', forbidden: ['vscode', 'vscode-languageserver', 'vscode-languageclient'] },
  { layer: 'src/extension', forbidden: ['vscode-languageserver'] },
];

function files(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every `import ... from 'x'`, `import 'x'`, `require('x')` and `import('x')` specifier in a file. */
function specifiers(text) {
  const out = [];
  const re = /(?:^|\s)(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\s)import\s*['"]([^'"]+)['"]|(?:require|import)\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (const m of text.matchAll(re)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

export function checkLayers(root) {
  const problems = [];
  for (const rule of RULES) {
    let list;
    try {
      list = files(join(root, rule.layer));
    } catch {
      continue;
    }
    for (const file of list) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const resolvedLayer = spec.startsWith('.') ? relative(root, join(dirname(file), spec)).split(/[\\/]/).slice(0, 2).join('/') : undefined;
        const bad = rule.forbidden.some((f) =>
          f.startsWith('..') ? resolvedLayer === `src/${f.slice(3)}` : spec === f || spec.startsWith(`${f}/`),
        );
        if (bad) problems.push(`${relative(root, file)} imports '${spec}', which ${rule.layer} must not use`);
      }
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = checkLayers(join(dirname(fileURLToPath(import.meta.url)), '..'));
  if (problems.length) {
    console.error(`[layers] ${problems.length} violation(s):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log('[layers] ok');
}
