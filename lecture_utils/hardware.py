"""Accelerator spec sheets: dense peak FLOP/s per dtype, memory and bandwidth.

Every peak here is *dense*. Spec sheets headline the structured-sparsity figure
(NVIDIA's "2:4": two of every four weights zero; the notes say "2:1"), e.g. H100 SXM
"1979 TFLOP/s" bf16, which dense matmuls never reach; those figures are kept
separately in ``sparse_flops`` and labelled. §1.1 of the notes: divide by two.

Units: FLOP/s, bytes, bytes/s. Host links are per direction (spec sheets quote PCIe
x16 bandwidth for both directions together, e.g. "PCIe Gen5 128 GB/s" = 64 + 64).
"""

from __future__ import annotations

import difflib
import functools
import os
import platform
import re
import subprocess
from dataclasses import dataclass, field
from types import MappingProxyType

import psutil
import torch

from lecture_utils import validate
from lecture_utils.device import as_device
from lecture_utils.dtypes import spec_name
from lecture_utils.language import _

T = 1e12
GB = 1e9


@dataclass(frozen=True)
class Accelerator:
    name: str
    dense_flops: MappingProxyType  # dtype -> FLOP/s, dense (no sparsity)
    sparse_flops: MappingProxyType  # dtype -> FLOP/s with 2:4 sparsity: marketing only
    memory_bytes: float
    hbm_bandwidth: float  # bytes/s
    host_link: str
    host_bandwidth: float  # bytes/s, one direction
    source: str
    device_names: tuple[str, ...] = field(default=())  # regexes for torch.cuda.get_device_name

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype`` (fp32, tf32, bf16, fp16, fp8)."""
        key = spec_name(dtype)
        if key not in self.dense_flops:
            raise ValueError(f"{self.name} has no {key} peak; it has: {', '.join(self.dense_flops)}")
        return self.dense_flops[key]



def _gpu(name, dense, sparse, memory, hbm, link, link_bw, source, device_names):
    return Accelerator(name, MappingProxyType({k: v * T for k, v in dense.items()}),
                       MappingProxyType({k: v * T for k, v in sparse.items()}),
                       memory * GB, hbm * GB, link, link_bw * GB, source, device_names)


# Dense figures are the spec sheets' sparse tensor-core figures halved, except fp32,
# which runs on CUDA cores (no sparsity). TFLOP/s, GB, GB/s.
ACCELERATORS: dict[str, Accelerator] = {a.name: a for a in [
    # NVIDIA A100 datasheet (SXM 80GB): FP32 19.5, TF32 156 (312*), BF16/FP16 312 (624*);
    # HBM2e 2,039 GB/s; PCIe Gen4 64 GB/s both ways. No fp8.
    _gpu("A100 SXM 80GB", {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
         {"tf32": 312, "bf16": 624, "fp16": 624}, 80, 2039, "PCIe Gen4 x16", 32,
         "NVIDIA A100 Tensor Core GPU datasheet", (r"A100.*SXM.*80", r"A100-SXM4-80GB")),
    # The same datasheet's other three A100s: the same compute; HBM2 40 GB at 1,555 GB/s (SXM and
    # PCIe), HBM2e 80 GB at 1,935 GB/s (PCIe).
    _gpu("A100 SXM 40GB", {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
         {"tf32": 312, "bf16": 624, "fp16": 624}, 40, 1555, "PCIe Gen4 x16", 32,
         "NVIDIA A100 Tensor Core GPU datasheet", (r"A100.*SXM.*40",)),
    _gpu("A100 PCIe 80GB", {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
         {"tf32": 312, "bf16": 624, "fp16": 624}, 80, 1935, "PCIe Gen4 x16", 32,
         "NVIDIA A100 Tensor Core GPU datasheet", (r"A100.*80GB.*PCIe", r"A100.*PCIE.*80")),
    _gpu("A100 PCIe 40GB", {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
         {"tf32": 312, "bf16": 624, "fp16": 624}, 40, 1555, "PCIe Gen4 x16", 32,
         "NVIDIA A100 Tensor Core GPU datasheet", (r"A100.*PCIE.*40", r"A100.*40GB.*PCIe")),
    # NVIDIA H100 datasheet (SXM): FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958*
    # (* = with sparsity); HBM3 3.35 TB/s; PCIe Gen5 128 GB/s both ways.
    _gpu("H100 SXM", {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
         {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958}, 80, 3350, "PCIe Gen5 x16", 64,
         "NVIDIA H100 Tensor Core GPU datasheet", (r"H100 80GB HBM3", r"H100.*SXM")),
    # Same datasheet, PCIe card: FP32 51, TF32 756*, BF16/FP16 1,513*, FP8 3,026*;
    # HBM2e 2 TB/s.
    _gpu("H100 PCIe", {"fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5, "fp8": 1513},
         {"tf32": 756, "bf16": 1513, "fp16": 1513, "fp8": 3026}, 80, 2000, "PCIe Gen5 x16", 64,
         "NVIDIA H100 Tensor Core GPU datasheet", (r"H100 PCIe",)),
    # Same datasheet, H100 NVL (per GPU of the NVLink-bridged pair): FP32 60, TF32 835*,
    # BF16/FP16 1,671*, FP8 3,341*; 94 GB HBM3 at 3.9 TB/s; PCIe Gen5 128 GB/s both ways.
    _gpu("H100 NVL", {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
         {"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, 94, 3900, "PCIe Gen5 x16", 64,
         "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL)", (r"H100 NVL",)),
    # NVIDIA H200 datasheet (SXM): H100 SXM's compute; 141 GB HBM3e at 4.8 TB/s.
    _gpu("H200", {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
         {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958}, 141, 4800, "PCIe Gen5 x16", 64,
         "NVIDIA H200 Tensor Core GPU datasheet", (r"H200(?!.*NVL)",)),
    # The H200 datasheet's NVL column: FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*;
    # 141 GB HBM3e at 4.8 TB/s; PCIe Gen5 128 GB/s both ways.
    _gpu("H200 NVL", {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
         {"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, 141, 4800, "PCIe Gen5 x16", 64,
         "NVIDIA H200 Tensor Core GPU datasheet (H200 NVL)", (r"H200 NVL",)),
    # NVIDIA HGX B200 (8-GPU board) figures divided by 8: FP32 600 -> 75, TF32 18* -> 2.25*,
    # BF16/FP16 36* -> 4.5*, FP8 72* -> 9*; 1,440 GB HBM3e -> 180 GB at 64 TB/s -> 8 TB/s.
    _gpu("B200", {"fp32": 75, "tf32": 1125, "bf16": 2250, "fp16": 2250, "fp8": 4500},
         {"tf32": 2250, "bf16": 4500, "fp16": 4500, "fp8": 9000}, 180, 8000, "PCIe Gen5 x16", 64,
         "NVIDIA HGX B200 / DGX B200 datasheets (per GPU)", (r"B200",)),
    # AMD Instinct MI300X datasheet: FP32 (vector) 163.4, TF32 653.7 (1307.4*),
    # BF16/FP16 1307.4 (2614.9*), FP8 2614.9 (5229.8*); 192 GB HBM3 at 5.3 TB/s.
    _gpu("MI300X", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
         {"tf32": 1307.4, "bf16": 2614.9, "fp16": 2614.9, "fp8": 5229.8}, 192, 5300,
         "PCIe Gen5 x16", 64, "AMD Instinct MI300X accelerator datasheet", (r"MI300X",)),
    # NVIDIA Ada (AD102) whitepaper, RTX 4090, tensor ops with FP32 accumulate (what
    # training uses): TF32 82.6 (165.2*), BF16/FP16 165.2 (330.4*), FP8 330.3 (660.6*);
    # FP32 (shader) 82.6; 24 GB GDDR6X at 1,008 GB/s; PCIe Gen4.
    _gpu("RTX 4090", {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
         {"tf32": 165.2, "bf16": 330.4, "fp16": 330.4, "fp8": 660.6}, 24, 1008, "PCIe Gen4 x16",
         32, "NVIDIA Ada GPU architecture whitepaper", (r"RTX 4090",)),
    # NVIDIA L4 datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485*;
    # 24 GB GDDR6 at 300 GB/s; PCIe Gen4 x16 64 GB/s both ways.
    _gpu("L4", {"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5},
         {"tf32": 120, "bf16": 242, "fp16": 242, "fp8": 485}, 24, 300, "PCIe Gen4 x16", 32,
         "NVIDIA L4 Tensor Core GPU datasheet", (r"\bL4\b",)),
    # NVIDIA L40S datasheet, dense | sparse*: FP32 91.6, TF32 183 | 366*, BF16/FP16 362.05 | 733*,
    # FP8 733 | 1,466*; 48 GB GDDR6 at 864 GB/s; PCIe Gen4 x16 64 GB/s both ways.
    _gpu("L40S", {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05, "fp8": 733},
         {"tf32": 366, "bf16": 733, "fp16": 733, "fp8": 1466}, 48, 864, "PCIe Gen4 x16", 32,
         "NVIDIA L40S GPU datasheet", (r"L40S",)),
]}

# What people type. "H100" alone means the SXM part, as in the lecture.
ALIASES = {
    "a100": "A100 SXM 80GB", "a10080gb": "A100 SXM 80GB", "a100sxm": "A100 SXM 80GB",
    "h100": "H100 SXM", "h100sxm5": "H100 SXM", "h100pcie": "H100 PCIe",
    "h200sxm": "H200", "h100nvl": "H100 NVL", "h200nvl": "H200 NVL", "a100sxm40gb": "A100 SXM 40GB",
    "a10040gb": "A100 SXM 40GB", "a100pcie": "A100 PCIe 80GB", "l40s": "L40S", "b200": "B200", "mi300": "MI300X", "4090": "RTX 4090",
    "rtx4090": "RTX 4090", "geforcertx4090": "RTX 4090", "l4": "L4",
}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def find_accelerator(name: str | Accelerator) -> Accelerator:
    """Find an accelerator by name, case-insensitively (``"h100"``, ``"A100"``, ``"4090"``)."""
    if isinstance(name, Accelerator):
        return name
    key = _norm(validate.instance(name, str, "accelerator name"))
    by_norm = {_norm(n): n for n in ACCELERATORS}
    if key in by_norm:
        return ACCELERATORS[by_norm[key]]
    if key in ALIASES:
        return ACCELERATORS[ALIASES[key]]
    close = difflib.get_close_matches(key, list(by_norm) + list(ALIASES), n=3, cutoff=0.5)
    names = sorted({by_norm.get(c) or ALIASES[c] for c in close})
    hint = f"; did you mean {', '.join(names)}?" if names else ""
    raise ValueError(f"unknown accelerator {name!r}{hint} (known: {', '.join(ACCELERATORS)})")


def match_device_name(device_name: str) -> Accelerator | None:
    """The table entry for a CUDA device name such as ``"NVIDIA H100 80GB HBM3"``, or None."""
    for acc in ACCELERATORS.values():
        if any(re.search(p, device_name, re.IGNORECASE) for p in acc.device_names):
            return acc
    return None


def detect(device: torch.device | str | None = None) -> Accelerator | None:
    """The table entry for this machine's GPU, or None (CPU, MPS, or a GPU not in the table).

    ``device``: a ``torch.device``, or a name or None for :func:`lecture_utils.device.get_device`
    (None: ``LECTURE_DEVICE``, else the best available).
    Never raises for an unknown GPU: it has no datasheet peak, so no MFU
    (:func:`lecture_utils.bench.peak_flops` says so in one line).
    """
    device = as_device(device)
    if device.type != "cuda":
        return None
    return match_device_name(torch.cuda.get_device_name(device))


# --- a CPU's nominal peak -----------------------------------------------------------
# A CPU has no datasheet peak in FLOP/s, but it has a nominal one, read off the machine:
# cores x clock x FLOP per cycle. A fused multiply-add (FMA) is 2 FLOPs per lane, and a core
# issues FMAs on two vector pipes (Intel since Haswell, AMD since Zen 2; Apple's cores four
# 128-bit ones). Vector lanes of fp32 per FMA instruction, by torch's CPU capability:
FP32_LANES = {"AVX512": 16, "AVX2": 8, "SVE256": 8, "DEFAULT": 4, "NO AVX": 4}


@dataclass(frozen=True)
class CpuSpec:
    """What a CPU's nominal peak is made of, as read off this machine."""

    physical_cores: int
    clock_hz: float | None  # the highest clock the OS reports (None: it reports none)
    isa: str  # torch.backends.cpu.get_cpu_capability(): the vector instructions torch's kernels use
    fma_pipes: int
    fp32_lanes: int  # per FMA instruction, after any splitting of wide registers (Zen 4)
    units: MappingProxyType  # dtype -> FLOP per cycle per core, for the dtypes with native units
    note: str  # the assumption behind fma_pipes and the lanes

    def flops_per_cycle(self, dtype: str) -> int | None:
        """Per core, or None: the CPU has no native units for ``dtype`` (it is emulated)."""
        return self.units.get(spec_name(dtype))

    def peak(self, dtype: str, cores: int) -> float | None:
        """Nominal FLOP/s of ``cores`` cores in ``dtype``: cores x clock x FLOP per cycle."""
        per_cycle = self.flops_per_cycle(dtype)
        if per_cycle is None or self.clock_hz is None:
            return None
        return cores * self.clock_hz * per_cycle

    def describe(self, dtype: str, cores: int) -> str:
        """``"nominal: 2 cores x 2.6 GHz x 64 FLOP/cycle (AVX512 fp32 FMA, 2 pipes)"``, or why none."""
        key = spec_name(dtype)
        per_cycle = self.flops_per_cycle(key)
        if per_cycle is None:
            return _("no {dtype} peak: this CPU has no {dtype} units ({isa}), so {dtype} is emulated").format(
                dtype=key, isa=self.isa)
        if self.clock_hz is None:
            return _("no nominal peak: the OS reports no CPU clock")
        cores_text = _("1 core") if cores == 1 else _("{n} cores").format(n=cores)
        return _("nominal: {cores} x {ghz} GHz x {per_cycle} FLOP/cycle ({isa} {dtype}, {note})").format(
            cores=cores_text, ghz=f"{self.clock_hz / 1e9:.3g}", per_cycle=per_cycle, isa=self.isa, dtype=key,
            note=self.note)


