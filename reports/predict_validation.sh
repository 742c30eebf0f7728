#!/usr/bin/env bash
# reports/predict.md's validation: `distlab predict` from a trace at world 2
# against emulated runs of the same workload at worlds 4, 8 and 16, on three
# topologies, the same network model driving both (the link emulator applies
# `[cluster] topology`, the replay times collectives with it).
#
#   reports/predict_validation.sh [BUILD_DIR] [OUT_DIR]
#
# Two kinds of workload, each at worlds 2, 4, 8 and 16 on every topology:
# - Collective scripts (`[workload] kind = "collectives"`), compute the
#   `compute` step, a sleep. "ddp" issues two 1 MiB all_reduces during 320 ms
#   of compute and waits for both at the end (DDP's buckets); "fsdp"
#   prefetches an all-gather of 1 MiB in all (a 1/W shard per rank),
#   computes, waits, then reduce-scatters 1 MiB and waits at the end.
# - The engines themselves (`kind = "training"`) on a 128-wide MLP (five
#   Linear layers of 64 KiB each, the aux head included) whose compute is
#   emulated: every Linear sleeps 16 ms in forward and 32 ms in backward
#   (`layer_compute`, Note [Emulated layer compute]), so DDP's buckets become
#   ready and FSDP's groups finish when the sleeps say, whatever the number of
#   ranks per core. "ddp_engine": bucket_cap_mb = 0.1 (three buckets);
#   "ddp_engine_1bucket": bucket_cap_mb = 25; "ddp_engine_fp16": the
#   fp16_compress hook; "fsdp_engine": wrap per Linear, prefetch on;
#   "fsdp_engine_noprefetch": prefetch off.
# Time scale: steps of 250-550 ms, compute and link latencies 16 times those
# of a ~20 ms step, bandwidths lowered to match. 16 ranks on 2 cores wake
# late by a few ms a step whatever its length (reports/predict.md): on ~20 ms
# steps that alone read as 10-44 % error at world 16.
# The emulated links are timers (Note [Link emulation without CPU]); the
# bytes the ranks really move cost a fraction of the modelled time on these
# slow links. Prints one JSON line per point and writes OUT_DIR/validation.json
# for reports/predict_report.py. SHAPES (default: all) picks some:
#   SHAPES="ddp_engine fsdp_engine" reports/predict_validation.sh
set -euo pipefail
build=${1:-build/default}
out=${2:-$(mktemp -d /tmp/predict_validation.XXXXXX)}
distlab="$build/emulator/cli/distlab"
[[ -x "$distlab" ]] || { echo "predict_validation.sh: $distlab is not built" >&2; exit 2; }
mkdir -p "$out"
# Three topologies: four ranks per node at 0.5 GB/s inside and 0.1 GB/s out,
# two per node with a 2:1 oversubscribed fabric, one rank per node; on the
# scripts' time scale (x16, the header) latencies x16 and bandwidths /16.
topologies=(
  "ranks_per_node=4,intra=80:0.03125,inter=320:0.00625"
  "ranks_per_node=2,intra=80:0.03125,inter=320:0.0125,oversubscription=2"
  "ranks_per_node=1,intra=80:0.015625,inter=800:0.015625"
)
# The engine shapes move 330 KB of gradients a step against the scripts' 1-2
# MiB: the same three with bandwidths halved again, so communication is as
# large a share of their step.
engine_topologies=(
  "ranks_per_node=4,intra=80:0.015625,inter=320:0.003125"
  "ranks_per_node=2,intra=80:0.015625,inter=320:0.00625,oversubscription=2"
  "ranks_per_node=1,intra=80:0.0078125,inter=800:0.0078125"
)
# One [[workload.steps]] table: OP, then its other keys as lines.
step() { printf '[[workload.steps]]\nop = "%s"\n' "$1"; shift; if (($#)); then printf '%s\n' "$@"; fi; }
script_ddp=$(step compute "compute_ms = 128"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = 128"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = 64"; step wait)
# FSDP's all-gather gathers, and its reduce-scatter scatters, the same total
# at every world size (each rank's shard is 1/W of it, Note [Scaling a
# trace]): 262144 floats (1 MiB) in all; `numel` is the shard.
script_fsdp=$(step all_gather_into_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = 96"; step wait; step compute "compute_ms = 160"
              step reduce_scatter_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = 96"; step wait)
# A training workload on the emulated-compute MLP: ENGINE, then lines.
engine_workload() {
  printf 'kind = "training"\nmodel = "mlp"\nsizes = [128, 128, 128, 128, 128]\n'
  printf 'batch_size = 8\nsteps = 8\nengine = "%s"\n' "$1"
  printf 'layer_compute = { forward_ms = 16, backward_ms = 32 }\n'
  shift
  printf '%s\n' "$@"
}
workload() {  # SHAPE WORLD: the [workload] table's body
  case $1 in
    ddp|fsdp) local script_var="script_$1"
              printf 'kind = "collectives"\niterations = 8\n%s\n' \
                "${!script_var//SHARD/$((262144 / $2))}" ;;
    ddp_engine) engine_workload ddp "[workload.engine_options]" "bucket_cap_mb = 0.1" ;;
    ddp_engine_1bucket) engine_workload ddp "[workload.engine_options]" "bucket_cap_mb = 25" ;;
    ddp_engine_fp16) engine_workload ddp 'comm_hook = "fp16_compress"' \
                       "[workload.engine_options]" "bucket_cap_mb = 0.1" ;;
    fsdp_engine) engine_workload fsdp ;;
    fsdp_engine_noprefetch) engine_workload fsdp "[workload.engine_options]" "prefetch = false" ;;
  esac
}
all_shapes="ddp fsdp ddp_engine ddp_engine_1bucket ddp_engine_fp16 fsdp_engine fsdp_engine_noprefetch"
scenario() {  # NAME WORLD TOPOLOGY SHAPE
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
$(workload "$4" "$2")
[expect]
outcome = "success"
TOML
}
read -r -a shapes <<< "${SHAPES:-$all_shapes}"
for shape in "${shapes[@]}"; do
  [[ " $all_shapes " == *" $shape "* ]] ||
    { echo "predict_validation.sh: unknown shape '$shape' in SHAPES; known: $all_shapes" >&2; exit 2; }
done
echo "[" > "$out/validation.json"
first=1
for t in "${!topologies[@]}"; do
  for shape in "${shapes[@]}"; do
    topo=${topologies[$t]}
    [[ $shape == *engine* ]] && topo=${engine_topologies[$t]}
    for w in 2 4 8 16; do
      scenario "${shape}_t$t" "$w" "$topo" "$shape" > "$out/${shape}_t${t}_w$w.toml"
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
