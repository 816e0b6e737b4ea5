/**
 * The extension in a real VS Code: activation, indexing from settings, search through the command, pull with
 * validation into the workspace, the provenance hover and CodeLens, trust. The runner prepares the workspace
 * (`.vscode/settings.json` pointing `nnrag.repositories` at a copy of examples/tinyblocks) and says through
 * NNRAG_IT_MODE whether the workspace is trusted; suites are chosen by that first word.
 */
import * as assert from 'assert';
import { execFileSync, spawn } from 'child_process';
import { createHash } from 'crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import { tmpdir } from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { NnragApi } from '../../../src/extension/extension';
import type { PullReport } from '../../../src/core/pull/types';
import { ListTree, ReindexRepositories, SearchBlocks } from '../../../src/shared/protocol';
import type { TreeNode } from '../../../src/shared/protocol';

const EXTENSION_ID = 'nn-rag.nn-rag';
const fixture = (): string => {
  const dir = process.env.NNRAG_IT_FIXTURE;
  assert.ok(dir, 'the runner sets NNRAG_IT_FIXTURE');
  return dir;
};

async function api(): Promise<NnragApi> {
  const ext = vscode.extensions.getExtension<NnragApi | undefined>(EXTENSION_ID);
  assert.ok(ext, `${EXTENSION_ID} is installed`);
  const exports = ext.isActive ? ext.exports : await ext.activate();
  assert.ok(exports, 'activate returned the API (activation did not fail)');
  return exports;
}

