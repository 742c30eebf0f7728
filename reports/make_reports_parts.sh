# The parts of reports/make_reports.sh (sourced by it: $build, $distlab, $py, $work, $here,
# $root, $have_torch, $have_mpi, step and bounded come from there).

part_collectives() {
  step "collectives: world 2 and 4 (several minutes)"
  peers2=""; peers4=""
  [ $have_mpi = yes ] && { peers2="mpi"; peers4="mpi"; }
  [ $have_torch = yes ] && peers2="${peers2:+$peers2,}torch-gloo"
  # World 2 carries the issue's targets: three rounds, so each ratio is a median of ratios
  # taken back to back (Note [Bench rounds]); world 4 is one sweep.
  bounded 3000 "$distlab" bench collectives --world-size 2 --async --rounds 3 \
    ${peers2:+--peer "$peers2"} --json "$here/collectives_shm_ws2.json" > "$work/coll2.txt"
  bounded 1800 "$distlab" bench collectives --world-size 4 --async ${peers4:+--peer "$peers4"} \
    --json "$here/collectives_shm_ws4.json" > "$work/coll4.txt"
  # The debug layers DDP and FSDP run with (flight recorder, watchdog, DETAIL), small sizes.
  bounded 900 "$distlab" bench collectives --world-size 2 --ops all_reduce --max-bytes 64K --async \
    --debug off,monitor,detail ${peers4:+--peer mpi} \
    --json "$here/collectives_shm_layers_ws2.json" > "$work/coll_layers.txt"
  # The single-copy path forced on, against the slots of the ws2 run (Note [shm single copy]);
  # left out of the report where the system refuses cross-memory attach (the run says why).
  single_copy=""
  if bounded 1800 "$distlab" bench collectives --world-size 2 \
      --ops all_reduce,all_gather_into_tensor,reduce_scatter_tensor,broadcast --min-bytes 64K \
      --option shm.single_copy=on --option shm.single_copy_min_bytes=0 ${peers4:+--peer mpi} \
      --json "$here/collectives_shm_single_copy_ws2.json" > "$work/coll_single_copy.txt" 2>&1; then
    single_copy="$here/collectives_shm_single_copy_ws2.json"
  else
    echo "single-copy run failed (left out of the report):"; tail -3 "$work/coll_single_copy.txt"
  fi
  $py "$root/bench/collectives/collectives_report.py" --plot "$here/collectives_busbw.png" \
    --before "$here/collectives_shm_before_ws2.json" \
    --layers "$here/collectives_shm_layers_ws2.json" ${single_copy:+--single-copy "$single_copy"} \
    "$here/collectives_shm_ws2.json" "$here/collectives_shm_ws4.json" > "$here/collectives_shm.md"
}

# One `distlab bench overlap` configuration set: NAME, then its flags.
overlap_run() {
  name=$1; shift
  step "overlap: $name ($*)"
  bounded 3600 "$distlab" bench overlap "$@" --json "$here/overlap/$name.json" \
    > "$work/overlap_$name.txt"
  cat "$work/overlap_$name.txt"
  [ $have_torch = yes ] || return 0
  # PyTorch DDP over the same links, per world size and link of the run (its DDP caps).
  $py - "$here/overlap/$name.json" > "$work/torch_jobs.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
caps = sorted({r["bucket_cap_mb"] for r in d["rows"] if r["hook"] == "none"})
for ws in sorted({r["world_size"] for r in d["rows"]}):
    for link, m in d["links"].items():
        print(ws, link, m["latency_us"], m["bandwidth_gbs"], ",".join(f"{c:g}" for c in caps),
              ",".join(map(str, d["sizes"])), d["batch_size"], d["steps"], d.get("model", "mlp"))
EOF
  while read -r ws link lat bw caps sizes batch steps model; do
    [ "$model" = mlp ] || continue  # the peer builds the scenario MLP only
    step "overlap: $name, PyTorch DDP at world $ws over $link"
    bounded 900 $py "$root/bench/ddp/torch_overlap_peer.py" --world-size "$ws" --sizes "$sizes" \
      --batch-size "$batch" --steps "$steps" --caps "$caps" --latency-us "$lat" \
      --bandwidth-gbs "$bw" --json "$here/overlap/torch_${name}_ws${ws}_$link.json" > /dev/null
  done < "$work/torch_jobs.txt"
}

