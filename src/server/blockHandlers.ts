/** A block's requests: its details, what a pull would bring, the pull itself, the sandbox, the original source. */
import type { CancellationToken, Connection } from 'vscode-languageserver';
import { pullBlock } from '../core/pull/pull';
import type { PullOptions, PullSession } from '../core/pull/pull';
import type { PythonParser } from '../core/parse/parser';
import { describeClass } from '../core/resolve/describe';
import type { IndexService } from '../core/service/indexService';
import { readClassFile } from '../core/store/sourceText';
import { findTarget } from '../core/store/target';
import { describeSandbox } from '../core/validate/sandbox';
import * as path from 'path';
import { NnragError } from '../core/base/errors';
import { pullTogether, SHARED_MODULE, sharedReplaceProblem } from '../core/pull/shared';
import { ExplainDependencies, GetBlockDetails, GetSandbox, PullBlock, PullTogether, ReadSource } from '../shared/protocol';
import type { PullParams } from '../shared/protocol';
import { onRequest, signalOf } from './rpc';

export function registerBlockHandlers(connection: Connection, service: () => IndexService, runner: () => string, log: (area: string, message: string) => void): void {
  /** A pull's options from the editor's parameters (seconds to ms, flags to booleans). */
  const pullOptionsOf = (params: Omit<PullParams, 'target' | 'out'>, parser: PythonParser, session: PullSession, token: CancellationToken): PullOptions => ({
    parser,
    python: params.python,
    runner: runner(),
    validate: params.validate,
    timeoutMs: params.timeoutSeconds * 1000,
    memoryMb: params.memoryMb,
    signal: signalOf(token),
    allowWeakSandbox: params.allowWeakSandbox === true,
    wholeClasses: params.wholeClasses === true,
    fullDocstrings: params.fullDocstrings === true,
    inlineMetadata: params.inlineMetadata === true,
    builderBudgetMs: params.builderBudgetSeconds === undefined ? undefined : params.builderBudgetSeconds * 1000,
    originalCache: service().originalCache(),
    // the warm validator: torch is imported once per interpreter, not once per pull
    pool: params.validate && params.python ? service().validator(params.python, runner(), params.memoryMb, session) : undefined,
  });
  onRequest(connection, GetBlockDetails, async ({ target }) => {
    const { db } = await service().ready();
    return describeClass(db, findTarget(db, target), service().pullSession(db).table);
  });
  onRequest(connection, ExplainDependencies, async ({ target, python }) => {
    const { db, parser } = await service().ready();
    const report = await pullBlock(service().pullSession(db), findTarget(db, target), { parser, python, validate: false, manifest: false });
    return { target: report.target, sizes: report.sizes!, graph: report.graph! };
  });
  onRequest(connection, PullBlock, async (params, token) => {
    const { db, parser } = await service().ready();
    const ref = findTarget(db, params.target);
    const session = service().pullSession(db);
    const report = await pullBlock(session, ref, { ...pullOptionsOf(params, parser, session, token), out: params.out });
    db.scheduleSave(500);
    log('pull', `${report.target}: ${report.status}${report.tier ? ` (${report.tier})` : ''}${report.category ? ` ${report.category}: ${report.message}` : ''}`);
    return report;
  });
  onRequest(connection, PullTogether, async (params, token) => {
    const { db, parser } = await service().ready();
    const refs = params.targets.map((t) => findTarget(db, t));
    const problem = await sharedReplaceProblem(path.join(params.dest, `${SHARED_MODULE}.py`));
    if (problem) throw new NnragError('usage', `${problem}: move it away or pull the blocks one by one`);
    const session = service().pullSession(db);
    // the manifests are written beside the files the editor writes (WriteManifests), not in the scratch folder
    const result = await pullTogether(session, refs, params.dir, { ...pullOptionsOf(params, parser, session, token), manifest: false });
    db.scheduleSave(500);
    log('pull', `${params.targets.length} blocks together: ${result.reports.map((r) => `${r.target} ${r.status}`).join(', ')}${result.shared ? `; ${result.shared.definitions} shared` : ''}`);
    return result;
  });
  onRequest(connection, GetSandbox, ({ memoryMb }) => describeSandbox(memoryMb));
  onRequest(connection, ReadSource, async ({ target }) => {
    const { db } = await service().ready();
    const ref = findTarget(db, target);
    const { text } = await readClassFile(db, ref);
    return { text, path: ref.path, line: ref.line, repo: ref.repo };
  });
}
