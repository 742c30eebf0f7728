#!/usr/bin/python3
"""PyTorch DDP (gloo, CPU) as the peer of `distlab bench overlap`: the same model, batch,
optimizer and bucket caps, over the same modelled link, timed the same way.

Usage:
  /usr/bin/python3 bench/ddp/torch_overlap_peer.py --world-size 2 --sizes 512,2048,2048,2048,16 \
      --batch-size 32 --steps 8 --caps 1,5,25 --latency-us 30 --bandwidth-gbs 1.25 \
      [--threads 1] [--json OUT]

Model: distlab's scenario "mlp" (emulator/workloads/training_model.hpp): Linear+ReLU layers of
widths sizes[0] -> sizes[1] (len(sizes) - 2 times) -> sizes[-1], an auxiliary head
Linear(out, out) on the output, loss mse(main, y) + 0.1 * mse(aux, y), y = x @ W_teacher;
SGD lr 0.001; `batch-size` rows per rank. Step time: mean over ranks of the steps after two of
warm-up, from zero_grad to the end of optimizer.step (as the scenario ranks record it).

The link (Note [Link emulation without CPU] in emulator/link/link_backend.hpp) is modelled by a
DDP comm hook: each bucket's allreduce runs on gloo at once, and the Future DDP waits on
completes no earlier than alpha + bytes * 2(n-1)/n / B after the later of its issue and the end
of the previous bucket's modelled transfer (a FIFO link). A timer thread completes it, so the
compute thread is never put to sleep. `--bandwidth-gbs 0 --latency-us 0` is no link model.

Threads: `--threads` intra-op threads per rank (default 1); run distlab's side with the same
OPENBLAS_NUM_THREADS (reports/make_reports.sh does). Needs python3-torch (Debian); optional, never needed by build or tests.
"""
import argparse
import heapq
import json
import os
import sys
import threading
import time

from torch_ranks import import_torch, run_ranks


def positive_list(text, kind, flag):
    try:
        values = [kind(v) for v in text.split(",")]
    except ValueError:
        raise SystemExit(f"{flag} '{text}': expected a comma list of numbers")
    if not values or any(not 0 < v < float("inf") for v in values):  # NaN fails too
        raise SystemExit(f"{flag} '{text}': every value must be a finite number > 0")
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--sizes", default="512,2048,2048,2048,16")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--caps", default="1,5,25")
    p.add_argument("--latency-us", type=float, default=0.0)
    p.add_argument("--bandwidth-gbs", type=float, default=0.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    if not 2 <= a.world_size <= 8:
        p.error("--world-size must be in [2, 8]")
    if a.batch_size < 1:
        p.error("--batch-size must be at least 1")
    if not 1 <= a.threads <= 256:
        p.error("--threads must be in [1, 256]")
    if a.steps < 3:
        p.error("--steps must be at least 3 (the first two are warm-up)")
    for flag, v in (("--latency-us", a.latency_us), ("--bandwidth-gbs", a.bandwidth_gbs)):
        if not (0 <= v < float("inf")):
            p.error(f"{flag} must be a finite number >= 0, got {v}")
    a.sizes = [int(v) for v in positive_list(a.sizes, int, "--sizes")]
    if len(a.sizes) < 2:
        p.error("--sizes needs at least an input and an output width")
    a.caps = positive_list(a.caps, float, "--caps")
    return a


class LinkTimer:
    """Completes Futures at modelled times on one thread (a FIFO link per process)."""

    def __init__(self, latency_us, bandwidth_gbs, world):
        self.alpha = latency_us * 1e-6
        self.beta = bandwidth_gbs * 1e9
        self.factor = 2.0 * (world - 1) / world  # allreduce bus factor
        self.free_at = 0.0
        self.heap, self.seq = [], 0
        self.cv = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def modelled_end(self, nbytes):
        transfer = self.alpha + (nbytes * self.factor / self.beta if self.beta > 0 else 0.0)
        with self.cv:
            start = max(time.monotonic(), self.free_at)
            self.free_at = start + transfer
            return self.free_at

    def complete_at(self, when, fut, value):
        with self.cv:
            self.seq += 1
            heapq.heappush(self.heap, (when, self.seq, fut, value))
            self.cv.notify()

    def _run(self):
        while True:
            with self.cv:
                while not self.heap or self.heap[0][0] > time.monotonic():
                    self.cv.wait(None if not self.heap else self.heap[0][0] - time.monotonic())
                _, _, fut, value = heapq.heappop(self.heap)
            fut.set_result(value)


def link_hook(torch, dist, timer):
    def hook(_state, bucket):
        buf = bucket.buffer()
        end = timer.modelled_end(buf.numel() * buf.element_size())
        out = torch.futures.Future()
        world = dist.get_world_size()

        def done(f):
            try:
                timer.complete_at(end, out, f.value()[0].div_(world))  # no earlier than both
            except Exception as e:  # a failed allreduce fails DDP's wait, never hangs it
                out.set_exception(e)

        dist.all_reduce(buf, async_op=True).get_future().then(done)
        return out
    return hook


def build(torch, sizes):
    nn = torch.nn
    layers, width = [], sizes[0]
    hidden = sizes[1] if len(sizes) > 2 else sizes[0]
    for _ in range(max(1, len(sizes) - 2)):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    layers.append(nn.Linear(width, sizes[-1]))
    body = nn.Sequential(*layers)
    aux = nn.Linear(sizes[-1], sizes[-1])
    return nn.ModuleDict({"body": body, "aux": aux})


def timed_steps(torch, ddp, args, rank):
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(args.batch_size, args.sizes[0], generator=g)
    teacher = torch.randn(args.sizes[0], args.sizes[-1], generator=torch.Generator().manual_seed(7))
    y = x @ teacher / args.sizes[0] ** 0.5
    opt = torch.optim.SGD(ddp.parameters(), lr=0.001)
    mse = torch.nn.functional.mse_loss
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        main, aux = ddp(x)
        (mse(main, y) + 0.1 * mse(aux, y)).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return sum(times[2:]) / len(times[2:]) * 1e3


def rank_main(rank, args, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(args.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size,
                            timeout=__import__("datetime").timedelta(seconds=120))
    timer = LinkTimer(args.latency_us, args.bandwidth_gbs, args.world_size)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.m = build(torch, args.sizes)

        def forward(self, x):
            h = self.m["body"](x)
            return h, self.m["aux"](h)

    for cap in args.caps:
        ddp = torch.nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=cap)
        if args.latency_us > 0 or args.bandwidth_gbs > 0:
            ddp.register_comm_hook(None, link_hook(torch, dist, timer))
        step_ms = timed_steps(torch, ddp, args, rank)
        queue.put((rank, cap, step_ms))
        # Before the group goes: a DDP torn down after destroy_process_group (when this
        # frame's locals go) hung one run in four at exit.
        del ddp
    dist.destroy_process_group()


def main(argv):
    args = parse_args(argv)
    torch, _ = import_torch("torch_overlap_peer")
    results = run_ranks("torch_overlap_peer", rank_main, args.world_size, (args,))
    per_cap = {}
    for _, cap, ms in results:
        per_cap.setdefault(cap, []).append(ms)
    rows = [{"bucket_cap_mb": cap, "step_ms": sum(v) / len(v)} for cap, v in sorted(per_cap.items())]
    doc = {"torch_version": torch.__version__, "world_size": args.world_size,
           "sizes": args.sizes, "batch_size": args.batch_size, "steps": args.steps,
           "latency_us": args.latency_us, "bandwidth_gbs": args.bandwidth_gbs,
           "threads": args.threads, "rows": rows}
    text = json.dumps(doc, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