def _cpu_flags() -> tuple[set[str], str, int | None]:
    """(feature flags, vendor, family) from /proc/cpuinfo, or macOS's sysctl; empty where neither."""
    try:
        text = open("/proc/cpuinfo", encoding="utf-8", errors="replace").read()
    except OSError:
        text = ""
    fields = dict(re.findall(r"^(flags|Features|vendor_id|cpu family)\s*:\s*(.*)$", text, re.MULTILINE))
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    family = int(fields["cpu family"]) if fields.get("cpu family", "").isdigit() else None
    if not text and platform.system() == "Darwin":
        try:  # Apple silicon: hw.optional.arm.FEAT_BF16 is 1 where the cores have bf16 instructions
            out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True,
                                 text=True, timeout=5).stdout.strip()
            flags |= {"bf16"} if out == "1" else set()
        except (OSError, subprocess.SubprocessError):
            pass
    return flags, fields.get("vendor_id", ""), family


def _cpu_clock_hz() -> float | None:
    """The highest clock the OS reports: psutil's maximum, else its current (a VM often hides the
    maximum; cores may then run faster than this, under turbo boost)."""
    try:
        freq = psutil.cpu_freq()
    except (OSError, RuntimeError, NotImplementedError):
        freq = None
    if freq is None:
        return None
    mhz = freq.max if freq.max and freq.max > 0 else freq.current
    return mhz * 1e6 if mhz and mhz > 0 else None


