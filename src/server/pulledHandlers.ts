/** Pulled files in the workspace: their state, what an update gives them, their records, validation after an update. */
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Connection } from 'vscode-languageserver';
import { NnragError } from '../core/base/errors';
import { readProvenance, splitPulled } from '../core/emit/pulledFile';
import { readManifest, removeManifests, writeManifests } from '../core/emit/manifest';
import { companionsOf } from '../core/pull/shared';
import { pulledFileStatus, withValidation } from '../core/pull/update';
import type { IndexService } from '../core/service/indexService';
import { GetPulledStatus, ObserveRepositories, PlanUpdate, RemoveManifests, ValidatePulled, WriteManifests } from '../shared/protocol';
import { onRequest, signalOf } from './rpc';

export function registerPulledHandlers(connection: Connection, service: () => IndexService, scratch: () => string): void {
  onRequest(connection, ObserveRepositories, async ({ python, memoryMb, repos, allowWeakSandbox }, token) => {
    const ws = await service().workspace();
    const summaries = await ws.observe({ python, memoryMb, allowWeakSandbox, signal: signalOf(token) }, repos);
    ws.db.scheduleSave(500, () => undefined);
    return summaries;
  });
  onRequest(connection, GetPulledStatus, async ({ files }) => {
    const { db } = await service().ready();
    return files.flatMap(({ uri, text }) => {
      const st = pulledFileStatus(db, text);
      return st ? [{ uri, ...st }] : [];
    });
  });
  onRequest(connection, PlanUpdate, async ({ file, text }) => {
    const manifest = await readManifest(file);
    const plan = await (await service().workspace()).planUpdate(text, manifest?.base_body, scratch(), path.basename(file), path.dirname(file));
    // the file as it was pulled (its own header, which names the version and folder it came from, over the body the
    // manifest kept): the left of a three-way Compare, which shows what upstream changed since the pull and not the
    // user's own edits
    const pulled = manifest?.base_body !== undefined ? `${splitPulled(text).header}${manifest.base_body}` : undefined;
    return {
      state: plan.state,
      next: plan.next,
      upstream: plan.upstream,
      base: plan.base,
      conflicts: plan.conflicts,
      pulled,
      upstreamChanges: plan.upstreamChanges,
      yourEdits: plan.yourEdits,
    };
  });
  onRequest(connection, WriteManifests, async ({ file, report, base, text: given, requirements }) => {
    const text = given ?? (await fsp.readFile(file, 'utf8'));
    const prov = readProvenance(text);
    if (!prov) throw new NnragError('bad-source', `${path.basename(file)} has no NN-RAG provenance record`);
    await writeManifests(file, prov, requirements ?? report?.requirements, base ?? (report ? splitPulled(text).body : undefined));
  });
  onRequest(connection, RemoveManifests, async ({ file }) => {
    // only beside a file that is gone, and only a manifest of ours
    if (
      await fsp.stat(file).then(
        () => true,
        () => false,
      )
    )
      throw new NnragError('bad-source', `${path.basename(file)} still exists`);
    if (!(await readManifest(file))) return;
    await removeManifests(file);
  });
  onRequest(connection, ValidatePulled, async ({ file, text, python, timeoutSeconds, memoryMb, allowWeakSandbox }, token) => {
    if (!readProvenance(text)) throw new NnragError('bad-source', `${path.basename(file)} has no NN-RAG provenance record`);
    const ws = await service().workspace();
    // judged as the editor holds it: the text in a scratch folder, beside the helpers the file imports
    await fsp.mkdir(scratch(), { recursive: true });
    const dir = await fsp.mkdtemp(path.join(scratch(), 'validate-'));
    try {
      const copy = path.join(dir, path.basename(file));
      await fsp.writeFile(copy, text, 'utf8');
      const { report } = await ws.validatePulled(copy, text, {
        companions: companionsOf(file, text),
        python,
        timeoutMs: timeoutSeconds * 1000,
        memoryMb,
        allowWeakSandbox: allowWeakSandbox === true,
        signal: signalOf(token),
      });
      return { validation: report, text: withValidation(text, report) };
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
}
