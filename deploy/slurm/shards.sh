#!/bin/bash
# Slurm job array: 16 shards of one simulation. Submit with submit.sh,
# which creates logs/ and out/ first (Slurm opens the --output file before
# the script runs, and fails the task when logs/ is missing).
#SBATCH --job-name=locklab-watchdog
#SBATCH --array=0-15
#SBATCH --cpus-per-task=2
#SBATCH --output=logs/%A_%a.log
set -u
N=${N:-16}                 # shards: the size of --array above
RUNS=${RUNS:-10000000}     # runs over all shards
OUT=${OUT:-out}
mkdir -p "$OUT"
shard="$OUT/shard-$SLURM_ARRAY_TASK_ID.json"
locklab simulate watchdog --runs "$RUNS" --seed 1 --threads "${SLURM_CPUS_PER_TASK:-1}" \
  --shard "$SLURM_ARRAY_TASK_ID/$N" --json > "$shard.part"
rc=$?
# simulate exits 1 when it found a violation: a result, not a failure.
# Exit 0 then, so that the merge's afterok dependency runs; any other
# code fails the task and leaves no shard file behind.
if [ "$rc" -gt 1 ]; then
  rm -f "$shard.part"
  exit "$rc"
fi
mv "$shard.part" "$shard"
echo "shard $SLURM_ARRAY_TASK_ID/$N: simulate exit $rc (1 = violation found)"
exit 0
