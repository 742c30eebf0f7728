#!/usr/bin/python3
"""reports/overlap.md and its plots from `distlab bench overlap --json` runs.

Usage: reports/overlap_report.py --out-dir DIR [--trace-ddp T] [--trace-fsdp T]
           [--trace-bench trace_bench.json] [--command TEXT] RUN.json...

RUN.json: one `distlab bench overlap --json` file per configuration set (named by its file
stem, e.g. reference_mlp.json), and PyTorch peer files from bench/ddp/torch_overlap_peer.py
named torch_<set>_ws<W>_<link>.json. Traces: merged scenario traces (`distlab run ...
--trace`) for the timeline pictures. reports/make_reports.sh runs all of it. Needs Debian's
python3-matplotlib (make_reports.sh installs it); never needed by the build or tests.
"""
import argparse
import datetime
import json
import os
import platform

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from overlap_report_targets import targets_section  # noqa: E402
from overlap_timeline import plot_timeline  # noqa: E402


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_runs(paths):
    """{set name: bench doc}, {(set, world, link): torch doc}."""
    runs, torch = {}, {}
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        doc = json.load(open(path))
        if "torch_version" in doc:
            set_name = name[len("torch_"):].rsplit("_ws", 1)[0]
            link = name.rsplit("_ws", 1)[1].split("_", 1)[1]
            torch[(set_name, doc["world_size"], link)] = doc
        else:
            runs[name] = doc
    return runs, torch


def torch_step(torch, set_name, row):
    doc = torch.get((set_name, row["world_size"], row["link"]))
    if not doc or row["hook"] != "none":
        return None
    for r in doc["rows"]:
        if abs(r["bucket_cap_mb"] - row["bucket_cap_mb"]) < 1e-9:
            return r["step_ms"]
    return None


