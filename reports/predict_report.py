#!/usr/bin/python3
"""The validation table of reports/predict.md from reports/predict_validation.sh's
validation.json: one row per (shape, topology, world), then the median and worst
absolute error. Needs nothing beyond Python's standard library."""
import json
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: predict_report.py OUT_DIR/validation.json")
    points = json.load(open(sys.argv[1]))
    print("| shape | topology | world | algorithm(s) | predicted step ms | emulated step ms | error |")
    print("|---|---|---|---|---|---|---|")
    for p in points:
        print(f"| {p['shape']} | `{p['topology']}` | {p['world']} | {', '.join(p['algorithms'])} | "
              f"{p['predicted_step_s'] * 1e3:.2f} | {p['measured_step_s'] * 1e3:.2f} | "
              f"{p['error'] * 100:+.1f} % |")
    errors = [abs(p["error"]) for p in points]
    print()
    print(f"{len(points)} points: median |error| {statistics.median(errors) * 100:.1f} %, "
          f"worst {max(errors) * 100:.1f} %")
    for w in sorted({p["world"] for p in points}):
        at = [abs(p["error"]) for p in points if p["world"] == w]
        print(f"- world {w}: median {statistics.median(at) * 100:.1f} %, worst {max(at) * 100:.1f} %")


if __name__ == "__main__":
    main()
