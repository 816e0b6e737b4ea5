/**
 * What a reviewer checks of a pulled file, kept in the `.nnrag/` folder beside it so that the block stays one file:
 * - `.nnrag/NAME.manifest.json`: per inlined definition, the repository (URL), commit, path, line range, the git blob
 *   id of the source file and its SWHID (`swh:1:cnt:<blob>`), and the license (SPDX id);
 * - `.nnrag/required_repos.json`: the third-party distributions the folder's pulled files need, with the versions the
 *   interpreter has and where they come from (merged across pulls).
 * Records an earlier version wrote beside the file are read, and moved into `.nnrag/` when next written.
 */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Requirement } from '../validate/runner';
import type { Provenance } from './pulledFile';
import { writeText } from './writeSafe';

export const MANIFEST_SCHEMA = 'nn-rag/manifest@1';

export interface Manifest {
  schema: typeof MANIFEST_SCHEMA;
  file: string;
  target: string;
  content_hash: string;
  pulled_at: string;
  validation: Provenance['validation'] | null;
  definitions: {
    names: string[];
    module: string;
    repository: string;
    url: string | null;
    commit: string | null;
    /** The file is not as `commit` holds it (changes not committed): `blob` is the file's own. */
    uncommitted?: boolean;
    path: string;
    lines: [number, number];
    blob: string;
    swhid: string;
    license: string | null;
  }[];
  imports: string[];
  /** The body as pulled (below the header): the base `nn-rag update` merges the user's edits against. */
  base_body?: string;
}

export interface RequiredRepos {
  schema: 'nn-rag/required-repos@1';
  distributions: Record<
    string,
    { version: string | null; location: string | null; installer: string | null; url: string | null; modules: string[]; needed_by: string[] }
  >;
  /** Modules the interpreter does not have (or that were not checked: no validation ran). */
  missing: Record<string, { needed_by: string[] }>;
}

export function manifestOf(file: string, prov: Provenance, baseBody?: string): Manifest {
  return {
    schema: MANIFEST_SCHEMA,
    file: path.basename(file),
    target: prov.target,
    content_hash: prov.hash,
    pulled_at: prov.pulledAt,
    validation: prov.validation ?? null,
    definitions: prov.definitions.map((d) => ({
      names: d.names,
      module: d.module,
      repository: d.repo,
      url: d.url ?? (d.repo === prov.repo ? prov.url : null),
      commit: d.commit ?? (d.repo === prov.repo ? prov.commit : null),
      ...(d.uncommitted ? { uncommitted: true } : {}),
      path: d.path,
      lines: d.lines,
      blob: d.blob,
      swhid: d.swhid ?? `swh:1:cnt:${d.blob}`,
      license: d.license ?? (d.repo === prov.repo ? prov.license : null),
    })),
    imports: prov.imports,
    base_body: baseBody,
  };
}

/** The folder beside pulled files that keeps NN-RAG's records of them, so that a pulled block stays one file. */
export const RECORDS_FOLDER = '.nnrag';

export function manifestPath(file: string): string {
  return path.join(path.dirname(file), RECORDS_FOLDER, path.basename(file).replace(/\.py$/, '') + '.manifest.json');
}

/** Where earlier versions wrote the records: beside the file (read, then moved into RECORDS_FOLDER on the next write). */
function legacyManifestPath(file: string): string {
  return file.replace(/\.py$/, '') + '.manifest.json';
}

function legacyRequiredReposPath(file: string): string {
  return path.join(path.dirname(file), 'required_repos.json');
}

/** A record an earlier version wrote beside `file`: read and removed only when its content proves it ours (its schema,
 * and for a manifest the file it describes); anything else of that name is the user's and stays. */
async function legacyRecord(where: string, file: string): Promise<Manifest | RequiredRepos | undefined> {
  try {
    const st = await fsp.lstat(where);
    if (!st.isFile()) return undefined;
    const got = JSON.parse(await fsp.readFile(where, 'utf8')) as { schema?: string; file?: unknown; distributions?: unknown; missing?: unknown } | null;
    if (got?.schema === MANIFEST_SCHEMA && got.file === path.basename(file)) return got as unknown as Manifest;
    if (got?.schema === REQUIRED_REPOS_SCHEMA && typeof got.distributions === 'object' && typeof got.missing === 'object')
      return got as unknown as RequiredRepos;
  } catch {
    // not there, not JSON: not ours
  }
  return undefined;
}

async function removeLegacy(where: string, file: string): Promise<void> {
  if (await legacyRecord(where, file)) await fsp.rm(where, { force: true });
}

/** One writer at a time per required_repos.json (batch pulls run concurrently). */
const locks = new Map<string, Promise<unknown>>();

/**
 * Writes the manifest next to `file` from its header (`prov`, the record) and merges the file's requirements into the
 * folder's required_repos.json. Called on every pull, update and validation, so neither says something the header
 * does not. `requirements` undefined (no validation ran): what the previous write found for the file's imports is
 * kept, not turned into "missing"; `baseBody` undefined: the previous manifest's base is kept.
 */
export async function writeManifests(
  file: string,
  prov: Provenance,
  requirements: Requirement[] | undefined,
  baseBody?: string,
  root?: string,
): Promise<{ manifest: string; requiredRepos: string }> {
  const key = path.dirname(path.resolve(file));
  const previous = locks.get(key) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(() => writeManifestsNow(file, prov, requirements, baseBody, root));
  locks.set(key, mine);
  try {
    return await mine;
  } finally {
    if (locks.get(key) === mine) locks.delete(key);
  }
}