function ready(a: NnragApi): Promise<unknown> {
  return a.waitForStatus((s) => s.state === 'ready' || s.state === 'error');
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Where NN-RAG keeps a pulled file's manifest: in the `.nnrag/` folder beside it. */
const manifestOf = (f: string): string => path.join(path.dirname(f), '.nnrag', path.basename(f).replace(/\.py$/, '.manifest.json'));

/**
 * Waits for `work` while poking the UI it opens (accepting quick inputs, applying the refactor preview) the way a
 * user would press Enter; gives up after `ms`.
 */
async function drive<T>(work: Thenable<T>, pokes: string[], ms = 150_000): Promise<T> {
  let settled = false;
  const done = Promise.resolve(work).finally(() => (settled = true));
  const t0 = Date.now();
  while (!settled) {
    await Promise.race([done.catch(() => undefined), sleep(400)]);
    if (settled) break;
    if (Date.now() - t0 > ms) throw new Error(`still waiting after ${ms} ms`);
    for (const p of pokes) await vscode.commands.executeCommand(p).then(undefined, () => undefined);
  }
  return done;
}

const ACCEPT = 'workbench.action.acceptSelectedQuickOpenItem';

/** A team's library of one module (`source` after torch's imports) in a folder of its own (`teamlib` in a fresh
 * `nnrag-it-KIND-` folder), and the extension's own command line to index, export or serve it. */
function teamLibrary(
  kind: string,
  module: string,
  source: string,
): { work: string; team: string; cliJs: string; env: NodeJS.ProcessEnv; run: (...args: string[]) => string } {
  const work = mkdtempSync(path.join(tmpdir(), `nnrag-it-${kind}-`));
  const team = path.join(work, 'teamlib');
  mkdirSync(team);
  writeFileSync(path.join(team, '__init__.py'), '');
  writeFileSync(path.join(team, `${module}.py`), `import torch\nfrom torch import nn\n\n\n${source}`);
  const cliJs = path.join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
  const env = { ...process.env, ELECTRON_RUN_AS_NODE: '1' };
  return { work, team, cliJs, env, run: (...args) => execFileSync(process.execPath, [cliJs, ...args], { env, encoding: 'utf8' }) };
}

/** The language-model tools API where this VS Code has it (1.95+), typed for the test. */
interface LmToolsApi {
  tools: readonly { name: string }[];
  invokeTool(name: string, options: { input: object; toolInvocationToken: undefined }, token?: vscode.CancellationToken): Thenable<{ content: unknown[] }>;
}
function lmTools(): LmToolsApi | undefined {
  const lm = (vscode as unknown as { lm?: Partial<LmToolsApi> }).lm;
  return lm?.invokeTool && lm.tools ? (lm as LmToolsApi) : undefined;
}
/** A tool result's text parts, joined. */
const toolText = (r: { content: unknown[] }): string => r.content.map((p) => (p as { value?: string }).value ?? '').join('');

function pulledPath(name: string): string {
  const ws = vscode.workspace.workspaceFolders?.[0];
  assert.ok(ws, 'the runner opened a folder');
  return path.join(ws.uri.fsPath, 'blocks', name);
}

describe('trusted workspace', function () {
  let nnrag: NnragApi;

  before(async () => {
    assert.strictEqual(vscode.workspace.isTrusted, true, 'the runner starts VS Code with trust disabled (every folder trusted)');
    nnrag = await api();
  });

  it('activates and registers every command the manifest contributes', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    assert.strictEqual(ext.isActive, true);
    const all = new Set(await vscode.commands.getCommands(true));
    const contributed: { command: string }[] = ext.packageJSON.contributes.commands;
    for (const c of contributed) assert.ok(all.has(c.command), `${c.command} is registered`);
  });

  it('indexes the repository configured in the workspace settings', async () => {
    const repos = vscode.workspace.getConfiguration('nnrag').get<{ location: string }[]>('repositories') ?? [];
    assert.deepStrictEqual(
      repos.map((r) => r.location),
      [fixture()],
    );
    const s = await nnrag.waitForStatus((st) => st.state === 'ready' && st.blocks > 0);
    assert.strictEqual(s.repos, 1);
    const tree = await nnrag.request(ListTree, {});
    assert.deepStrictEqual(
      tree.map((n) => [n.kind, n.label]),
      [['repo', 'tinyblocks']],
    );
    // every class of the fixture that subclasses an nn.Module is a block, counted in the tree
    const classes = execFileSync('grep', ['-rhoE', '^class [A-Za-z]+\\((nn\\.Module|nn\\.Sequential)\\)', fixture()], { encoding: 'utf8' }).trim().split('\n');
    assert.strictEqual(tree[0].count, classes.length);
    const categories = await nnrag.request(ListTree, { parent: tree[0] });
    assert.ok(categories.length > 0 && categories.every((c) => c.kind === 'category' && (c.count ?? 0) > 0));
    const blocks = await nnrag.request(ListTree, { parent: categories[0] });
    assert.ok(blocks.every((b) => b.kind === 'block' && b.hit?.repo === 'tinyblocks'));
  });

  it('searches through NN-RAG: Search Blocks and pulls the chosen block with validation', async () => {
    await ready(nnrag);
    const dest = pulledPath('residual_block.py');
    assert.ok(!existsSync(dest));
    // Enter on the search result, then on "Pull into Workspace", then on the proposed file name (the runner turns
    // the Refactor Preview off: in the extension-test mode it resolves without applying; the UI walk clicks Apply)
    const outcome = await drive(
      vscode.commands.executeCommand<{ target: string; action: string; result?: PullReport }>('nnrag.searchBlocks', 'residual block'),
      [ACCEPT],
    );
    assert.ok(outcome, 'a block was chosen');
    assert.match(outcome.target, /^tinyblocks:tinyblocks\.blocks\.ResidualBlock$/);
    assert.strictEqual(outcome.action, 'Pull into Workspace');
    const report = outcome.result;
    assert.ok(report, 'the pull ran');
    assert.strictEqual(report.status, 'validated', `${report.category}: ${report.message}`);
    // the example repository is a folder the sandbox can import the original from: the copy is proven equal to it
    assert.strictEqual(report.tier, 'equivalent', JSON.stringify(report.validation?.equivalence));
    assert.ok(existsSync(dest), `${dest} was written`);

    // the file is dependency-closed: it runs alone, from a folder holding nothing else, in an isolated interpreter
    const python = process.env.NNRAG_IT_PYTHON ?? '/usr/bin/python3';
    const probe = `import runpy, torch; ns = runpy.run_path(${JSON.stringify(dest)}); m = ns['ResidualBlock'](8, 8); print(tuple(m(torch.randn(2, 8, 16, 16)).shape))`;
    assert.strictEqual(execFileSync(python, ['-I', '-c', probe], { cwd: path.dirname(dest), encoding: 'utf8' }).trim(), '(2, 8, 16, 16)');

    // the editor shows it, and the header records the validation
    const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === dest);
    assert.ok(editor, 'the pulled file is open in an editor');
    const text = readFileSync(dest, 'utf8');
    const record = JSON.parse(/^# nnrag-provenance: (.*)$/m.exec(text)![1]);
    assert.strictEqual(record.validation.status, 'validated');
    assert.strictEqual(record.target, outcome.target);
  });

  it('takes the first answer to a query typed with a typo in the QuickPick, Enter pressed at once', async () => {
    await ready(nnrag);
    const outcome = await drive(
      vscode.commands.executeCommand<{ target: string; action: string; result?: PullReport }>('nnrag.searchBlocks', 'squeze excitation'),
      [ACCEPT],
    );
    assert.ok(outcome, 'a block was chosen');
    assert.strictEqual(outcome.target, 'tinyblocks:tinyblocks.layers.se.SqueezeExcite');
    assert.strictEqual(outcome.result?.status, 'validated', `${outcome.result?.category}: ${outcome.result?.message}`);
  });

  it('takes what is shown when Enter follows typing at once: 50 rounds, random delays, the first answer to the text in the box', async function () {
    this.timeout(600_000);
    await ready(nnrag);
    const queries = ['squeeze excitation', 'drop path', 'inverted residual', 'conv norm', 'mlp', 'transformer block', 'residual block'];
    // what the box shows first for each text (the server answers a text the same way each time)
    const first = new Map<string, string>();
    for (const q of queries) {
      const hits = await nnrag.request(SearchBlocks, { text: q, limit: 50 });
      assert.ok(hits.length > 0, q);
      first.set(q, hits[0].target);
    }
    assert.ok(new Set(first.values()).size >= 5, `the texts' first answers differ: ${[...first.values()].join(', ')}`);
    // a fixed pseudo-random sequence: the delays differ round to round, the same every run
    let state = 74;
    const rand = (n: number): number => (state = (state * 1103515245 + 12345) % 2 ** 31) % n;
    const wrong: string[] = [];
    for (let round = 0; round < 50; round++) {
      const before = queries[rand(queries.length)];
      const text = queries[rand(queries.length)];
      const run = vscode.commands.executeCommand<{ target: string } | undefined>('nnrag.searchBlocks', '');
      for (let t0 = Date.now(); !nnrag.searchOpen(); await sleep(10)) assert.ok(Date.now() - t0 < 20_000, 'the search box opened');
      // one text typed (some of its answers come), cleared, another typed: each keystroke after 0-40 ms, Enter after 0-150 ms
      for (const w of [before, text]) {
        for (let i = 1; i <= w.length; i += 1 + rand(3)) {
          nnrag.typeInSearch(w.slice(0, i));
          await sleep(rand(40));
        }
        assert.ok(nnrag.typeInSearch(w));
        if (w === before) await sleep(rand(300));
      }
      await sleep(rand(150));
      await vscode.commands.executeCommand(ACCEPT);
      // the box closes with its choice; the menu of what to do with the block opens next and is dismissed
      for (let t0 = Date.now(); nnrag.searchOpen(); await sleep(20)) assert.ok(Date.now() - t0 < 30_000, `round ${round}: the box closed`);
      const outcome = await drive(run, ['workbench.action.closeQuickOpen'], 30_000);
      if (outcome?.target !== first.get(text)) wrong.push(`round ${round} "${text}": ${outcome?.target} (the first answer: ${first.get(text)})`);
    }
    assert.deepStrictEqual(wrong, [], `${wrong.length} of 50 wrong`);
  });

  it('shows what a pull brings with a block, and why, as a tree in the Dependencies view', async () => {
    await ready(nnrag);
    const target = 'tinyblocks:tinyblocks.blocks.ResidualBlock';
    const explained = await vscode.commands.executeCommand<{
      target: string;
      sizes: { total: number; block: number; pulled: number; largest: { names: string[]; chain: string[] }[] };
    }>('nnrag.showDependencies', target);
    assert.ok(explained, 'the command answered');
    assert.strictEqual(explained.target, target);
    const { sizes } = explained;
    assert.ok(sizes.block > 0 && sizes.pulled > 0 && sizes.total >= sizes.block + sizes.pulled, JSON.stringify(sizes));
    const conv = sizes.largest.find((d) => d.names.includes('ConvNormAct'));
    assert.ok(conv, JSON.stringify(sizes.largest));
    assert.deepStrictEqual(conv.chain.slice(0, 1), ['ResidualBlock']);
    assert.strictEqual(conv.chain[conv.chain.length - 1], 'ConvNormAct');
  });

  it('shows provenance in a hover over the pulled class and over an inlined dependency', async () => {
    const dest = pulledPath('residual_block.py');
    const doc = await vscode.workspace.openTextDocument(dest);
    await vscode.window.showTextDocument(doc);
    const hoverAt = async (name: string): Promise<string> => {
      const line = doc
        .getText()
        .split('\n')
        .findIndex((l) => l.startsWith(`class ${name}(`) || l.startsWith(`def ${name}(`));
      assert.ok(line >= 0, `${name} is defined in the pulled file`);
      const col = doc.lineAt(line).text.indexOf(name) + 1;
      const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(line, col));
      return hovers
        .flatMap((h) => h.contents)
        .map((c) => (typeof c === 'string' ? c : c.value))
        .join('\n');
    };
    const block = await hoverAt('ResidualBlock');
    assert.match(block, /pulled by NN-RAG from `tinyblocks`/);
    const link = /source: \[`tinyblocks\/blocks\.py` lines 11–\d+\]\(command:nnrag\.openSource\?([^ )]+)/.exec(block);
    assert.ok(link, block);
    assert.match(block, /license: MIT/);
    assert.match(block, /git blob: `[0-9a-f]{40}`/);
    assert.match(block, /content hash: `sha256:/);
    assert.match(block, /validation: \*\*validated: equivalent\*\*/);
    assert.match(block, /forward on: `\[\[/);
    assert.match(block, /dependencies: .*ConvNormAct/);
    // the link opens the original source at the block's line
    await vscode.commands.executeCommand('nnrag.openSource', ...(JSON.parse(decodeURIComponent(link[1])) as unknown[]));
    const original = vscode.window.activeTextEditor;
    assert.ok(original && original.document.uri.scheme === 'nnrag-source', 'the original opened read-only');
    assert.strictEqual(original.document.languageId, 'python');
    assert.match(original.document.lineAt(original.selection.active.line).text, /^class ResidualBlock\(/);
    await vscode.window.showTextDocument(doc);
    const dep = await hoverAt('ConvNormAct');
    assert.match(dep, /source: `tinyblocks\/layers\/conv\.py`/);
    // over a use of an inlined name (not its definition): no provenance hover stacked on the editor's own
    const useLine = doc
      .getText()
      .split('\n')
      .findIndex((l) => /\bConvNormAct\(/.test(l) && !l.startsWith('class '));
    assert.ok(useLine >= 0);
    const useHovers = await vscode.commands.executeCommand<vscode.Hover[]>(
      'vscode.executeHoverProvider',
      doc.uri,
      new vscode.Position(useLine, doc.lineAt(useLine).text.indexOf('ConvNormAct') + 2),
    );
    assert.doesNotMatch(
      useHovers
        .flatMap((h) => h.contents)
        .map((c) => (typeof c === 'string' ? c : c.value))
        .join('\n'),
      /pulled by NN-RAG/,
    );
    // nnrag.hover.enabled: false turns it off
    const config = vscode.workspace.getConfiguration('nnrag');
    await config.update('hover.enabled', false, vscode.ConfigurationTarget.Workspace);
    try {
      assert.doesNotMatch(await hoverAt('ResidualBlock'), /pulled by NN-RAG/);
    } finally {
      await config.update('hover.enabled', undefined, vscode.ConfigurationTarget.Workspace);
    }
    assert.match(await hoverAt('ResidualBlock'), /pulled by NN-RAG/);
  });

  it('says in a CodeLens whether the upstream code changed since the pull, compares and updates keeping local edits, and lists the states in the Pulled Blocks view', async () => {
    const dest = pulledPath('residual_block.py');
    const doc = await vscode.workspace.openTextDocument(dest);
    const lensTitles = async (): Promise<string[]> =>
      ((await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri)) ?? []).map((l) => l.command?.title ?? '');
    const states = async (): Promise<Record<string, string>> =>
      Object.fromEntries(
        (
          (await vscode.commands.executeCommand<{ uri: string; state: string; edited: boolean; validation?: { status: string } }[]>('nnrag.refreshPulled')) ??
          []
        ).map((s) => [path.basename(vscode.Uri.parse(s.uri).fsPath), `${s.state}${s.edited ? ' edited' : ''} ${s.validation?.status ?? '-'}`]),
      );
    assert.deepStrictEqual(
      (await lensTitles()).filter((t) => t.includes('NN-RAG')).map((t) => /up to date/.test(t)),
      [true],
    );
    assert.strictEqual((await states())['residual_block.py'], 'up-to-date validated');
    // change the upstream code of an inlined dependency, re-index, and the lens says so
    const conv = path.join(fixture(), 'tinyblocks', 'layers', 'conv.py');
    const upstreamDoc = '"""A KxK convolution followed by a normalization layer and an activation."""';
    assert.ok(readFileSync(conv, 'utf8').includes(upstreamDoc));
    writeFileSync(
      conv,
      readFileSync(conv, 'utf8').replace(upstreamDoc, '"""A KxK convolution, then a normalization layer and an activation (changed upstream)."""'),
    );
    await vscode.commands.executeCommand('nnrag.reindex');
    const titles = await lensTitles();
    assert.ok(
      titles.some((t) => /upstream changed since the pull: .*ConvNormAct.*layers\/conv\.py/.test(t)),
      titles.join(' | '),
    );
    assert.ok(titles.includes('Compare with upstream') && titles.includes('Update'), titles.join(' | '));
    // the user's own edit, saved
    const edit = new vscode.WorkspaceEdit();
    edit.insert(doc.uri, new vscode.Position(doc.lineCount, 0), '\n# my own note\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    await doc.save();
    assert.strictEqual((await states())['residual_block.py'], 'changed edited validated');
    // the CodeLens says what the view says: upstream changed, and the user's edit
    const edited = (await lensTitles()).find((t) => t.includes('NN-RAG')) ?? '';
    // the verdict was on the body before the edit: it is not the file's any more, in the CodeLens and in Problems
    assert.match(edited, /upstream changed since the pull: .* · edited locally · edited, not validated since \(was validated: equivalent\)/);
    const staleEntry = async (): Promise<boolean> =>
      vscode.languages.getDiagnostics(doc.uri).some((d) => d.code === 'stale' && /edited, not validated since/.test(d.message));
    for (const t0 = Date.now(); !(await staleEntry()); await sleep(100)) {
      if (Date.now() - t0 > 15_000) throw new Error('the Problems panel does not say the verdict is stale after an edit');
    }
    // Compare: a diff editor of the file against what the pull gives today
    const upstream = await vscode.commands.executeCommand<string>('nnrag.compareUpstream', doc.uri.toString());
    assert.match(upstream ?? '', /\(changed upstream\)/);
    assert.doesNotMatch(upstream ?? '', /my own note/);
    // three-way: the file as pulled against upstream; the user's own note is on neither side
    const diffTab = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.path === doc.uri.path);
    assert.ok(diffTab, 'Compare opened a diff editor');
    const asPulled = await vscode.workspace.openTextDocument((diffTab.input as vscode.TabInputTextDiff).original);
    assert.notStrictEqual(asPulled.uri.toString(), doc.uri.toString(), 'the left side is the file as pulled, not as edited');
    assert.doesNotMatch(asPulled.getText(), /my own note|\(changed upstream\)/);
    assert.match(asPulled.getText(), /class ResidualBlock\(/);
    // its header is the one it was pulled with (the version and blob it came from), not the source's today
    const recordOf = (t: string): string => /^# nnrag-provenance: (.*)$/m.exec(t)?.[1] ?? '';
    assert.strictEqual(recordOf(asPulled.getText()), recordOf(doc.getText()), 'the left side has the header the file was pulled with');
    assert.notStrictEqual(recordOf(asPulled.getText()), recordOf(upstream ?? ''), 'the header of the source today is on the right only');
    // Update: both changes kept, one edit, validated again
    const updated = await drive(
      vscode.commands.executeCommand<{ state: string; upstreamChanges?: number; yourEdits?: number; validation?: { ok: boolean; tier: string } }>(
        'nnrag.updatePulled',
        doc.uri.toString(),
      ),
      [],
    );
    assert.strictEqual(updated?.state, 'merged');
    // it says what it merged: one change upstream, one edit of the user's
    assert.deepStrictEqual([updated?.upstreamChanges, updated?.yourEdits], [1, 1], JSON.stringify(updated));
    // the copy with the user's edits in it is still compared with its original: a comment changes no behaviour
    assert.deepStrictEqual([updated?.validation?.ok, updated?.validation?.tier], [true, 'equivalent'], JSON.stringify(updated));
    const after = readFileSync(dest, 'utf8');
    assert.match(after, /\(changed upstream\)/);
    assert.match(after, /# my own note/);
    // one truth: the manifest and required_repos.json say what the header now says
    const record = JSON.parse(/^# nnrag-provenance: (.*)$/m.exec(after)![1]) as {
      hash: string;
      validation?: { tier?: string };
      definitions: { blob: string }[];
    };
    const manifest = JSON.parse(readFileSync(manifestOf(dest), 'utf8')) as typeof record & { content_hash: string };
    assert.deepStrictEqual(
      [manifest.content_hash, manifest.validation?.tier, manifest.definitions.map((d) => d.blob)],
      [record.hash, record.validation?.tier, record.definitions.map((d) => d.blob)],
    );
    const required = JSON.parse(readFileSync(path.join(path.dirname(dest), '.nnrag', 'required_repos.json'), 'utf8')) as {
      distributions: Record<string, { needed_by: string[] }>;
      missing: Record<string, unknown>;
    };
    assert.ok(required.distributions.torch?.needed_by.includes('residual_block.py') && !required.missing.torch, JSON.stringify(required));
    assert.strictEqual((await states())['residual_block.py'], 'up-to-date edited validated');
    // validated again by Update: the verdict is the file's again
    for (const t0 = Date.now(); await staleEntry(); await sleep(100)) {
      if (Date.now() - t0 > 15_000) throw new Error('the stale entry stays in Problems after the file was validated again');
    }
    assert.deepStrictEqual(
      (await lensTitles()).filter((t) => t.includes('NN-RAG')).map((t) => /up to date/.test(t)),
      [true],
    );
  });

  it('pulls through a diff editor: Cancel writes nothing, Accept writes the validated file in one edit', async () => {
    const config = vscode.workspace.getConfiguration('nnrag');
    const before = config.inspect<boolean>('pull.preview')?.workspaceValue;
    await config.update('pull.preview', true, vscode.ConfigurationTarget.Workspace);
    const dest = pulledPath('drop_path_diff.py');
    const diffShown = (): boolean =>
      vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .some((t) => t.input instanceof vscode.TabInputTextDiff && path.basename(t.input.modified.fsPath) === 'drop_path_diff.py');
    try {
      const settle = async (accept: boolean): Promise<PullReport | undefined> => {
        let sawDiff = false;
        const pull = vscode.commands.executeCommand<PullReport | undefined>(
          'nnrag.pullBlock',
          'tinyblocks:tinyblocks.layers.drop.DropPath',
          'drop_path_diff.py',
        );
        const t0 = Date.now();
        for (;;) {
          sawDiff ||= diffShown();
          // the question shows while the pull waits (its notification), and goes once decided
          if (sawDiff) assert.match(nnrag.pullQuestion() ?? '', /Pull DropPath into drop_path_diff\.py/);
          if (sawDiff && (await vscode.commands.executeCommand<boolean>(accept ? 'nnrag.acceptPull' : 'nnrag.cancelPull'))) break;
          if (Date.now() - t0 > 150_000) throw new Error('no pull waited for Accept or Cancel');
          await sleep(200);
        }
        const report = await pull;
        assert.ok(!diffShown(), 'the diff editor closes');
        assert.strictEqual(nnrag.pullQuestion(), undefined, 'the notification that asked closes when the pull is decided');
        return report;
      };
      assert.strictEqual(await settle(false), undefined);
      // closing the diff cancels too: nothing is written, and no pull is left waiting for a later Accept
      const closing = vscode.commands.executeCommand<PullReport | undefined>(
        'nnrag.pullBlock',
        'tinyblocks:tinyblocks.layers.drop.DropPath',
        'drop_path_diff.py',
      );
      for (const t0 = Date.now(); !diffShown(); await sleep(200)) {
        if (Date.now() - t0 > 150_000) throw new Error('the diff did not show');
      }
      const tab = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .find((t) => t.input instanceof vscode.TabInputTextDiff && path.basename(t.input.modified.fsPath) === 'drop_path_diff.py');
      await vscode.window.tabGroups.close(tab!);
      assert.strictEqual(await closing, undefined);
      assert.strictEqual(await vscode.commands.executeCommand<boolean>('nnrag.acceptPull'), false, 'no pull waits');
      assert.ok(!existsSync(dest), 'nothing written on Cancel');
      const report = await settle(true);
      assert.strictEqual(report?.status, 'validated', JSON.stringify(report));
      const text = readFileSync(dest, 'utf8');
      assert.match(text, /"validation":\{"status":"validated"/);
      assert.match(text, /^class DropPath\(nn\.Module\):/m);
      assert.ok(existsSync(manifestOf(dest)), 'the manifest is written into .nnrag/');
      assert.deepStrictEqual(
        readdirSync(path.dirname(dest)).filter((f) => f.startsWith(path.basename(dest, '.py'))),
        [path.basename(dest)],
        'one file',
      );
      // deleted: its manifest goes with it
      await vscode.workspace.fs.delete(vscode.Uri.file(dest));
      for (const t0 = Date.now(); existsSync(manifestOf(dest)); await sleep(100)) {
        if (Date.now() - t0 > 20_000) throw new Error('the manifest of a deleted pulled file is still there');
      }
    } finally {
      await config.update('pull.preview', before, vscode.ConfigurationTarget.Workspace);
    }
  });

  it('pulls several blocks selected in the tree together: each in its file, what they share once in _nnrag_common.py', async () => {
    const config = vscode.workspace.getConfiguration('nnrag');
    const before = config.inspect<string>('pullFolder')?.workspaceValue;
    await config.update('pullFolder', 'together', vscode.ConfigurationTarget.Workspace);
    try {
      const nodes = ['InvertedResidual', 'ResidualBlock', 'TransformerBlock'].map((n) => ({
        kind: 'block',
        label: n,
        repo: 'tinyblocks',
        hit: { target: `tinyblocks:tinyblocks.blocks.${n}` },
      }));
      const r = await drive(
        vscode.commands.executeCommand<{ reports: PullReport[]; files: string[]; shared?: string }>('nnrag.pullBlock', nodes[0], nodes),
        [],
      );
      assert.ok(r, 'pulled');
      assert.deepStrictEqual(
        r.reports.map((x) => [x.status, x.tier]),
        Array(3).fill(['validated', 'equivalent']),
        JSON.stringify(r.reports.map((x) => x.message)),
      );
      const dir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, 'together');
      assert.deepStrictEqual(
        r.files.map((f) => path.basename(f)),
        ['inverted_residual.py', 'residual_block.py', 'transformer_block.py'],
      );
      assert.strictEqual(r.shared, path.join(dir, '_nnrag_common.py'));
      const defs = ['_nnrag_common.py', 'inverted_residual.py', 'residual_block.py', 'transformer_block.py'].map(
        (f) => (readFileSync(path.join(dir, f), 'utf8').match(/^class ConvNormAct\(/gm) ?? []).length,
      );
      assert.deepStrictEqual(defs, [1, 0, 0, 0]);
      assert.ok(existsSync(path.join(dir, '.nnrag', 'residual_block.manifest.json')));
    } finally {
      await config.update('pullFolder', before, vscode.ConfigurationTarget.Workspace);
    }
  });

  it('offers search, describe and pull to agents as language-model tools, and the pull validates', async function () {
    const lm = lmTools();
    if (!lm) this.skip();
    const names = lm!.tools.map((t) => t.name);
    for (const n of ['nnrag_searchBlocks', 'nnrag_describeBlock', 'nnrag_pullBlock']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
    const hits = JSON.parse(
      toolText(await lm!.invokeTool('nnrag_searchBlocks', { input: { query: 'squeeze excitation', limit: 3 }, toolInvocationToken: undefined })),
    );
    assert.strictEqual(hits[0].target, 'tinyblocks:tinyblocks.layers.se.SqueezeExcite');
    const details = JSON.parse(toolText(await lm!.invokeTool('nnrag_describeBlock', { input: { target: hits[0].target }, toolInvocationToken: undefined })));
    assert.strictEqual(details.name, 'SqueezeExcite');
    const pulled = JSON.parse(
      toolText(
        await drive(lm!.invokeTool('nnrag_pullBlock', { input: { target: hits[0].target, fileName: 'se_from_tool.py' }, toolInvocationToken: undefined }), []),
      ),
    );
    assert.deepStrictEqual([pulled.status, pulled.trusted], ['validated', true], JSON.stringify(pulled));
    assert.match(readFileSync(pulledPath('se_from_tool.py'), 'utf8'), /^class SqueezeExcite\(nn\.Module\):/m);
  });

  it('names the settings scope a change is written to: in a remote window, a machine setting goes to the Remote settings', async () => {
    // code-server is a remote window (remoteName set), as SSH and WSL are: VS Code writes a machine-scoped "user" value
    // into the remote machine's settings, so the message must say "remote" (it said "user", and the User tab was empty)
    const remote = vscode.env.remoteName !== undefined;
    const where = vscode.workspace.getConfiguration('nnrag').inspect('sharedIndex');
    assert.strictEqual(where?.workspaceValue, undefined);
    assert.strictEqual(nnrag.settingScope('sharedIndex'), remote ? 'remote' : 'user');
    // a setting of the window, not the machine, stays the user's
    if (vscode.workspace.getConfiguration('nnrag').inspect('hover.enabled')?.workspaceValue === undefined)
      assert.strictEqual(nnrag.settingScope('hover.enabled'), 'user');
    assert.strictEqual(nnrag.settingScope('repositories'), 'workspace');
  });

  it('adds a repository to the settings in effect (the workspace has a value: there), and removes it from the tree', async () => {
    const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('nnrag');
    const userBefore = config().inspect<unknown[]>('repositories')?.globalValue;
    const extra = mkdtempSync(path.join(tmpdir(), 'nnrag-extra-'));
    mkdirSync(path.join(extra, 'extrablocks'));
    writeFileSync(
      path.join(extra, 'extrablocks', 'gates.py'),
      'import torch\n\n\nclass SquishGate(torch.nn.Module):\n    def forward(self, x):\n        return x.sigmoid() * x\n',
    );
    const key = await vscode.commands.executeCommand<string>('nnrag.addRepository', { location: extra, name: 'extrablocks' });
    assert.strictEqual(key, 'workspace');
    assert.ok((config().inspect<{ name?: string }[]>('repositories')?.workspaceValue ?? []).some((r) => r.name === 'extrablocks'));
    assert.deepStrictEqual(config().inspect<unknown[]>('repositories')?.globalValue, userBefore, 'the user settings are untouched');
    await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 2);
    const hits = await nnrag.request(SearchBlocks, { text: 'SquishGate', limit: 3 });
    assert.strictEqual(hits[0]?.name, 'SquishGate');
    const repoNode = (await nnrag.request(ListTree, {})).find((n) => n.repo === 'extrablocks');
    assert.ok(repoNode);
    // re-indexing one repository from the tree leaves the other in the index
    writeFileSync(
      path.join(extra, 'extrablocks', 'more.py'),
      'import torch\n\n\nclass TwiceGate(torch.nn.Module):\n    def forward(self, x):\n        return 2 * x\n',
    );
    const again = await vscode.commands.executeCommand<{ state: string; repos: number }>('nnrag.reindexRepository', repoNode);
    assert.deepStrictEqual([again?.state, again?.repos], ['ready', 2]);
    assert.strictEqual((await nnrag.request(SearchBlocks, { text: 'TwiceGate', limit: 3 }))[0]?.name, 'TwiceGate');
    assert.strictEqual((await nnrag.request(SearchBlocks, { text: 'squeeze excitation', limit: 3 }))[0]?.name, 'SqueezeExcite');
    // disabled: kept in the settings, out of the index; enabled: indexed again
    assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.disableRepository', repoNode), 'workspace');
    assert.strictEqual(
      (config().inspect<{ name?: string; enabled?: boolean }[]>('repositories')?.workspaceValue ?? []).find((r) => r.name === 'extrablocks')?.enabled,
      false,
    );
    await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 1);
    assert.strictEqual(
      (await nnrag.request(SearchBlocks, { text: 'SquishGate', limit: 3 })).some((h) => h.name === 'SquishGate'),
      false,
    );
    assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.enableRepository', 'extrablocks'), 'workspace');
    await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 2);
    assert.strictEqual((await nnrag.request(SearchBlocks, { text: 'SquishGate', limit: 3 }))[0]?.name, 'SquishGate');
    assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.removeRepository', repoNode), 'workspace');
    assert.ok(!(config().inspect<{ name?: string }[]>('repositories')?.workspaceValue ?? []).some((r) => r.name === 'extrablocks'));
    await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 1);
    assert.strictEqual(
      (await nnrag.request(SearchBlocks, { text: 'SquishGate', limit: 3 })).some((h) => h.name === 'SquishGate'),
      false,
    );
  });

  it('keeps the index whole when re-index requests arrive while one runs (a busy index)', async () => {
    const before = await nnrag.waitForStatus((s) => s.state === 'ready');
    const repositories = vscode.workspace.getConfiguration('nnrag').get<unknown[]>('repositories') ?? [];
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      runs.push(nnrag.request(ReindexRepositories, { repositories: repositories as never }).then(undefined, (err: Error) => err.message));
      await sleep(400);
    }
    await Promise.all(runs);
    const after = await nnrag.waitForStatus((s) => s.state === 'ready');
    assert.deepStrictEqual([after.blocks, after.files, after.repos], [before.blocks, before.files, before.repos]);
    assert.strictEqual((await nnrag.request(SearchBlocks, { text: 'squeeze excitation', limit: 3 }))[0]?.name, 'SqueezeExcite');
  });

  it('indexes an installed package added without an interpreter with the one selected for NN-RAG (Add Repository -> Installed package)', async () => {
    const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('nnrag');
    const before = nnrag.status().repos;
    // what the quick pick writes: the package names only
    assert.strictEqual(
      await vscode.commands.executeCommand<string>('nnrag.addRepository', { location: 'json', kind: 'python-env', name: 'stdjson' }),
      'workspace',
    );
    try {
      const entry = (config().inspect<{ name?: string; python?: string }[]>('repositories')?.workspaceValue ?? []).find((r) => r.name === 'stdjson');
      assert.ok(entry && entry.python === undefined, 'the settings keep the entry as written');
      const s = await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before + 1);
      assert.strictEqual(s.repos, before + 1);
      const node = (await nnrag.request(ListTree, {})).find((n) => n.repo === 'stdjson');
      assert.ok(node, 'the package is in the tree');
    } finally {
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.removeRepository', 'stdjson'), 'workspace');
      await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before);
    }
  });

  it("installed packages follow the interpreter selected: another interpreter's copy replaces them, and the node says which", async () => {
    const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('nnrag');
    const picked = config().inspect<string>('pythonPath')?.workspaceValue;
    const before = nnrag.status().repos;
    // two interpreters, each with its own copy of one package
    const work = mkdtempSync(path.join(tmpdir(), 'nnrag-envs-'));
    const interpreters = [0, 1].map((i) => {
      mkdirSync(path.join(work, `site${i}`, 'mylayers'), { recursive: true });
      writeFileSync(path.join(work, `site${i}`, 'mylayers', '__init__.py'), '');
      writeFileSync(
        path.join(work, `site${i}`, 'mylayers', 'blocks.py'),
        `from torch import nn\n\n\nclass Gate${i}(nn.Module):\n    def forward(self, x):\n        return x\n`,
      );
      execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(work, `venv${i}`)]);
      const python = path.join(work, `venv${i}`, 'bin', 'python');
      const site = execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], { encoding: 'utf8' }).trim();
      writeFileSync(path.join(site, 'mine.pth'), `${path.join(work, `site${i}`)}\n`);
      return python;
    });
    const node = async (): Promise<TreeNode | undefined> => (await nnrag.request(ListTree, {})).find((n) => n.repo === 'mylayers');
    try {
      await config().update('pythonPath', interpreters[0], vscode.ConfigurationTarget.Workspace);
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.addRepository', { location: 'mylayers', kind: 'python-env' }), 'workspace');
      await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before + 1);
      assert.strictEqual((await node())?.installed?.python, interpreters[0], JSON.stringify(await node()));
      // another interpreter: its copy is indexed in place of the first, no error asks for a command-line flag
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.selectInterpreter', interpreters[1]), 'workspace');
      const gates = async (): Promise<string> =>
        (await nnrag.request(SearchBlocks, { text: 'Gate', limit: 5 }))
          .filter((h) => h.repo === 'mylayers')
          .map((h) => h.name)
          .join();
      for (const t0 = Date.now(); (await gates()) !== 'Gate1'; await sleep(200)) {
        if (Date.now() - t0 > 30_000) throw new Error(`the repository did not follow the interpreter: ${await gates()} ${JSON.stringify(await node())}`);
      }
      const now = await node();
      assert.ok(now && !now.error, JSON.stringify(now));
      assert.strictEqual(now.installed?.python, interpreters[1]);
    } finally {
      await config().update('pythonPath', picked, vscode.ConfigurationTarget.Workspace);
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.removeRepository', 'mylayers'), 'workspace');
      await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before);
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('observes a repository from its node: its tests run under the observer, and pulls then build the block as the test did', async () => {
    const repo = path.join(fixture(), 'tinyblocks');
    const test = path.join(repo, 'tests', 'test_se.py');
    mkdirSync(path.dirname(test), { recursive: true });
    writeFileSync(
      test,
      'import torch\n\nfrom tinyblocks.layers.se import SqueezeExcite\n\n\ndef test_se():\n    se = SqueezeExcite(12, rd_ratio=0.5)\n    assert se(torch.randn(2, 12, 5, 5)).shape == (2, 12, 5, 5)\n',
    );
    try {
      for (
        const t0 = Date.now();
        !(await vscode.commands.executeCommand<{ repo: string; entries: number }[]>('nnrag.observeRepositories', 'tinyblocks'))?.some((s) => s.entries === 1);
        await sleep(500)
      ) {
        if (Date.now() - t0 > 30_000) throw new Error('the new test file was not indexed and observed');
      }
      const again = await vscode.commands.executeCommand<{ repo: string; entries: number; ran: number; cached: number; classes: number; fed: number }[]>(
        'nnrag.observeRepositories',
        'tinyblocks',
      );
      assert.deepStrictEqual(
        again?.map((s) => [s.repo, s.entries, s.ran, s.cached, s.classes, s.fed]),
        [['tinyblocks', 1, 0, 1, 1, 1]],
        JSON.stringify(again),
      );
      // the repository's node says how much of it observation covers
      const node = (await nnrag.request(ListTree, {})).find((n) => n.kind === 'repo' && n.repo === 'tinyblocks');
      assert.deepStrictEqual(node?.observed, { observed: 1, entries: 1, fed: 1 }, JSON.stringify(node));
      const report = await drive(
        vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.se.SqueezeExcite', 'se_observed.py'),
        [],
      );
      assert.strictEqual(report?.validation?.observed, 'tinyblocks/tests/test_se.py::test_se', JSON.stringify(report?.validation));
    } finally {
      rmSync(path.dirname(test), { recursive: true, force: true });
    }
  });

  it('shows a repository that cannot be indexed as a node with its error, and removes it from there', async () => {
    const before = nnrag.status().repos;
    assert.strictEqual(
      await vscode.commands.executeCommand<string>('nnrag.addRepository', { location: 'http://127.0.0.1:9/nothing.git', name: 'unreachable' }),
      'workspace',
    );
    try {
      const s = await nnrag.waitForStatus((st) => st.state === 'ready' && st.failing === 1);
      assert.strictEqual(s.repos, before, 'the others are still indexed');
      const node = (await nnrag.request(ListTree, {})).find((n) => n.repo === 'unreachable');
      assert.ok(node?.error, JSON.stringify(node));
      assert.match(node.error, /127\.0\.0\.1|ECONNREFUSED|connect/i);
      // Retry runs it again: still failing, still listed
      const again = await vscode.commands.executeCommand<{ failing?: number }>('nnrag.reindexRepository', node);
      assert.strictEqual(again?.failing, 1);
    } finally {
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.removeRepository', 'unreachable'), 'workspace');
    }
    await nnrag.waitForStatus((st) => st.state === 'ready' && !st.failing);
    assert.ok(!(await nnrag.request(ListTree, {})).some((n) => n.repo === 'unreachable'));
  });

  it("merges a team's search server (nn-rag serve) into this window's search: its blocks named by the server, this window's as they were", async () => {
    await ready(nnrag);
    const { work, team, cliJs, env, run } = teamLibrary(
      'served',
      'gates',
      'class FarawayGate(nn.Module):\n    """Gates channels with a sigmoid (the team\'s, served)."""\n\n    def __init__(self, c: int = 8):\n        super().__init__()\n        self.proj = nn.Linear(c, c)\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return x * torch.sigmoid(self.proj(x))\n',
    );
    run('index', team, '--db', path.join(work, 'team.db'));
    const server = spawn(process.execPath, [cliJs, 'serve', '--db', path.join(work, 'team.db'), '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let said = '';
        server.stderr!.on('data', (c: Buffer) => {
          said += c.toString();
          const m = /at (http:\/\/[^/\s]+)\//.exec(said);
          if (m) resolve(m[1]);
        });
        server.on('exit', () => reject(new Error(`nn-rag serve ended: ${said}`)));
      });
      const far = await nnrag.request(SearchBlocks, { text: 'faraway gate', limit: 5, servers: [url] });
      assert.strictEqual(far[0]?.name, 'FarawayGate');
      assert.strictEqual(far[0].index, new URL(url).host);
      // this window's blocks stay first where they are the answer, and carry no server's name
      const here = await nnrag.request(SearchBlocks, { text: 'residual block', limit: 5, servers: [url] });
      assert.strictEqual(here[0]?.target, 'tinyblocks:tinyblocks.blocks.ResidualBlock');
      assert.strictEqual(here[0].index, undefined);
      // a server that is not there: this window's answer, as without one
      const gone = await nnrag.request(SearchBlocks, { text: 'residual block', limit: 5, servers: ['http://127.0.0.1:9/'] });
      assert.deepStrictEqual(
        gone.map((h) => h.target),
        (await nnrag.request(SearchBlocks, { text: 'residual block', limit: 5 })).map((h) => h.target),
      );
    } finally {
      server.kill();
    }
  });

  it('starts from a shared index served over http (searches and pulls from it), downloads it again only when it changed, refuses a tampered one and keeps the last', async () => {
    // the team's index, made and exported with the extension's own command line, its library then gone
    const { work, team, run } = teamLibrary(
      'shared',
      'mixers',
      'class TeamMixer(nn.Module):\n    """Mixes channels with one linear layer (the team\'s)."""\n\n    def __init__(self, c: int = 8):\n        super().__init__()\n        self.proj = nn.Linear(c, c)\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return x + self.proj(x)\n',
    );
    run('index', team, '--db', path.join(work, 'team.db'));
    run('export', '--db', path.join(work, 'team.db'), '--to', path.join(work, 'team.tgz'));
    rmSync(team, { recursive: true });
    let served = readFileSync(path.join(work, 'team.tgz'));
    const sent: number[] = [];
    const server = http.createServer((req, res) => {
      const etag = `"${createHash('sha256').update(served).digest('hex').slice(0, 20)}"`;
      sent.push(req.headers['if-none-match'] === etag ? 304 : 200);
      if (sent[sent.length - 1] === 304) res.writeHead(304, { ETag: etag }).end();
      else res.writeHead(200, { ETag: etag }).end(served);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/team.tgz`;
    const before = (await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos > 0)).repos;
    const config = vscode.workspace.getConfiguration('nnrag');
    try {
      await config.update('sharedIndex', url, vscode.ConfigurationTarget.Workspace);
      const s = await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before + 1);
      assert.deepStrictEqual([s.shared?.state, s.shared?.repositories], ['downloaded', ['teamlib']], `before ${before}: ${JSON.stringify(s)}`);
      const node = (await nnrag.request(ListTree, {})).find((n) => n.repo === 'teamlib');
      assert.ok(node?.shared, `the team's repository is shown as shared: ${JSON.stringify(node)}`);
      const hits = await nnrag.request(SearchBlocks, { text: 'mixes channels', limit: 5 });
      assert.strictEqual(hits[0]?.target, 'teamlib:teamlib.mixers.TeamMixer', JSON.stringify(hits.map((h) => h.target)));
      // the workspace's own repository is indexed on top
      assert.ok((await nnrag.request(SearchBlocks, { text: 'residual', limit: 5 })).some((h) => h.repo === 'tinyblocks'));
      const pulled = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'teamlib:teamlib.mixers.TeamMixer', 'team_mixer.py'), [
        'nnrag.acceptPull',
      ]);
      assert.ok(pulled?.out && readFileSync(pulled.out, 'utf8').includes('class TeamMixer(nn.Module)'), JSON.stringify(pulled));
      assert.strictEqual(pulled.status, 'validated', `${pulled.category}: ${pulled.message}`);
      // Refresh Shared Index: the server says it has not changed, nothing is downloaded again
      const unchanged = await vscode.commands.executeCommand<{ shared?: { state: string } }>('nnrag.refreshSharedIndex');
      assert.strictEqual(unchanged?.shared?.state, 'unchanged');
      assert.deepStrictEqual(sent.filter((c) => c === 200).length, 1, `responses: ${sent.join(', ')}`);
      assert.ok(sent.includes(304));
      // a tampered archive is published: refused with a clear message, the last good copy still answers
      const bytes = Buffer.from(served);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      served = bytes;
      const refused = await vscode.commands.executeCommand<{ shared?: { state: string; message?: string } }>('nnrag.refreshSharedIndex');
      assert.strictEqual(refused?.shared?.state, 'refused');
      assert.match(refused.shared.message ?? '', /not a usable NN-RAG index.*unchanged/);
      assert.strictEqual((await nnrag.request(SearchBlocks, { text: 'mixes channels', limit: 5 }))[0]?.target, 'teamlib:teamlib.mixers.TeamMixer');
    } finally {
      server.close();
      await config.update('sharedIndex', undefined, vscode.ConfigurationTarget.Workspace);
      rmSync(pulledPath('team_mixer.py'), { force: true });
      rmSync(work, { recursive: true, force: true });
    }
    // no shared index any more: its repositories leave the index
    await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before);
    assert.ok(!(await nnrag.request(ListTree, {})).some((n) => n.repo === 'teamlib'));
  });

  it('a shared index that holds a repository the workspace indexes too: yours wins, no error, the setting removed takes the shared rows', async () => {
    // the team's index holds its own copy of tinyblocks (a class the workspace's has not) and a library of its own
    const work = mkdtempSync(path.join(tmpdir(), 'nnrag-it-shadow-'));
    const copy = path.join(work, 'tinyblocks');
    execFileSync('cp', ['-r', fixture(), copy]);
    writeFileSync(
      path.join(copy, 'teamonly.py'),
      'from torch import nn\n\n\nclass TeamOnlyCopyGate(nn.Module):\n    def forward(self, x):\n        return x\n',
    );
    const team = path.join(work, 'teamlib2');
    mkdirSync(team);
    writeFileSync(path.join(team, '__init__.py'), '');
    writeFileSync(path.join(team, 'gates.py'), 'from torch import nn\n\n\nclass TeamSideGate(nn.Module):\n    def forward(self, x):\n        return x\n');
    // the team's library is a git checkout with a block in a file no commit holds: its provenance travels with the index
    const git = (...args: string[]): string =>
      execFileSync('git', ['-c', 'user.email=t@example.org', '-c', 'user.name=t', ...args], { cwd: team, encoding: 'utf8' }).trim();
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-qm', 'first');
    const head = git('rev-parse', 'HEAD');
    writeFileSync(path.join(team, 'fresh.py'), 'from torch import nn\n\n\nclass FreshTeamGate(nn.Module):\n    def forward(self, x):\n        return x + 1\n');
    const cliJs = path.join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
    const run = (...args: string[]): string =>
      execFileSync(process.execPath, [cliJs, ...args], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, encoding: 'utf8' });
    run('index', copy, team, '--db', path.join(work, 'team.db'));
    run('export', '--db', path.join(work, 'team.db'), '--to', path.join(work, 'team.tgz'));
    const before = (await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos > 0)).repos;
    const errorBefore = nnrag.lastError();
    const config = vscode.workspace.getConfiguration('nnrag');
    const names = async (text: string): Promise<string[]> => (await nnrag.request(SearchBlocks, { text, limit: 5 })).map((h) => `${h.repo}:${h.name}`);
    try {
      await config.update('sharedIndex', path.join(work, 'team.tgz'), vscode.ConfigurationTarget.Workspace);
      const s = await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before + 1);
      assert.strictEqual(s.failing ?? 0, 0, JSON.stringify(s));
      const nodes = await nnrag.request(ListTree, {});
      const mine = nodes.find((n) => n.repo === 'tinyblocks');
      assert.ok(mine && !mine.error && !mine.shared && mine.shadowsShared, `the workspace's tinyblocks is its own: ${JSON.stringify(mine)}`);
      assert.ok(nodes.find((n) => n.repo === 'teamlib2')?.shared, JSON.stringify(nodes));
      assert.ok((await names('TeamSideGate')).includes('teamlib2:TeamSideGate'));
      assert.ok(!(await names('TeamOnlyCopyGate')).some((n) => n.endsWith(':TeamOnlyCopyGate')), 'the shared copy of tinyblocks is not used');
      // a block from the shared index in a file its checkout had not committed: said so in the pulled file
      const pulled = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'teamlib2:teamlib2.fresh.FreshTeamGate', 'fresh_team_gate.py'), [
        'nnrag.acceptPull',
      ]);
      assert.ok(pulled?.out, JSON.stringify(pulled));
      const text = readFileSync(pulled.out, 'utf8');
      assert.ok(text.includes(`# commit ${head}, with changes not committed on top of it;`), text.slice(0, 600));
      rmSync(pulled.out, { force: true });
      // the workspace's later edits are indexed (they were never indexed again)
      const later = path.join(fixture(), 'later_gate.py');
      writeFileSync(later, 'from torch import nn\n\n\nclass LaterLocalGate(nn.Module):\n    def forward(self, x):\n        return x\n');
      try {
        await vscode.commands.executeCommand('nnrag.reindexRepository', 'tinyblocks');
        assert.ok((await names('LaterLocalGate')).includes('tinyblocks:LaterLocalGate'));
      } finally {
        rmSync(later, { force: true });
      }
      // Refresh Shared Index makes the index from the archive again: still no error, still the workspace's copy
      await vscode.commands.executeCommand('nnrag.refreshSharedIndex');
      assert.strictEqual(nnrag.status().failing ?? 0, 0);
      assert.strictEqual(nnrag.lastError(), errorBefore, 'no error was shown');
    } finally {
      await config.update('sharedIndex', undefined, vscode.ConfigurationTarget.Workspace);
    }
    // the setting removed: the shared repositories leave, the workspace's stays, not marked
    await nnrag.waitForStatus((st) => st.state === 'ready' && st.repos === before);
    const nodes = await nnrag.request(ListTree, {});
    assert.ok(!nodes.some((n) => n.repo === 'teamlib2'), JSON.stringify(nodes));
    assert.ok(
      nodes.some((n) => n.repo === 'tinyblocks' && !n.shadowsShared && !n.error),
      JSON.stringify(nodes),
    );
    rmSync(work, { recursive: true, force: true });
  });

  it('validates with the interpreter picked for NN-RAG: the pick wins over inherited defaults and is written where it takes effect', async () => {
    const nnragConfig = vscode.workspace.getConfiguration('nnrag');
    const picked = nnragConfig.inspect<string>('pythonPath')?.workspaceValue;
    assert.ok(picked, 'the runner sets nnrag.pythonPath in the workspace');
    // python.defaultInterpreterPath is the Python extension's setting (not installed here): written into the file
    const settingsFile = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.vscode', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(settingsFile, JSON.stringify({ ...settings, 'python.defaultInterpreterPath': '/nonexistent/python3' }, null, 2));
    for (let t0 = Date.now(); vscode.workspace.getConfiguration('python').get('defaultInterpreterPath') !== '/nonexistent/python3'; await sleep(100)) {
      if (Date.now() - t0 > 20_000) throw new Error('VS Code did not read the changed settings file');
    }
    try {
      assert.deepStrictEqual(nnrag.interpreter(), { path: picked, source: 'nnrag.pythonPath' });
      // in a trusted workspace the item names what validates and picks another
      assert.strictEqual(nnrag.interpreterStatus().command, 'nnrag.selectInterpreter');
      assert.match(nnrag.interpreterStatus().detail ?? '', /validates pulled blocks \(nnrag\.pythonPath\)/);
      // a new pick goes to the workspace, whose value is in effect (user settings would change nothing)
      const other = realpathSync(picked);
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.selectInterpreter', other), 'workspace');
      assert.deepStrictEqual(nnrag.interpreter(), { path: other, source: 'nnrag.pythonPath' });
      // the picker keeps offering the one used before the switch, after the one in use
      assert.deepStrictEqual(nnrag.interpreterCandidates().slice(0, 2), [other, picked]);
      // "python3" is not offered beside the file PATH finds for it (the extension host reads PATH when it lists them)
      const savedPath = process.env.PATH;
      process.env.PATH = `/usr/bin${path.delimiter}${savedPath ?? ''}`;
      try {
        const offered = nnrag.interpreterCandidates();
        assert.ok(offered.includes('/usr/bin/python3') && !offered.includes('python3'), offered.join(', '));
      } finally {
        process.env.PATH = savedPath;
      }
      assert.strictEqual(nnragConfig.inspect<string>('pythonPath')?.globalValue, undefined, 'the user settings are untouched');
      const report = await drive(
        vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'drop_path_pick.py'),
        [],
      );
      assert.strictEqual(report?.status, 'validated', JSON.stringify(report));
    } finally {
      await vscode.workspace.getConfiguration('nnrag').update('pythonPath', picked, vscode.ConfigurationTarget.Workspace);
      const now = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
      delete now['python.defaultInterpreterPath'];
      writeFileSync(settingsFile, JSON.stringify(now, null, 2));
    }
  });

  it("says in its own words that a file of the user's is not a pulled one, for every command that takes a pulled file", async () => {
    const mine = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, 'my_own_model.py');
    writeFileSync(mine, 'import torch\n\n\nclass Mine(torch.nn.Module):\n    pass\n');
    try {
      await vscode.window.showTextDocument(vscode.Uri.file(mine));
      for (const command of ['nnrag.compareUpstream', 'nnrag.updatePulled', 'nnrag.validatePulled']) {
        assert.strictEqual(await vscode.commands.executeCommand(command, vscode.Uri.file(mine).toString()), undefined, command);
        const shown = nnrag.lastError() ?? '';
        assert.match(shown, /my_own_model\.py was not pulled by NN-RAG/, command);
        assert.doesNotMatch(shown, /Request .* failed/, command);
      }
      assert.strictEqual(readFileSync(mine, 'utf8'), 'import torch\n\n\nclass Mine(torch.nn.Module):\n    pass\n', 'the file is untouched');
    } finally {
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      rmSync(mine, { force: true });
    }
  });

  it("inserts a block at the cursor: pulled beside the file being edited, its import at the cursor's line", async () => {
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    mkdirSync(path.join(root, 'models'), { recursive: true });
    writeFileSync(path.join(root, 'models', '__init__.py'), '');
    const mine = path.join(root, 'models', 'net.py');
    writeFileSync(mine, 'import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n');
    try {
      const editor = await vscode.window.showTextDocument(vscode.Uri.file(mine));
      editor.selection = new vscode.Selection(1, 0, 1, 0);
      const r = await drive(
        vscode.commands.executeCommand<PullReport & { inserted?: string }>(
          'nnrag.insertBlockAtCursor',
          'tinyblocks:tinyblocks.layers.drop.DropPath',
          'drop_path.py',
        ),
        ['nnrag.acceptPull'],
      );
      assert.strictEqual(r?.out, path.join(root, 'models', 'drop_path.py'), JSON.stringify(r));
      assert.ok(existsSync(path.join(root, 'models', 'drop_path.py')));
      assert.strictEqual(r?.inserted, 'from .drop_path import DropPath');
      assert.strictEqual(vscode.window.activeTextEditor?.document.getText().split('\n')[1], 'from .drop_path import DropPath');
    } finally {
      await vscode.commands.executeCommand('workbench.action.files.revert');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      rmSync(path.join(root, 'models'), { recursive: true, force: true });
    }
  });

  it('Insert at Cursor leaves the remembered pull folder as it was: the next pull goes where pulls went', async () => {
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    mkdirSync(path.join(root, 'models2'), { recursive: true });
    const mine = path.join(root, 'models2', 'net.py');
    writeFileSync(mine, 'import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n');
    try {
      const editor = await vscode.window.showTextDocument(vscode.Uri.file(mine));
      editor.selection = new vscode.Selection(1, 0, 1, 0);
      // the name asked is accepted as proposed (beside the file being edited)
      const inserted = await drive(
        vscode.commands.executeCommand<PullReport & { inserted?: string }>('nnrag.insertBlockAtCursor', 'tinyblocks:tinyblocks.layers.drop.DropPath'),
        [ACCEPT, 'nnrag.acceptPull'],
      );
      assert.strictEqual(path.dirname(inserted?.out ?? ''), path.join(root, 'models2'), JSON.stringify(inserted));
      await vscode.commands.executeCommand('workbench.action.files.revert');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      const next = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.se.SqueezeExcite'), [
        ACCEPT,
        'nnrag.acceptPull',
      ]);
      assert.notStrictEqual(path.dirname(next?.out ?? ''), path.join(root, 'models2'), JSON.stringify(next));
    } finally {
      rmSync(path.join(root, 'models2'), { recursive: true, force: true });
    }
  });

  it('pulls into a folder named with the file, inside the workspace only', async () => {
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    try {
      const r = await drive(
        vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'layers/extra/drop_path_here.py'),
        ['nnrag.acceptPull'],
      );
      assert.strictEqual(r?.out, path.join(root, 'layers', 'extra', 'drop_path_here.py'));
      assert.strictEqual(
        await vscode.commands.executeCommand('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'layers/../../escape.py'),
        undefined,
      );
      assert.ok(!existsSync(path.join(root, '..', 'escape.py')));
    } finally {
      rmSync(path.join(root, 'layers'), { recursive: true, force: true });
    }
  });

  it("adds a pulled block's requirements to the project's pyproject.toml, once, keeping what the user wrote", async () => {
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const pyproject = path.join(root, 'pyproject.toml');
    const mine = '[project]\nname = "my-models"\ndependencies = [\n    "numpy>=1.24",  # mine\n]\n\n[tool.ruff]\nline-length = 100\n';
    writeFileSync(pyproject, mine);
    try {
      const r = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'drop_path_req.py'), [
        'nnrag.acceptPull',
      ]);
      assert.ok(r?.out, JSON.stringify(r));
      // asked once where requirements go: the first choice offered is the project's pyproject.toml
      await drive(vscode.commands.executeCommand('nnrag.writeRequirements', r.out), [ACCEPT]);
      const after = readFileSync(pyproject, 'utf8');
      assert.ok(after.startsWith('[project]\nname = "my-models"\ndependencies = [\n    "numpy>=1.24",  # mine\n    "torch'), after);
      assert.ok(after.endsWith(']\n\n[tool.ruff]\nline-length = 100\n'), after);
      // again: not asked, nothing added twice
      await drive(vscode.commands.executeCommand('nnrag.writeRequirements', r.out), []);
      assert.strictEqual(readFileSync(pyproject, 'utf8'), after);
    } finally {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      rmSync(pyproject, { force: true });
      rmSync(pulledPath('drop_path_req.py'), { force: true });
    }
  });

  it('puts a failed validation in the Problems panel, and takes it out when the file validates again', async () => {
    const r = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'drop_path_problem.py'), [
      'nnrag.acceptPull',
    ]);
    const file = vscode.Uri.file(r!.out!);
    try {
      let doc = await vscode.workspace.openTextDocument(file);
      const forward = doc
        .getText()
        .split('\n')
        .findIndex((l) => /^\s+def forward\(self, x\b/.test(l));
      assert.ok(forward > 0);
      const edit = new vscode.WorkspaceEdit();
      edit.insert(file, new vscode.Position(forward + 1, 0), '        raise RuntimeError("broken on purpose")\n');
      assert.ok(await vscode.workspace.applyEdit(edit));
      await doc.save();
      const failed = await drive(vscode.commands.executeCommand<{ ok: boolean }>('nnrag.validatePulled', file.toString()), []);
      assert.strictEqual(failed?.ok, false);
      const problems = vscode.languages.getDiagnostics(file).filter((d) => d.source === 'NN-RAG');
      assert.strictEqual(problems.length, 1, JSON.stringify(problems));
      assert.match(problems[0].message, /NN-RAG: failed: .*broken on purpose/);
      // a failing pulled file that is not open (as after a reload) has its entry from its header, and keeps it
      const failing = doc.getText();
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      await vscode.workspace.fs.delete(file);
      const t0 = Date.now();
      while (vscode.languages.getDiagnostics(file).some((d) => d.source === 'NN-RAG')) {
        if (Date.now() - t0 > 15_000) throw new Error('the deleted file keeps its Problems entry');
        await sleep(100);
      }
      writeFileSync(file.fsPath, failing);
      await vscode.commands.executeCommand('nnrag.refreshPulled');
      const restored = vscode.languages.getDiagnostics(file).filter((d) => d.source === 'NN-RAG');
      assert.strictEqual(restored.length, 1, 'restored from the header of a file no editor shows');
      assert.match(restored[0].message, /broken on purpose/);
      doc = await vscode.workspace.openTextDocument(file);
      // fixed: validated again, the problem goes
      const undo = new vscode.WorkspaceEdit();
      undo.delete(file, new vscode.Range(forward + 1, 0, forward + 2, 0));
      assert.ok(await vscode.workspace.applyEdit(undo));
      await doc.save();
      const passed = await drive(vscode.commands.executeCommand<{ ok: boolean }>('nnrag.validatePulled', file.toString()), []);
      assert.strictEqual(passed?.ok, true);
      assert.deepStrictEqual(
        vscode.languages.getDiagnostics(file).filter((d) => d.source === 'NN-RAG'),
        [],
      );
      // what the pull's success message offered is there later too
      assert.strictEqual(await vscode.commands.executeCommand<string>('nnrag.copyImport', file.toString()), 'from blocks.drop_path_problem import DropPath');
      assert.strictEqual(await vscode.env.clipboard.readText(), 'from blocks.drop_path_problem import DropPath');
    } finally {
      // (a failure above may have left the file deleted: the finally must not hide it)
      rmSync(file.fsPath, { force: true });
    }
  });

  it("opens VS Code's merge editor when an update conflicts with the user's edit", async () => {
    const r = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.se.SqueezeExcite', 'se_conflict.py'), [
      'nnrag.acceptPull',
    ]);
    const file = vscode.Uri.file(r!.out!);
    const se = path.join(fixture(), 'tinyblocks', 'layers', 'se.py');
    const original = readFileSync(se, 'utf8');
    const line = '        s = x.mean((2, 3), keepdim=True)';
    try {
      const doc = await vscode.workspace.openTextDocument(file);
      const i = doc.getText().split('\n').indexOf(line);
      assert.ok(i > 0);
      const edit = new vscode.WorkspaceEdit();
      edit.replace(file, new vscode.Range(i, 0, i, line.length), '        s = x.mean((2, 3), keepdim=True)  # mine');
      assert.ok(await vscode.workspace.applyEdit(edit));
      await doc.save();
      writeFileSync(se, original.replace(line, '        s = x.amax((2, 3), keepdim=True)'));
      await vscode.commands.executeCommand('nnrag.reindex');
      const updated = await drive(vscode.commands.executeCommand<{ state: string; conflicts: number }>('nnrag.updatePulled', file.toString()), []);
      assert.strictEqual(updated?.state, 'conflicts', JSON.stringify(updated));
      // (a merge editor's tab input has base, input1, input2 and result; the 1.90 types do not name its class)
      const merge = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .find((t) => {
          const input = t.input as { result?: vscode.Uri; input1?: vscode.Uri } | undefined;
          return input?.input1 !== undefined && input.result?.toString() === file.toString();
        });
      assert.ok(
        merge,
        `tabs: ${vscode.window.tabGroups.all
          .flatMap((g) => g.tabs)
          .map((t) => t.label)
          .join(', ')}`,
      );
      assert.match(readFileSync(file.fsPath, 'utf8'), /^<<<<<<< /m);
    } finally {
      writeFileSync(se, original);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.workspace.fs.delete(file);
      await vscode.commands.executeCommand('nnrag.reindex');
    }
  });

  it('refuses file names that escape the folder or shadow a module', async () => {
    const before = vscode.workspace.workspaceFolders![0];
    for (const bad of ['../escape.py', 'torch.py', 'os.py', 'name with space.py']) {
      const r = await vscode.commands.executeCommand('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', bad);
      assert.strictEqual(r, undefined, bad);
      assert.ok(!existsSync(path.join(before.uri.fsPath, 'blocks', bad)), bad);
    }
  });

  it('keeps the extension host responsive and answers searches while a large repository indexes', async function () {
    const big = process.env.NNRAG_IT_BIG;
    if (!big || !existsSync(big)) this.skip();
    const config = vscode.workspace.getConfiguration('nnrag');
    const before = config.get<unknown[]>('repositories') ?? [];
    let worstLag = 0;
    let last = Date.now();
    const timer = setInterval(() => {
      const now = Date.now();
      worstLag = Math.max(worstLag, now - last - 20);
      last = now;
    }, 20);
    try {
      const started = nnrag.waitForStatus((s) => s.state === 'indexing' && (s.progress?.repo ?? '') === 'big');
      await config.update('repositories', [...before, { location: big, name: 'big' }], vscode.ConfigurationTarget.Workspace);
      await started;
      // the server answers between batches: a search during the cold index returns the blocks already indexed
      const hits = await nnrag.request(SearchBlocks, { text: 'residual', limit: 5 });
      const during = nnrag.status().state;
      assert.ok(hits.length > 0);
      assert.strictEqual(during, 'indexing', 'the search was answered before the index finished');
      const done = await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 2);
      assert.ok(done.blocks > 7);
      // taking it out of the settings takes it out of the index (and the tree)
      await config.update('repositories', before, vscode.ConfigurationTarget.Workspace);
      await nnrag.waitForStatus((s) => s.state === 'ready' && s.repos === 1);
      assert.deepStrictEqual(
        (await nnrag.request(ListTree, {})).map((n) => n.label),
        ['tinyblocks'],
      );
    } finally {
      clearInterval(timer);
      await config.update('repositories', before, vscode.ConfigurationTarget.Workspace);
    }
    // the index runs in the language server's process: the extension host's event loop never stalls for long
    assert.ok(worstLag < 1000, `the extension host stalled ${worstLag} ms`);
  });
});

