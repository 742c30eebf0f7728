#!/bin/sh
# Regenerates the generated reports in reports/ (Markdown, JSON, plots) from a build.
#
#   reports/make_reports.sh [--build DIR] [PART...]
#
# PART (default: all of them, in this order):
#   collectives  `distlab bench collectives` at world 2 and 4, blocking and async, with Open
#                MPI and PyTorch gloo in the same run when installed -> collectives_shm.md,
#                collectives_shm_ws{2,4}.json, collectives_busbw.png (busbw vs size)
#   overlap      `distlab bench overlap` (reference MLP, deep MLP, GPT when the build has it),
#                PyTorch DDP over the same modelled links when installed, traced DDP and FSDP
#                steps -> overlap.md, overlap/*.json, overlap_*.png
#   ddp          ddp_step_bench -> ddp_step.{md,json}
#   mlp          mlp_step_bench -> mlp_step.{md,json}
#   scenarios    the scenario library's wall time and detection latencies -> scenarios.md
# The other reports (gemm, store, DETAIL overhead, FSDP step, shm vs gloo, GPU) carry their
# own commands; they need other builds or a GPU.
#
# Installs Debian's python3-matplotlib when missing (for the plots; never needed by the build
# or the tests). Peers are optional: Open MPI (openmpi-bin, libopenmpi-dev) and PyTorch
# (python3-torch) are used when installed and named as missing otherwise. Every benchmark
# runs with one BLAS thread per rank (OPENBLAS_NUM_THREADS=1, 2 cores here) and under a
# deadline; ddp and mlp with the fastest BLAS kernel family the CPU supports unless
# OPENBLAS_CORETYPE is set (their reports name the family). Times depend on the machine and its load: read the ratios, measured side by side.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build/default"
if [ "${1:-}" = "--build" ]; then
  [ $# -ge 2 ] || { echo "make_reports: --build needs a directory" >&2; exit 2; }
  build=$(cd "$2" && pwd) || { echo "make_reports: --build '$2' is not a directory" >&2; exit 2; }
  shift 2
fi
parts=${*:-collectives overlap ddp mlp scenarios}
for p in $parts; do
  case $p in
    collectives|overlap|ddp|mlp|scenarios) ;;
    *) echo "make_reports: unknown part '$p' (collectives overlap ddp mlp scenarios)" >&2; exit 2 ;;
  esac
done
distlab="$build/emulator/cli/distlab"
[ -x "$distlab" ] || { echo "make_reports: $distlab not built (./setup.sh build first)" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
py=/usr/bin/python3
if ! $py -c 'import matplotlib' 2>/dev/null; then
  echo "make_reports: installing python3-matplotlib (Debian) for the plots" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y python3-matplotlib; else sudo apt-get install -y python3-matplotlib; fi
fi
have_torch=no; $py -c 'import torch' 2>/dev/null && have_torch=yes
have_mpi=no; [ -x "$build/emulator/cli/distlab_mpi_peer" ] && command -v mpirun >/dev/null && have_mpi=yes
[ $have_torch = yes ] || echo "make_reports: python3-torch not installed: no PyTorch columns" >&2
[ $have_mpi = yes ] || echo "make_reports: Open MPI (or the build's distlab_mpi_peer) missing: no MPI columns" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
step() { echo "make_reports: $*" >&2; }
# A benchmark under a deadline (seconds) that is killed with everything it started.
bounded() { limit=$1; shift; timeout --kill-after=10 "$limit" "$@"; }

. "$here/make_reports_parts.sh"
for p in $parts; do "part_$p"; done
step "done: $parts"