def plot_bucket_sweep(set_name, doc, torch, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for ws, link in sorted({(r["world_size"], r["link"]) for r in doc["rows"]}):
        pts = sorted((r["bucket_cap_mb"], r["step_ms"], torch_step(torch, set_name, r))
                     for r in doc["rows"] if r["world_size"] == ws and r["link"] == link
                     and r["hook"] == "none" and not r["error"])
        if not pts:
            continue
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        label=f"distlab, world {ws}, {link}")
        tp = [(p[0], p[2]) for p in pts if p[2] is not None]
        if tp:
            ax.plot([p[0] for p in tp], [p[1] for p in tp], marker="x", linestyle="--",
                    color=line.get_color(), label=f"PyTorch, world {ws}, {link}")
    ax.set_xscale("log")
    ax.set_xlabel("bucket_cap_mb")
    ax.set_ylabel("step time (ms)")
    ax.set_title(f"DDP step time vs bucket size ({set_name})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_exposed(set_name, doc, path):
    ok = [r for r in doc["rows"] if not r["error"]]
    labels = [f'{r["world_size"]} {r["link"]} {r["hook"]} {r["bucket_cap_mb"]:g}' for r in ok]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1.5))
    y = range(len(ok))
    hidden = [r["comm_ms"] - r["exposed_comm_ms"] for r in ok]
    ax.barh(y, hidden, label="overlapped comm")
    ax.barh(y, [r["exposed_comm_ms"] for r in ok], left=hidden, label="exposed comm")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("communication per step (ms)")
    ax.set_title(f"Exposed and overlapped communication ({set_name})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def model_line(doc):
    if doc.get("model") == "gpt" and "gpt" in doc:
        g = doc["gpt"]
        return (f"GPT vocab {g['vocab']}, block {g['block']}, embd {g['embd']}, heads {g['heads']}, "
                f"layers {g['layers']} (untied head; batch = sequences of `block` tokens)")
    return f"{doc['model']} {doc['sizes']}"


def set_table(set_name, doc, torch):
    has_torch = any(k[0] == set_name for k in torch)
    head = ["world", "link", "hook", "bucket_mb", "step ms", "compute ms", "backward ms",
            "comm ms", "exposed ms", "exposed % of comm", "overlap (worst rank)",
            "exposed % from last arrival", "vs default"]
    if has_torch:
        head += ["PyTorch step ms", "distlab / PyTorch"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in doc["rows"]:
        cells = [str(r["world_size"]), r["link"], r["hook"], f'{r["bucket_cap_mb"]:g}']
        if r["error"]:
            lines.append("| " + " | ".join(cells + [f'failed: {r["error"][:80]}']) + " |")
            continue
        late = r.get("comm_after_arrival_ms", 0)
        cells += [f'{r["step_ms"]:.1f}', f'{r["compute_ms"]:.1f}', f'{r.get("backward_ms", 0):.1f}',
                  f'{r["comm_ms"]:.1f}', f'{r["exposed_comm_ms"]:.1f}',
                  f'{100 * r["exposed_comm_ms"] / r["comm_ms"]:.1f}' if r["comm_ms"] > 0 else "-",
                  f'{r["overlap_ratio"]:.3f}',
                  f'{100 * r.get("exposed_after_arrival_ms", 0) / late:.1f}' if late > 0 else "-",
                  f'{r["vs_default"]:.3f}']
        if has_torch:
            t = torch_step(torch, set_name, r)
            cells += [f"{t:.1f}" if t else "-", f'{r["step_ms"] / t:.2f}' if t else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_set(out, set_name, doc, torch, out_dir):
    plot_bucket_sweep(set_name, doc, torch, f"{out_dir}/overlap_{set_name}_sweep.png")
    plot_exposed(set_name, doc, f"{out_dir}/overlap_{set_name}_exposed.png")
    rounds = doc.get("rounds", 1)
    out.write(f"\n## {set_name}: {model_line(doc)}, batch {doc['batch_size']} per rank, "
              f"{doc['steps']} steps" +
              (f", each row the median of {rounds} interleaved rounds" if rounds > 1 else "") +
              "\n\n")
    links = ", ".join(f"{k} ({v['latency_us']:g} µs, {v['bandwidth_gbs']:g} GB/s)"
                      for k, v in doc["links"].items())
    device = doc.get("device", "cpu")
    where = ("Ranks on the GPU (CUDA tensors staged through pinned memory over shm; "
             "the device is named in reports/gpu.md)" if device == "cuda" else "Ranks on the CPU")
    out.write(f"Links: {links}. {where}. {doc['blas']}.\n\n")
    out.write(set_table(set_name, doc, torch) + "\n")
    if "tracing_overhead" in doc:
        t = doc["tracing_overhead"]
        cost = 100 * (t.get("pair_ratio_median",
                            t["traced_step_ms"] / t["untraced_step_ms"]) - 1)
        out.write(f'\nTracing overhead: step {t["traced_step_ms"]:.1f} ms traced vs '
                  f'{t["untraced_step_ms"]:.1f} ms untraced, traced / untraced per pair '
                  f'{cost:+.1f}% (medians of {t["runs"]} alternating pairs).\n')
    out.write(f"\n![step time vs bucket size](overlap_{set_name}_sweep.png)\n\n"
              f"![exposed communication](overlap_{set_name}_exposed.png)\n")


HOW_TO_READ = """
## How to read it

- Every row is one generated training scenario: real rank processes on the shm backend behind
  the link emulator (Note [Link emulation without CPU]: a collective completes no earlier than
  the alpha-beta model says, without taking CPU), traced (Note [Overlap metrics]). Times are
  means over ranks of the steps after two of warm-up; `overlap` is the worst rank's.
- `comm` is the union of collective spans, from start to completion. On a machine whose cores
  are shared it includes the shm backend's own copying and reduction and waiting for a slower
  peer, which the link model does not add. `exposed` is the part of it during which the rank
  computed nothing; `exposed % of comm` is over all ranks (means), `overlap` the worst rank's
  1 - exposed / comm. `exposed % from last arrival` cuts each collective's span to start when
  the last rank began it (Note [Waiting for the last rank]): what remains is communication
  proper, without waiting for a slower (here: descheduled) rank. `backward` is backward
  compute (waits excluded): a step's communication is "at most its backward compute" when
  comm <= backward.
- `hook none` rows are DDP's built-in allreduce at each bucket_cap_mb; `noop` is DDP without
  communication (the headroom); `fsdp:block` is FSDP with every Linear (GPT: every block) its
  own group with the implicit prefetches, `fsdp:block_no_prefetch` without them, `fsdp:root`
  one group. `vs default` is the step time over that of bucket_cap_mb 25 without a hook in the
  same world size and link.
- PyTorch columns: PyTorch's DDP (gloo, CPU, one intra-op thread like distlab's one BLAS
  thread) on the same model, batch and bucket caps, over the same modelled link through a comm
  hook (bench/ddp/torch_overlap_peer.py), timed the same way.
- The timelines show one step per rank: compute (blue), collectives (orange), waits (red),
  DDP/FSDP marks (gray).
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--trace-ddp")
    ap.add_argument("--trace-fsdp")
    ap.add_argument("--trace-bench")
    ap.add_argument("--command", default="reports/make_reports.sh overlap")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    runs, torch = load_runs(a.runs)
    if not runs:
        raise SystemExit("overlap_report: no `distlab bench overlap --json` file among the inputs")
    first = next(iter(runs.values()))
    out = open(f"{a.out_dir}/overlap.md", "w")
    out.write("# Communication/compute overlap (`distlab bench overlap`)\n\n")
    out.write(f"Machine: {cpu_model()}, {first.get('cores', '?')} cores. {first['blas']}. "
              f"Date: {datetime.date.today().isoformat()}.\n\nCommand: `{a.command}` "
              "(each set's `distlab bench overlap` flags are in reports/make_reports_parts.sh).\n")
    trace_bench = json.load(open(a.trace_bench)) if a.trace_bench else None
    ddp_trace = json.load(open(a.trace_ddp)) if a.trace_ddp else None
    out.write(targets_section(runs, trace_bench, ddp_trace))
    for name, doc in runs.items():
        write_set(out, name, doc, torch, a.out_dir)
    out.write("\n## One step of each\n\n")
    for kind, path in (("DDP", a.trace_ddp), ("FSDP", a.trace_fsdp)):
        png = f"overlap_timeline_{kind.lower()}.png"
        if path and plot_timeline(ddp_trace if kind == "DDP" else json.load(open(path)),
                                  f"{a.out_dir}/{png}", kind):
            out.write(f"![timeline of one {kind} step]({png})\n\n")
    out.write(HOW_TO_READ)
    out.close()


if __name__ == "__main__":
    main()
