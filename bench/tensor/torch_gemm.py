#!/usr/bin/env python3
"""The gemm_bench shapes in PyTorch, single-threaded, for side-by-side ratios.

Run with the same environment as gemm_bench:
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 bench/tensor/torch_gemm.py
Prints one JSON object: case -> {"ms": median wall milliseconds, "cpu_ms": median
thread-CPU milliseconds, "gflops": GFLOP/s on CPU time (as Google Benchmark's rate
counters, which divide by CPU time)}. CPU time keeps the ratio meaningful on a
loaded machine; everything runs on the calling thread with one BLAS thread.
"""
import json
import statistics
import time

import torch


def measure(fn, flops, min_time=1.0, repetitions=3):
    for _ in range(3):
        fn()
    wall, cpu = [], []
    for _ in range(repetitions):
        n, start, start_cpu = 0, time.perf_counter(), time.thread_time()
        while time.perf_counter() - start < min_time / repetitions:
            fn()
            n += 1
        wall.append((time.perf_counter() - start) / n)
        cpu.append((time.thread_time() - start_cpu) / n)
    t, c = statistics.median(wall), statistics.median(cpu)
    return {"ms": t * 1e3, "cpu_ms": c * 1e3, "gflops": flops / c / 1e9}


def main():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    out = {}
    for n in (256, 1024):
        a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
        out[f"mm_square_f32/{n}"] = measure(lambda: a.mm(b), 2 * n**3)
    a64, b64 = torch.randn(1024, 1024, dtype=torch.float64), torch.randn(1024, 1024, dtype=torch.float64)
    out["mm_square_f64/1024"] = measure(lambda: a64.mm(b64), 2 * 1024**3)
    x, w = torch.randn(32, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    out["linear_forward"] = measure(lambda: x.matmul(w.t()), 2 * 32 * 1024 * 1024)
    out["linear_grad_input"] = measure(lambda: x.matmul(w), 2 * 32 * 1024 * 1024)
    out["linear_grad_weight"] = measure(lambda: x.t().matmul(x), 2 * 32 * 1024 * 1024)
    print(json.dumps({"torch": torch.__version__, "cases": out}, indent=1))


if __name__ == "__main__":
    main()
