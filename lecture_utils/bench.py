"""The timing discipline, in one home, and the peak that MFU divides by.

``time_fn`` times with ``torch.utils.benchmark``: a warm-up call, then ``blocked_autorange``,
which synchronizes CUDA and MPS around each block and repeats until a minimum run time has
passed; it returns the median *and* the spread, on a thread count chosen and reported. One
thread where a lesson compares two kernels (a second thread only adds noise, and on a busy
laptop far more than noise); every physical core where it measures the machine (a peak, an MFU).

``peak_flops`` is MFU's denominator: a GPU's datasheet peak, or a CPU's nominal one (cores x
clock x FLOP per cycle). Never a measurement: a rate divided by the best rate measured is not
a utilisation, and it is at most 1 by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil
import torch
import torch.utils.benchmark as benchmark

from lecture_utils.checks import measured
from lecture_utils.device import as_device
from lecture_utils.dtypes import as_dtype, spec_name
from lecture_utils.hardware import cpu_spec, detect
from lecture_utils.language import _

UNRELIABLE_SPREAD = 0.25  # ± a quarter of the median: a timing that noisy says little
SLOWER_BY = 1.5  # a larger size this much slower than a smaller one is noise, not the kernel


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of ``blocked_autorange``'s blocks, their interquartile range,
    and the intra-op threads it ran on."""

    median: float
    iqr: float
    threads: int

    @property
    def spread(self) -> float:
        """Half the interquartile range over the median: the median ± this fraction."""
        return self.iqr / 2 / self.median


def machine_threads() -> int:
    """Every physical core, as far as torch may use them (``OMP_NUM_THREADS`` caps it, as under
    ``make test``, where two test workers share two cores)."""
    return max(1, min(cpu_spec().physical_cores, torch.get_num_threads()))


def time_fn(fn, *args, threads: int | None = None, min_run_time: float = 0.2) -> Timing:
    """Time ``fn(*args)``: ``threads=1`` to compare kernels, None (every physical core) to
    measure the machine."""
    threads = threads or machine_threads()
    timer = benchmark.Timer(stmt="fn(*args)", globals={"fn": fn, "args": args}, num_threads=threads)
    fn(*args)  # one call outside the timer: lazy initialisation, allocator warm-up, kernel choice
    blocks = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(blocks.median, blocks.iqr, threads)


def time_matmul(n: int, dtype: str = "fp32", device="cpu", *, threads: int | None = None,
                min_run_time: float = 0.2) -> Timing:
    """Time an ``n x n @ n x n`` matmul (2n^3 FLOPs) in ``dtype`` on random inputs.

    ``"tf32"`` means float32 tensors with TF32 tensor-core math (CUDA only).
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
        return time_fn(torch.matmul, a, b, threads=threads, min_run_time=min_run_time)
    finally:
        torch.set_float32_matmul_precision(previous)


def conditions(*timings: Timing, rising: list[float] | tuple[float, ...] = ()) -> bool:
    """Print one line on whether ``timings`` can be trusted, and return it.

    Untrusted: other processes leave fewer cores than the timings used (the CPU they take in a
    0.2 s sample right after, while this process is idle; threads that wait for a busy core
    stall the rest: two threads on two shared cores can run 10x slower than one), the machine
    is busier than its cores (the 1-minute load average), a spread over ±25%, or ``rising``
    (rates in order of size, which should rise) falling by more than 1.5x. A cell asserts on
    timings only when this is True, so noise never fails it; the line says why a figure may mislead.
    """
    cores, reasons = cpu_spec().physical_cores, []
    others = psutil.cpu_percent(interval=0.2) / 100 * (psutil.cpu_count() or cores)
    needed = max((t.threads for t in timings), default=1)
    if needed > cores - others + 0.25:
        reasons.append(_("other processes busy on {others} of {cores} cores, {needed} timed").format(
            others=f"{others:.1f}", cores=cores,
            needed=_("1 thread") if needed == 1 else _("{n} threads").format(n=needed)))
    load = psutil.getloadavg()[0]
    if load > cores:
        reasons.append(_("load average {load} > {cores} cores").format(load=f"{load:.1f}", cores=cores))
    worst = max((t.spread for t in timings), default=0.0)
    if worst > UNRELIABLE_SPREAD:
        reasons.append(_("a spread of ±{spread}").format(spread=f"{worst:.0%}"))
    drops = [later / earlier for earlier, later in zip(rising, rising[1:], strict=False) if later * SLOWER_BY < earlier]
    if drops:
        reasons.append(_("a larger size ran {times}x slower than a smaller one").format(times=f"{1 / min(drops):.3g}"))
    measured("timing conditions", _("UNRELIABLE, the figures above may mislead: ") + _("; ").join(reasons) if reasons
             else _("reliable ({others} of {cores} cores busy elsewhere, load {load}, spreads within ±{worst})").format(
                 others=f"{others:.1f}", cores=cores, load=f"{load:.1f}", worst=f"{worst:.0%}"))
    return not reasons


@dataclass(frozen=True)
class Peak:
    """MFU's denominator: ``flops_per_s`` and where it comes from (``kind``: "datasheet" or
    "nominal"), or None and ``source`` says why there is no honest one (then there is no MFU)."""

    flops_per_s: float | None
    source: str
    kind: str | None

    def __str__(self) -> str:
        return self.source if self.flops_per_s is None else f"{self.flops_per_s / 1e12:.3g} TFLOP/s, {self.source}"


def peak_flops(device, dtype: str = "bf16", *, threads: int | None = None) -> Peak:
    """The dense peak for ``dtype`` on ``device``: a known GPU's datasheet figure; on a CPU the
    nominal peak of the cores a timing on ``threads`` threads uses (default: every physical core).
    None, with the reason, for a GPU missing from the table, MPS, and a dtype a CPU emulates."""
    device = as_device(device)
    key = spec_name(dtype)
    if device.type == "cuda":
        acc = detect(device)
        if acc is None:
            return Peak(None, _("no datasheet peak for {name}").format(name=torch.cuda.get_device_name(device)), None)
        return Peak(acc.peak(key), _("{name} dense {dtype} (datasheet)").format(name=acc.name, dtype=key), "datasheet")
    if device.type != "cpu":
        return Peak(None, _("no datasheet peak for {name}").format(name=device.type), None)
    spec, cores = cpu_spec(), min(threads or machine_threads(), cpu_spec().physical_cores)
    value = spec.peak(key, cores)
    return Peak(value, spec.describe(key, cores), "nominal" if value is not None else None)


def mfu_text(achieved: float, peak: Peak) -> str:
    """``"MFU 0.56"`` (achieved FLOP/s over the peak), or the reason there is none: no honest
    peak (``"no datasheet peak for ...: no MFU"``), or a rate above a nominal peak (the nominal is then wrong: usually the clock,
    which turbo boost raises above what the OS reports)."""
    if peak.flops_per_s is None:
        return _("{why}: no MFU").format(why=peak.source)
    ratio = achieved / peak.flops_per_s
    if ratio < 1:
        return f"MFU {ratio:.2f}"
    if peak.kind == "nominal":
        return _("no MFU: {ratio}x the nominal peak, which is too low: the cores run above the clock the OS "
                 "reports").format(ratio=f"{ratio:.2f}")
    return _("no MFU: {ratio}x the datasheet peak: the FLOP count is too high").format(ratio=f"{ratio:.2f}")
