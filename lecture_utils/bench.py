"""Honest timing: torch.utils.benchmark (warm-up, CUDA synchronisation, median).

Every function returns seconds (or a rate) and, given a ``label``, prints one
``[measured]`` line, because timings depend on the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.utils.benchmark as benchmark

from lecture_utils.checks import measured
from lecture_utils.device import as_device
from lecture_utils.dtypes import as_dtype, spec_name
from lecture_utils.hardware import detect


def time_fn(fn, *args, label: str | None = None, min_run_time: float = 0.2) -> float:
    """Median seconds per call of ``fn(*args)``.

    ``blocked_autorange`` warms up, repeats until ``min_run_time`` has passed and, on
    CUDA, synchronises around each block so queued kernels are counted.
    """
    timer = benchmark.Timer(stmt="fn(*args)", globals={"fn": fn, "args": args},
                            num_threads=torch.get_num_threads())
    fn(*args)  # one call outside the timer: lazy init, allocator warm-up
    seconds = timer.blocked_autorange(min_run_time=min_run_time).median
    if label is not None:
        measured(label, seconds * 1e3, "ms")
    return seconds


def matmul_flops_per_s(n: int, dtype: str = "fp32", device="cpu", *, label: str | None = None,
                       min_run_time: float = 0.2) -> float:
    """Achieved FLOP/s of an ``n x n @ n x n`` matmul (2n^3 FLOPs) in ``dtype``.

    ``"tf32"`` means float32 tensors with TF32 tensor-core math (CUDA only; on other
    devices it is plain fp32 and the dtype is refused).
    """
    key = spec_name(dtype)
    device = as_device(device)
    assert key != "tf32" or device.type == "cuda", "tf32 is a CUDA tensor-core mode; elsewhere use fp32"
    # A private generator: timing must not move the global one (then a notebook's later random
    # draws would differ between a CPU and a GPU run, whose draws come from different generators).
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=as_dtype(key), generator=g)
    b = torch.randn(n, n, device=device, dtype=as_dtype(key), generator=g)
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if key == "tf32" else "highest")  # "high" = TF32
    try:
        seconds = time_fn(torch.matmul, a, b, min_run_time=min_run_time)
    finally:
        torch.set_float32_matmul_precision(previous)
    rate = 2 * n**3 / seconds
    if label is not None:
        measured(label, rate / 1e12, "TFLOP/s")
    return rate


def copy_bandwidth(n_bytes: int = 256 * 2**20, device="cpu", *, label: str | None = None,
                   min_run_time: float = 0.2) -> float:
    """Achieved bytes/s of ``dst.copy_(src)``: every byte read once and written once."""
    device = as_device(device)
    src = torch.full((n_bytes // 4,), 1.5, device=device)  # a copy's speed does not depend on the values
    dst = torch.empty_like(src)
    seconds = time_fn(dst.copy_, src, min_run_time=min_run_time)
    rate = 2 * src.numel() * 4 / seconds
    if label is not None:
        measured(label, rate / 1e9, "GB/s")
    return rate


@dataclass(frozen=True)
class Peak:
    """A peak FLOP/s and where it came from: a spec sheet, or a measurement here."""

    flops_per_s: float
    source: str
    is_measured: bool


def peak_flops(device, dtype: str = "bf16", *, n: int | None = None,
               min_run_time: float = 0.2) -> Peak:
    """The denominator for MFU on ``device``: the table's dense peak for a known GPU,
    otherwise the best measured FLOP/s of an ``n^3`` and an ``(n/2)^3`` matmul (CPU, MPS,
    GPUs not in the table). A measured peak is noisy: a later timing may beat it.
    """
    device = as_device(device)
    key = spec_name(dtype)
    acc = detect(device)
    if acc is not None:
        return Peak(acc.peak(key), f"{acc.name} dense {key} peak (spec sheet)", False)
    size = n or (8192 if device.type == "cuda" else 1024)
    rate = max(matmul_flops_per_s(s, key, device, min_run_time=min_run_time)
               for s in {max(size // 2, 1), size})
    return Peak(rate, f"measured: best of {size}^3 and {max(size // 2, 1)}^3 {key} matmuls "
                      f"on {device.type}", True)
