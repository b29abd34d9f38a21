#!/bin/bash
# Submits the shards and, once every shard succeeded, the merge. Run it from
# the directory that is to hold logs/ and out/.
set -eu
here=$(dirname "$0")
mkdir -p logs out
jobid=$(sbatch --parsable "$here/shards.sh")
sbatch --dependency=afterok:"$jobid" "$here/merge.sh"
