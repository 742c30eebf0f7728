#!/usr/bin/env python3
"""Writes reports/collectives_shm.md from `distlab bench collectives --json` files.

    distlab bench collectives --world-size 2 --async --peer mpi,torch-gloo --json ws2.json
    distlab bench collectives --world-size 4 --async --peer mpi --json ws4.json
    bench/collectives/collectives_report.py ws2.json ws4.json > reports/collectives_shm.md
    bench/collectives/collectives_report.py --before old_ws2.json ws2.json ws4.json  # + before/after
    bench/collectives/collectives_report.py --plot busbw.png [--before ...] ws2.json ws4.json
    distlab bench collectives --world-size 2 --ops all_reduce --max-bytes 64K --async \
        --debug off,monitor,detail --peer mpi --json layers.json
    bench/collectives/collectives_report.py [...] --layers layers.json ws2.json ws4.json
    distlab bench collectives --world-size 2 \
        --ops all_reduce,all_gather_into_tensor,reduce_scatter_tensor,broadcast --min-bytes 64K --option shm.single_copy=on --option shm.single_copy_min_bytes=0 \
        --peer mpi --json single_copy.json
    bench/collectives/collectives_report.py [...] --single-copy single_copy.json ws2.json ws4.json
    distlab bench collectives --world-size 2 --rounds 3 --peer mpi --json all_ws2.json
    bench/collectives/collectives_report.py --all-ops all_ws2.json all_ws4.json \
        > reports/collectives_all_ops.md

Standard library only, but --plot (busbw vs size per backend, peer and path) needs matplotlib.

Ratios compare rows of one JSON file: one run, one set of conditions. A run with --rounds N
(Note [Bench rounds]) records each row's p50 per round; a ratio is then the median of the
per-round ratios (each from two sweeps run back to back), and the allreduce table gives their
range.
"""
import json
import platform
import statistics
import sys


def human(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift:
            return f"{n >> shift}{unit}"
    return str(n)


# The ops' names in runs made before the bench took torch.distributed's names; such files
# read as if written with the new names.
OLD_OP_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather_into_tensor",
                "reduce_scatter": "reduce_scatter_tensor", "alltoall": "all_to_all_single"}


def load(path):
    data = json.load(open(path))
    for r in data["rows"]:
        r["op"] = OLD_OP_NAMES.get(r["op"], r["op"])
    return data


def rows_by(data, backend, mode, op):
    return {r["bytes"]: r for r in data["rows"]
            if r["backend"] == backend and r.get("mode", "blocking") == mode and r["op"] == op
            and not r["error"]}


def round_ratios(num, den):
    """num/den per round when both rows carry the same number (>1) of rounds, else one ratio."""
    a, b = num.get("time_p50_us_rounds") or [], den.get("time_p50_us_rounds") or []
    if len(a) > 1 and len(a) == len(b):
        return [x / y for x, y in zip(a, b)]
    return [num["time_p50_us"] / den["time_p50_us"]]


def ratio(num, den):
    """The time ratio num/den: the median over rounds (Note [Bench rounds])."""
    return statistics.median(round_ratios(num, den))


def ratio_range(num, den):
    r = round_ratios(num, den)
    return f"{min(r):.2f}-{max(r):.2f}"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def verdict(size, blocking, asynchronous):
    """The issue's targets at world 2: blocking <= 1.0x MPI at every size; async <= 2x up to
    4 KiB and <= 1x from 256 KiB."""
    out = ["ok" if blocking <= 1.0 else "MISS"]
    if asynchronous is None:
        out.append("")
    elif size <= 4096:
        out.append("ok" if asynchronous <= 2.0 else "MISS")
    elif size >= 256 * 1024:
        out.append("ok" if asynchronous <= 1.0 else "MISS")
    else:
        out.append("-")
    return out


