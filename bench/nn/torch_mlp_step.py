# PyTorch side of bench/nn/mlp_step_bench: the reference MLP training step with the
# protocol of the anchor script mlp_step_bench runs (--torch_script; local part: 3 warm-up steps,
# then the mean of 20), timed by wall clock and by process CPU time (the latter
# is robust on a loaded machine).
# usage: /usr/bin/python3 torch_mlp_step.py [HIDDEN] [LAYERS] [BATCH] [STEPS]
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import sys, time, torch, torch.nn as nn

def main():
    a = [int(v) for v in sys.argv[1:]] + [None] * 4
    h, layers, batch, steps = a[0] or 1024, a[1] or 4, a[2] or 32, a[3] or 20
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(h, h), nn.ReLU()]
    model = nn.Sequential(*mods, nn.Linear(h, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, h, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    lossf = nn.CrossEntropyLoss()
    for i in range(steps + 3):
        if i == 3:
            t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad()
        lossf(model(x), y).backward()
        opt.step()
    wall = (time.perf_counter() - t0) / steps * 1e3
    cpu = (time.process_time() - c0) / steps * 1e3
    print(f"torch {torch.__version__} wall_ms={wall:.3f} cpu_ms={cpu:.3f}", flush=True)

if __name__ == "__main__":
    main()
