#!/bin/bash
# A lab's catalog on its Slurm cluster: index once, validate in a job array of shards, merge, each job waiting for
# the one before (--dependency=afterok). Every step is the `nn-rag` command line; see README.md.
#
#   SOURCES="https://github.com/org/repo.git /shared/code/other" WORK=/shared/nnrag SHARDS=16 PYTHON=/shared/venv/bin/python \
#     deploy/slurm/submit.sh
#
# Prints the three job ids. WORK must be on a file system every node sees.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SOURCES:?SOURCES: the repositories to index (git URLs or folders), space-separated}"
: "${WORK:?WORK: a shared folder for the index, the pulled files and the reports}"
SHARDS="${SHARDS:-8}"
PYTHON="${PYTHON:-python3}"
NNRAG="${NNRAG:-nn-rag}"
SBATCH_ARGS="${SBATCH_ARGS:-}"
PULL_ARGS="${PULL_ARGS:-}"
export NNRAG PYTHON PULL_ARGS
DB="$WORK/index.db"
OUT="$WORK/pulled"
mkdir -p "$WORK" "$OUT" "$WORK/logs"
export DB OUT

# shellcheck disable=SC2086
index=$(sbatch --parsable $SBATCH_ARGS --job-name=nnrag-index --output="$WORK/logs/index-%j.out" \
  --wrap "$NNRAG index $SOURCES --db '$DB'")
# shellcheck disable=SC2086
validate=$(sbatch --parsable $SBATCH_ARGS --job-name=nnrag-validate --dependency="afterok:$index" --array="1-$SHARDS" \
  --output="$WORK/logs/validate-%A_%a.out" --export=ALL "$here/validate.sbatch")
# shellcheck disable=SC2086
merge=$(sbatch --parsable $SBATCH_ARGS --job-name=nnrag-merge --dependency="afterok:$validate" --output="$WORK/logs/merge-%j.out" \
  --wrap "$NNRAG report --merge '$OUT'/report.shard-*-of-$SHARDS.json --out '$WORK/report.json' --db '$DB'")
echo "index $index validate $validate merge $merge"
