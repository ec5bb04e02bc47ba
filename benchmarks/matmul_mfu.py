"""Matmul throughput and MFU per dtype on this machine (run by hand or `make bench`).

On a GPU in the hardware table, MFU is against its dense spec-sheet peak and the bf16
target from the issue applies: an 8192^3 bf16 matmul must reach >= 78% of dense peak on
H100/H200 (exit 1 otherwise). Elsewhere the peak is measured and only reported.

    python benchmarks/matmul_mfu.py [--sizes 1024 2048 4096 8192]
"""

from __future__ import annotations

import argparse
import sys

import torch

from lecture_utils import get_device
from lecture_utils.bench import matmul_flops_per_s, peak_flops
from lecture_utils.hardware import detect

BF16_TARGET = {"H100 SXM": 0.78, "H100 PCIe": 0.78, "H200": 0.78}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    args = parser.parse_args()
    device = get_device()
    gpu = detect(device) if device.type == "cuda" else None
    sizes = args.sizes or ([2048, 4096, 8192] if device.type == "cuda" else [256, 512, 1024])
    dtypes = ["fp32", "tf32", "bf16", "fp16"] if device.type == "cuda" else ["fp32", "bf16"]
    print(f"device: {torch.cuda.get_device_name() if device.type == 'cuda' else device.type}"
          f"  (table entry: {gpu.name if gpu else 'none, peaks measured'})")
    print(f"{'dtype':<6} {'n':>6} {'TFLOP/s':>9} {'MFU':>6}  peak source")
    failed = False
    for dtype in dtypes:
        peak = peak_flops(device, dtype, n=max(sizes))
        for n in sizes:
            rate = matmul_flops_per_s(n, dtype, device, min_run_time=0.5)
            print(f"{dtype:<6} {n:>6} {rate / 1e12:>9.2f} {rate / peak.flops_per_s:>6.1%}  {peak.source}")
        target = BF16_TARGET.get(gpu.name) if gpu and dtype == "bf16" else None
        if target is not None and rate / peak.flops_per_s < target:
            print(f"FAIL: bf16 {sizes[-1]}^3 reached {rate / peak.flops_per_s:.1%} < {target:.0%} of dense peak")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
