import pytest
import torch

from lecture_utils import hardware
from lecture_utils.hardware import ACCELERATORS, detect, find_accelerator, match_device_name


def test_entries_cite_a_source_are_read_only_and_a100_has_no_fp8():
    # the figures themselves: test_every_spec_sheet_number_of_every_entry, below
    for acc in ACCELERATORS.values():
        assert acc.source and acc.dense_flops is not acc.sparse_flops
        with pytest.raises(TypeError):
            acc.dense_flops["bf16"] = 0  # read-only
    with pytest.raises(ValueError, match="has no fp8 peak; it has: fp32, tf32, bf16, fp16"):
        find_accelerator("A100").peak("fp8")


@pytest.mark.parametrize(("name", "expected"), [
    ("h100", "H100 SXM"), ("H100 SXM5", "H100 SXM"), ("h100-pcie", "H100 PCIe"), ("A100", "A100 SXM 80GB"),
    ("rtx4090", "RTX 4090"), ("4090", "RTX 4090"), ("mi300x", "MI300X"), ("l4", "L4"), ("H200", "H200"),
])
def test_lookup_is_case_insensitive_with_aliases(name, expected):
    assert find_accelerator(name).name == expected


def test_lookup_passes_entries_through():
    acc = ACCELERATORS["L4"]
    assert find_accelerator(acc) is acc


def test_unknown_name_lists_close_matches():
    with pytest.raises(ValueError, match=r"unknown accelerator 'H1000'; did you mean .*H100 SXM"):
        find_accelerator("H1000")
    with pytest.raises(ValueError, match="known: A100 SXM 80GB"):
        find_accelerator("TPU v5e")
    with pytest.raises(TypeError):
        find_accelerator(100)


@pytest.mark.parametrize(("dtype", "key"), [(torch.bfloat16, "bf16"), ("float16", "fp16"), ("FP32", "fp32"),
                                            (torch.float8_e4m3fn, "fp8")])
def test_peak_accepts_torch_dtypes_and_names(dtype, key):
    acc = find_accelerator("H100")
    assert acc.peak(dtype) == acc.dense_flops[key]


@pytest.mark.parametrize(("bad", "error"), [("int8", ValueError), ("fp4", ValueError), (16, TypeError)])
def test_peak_rejects_unknown_dtypes(bad, error):
    with pytest.raises(error):
        find_accelerator("H100").peak(bad)


@pytest.mark.parametrize(("device_name", "expected"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
    ("NVIDIA B200", "B200"),
    ("AMD Instinct MI300X", "MI300X"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", None),  # not in the table: no datasheet peak, so no MFU
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA Mystery 9000", None),
])
def test_cuda_device_names_map_to_entries(device_name, expected):
    acc = match_device_name(device_name)
    assert (acc.name if acc else None) == expected


def test_detect_on_cpu_is_none():
    assert detect("cpu") is None


def _fake_gpu(monkeypatch, name):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)  # "cuda" resolves to cuda:0
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


def test_detect_unknown_gpu_is_none_and_silent(monkeypatch, capsys):
    """The caller says "no datasheet peak for ...: no MFU" (bench.peak_flops); detect itself prints nothing."""
    _fake_gpu(monkeypatch, "NVIDIA Mystery 9000")
    assert detect(torch.device("cuda")) is None
    assert capsys.readouterr().out == ""


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


