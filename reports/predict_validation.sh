#!/usr/bin/env bash
# reports/predict.md's validation: `distlab predict` from a trace at world 2
# against emulated runs of the same workload at worlds 4, 8 and 16, on three
# topologies, the same network model driving both (the link emulator applies
# `[cluster] topology`, the replay times collectives with it).
#
#   reports/predict_validation.sh [BUILD_DIR] [OUT_DIR]
#
# Two kinds of workload, each traced at world 2 and emulated at worlds 4, 8
# and 16 (WORLDS) on every topology:
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
# - "pipeline": four stages passing activations and gradients with blocking
#   sends and receives. Messages replay at their own world size only, so it
#   is traced at world 4 on the first topology and predicted at world 4 on
#   each topology (WORLDS does not apply to it).
# Time scale: steps of 250-550 ms, compute and link latencies 16 times those
# of a ~20 ms step, bandwidths lowered to match. 16 ranks on 2 cores wake
# late by a few ms a step whatever its length (reports/predict.md): on ~20 ms
# steps that alone read as 10-44 % error at world 16.
# The emulated links are timers (Note [Link emulation without CPU]); the
# bytes the ranks really move cost a fraction of the modelled time on these
# slow links. Prints one JSON line per point and writes OUT_DIR/validation.json
# for reports/predict_report.py. Environment:
#   SHAPES (default: all) picks some: SHAPES="ddp_engine fsdp_engine"
#   WORLDS (default "4 8 16"): the emulated worlds predicted from world 2
#   SCALE (default 1): a whole number multiplying every compute time and
#     link latency and dividing every bandwidth, so the exposed share stays
#     and only the step grows; more ranks per core need longer steps to
#     drown their late wake-ups (reports/predict.md: SCALE=4 at world 64,
#     12-32 at world 256)
#   TOPOLOGIES (default "0 1 2"): which of the three topologies below
#   WIDTH (default 128): the engine shapes' layer width; FSDP shards each
#     parameter by rows, so above 128 ranks a 128-row layer is padded and
#     its all-gathers move more than the trace at world 2 says (Note
#     [Scaling a trace]): reports/predict.md takes 256 at world 256
set -euo pipefail
build=${1:-build/default}
out=${2:-$(mktemp -d /tmp/predict_validation.XXXXXX)}
distlab="$build/emulator/cli/distlab"
[[ -x "$distlab" ]] || { echo "predict_validation.sh: $distlab is not built" >&2; exit 2; }
mkdir -p "$out"
read -r -a worlds <<< "${WORLDS:-4 8 16}"
read -r -a topology_picks <<< "${TOPOLOGIES:-0 1 2}"
scale=${SCALE:-1}
width=${WIDTH:-128}
[[ $width =~ ^[1-9][0-9]{0,3}$ ]] ||
  { echo "predict_validation.sh: WIDTH='$width' must be a layer width 1-9999" >&2; exit 2; }
[[ $scale =~ ^[1-9][0-9]{0,2}$ ]] ||
  { echo "predict_validation.sh: SCALE='$scale' must be a whole number 1-999" >&2; exit 2; }
for w in "${worlds[@]}"; do
  [[ $w =~ ^[1-9][0-9]{0,3}$ && $w -ge 3 && $w -le 1024 ]] ||
    { echo "predict_validation.sh: WORLDS entry '$w' must be a world size 3-1024" >&2; exit 2; }
done
for t in "${topology_picks[@]}"; do
  [[ $t =~ ^[012]$ ]] ||
    { echo "predict_validation.sh: TOPOLOGIES entry '$t' must be 0, 1 or 2" >&2; exit 2; }
