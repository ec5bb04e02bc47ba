"""Matmul throughput and MFU per dtype on this machine (run by hand or `make bench`).

On a GPU in the hardware table, MFU is against its dense spec-sheet peak, and the bf16
8192^3 figure is compared with its target (docs/gpu/reference.md, `bf16-gemm-mfu`).
Elsewhere the peak is the best matmul measured here, so MFU only says how close each size
gets to it. Exits 1 only on a gross regression (below half the target).

    python benchmarks/matmul_mfu.py [--sizes 1024 2048 4096 8192] [--quick]
"""

from __future__ import annotations

import argparse
import sys

from _targets import machine, report

from lecture_utils import get_device
from lecture_utils.bench import matmul_flops_per_s, peak_flops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--quick", action="store_true", help="shorter timings (a rehearsal)")
    args = parser.parse_args()
    if args.sizes and min(args.sizes) < 1:
        parser.error(f"--sizes must be >= 1, got {min(args.sizes)}")
    device = get_device()
    where = machine(device)
    sizes = args.sizes or ([2048, 4096, 8192] if device.type == "cuda" else [256, 512, 1024])
    dtypes = ["fp32", "tf32", "bf16", "fp16"] if device.type == "cuda" else ["fp32", "bf16"]
    seconds = 0.1 if args.quick else 0.5
    print(f"device: {device} ({where})")
    print(f"{'dtype':<6} {'n':>6} {'TFLOP/s':>9} {'peak':>9} {'MFU':>6}  peak source")
    ok = True
    for dtype in dtypes:
        peak = peak_flops(device, dtype, n=max(sizes), min_run_time=seconds / 2)
        for n in sizes:
            rate = matmul_flops_per_s(n, dtype, device, min_run_time=seconds)
            print(f"{dtype:<6} {n:>6} {rate / 1e12:>9.2f} {peak.flops_per_s / 1e12:>9.2f} "
                  f"{rate / peak.flops_per_s:>6.1%}  {peak.source}")
        if dtype == "bf16":  # the target is for 8192^3 on a known GPU; elsewhere the line says so
            detail = f" at {n}^3 ({rate / 1e12:.3g} of {peak.flops_per_s / 1e12:.4g} TFLOP/s, {peak.source})"
            ok &= report("bf16-gemm-mfu", rate / peak.flops_per_s, where, detail)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
