#!/usr/bin/env bash
# Everything issue 37 asks of a GPU machine, as one command:
#   reports/gpu/check_gpu.sh [BUILD_DIR] [OUT_DIR]
# (defaults build/default and /tmp/distlab-gpu-check). Needs a distlab build
# with CUDA (the default preset finds /usr/local/cuda) and one NVIDIA GPU.
#   1. the GPU test suites (ctest -L gpu);
#   2. the gpu scenario group (scenarios/gpu), traced: every scenario must
#      PASS; exit 77 means distlab saw no usable GPU;
#   3. the overlap sweep on the device and, beside it in the same run, on the
#      CPU: DDP bucket caps and FSDP prefetch on/off with the GPT model.
# Results (logs, per-scenario JSON and traces, overlap JSON) go to OUT_DIR;
# the last line says which steps failed. Copy the figures into reports/gpu.md
# and reports/overlap.md with the device named (nvidia-smi -L, in device.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build/default}"
out="${2:-/tmp/distlab-gpu-check}"
distlab="$build/emulator/cli/distlab"
mkdir -p "$out"
failed=()

if [ ! -x "$distlab" ]; then
  echo "check_gpu: no $distlab; build first (./setup.sh build)" >&2
  exit 2
fi
(nvidia-smi -L || echo "nvidia-smi not found") > "$out/device.txt" 2>&1
cat "$out/device.txt"

echo "== 1. GPU test suites"
ctest --test-dir "$build" -L gpu --output-on-failure --timeout 600 2>&1 | tee "$out/ctest_gpu.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("ctest -L gpu")

echo "== 2. scenarios/gpu"
"$distlab" run scenarios/gpu --out "$out/scenarios" --trace 2>&1 | tee "$out/scenarios.txt"
rc="${PIPESTATUS[0]}"
[ "$rc" -eq 0 ] || failed+=("scenarios/gpu (exit $rc; 77: no usable GPU)")

echo "== 3. overlap, cuda then cpu (GPT, DDP bucket caps, FSDP prefetch on/off)"
sweep=(--world-sizes 2 --links ethernet-10g --caps 1,25,1024 --hooks '' \
       --fsdp block,block_no_prefetch --model gpt --rounds 3 --no-tracing-overhead)
for device in cuda cpu; do
  "$distlab" bench overlap "${sweep[@]}" --device "$device" \
      --json "$out/overlap_$device.json" 2>&1 | tee "$out/overlap_$device.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("bench overlap --device $device")
done

if ((${#failed[@]})); then
  echo "check_gpu: FAILED: ${failed[*]} (logs in $out)"
  exit 1
fi
echo "check_gpu: all passed (results in $out)"
