#!/bin/bash
# Merges the shards of shards.sh into the single-machine result; submit.sh
# runs it after every shard succeeded.
#SBATCH --job-name=locklab-merge
#SBATCH --output=logs/merge-%j.log
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/result"
locklab merge "$OUT"/shard-*.json --out-dir "$OUT/result" > "$OUT/result.txt"
rc=$?
# merge exits 1 when the shards found a violation: the result says so.
echo "$rc" > "$OUT/merge-exit-code"
if [ "$rc" -gt 1 ]; then exit "$rc"; fi
echo "merged: $OUT/result.txt (exit $rc: 1 = violation found)"
exit 0
