#!/usr/bin/env bash
# The cost curve of reports/scale.md: at each world size, three measured runs.
#   1. `distlab launch --nproc-per-node W distlab bench scale`: spawn and
#      rendezvous, the first collective, all_reduce 8 B and 1 MiB, barrier and
#      monitored barrier, DETAIL's cost per operation, group creation
#      (emulator/bench/scale_bench.hpp);
#   2. reports/rank_cost.sh: a collectives scenario in which rank 1 hangs:
#      private memory and CPU of the waiting ranks, and the time from the hang
#      to the first error (the runner's detection);
#   3. `distlab analyze` over that run's flight-recorder dumps, timed.
# Then reports/scale_curve.py fits how each figure grows and draws the plot.
#
#   reports/scale_curve.sh [BUILD_DIR] [OUT_DIR] [WORLD...]
# Defaults: build/default, a new temporary folder (kept; printed), worlds
# 2 4 16 64 256 1024. The world-1,024 point takes about ten minutes here.
set -euo pipefail
build=${1:-build/default}
out=${2:-$(mktemp -d /tmp/scale_curve.XXXXXX)}
shift $(( $# < 2 ? $# : 2 ))
worlds=("$@")
[[ ${#worlds[@]} -gt 0 ]] || worlds=(2 4 16 64 256 1024)
distlab="$build/emulator/cli/distlab"
here=$(cd "$(dirname "$0")" && pwd)
[[ -x "$distlab" ]] || { echo "scale_curve.sh: $distlab is not built (ninja -C $build)" >&2; exit 2; }
for w in "${worlds[@]}"; do
  [[ "$w" =~ ^[0-9]+$ && "$w" -ge 2 && "$w" -le 1024 ]] ||
    { echo "scale_curve.sh: world size '$w' must be an integer in 2..1024" >&2; exit 2; }
done
mkdir -p "$out"
now() { date +%s.%N; }
for w in "${worlds[@]}"; do
  echo "== world $w: distlab bench scale under distlab launch"
  "$distlab" launch --nproc-per-node "$w" --master-port 0 --log-dir "$out/launch_logs_$w" \
    "$distlab" bench scale --iters $((w <= 16 ? 200 : w <= 64 ? 50 : 20)) \
    --json "$out/bench_$w.json" | tee "$out/bench_$w.txt"
  echo "== world $w: a hung rank (reports/rank_cost.sh)"
  "$here/rank_cost.sh" "$build" "$w" collectives 5 "$out/hang_$w"
  mapfile -t dumps < <(find "$out/hang_$w" -name 'fr_rank_*.json' | sort)
  echo "== world $w: distlab analyze over ${#dumps[@]} dumps"
  t0=$(now)
  "$distlab" analyze "${dumps[@]}" > "$out/analyze_$w.txt" || true  # exit 1: the divergence
  t1=$(now)
  head -3 "$out/analyze_$w.txt"
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "{\"analyze_s\": %.4f}\n", b - a}' > "$out/analyze_$w.json"
done
echo "results in $out"
/usr/bin/python3 "$here/scale_curve.py" "$out" --plot "$here/scale_curve.png" \
  --json "$here/scale_curve.json"
