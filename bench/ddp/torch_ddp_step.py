#!/usr/bin/python3
"""PyTorch DDP (gloo, CPU): the anchor of bench/ddp/ddp_step_bench (--torch_script).

Usage: /usr/bin/python3 bench/ddp/torch_ddp_step.py WORLD

The protocol is ddp_step_bench's, step for step: the reference MLP 4 x [Linear(1024,1024),
ReLU], Linear(1024,10), seeded alike on every rank; 32 rows per rank drawn from a generator
seeded with the rank; cross-entropy; SGD lr 0.01; DDP with its defaults (bucket_cap_mb 25);
one intra-op thread per rank; 3 warm-up steps, then the mean of 20 timed steps on rank 0,
from zero_grad to the end of optimizer.step. Ranks are processes (spawn) on gloo over
loopback. Prints "local step_ms=X" (the same model and batch in this one process, no DDP)
and "ddp world=N step_ms=Y". Needs python3-torch (Debian); optional, never needed by build
or tests.
"""
import datetime
import os
import sys
import time

from torch_ranks import import_torch, run_ranks

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

WARMUP, STEPS, BATCH, WIDTH, DEPTH = 3, 20, 32, 1024, 4


def build_model(torch):
    torch.manual_seed(0)
    layers = []
    for _ in range(DEPTH):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, 10))


def mean_step_ms(torch, model, rank):
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(BATCH, WIDTH, generator=g)
    y = torch.randint(0, 10, (BATCH,), generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = torch.nn.CrossEntropyLoss()
    for i in range(WARMUP + STEPS):
        if i == WARMUP:
            t0 = time.perf_counter()
        opt.zero_grad()
        loss(model(x), y).backward()
        opt.step()
    return (time.perf_counter() - t0) / STEPS * 1e3


def rank_main(rank, world, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    ddp = torch.nn.parallel.DistributedDataParallel(build_model(torch))
    ms = mean_step_ms(torch, ddp, rank)
    if rank == 0:
        queue.put(ms)
    del ddp  # before the group goes (torch_overlap_peer.py says why)
    dist.destroy_process_group()


def parse_world(argv):
    if len(argv) != 1:
        raise SystemExit("usage: torch_ddp_step.py WORLD (an integer in [2, 64])")
    try:
        world = int(argv[0])
    except ValueError:
        raise SystemExit(f"torch_ddp_step.py: WORLD '{argv[0]}' is not an integer in [2, 64]")
    if not 2 <= world <= 64:
        raise SystemExit(f"torch_ddp_step.py: WORLD {world} is outside [2, 64]")
    return world


def main(argv):
    world = parse_world(argv)
    torch, _ = import_torch("torch_ddp_step.py")
    torch.set_num_threads(1)
    print(f"local step_ms={mean_step_ms(torch, build_model(torch), 0):.3f}", flush=True)
    results = run_ranks("torch_ddp_step.py", rank_main, world, (world,))
    if len(results) != 1:
        raise SystemExit(f"torch_ddp_step.py: expected rank 0's step time, got {results}")
    print(f"ddp world={world} step_ms={results[0]:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
