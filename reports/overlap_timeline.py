"""The timeline picture of one traced training step per rank (reports/overlap_report.py)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"compute": "tab:blue", "comm": "tab:orange", "wait": "tab:red", "mark": "tab:gray"}


def step_spans(events, t0, t1):
    """(track key, begin, duration, category) of the spans inside [t0, t1]."""
    spans, opened = [], {}
    for e in events:
        cat, ph = e.get("cat"), e["ph"]
        key = (e["pid"], e.get("tid"))
        if ph == "X" and cat in ("compute", "wait", "mark") and t0 <= e["ts"] <= t1:
            spans.append((key, e["ts"], e["dur"], cat))
        elif ph == "b" and cat == "comm":
            opened[(key, e.get("id"))] = e["ts"]
        elif ph == "e" and cat == "comm" and (key, e.get("id")) in opened:
            begin = opened.pop((key, e.get("id")))
            if t0 <= begin <= t1:
                spans.append((key, begin, e["ts"] - begin, "comm"))
    return spans


def plot_timeline(trace, path, kind, step_name="step 3"):
    """Draws `step_name` of every rank; False when the trace has no such step."""
    events = trace["traceEvents"]
    tracks = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    steps = [e for e in events if e.get("cat") == "step" and e["name"] == step_name]
    if not steps:
        return False
    t0 = min(s["ts"] for s in steps)
    t1 = max(s["ts"] + s["dur"] for s in steps)
    spans = step_spans(events, t0, t1)
    keys = sorted({s[0] for s in spans})
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(keys) + 1.5))
    for i, key in enumerate(keys):
        for k, ts, dur, cat in spans:
            if k == key:
                ax.broken_barh([((ts - t0) / 1000, max(dur, 1) / 1000)], (i - 0.4, 0.8),
                               color=COLORS[cat])
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"rank {k[0]} {tracks.get(k, k[1])}" for k in keys], fontsize=7)
    ax.set_xlabel(f"ms from the start of {step_name}")
    ax.set_title(f"One {kind} step: compute (blue), collectives (orange), waits (red), "
                 "marks (gray)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