describe('untrusted workspace', function () {
  let nnrag: NnragApi;

  before(async () => {
    assert.strictEqual(vscode.workspace.isTrusted, false, 'the runner starts VS Code with workspace trust on and the folder not trusted');
    nnrag = await api();
  });

  it('the interpreter item says validation is off, and offers trust instead of another interpreter', () => {
    assert.deepStrictEqual(nnrag.interpreterStatus(), { detail: 'validation is off in Restricted Mode', command: 'workbench.trust.manage' });
  });

  it('still indexes and searches', async () => {
    await nnrag.waitForStatus((s) => s.state === 'ready' && s.blocks > 0);
    const hits = await nnrag.request(SearchBlocks, { text: 'drop path', limit: 3 });
    assert.strictEqual(hits[0]?.name, 'DropPath');
  });

  it('pulls the file but does not run it', async () => {
    const dest = pulledPath('drop_path.py');
    const report = await drive(vscode.commands.executeCommand<PullReport>('nnrag.pullBlock', 'tinyblocks:tinyblocks.layers.drop.DropPath', 'drop_path.py'), []);
    assert.ok(report);
    assert.strictEqual(report.status, 'extracted');
    assert.strictEqual(report.validation, undefined);
    assert.ok(existsSync(dest));
    assert.doesNotMatch(readFileSync(dest, 'utf8'), /"validation"/);
  });

  it('the pull tool writes the file but does not run it either', async function () {
    const lm = lmTools();
    if (!lm) this.skip();
    const pulled = JSON.parse(
      toolText(
        await drive(
          lm!.invokeTool('nnrag_pullBlock', {
            input: { target: 'tinyblocks:tinyblocks.layers.drop.DropPath', fileName: 'drop_from_tool.py' },
            toolInvocationToken: undefined,
          }),
          [],
        ),
      ),
    );
    assert.deepStrictEqual([pulled.status, pulled.trusted, pulled.validated], ['extracted', false, false], JSON.stringify(pulled));
    assert.ok(existsSync(pulledPath('drop_from_tool.py')));
  });
});
