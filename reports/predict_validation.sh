#!/usr/bin/env bash
# reports/predict.md's validation: `distlab predict` from a trace at world 2
# against emulated runs of the same script at worlds 4, 8 and 16, on three
# topologies, the same network model driving both (the link emulator applies
# `[cluster] topology`, the replay times collectives with it).
#
#   reports/predict_validation.sh [BUILD_DIR] [OUT_DIR]
#
# The workloads are collective scripts (`[workload] kind = "collectives"`):
# their compute is the `compute` step, a sleep, and the emulated links are
# timers, so neither is slowed when 16 ranks share 2 cores; what the ranks
# really move (1 MiB) costs a fraction of the modelled time on these slow
# links. Two shapes: "ddp" issues two 1 MiB all_reduces during 20 ms of
# compute and waits for both at the end (DDP's buckets); "fsdp" prefetches an
# all-gather of 1 MiB in all (a 1/W shard per rank), computes, waits, then
# reduce-scatters 1 MiB and waits at the end (FSDP's forward prefetch and
# backward). Prints one JSON line per point and
# writes OUT_DIR/validation.json for reports/predict_report.py.
set -euo pipefail
build=${1:-build/default}
out=${2:-$(mktemp -d /tmp/predict_validation.XXXXXX)}
distlab="$build/emulator/cli/distlab"
[[ -x "$distlab" ]] || { echo "predict_validation.sh: $distlab is not built" >&2; exit 2; }
mkdir -p "$out"
topologies=(
  "ranks_per_node=4,intra=5:0.5,inter=20:0.1"
  "ranks_per_node=2,intra=5:0.5,inter=20:0.2,oversubscription=2"
  "ranks_per_node=1,intra=5:0.25,inter=50:0.25"
)
# One [[workload.steps]] table: OP, then its other keys as lines.
step() { printf '[[workload.steps]]\nop = "%s"\n' "$1"; shift; if (($#)); then printf '%s\n' "$@"; fi; }
script_ddp=$(step compute "compute_ms = 8"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = 8"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = 4"; step wait)
# FSDP's all-gather gathers, and its reduce-scatter scatters, the same total
# at every world size (each rank's shard is 1/W of it, Note [Scaling a
# trace]): 262144 floats (1 MiB) in all; `numel` is the shard.
script_fsdp=$(step all_gather_into_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = 6"; step wait; step compute "compute_ms = 10"
              step reduce_scatter_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = 6"; step wait)
scenario() {  # NAME WORLD TOPOLOGY SCRIPT
  cat <<TOML
name = "$1_w$2"
description = "predict validation"
group = "predict"
trace = true
[cluster]
world_size = $2
timeout = 60
run_timeout = 300
topology = "$3"
[workload]
kind = "collectives"
iterations = 8
$4
[expect]
outcome = "success"
TOML
}
echo "[" > "$out/validation.json"
first=1
for t in "${!topologies[@]}"; do
  topo=${topologies[$t]}
  for shape in ddp fsdp; do
    script_var="script_$shape"
    for w in 2 4 8 16; do
      scenario "${shape}_t$t" "$w" "$topo" "${!script_var//SHARD/$((262144 / w))}" \
        > "$out/${shape}_t${t}_w$w.toml"
      "$distlab" run "$out/${shape}_t${t}_w$w.toml" --out "$out/runs" > /dev/null
    done
    traced="$out/runs/predict__${shape}_t${t}_w2.trace.json"
    "$distlab" predict "$traced" --world 4,8,16 --topology "$topo" \
      --json "$out/predicted_${shape}_t$t.json" > /dev/null
    for w in 4 8 16; do
      "$distlab" predict "$out/runs/predict__${shape}_t${t}_w$w.trace.json" --world "$w" \
        --topology "$topo" --json "$out/measured_${shape}_t${t}_w$w.json" > /dev/null
      line=$(/usr/bin/python3 - "$out/predicted_${shape}_t$t.json" \
               "$out/measured_${shape}_t${t}_w$w.json" "$w" "$shape" "$topo" <<'PY'
import json, sys
pred = json.load(open(sys.argv[1]))
meas = json.load(open(sys.argv[2]))
w = int(sys.argv[3])
p = next(r for r in pred["rows"] if r["world_size"] == w)
m = meas["rows"][0]
print(json.dumps({"shape": sys.argv[4], "topology": sys.argv[5], "world": w,
                  "predicted_step_s": p["step_s"], "measured_step_s": m["traced_step_s"],
                  "error": p["step_s"] / m["traced_step_s"] - 1,
                  "predicted_exposed_s": p["exposed_s"],
                  "algorithms": sorted({c["algorithm"] for c in p["collectives"]})}))
PY
)
      echo "$line"
      [[ $first == 1 ]] || echo "," >> "$out/validation.json"
      first=0
      echo "$line" >> "$out/validation.json"
    done
  done
done
echo "]" >> "$out/validation.json"
echo "results in $out"
