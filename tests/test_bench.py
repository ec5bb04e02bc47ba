"""lecture_utils.bench: the one timing discipline (torch.utils.benchmark), the conditions line, and
MFU's denominator (a datasheet's or a CPU's nominal peak, never a measurement)."""

import time

import pytest
import torch

from lecture_utils import bench, hardware


def test_time_fn_gives_the_median_its_spread_and_its_threads():
    timing = bench.time_fn(time.sleep, 0.002, threads=1, min_run_time=0.05)
    assert 0.002 <= timing.median < 0.006  # the median: a busy moment or two does not move it 3x
    assert timing.threads == 1 and timing.iqr >= 0 and timing.spread == timing.iqr / 2 / timing.median


def test_time_fn_warms_up_outside_the_clock():
    calls = []

    def first_call_slow():
        time.sleep(0.2 if not calls else 0.001)  # lazy initialisation on the first call only
        calls.append(1)

    assert bench.time_fn(first_call_slow, threads=1, min_run_time=0.02).median < 0.01


def test_time_fn_uses_every_physical_core_unless_told_one(monkeypatch):
    seen = []
    monkeypatch.setattr(torch.utils.benchmark.Timer, "__init__",
                        lambda self, *a, num_threads=1, **k: seen.append(num_threads) or None)
    monkeypatch.setattr(torch.utils.benchmark.Timer, "blocked_autorange",
                        lambda self, min_run_time: type("m", (), {"median": 1.0, "iqr": 0.0})())
    assert bench.time_fn(lambda: None).threads == bench.machine_threads()
    assert bench.time_fn(lambda: None, threads=1).threads == 1
    assert seen == [bench.machine_threads(), 1]
    assert bench.machine_threads() == min(hardware.cpu_spec().physical_cores, torch.get_num_threads())


def test_time_fn_waits_for_an_accelerator_around_its_blocks(monkeypatch):
    """torch.utils.benchmark synchronizes torch.accelerator (CUDA, MPS) around each block: the
    timing must go through it, not through a bare clock that a queued GPU kernel outruns."""
    waits = []
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a: waits.append(1))
    bench.time_fn(lambda: None, threads=1, min_run_time=0.01)
    assert len(waits) >= 2


def test_time_matmul_times_an_n_by_n_matmul_in_the_dtype_asked(monkeypatch):
    timed = []

    def fake_time_fn(fn, a, b, threads, min_run_time):  # what was timed
        timed.append((fn, a.shape, a.dtype, b.shape, threads))
        return bench.Timing(0.25, 0.0, 3)

    monkeypatch.setattr(bench, "time_fn", fake_time_fn)
    assert bench.time_matmul(128, "bf16", "cpu", threads=3, min_run_time=0.02) == bench.Timing(0.25, 0.0, 3)
    assert timed == [(torch.matmul, (128, 128), torch.bfloat16, (128, 128), 3)]
    assert torch.get_float32_matmul_precision() == "highest"  # restored


@pytest.mark.parametrize(("args", "error", "match"), [
    ((64, "int8"), ValueError, "valid: fp32, tf32, bf16, fp16, fp8"),  # the dtype table's lookup
    ((64, "fp32", 3), TypeError, "str or torch.device"),  # get_device
    ((64, "fp32", "gpu"), ValueError, "valid types: cuda, mps, cpu"),
    ((64, "tf32", "cpu"), AssertionError, "tf32"),  # would time fp32 and call it tf32
])
def test_time_matmul_takes_dtype_and_device_through_the_shared_lookups(args, error, match):
    with pytest.raises(error, match=match):
        bench.time_matmul(*args)


def test_a_cpu_peak_is_nominal_for_the_cores_a_timing_uses():
    spec = hardware.cpu_spec()
    peak = bench.peak_flops("cpu", "fp32", threads=1)
    assert peak.kind == "nominal" and peak.flops_per_s == spec.peak("fp32", 1)
    assert peak.source.startswith("nominal: 1 core x ")
    assert bench.peak_flops("cpu", "fp32").flops_per_s == spec.peak("fp32", bench.machine_threads())


def test_an_emulated_dtype_has_no_peak_and_so_no_mfu(monkeypatch):
    monkeypatch.setattr(bench, "cpu_spec", lambda: hardware.CpuSpec(
        2, 2.445e9, "AVX2", 2, 8, hardware.MappingProxyType({"fp32": 32}), "2 FMA pipes, assumed"))
    peak = bench.peak_flops("cpu", "bf16", threads=2)
    assert (peak.flops_per_s, peak.kind) == (None, None)
    assert bench.mfu_text(1e9, peak) == "no bf16 peak: this CPU has no bf16 units (AVX2), so bf16 is emulated: no MFU"


def _fake_gpu(monkeypatch, name):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)  # "cuda" resolves to cuda:0
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


