#!/usr/bin/python3
"""The cost curve of reports/scale.md from a reports/scale_curve.sh folder.

Reads, per world size W, bench_W.json (`distlab bench scale`), hang_W/rank_cost.json
and hang_W/report__wait.json (reports/rank_cost.sh and its scenario run) and
analyze_W.json; prints one Markdown table of the figures, one of how each grows,
and draws the plot. Growth: the exponent b of a least-squares fit of
log(y) = a + b log(W) over the points from W = 16 up (below that the fixed costs
dominate; b = 1 is linear in the world size, 0 flat), and the slope of a
straight line through the same points (cost per added rank).

Needs python3-matplotlib for --plot (reports/make_reports.sh installs it);
never needed by the build or the tests.
"""
import argparse
import json
import math
import os
import sys

# (key, label, unit, scale from the stored unit)
FIGURES = [
    ("spawn_s", "spawn: launcher start to last rank started", "s", 1),
    ("formed_s", "group formed: launcher start to last rank's init", "s", 1),
    ("first_collective_s", "first collective (all_reduce 4 B)", "ms", 1e3),
    ("all_reduce_8_monitor", "all_reduce 8 B, p50", "us", 1),
    ("all_reduce_1048576_monitor", "all_reduce 1 MiB, p50", "us", 1),
    ("barrier_0_monitor", "barrier, p50", "us", 1),
    ("monitored_barrier_0_monitor", "monitored_barrier, p50", "us", 1),
    ("detail_overhead_8", "DETAIL cost per all_reduce 8 B (p50 detail - p50 default)", "us", 1),
    ("detail_overhead_barrier", "DETAIL cost per barrier", "us", 1),
    ("detail_group_s", "newGroup (all ranks, DETAIL) + one all_reduce", "ms", 1e3),
    ("new_subgroups_s", "newSubgroups(8) + one all_reduce", "ms", 1e3),
    ("split_half_s", "split (lower half) + one all_reduce", "ms", 1e3),
    ("private_dirty_median_mib", "private dirty memory per waiting rank (median)", "MiB", 1),
    ("private_dirty_total_mib", "private dirty memory, all ranks", "MiB", 1),
    ("cpu_percent_per_rank", "CPU per waiting rank", "% core", 1),
    ("detection_s", "hang to first error (collective timeout below)", "s", 1),
    ("detection_beyond_timeout_s", "hang to first error, beyond the timeout", "s", 1),
    ("run_s", "whole hang scenario run", "s", 1),
    ("analyze_s", "distlab analyze over every rank's dump", "s", 1),
]


def load(path):
    with open(path) as f:
        return json.load(f)


def point(folder, w):
    """Every figure of world size w, in the stored unit (FIGURES' scale converts)."""
    p = {}
    bench = load(os.path.join(folder, f"bench_{w}.json"))
    if not bench.get("correct", False):
        sys.exit(f"scale_curve.py: bench_{w}.json says a checked sum was wrong")
    for key in ("spawn_s", "formed_s", "first_collective_s", "detail_group_s",
                "new_subgroups_s", "split_half_s"):
        p[key] = bench[key]
    rows = {(r["op"], r["bytes"], r["debug"]): r["p50_us"] for r in bench["rows"]}
    for (op, size, debug), p50 in rows.items():
        p[f"{op}_{size}_{debug}"] = p50
    p["detail_overhead_8"] = rows[("all_reduce", 8, "detail")] - rows[("all_reduce", 8, "monitor")]
    p["detail_overhead_barrier"] = rows[("barrier", 0, "detail")] - rows[("barrier", 0, "monitor")]
    cost = load(os.path.join(folder, f"hang_{w}", "rank_cost.json"))
    p["private_dirty_median_mib"] = cost["private_dirty_median_kib"] / 1024
    p["private_dirty_total_mib"] = cost["private_dirty_total_kib"] / 1024
    cpu = cost["cpu_percent_per_rank"]  # null when no rank was sampled
    p["cpu_percent_per_rank"] = float("nan") if cpu is None else cpu
    p["settled"] = cost["settled"]
    p["ranks_sampled"] = cost["ranks_sampled"]
    run = load(os.path.join(folder, f"hang_{w}", "report__wait.json"))
    p["detection_s"] = run.get("detection_s", float("nan"))
    p["run_s"] = run["duration_s"]
    p["verdict"] = "pass" if run.get("passed") else "FAIL"
    p["timeout_s"] = 30 + w // 16 + 3 * 5  # reports/rank_cost.sh's timeout for window 5
    p["detection_beyond_timeout_s"] = p["detection_s"] - p["timeout_s"]
    p["analyze_s"] = load(os.path.join(folder, f"analyze_{w}.json"))["analyze_s"]
    return p


