/** `nn-rag export` and `nn-rag import`: one index for the team, as one archive. */
import { promises as fsp } from 'fs';
import * as path from 'path';
import { NnragError } from '../core/base/errors';
import { redactUrls } from '../core/sources/git';
import { DEFAULT_IMPORT_LIMITS, exportIndex, importIndex } from '../core/store/indexArchive';
import { isHttpUrl, refreshShared, sharedFrom } from '../core/store/sharedIndex';
import type { ArchiveManifest } from '../core/store/indexArchive';
import { dbPath, EXIT, flag, opt, parse, shortCommit } from './env';
import type { CliEnv } from './env';

function describe(m: ArchiveManifest): string {
  const n = m.repositories.length;
  const catalogs = (m.catalogs ?? []).map(
    (c) => `${c.repository}: ${c.entries} ${c.entries === 1 ? 'entry' : 'entries'}, ${c.calls} ${c.calls === 1 ? 'call' : 'calls'}`,
  );
  return `${n} ${n === 1 ? 'repository' : 'repositories'} (${m.repositories.map((r) => `${r.name}${r.commit ? `@${shortCommit(r.commit)}` : ''}`).join(', ') || 'none'}), ${m.files} files, ${m.blocks} blocks, parser ${m.parser_version}${catalogs.length ? `; observed calls of ${catalogs.join('; ')}` : ''}`;
}

export async function exportCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { to: { value: true } });
  const to = opt(args, 'to');
  if (!to) throw new NnragError('usage', 'export needs --to FILE: nn-rag export --db models.db --to models.nnrag.tgz');
  const m = await exportIndex(dbPath(args), path.resolve(to), env.assets.sqlWasm, to);
  if (flag(args, 'json')) env.out(`${JSON.stringify({ archive: path.resolve(to), ...m })}\n`);
  else env.out(`exported ${describe(m)} to ${path.resolve(to)}\n`);
  return EXIT.ok;
}

export async function importCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { force: {}, 'max-size-mb': { value: true }, 'allow-redirects': {} });
  const archive = args.positionals[0];
  if (!archive) throw new NnragError('usage', 'import needs the archive: nn-rag import models.nnrag.tgz --db models.db [--force]');
  if (isHttpUrl(archive)) return importUrl(archive, args, env);
  const m = await importIndex(path.resolve(archive), dbPath(args), {
    force: flag(args, 'force'),
    sqlWasm: env.assets.sqlWasm,
    limits: { ...DEFAULT_IMPORT_LIMITS, ...limitsOf(args) },
  });
  if (flag(args, 'json')) env.out(`${JSON.stringify({ db: dbPath(args), ...m })}\n`);
  else env.out(`imported ${describe(m)} into ${dbPath(args)}\n`);
  return EXIT.ok;
}

/** `--max-size-mb N`: the most an archive may download and unpack to. */
function limitsOf(args: ReturnType<typeof parse>): { maxBytes?: number } {
  const mb = opt(args, 'max-size-mb');
  if (mb === undefined) return {};
  const n = Number(mb);
  if (!Number.isFinite(n) || n <= 0) throw new NnragError('usage', `--max-size-mb takes a positive number of megabytes, not ${JSON.stringify(mb)}`);
  return { maxBytes: Math.round(n * 1024 ** 2) };
}

/** `import URL`: the published index, downloaded again only when the server says it changed (ETag). */
async function importUrl(url: string, args: ReturnType<typeof parse>, env: CliEnv): Promise<number> {
  const db = dbPath(args);
  if (
    !flag(args, 'force') &&
    !(await sharedFrom(db, url)) &&
    (await fsp.stat(db).then(
      () => true,
      () => false,
    ))
  ) {
    throw new NnragError('usage', `${db} exists and was not imported from ${redactUrls(url)}: import replaces it with the archive's index only with --force`);
  }
  const r = await refreshShared(url, db, { sqlWasm: env.assets.sqlWasm, limits: { ...limitsOf(args), allowRedirects: flag(args, 'allow-redirects') } });
  if (flag(args, 'json')) env.out(`${JSON.stringify({ db, url: redactUrls(url), ...r })}\n`);
  else
    env.out(
      r.state === 'unchanged'
        ? `${db} is up to date with ${redactUrls(url)}\n`
        : `imported ${r.repositories.join(', ') || 'no repositories'} from ${redactUrls(url)} into ${db}\n`,
    );
  return EXIT.ok;
}
