#!/usr/bin/env bash
# What a waiting rank costs: a scenario in which one rank hangs and the others
# wait for it until the collective timeout. While they wait, this samples every
# rank's private dirty memory (/proc/<pid>/smaps_rollup) and the CPU time it
# spends over a WINDOW-second span (/proc/<pid>/stat utime + stime), then lets
# the run finish and prints its verdict line.
#
#   reports/rank_cost.sh [BUILD_DIR] [WORLD] [KIND] [WINDOW] [OUT_DIR]
# KIND: collectives (all_reduce of 256 floats) or ddp (the 16-32-32-4 MLP).
# OUT_DIR (optional): the run's results stay there (`distlab run --out`: the
# result JSON with the detection time, every rank's flight-recorder dump) and
# the figures go to OUT_DIR/rank_cost.json (reports/scale_curve.sh reads both).
set -euo pipefail
build=${1:-build/default}
world=${2:-16}
kind=${3:-collectives}
window=${4:-5}
keep=${5:-}
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
# The wait (the collective timeout, counted from the hung collective, after
# the group formed) must outlast the ranks' settling plus the sampling window.
timeout=$((30 + world / 16 + 3 * window))
# The whole run: start-up, the wait, every rank's dump and exit (~25 ranks a
# second each way at 1,024 here).
run_timeout=$((timeout + 60 + world / 4))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=()
if [[ -n "$keep" ]]; then mkdir -p "$keep"; out=(--out "$keep"); fi
cat > "$work/wait.toml" <<TOML
name = "rank_cost"
description = "rank 1 hangs; the others wait for it until the timeout"
group = "report"
[cluster]
world_size = $world
timeout = $timeout
run_timeout = $run_timeout
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
"$distlab" run "${out[@]}" "$work/wait.toml" > "$work/run.out" 2>&1 &
runner=$!
# The ranks are waiting once all of them exist and their CPU use has settled:
# poll the process table once a second until every rank is there and, two
# seconds running, the ranks together used under 60% of the machine's cores
# (start-up keeps every core busy; a thousand waiting ranks still use some).
# This script measures; it is not a test.
ranks() { pgrep -f "scenario-rank $work/wait.toml" || true; }
cpu() { for p in $(ranks); do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true; done |
  awk '{s += $1} END {print s + 0}'; }
ticks=$(getconf CLK_TCK)
busy=$((ticks * $(nproc) * 6 / 10))
last=$(cpu)
settled=0
quiet=0
for _ in $(seq 1 "$timeout"); do
  sleep 1
  now=$(cpu)
  if [[ $(ranks | wc -l) -eq $world && $((now - last)) -lt $busy ]]; then
    quiet=$((quiet + 1))
  else
    quiet=0
  fi
  last=$now
  if [[ $quiet -ge 2 ]]; then settled=1; break; fi
done
[[ $settled == 1 ]] || echo "rank_cost.sh: the ranks never settled within ${timeout} s; figures below are not of waiting ranks" >&2
before=$(cpu)
sleep "$window"
after=$(cpu)
mem=$(for p in $(ranks); do awk '/^Private_Dirty/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || true; done |
  sort -n | awk '{v[NR] = $1; s += $1} END {printf "%d %d %d %d", NR, v[int((NR + 1) / 2)], v[NR], s}')
wait "$runner" || true
read -r n median max total <<< "$mem"
[[ $n -gt 0 ]] || echo "rank_cost.sh: no rank was sampled (the run ended before the window)" >&2
echo "world $world $kind: $n ranks sampled; private dirty per rank median $((median / 1024)).$(( (median % 1024) * 10 / 1024 )) MiB, max $((max / 1024)).$(( (max % 1024) * 10 / 1024 )) MiB, all ranks $((total / 1024)) MiB"
awk -v c=$((after - before)) -v t="$ticks" -v w="$window" -v n="$n" \
  'BEGIN {if (n + 0 > 0) printf "CPU while waiting: %.3f s over %d s, %.2f%% of one core per rank\n", c / t, w, 100 * c / t / w / n}'
grep -E '^(PASS|FAIL)' "$work/run.out" | cut -c1-160
if [[ -n "$keep" ]]; then
  awk -v w="$world" -v k="$kind" -v n="$n" -v med="$median" -v max="$max" -v tot="$total" \
    -v c=$((after - before)) -v t="$ticks" -v win="$window" -v s="$settled" \
    'BEGIN {cpu = (n > 0) ? sprintf("%.4f", 100 * c / t / win / n) : "null"; printf "{\"world\": %d, \"kind\": \"%s\", \"ranks_sampled\": %d, \"private_dirty_median_kib\": %d, \"private_dirty_max_kib\": %d, \"private_dirty_total_kib\": %d, \"cpu_percent_per_rank\": %s, \"settled\": %s}\n", w, k, n, med, max, tot, cpu, s ? "true" : "false"}' \
    > "$keep/rank_cost.json"
fi
