#!/usr/bin/env python3
"""Summarise a `distlab run scenarios --out DIR` run: library wall time and,
per fault kind, how quickly the fault was detected (median and worst).

Usage: reports/scenario_report.py DIR TOTAL_SECONDS > reports/scenarios.md

Detection = first error reported by any rank (or, with no error, the runner's
analysis at the end of the run) minus the wall-clock time the fault fired on
its rank (both from the ranks' event logs, one machine, one clock).
"""
import glob
import json
import statistics
import sys


def main():
    out_dir, total = sys.argv[1], float(sys.argv[2])
    rows = [json.load(open(p)) for p in sorted(glob.glob(f"{out_dir}/*.json"))]
    rows = [r for r in rows if "observed_outcome" in r]
    by_kind = {}
    for r in rows:
        for kind in set(r.get("fault_kinds", [])):
            if "detection_s" in r:
                by_kind.setdefault(kind, []).append((r["detection_s"], r["group"] + "/" + r["name"]))
    passed = sum(1 for r in rows if r["passed"])
    print("# Scenario library: run time and detection latency\n")
    print(f"Command: `distlab run scenarios --out DIR` (all groups, serial), then "
          f"`reports/scenario_report.py DIR {total:.1f}`.\n")
    print(f"- scenarios: {len(rows)}, passed: {passed}")
    print(f"- library wall time: {total:.1f} s "
          f"(sum of per-scenario durations {sum(r['duration_s'] for r in rows):.1f} s)")
    slow = sorted(rows, key=lambda r: -r["duration_s"])[:5]
    print("- slowest: " + ", ".join(f"{r['group']}/{r['name']} {r['duration_s']:.2f} s" for r in slow))
    print("\n## Detection latency per fault kind (fault fired -> first error / end of run)\n")
    print("| fault kind | scenarios | median (s) | worst (s) | worst scenario |")
    print("|---|---|---|---|---|")
    for kind in sorted(by_kind):
        v = by_kind[kind]
        worst = max(v)
        print(f"| {kind} | {len(v)} | {statistics.median(x for x, _ in v):.3f} | "
              f"{worst[0]:.3f} | {worst[1]} |")
    print("\n## Scenarios without an injected fault (script bugs, debug-level pairs)\n")
    print("| scenario | debug | observed | culprits | duration (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        if not r.get("fault_kinds"):
            print(f"| {r['group']}/{r['name']} | {r['debug']} | {r['observed_outcome']} | "
                  f"{r['culprits']} | {r['duration_s']:.2f} |")


if __name__ == "__main__":
    main()
