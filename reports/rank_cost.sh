#!/usr/bin/env bash
# What a waiting rank costs: a scenario in which one rank hangs and the others
# wait for it until the collective timeout. While they wait, this samples every
# rank's private dirty memory (/proc/<pid>/smaps_rollup) and the CPU time it
# spends over a WINDOW-second span (/proc/<pid>/stat utime + stime), then lets
# the run finish and prints its verdict line.
#
#   reports/rank_cost.sh [BUILD_DIR] [WORLD] [KIND] [WINDOW]
# KIND: collectives (all_reduce of 256 floats) or ddp (the 16-32-32-4 MLP).
set -euo pipefail
build=${1:-build/default}
world=${2:-16}
kind=${3:-collectives}
window=${4:-5}
distlab="$build/emulator/cli/distlab"
[[ -x "$distlab" ]] || { echo "rank_cost.sh: $distlab is not built (ninja -C $build)" >&2; exit 2; }
[[ "$world" =~ ^[0-9]+$ && "$world" -ge 2 && "$window" =~ ^[1-9][0-9]*$ ]] ||
  { echo "rank_cost.sh: WORLD is an integer >= 2, WINDOW a positive integer" >&2; exit 2; }
case "$kind" in
  collectives) workload='kind = "collectives"
[[workload.steps]]
op = "all_reduce"
numel = 256
repeat = 3'
    fault='at_seq = 2' ;;
  ddp) workload='kind = "training"
model = "mlp"
sizes = [16, 32, 32, 4]
engine = "ddp"
optimizer = "sgd"
lr = 0.1
steps = 8
batch_size = 8'
    fault='at_step = 2' ;;
  *) echo "rank_cost.sh: KIND is collectives or ddp, not '$kind'" >&2; exit 2 ;;
esac
# The wait must outlast startup at this world size plus the sampling window.
timeout=$((20 + world / 8 + 2 * window))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/wait.toml" <<TOML
name = "rank_cost"
description = "rank 1 hangs; the others wait for it until the timeout"
group = "report"
[cluster]
world_size = $world
timeout = $timeout
[workload]
$workload
[[faults]]
kind = "hang"
ranks = [1]
$fault
[expect]
outcome = "timeout"
culprits = [1]
TOML
"$distlab" run "$work/wait.toml" > "$work/run.out" 2>&1 &
runner=$!
# Ranks are waiting once every one of them has slept past its startup; poll
# the process table (this script measures, it is not a test).
ranks() { pgrep -f "scenario-rank $work/wait.toml" || true; }
for _ in $(seq 1 $((timeout * 10))); do
  [[ $(ranks | wc -l) -eq $world ]] && break
  sleep 0.1
done
sleep $((timeout / 3))
cpu() { for p in $(ranks); do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done |
  awk '{s += $1} END {print s + 0}'; }
before=$(cpu)
sleep "$window"
after=$(cpu)
mem=$(for p in $(ranks); do awk '/^Private_Dirty/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null; done |
  sort -n | awk '{v[NR] = $1; s += $1} END {printf "%d %d %d %d", NR, v[int((NR + 1) / 2)], v[NR], s}')
wait "$runner" || true
read -r n median max total <<< "$mem"
ticks=$(getconf CLK_TCK)
echo "world $world $kind: $n ranks sampled; private dirty per rank median $((median / 1024)).$(( (median % 1024) * 10 / 1024 )) MiB, max $((max / 1024)).$(( (max % 1024) * 10 / 1024 )) MiB, all ranks $((total / 1024)) MiB"
awk -v c=$((after - before)) -v t="$ticks" -v w="$window" -v n="$n" \
  'BEGIN {printf "CPU while waiting: %.3f s over %d s, %.2f%% of one core per rank\n", c / t, w, 100 * c / t / w / n}'
grep -E '^(PASS|FAIL)' "$work/run.out" | cut -c1-160
