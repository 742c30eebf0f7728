#!/usr/bin/python3
"""Plots and Markdown for `distlab bench overlap` (reports/overlap_ddp.md).

Usage: reports/overlap_report.py BENCH_JSON TRACE_JSON OUT_DIR COMMAND

BENCH_JSON: `distlab bench overlap --json`; TRACE_JSON: a merged scenario trace
(`distlab run scenarios/ddp/overlap_buckets.toml --trace --out DIR`). Writes
OUT_DIR/overlap_ddp.md and its PNG plots. Needs Debian's python3-matplotlib
(reports/overlap_report.sh installs it); never needed by the build or tests.
"""
import json
import platform
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def plot_bucket_sweep(rows, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    groups = sorted({(r["world_size"], r["link"]) for r in rows})
    for ws, link in groups:
        pts = sorted((r["bucket_cap_mb"], r["step_ms"]) for r in rows
                     if r["world_size"] == ws and r["link"] == link and r["hook"] == "none"
                     and not r["error"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=f"world {ws}, {link}")
    ax.set_xscale("log")
    ax.set_xlabel("bucket_cap_mb")
    ax.set_ylabel("step time (ms)")
    ax.set_title("DDP step time vs bucket size")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot_exposed(rows, path):
    ok = [r for r in rows if not r["error"]]
    labels = [f'{r["world_size"]} {r["link"]} {r["hook"]} {r["bucket_cap_mb"]:g}' for r in ok]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1.5))
    y = range(len(ok))
    ax.barh(y, [r["comm_ms"] - r["exposed_comm_ms"] for r in ok], label="overlapped comm")
    ax.barh(y, [r["exposed_comm_ms"] for r in ok],
            left=[r["comm_ms"] - r["exposed_comm_ms"] for r in ok], label="exposed comm")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("communication per step (ms)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot_timeline(trace, path, step_name="step 3"):
    events = trace["traceEvents"]
    tracks = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    steps = {e["pid"]: e for e in events if e.get("cat") == "step" and e["name"] == step_name}
    if not steps:
        return False
    t0 = min(s["ts"] for s in steps.values())
    t1 = max(s["ts"] + s["dur"] for s in steps.values())
    colors = {"compute": "tab:blue", "comm": "tab:orange", "wait": "tab:red", "mark": "tab:gray"}
    rows, spans = [], []
    opened = {}
    for e in events:
        cat, ph = e.get("cat"), e["ph"]
        key = (e["pid"], e.get("tid"))
        if ph == "X" and cat in ("compute", "wait", "mark") and t0 <= e["ts"] <= t1:
            spans.append((key, e["ts"], e["dur"], cat))
        elif ph == "b" and cat == "comm":
            opened[(key, e.get("id"))] = e["ts"]
        elif ph == "e" and cat == "comm" and (key, e.get("id")) in opened:
            b = opened.pop((key, e.get("id")))
            if t0 <= b <= t1:
                spans.append((key, b, e["ts"] - b, "comm"))
    keys = sorted({s[0] for s in spans})
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(keys) + 1.5))
    for i, key in enumerate(keys):
        rows.append(f"rank {key[0]} {tracks.get(key, key[1])}")
        for k, ts, dur, cat in spans:
            if k == key:
                ax.broken_barh([((ts - t0) / 1000, max(dur, 1) / 1000)], (i - 0.4, 0.8),
                               color=colors[cat])
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.set_xlabel(f"ms from the start of {step_name}")
    ax.set_title("One DDP step: compute (blue), collectives (orange), waits (red), link (gray)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main():
    bench_path, trace_path, out_dir, command = sys.argv[1:5]
    bench = json.load(open(bench_path))
    trace = json.load(open(trace_path))
    rows = bench["rows"]
    plot_bucket_sweep(rows, f"{out_dir}/overlap_bucket_sweep.png")
    plot_exposed(rows, f"{out_dir}/overlap_exposed.png")
    has_timeline = plot_timeline(trace, f"{out_dir}/overlap_timeline.png")
    out = open(f"{out_dir}/overlap_ddp.md", "w")
    out.write("# DDP communication/compute overlap (`distlab bench overlap`)\n\n")
    out.write(f"Machine: {cpu_model()}, {bench.get('cores', '?')} cores. {bench.get('blas', '')}\n\n")
    out.write(f"Command: `{command}`\n\n")
    out.write(f"Model {bench['model']} {bench['sizes']}, {bench['steps']} steps of batch "
              f"{bench['batch_size']} per rank. Times are means over ranks of the steps after "
              "two of warm-up; overlap and exposed% are the worst rank's; vs_default is the step "
              "time over that of bucket_cap_mb 25 without a hook, same world size and link.\n\n")
    out.write("| world | link | hook | bucket_mb | step ms | compute ms | comm ms | exposed ms "
              "| overlap | exposed % | vs default |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        if r["error"]:
            out.write(f'| {r["world_size"]} | {r["link"]} | {r["hook"]} | {r["bucket_cap_mb"]:g} '
                      f'| failed: {r["error"][:80]} |||||||\n')
            continue
        out.write(f'| {r["world_size"]} | {r["link"]} | {r["hook"]} | {r["bucket_cap_mb"]:g} '
                  f'| {r["step_ms"]:.1f} | {r["compute_ms"]:.1f} | {r["comm_ms"]:.1f} '
                  f'| {r["exposed_comm_ms"]:.1f} | {r["overlap_ratio"]:.3f} '
                  f'| {100 * r["exposed_share"]:.1f} | {r["vs_default"]:.3f} |\n')
    if "tracing_overhead" in bench:
        t = bench["tracing_overhead"]
        out.write(f'\nTracing overhead: step {t["traced_step_ms"]:.1f} ms traced vs '
                  f'{t["untraced_step_ms"]:.1f} ms untraced, {t["runs"]} alternating runs each.\n')
    out.write("\n![step time vs bucket size](overlap_bucket_sweep.png)\n\n")
    out.write("![exposed communication per configuration](overlap_exposed.png)\n\n")
    if has_timeline:
        out.write("![timeline of one DDP step](overlap_timeline.png)\n\n")
    out.write(
        "How to read it: `comm` is the union of collective spans (start to completion); on a "
        "machine whose cores are shared it includes the shm backend's own reduction work and "
        "waiting for a slower peer, which the link model does not add. `exposed` is the part "
        "of it during which the rank computed nothing. The noop-hook row is the step without "
        "communication (the headroom). See Note [Overlap metrics].\n")
    out.close()


if __name__ == "__main__":
    main()
