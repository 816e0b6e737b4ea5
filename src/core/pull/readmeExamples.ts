/**
 * The usage a repository documents in its README: Python code blocks that import a block and build and call it
 * (`v = ViT(image_size = 256, patch_size = 32, ...)`, `img = torch.randn(1, 3, 256, 256)`, `preds = v(img)`). Their
 * literal constructor arguments join the block's call sites and their text joins its examples, so the judge builds
 * and feeds the block as its authors do. A code block counts for a block only when it imports that very class (the
 * import resolved through the index), since one repository may hold many classes of one name.
 */
import { repoKind } from '../sources/kinds';
import * as fs from 'fs';
import * as path from 'path';
import git from 'isomorphic-git';
import type { PythonParser } from '../parse/parser';
import type { CallSite } from '../parse/types';
import type { ModuleRecord, ModuleTable } from '../resolve/moduleTable';
import { isImported } from '../store/sourceText';
import type { RepoRow } from '../store/sourceText';

/** A README larger than this is not read; code blocks beyond the first MAX_BLOCKS are not either. */
const MAX_README_BYTES = 1 << 20;
const MAX_BLOCKS = 200;
const README_NAMES = ['README.md', 'README.markdown', 'readme.md', 'Readme.md'];

/** A README's Python code blocks, parsed once per repository and session. */
export interface ReadmeBlock {
  text: string;
  imports: { module: string; name: string; bound: string }[];
  calls: CallSite[];
}

/** The Python code blocks of a Markdown text: fences marked python or py, or unmarked ones that import something. */
export function pythonFences(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n([\s\S]*?)^[ \t]*\1[ \t]*$/gm)) {
    const lang = m[2].toLowerCase();
    const body = m[3];
    if (lang === 'python' || lang === 'py' || lang === 'python3' || (lang === '' && /^\s*(?:from\s+[\w.]+\s+)?import\s/m.test(body))) out.push(body);
    if (out.length >= MAX_BLOCKS) break;
  }
  return out;
}

async function readmeText(repo: RepoRow): Promise<string | undefined> {
  // an imported index's rows name another machine's folders: nothing of them is read here
  if (isImported(repo) || !repo.root) return undefined;
  for (const name of README_NAMES) {
    let bytes: Uint8Array | undefined;
    const tree = repoKind(repo.kind).tree;
    if (tree === 'git-objects') {
      if (!repo.commit) return undefined;
      bytes = await git
        .readBlob({ fs, gitdir: repo.root, oid: repo.commit, filepath: name })
        .then((r) => r.blob)
        .catch(() => undefined);
    } else if (tree === 'folder') {
      const file = path.join(repo.root, name);
      const stat = await fs.promises.lstat(file).catch(() => undefined);
      // a regular file only: a link could point anywhere on the machine
      bytes = stat?.isFile() && stat.size <= MAX_README_BYTES ? await fs.promises.readFile(file).catch(() => undefined) : undefined;
    }
    if (bytes && bytes.length <= MAX_README_BYTES) return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  }
  return undefined;
}

/** The README's Python code blocks of `repo`, with their imports and literal calls. */
export async function readmeBlocks(repo: RepoRow, parser: PythonParser): Promise<ReadmeBlock[]> {
  const text = await readmeText(repo);
  if (!text) return [];
  const out: ReadmeBlock[] = [];
  for (const fence of pythonFences(text)) {
    const parsed = parser.parseText(fence);
    if (!parsed.ok) continue;
    const imports = parsed.facts.imports
      .filter((i) => i.kind === 'from' && !i.inFunction && i.level === 0 && i.name)
      .map((i) => ({ module: i.module, name: String(i.name), bound: i.bound ?? String(i.name) }));
    if (imports.length && parsed.facts.calls.length) out.push({ text: fence, imports, calls: parsed.facts.calls });
  }
  return out;
}

/**
 * The README blocks that import the class `name` of `rec` and call it: their constructor calls (as call sites are
 * written) and their texts.
 */
export function readmeUsesOf(
  blocks: ReadmeBlock[],
  table: ModuleTable,
  rec: ModuleRecord,
  name: string,
): { calls: { args: unknown[]; kwargs: Record<string, unknown> }[]; texts: string[] } {
  const calls: { args: unknown[]; kwargs: Record<string, unknown> }[] = [];
  const texts: string[] = [];
  for (const b of blocks) {
    const imp = b.imports.find((i) => i.name === name || i.bound === name);
    if (!imp) continue;
    const from = table.lookup(imp.module, rec.repoId);
    const t = from ? table.resolveName(from, imp.name) : undefined;
    if (!t || t.kind !== 'symbol' || t.mod.fileId !== rec.fileId || t.name !== name) continue;
    const own = b.calls.filter((c) => c.callee === imp.bound);
    if (!own.length) continue;
    for (const c of own) calls.push({ args: c.args, kwargs: c.kwargs });
    texts.push(b.text);
  }
  return { calls, texts };
}
