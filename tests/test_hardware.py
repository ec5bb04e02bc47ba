import pytest
import torch

from lecture_utils import hardware
from lecture_utils.hardware import ACCELERATORS, detect, lookup, match_device_name

REQUIRED = ["A100 SXM 80GB", "H100 SXM", "H100 PCIe", "H200", "B200", "MI300X", "RTX 4090", "L4"]


def test_table_has_the_required_accelerators():
    assert set(REQUIRED) <= set(ACCELERATORS)


def test_lecture_figures():
    """§1.1 and §3.4 of the notes: A100 19.5 / 312, H100 67 / 989.5 (= 1979 / 2)."""
    a100, h100 = lookup("A100"), lookup("H100")
    assert (a100.peak("fp32"), a100.peak("bf16")) == (19.5e12, 312e12)
    assert (h100.peak("fp32"), h100.peak("bf16")) == (67e12, 989.5e12)
    assert h100.sparse_flops["bf16"] == 1979e12
    assert h100.memory_bytes == 80e9


@pytest.mark.parametrize("name", REQUIRED)
def test_sparse_figures_are_twice_the_dense_ones(name):
    acc = ACCELERATORS[name]
    assert "fp32" not in acc.sparse_flops  # CUDA-core fp32 has no sparsity mode
    for dtype, sparse in acc.sparse_flops.items():
        assert sparse == pytest.approx(2 * acc.dense_flops[dtype], rel=2e-3), dtype


@pytest.mark.parametrize("name", REQUIRED)
def test_entries_are_sane(name):
    acc = ACCELERATORS[name]
    assert acc.peak("bf16") == acc.peak("fp16") > acc.peak("tf32") >= acc.peak("fp32") > 0
    assert acc.memory_bytes >= 24e9 and acc.hbm_bandwidth > 0 and acc.host_bandwidth > 0
    assert acc.source  # every figure cites its spec sheet
    assert acc.dense_flops is not acc.sparse_flops
    with pytest.raises(TypeError):
        acc.dense_flops["bf16"] = 0  # read-only


def test_a100_has_no_fp8():
    with pytest.raises(ValueError, match="has no fp8 peak; it has: fp32, tf32, bf16, fp16"):
        lookup("A100").peak("fp8")


@pytest.mark.parametrize(("name", "expected"), [
    ("h100", "H100 SXM"), ("H100 SXM5", "H100 SXM"), ("h100-pcie", "H100 PCIe"), ("A100", "A100 SXM 80GB"),
    ("rtx4090", "RTX 4090"), ("4090", "RTX 4090"), ("mi300x", "MI300X"), ("l4", "L4"), ("H200", "H200"),
])
def test_lookup_is_case_insensitive_with_aliases(name, expected):
    assert lookup(name).name == expected


def test_lookup_passes_entries_through():
    acc = ACCELERATORS["L4"]
    assert lookup(acc) is acc


def test_unknown_name_lists_close_matches():
    with pytest.raises(ValueError, match=r"unknown accelerator 'H1000'; did you mean .*H100 SXM"):
        lookup("H1000")
    with pytest.raises(ValueError, match="known: A100 SXM 80GB"):
        lookup("TPU v5e")
    with pytest.raises(TypeError):
        lookup(100)


@pytest.mark.parametrize(("dtype", "key"), [(torch.bfloat16, "bf16"), ("float16", "fp16"), ("FP32", "fp32"),
                                            (torch.float8_e4m3fn, "fp8")])
def test_peak_accepts_torch_dtypes_and_names(dtype, key):
    acc = lookup("H100")
    assert acc.peak(dtype) == acc.dense_flops[key]


@pytest.mark.parametrize(("bad", "error"), [("int8", ValueError), ("fp4", ValueError), (16, TypeError)])
def test_peak_rejects_unknown_dtypes(bad, error):
    with pytest.raises(error):
        lookup("H100").peak(bad)


@pytest.mark.parametrize(("device_name", "expected"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
    ("NVIDIA B200", "B200"),
    ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A100-PCIE-40GB", None),  # not in the table: measured peak instead
    ("NVIDIA L40S", None),
    ("NVIDIA H100 NVL", None),
    ("NVIDIA H200 NVL", None),
])
def test_cuda_device_names_map_to_entries(device_name, expected):
    acc = match_device_name(device_name)
    assert (acc.name if acc else None) == expected


def test_detect_on_cpu_is_none():
    assert detect("cpu") is None


def _fake_gpu(monkeypatch, name):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


def test_detect_unknown_gpu_says_so_instead_of_crashing(monkeypatch, capsys):
    _fake_gpu(monkeypatch, "NVIDIA Mystery 9000")
    assert detect(torch.device("cuda")) is None
    out = capsys.readouterr().out
    assert out.startswith("[measured] 'NVIDIA Mystery 9000' is not in the hardware table")


def test_detect_known_gpu(monkeypatch):
    _fake_gpu(monkeypatch, "NVIDIA H200")
    assert detect("cuda:0") is hardware.ACCELERATORS["H200"]


def test_detect_follows_the_device_policy(monkeypatch):
    """get_device decides: LECTURE_DEVICE=cpu on a GPU machine means no GPU peak."""
    _fake_gpu(monkeypatch, "NVIDIA H200")
    monkeypatch.setenv("LECTURE_DEVICE", "cpu")
    assert detect() is None
    monkeypatch.delenv("LECTURE_DEVICE")
    assert detect() is hardware.ACCELERATORS["H200"]
    with pytest.raises(ValueError, match="'cuda:3' does not exist"):
        detect("cuda:3")