def test_a_known_gpu_peak_comes_from_its_datasheet(monkeypatch):
    _fake_gpu(monkeypatch, "NVIDIA H100 80GB HBM3")
    peak = bench.peak_flops(torch.device("cuda"), "bf16")
    assert (peak.flops_per_s, peak.kind, peak.source) == (989.5e12, "datasheet", "H100 SXM dense bf16 (datasheet)")
    assert str(peak) == "990 TFLOP/s, H100 SXM dense bf16 (datasheet)"


def test_an_unknown_gpu_or_a_mac_has_no_peak_never_a_measured_one(monkeypatch):
    _fake_gpu(monkeypatch, "NVIDIA Mystery 9000")
    peak = bench.peak_flops(torch.device("cuda"), "bf16")
    assert bench.mfu_text(1e12, peak) == "no datasheet peak for NVIDIA Mystery 9000: no MFU"
    assert bench.peak_flops(torch.device("mps"), "fp32").flops_per_s is None
    assert str(peak) == "no datasheet peak for NVIDIA Mystery 9000"


@pytest.mark.parametrize(("achieved", "kind", "text"), [
    (0.5e12, "nominal", "MFU 0.50"),
    (0.999e12, "datasheet", "MFU 1.00"),  # rounds up in print, and is still below the peak
    (1e12, "datasheet", "no MFU: 1.00x the datasheet peak: the FLOP count is too high"),  # the peak itself
    (1.2e12, "nominal", "no MFU: 1.20x the nominal peak, which is too low: the cores run above the clock the OS reports"),
    (2e12, "datasheet", "no MFU: 2.00x the datasheet peak: the FLOP count is too high"),
])
def test_mfu_is_achieved_over_the_peak_and_never_one_or_more(achieved, kind, text):
    assert bench.mfu_text(achieved, bench.Peak(1e12, "a peak", kind)) == text


def _conditions(monkeypatch, capsys, *timings, percent=0.0, load=0.1, rising=()):
    """On a fake machine of 4 cores, 8 logical CPUs: psutil's busy percent (sampled over 0.2 s) and 1-minute load."""
    monkeypatch.setattr(bench, "cpu_spec", lambda: hardware.CpuSpec(4, None, "AVX2", 2, 8, hardware.MappingProxyType({}), ""))
    monkeypatch.setattr(bench.psutil, "cpu_count", lambda: 8)
    monkeypatch.setattr(bench.psutil, "cpu_percent", lambda interval: {0.2: percent}[interval])
    monkeypatch.setattr(bench.psutil, "getloadavg", lambda: (load, 9.0, 9.0))
    trusted = bench.conditions(*timings, rising=rising)
    return trusted, capsys.readouterr().out


T, UNRELIABLE = bench.Timing, "UNRELIABLE, the figures above may mislead: "


@pytest.mark.parametrize(("timings", "kwargs", "line"), [
    ((T(1.0, 0.04, 1),), {}, "reliable (0.0 of 4 cores busy elsewhere, load 0.1, spreads within ±2%)"),
    ((), {"percent": 37.5}, "reliable (3.0 of 4 cores busy elsewhere, load 0.1, spreads within ±0%)"),  # 1 thread
    ((T(1.0, 0.5, 4),), {"percent": 3.125, "load": 4.0, "rising": (15.0, 10.0, 12.0)},  # every limit met, none passed
     "reliable (0.2 of 4 cores busy elsewhere, load 4.0, spreads within ±25%)"),
    ((T(1.0, 0.0, 1),), {"percent": 12.5}, "reliable (1.0 of 4 cores busy elsewhere, load 0.1, spreads within ±0%)"),
    ((T(1.0, 0.0, 4),), {"percent": 12.5}, UNRELIABLE + "other processes busy on 1.0 of 4 cores, 4 threads timed"),
    ((T(1.0, 0.8, 1),), {"percent": 100.0, "load": 5.0, "rising": (10.0, 20.0, 5.0)},
     UNRELIABLE + "other processes busy on 8.0 of 4 cores, 1 thread timed; load average 5.0 > 4 cores; "
                  "a spread of ±40%; a larger size ran 4x slower than a smaller one"),
])
def test_the_conditions_line_says_whether_timings_can_be_trusted_and_why(monkeypatch, capsys, timings, kwargs, line):
    assert _conditions(monkeypatch, capsys, *timings, **kwargs) == (
        line.startswith("reliable"), f"[measured] timing conditions: {line}\n")


def test_timing_leaves_the_global_random_generator_alone():
    """A notebook times on a GPU and on a CPU alike; its later draws must not shift between the two."""
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    bench.time_matmul(32, "fp32", "cpu", min_run_time=0.01)
    bench.peak_flops("cpu", "fp32")
    assert torch.equal(torch.rand(3), expected)


def test_machine_threads_is_one_where_torch_runs_one(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert bench.machine_threads() == 1
