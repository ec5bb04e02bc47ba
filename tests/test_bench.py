import time

import pytest
import torch

from lecture_utils import bench


def test_time_fn_measures_a_known_sleep(capsys):
    seconds = bench.time_fn(time.sleep, 0.002, label="sleep 2 ms", min_run_time=0.05)
    assert 0.002 <= seconds < 0.006  # the median: a busy moment or two does not move it 3x
    assert capsys.readouterr().out.startswith("[measured] sleep 2 ms: ")


def test_time_fn_is_silent_without_a_label(capsys):
    bench.time_fn(torch.zeros, 10, min_run_time=0.01)
    assert capsys.readouterr().out == ""


def test_matmul_rate_is_flops_over_time(capsys, monkeypatch):
    timed = []

    def fake_time_fn(fn, a, b, min_run_time):  # what was timed, and a fixed time for it
        timed.append((fn, a.shape, a.dtype, b.shape))
        return 0.25

    monkeypatch.setattr(bench, "time_fn", fake_time_fn)
    rate = bench.matmul_flops_per_s(128, "bf16", "cpu", label="mm", min_run_time=0.02)
    assert rate == 2 * 128**3 / 0.25  # a matmul of n x n by n x n: 2 n^3 FLOPs
    assert timed == [(torch.matmul, (128, 128), torch.bfloat16, (128, 128))]
    assert capsys.readouterr().out == f"[measured] mm: {rate / 1e12:.3g} TFLOP/s\n"
    assert torch.get_float32_matmul_precision() == "highest"  # restored


@pytest.mark.parametrize(("args", "error", "match"), [
    ((64, "int8"), ValueError, "valid: fp32, tf32, bf16, fp16, fp8"),  # the dtype table's lookup
    ((64, "fp32", 3), TypeError, "str or torch.device"),  # get_device
    ((64, "fp32", "gpu"), ValueError, "valid types: cuda, mps, cpu"),
    ((64, "tf32", "cpu"), AssertionError, "tf32"),  # would time fp32 and call it tf32
])
def test_matmul_rate_takes_dtype_and_device_through_the_shared_lookups(args, error, match):
    with pytest.raises(error, match=match):
        bench.matmul_flops_per_s(*args)


def test_copy_bandwidth_counts_every_byte_read_and_written(monkeypatch):
    monkeypatch.setattr(bench, "time_fn", lambda fn, src, min_run_time: 0.5)
    assert bench.copy_bandwidth(8 * 2**20, "cpu", min_run_time=0.02) == 2 * 8 * 2**20 / 0.5


def test_peak_on_cpu_is_measured_and_labelled():
    peak = bench.peak_flops("cpu", "fp32", n=128, min_run_time=0.02)
    assert peak.is_measured and peak.source == "measured: best of 128^3 and 64^3 fp32 matmuls on cpu"
    assert peak.flops_per_s > 0


def test_peak_on_a_known_gpu_comes_from_the_table(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)  # "cuda" resolves to cuda:0
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    peak = bench.peak_flops(torch.device("cuda"), "bf16")
    assert (peak.flops_per_s, peak.is_measured) == (989.5e12, False)
    assert peak.source == "H100 SXM dense bf16 peak (spec sheet)"


def test_timing_leaves_the_global_random_generator_alone():
    """A notebook times on a GPU and on a CPU alike; its later draws must not shift between the two."""
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    bench.matmul_flops_per_s(32, "fp32", "cpu", min_run_time=0.01)
    bench.copy_bandwidth(2**16, "cpu", min_run_time=0.01)
    bench.peak_flops("cpu", "fp32", n=32, min_run_time=0.01)
    assert torch.equal(torch.rand(3), expected)