part_overlap() {
  mkdir -p "$here/overlap"
  rm -f "$here"/overlap/*.json
  # The reference MLP: the bucket sweep, the comm hooks and FSDP, world 2 and 4.
  overlap_run reference_mlp --world-sizes 2,4 --links ethernet-10g,ethernet-100g \
    --caps 0.05,1,5,25,1024 --hooks noop,fp16_compress,powersgd \
    --fsdp block,block_no_prefetch,root --steps 8 --rounds 3 --overhead-repeats 5
  # A deeper MLP with a narrow input layer and more compute per byte (batch 512): the case
  # where a step's communication is well under its backward compute, over a link where
  # communication costs about as much as compute (1 Gb/s) and one where it costs less.
  overlap_run deep_mlp --world-sizes 2 --links ethernet-1g,ethernet-10g --caps 1,5,25,1024 \
    --hooks noop --fsdp block,block_no_prefetch,root --steps 6 --batch-size 512 --rounds 3 \
    --sizes 256,1024,1024,1024,1024,1024,1024,1024,1024,1024,1024,1024,1024,16 \
    --no-tracing-overhead
  # GPT 256,64,256,4,4 (3.3 M parameters), 4 sequences of 64 tokens per rank.
  overlap_run gpt --model gpt --gpt 256,64,256,4,4 --batch-size 4 --world-sizes 2 \
    --links ethernet-1g,ethernet-10g --caps 1,5,25,1024 --hooks noop \
    --fsdp block,block_no_prefetch,root --steps 6 --rounds 3 --no-tracing-overhead
  # The same GPT sweep with the ranks on the GPU (two ranks sharing it over shm), when
  # this machine has one: the GPU section of the report (issue 37).
  if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
    overlap_run gpt_cuda --device cuda --model gpt --gpt 256,64,256,4,4 --batch-size 4 \
      --world-sizes 2 --links ethernet-1g,ethernet-10g --caps 1,5,25,1024 --hooks noop \
      --fsdp block,block_no_prefetch,root --steps 6 --rounds 3 --no-tracing-overhead
  fi
  step "overlap: traced DDP and FSDP steps for the timelines"
  bounded 600 "$distlab" run "$root/scenarios/ddp/overlap_buckets.toml" \
    "$root/scenarios/fsdp/prefetch_overlap.toml" --trace --out "$work/traces" > /dev/null
  $py "$here/overlap_report.py" --out-dir "$here" --trace-ddp "$work/traces/ddp__overlap_buckets.trace.json" \
    --trace-fsdp "$work/traces/fsdp__prefetch_overlap.trace.json" \
    --trace-bench "$here/trace_bench.json" --command "reports/make_reports.sh overlap" \
    "$here"/overlap/*.json
}

# Note [OpenBLAS kernel family]: the step times depend on which BLAS kernels
# run (Debian's OpenBLAS falls back to old ones on CPUs it does not know), so
# unless the caller chose OPENBLAS_CORETYPE the DDP and MLP parts run with the
# faster family `distlab demo` says the CPU supports. Both sides (distlab and
# PyTorch) get it; the reports name the family that ran.
blas_coretype() {
  if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    echo "$OPENBLAS_CORETYPE"
    return
  fi
  "$distlab" demo --steps 1 2> /dev/null | sed -n 's/.*set OPENBLAS_CORETYPE=\([A-Za-z0-9]*\).*/\1/p'
}

with_blas_coretype() {
  local core
  core=$(blas_coretype)
  if [ -n "$core" ]; then
    OPENBLAS_CORETYPE="$core" "$@"
  else
    "$@"
  fi
}

part_ddp() {
  step "ddp: ddp_step_bench"
  with_blas_coretype bounded 1800 "$build/bench/ddp/ddp_step_bench" --worlds=2,4 --rounds=3 \
    --torch_script="$root/bench/ddp/torch_ddp_step.py" --report="$here/ddp_step" > /dev/null
}

part_mlp() {
  step "mlp: mlp_step_bench"
  with_blas_coretype bounded 1800 "$build/bench/nn/mlp_step_bench" --rounds=5 \
    --report="$here/mlp_step" > /dev/null
}

part_scenarios() {
  step "scenarios: the whole library, serially"
  start=$(date +%s)
  bounded 1800 "$distlab" run "$root/scenarios" --out "$work/scen" > /dev/null || true
  end=$(date +%s)
  $py "$here/scenario_report.py" "$work/scen" "$((end - start))" > "$here/scenarios.md"
}
