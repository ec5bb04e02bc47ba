"""Matmul throughput and MFU per dtype on this machine (run by hand or `make bench`).

MFU divides by a GPU's dense datasheet peak, or a CPU's nominal one (cores x clock x FLOP per
cycle, lecture_utils.hardware.cpu_spec); where there is no honest peak (MPS, a GPU missing from
the table, a dtype the CPU emulates) it says so and prints no MFU. The bf16 8192^3 figure is
compared with its target on a known GPU (docs/gpu/reference.md, `bf16-gemm-mfu`). Every timing
uses every physical core, and prints its spread. Exits 1 only on a gross regression.

    python benchmarks/matmul_mfu.py [--sizes 1024 2048 4096 8192] [--quick]
"""

from __future__ import annotations

import argparse
import sys

from _targets import machine, report

from lecture_utils import get_device
from lecture_utils.bench import mfu_text, peak_flops, time_matmul


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
    print(f"{'dtype':<6} {'n':>6} {'TFLOP/s':>9} {'spread':>7}  MFU")
    ok = True
    for dtype in dtypes:
        peak = peak_flops(device, dtype)
        print(f"{dtype} peak: " + (f"{peak.flops_per_s / 1e12:.4g} TFLOP/s, {peak.source}"
                                   if peak.flops_per_s else peak.source))
        for n in sizes:
            timing = time_matmul(n, dtype, device, min_run_time=seconds)
            rate = 2 * n**3 / timing.median
            print(f"{dtype:<6} {n:>6} {rate / 1e12:>9.3g} {f'±{timing.spread:.0%}':>7}  {mfu_text(rate, peak)}")
        if dtype == "bf16" and peak.kind != "datasheet":  # the target is for 8192^3 on a known GPU
            print("target bf16-gemm-mfu: not measured here (it needs a GPU with a datasheet peak)")
        elif dtype == "bf16":
            detail = f" at {n}^3 ({rate / 1e12:.3g} of {peak.flops_per_s / 1e12:.4g} TFLOP/s, {peak.source})"
            ok &= report("bf16-gemm-mfu", rate / peak.flops_per_s, where, detail)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
