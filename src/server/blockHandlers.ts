/** A block's requests: its details, what a pull would bring, the pull itself, the sandbox, the original source. */
import type { Connection } from 'vscode-languageserver';
import type { IndexService } from '../core/service/indexService';
import { readClassFile } from '../core/store/sourceText';
import { describeSandbox } from '../core/validate/bubblewrap';
import * as path from 'path';
import { NnragError } from '../core/base/errors';
import { SHARED_MODULE, sharedReplaceProblem } from '../core/pull/shared';
import { ExplainDependencies, GetBlockDetails, GetSandbox, PullBlock, PullTogether, ReadSource } from '../shared/protocol';
import type { PullParams } from '../shared/protocol';
import type { PullRequest } from '../core/workspace/request';
import { onRequest, signalOf } from './rpc';

/** The editor's request as the core's: a weaker sandbox only where the user agreed to it. */
function requestOf(params: Omit<PullParams, 'target' | 'out'>): PullRequest {
  return { ...params, allowWeakSandbox: params.allowWeakSandbox === true };
}

export function registerBlockHandlers(connection: Connection, service: () => IndexService, log: (area: string, message: string) => void): void {
  onRequest(connection, GetBlockDetails, async ({ target }) => (await service().workspace()).describe(target));
  onRequest(connection, ExplainDependencies, async ({ target, python }) => {
    const report = await (await service().workspace()).explain(target, { python });
    return { target: report.target, sizes: report.sizes!, graph: report.graph! };
  });
  onRequest(connection, PullBlock, async (params, token) => {
    const ws = await service().workspace();
    const report = await ws.pull(params.target, requestOf(params), { out: params.out, signal: signalOf(token) });
    ws.db.scheduleSave(500);
    log(
      'pull',
      `${report.target}: ${report.status}${report.tier ? ` (${report.tier})` : ''}${report.category ? ` ${report.category}: ${report.message}` : ''}`,
    );
    return report;
  });
  onRequest(connection, PullTogether, async (params, token) => {
    const ws = await service().workspace();
    const refs = params.targets.map((t) => ws.target(t));
    const problem = await sharedReplaceProblem(path.join(params.dest, `${SHARED_MODULE}.py`));
    if (problem) throw new NnragError('usage', `${problem}: move it away or pull the blocks one by one`);
    // the manifests are written beside the files the editor writes (WriteManifests), not in the scratch folder
    const result = await ws.pullTogether(refs, params.dir, { ...requestOf(params), force: false }, { signal: signalOf(token), manifest: false });
    ws.db.scheduleSave(500);
    log(
      'pull',
      `${params.targets.length} blocks together: ${result.reports.map((r) => `${r.target} ${r.status}`).join(', ')}${result.shared ? `; ${result.shared.definitions} shared` : ''}`,
    );
    return result;
  });
  onRequest(connection, GetSandbox, ({ memoryMb }) => describeSandbox(memoryMb));
  onRequest(connection, ReadSource, async ({ target }) => {
    const { db } = await service().ready();
    const ref = (await service().workspace()).target(target);
    const { text } = await readClassFile(db, ref);
    return { text, path: ref.path, line: ref.line, repo: ref.repo };
  });
}
