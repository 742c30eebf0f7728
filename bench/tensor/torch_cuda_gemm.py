#!/usr/bin/env python3
"""cuda_gemm_bench's measurement in PyTorch, the peer for side-by-side ratios.

  python3 bench/tensor/torch_cuda_gemm.py [--sizes 1024,4096] [--repeats 20] [--dtype f32|f64]

Square n x n products on cuda:0, each timed on the host around one product and
a synchronize (as cuda_gemm_bench does), median of --repeats after a warm-up.
TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False) so both sides do
IEEE fp32 arithmetic. Prints the same columns as cuda_gemm_bench.
"""
import argparse
import statistics
import sys
import time

import torch


def sizes_arg(text):
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes wants integers like 1024,4096, got {text!r}")
    if not sizes or any(n < 1 or n > 32768 for n in sizes):
        raise argparse.ArgumentTypeError("--sizes: each size must be in 1..32768")
    return sizes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=sizes_arg, default=[1024, 2048, 4096, 8192])
    p.add_argument("--repeats", type=int, default=20, choices=range(1, 10001), metavar="1..10000")
    p.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("torch_cuda_gemm: no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.float32 if a.dtype == "f32" else torch.float64
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    print(f"{'n':>6} {'median_ms':>10} {'TFLOP/s':>10}")
    for n in a.sizes:
        x = torch.randn(n, n, device="cuda", dtype=dtype)
        y = torch.randn(n, n, device="cuda", dtype=dtype)
        torch.mm(x, y)
        torch.cuda.synchronize()
        ms = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            torch.mm(x, y)
            torch.cuda.synchronize()
            ms.append((time.perf_counter() - t0) * 1e3)
        med = statistics.median(ms)
        print(f"{n:>6} {med:>10.3f} {2 * n ** 3 / (med * 1e-3) / 1e12:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
