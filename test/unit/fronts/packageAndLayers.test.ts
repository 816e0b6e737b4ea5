import * as assert from 'assert';
import { existsSync, readdirSync, readFileSync } from 'fs';
import * as path from 'path';
import { DEFAULTS, MACHINE_SETTINGS } from '../../../src/extension/defaults';
import { ROOT } from '../helpers';

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const nls: Record<string, string> = JSON.parse(readFileSync(path.join(ROOT, 'package.nls.json'), 'utf8'));
/** A manifest string as users read it: `%key%` looked up in package.nls.json. */
const text = (v: string | undefined): string => (v && /^%.+%$/.test(v) ? (nls[v.slice(1, -1)] ?? '') : (v ?? ''));

function sources(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? readFileSync(path.join(dir, e.name), 'utf8') : ''))
    .join('\n');
}

describe('package.json against the code', () => {
  const code = sources(path.join(ROOT, 'src', 'extension'));
  const registered = new Set([...code.matchAll(/reg\('(nnrag\.\w+)'/g)].map((m) => m[1]));
  const contributed: { command: string; category?: string; title: string }[] = pkg.contributes.commands;

  it('every contributed command has a handler and a category, and every handler is contributed', () => {
    for (const c of contributed) {
      assert.ok(registered.has(c.command), `${c.command} has no handler`);
      assert.strictEqual(c.category, 'NN-RAG', `${c.command} has no category`);
      assert.match(c.command, /^nnrag\.[a-z][A-Za-z]+$/);
    }
    for (const id of registered)
      assert.ok(
        contributed.some((c) => c.command === id),
        `${id} is registered but not contributed`,
      );
  });

  it('every menu entry names a contributed command, and every viewItem is a contextValue the tree sets', () => {
    const values = new Set([...code.matchAll(/contextValue = '([\w.-]+)'/g)].map((m) => m[1]));
    values.add('repo').add('category'); // node.kind for the folders
    // `pulled.${state}`: a prefix, and the states a pulled file can be in
    const prefixes = [...code.matchAll(/contextValue = `([\w.-]+)\$\{/g)].map((m) => m[1]);
    const states = ['up-to-date', 'changed', 'unknown', 'conflicted', 'damaged'];
    for (const p of prefixes) for (const st of states) values.add(`${p}${st}`);
    for (const [menu, entries] of Object.entries<{ command: string; when?: string }[]>(pkg.contributes.menus)) {
      for (const e of entries) {
        assert.ok(
          contributed.some((c) => c.command === e.command),
          `${menu}: ${e.command} is not contributed`,
        );
        for (const m of (e.when ?? '').matchAll(/viewItem == ([\w.-]+)/g)) assert.ok(values.has(m[1]), `${menu}: no tree item sets contextValue '${m[1]}'`);
        for (const m of (e.when ?? '').matchAll(/viewItem =~ (\/[^/]+\/)/g)) {
          const re = new RegExp(m[1].slice(1, -1));
          assert.ok(
            [...values].some((v) => re.test(v)),
            `${menu}: no tree item sets a contextValue that ${m[1]} matches`,
          );
        }
      }
    }
  });

  const extensionSources = (): string =>
    readdirSync(path.join(ROOT, 'src', 'extension'))
      .map((f) => readFileSync(path.join(ROOT, 'src', 'extension', f), 'utf8'))
      .join('\n');

  it('the walkthrough: its media are packaged files, its links and completion events name contributed commands and settings', () => {
    const ignore = readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
    const walks: { steps: { title: string; description: string; media: { markdown?: string }; completionEvents?: string[] }[] }[] =
      pkg.contributes.walkthroughs;
    assert.ok(walks.length > 0 && walks[0].steps.length >= 3);
    for (const step of walks[0].steps) {
      assert.ok(text(step.title) && text(step.description), 'titled and described');
      const md = step.media.markdown!;
      assert.ok(existsSync(path.join(ROOT, md)), `${md} exists`);
      assert.ok(ignore.includes(`!${path.dirname(md)}/*.md`), `${md} is packaged`);
      for (const m of text(step.description).matchAll(/\(command:(nnrag\.\w+)\)/g)) assert.ok(registered.has(m[1]), `${m[1]} has a handler`);
      for (const e of step.completionEvents ?? []) {
        const [kind, what] = e.split(':');
        if (kind === 'onCommand') assert.ok(registered.has(what), e);
        else if (kind === 'onSettingChanged') assert.ok(pkg.contributes.configuration.properties[what], e);
        // a context key the extension sets when the step's work is done (not when its command merely opens)
        else if (kind === 'onContext') assert.ok(extensionSources().includes(`'setContext', '${what}', true`), `${e}: the extension never sets ${what}`);
        else assert.fail(`unexpected completion event ${e}`);
      }
    }
  });

  it('every setting is nnrag.*, scoped and described in markdown', () => {
    for (const [key, s] of Object.entries<{ scope?: string; markdownDescription?: string }>(pkg.contributes.configuration.properties)) {
      assert.match(key, /^nnrag\./);
      assert.ok(s.scope, `${key} has no scope`);
      assert.ok(text(s.markdownDescription).length > 20, `${key} has no markdownDescription`);
    }
  });

  it('takes every user-visible manifest string from package.nls.json (ready for translation), and every key exists', () => {
    const raw = readFileSync(path.join(ROOT, 'package.json'), 'utf8');
    const used = [...raw.matchAll(/"%([^"%]+)%"/g)].map((m) => m[1]);
    for (const k of used) assert.ok(nls[k], `package.nls.json has no '${k}'`);
    for (const k of Object.keys(nls)) assert.ok(used.includes(k), `'${k}' in package.nls.json is not used`);
    for (const c of pkg.contributes.commands as { command: string; title: string }[])
      assert.match(c.title, /^%.+%$/, `${c.command}'s title is not localizable`);
    for (const s of Object.values<{ markdownDescription?: string }>(pkg.contributes.configuration.properties))
      assert.match(s.markdownDescription ?? '', /^%.+%$/);
  });

  it('declares each setting the extension reads, with the default the extension assumes', () => {
    const declared = Object.fromEntries(
      Object.entries<{ default: unknown }>(pkg.contributes.configuration.properties).map(([k, v]) => [k.replace(/^nnrag\./, ''), v.default]),
    );
    assert.deepStrictEqual(declared, DEFAULTS);
    // the machine's settings (in a remote window, written to the Remote settings, and said so) are package.json's
    const machine = Object.entries<{ scope?: string }>(pkg.contributes.configuration.properties)
      .filter(([, v]) => v.scope === 'machine' || v.scope === 'machine-overridable')
      .map(([k]) => k.replace(/^nnrag\./, ''))
      .sort();
    assert.deepStrictEqual([...MACHINE_SETTINGS].sort(), machine);
  });

  it('declares limited support for untrusted workspaces, the view container and its view', () => {
    assert.strictEqual(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
    assert.strictEqual(pkg.contributes.viewsContainers.activitybar[0].id, 'nnrag');
    assert.strictEqual(pkg.contributes.views.nnrag[0].id, 'nnrag.blocks');
    assert.ok(code.includes("createTreeView('nnrag.blocks'"));
  });

  it('the lock file names every package its packages depend on, optional ones too, so `npm ci` on a clean checkout installs', () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }> = lock.packages;
    /** Node's lookup: the package's own node_modules, then each folder above it. */
    const found = (from: string, name: string): boolean => {
      for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
        if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
        if (!dir) return false;
      }
    };
    const missing = Object.entries(packages).flatMap(([at, p]) =>
      Object.keys({ ...p.dependencies, ...p.optionalDependencies, ...(at === '' ? pkg.devDependencies : {}) })
        .filter((name) => !found(at, name))
        .map((name) => `${at || 'package.json'} -> ${name}`),
    );
    assert.deepStrictEqual(missing, []);
  });

  it('keeps the layers apart: ESLint finds no upward import and no cycle in src, and flags one that crosses', async function () {
    this.timeout(120_000);
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: ROOT });
    const results = await eslint.lintFiles(['src', 'scripts', 'bench']);
    const errors = results.flatMap((r) => r.messages.filter((m) => m.severity === 2).map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.message}`));
    assert.deepStrictEqual(errors, []);
    const crossing = async (file: string, text: string): Promise<string[]> =>
      (await eslint.lintText(text, { filePath: path.join(ROOT, file) })).flatMap((r) => r.messages.map((m) => m.ruleId ?? ''));
    assert.ok(
      (await crossing('src/core/parse/probe.ts', "import { indexSource } from '../index/indexer';\nexport const x = indexSource;\n")).includes(
        'no-restricted-imports',
      ),
    );
    assert.ok((await crossing('src/core/store/probe.ts', "import * as vscode from 'vscode';\nexport const x = vscode;\n")).includes('no-restricted-imports'));
    assert.ok(
      (await crossing('src/core/pull/probe.ts', "import { runCli } from '../../cli/cli';\nexport const x = runCli;\n")).includes('no-restricted-imports'),
    );
    // facts.ts imports fingerprint.ts, so fingerprint.ts importing facts.ts closes a cycle.
    assert.ok(
      (await crossing('src/core/parse/fingerprint.ts', "import { extractFacts } from './facts';\nexport const x = extractFacts;\n")).includes(
        'import/no-cycle',
      ),
    );
    assert.deepStrictEqual(await crossing('src/core/index/probe.ts', "import { NnragError } from '../base/errors';\nexport const x = NnragError;\n"), []);
    // a front pulls and indexes through the core API, never the pieces below it
    for (const [file, text] of [
      ['src/cli/probe.ts', "import { openPullSession } from '../core/pull/session';\nexport const x = openPullSession;\n"],
      ['src/server/probe.ts', "import { loadModuleTable } from '../core/resolve/loadTable';\nexport const x = loadModuleTable;\n"],
      ['src/cli/probe.ts', "import { indexSource } from '../core/index/indexer';\nexport const x = indexSource;\n"],
      ['src/server/probe.ts', "import { pullBlock } from '../core/pull/pull';\nexport const x = pullBlock;\n"],
      ['src/cli/probe.ts', "import { validatePulled } from '../core/pull/validatePulled';\nexport const x = validatePulled;\n"],
      ['scripts/probe.ts', "import { pullTogether } from '../src/core/pull/shared';\nexport const x = pullTogether;\n"],
      ['bench/probe.ts', "import { ValidatorPool } from '../src/core/validate/validatorPool';\nexport const x = ValidatorPool;\n"],
    ]) {
      assert.ok((await crossing(file, text)).includes('no-restricted-imports'), text);
    }
    assert.deepStrictEqual(await crossing('src/cli/probe.ts', "import { Workspace } from '../core/workspace/workspace';\nexport const x = Workspace;\n"), []);
    assert.deepStrictEqual(
      await crossing('scripts/probe.ts', "import { Workspace } from '../src/core/workspace/workspace';\nexport const x = Workspace;\n"),
      [],
    );
  });

  it('has no import circle in src, type-only imports counted', () => {
    const graph = importGraph(path.join(ROOT, 'src'));
    assert.deepStrictEqual(
      circles(graph).map((c) => c.map((f) => path.relative(ROOT, f))),
      [],
    );
    // the check sees one: a circle made of type imports alone
    graph.set('/a.ts', ['/b.ts']);
    graph.set('/b.ts', ['/a.ts']);
    assert.deepStrictEqual(circles(graph), [['/b.ts', '/a.ts']]);
  });
});

/** Every relative import and re-export of the TypeScript files under `root` (`import type` too), by file. */
function importGraph(root: string): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else if (e.name.endsWith('.ts')) files.push(path.join(dir, e.name));
    }
  };
  walk(root);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps: string[] = [];
    for (const m of readFileSync(f, 'utf8').matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = path.join(path.dirname(f), m[1]);
      const found = [`${target}.ts`, path.join(target, 'index.ts')].find((c) => existsSync(c));
      if (found) deps.push(found);
    }
    graph.set(f, deps);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan's algorithm). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}
