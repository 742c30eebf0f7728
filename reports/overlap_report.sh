#!/bin/sh
# Regenerates reports/overlap_ddp.{md,json} and its plots: installs Debian's
# python3-matplotlib when missing (only this command needs it; never the build
# or the tests), runs `distlab bench overlap` with the given flags and one
# traced overlap scenario (for the timeline picture), then overlap_report.py.
# Usage: reports/overlap_report.sh DISTLAB [bench overlap flags...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 DISTLAB [bench overlap flags...] (DISTLAB: build/default/emulator/cli/distlab)" >&2
  exit 2
fi
distlab=$1
shift
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "overlap_report: installing python3-matplotlib (Debian) for the plots" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y python3-matplotlib; else sudo apt-get install -y python3-matplotlib; fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
"$distlab" bench overlap "$@" --json "$here/overlap_ddp.json" > "$work/bench.txt"
cat "$work/bench.txt"
# The scenario's own bounds may fail on a loaded machine; its trace is written regardless.
"$distlab" run "$here/../scenarios/ddp/overlap_buckets.toml" --trace --out "$work" || true
/usr/bin/python3 "$here/overlap_report.py" "$here/overlap_ddp.json" \
  "$work/ddp__overlap_buckets.trace.json" "$here" "reports/overlap_report.sh DISTLAB $*"
