#!/usr/bin/python3
"""The PyTorch side of `distlab bench collectives --peer torch-gloo`.

Times torch.distributed's collectives on the gloo backend (blocking calls): the ops of
Note [Bench operations] in emulator/bench/bench_ops.hpp, each named in --ops and in the
rows by its torch.distributed name as distlab's are (send_recv: isend to rank + 1 and
irecv from rank - 1), with the same
sizes, inputs, iteration rule and statistics as distlab's rows
(emulator/bench/collective_timer.cpp), and writes rank 0's rows as JSON.
Ranks are forked processes meeting through a FileStore next to --out.
An op gloo does not support (reduce_scatter_tensor, reduce_scatter) gives a row with the
error, as distlab's do.
"""
import argparse
import json
import os
import sys
import time


def input_values(torch, rank, count):
    i = torch.arange(count, dtype=torch.int64)
    return (((rank * 7 + i * 3) % 13) - 6).to(torch.float32)


def make_op(torch, dist, name, count, me, n):
    m = count // n
    if name == "all_reduce":
        t = input_values(torch, me, count)
        expected = sum(input_values(torch, r, count) for r in range(n))
        return (lambda: dist.all_reduce(t)), t, expected
    if name == "all_gather_into_tensor":
        src, out = input_values(torch, me, m), torch.empty(count)
        expected = torch.cat([input_values(torch, r, m) for r in range(n)])
        return (lambda: dist.all_gather_into_tensor(out, src)), out, expected
    if name == "reduce_scatter_tensor":
        src, out = input_values(torch, me, count), torch.empty(m)
        expected = sum(input_values(torch, r, count) for r in range(n))[me * m:(me + 1) * m]
        return (lambda: dist.reduce_scatter_tensor(out, src)), out, expected
    if name == "broadcast":
        t = input_values(torch, me, count)
        return (lambda: dist.broadcast(t, 0)), t, input_values(torch, 0, count)
    if name == "all_to_all_single":
        src, out = input_values(torch, me, count), torch.empty(count)
        expected = torch.cat([input_values(torch, r, count)[me * m:(me + 1) * m] for r in range(n)])
        return (lambda: dist.all_to_all_single(out, src)), out, expected
    return make_more_op(torch, dist, name, count, me, n)


def make_more_op(torch, dist, name, count, me, n):
    """The rooted ops, the list forms, barrier and send_recv (Note [Bench operations]
    in emulator/bench/bench_ops.hpp); a rank whose output is undefined checks nothing."""
    m = count // n
    if name == "reduce":
        t = input_values(torch, me, count)
        expected = sum(input_values(torch, r, count) for r in range(n)) if me == 0 else t
        return (lambda: dist.reduce(t, 0)), t, expected if me == 0 else None
    if name in ("all_gather", "gather"):
        src, out = input_values(torch, me, m), torch.empty(count)
        outs = list(out.split(m))
        expected = torch.cat([input_values(torch, r, m) for r in range(n)])
        if name == "all_gather":
            return (lambda: dist.all_gather(outs, src)), out, expected
        return ((lambda: dist.gather(src, outs if me == 0 else None, dst=0)), out,
                expected if me == 0 else None)
    if name == "scatter":
        src, out = input_values(torch, 0, count), torch.empty(m)
        ins = list(src.split(m)) if me == 0 else None
        return (lambda: dist.scatter(out, ins, src=0)), out, src[me * m:(me + 1) * m].clone()
    if name == "reduce_scatter":
        src, out = input_values(torch, me, count), torch.empty(m)
        expected = sum(input_values(torch, r, count) for r in range(n))[me * m:(me + 1) * m]
        return (lambda: dist.reduce_scatter(out, list(src.split(m)))), out, expected
    if name == "all_to_all":
        src, out = input_values(torch, me, count), torch.empty(count)
        expected = torch.cat([input_values(torch, r, count)[me * m:(me + 1) * m] for r in range(n)])
        return (lambda: dist.all_to_all(list(out.split(m)), list(src.split(m)))), out, expected
    if name == "barrier":
        return (lambda: dist.barrier()), None, None
    if name == "send_recv":
        src, out = input_values(torch, me, count), torch.empty(count)
        nxt, prev = (me + 1) % n, (me + n - 1) % n

        def run():
            sent = dist.isend(src, nxt)
            dist.irecv(out, prev).wait()
            sent.wait()
        return run, out, input_values(torch, prev, count)
    raise SystemExit(f"distlab_torch_gloo_peer: unknown op {name}")


