#!/usr/bin/python3
"""reports/predict.md's tables and plot.

  predict_report.py OUT_DIR/validation.json [MORE.json...]
      the validation table (reports/predict_validation.sh, runs of it
      concatenated): one row per (shape, topology, world), then the median and
      worst absolute error;
  predict_report.py --sweep PLOT.png SWEEP.json...
      step time and exposed communication against world size, one line per
      `distlab predict --json` file (python3-matplotlib, which
      reports/make_reports.sh installs)."""
import json
import os
import statistics
import sys


def sweep_plot(path, files):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (step_ax, exposed_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    for f in files:
        j = json.load(open(f))
        worlds = [r["world_size"] for r in j["rows"]]
        label = f"{os.path.basename(j['trace'])} on {j['topology']}"
        step_ax.plot(worlds, [r["step_s"] * 1e3 for r in j["rows"]], marker="o", label=label)
        exposed_ax.plot(worlds, [100 * r["exposed_s"] / r["step_s"] for r in j["rows"]],
                        marker="o", label=label)
    for ax, title in ((step_ax, "predicted step (ms)"), (exposed_ax, "exposed communication (% of step)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("world size")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--sweep":
        sweep_plot(sys.argv[2], sys.argv[3:])
        return
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: predict_report.py OUT_DIR/validation.json [MORE.json...] | "
                 "--sweep PLOT.png SWEEP.json...")
    points = [p for f in sys.argv[1:] for p in json.load(open(f))]
    print("| shape | topology | world | algorithm(s) | predicted step ms | predicted exposed "
          "| emulated step ms | error |")
    print("|---|---|---|---|---|---|---|---|")
    for p in points:
        exposed = p["predicted_exposed_s"] / p["predicted_step_s"]
        shape = p["shape"]
        if "traced_on" in p:  # predicted at the traced world on another topology
            shape += f" (traced on `{p['traced_on']}`)"
        if "scale" in p:  # SCALE and WIDTH of the run, where a file records them
            shape += f", SCALE={p['scale']}" + (f", WIDTH={p['width']}" if "width" in p else "")
        print(f"| {shape} | `{p['topology']}` | {p['world']} | {', '.join(p['algorithms'])} | "
              f"{p['predicted_step_s'] * 1e3:.2f} | {exposed * 100:.0f} % | "
              f"{p['measured_step_s'] * 1e3:.2f} | {p['error'] * 100:+.1f} % |")
    errors = [abs(p["error"]) for p in points]
    print()
    print(f"{len(points)} points: median |error| {statistics.median(errors) * 100:.1f} %, "
          f"worst {max(errors) * 100:.1f} %")
    for w in sorted({p["world"] for p in points}):
        at = [abs(p["error"]) for p in points if p["world"] == w]
        print(f"- world {w}: median {statistics.median(at) * 100:.1f} %, worst {max(at) * 100:.1f} %")
    for shape in dict.fromkeys(p["shape"] for p in points):
        of = [abs(p["error"]) for p in points if p["shape"] == shape]
        print(f"- {shape}: median {statistics.median(of) * 100:.1f} %, worst {max(of) * 100:.1f} %")


if __name__ == "__main__":
    main()
