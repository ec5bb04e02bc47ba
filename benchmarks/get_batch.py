"""get_batch throughput against the notes' list version, a plain np.stack version and the copy bound.

The bound: a batch must be written once as int64, 2 x B x T x 8 bytes (``get_batch``
returns ``x`` and ``y`` as the two contiguous halves of one tensor), at the measured memcpy
bandwidth: copying a 64 MiB int64 tensor, out of every cache, into fresh memory. The time to
clone a batch-sized tensor that sits in cache is printed too (a stricter, in-cache bound).
Every version is timed in the same rounds, interleaved, one thread; the figures are medians
over the rounds.

Targets (docs/gpu/reference.md, with their sources), at 64 x 1024 on the CPU:
`get-batch-vs-notes` and `get-batch-vs-bound`; on CUDA also `h2d-pinned-gbps`, pinned versus
pageable host-to-device copies. Each prints "met" or "missed"; the exit code is 1 only on
a gross regression (worse than half a target).

    python benchmarks/get_batch.py [--rounds 40] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import torch
from _targets import machine, report
from torch.utils import benchmark

from lecture_utils import get_device
from lecture_utils.bench import time_fn
from lecture_utils.data import data_dir, get_batch, get_batch_lecture, load_tokens
from lecture_utils.hardware import detect


def stack_version(data, batch_size, seq_len, generator):
    """The plain NumPy way: slice each window, np.stack them, widen to int64, split."""
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator).tolist()
    array = np.asarray(data)  # slicing the np.memmap subclass itself costs microseconds per slice
    windows = torch.from_numpy(np.stack([array[s:s + seq_len + 1] for s in starts]).astype(np.int64))
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def plain_bound(data, batch_size, seq_len, generator):
    """The least a batch costs, written plainly: gather the B windows of T+1 tokens (one fancy
    index), then widen x and y into int64 (two copies). get_batch does the same work."""
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator).numpy()
    rows = np.asarray(data)[starts[:, None] + np.arange(seq_len + 1)]
    return torch.from_numpy(rows[:, :-1].astype(np.int64)), torch.from_numpy(rows[:, 1:].astype(np.int64))


def paired(fns: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each function, one short block per function per round, interleaved
    (so a busy moment slows all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    timers = {name: benchmark.Timer("fn()", globals={"fn": fn}, num_threads=1) for name, fn in fns.items()}
    numbers = {name: max(1, int(0.01 / max(time_fn(fn, threads=1, min_run_time=0.05).median, 1e-7))) for name, fn in fns.items()}
    for _ in range(rounds):
        for name, timer in timers.items():
            times[name].append(timer.timeit(numbers[name]).median)
    return times


def median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def report_batches(data, batch: int, seq: int, rounds: int) -> tuple[float, float]:
    g, cpu = torch.Generator().manual_seed(0), torch.device("cpu")
    xy_int64 = torch.zeros(2, batch, seq, dtype=torch.int64)
    t = paired({
        "notes' list version": lambda: get_batch_lecture(data, batch, seq, "cpu"),
        "np.stack version": lambda: stack_version(data, batch, seq, g),
        "get_batch": lambda: get_batch(data, batch, seq, cpu, generator=g),
        "plain bound": lambda: plain_bound(data, batch, seq, g),
        "bound, in cache": xy_int64.clone,
    }, rounds)
    nbytes = xy_int64.numel() * 8
    big = torch.zeros(8 * 2**20, dtype=torch.int64)  # 64 MiB: out of every cache
    memcpy = big.numel() * 8 / time_fn(torch.empty_like(big).copy_, big, threads=1, min_run_time=0.2).median
    bound = nbytes / memcpy
    print(f"\n{batch} x {seq}, one thread, median of {rounds} paired rounds; memcpy (64 MiB) "
          f"{memcpy / 1e9:.1f} GB/s puts the bound, {nbytes:,} bytes, at {bound * 1e6:.1f} us; the same "
          f"bytes copied in cache: {nbytes / statistics.median(t['bound, in cache']) / 1e9:.1f} GB/s")
    for name, seconds in t.items():
        print(f"  {name:<22} {statistics.median(seconds) * 1e6:9.1f} us/batch")
    vs_notes = median_ratio(t["notes' list version"], t["get_batch"])
    vs_bound = statistics.median(t["get_batch"]) / bound
    vs_plain = median_ratio(t["get_batch"], t["plain bound"])
    print(f"  get_batch vs the notes' version: {vs_notes:.1f}x faster; "
          f"vs np.stack: {median_ratio(t['np.stack version'], t['get_batch']):.1f}x faster; "
          f"{vs_bound:.2f}x the memcpy bound, {median_ratio(t['get_batch'], t['bound, in cache']):.2f}x "
          f"the in-cache copy (2 B T x 8 bytes)")
    best = median_ratio(t["notes' list version"], t["bound, in cache"])
    print(f"  (cloning x and y's bytes alone is {best:.1f}x faster than the notes' version: "
          f"no get_batch returning them contiguous can do better)")
    print(f"  get_batch vs the plain bound (one gather, two widening copies): {vs_plain:.2f}x its time")
    return vs_notes, vs_bound, vs_plain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="8 rounds and one shape (a rehearsal)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    data = load_tokens(data_dir() / "tokens" / "train.bin")
    torch.set_num_threads(1)  # a sampler is one thread's work; a busy second core would add noise
    vs_notes, vs_bound, vs_plain = report_batches(data, 64, 1024, 8 if args.quick else args.rounds)
    if not args.quick:
        report_batches(data, 8, 128, args.rounds)
    device = get_device()
    where = machine(device)
    print()
    ok = report("get-batch-vs-notes", vs_notes, where, "x faster than the notes' version at 64 x 1024")
    ok &= report("get-batch-vs-bound", vs_bound, where, "x the copy bound at 64 x 1024")
    ok &= report("get-batch-vs-plain", vs_plain, where, "x the plain bound's time at 64 x 1024")
    if device.type == "cuda":
        host = torch.randint(0, 8192, (64, 1024 * 64), dtype=torch.int64)
        rates = {}
        for name, src in (("pageable", host), ("pinned", host.pin_memory())):
            seconds = time_fn(lambda s: s.to(device, non_blocking=True), src, threads=1, min_run_time=1.0).median
            rates[name] = src.numel() * src.element_size() / seconds / 1e9
            print(f"host-to-device copy, {name}: {rates[name]:.1f} GB/s")
        link = detect(device)
        detail = (f" GB/s ({rates['pinned'] / (link.host_bandwidth / 1e9):.0%} of the {link.host_bandwidth / 1e9:g} "
                  f"GB/s {link.name} host link, one direction)" if link else " GB/s")
        ok &= report("h2d-pinned-gbps", rates["pinned"], where, detail)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
