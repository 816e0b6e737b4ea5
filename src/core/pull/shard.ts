/**
 * One part of a batch, for running it on many machines (a Slurm job array, a Kubernetes Indexed Job, a CI matrix):
 * a target belongs to shard `hash(target) mod N`, so a part depends on nothing but the target's own name and adding a
 * repository moves none of the blocks already assigned.
 */
import { createHash } from 'crypto';
import { NnragError } from '../base/errors';

/** Shard `index` (0-based) of `count`. */
export interface Shard {
  index: number;
  count: number;
}

/**
 * `K/N` (1-based, as people count: `1/4` to `4/4`), or `auto`: the engine's environment says, `SLURM_ARRAY_TASK_ID`
 * and `SLURM_ARRAY_TASK_COUNT` (from `SLURM_ARRAY_TASK_MIN`), or Kubernetes' `JOB_COMPLETION_INDEX` (0-based) with the
 * count given (`count`; an Indexed Job's completions).
 */
export function parseShard(spec: string, env: Record<string, string | undefined>, count?: number): Shard {
  const int = (v: string | undefined): number | undefined => (v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : undefined);
  let shard: Shard | undefined;
  if (spec === 'auto') {
    const id = int(env.SLURM_ARRAY_TASK_ID);
    const n = int(env.SLURM_ARRAY_TASK_COUNT);
    const k8s = int(env.JOB_COMPLETION_INDEX);
    if (id !== undefined && n !== undefined) shard = { index: id - (int(env.SLURM_ARRAY_TASK_MIN) ?? 0), count: n };
    else if (k8s !== undefined) {
      if (count === undefined) throw new NnragError('usage', "--shard auto under a Kubernetes Indexed Job needs --shard-count N (the job's completions)");
      shard = { index: k8s, count };
    } else {
      throw new NnragError(
        'usage',
        '--shard auto found no shard in the environment (SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX): give --shard K/N',
      );
    }
  } else {
    const m = /^(\d+)\/(\d+)$/.exec(spec.trim());
    if (!m) throw new NnragError('usage', `--shard takes K/N (1 <= K <= N) or auto, not '${spec}'`);
    shard = { index: Number(m[1]) - 1, count: Number(m[2]) };
  }
  if (!(shard.count >= 1) || shard.index < 0 || shard.index >= shard.count) {
    throw new NnragError(
      'usage',
      `shard ${shard.index + 1} of ${shard.count} does not exist (a Slurm array from another index than 0 or 1 needs SLURM_ARRAY_TASK_MIN)`,
    );
  }
  return shard;
}

/** Whether `target` is in `shard`: the first 48 bits of its sha256, modulo the count. */
export function inShard(target: string, shard: Shard): boolean {
  const h = parseInt(createHash('sha256').update(target).digest('hex').slice(0, 12), 16);
  return h % shard.count === shard.index;
}

/** `report.shard-2-of-4.json`: each shard's report beside the others' in a shared folder. */
export function shardReportName(shard: Shard | undefined): string {
  return shard ? `report.shard-${shard.index + 1}-of-${shard.count}.json` : 'report.json';
}