def fit(worlds, values):
    """(exponent, slope per rank) over the points with W >= 16 and a positive value."""
    pts = [(w, v) for w, v in zip(worlds, values) if w >= 16]
    # A power law needs positive values: a figure that is zero or negative at
    # some point (a detection inside the timeout) gets no exponent.
    if len(pts) < 2 or any(not (v > 0 and math.isfinite(v)) for _, v in pts):
        return None, None
    n = len(pts)
    lx = [math.log(w) for w, _ in pts]
    ly = [math.log(v) for _, v in pts]
    mx, my = sum(lx) / n, sum(ly) / n
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sum((x - mx) ** 2 for x in lx)
    xs = [w for w, _ in pts]
    ys = [v for _, v in pts]
    mxs, mys = sum(xs) / n, sum(ys) / n
    slope = sum((x - mxs) * (y - mys) for x, y in zip(xs, ys)) / sum((x - mxs) ** 2 for x in xs)
    return b, slope


def number(v):
    if v is None or not math.isfinite(v):
        return "—"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def tables(worlds, points):
    lines = ["| figure | unit | " + " | ".join(f"W={w}" for w in worlds) + " |",
             "|---|---|" + "---|" * len(worlds)]
    for key, label, unit, scale in FIGURES:
        cells = [number(points[w][key] * scale) for w in worlds]
        lines.append(f"| {label} | {unit} | " + " | ".join(cells) + " |")
    lines.append("| collective timeout of the hang run | s | "
                 + " | ".join(str(points[w]["timeout_s"]) for w in worlds) + " |")
    lines.append("| hang run verdict (outcome timeout, culprit [1]) | | "
                 + " | ".join(points[w]["verdict"] for w in worlds) + " |")
    lines += ["", "| figure | exponent b (y ~ W^b, W >= 16) | slope per added rank |", "|---|---|---|"]
    for key, label, unit, scale in FIGURES:
        b, slope = fit(worlds, [points[w][key] * scale for w in worlds])
        lines.append(f"| {label} | {number(b)} | {number(slope)} {unit} |")
    return "\n".join(lines)


def plot(worlds, points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [
        ("Start-up and diagnosis (s)", ["spawn_s", "formed_s", "detection_beyond_timeout_s",
                                        "analyze_s", "run_s"]),
        ("Operations (us, p50, slowest rank)", ["all_reduce_8_monitor", "all_reduce_1048576_monitor",
                                                "barrier_0_monitor", "monitored_barrier_0_monitor",
                                                "detail_overhead_8"]),
        ("Groups (ms)", ["first_collective_s", "detail_group_s", "new_subgroups_s", "split_half_s"]),
        ("A waiting rank", ["private_dirty_median_mib", "cpu_percent_per_rank"]),
    ]
    labels = {k: (label, unit, scale) for k, label, unit, scale in FIGURES}
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    for ax, (title, keys) in zip(axes.flat, panels):
        for key in keys:
            label, unit, scale = labels[key]
            ys = [points[w][key] * scale for w in worlds]
            xs = [w for w, y in zip(worlds, ys) if y > 0]
            ys = [y for y in ys if y > 0]
            ax.plot(xs, ys, marker="o", label=f"{label} ({unit})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("world size (ranks on one 2-core machine)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("distlab at scale: cost curve (reports/scale_curve.sh)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="reports/scale_curve.sh's output folder")
    ap.add_argument("--plot", help="write the plot (PNG) here")
    ap.add_argument("--json", help="write every point's figures (JSON) here")
    args = ap.parse_args()
    worlds = sorted(int(n[len("bench_"):-len(".json")]) for n in os.listdir(args.folder)
                    if n.startswith("bench_") and n.endswith(".json"))
    if not worlds:
        sys.exit(f"scale_curve.py: no bench_<W>.json in {args.folder}")
    points = {w: point(args.folder, w) for w in worlds}
    print(tables(worlds, points))
    unsettled = [w for w in worlds if not points[w]["settled"]]
    if unsettled:
        print(f"\nnot settled before sampling (memory/CPU are not of waiting ranks): {unsettled}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({str(w): points[w] for w in worlds}, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.plot:
        plot(worlds, points, args.plot)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