# Every spec-sheet number of every entry, typed here from the datasheets (not from the
# table): dense TFLOP/s, sparse (2:4) TFLOP/s, memory GB, memory bandwidth GB/s, host link,
# host GB/s per direction. Dense tensor-core figures are the sheets' sparse ("*") figures
# halved; fp32 runs on CUDA cores and has no sparse figure. PCIe x16 per direction:
# Gen4 64 GB/s both ways -> 32, Gen5 128 GB/s both ways -> 64.
SPEC_SHEETS = {
    # NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB): FP32 19.5, TF32 156 (312*),
    # BF16/FP16 312 (624*), no FP8; HBM2e 2,039 GB/s; PCIe Gen4.
    "A100 SXM 80GB": ({"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
                      {"tf32": 312, "bf16": 624, "fp16": 624}, 80, 2039, "PCIe Gen4 x16", 32),
    # NVIDIA H100 Tensor Core GPU datasheet (SXM): FP32 67, TF32 989*, BF16/FP16 1,979*,
    # FP8 3,958*; 80 GB HBM3 at 3.35 TB/s; PCIe Gen5.
    "H100 SXM": ({"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
                 {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958}, 80, 3350, "PCIe Gen5 x16", 64),
    # NVIDIA H100 Tensor Core GPU datasheet (PCIe): FP32 51, TF32 756*, BF16/FP16 1,513*,
    # FP8 3,026*; 80 GB HBM2e at 2 TB/s; PCIe Gen5.
    "H100 PCIe": ({"fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5, "fp8": 1513},
                  {"tf32": 756, "bf16": 1513, "fp16": 1513, "fp8": 3026}, 80, 2000, "PCIe Gen5 x16", 64),
    # NVIDIA H200 Tensor Core GPU datasheet (SXM): H100 SXM compute; 141 GB HBM3e at 4.8 TB/s.
    "H200": ({"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
             {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958}, 141, 4800, "PCIe Gen5 x16", 64),
    # NVIDIA HGX B200 / DGX B200 datasheets, 8-GPU figures / 8: FP32 600 -> 75,
    # TF32 18 PF* -> 2.25 PF*, BF16/FP16 36 PF* -> 4.5 PF*, FP8 72 PF* -> 9 PF*;
    # 1,440 GB -> 180 GB HBM3e; 64 TB/s -> 8 TB/s.
    "B200": ({"fp32": 75, "tf32": 1125, "bf16": 2250, "fp16": 2250, "fp8": 4500},
             {"tf32": 2250, "bf16": 4500, "fp16": 4500, "fp8": 9000}, 180, 8000, "PCIe Gen5 x16", 64),
    # AMD Instinct MI300X accelerator datasheet: FP32 vector 163.4, TF32 653.7 (1307.4*),
    # BF16/FP16 1307.4 (2614.9*), FP8 2614.9 (5229.8*); 192 GB HBM3 at 5.3 TB/s.
    "MI300X": ({"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
               {"tf32": 1307.4, "bf16": 2614.9, "fp16": 2614.9, "fp8": 5229.8}, 192, 5300, "PCIe Gen5 x16", 64),
    # NVIDIA Ada GPU architecture whitepaper, RTX 4090 (FP32 accumulate): FP32 82.6,
    # TF32 82.6 (165.2*), BF16/FP16 165.2 (330.4*), FP8 330.3 (660.6*); 24 GB GDDR6X at
    # 1,008 GB/s; PCIe Gen4.
    "RTX 4090": ({"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
                 {"tf32": 165.2, "bf16": 330.4, "fp16": 330.4, "fp8": 660.6}, 24, 1008, "PCIe Gen4 x16", 32),
    # NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485*;
    # 24 GB GDDR6 at 300 GB/s; PCIe Gen4 x16 64 GB/s both ways.
    "L4": ({"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5},
           {"tf32": 120, "bf16": 242, "fp16": 242, "fp8": 485}, 24, 300, "PCIe Gen4 x16", 32),
    # NVIDIA A100 datasheet, the other three A100s: the 80GB SXM's compute; 40 GB HBM2 at
    # 1,555 GB/s (SXM and PCIe), 80 GB HBM2e at 1,935 GB/s (PCIe).
    "A100 SXM 40GB": ({"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
                      {"tf32": 312, "bf16": 624, "fp16": 624}, 40, 1555, "PCIe Gen4 x16", 32),
    "A100 PCIe 80GB": ({"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
                       {"tf32": 312, "bf16": 624, "fp16": 624}, 80, 1935, "PCIe Gen4 x16", 32),
    "A100 PCIe 40GB": ({"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
                       {"tf32": 312, "bf16": 624, "fp16": 624}, 40, 1555, "PCIe Gen4 x16", 32),
    # NVIDIA H100 datasheet, H100 NVL column (per GPU): FP32 60, TF32 835*, BF16/FP16 1,671*,
    # FP8 3,341*; 94 GB HBM3 at 3.9 TB/s; PCIe Gen5.
    "H100 NVL": ({"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
                 {"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, 94, 3900, "PCIe Gen5 x16", 64),
    # NVIDIA H200 datasheet, H200 NVL column: the H100 NVL's compute; 141 GB HBM3e at 4.8 TB/s.
    "H200 NVL": ({"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
                 {"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, 141, 4800, "PCIe Gen5 x16", 64),
    # NVIDIA L40S datasheet, dense | sparse*: FP32 91.6, TF32 183 | 366*, BF16/FP16 362.05 | 733*,
    # FP8 733 | 1,466*; 48 GB GDDR6 at 864 GB/s; PCIe Gen4 x16 64 GB/s both ways.
    "L40S": ({"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05, "fp8": 733},
             {"tf32": 366, "bf16": 733, "fp16": 733, "fp8": 1466}, 48, 864, "PCIe Gen4 x16", 32),
}


def test_every_spec_sheet_number_of_every_entry():
    """One table, typed from the datasheets: a changed figure (H100 PCIe fp32 51 -> 67,
    B200 memory 180 -> 192 GB, L4 bandwidth 300 -> 3000 GB/s) fails here by name."""
    assert set(ACCELERATORS) == set(SPEC_SHEETS)
    for name, (dense, sparse, memory_gb, hbm_gbs, link, link_gbs) in SPEC_SHEETS.items():
        acc = ACCELERATORS[name]
        assert dict(acc.dense_flops) == pytest.approx({k: v * 1e12 for k, v in dense.items()}, rel=1e-12), name
        assert dict(acc.sparse_flops) == pytest.approx({k: v * 1e12 for k, v in sparse.items()}, rel=1e-12), name
        assert acc.memory_bytes == pytest.approx(memory_gb * 1e9, rel=1e-12), name
        assert acc.hbm_bandwidth == pytest.approx(hbm_gbs * 1e9, rel=1e-12), name
        assert (acc.host_link, acc.host_bandwidth) == (link, pytest.approx(link_gbs * 1e9, rel=1e-12)), name


# --- a CPU's nominal peak: cores x clock x FLOP per cycle, read off the machine -------------


def _cpu(monkeypatch, *, isa, flags, vendor="GenuineIntel", family=6, cores=2, mhz=(2445.0, 0.0), darwin=False):
    """cpu_spec() on a machine described by hand: psutil's cores and clock, torch's capability,
    /proc/cpuinfo's flags."""
    hardware.cpu_spec.cache_clear()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: isa)
    monkeypatch.setattr(hardware, "_cpu_flags", lambda: (set(flags), vendor, family))
    monkeypatch.setattr(hardware.psutil, "cpu_count", lambda logical=True: cores)
    monkeypatch.setattr(hardware.psutil, "cpu_freq", lambda: None if mhz is None else
                        type("freq", (), {"current": mhz[0], "max": mhz[1]})())
    monkeypatch.setattr(hardware.platform, "system", lambda: "Darwin" if darwin else "Linux")
    monkeypatch.setattr(hardware.platform, "machine", lambda: "arm64" if darwin else "x86_64")
    return hardware.cpu_spec()


@pytest.fixture(autouse=True)
def _fresh_cpu_spec():
    hardware.cpu_spec.cache_clear()
    yield
    hardware.cpu_spec.cache_clear()


def test_a_zen3_with_avx2_is_two_cores_times_its_clock_times_32_fp32_flops_per_cycle(monkeypatch):
    """The issue's machine: 2 x 2.445 GHz x 32 (two 256-bit FMA pipes: 8 lanes x 2 FLOPs x 2) = 156 GFLOP/s."""
    spec = _cpu(monkeypatch, isa="AVX2", flags={"avx2", "fma"}, vendor="AuthenticAMD", family=25)
    assert spec.peak("fp32", 2) == pytest.approx(2 * 2.445e9 * 32)
    assert spec.describe("fp32", 2) == ("nominal: 2 cores x 2.44 GHz x 32 FLOP/cycle "
                                        "(AVX2 fp32, 2 FMA pipes, assumed)")


def test_a_dtype_without_native_units_has_no_peak_and_says_it_is_emulated(monkeypatch):
    spec = _cpu(monkeypatch, isa="AVX2", flags={"avx2", "fma"})
    assert spec.peak("bf16", 2) is None and spec.peak("fp16", 2) is None
    assert spec.describe("bf16", 2) == "no bf16 peak: this CPU has no bf16 units (AVX2), so bf16 is emulated"


@pytest.mark.parametrize(("isa", "flags", "vendor", "family", "fp32", "bf16"), [
    ("AVX512", {"avx512f", "avx512_bf16"}, "AuthenticAMD", 26, 64, 128),  # Zen 5: full 512-bit pipes
    ("AVX512", {"avx512f", "avx512_bf16"}, "AuthenticAMD", 25, 32, 64),  # Zen 4: 512-bit split in two
    ("AVX512", {"avx512f", "amx_bf16", "avx512_bf16"}, "GenuineIntel", 6, 64, 1024),  # AMX tiles
    ("AVX512", {"avx512f"}, "GenuineIntel", 6, 64, None),
])
def test_flops_per_cycle_follow_the_instruction_set_and_the_units(monkeypatch, isa, flags, vendor, family, fp32, bf16):
    spec = _cpu(monkeypatch, isa=isa, flags=flags, vendor=vendor, family=family)
    assert (spec.flops_per_cycle("fp32"), spec.flops_per_cycle("bf16")) == (fp32, bf16)


def test_apple_silicon_has_four_neon_pipes_and_the_os_maximum_clock_wins(monkeypatch):
    spec = _cpu(monkeypatch, isa="DEFAULT", flags={"bf16"}, cores=8, mhz=(2000.0, 3228.0), darwin=True)
    assert spec.flops_per_cycle("fp32") == 4 * 2 * 4  # 4 lanes x an FMA's 2 FLOPs x 4 pipes
    assert spec.peak("fp32", 8) == pytest.approx(8 * 3.228e9 * 32)


def test_no_clock_from_the_os_means_no_nominal_peak(monkeypatch):
    spec = _cpu(monkeypatch, isa="AVX2", flags=set(), mhz=None)
    assert spec.peak("fp32", 1) is None
    assert spec.describe("fp32", 1) == "no nominal peak: the OS reports no CPU clock"


def test_this_machine_is_read_without_error():
    spec = hardware.cpu_spec()
    assert spec.physical_cores >= 1 and spec.flops_per_cycle("fp32") >= 8