def element_count(name, nbytes, n):
    """As distlab's benchElementCount (emulator/bench/bench_ops.cpp)."""
    if name == "barrier":
        return 0
    count = max(1, nbytes // 4)
    if name in ("all_reduce", "broadcast", "reduce", "send_recv"):
        return count
    return max(n, count - count % n)


def bus_factor(name, n):
    """As distlab's busBandwidthFactor (emulator/bench/bench_ops.cpp)."""
    if name == "all_reduce":
        return 2.0 * (n - 1) / n
    if name == "barrier":
        return 0.0
    if name in ("broadcast", "reduce", "send_recv"):
        return 1.0
    return (n - 1) / n


def bench_one(torch, dist, args, name, nbytes, me, n):
    count = element_count(name, nbytes, n)
    row = {"backend": "torch-gloo", "mode": "blocking", "op": name, "bytes": count * 4,
           "count": count, "iters": 0, "time_p50_us": 0, "time_avg_us": 0, "algbw_GBps": 0,
           "busbw_GBps": 0, "wrong": 0, "error": ""}
    run, out, expected = make_op(torch, dist, name, count, me, n)
    try:
        run()
    except RuntimeError as e:  # e.g. gloo: reduce_scatter_tensor not supported
        row["error"] = str(e).splitlines()[0]
        return row
    checked = expected is not None
    wrong = torch.tensor([int((out != expected).sum()) if checked else 0], dtype=torch.int64)
    dist.all_reduce(wrong)
    start = time.perf_counter()
    for _ in range(args.warmup):
        run()
    iters = args.iters
    if iters <= 0:
        per = (time.perf_counter() - start) / max(1, args.warmup)
        iters = int(min(max(0.2 / max(per, 1e-7), 5.0), 2000.0))
    it = torch.tensor([iters], dtype=torch.int64)
    dist.broadcast(it, 0)
    iters = int(it.item())
    dist.barrier()
    local = torch.empty(iters, dtype=torch.float64)
    for i in range(iters):
        t0 = time.perf_counter_ns()
        run()
        local[i] = (time.perf_counter_ns() - t0) / 1e3
    dist.all_reduce(local, op=dist.ReduceOp.MAX)
    times = sorted(local.tolist())
    p50 = times[iters // 2]
    factor = bus_factor(name, n)
    algbw = count * 4 / (p50 * 1e3)
    row.update(iters=iters, time_p50_us=p50, time_avg_us=sum(times) / iters, algbw_GBps=algbw,
               busbw_GBps=algbw * factor, wrong=int(wrong.item()))
    return row


def rank_main(me, args):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    store = dist.FileStore(args.out + ".store", args.world_size)
    dist.init_process_group("gloo", store=store, rank=me, world_size=args.world_size)
    n = args.world_size
    rows = []
    for name in args.ops.split(","):
        nbytes = args.min_bytes
        previous_count = None
        while nbytes <= args.max_bytes:
            # A size that rounds to the previous one's elements is that row
            # again (distlab's sweep skips it too: Note [Bench operations]).
            count = element_count(name, nbytes, n)
            if count != 0 and count == previous_count:
                nbytes *= 2
                continue
            previous_count = count
            row = bench_one(torch, dist, args, name, nbytes, me, n)
            rows.append(row)
            if row["error"] or name == "barrier":
                break  # the same for every size; barrier: one row
            nbytes *= 2
    if me == 0:
        with open(args.out, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--ops", required=True)
    p.add_argument("--min-bytes", type=int, required=True)
    p.add_argument("--max-bytes", type=int, required=True)
    p.add_argument("--iters", type=int, default=0)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if not 1 <= args.world_size <= 64 or not 1 <= args.min_bytes <= args.max_bytes:
        p.error("need 1 <= --world-size <= 64 and 1 <= --min-bytes <= --max-bytes")
    pids = []
    for me in range(args.world_size):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                rank_main(me, args)
            except BaseException as e:  # report, then leave without running the parent's code
                print(f"distlab_torch_gloo_peer: rank {me}: {e}", file=sys.stderr)
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        pids.append(pid)
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
