#!/usr/bin/env bash
# The cost of running a user's program under a scenario: the same program
# (the consumer example's trainer, DDP on 2 ranks, shm) under
#   distlab launch --nproc-per-node 2 ...                     (plain torchrun-style)
#   distlab run --program ... (debug OFF, no faults)           (the scenario machinery)
# measured side by side, ROUNDS interleaved rounds, wall time of the whole run
# (start to the last rank's exit). Prints each round and the medians' ratio.
#
#   reports/program_overhead.sh [BUILD_DIR] [EPOCHS] [ROUNDS]
# (an epoch is 12 DDP steps of batch 4 per rank)
set -euo pipefail
build=${1:-build/default}
epochs=${2:-400}
rounds=${3:-7}
distlab="$build/emulator/cli/distlab"
trainer="$build/tests/program/user_trainer"
for f in "$distlab" "$trainer"; do
  [[ -x "$f" ]] || { echo "program_overhead.sh: $f is not built (ninja -C $build)" >&2; exit 2; }
done
[[ "$epochs" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "program_overhead.sh: EPOCHS and ROUNDS are positive integers" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/plain.toml" <<TOML
name = "overhead"
description = "the trainer under the scenario machinery: debug OFF, no fault"
group = "report"
[cluster]
world_size = 2
backend = "shm"
timeout = 30
run_timeout = 300
[workload]
kind = "program"
command = ["trainer", "--epochs", "$epochs"]
[expect]
outcome = "success"
TOML
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "program_overhead.sh: failed: $*" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
launch=(); run=()
# Alternate which goes first, so that a drift of the machine's load does not
# favour one side.
for ((i = 1; i <= rounds; ++i)); do
  if ((i % 2)); then
    l=$(seconds "$distlab" launch --nproc-per-node 2 --master-port 0 "$trainer" --epochs "$epochs")
    r=$(seconds "$distlab" run --program "$trainer" "$work/plain.toml")
  else
    r=$(seconds "$distlab" run --program "$trainer" "$work/plain.toml")
    l=$(seconds "$distlab" launch --nproc-per-node 2 --master-port 0 "$trainer" --epochs "$epochs")
  fi
  launch+=("$l"); run+=("$r")
  printf 'round %d: launch %.3f s, run %.3f s\n' "$i" "$l" "$r"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ml=$(median "${launch[@]}"); mr=$(median "${run[@]}")
ratios=()
for ((i = 0; i < rounds; ++i)); do
  ratios+=("$(awk -v a="${run[i]}" -v b="${launch[i]}" 'BEGIN {print a / b}')")
done
printf 'median: launch %.3f s, run %.3f s, run/launch %.4f; median of the rounds'"'"' ratios %.4f (%d epochs, %d rounds)\n' \
  "$ml" "$mr" "$(awk -v a="$mr" -v b="$ml" 'BEGIN {print a / b}')" "$(median "${ratios[@]}")" \
  "$epochs" "$rounds"
