#!/usr/bin/env bash
# Runs the numeric suites once per OpenBLAS kernel family this CPU can execute
# (OPENBLAS_CORETYPE forces the family), so a tolerance fitted to one machine's
# kernels fails here instead of on a user's machine with another CPU.
#
#   tests/numeric/openblas_coretypes.sh BUILD_DIR SOURCE_DIR
#
# Numeric suites: the tensor, autograd, nn, optim and DDP unit suites and every
# scenario that compares against the single-process reference
# (params_match_reference). Families whose instructions the CPU lacks (e.g.
# SkylakeX needs AVX-512; running it anyway dies with SIGILL) are listed as
# skipped with the missing flag. Exit 0 only when every runnable family passed.
set -uo pipefail
build="${1:?usage: openblas_coretypes.sh BUILD_DIR SOURCE_DIR}"
source_dir="${2:?usage: openblas_coretypes.sh BUILD_DIR SOURCE_DIR}"
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "

# family:required-flags (comma separated)
families=(
  "Nehalem:sse4_2"
  "Sandybridge:avx"
  "Haswell:avx2,fma"
  "Zen:avx2,fma"
  "SkylakeX:avx512f,avx512bw,avx512dq,avx512vl"
)

scenarios=$(cd "$source_dir" && grep -rl --include='*.toml' '^params_match_reference = true' scenarios \
            | sed 's/[.]/[.]/g' | paste -sd'|')
regex="^(tensor_test|autograd_|nn_models_test|nn_module_test|nn_demo_cli|optim_test|ddp_parity_test|ddp_hooks_test|ddp_reducer_test|emulator_reference_check_test|${scenarios})\$"

failed=()
ran=0
for entry in "${families[@]}"; do
  family="${entry%%:*}"
  missing=""
  IFS=, read -ra needed <<<"${entry#*:}"
  for f in "${needed[@]}"; do
    [[ "$flags" == *" $f "* ]] || missing+="$f "
  done
  if [[ -n "$missing" ]]; then
    echo "skipped: $family (this CPU lacks: ${missing% })"
    continue
  fi
  # OpenBLAS ignores an unknown family silently; make sure it took this one.
  core=$(OPENBLAS_CORETYPE="$family" OPENBLAS_VERBOSE=2 "$build/tests/optim/optim_test" \
           --gtest_list_tests 2>&1 | sed -n 's/^Core: //p' | head -1)
  if [[ "$core" != "$family" ]]; then
    echo "FAILED: $family: OpenBLAS reports core '$core'"
    failed+=("$family")
    continue
  fi
  echo "== OPENBLAS_CORETYPE=$family"
  if OPENBLAS_CORETYPE="$family" ctest --test-dir "$build" -R "$regex" -j2 \
       --timeout 300 --output-on-failure > "$build/coretype_$family.log" 2>&1; then
    grep -E "tests passed" "$build/coretype_$family.log"
    ran=$((ran + 1))
  else
    grep -E "tests passed|\*\*\*|Failed" "$build/coretype_$family.log"
    echo "FAILED: $family (log: $build/coretype_$family.log)"
    failed+=("$family")
  fi
done
echo "$ran kernel families passed, ${#failed[@]} failed"
[[ ${#failed[@]} -eq 0 && $ran -gt 0 ]]
