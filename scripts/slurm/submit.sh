#!/usr/bin/env bash
# Submits a sharded sdpabench run to Slurm (docs/ci.md#slurm): a job array of N tasks, task I
# running shard I/N (scripts/slurm/nightly.sbatch), then the job that merges their reports and runs
# scripts/history (scripts/slurm/nightly-merge.sbatch), which waits for the array to succeed
# (--dependency=afterok) and is cancelled when a task fails or is cancelled (--kill-on-invalid-dep).
#   scripts/slurm/submit.sh --shards=N --run=ID --out=DIR [--db=STORE] [--tasks=LIST] [--cpus=C]
#       [--gpu] [--exe=PATH] -- SDPABENCH_ARGS...
#   --shards=N   shards of the whole run
#   --run=ID     the run's key in the store (--tags=run:ID): the same for a resubmitted task
#   --out=DIR    the shards' reports and Slurm's logs (slurm-JOB_TASK.out, merge-JOB.out); a folder
#                every node sees
#   --db=STORE   the results store, postgresql:URL (sqlite:PATH only on one machine)
#   --tasks=LIST the array's tasks (sbatch --array syntax; default 0-(N-1)): --tasks=2 resubmits
#                shard 2 alone, which completes the run without duplicating a case
#   --cpus=C     CPUs per task (default 1; sdpabench's OpenMP threads)
#   --gpu        one GPU per task (--gres=gpu:1), for --backend=cudnn or torch's CUDA rows
#   --exe=PATH   the sdpabench binary (default build/release/sdpabench of this project)
# Site settings (partition, account, time limit) come from sbatch's own environment variables
# (SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT). Prints "array JOB merge JOB"; exit 0
# submitted, 1 sbatch refused, 2 bad usage.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# usage [STATUS]: the comment above, to stdout for --help (STATUS 0), else to stderr.
usage() {
  local status=${1:-2} fd=2
  [ "$status" != 0 ] || fd=1
  sed -n '6,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&"$fd"
  exit "$status"
}
opts=$(getopt -o '' -l shards:,run:,out:,db:,tasks:,cpus:,gpu,exe:,help -n submit.sh -- "$@") || usage
eval set -- "$opts"
shards="" run="" out="" db="" tasks="" cpus=1 gres=() exe=""
while true; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --gpu) gres=(--gres=gpu:1); shift ;;
    --exe) exe=$2; shift 2 ;;
    --help) usage 0 ;;
    --) shift; break ;;
  esac
done
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: --shards=N (a positive number) is required, got '$shards'" >&2; exit 2; }
[ -n "$run" ] || { echo "submit.sh: --run=ID is required" >&2; exit 2; }
[ -n "$out" ] || { echo "submit.sh: --out=DIR is required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "submit.sh: no sdpabench arguments after '--' (e.g. -- --batch=cases/ci/smoke.cases)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
export SDPABENCH_ROOT=$root SDPABENCH_SHARDS=$shards SDPABENCH_RUN=$run SDPABENCH_OUT=$out SDPABENCH_DB=$db
[ -z "$exe" ] || export SDPABENCH_EXE=$exe
array=$(sbatch --parsable --array="${tasks:-0-$((shards - 1))}" --cpus-per-task="$cpus" "${gres[@]}" \
  --job-name="sdpabench-$run" --output="$out/slurm-%A_%a.out" "$here/nightly.sbatch" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --job-name="sdpabench-$run-merge" --output="$out/merge-%j.out" "$here/nightly-merge.sbatch")
echo "array ${array} merge ${merge%%;*}"
