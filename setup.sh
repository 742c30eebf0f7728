#!/usr/bin/env bash
# distlab's one entry point for a fresh machine (Debian, root):
#   ./setup.sh run    install what is missing, build the `distlab` tool, run the main job
#   ./setup.sh test   install what is missing, build everything, run the tests (ctest)
#   ./setup.sh deps   only install what is missing
#   ./setup.sh build  install what is missing and build everything
# Idempotent: packages already present are not reinstalled, the build is incremental.
set -euo pipefail
cd "$(dirname "$0")"

PRESET="${DISTLAB_PRESET:-default}"
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libgloo-dev libopenblas-dev libtomlplusplus-dev nlohmann-json3-dev
  libfmt-dev libcli11-dev gdb iproute2 procps python3
)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
  fi
}

# build [TARGET...]: configure and build the preset; the named targets only, when given.
build() {
  cmake --preset "$PRESET" >/dev/null
  if (($#)); then
    cmake --build --preset "$PRESET" --target "$@"
  else
    cmake --build --preset "$PRESET"
  fi
}

mode="${1:-}"
case "$mode" in
  deps) install_missing ;;
  build) install_missing; build ;;
  run)
    # The main job needs the `distlab` executable only: the tests and
    # benchmarks wait for `./setup.sh test` or `build`.
    install_missing; build distlab_cli
    exec "build/$PRESET/emulator/cli/distlab" run scenarios/quickstart
    ;;
  test)
    install_missing; build
    exec ctest --preset "$PRESET" "${@:2}"
    ;;
  *)
    echo "usage: $0 run|test|build|deps   (see README.md)" >&2
    exit 2
    ;;
esac