done
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
# A topology on the SCALE time scale: latencies (us) times SCALE,
# bandwidths (GB/s) divided by it.
scaled_topology() {
  awk -v k="$scale" 'BEGIN { RS = ","; ORS = "" }
    { sub(/\n$/, "") }
    NR > 1 { print "," }
    /^(intra|inter)=/ { split($0, kv, "="); split(kv[2], lb, ":")
                        printf "%s=%g:%.10g", kv[1], lb[1] * k, lb[2] / k; next }
    { print }' <<< "$1"
}
ms() { echo $(($1 * scale)); }  # a compute time in ms on the SCALE time scale
# One [[workload.steps]] table: OP, then its other keys as lines.
step() { printf '[[workload.steps]]\nop = "%s"\n' "$1"; shift; if (($#)); then printf '%s\n' "$@"; fi; }
script_ddp=$(step compute "compute_ms = $(ms 128)"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = $(ms 128)"; step all_reduce 'size = "1MiB"' "async = true"
             step compute "compute_ms = $(ms 64)"; step wait)
# FSDP's all-gather gathers, and its reduce-scatter scatters, the same total
# at every world size (each rank's shard is 1/W of it, Note [Scaling a
# trace]): 262144 floats (1 MiB) in all; `numel` is the shard.
script_fsdp=$(step all_gather_into_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = $(ms 96)"; step wait; step compute "compute_ms = $(ms 160)"
              step reduce_scatter_tensor "numel = SHARD" "async = true"
              step compute "compute_ms = $(ms 96)"; step wait)
# A four-stage pipeline (GPipe: two micro-batches forward, then two backward;
# blocking sends and receives of 256 KiB activations and gradients; forward
# 32 ms and backward 64 ms of compute per stage and micro-batch).
script_pipeline=$(
  for mb in 1 2; do
    for s in 0 1 2 3; do
      if ((s > 0)); then step recv "ranks = [$s]" "peer = $((s - 1))" 'size = "256KiB"'; fi
      step compute "ranks = [$s]" "compute_ms = $(ms 32)"
      if ((s < 3)); then step send "ranks = [$s]" "peer = $((s + 1))" 'size = "256KiB"'; fi
    done
  done
  for mb in 1 2; do
    for s in 3 2 1 0; do
      if ((s < 3)); then step recv "ranks = [$s]" "peer = $((s + 1))" 'size = "256KiB"'; fi
      step compute "ranks = [$s]" "compute_ms = $(ms 64)"
      if ((s > 0)); then step send "ranks = [$s]" "peer = $((s - 1))" 'size = "256KiB"'; fi
    done
  done)
# A training workload on the emulated-compute MLP: ENGINE, then lines.
engine_workload() {
  printf 'kind = "training"\nmodel = "mlp"\nsizes = [%d, %d, %d, %d, %d]\n' \
    "$width" "$width" "$width" "$width" "$width"
  printf 'batch_size = 8\nsteps = 8\nengine = "%s"\n' "$1"
  printf 'layer_compute = { forward_ms = %d, backward_ms = %d }\n' "$(ms 16)" "$(ms 32)"
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
    pipeline) printf 'kind = "collectives"\niterations = 8\n%s\n' "$script_pipeline" ;;
  esac
}
all_shapes="ddp fsdp ddp_engine ddp_engine_1bucket ddp_engine_fp16 fsdp_engine"
all_shapes+=" fsdp_engine_noprefetch pipeline"
scenario() {  # NAME WORLD TOPOLOGY SHAPE
  cat <<TOML
name = "$1_w$2"
description = "predict validation"
group = "predict"
trace = true
[cluster]
world_size = $2
timeout = 60
run_timeout = $((scale < 18 ? 240 + 20 * scale : 600))
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
# One validation point: the prediction for WORLD from PREDICTED_JSON against
# the emulated run's traced step in MEASURED_JSON; prints it as a JSON line
# and appends it to validation.json. Args: PREDICTED MEASURED WORLD SHAPE
# TOPOLOGY [TRACED_ON].
first=1
record_point() {
  local line
  line=$(/usr/bin/python3 - "$@" <<'PY'
import json, sys
pred = json.load(open(sys.argv[1]))
meas = json.load(open(sys.argv[2]))
w = int(sys.argv[3])
p = next(r for r in pred["rows"] if r["world_size"] == w)
m = meas["rows"][0]
point = {"shape": sys.argv[4], "topology": sys.argv[5], "world": w,
         "predicted_step_s": p["step_s"], "measured_step_s": m["traced_step_s"],
         "error": p["step_s"] / m["traced_step_s"] - 1,
         "predicted_exposed_s": p["exposed_s"],
         "algorithms": sorted({c["algorithm"] for c in p["collectives"]})}
if len(sys.argv) > 6:
    point["traced_on"] = sys.argv[6]
print(json.dumps(point))
PY
)
  echo "$line"
  [[ $first == 1 ]] || echo "," >> "$out/validation.json"
  first=0
  echo "$line" >> "$out/validation.json"
}
run_point() {  # NAME WORLD TOPOLOGY SHAPE: the emulated run, traced
  scenario "$1" "$2" "$3" "$4" > "$out/${1}_w$2.toml"
  "$distlab" run "$out/${1}_w$2.toml" --out "$out/runs" > /dev/null
}
echo "[" > "$out/validation.json"
for t in "${topology_picks[@]}"; do
  for shape in "${shapes[@]}"; do
    [[ $shape == pipeline ]] && continue
    topo=${topologies[$t]}
    [[ $shape == *engine* ]] && topo=${engine_topologies[$t]}
    topo=$(scaled_topology "$topo")
    for w in 2 "${worlds[@]}"; do run_point "${shape}_t$t" "$w" "$topo" "$shape"; done
    traced="$out/runs/predict__${shape}_t${t}_w2.trace.json"
    world_list=$(IFS=,; echo "${worlds[*]}")
    "$distlab" predict "$traced" --world "$world_list" --topology "$topo" \
      --json "$out/predicted_${shape}_t$t.json" > /dev/null
    for w in "${worlds[@]}"; do
      "$distlab" predict "$out/runs/predict__${shape}_t${t}_w$w.trace.json" --world "$w" \
        --topology "$topo" --json "$out/measured_${shape}_t${t}_w$w.json" > /dev/null
      record_point "$out/predicted_${shape}_t$t.json" "$out/measured_${shape}_t${t}_w$w.json" \
        "$w" "$shape" "$topo"
    done
  done
done
# The pipeline's messages replay at their own world size only (Note [Scaling
# a trace]): traced at world 4 on the first topology, predicted on each
# topology at world 4 against an emulated run there.
if [[ " ${shapes[*]} " == *" pipeline "* ]]; then
  traced_topo=$(scaled_topology "${topologies[0]}")
  run_point pipeline_traced 4 "$traced_topo" pipeline
  traced="$out/runs/predict__pipeline_traced_w4.trace.json"
  for t in "${topology_picks[@]}"; do
    topo=$(scaled_topology "${topologies[$t]}")
    run_point "pipeline_t$t" 4 "$topo" pipeline
    "$distlab" predict "$traced" --world 4 --topology "$topo" \
      --json "$out/predicted_pipeline_t$t.json" > /dev/null
    "$distlab" predict "$out/runs/predict__pipeline_t${t}_w4.trace.json" --world 4 \
      --topology "$topo" --json "$out/measured_pipeline_t$t.json" > /dev/null
    record_point "$out/predicted_pipeline_t$t.json" "$out/measured_pipeline_t$t.json" 4 \
      pipeline "$topo" "$traced_topo"
  done
fi
echo "]" >> "$out/validation.json"
echo "results in $out"
