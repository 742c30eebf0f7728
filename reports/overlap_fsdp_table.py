#!/usr/bin/env python3
"""Median table of several `distlab bench overlap --fsdp ... --json` runs.

Usage: overlap_fsdp_table.py RUN.json... > table.md
Rows are keyed by (world, link, hook); each cell is the median over the runs,
with the range (min-max) of the step time beside it. Runs that failed a row
are left out of that row's median (and counted).
"""
import json
import statistics
import sys


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = {}
    order = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for r in doc["rows"]:
            key = (r["world_size"], r["link"], r["hook"])
            if key not in rows:
                rows[key] = []
                order.append(key)
            rows[key].append(r)
    print("| world | link | row | step ms (median, min-max) | compute ms | comm ms | exposed ms "
          "| overlap | exposed % | vs DDP default | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in order:
        ok = [r for r in rows[key] if not r["error"]]
        if not ok:
            print(f"| {key[0]} | {key[1]} | {key[2]} | failed: {rows[key][0]['error']} |")
            continue
        med = {k: statistics.median(r[k] for r in ok)
               for k in ("step_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "overlap_ratio",
                         "exposed_share", "vs_default")}
        steps = [r["step_ms"] for r in ok]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {med['step_ms']:.1f} ({min(steps):.1f}-"
              f"{max(steps):.1f}) | {med['compute_ms']:.1f} | {med['comm_ms']:.1f} | "
              f"{med['exposed_comm_ms']:.1f} | {med['overlap_ratio']:.3f} | "
              f"{100 * med['exposed_share']:.1f} | {med['vs_default']:.3f} | {len(ok)}/{len(rows[key])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
