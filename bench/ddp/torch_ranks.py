"""Starting PyTorch ranks for the DDP anchors in bench/ddp (torch_ddp_step.py and
torch_overlap_peer.py import it from their own folder).

run_ranks(name, target, world, extra_args) spawns `world` processes running
target(rank, *extra_args, port, queue) with a free loopback port for the rendezvous and a
queue for their results, waits for all of them for at most 600 s, and returns the queue's items.
A rank never outlives the caller (daemon processes, killed when a peer fails or the deadline
passes); a rank that fails, or the deadline, ends the caller with a message naming `name`
and the rank.
"""
import socket
import time

DEADLINE_S = 600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def import_torch(name):
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        raise SystemExit(f"{name}: PyTorch is not installed "
                         "(apt-get install python3-torch; run with /usr/bin/python3)")
    return torch, mp


def wait_for_ranks(name, procs, deadline):
    """Returns when every rank exited 0; a rank that fails ends the wait at once (its peers
    would block in their next collective until gloo's timeout), and so does the deadline."""
    from multiprocessing.connection import wait
    running = {p.sentinel: r for r, p in enumerate(procs)}
    while running:
        left = deadline - time.monotonic()
        ready = wait(list(running), timeout=max(0.0, left))
        if not ready:
            for p in procs:
                p.kill()
            raise SystemExit(f"{name}: ranks {sorted(running.values())} ran past {DEADLINE_S} s")
        for sentinel in ready:
            rank = running.pop(sentinel)
            procs[rank].join()
            if procs[rank].exitcode != 0:
                for p in procs:
                    p.kill()
                raise SystemExit(f"{name}: rank {rank} failed with exit code "
                                 f"{procs[rank].exitcode} (negative: the signal that ended it)")


def run_ranks(name, target, world, extra_args):
    _, mp = import_torch(name)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=target, args=(r, *extra_args, port, queue), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    wait_for_ranks(name, procs, time.monotonic() + DEADLINE_S)
    items = []
    while not queue.empty():
        items.append(queue.get())
    return items