@functools.cache
def cpu_spec() -> CpuSpec:
    """This CPU's nominal-peak parts, read once: physical cores (psutil), the clock the OS reports,
    torch's vector capability, and the CPU's flags for the narrow dtypes' units."""
    isa = torch.backends.cpu.get_cpu_capability()
    flags, vendor, family = _cpu_flags()
    apple = platform.system() == "Darwin" and platform.machine() == "arm64"
    lanes, pipes = FP32_LANES.get(isa, 4), 4 if apple else 2
    note = (_("{pipes} FMA pipes, Apple's cores") if apple else _("{pipes} FMA pipes, assumed")).format(pipes=pipes)
    if isa == "AVX512" and vendor == "AuthenticAMD" and family == 25:
        lanes, note = 8, _("2 FMA pipes of 256 bits: Zen 4 splits each 512-bit instruction")
    fp32 = 2 * lanes * pipes  # an FMA is a multiply and an add
    units = {"fp32": fp32}
    if "amx_bf16" in flags:
        units["bf16"] = 1024  # one AMX tile multiply per core: 16 x 32 x 2 bf16 FLOPs per cycle
    elif flags & {"avx512_bf16", "bf16"}:
        units["bf16"] = 2 * fp32  # a bf16 dot product per fp32 lane: two multiplies, two adds
    if "amx_fp16" in flags:
        units["fp16"] = 1024
    elif flags & {"avx512_fp16", "fphp", "asimdhp"}:
        units["fp16"] = 2 * fp32
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    return CpuSpec(cores, _cpu_clock_hz(), isa, pipes, lanes, MappingProxyType(units), note)
