#!/usr/bin/env bash
# Two distlab binaries side by side on the collectives that tell whether a change to the
# operation path moved anything: allreduce at 8 B and 64 MiB, world 2, blocking and
# asynchronous, without debug layers and under the monitor (what initProcessGroup installs).
# The binaries alternate, ROUNDS times each, so drift on a shared machine hits both alike;
# prints each row's p50 per round, the medians and new/old.
#   reports/compare_binaries.sh OLD_DISTLAB NEW_DISTLAB [ROUNDS]
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 OLD_DISTLAB NEW_DISTLAB [ROUNDS]" >&2
  exit 2
fi
old="$1" new="$2" rounds="${3:-3}"
for b in "$old" "$new"; do
  [[ -x "$b" ]] || { echo "$0: '$b' is not an executable distlab binary" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]?$ ]] || { echo "$0: ROUNDS must be 1..99, got '$rounds'" >&2; exit 2; }
# The name BINARY's --ops takes for all_reduce: "allreduce" in binaries from before the bench
# took PyTorch's names. A bogus --peer stops either binary right after --ops is checked.
all_reduce_name() {
  local said
  said="$("$1" bench collectives --ops all_reduce --peer none 2>&1 || true)"
  if [[ "$said" == *"--ops:"* ]]; then echo allreduce; else echo all_reduce; fi
}
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for which in old new; do
    bin="$old"
    [[ "$which" == new ]] && bin="$new"
    op="$(all_reduce_name "$bin")"
    for size in 8 64M; do
      "$bin" bench collectives --world-size 2 --ops "$op" --min-bytes "$size" \
        --max-bytes "$size" --async --debug off,monitor --json "$out/${which}_${size}_$r.json" \
        >/dev/null
    done
  done
done
python3 - "$out" <<'PY'
import collections, glob, json, os, statistics, sys
rows = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    which, size, _ = os.path.basename(path)[:-5].split("_")
    for r in json.load(open(path))["rows"]:
        rows[(size, r["debug"], r["mode"], which)].append(r["time_p50_us"])
print(f"{'size':>5} {'debug':8} {'mode':9} {'old p50 (us)':>30} {'new p50 (us)':>30} new/old")
for key in sorted({k[:3] for k in rows}):
    old, new = rows[key + ("old",)], rows[key + ("new",)]
    fmt = lambda xs: " ".join(f"{x:.2f}" for x in xs)
    print(f"{key[0]:>5} {key[1]:8} {key[2]:9} {fmt(old):>30} {fmt(new):>30} "
          f"{statistics.median(new) / statistics.median(old):.3f}")
PY