async function writeManifestsNow(
  file: string,
  prov: Provenance,
  requirements: Requirement[] | undefined,
  baseBody?: string,
  root?: string,
): Promise<{ manifest: string; requiredRepos: string }> {
  // the records folder is checked from the file's folder down (a link in its place is refused)
  const within = root ?? path.dirname(path.resolve(file));
  const manifest = manifestPath(file);
  const base = baseBody ?? (await readManifest(file))?.base_body;
  await writeText(manifest, `${JSON.stringify(manifestOf(file, prov, base), null, 2)}\n`, within);
  await removeLegacy(legacyManifestPath(file), file);

  const requiredRepos = requiredReposPath(file);
  const merged = fs.existsSync(requiredRepos) ? await readRequiredRepos(requiredRepos) : await readLegacyRequiredRepos(file);
  const me = path.basename(file);
  // what was found for this file before, by module: kept when no validation ran this time
  const before = new Map<string, Requirement>();
  for (const [name, d] of Object.entries(merged.distributions)) {
    if (!d.needed_by.includes(me)) continue;
    for (const module of d.modules)
      before.set(module, { module, distribution: name, version: d.version, location: d.location, installer: d.installer, url: d.url });
  }
  dropFile(merged, me);
  const known = requirements ? new Map(requirements.map((r) => [r.module, r])) : before;
  for (const mod of prov.imports) {
    const r = known.get(mod);
    if (r?.distribution && r.version) {
      const d = (merged.distributions[r.distribution] ??= {
        version: r.version,
        location: r.location ?? null,
        installer: r.installer ?? null,
        url: r.url ?? null,
        modules: [],
        needed_by: [],
      });
      if (!d.modules.includes(mod)) d.modules.push(mod);
      if (!d.needed_by.includes(me)) d.needed_by.push(me);
    } else {
      const m = (merged.missing[mod] ??= { needed_by: [] });
      if (!m.needed_by.includes(me)) m.needed_by.push(me);
    }
  }
  await writeText(requiredRepos, `${JSON.stringify(merged, null, 2)}\n`, within);
  await removeLegacy(legacyRequiredReposPath(file), file);
  return { manifest, requiredRepos };
}

/**
 * A pulled file was deleted: its manifest goes, and it leaves required_repos.json (which goes too once no file needs
 * anything). Files that are not there are fine.
 */
export async function removeManifests(file: string): Promise<void> {
  const key = path.dirname(path.resolve(file));
  const previous = locks.get(key) ?? Promise.resolve();
  const mine = previous
    .catch(() => undefined)
    .then(async () => {
      await fsp.rm(manifestPath(file), { force: true });
      await removeLegacy(legacyManifestPath(file), file);
      for (const requiredRepos of [requiredReposPath(file), legacyRequiredReposPath(file)]) {
        if (!fs.existsSync(requiredRepos) || (requiredRepos !== requiredReposPath(file) && !(await legacyRecord(requiredRepos, file)))) continue;
        const merged = await readRequiredRepos(requiredRepos);
        dropFile(merged, path.basename(file));
        if (!Object.keys(merged.distributions).length && !Object.keys(merged.missing).length) await fsp.rm(requiredRepos, { force: true });
        else await writeText(requiredRepos, `${JSON.stringify(merged, null, 2)}\n`, path.dirname(path.resolve(file)));
      }
      // the records folder goes with the last file it kept records of
      await fsp.rmdir(path.join(path.dirname(file), RECORDS_FOLDER)).catch(() => undefined);
    });
  locks.set(key, mine);
  try {
    await mine;
  } finally {
    if (locks.get(key) === mine) locks.delete(key);
  }
}

export async function readManifest(file: string): Promise<Manifest | undefined> {
  try {
    const m = JSON.parse(await fsp.readFile(manifestPath(file), 'utf8')) as Manifest;
    if (m.schema === MANIFEST_SCHEMA) return m;
  } catch {
    // not there (or unreadable): the place earlier versions wrote it, else none
  }
  const legacy = await legacyRecord(legacyManifestPath(file), file);
  return legacy?.schema === MANIFEST_SCHEMA ? legacy : undefined;
}

/** The folder's requirements of its pulled files (in RECORDS_FOLDER). */
export function requiredReposPath(file: string): string {
  return path.join(path.dirname(file), RECORDS_FOLDER, 'required_repos.json');
}

const REQUIRED_REPOS_SCHEMA = 'nn-rag/required-repos@1';

async function readLegacyRequiredRepos(file: string): Promise<RequiredRepos> {
  const legacy = await legacyRecord(legacyRequiredReposPath(file), file);
  return legacy?.schema === REQUIRED_REPOS_SCHEMA ? (legacy as RequiredRepos) : { schema: REQUIRED_REPOS_SCHEMA, distributions: {}, missing: {} };
}

async function readRequiredRepos(file: string): Promise<RequiredRepos> {
  const empty: RequiredRepos = { schema: REQUIRED_REPOS_SCHEMA, distributions: {}, missing: {} };
  try {
    const old = JSON.parse(await fsp.readFile(file, 'utf8')) as RequiredRepos;
    return old.schema === empty.schema ? old : empty;
  } catch {
    // none yet, or unreadable: start again
    return empty;
  }
}

/** The file's entries go; others' stay. */
function dropFile(merged: RequiredRepos, me: string): void {
  for (const [k, d] of Object.entries(merged.distributions)) {
    d.needed_by = d.needed_by.filter((f) => f !== me);
    if (!d.needed_by.length) delete merged.distributions[k];
  }
  for (const [k, m] of Object.entries(merged.missing)) {
    m.needed_by = m.needed_by.filter((f) => f !== me);
    if (!m.needed_by.length) delete merged.missing[k];
  }
}