def allreduce_table(data, peers):
    blocking = rows_by(data, "shm", "blocking", "all_reduce")
    asyn = rows_by(data, "shm", "async", "all_reduce")
    peer_rows = {p: rows_by(data, p, "blocking", "all_reduce") for p in peers}
    head = ["size", "shm blocking (us)", "shm async (us)"] + [f"{p} (us)" for p in peers]
    rounds = data.get("rounds", 1)
    if "mpi" in peers:
        head += ["blocking / mpi", "async / mpi", "target blocking", "target async"]
        if rounds > 1:
            head += [f"blocking / mpi over {rounds} rounds", f"async / mpi over {rounds} rounds"]
    head += ["busbw blocking (GB/s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in sorted(blocking):
        b = blocking[size]
        a = asyn.get(size)
        cells = [human(size), f"{b['time_p50_us']:.2f}", f"{a['time_p50_us']:.2f}" if a else "-"]
        for p in peers:
            r = peer_rows[p].get(size)
            cells.append(f"{r['time_p50_us']:.2f}" if r else "-")
        if "mpi" in peers and size in peer_rows["mpi"]:
            m = peer_rows["mpi"][size]
            rb = ratio(b, m)
            ra = ratio(a, m) if a else None
            cells += [f"{rb:.2f}", f"{ra:.2f}" if ra is not None else "-"]
            cells += verdict(size, rb, ra)
            if rounds > 1:
                cells += [ratio_range(b, m), ratio_range(a, m) if a else "-"]
        cells.append(f"{b['busbw_GBps']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ops_in(data, skip=("all_reduce",)):
    """The ops of the run's shm rows, in the order the bench ran them."""
    ops = []
    for r in data["rows"]:
        if r["backend"] == "shm" and r["op"] not in ops and r["op"] not in skip:
            ops.append(r["op"])
    return ops


def other_ops_table(data, skip=("all_reduce",)):
    ops = ops_in(data, skip)
    sizes = [8 * 4, 4096, 256 * 1024, 4 << 20, 64 << 20]
    head = ["op"] + [f"{human(s)}: shm blocking / mpi" for s in sizes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op in ops:
        shm = rows_by(data, "shm", "blocking", op)
        mpi = rows_by(data, "mpi", "blocking", op)
        if not shm or not mpi:
            continue
        cells = [op]
        for s in sizes:
            near = min(shm, key=lambda k: abs(k - s))
            cells.append(f"{ratio(shm[near], mpi[near]):.2f}"
                         if near in mpi else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bound_line(data):
    """Note [shm large messages]: per rank, read N(1 + 2(n-1)/n) and write 2N bytes."""
    n = data["world_size"]
    rows = rows_by(data, "shm", "blocking", "all_reduce")
    if not rows:
        return ""
    size = max(rows)
    t = rows[size]["time_p50_us"] * 1e-6
    moved = size * (1 + 2 * (n - 1) / n) + 2 * size
    memcpy = data["memcpy_GBps"] * 1e9
    floor = moved / 2 / memcpy  # a memcpy of X bytes reads X and writes X
    return (f"all_reduce {human(size)} at world {n}: {rows[size]['busbw_GBps']:.2f} GB/s busbw = "
            f"{rows[size]['busbw_GBps'] * 1e9 / memcpy:.2f}x the run's memcpy "
            f"({data['memcpy_GBps']:.2f} GB/s). Each rank must read and write "
            f"{moved / 2**20:.0f} MiB (Note [shm large messages]), which takes "
            f"{floor * 1e3:.2f} ms at memcpy speed; the run took {t * 1e3:.2f} ms: "
            f"{floor / t:.2f} of that floor.")


def slowest_sizes(data):
    """Per op: how many sizes distlab is slower than Open MPI at, and the worst ratio."""
    head = ["op", "sizes", "slower than mpi at", "worst ratio (size)", "best ratio (size)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op in ops_in(data, skip=()):
        shm = rows_by(data, "shm", "blocking", op)
        mpi = rows_by(data, "mpi", "blocking", op)
        ratios = {s: ratio(shm[s], mpi[s]) for s in shm if s in mpi}
        if not ratios:
            continue
        worst = max(ratios, key=ratios.get)
        best = min(ratios, key=ratios.get)
        slower = sum(1 for r in ratios.values() if r > 1)
        lines.append(f"| {op} | {len(ratios)} | {slower} | {ratios[worst]:.2f} ({human(worst)}) "
                     f"| {ratios[best]:.2f} ({human(best)}) |")
    return "\n".join(lines)


def all_ops_report(paths):
    """--all-ops: every op against Open MPI, per world size (issue 36 item 1's table)."""
    print("# Every collective on the shm backend against Open MPI\n")
    print(f"Machine: {cpu_model()}, {__import__('os').cpu_count()} cores (shared), "
          f"{platform.system()} {platform.release()}. Generated by "
          "`bench/collectives/collectives_report.py --all-ops` from:\n")
    for p in paths:
        data = load(p)
        rounds = f"--rounds {data['rounds']} " if data.get("rounds", 1) > 1 else ""
        print(f"```\ndistlab bench collectives --world-size {data['world_size']} {rounds}"
              f"--peer mpi --json {__import__('os').path.basename(p)}\n```")
    print("\nEvery op of Note [Bench operations] (emulator/bench/bench_ops.hpp), 8 B to 64 MiB, "
          "p50 of the slowest rank per iteration, blocking path; Open MPI's rows time the MPI "
          "call that does the same (MPI has no list forms: all_gather, reduce_scatter and "
          "all_to_all time the flat calls). A ratio is distlab / Open MPI: <= 1 is no slower.")
    for p in paths:
        data = load(p)
        print(f"\n## World size {data['world_size']}\n")
        print(other_ops_table(data, skip=()))
        print("\nOver every size:\n")
        print(slowest_sizes(data))
    return 0


def before_after(before, after):
    """allreduce p50 before and after a change, each against Open MPI in its own run."""
    head = ["size", "blocking before (us)", "blocking after (us)", "async before (us)",
            "async after (us)", "blocking/mpi before", "blocking/mpi after", "async/mpi before",
            "async/mpi after"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = {}
    for tag, data in (("b", before), ("a", after)):
        rows[tag] = (rows_by(data, "shm", "blocking", "all_reduce"),
                     rows_by(data, "shm", "async", "all_reduce"),
                     rows_by(data, "mpi", "blocking", "all_reduce"))
    for size in sorted(set(rows["b"][0]) & set(rows["a"][0])):
        cells = [human(size)]
        for mode in (0, 1):
            for tag in ("b", "a"):
                r = rows[tag][mode].get(size)
                cells.append(f"{r['time_p50_us']:.2f}" if r else "-")
        for mode in (0, 1):
            for tag in ("b", "a"):
                r, m = rows[tag][mode].get(size), rows[tag][2].get(size)
                cells.append(f"{ratio(r, m):.2f}" if r and m else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def layers_table(data):
    """allreduce with each debug layer (series shm, shm+monitor, shm+detail) from one run."""
    names = [("off", "shm"), ("monitor", "shm+monitor"), ("detail", "shm+detail")]
    rows = {(layer, mode): rows_by(data, name, mode, "all_reduce")
            for layer, name in names for mode in ("blocking", "async")}
    mpi = rows_by(data, "mpi", "blocking", "all_reduce")
    head = ["size"] + [f"{layer} {mode} (us)" for mode in ("blocking", "async")
                       for layer, _ in names]
    head += ["mpi (us)", "monitor async / mpi", "DETAIL cost per op (us)",
             "DETAIL cost / monitored allreduce"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in sorted(rows[("off", "blocking")]):
        cells = [human(size)]
        for mode in ("blocking", "async"):
            for layer, _ in names:
                r = rows[(layer, mode)].get(size)
                cells.append(f"{r['time_p50_us']:.2f}" if r else "-")
        mon, det = rows[("monitor", "async")].get(size), rows[("detail", "async")].get(size)
        m = mpi.get(size)
        cells.append(f"{m['time_p50_us']:.2f}" if m else "-")
        cells.append(f"{ratio(mon, m):.2f}" if mon and m else "-")
        if mon and det:
            extra = det["time_p50_us"] - mon["time_p50_us"]
            cells += [f"{extra:.2f}", f"{extra / mon['time_p50_us']:.2f}"]
        else:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def layers_section(path):
    data = load(path)
    return (f"\n## Debug layers (world {data['world_size']}, one run: {', '.join(data['debug'])})\n\n"
            "The same allreduce on groups with no debug layer (*off*, as above), with the flight "
            "recorder and watchdog that `initProcessGroup` installs by default (*monitor*: the path "
            "DDP and FSDP run on), and with the DETAIL collective checks on top (*detail*), all in "
            "one run with Open MPI:\n```\n"
            f"distlab bench collectives --world-size {data['world_size']} --ops all_reduce "
            "--max-bytes 64K --async --debug off,monitor,detail --peer mpi "
            f"--json reports/{__import__('os').path.basename(path)}\n```\n"
            "*DETAIL cost per op* is detail minus monitor on the asynchronous path (DETAIL is "
            "installed on top of the monitor); the issue's target is at most 3x a small "
            "allreduce's latency, taken here as the monitored one.\n\n" + layers_table(data))


def single_copy_section(path, main_runs):
    """Note [shm single copy]: the forced single-copy run against the slots of the main run at
    the same world size, each as a ratio to the Open MPI rows of its own run."""
    sc = load(path)
    runs = [load(p) for p in main_runs]
    slots = next((d for d in runs if d["world_size"] == sc["world_size"]), None)
    opts = " ".join(f"--option {k}={v}" for k, v in sorted(sc.get("options", {}).items()))
    out = [f"\n## Single copy (world {sc['world_size']}: `{opts}`)\n",
           "Cross-memory attach reads each peer's tensor in place (one copy, through the kernel) "
           "instead of through a slot (two copies); Note [shm single copy] derives when it pays "
           "(the kernel's copy above 2/3 of memcpy's rate) and `shm.single_copy=auto` takes it "
           "only where the group measured that. Each path is a time ratio to the Open MPI rows "
           "of its own run (the slots: the main run above), blocking path, p50.\n"]
    head = ["op", "size", "single copy (us)", "single copy / mpi", "slots / mpi",
            "single copy / slots"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast"):
        one, mpi = rows_by(sc, "shm", "blocking", op), rows_by(sc, "mpi", "blocking", op)
        two = rows_by(slots, "shm", "blocking", op) if slots else {}
        mpi2 = rows_by(slots, "mpi", "blocking", op) if slots else {}
        for size in sorted(one):
            if size not in mpi:
                continue
            r1 = ratio(one[size], mpi[size])
            r2 = (ratio(two[size], mpi2[size])
                  if size in two and size in mpi2 else None)
            out.append(f"| {op} | {human(size)} | {one[size]['time_p50_us']:.1f} | {r1:.2f} | "
                       + (f"{r2:.2f} | {r1 / r2:.2f} |" if r2 else "- | - |"))
    return "\n".join(out)


def plot_busbw(paths, out_path):
    """allreduce bus bandwidth vs message size, per backend/peer and path, one panel per run."""
    import matplotlib  # only for --plot: python3-matplotlib (reports/make_reports.sh installs it)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(paths), figsize=(6 * len(paths), 4), squeeze=False)
    for ax, p in zip(axes[0], paths):
        data = load(p)
        series = sorted({(r["backend"], r.get("mode", "blocking")) for r in data["rows"]})
        for backend, mode in series:
            rows = rows_by(data, backend, mode, "all_reduce")
            if rows:
                sizes = sorted(rows)
                ax.plot(sizes, [rows[s]["busbw_GBps"] for s in sizes], marker=".",
                        label=f"{backend} {mode}")
        ax.axhline(data["memcpy_GBps"], color="gray", linestyle=":", label="memcpy (same run)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"all_reduce, world {data['world_size']}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_path, dpi=90)


def is_option_value(paths, p):
    """True when `p` follows an option (not a main run for the plot)."""
    i = paths.index(p)
    return i > 0 and paths[i - 1] in ("--before", "--layers", "--single-copy")


def main(paths):
    if paths and paths[0] == "--all-ops":
        return all_ops_report(paths[1:])
    before, plot_path = None, None
    if paths and paths[0] == "--plot":
        plot_path, paths = paths[1], paths[2:]
        plot_busbw([p for p in paths if p.endswith(".json") and not is_option_value(paths, p)],
                   plot_path)
    if paths and paths[0] == "--before":
        before = load(paths[1])
        paths = paths[2:]
    layers, single_copy = None, None
    if paths and paths[0] == "--layers":
        layers, paths = paths[1], paths[2:]
    if paths and paths[0] == "--single-copy":
        single_copy, paths = paths[1], paths[2:]
    print("# Collectives on the shm backend, with Open MPI and PyTorch gloo in the same run\n")
    print(f"Machine: {cpu_model()}, {__import__('os').cpu_count()} cores (shared), "
          f"{platform.system()} {platform.release()}. Generated by "
          "`bench/collectives/collectives_report.py` from these runs:\n")
    for p in paths:
        data = load(p)
        peers = sorted({r["backend"] for r in data["rows"]} - {"shm", "gloo"})
        rounds = f"--rounds {data['rounds']} " if data.get("rounds", 1) > 1 else ""
        print(f"```\ndistlab bench collectives --world-size {data['world_size']} --async {rounds}"
              f"--peer {','.join(peers)} --json reports/{__import__('os').path.basename(p)}\n```")
    if plot_path:
        print(f"\n![all_reduce bus bandwidth vs size]({__import__('os').path.basename(plot_path)})")
    print("\nCommentary on these figures (hand-written, dated): `collectives_shm_notes.md`.")
    for p in paths:
        data = load(p)
        peers = sorted({r["backend"] for r in data["rows"]} - {"shm", "gloo"})
        n = data["world_size"]
        print(f"\n## World size {n} (memcpy {data['memcpy_GBps']:.2f} GB/s in this run)\n")
        print("all_reduce, float32 SUM, p50 of the slowest rank per iteration. *blocking*: "
              "asyncOp=false, inline on the caller; *async*: asyncOp=true then Work::wait "
              "(the path DDP and FSDP use); peers run their blocking calls.\n")
        print(allreduce_table(data, peers))
        print("\n" + bound_line(data))
        if "mpi" in peers:
            print("\nOther collectives, time ratio shm (blocking) / Open MPI at sizes near:\n")
            print(other_ops_table(data))
        if before is not None and before["world_size"] == n:
            print(f"\n### Before and after (world {n}; each run with its own Open MPI rows)\n")
            print(before_after(before, data))
    if layers is not None:
        print(layers_section(layers))
    if single_copy is not None:
        print(single_copy_section(single_copy, paths))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
