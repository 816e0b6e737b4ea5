/**
 * A real Slurm run: a one-node cluster from Debian's packages (MUNGE, slurmctld, slurmd in the foreground under the
 * test, process tracking by process group: no systemd, no cgroups), `deploy/slurm/submit.sh` submits the index job,
 * a 4-task array of validation shards over Debian's torchvision and the merge; the merged report is compared block by
 * block with one machine's run of the same blocks. Skipped, saying why, where Slurm is not installed or not root.
 */
import * as assert from 'assert';
import type { ChildProcess } from 'child_process';
import { execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

const BINARIES = ['/usr/sbin/munged', '/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/bin/sbatch', '/etc/munge/munge.key'];
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * `count` free TCP ports on 127.0.0.1, all different: each is held open until all are taken (one port taken and
 * released, then another, can be the same port twice: "slurmctld is talking with itself. SlurmctldPort == SlurmdPort").
 */
async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

async function until<T>(what: () => T | undefined, ms: number, why: () => string): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = what();
    if (v !== undefined) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out: ${why()}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('a real Slurm run of the shards', function () {
  this.timeout(1_200_000);
  const daemons: ChildProcess[] = [];
  let dir: string;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    const missing = BINARIES.filter((b) => !fs.existsSync(b));
    if (missing.length || !isRoot || !fs.existsSync(PYTHON_WITH_TORCH)) {
      // eslint-disable-next-line no-console
      console.log(
        `    (skipped: ${missing.length ? `${missing.join(', ')} not installed (apt-get install slurm-wlm munge)` : !isRoot ? 'the one-node cluster runs its daemons as root' : `${PYTHON_WITH_TORCH} not found`})`,
      );
      this.skip();
    }
    dir = await tmpdir('nnrag-slurm-');
    for (const d of ['munge', 'spool', 'state', 'log', 'work']) fs.mkdirSync(path.join(dir, d));
    const [ctld, slurmd] = await freePorts(2);
    const memoryMb = Math.floor((Number(execFileSync('awk', ['/MemTotal/ {print $2}', '/proc/meminfo'], { encoding: 'utf8' })) / 1024) * 0.8);
    const conf = path.join(dir, 'slurm.conf');
    fs.writeFileSync(
      conf,
      [
        'ClusterName=nnragtest',
        'SlurmctldHost=localhost',
        'SlurmUser=root',
        'AuthType=auth/munge',
        `AuthInfo=socket=${dir}/munge/munge.sock`,
        'CryptoType=crypto/munge',
        'ProctrackType=proctrack/pgid',
        'TaskPlugin=task/none',
        'JobAcctGatherType=jobacct_gather/none',
        'AccountingStorageType=accounting_storage/none',
        'MpiDefault=none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core_Memory',
        'ReturnToService=2',
        `SlurmctldPort=${ctld}`,
        `SlurmdPort=${slurmd}`,
        `StateSaveLocation=${dir}/state`,
        `SlurmdSpoolDir=${dir}/spool`,
        `SlurmctldPidFile=${dir}/slurmctld.pid`,
        `SlurmdPidFile=${dir}/slurmd.pid`,
        `SlurmctldLogFile=${dir}/log/slurmctld.log`,
        `SlurmdLogFile=${dir}/log/slurmd.log`,
        `NodeName=localhost CPUs=2 RealMemory=${memoryMb} State=UNKNOWN`,
        'PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP',
        '',
      ].join('\n'),
    );
    env = { ...process.env, SLURM_CONF: conf };
    const start = (cmd: string, args: string[]): void => {
      const p = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
      daemons.push(p);
    };
    start('/usr/sbin/munged', [
      '-F',
      '--force',
      `--socket=${dir}/munge/munge.sock`,
      '--key-file=/etc/munge/munge.key',
      `--pid-file=${dir}/munge/munged.pid`,
      `--log-file=${dir}/munge/munged.log`,
      `--seed-file=${dir}/munge/seed`,
    ]);
    await until(
      () => (fs.existsSync(`${dir}/munge/munge.sock`) ? true : undefined),
      20_000,
      () => 'munged did not start',
    );
    start('/usr/sbin/slurmctld', ['-D', '-f', conf]);
    await new Promise((r) => setTimeout(r, 2000));
    start('/usr/sbin/slurmd', ['-D', '-f', conf]);
    await until(
      () => (/idle/.test(execFileSync('sinfo', ['-h', '-o', '%T'], { env, encoding: 'utf8' })) ? true : undefined),
      60_000,
      () => `the node is not idle: ${fs.existsSync(`${dir}/log/slurmctld.log`) ? fs.readFileSync(`${dir}/log/slurmctld.log`, 'utf8').slice(-800) : ''}`,
    );
  });

  after(() => {
    for (const p of daemons.reverse()) p.kill('SIGTERM');
  });

  it('index, a 4-task array of shards and the merge, chained by afterok, give what one machine gives, block for block', async () => {
    const work = path.join(dir, 'work');
    // the nn-rag a lab installs, here the built command line
    const nnrag = path.join(dir, 'nn-rag');
    fs.writeFileSync(nnrag, `#!/bin/sh\nexec ${process.execPath} ${path.join(ROOT, 'dist', 'cli.js')} "$@"\n`, { mode: 0o755 });
    const submitted = execFileSync(path.join(ROOT, 'deploy', 'slurm', 'submit.sh'), [], {
      env: {
        ...env,
        NNRAG: nnrag,
        SOURCES: `--python-env ${PYTHON_WITH_TORCH} --packages torchvision`,
        WORK: work,
        SHARDS: '4',
        PYTHON: PYTHON_WITH_TORCH,
        // five blocks of each shard: the run stays minutes long on two cores
        PULL_ARGS: '--limit 5',
        SBATCH_ARGS: '--mem=2G',
      },
      encoding: 'utf8',
    });
    const ids = /index (\d+) validate (\d+) merge (\d+)/.exec(submitted);
    assert.ok(ids, submitted);
    const merged = path.join(work, 'report.json');
    const state = (id: string): string => /JobState=(\w+)/.exec(execFileSync('scontrol', ['show', 'job', id], { env, encoding: 'utf8' }))?.[1] ?? '?';
    await until(
      () => (['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT'].includes(state(ids![3])) ? true : undefined),
      1_000_000,
      () => `jobs: index ${state(ids![1])}, merge ${state(ids![3])}; logs: ${fs.readdirSync(path.join(work, 'logs')).join(', ')}`,
    );
    const logs = fs
      .readdirSync(path.join(work, 'logs'))
      .map((f) => `${f}: ${fs.readFileSync(path.join(work, 'logs', f), 'utf8').slice(-400)}`)
      .join('\n');
    assert.strictEqual(state(ids[3]), 'COMPLETED', logs);
    const shardReports = fs.readdirSync(path.join(work, 'pulled')).filter((f) => /^report\.shard-\d-of-4\.json$/.test(f));
    assert.strictEqual(shardReports.length, 4, logs);
    const report = JSON.parse(fs.readFileSync(merged, 'utf8')) as {
      shards: { given: number[] };
      items: { target: string; tier: string | null; equivalence?: string }[];
    };
    assert.deepStrictEqual(report.shards.given, [1, 2, 3, 4]);
    assert.ok(report.items.length >= 16, `${report.items.length} blocks`);
    // one machine, the same blocks
    const list = path.join(dir, 'targets.json');
    fs.writeFileSync(list, JSON.stringify(report.items.map((i) => i.target)));
    const db = path.join(work, 'index.db');
    const single = await cli('pull', '--from', list, '--db', db, '--out-dir', path.join(dir, 'single'), '--python', PYTHON_WITH_TORCH, '--json');
    const one = JSON.parse(fs.readFileSync(JSON.parse(single.out).report, 'utf8')) as {
      items: { target: string; tier: string | null; equivalence?: string }[];
    };
    const rows = (items: { target: string; tier: string | null; equivalence?: string }[]): string[] =>
      items.map((i) => `${i.target} ${i.tier} ${i.equivalence}`).sort();
    assert.deepStrictEqual(rows(report.items), rows(one.items));
  });
});
