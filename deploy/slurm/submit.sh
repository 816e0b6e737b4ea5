#!/bin/bash
# A lab's catalog on its Slurm cluster: index once, validate in a job array of shards, merge, each job waiting for
# the one before (--dependency=afterok). Every step is the `nn-rag` command line; see README.md.
#
#   SOURCES="https://github.com/org/repo.git /shared/code/other" WORK=/shared/nnrag SHARDS=16 PYTHON=/shared/venv/bin/python \
#     deploy/slurm/submit.sh
#
# Prints the three job ids. WORK must be on a file system every node sees. Values reach the jobs as arguments and
# environment variables of job scripts, never inside a shell string: a quote or `$(...)` in them stays text.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SOURCES:?SOURCES: the repositories to index (git URLs or folders), space-separated}"
: "${WORK:?WORK: a shared folder for the index, the pulled files and the reports}"
SHARDS="${SHARDS:-8}"
case "$SHARDS" in '' | *[!0-9]*) echo "SHARDS must be a number, not '$SHARDS'" >&2; exit 2 ;; esac
PYTHON="${PYTHON:-python3}"
NNRAG="${NNRAG:-nn-rag}"
DB="$WORK/index.db"
OUT="$WORK/pulled"
export NNRAG PYTHON WORK SHARDS DB OUT PULL_ARGS="${PULL_ARGS:-}"
mkdir -p -- "$WORK" "$OUT" "$WORK/logs"
# space-separated lists, split into words (no globbing, nothing evaluated)
read -r -a sources <<< "$SOURCES"
read -r -a sbatch_args <<< "${SBATCH_ARGS:-}"

index=$(sbatch --parsable "${sbatch_args[@]}" --job-name=nnrag-index --output="$WORK/logs/index-%j.out" --export=ALL \
  "$here/index.sbatch" "${sources[@]}")
validate=$(sbatch --parsable "${sbatch_args[@]}" --job-name=nnrag-validate --dependency="afterok:$index" --array="1-$SHARDS" \
  --output="$WORK/logs/validate-%A_%a.out" --export=ALL "$here/validate.sbatch")
merge=$(sbatch --parsable "${sbatch_args[@]}" --job-name=nnrag-merge --dependency="afterok:$validate" \
  --output="$WORK/logs/merge-%j.out" --export=ALL "$here/merge.sbatch")
echo "index $index validate $validate merge $merge"
