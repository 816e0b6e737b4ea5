/** `nn-rag export` and `nn-rag import`: one index for the team, as one archive. */
import * as path from 'path';
import { NnragError } from '../core/base/errors';
import { exportIndex, importIndex } from '../core/store/shareIndex';
import type { ArchiveManifest } from '../core/store/shareIndex';
import { dbPath, EXIT, flag, opt, parse } from './env';
import type { CliEnv } from './env';

function describe(m: ArchiveManifest): string {
  return `${m.repositories.length} repositories (${m.repositories.map((r) => `${r.name}${r.commit ? `@${r.commit.slice(0, 8)}` : ''}`).join(', ') || 'none'}), ${m.files} files, ${m.blocks} blocks, parser ${m.parser_version}`;
}

export async function exportCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { to: { value: true } });
  const to = opt(args, 'to');
  if (!to) throw new NnragError('usage', 'export needs --to FILE: nn-rag export --db models.db --to models.nnrag.tgz');
  const m = await exportIndex(dbPath(args), path.resolve(to), env.assets.sqlWasm);
  if (flag(args, 'json')) env.out(`${JSON.stringify({ archive: path.resolve(to), ...m })}\n`);
  else env.out(`exported ${describe(m)} to ${path.resolve(to)}\n`);
  return EXIT.ok;
}

export async function importCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { force: {} });
  const archive = args.positionals[0];
  if (!archive) throw new NnragError('usage', 'import needs the archive: nn-rag import models.nnrag.tgz --db models.db [--force]');
  const m = await importIndex(path.resolve(archive), dbPath(args), { force: flag(args, 'force'), sqlWasm: env.assets.sqlWasm });
  if (flag(args, 'json')) env.out(`${JSON.stringify({ db: dbPath(args), ...m })}\n`);
  else env.out(`imported ${describe(m)} into ${dbPath(args)}\n`);
  return EXIT.ok;
}
