# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (pytorch-resource-accounting)
#     language: python
#     name: pytorch-resource-accounting
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 03 · FLOPs and MFU: what every operation costs in time
#
# Notebook 02 asked *will it fit?* This one asks *how long will it take?* It covers §1.1
# and §3.1–§3.4 of the lecture notes and self-test question Q4:
#
# 1. **§1.1**: the opening estimate: $6ND = 6.3 \times 10^{24}$ FLOPs for 70B parameters
#    on 15T tokens, about 144 days on 1024 H100s at 50% utilisation, against the *dense* peak.
# 2. **§3.1–§3.2**: FLOPs, bytes moved and *arithmetic intensity* (FLOPs per byte) of an
#    elementwise op and of a matmul, placed on a roofline plot of this machine.
# 3. **§3.3**: 6ND against an exact count of a GPT's matmuls, and the attention term it omits.
# 4. **§3.4**: FLOPs versus FLOP/s, the notes' peak table, and MFU of measured matmuls,
#    including why changing the dtype changes MFU.
#
# A `✓` line is a checked claim; a `[measured]` line depends on the machine. Cells that
# need a GPU say so and are skipped elsewhere.

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes** (each is shown, with numbers, where linked)
# >
# > * NVIDIA's structured sparsity is **2:4** (two of every four weights zero), not "2:1"
# >   ([Dense versus sparse](#Dense-versus-sparse:-the-spec-sheet's-headline-figure-is-twice-too-high)).
# > * The peak table labels the 67 TFLOP/s FP32 row "(tensor core)": 67 is the H100's
# >   CUDA-core rate; its fp32 tensor-core mode (TF32) is 494.5. And "BF16 is 15–16× FP32"
# >   holds for the A100 (16×), not quite for the H100 (14.8×)
# >   ([§3.4](#§3.4-FLOPs,-FLOP/s-and-MFU)).
# > * The attention term is not small whenever "the context is well below the model width":
# >   it adds 2LTd/N (≈ T/(6d) for a standard block without the vocabulary), 15% for GPT-2
# >   small at its own 1024 context
# >   ([The attention term that 6ND leaves out](#The-attention-term-that-6ND-leaves-out)).

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from lecture_utils import check, check_answer, cuda_only, measured
from lecture_utils.bench import copy_bandwidth, matmul_flops_per_s, peak_flops, time_fn
from lecture_utils.flops import (
    count_flops,
    mfu,
    training_days,
    training_time_calculator,
    training_time_table,
    transformer_flops,
    transformer_flops_breakdown,
)
from lecture_utils.hardware import detect, lookup
from lecture_utils.models import GPT, get_config, n_params
from lecture_utils.plots import plot_roofline
from lecture_utils.trace import OpLog

ON_GPU = device.type == "cuda"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §1.1 The opening estimate: how long does a 70B model take to train?
#
# The lecture opens with napkin math. Take a model with $N = 70 \times 10^9$ parameters,
# train it on $D = 15 \times 10^{12}$ tokens, and use the rule (derived in §3.3 below)
# that training costs about $6ND$ floating-point operations:
#
# $$C \approx 6ND = 6 \times 70\times10^9 \times 15\times10^{12} = 6.3\times10^{24}\ \text{FLOPs}$$
#
# `training_flops` splits that into the forward pass ($2ND$) and the backward pass
# ($4ND$). Later notebooks import this cell from `lecture_utils.flops`:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: 6ND = 6.3e24 FLOPs; divide by the *dense* peak × MFU × GPUs.
# - Run live: the dense-versus-sparse cell (the spec sheet's headline is 2:4 sparse).
# - Point at: 143.9 days on 1024 H100s at MFU 0.5.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/flops.py
@dataclass(frozen=True)
class TrainingFlops:
    """6ND split into its forward (2ND) and backward (4ND) parts."""

    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


def training_flops(n_params, n_tokens) -> TrainingFlops:
    """The 6ND rule: forward 2ND (one multiply-add per parameter per token), backward
    4ND (two matmuls per layer: one for the weight gradient, one for the input's)."""
    return TrainingFlops(forward=2 * n_params * n_tokens, backward=4 * n_params * n_tokens)


# %% slideshow={"slide_type": "subslide"}
N, D = 70_000_000_000, 15_000_000_000_000  # integers keep the arithmetic exact
C = training_flops(N, D)
print(f"forward 2ND = {C.forward:.3g}, backward 4ND = {C.backward:.3g}, total 6ND = {C.total:.3g} FLOPs")
check("6ND for 70B params x 15T tokens", C.total, 6_300_000_000_000_000_000_000_000)
check("backward = 2 x forward", C.backward, 2 * C.forward)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Dense versus sparse: the spec sheet's headline figure is twice too high
#
# The H100 datasheet headlines **1979 TFLOP/s** for bf16. That figure assumes
# *structured sparsity*: two of every four weights are zero and the hardware skips them
# (NVIDIA's "2:4" pattern, which the notes call 2:1). Training multiplies dense matrices, so the figure to use is half of it,
# **989.5 TFLOP/s**. The course's hardware table keeps both, and only ever hands out the
# dense one through `.peak()`:

# %%
h100 = lookup("H100")
print(f"{h100.name}: bf16 dense {h100.peak('bf16') / 1e12:g} TFLOP/s, "
      f"sparse {h100.sparse_flops['bf16'] / 1e12:g} TFLOP/s")
check("H100 dense bf16 peak (FLOP/s)", h100.peak("bf16"), 989.5e12)
check("H100 sparse bf16 figure (FLOP/s)", h100.sparse_flops["bf16"], 1979e12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### About 144 days
#
# No real training run reaches the peak: communication, memory traffic, kernel launches
# and data loading all take their share. The fraction of peak that does useful model
# work is the **MFU** (model FLOPs utilisation, §3.4); 0.5 is already good. Here is the
# notes' calculation, line for line, next to the course helper `training_days`:

# %% slideshow={"slide_type": "subslide"}
total_flops = 6 * 70e9 * 15e12          # 6.3e24 FLOPs
h100_flop_per_sec = 1979e12 / 2         # 989.5 TFLOP/s (BF16 dense peak)
mfu_guess = 0.5
flops_per_day = h100_flop_per_sec * mfu_guess * 1024 * 60 * 60 * 24
days = total_flops / flops_per_day
print(f"the notes' code: {days:.2f} days")

days_half = training_days(C.total, "H100", n_gpus=1024, mfu=0.5)
days_full = training_days(C.total, "H100", n_gpus=1024, mfu=1.0)
check("notes' code == training_days", days, days_half, rel=1e-12)
check("1024 H100s at MFU 0.5: days", days_half, 143.9, rel=1e-3)
check("1024 H100s at MFU 1.0: days", days_full, 71.96, rel=1e-3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The trap.** Plug in the sparse 1979 by mistake and the same MFU 0.5 gives 72 days: a
# plausible-looking number that is half the real time. The notes warn that the real time
# is easily 2–4× the "ideal" estimate; the full 4× is exactly this pair of mistakes:
# sparse peak *and* MFU 1.

# %% slideshow={"slide_type": "subslide"}
def days_at(peak_flops_per_s, mfu_, n_gpus=1024):
    return C.total / (peak_flops_per_s * mfu_ * n_gpus) / 86_400


days_sparse = days_at(h100.sparse_flops["bf16"], 0.5)
days_paper = days_at(h100.sparse_flops["bf16"], 1.0)
print(f"dense peak,  MFU 0.5: {days_half:6.1f} days  <- the honest estimate")
print(f"sparse peak, MFU 0.5: {days_sparse:6.1f} days  <- the sparse trap")
print(f"sparse peak, MFU 1.0: {days_paper:6.1f} days  <- the spec sheet's dream")
check("sparse at MFU 0.5 == dense at MFU 1", days_sparse, days_full)
check("the honest estimate / the dream", days_half / days_paper, 4.0, rel=1e-12)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.1 Elementwise operations: cheap arithmetic, expensive traffic
#
# The notes' example is
#
# ```python
# y = torch.sin(x) + x * x
# ```
#
# **FLOPs.** Per element there is one `sin`, one multiply and one add: **3 FLOPs per
# element** by convention (a `sin` is really a dozen or more instructions, but the literature
# counts each elementwise op as one, or as zero). `FlopCounterMode`, the counter behind
# `count_flops`, counts zero: it has formulas only for matmuls, convolutions and attention.
# `count_flops` flags matmul-like ops that ran without a formula; elementwise ops are not
# matmul-like, so nothing is flagged either:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: `sin(x) + x*x` does 3 FLOPs per element but moves 28 bytes eagerly: memory-bound.
# - Run live: the kernel trace (sin, mul, add) and the bytes per element.
# - Point at: intensity 3/28 FLOP/byte; fusion cuts the traffic 3.5×.

# %% slideshow={"slide_type": "subslide"}
def sin_plus_square(x):
    return torch.sin(x) + x * x


x_small = torch.randn(1000)
ew = count_flops(sin_plus_square, x_small, backward=False)
check("FlopCounterMode: sin(x) + x*x costs", ew.forward, 0)
check("...and nothing is flagged as uncounted", ew.uncounted_ops, ())

FLOPS_PER_ELEMENT = 3  # our convention: sin, mul and add count one FLOP each

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Bytes.** The unavoidable traffic is to read `x` once and write `y` once: 4 + 4 = **8
# bytes per element** in fp32. That is what a *fused* kernel (one pass over memory) moves.
# Eager PyTorch does not fuse: every op is its own kernel that reads its inputs from memory
# and writes its output back, so `sin(x)` and `x * x` each materialise a temporary tensor
# and the `add` reads both back. To see the traffic rather than assert it, `OpLog` (from
# `lecture_utils.trace`) logs every aten op that runs, with the bytes of its distinct input
# tensors and of its output. (`x * x` passes the same tensor twice; a kernel reads it once.)

# %% slideshow={"slide_type": "subslide"}
n = x_small.numel()
with OpLog() as traffic:
    y_small = sin_plus_square(x_small)

print(f"{'kernel':<7} {'read B/elem':>12} {'written B/elem':>15}")
for name, read, written in traffic.ops:
    print(f"{name:<7} {read / n:>12g} {written / n:>15g}")
eager_bytes = sum(read + written for _, read, written in traffic.ops)
check("eager runs three kernels", traffic.names(), ["sin", "mul", "add"])
check("eager traffic, bytes per element", eager_bytes / n, 28.0)
check("fused minimum (read x, write y), bytes per element", (x_small.nbytes + y_small.nbytes) / n,
      8.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Arithmetic intensity** is FLOPs per byte moved. For this op it is tiny: 3/28 ≈ 0.11
# FLOP/byte in eager mode, and still only 3/8 = 0.375 if fused. Kept as fractions, the
# values are exact:

# %%
EW_BYTES_EAGER, EW_BYTES_FUSED = 28, 8  # per fp32 element, from the count above
ew_intensity = Fraction(FLOPS_PER_ELEMENT, EW_BYTES_EAGER)
check("elementwise intensity, eager (FLOP/byte)", ew_intensity, Fraction(3, 28))
check("elementwise intensity, fused (FLOP/byte)", Fraction(FLOPS_PER_ELEMENT, EW_BYTES_FUSED),
      Fraction(3, 8))
check("fusion cuts the traffic by", Fraction(EW_BYTES_EAGER, EW_BYTES_FUSED), Fraction(7, 2))

# %% [markdown]
# Now the measurement: the eager op on growing tensors, timed with `torch.utils.benchmark`
# (through `time_fn`). From each median time we get the achieved FLOP/s (3 FLOPs per
# element) and the achieved bandwidth (28 bytes per element). Sizes are chosen by device:
# up to 4M elements on a CPU, up to 64M on a GPU.

# %% slideshow={"slide_type": "subslide"}
EW_SIZES = [2**20, 2**22, 2**24, 2**26] if ON_GPU else [2**16, 2**18, 2**20, 2**22]
ew_points = []
for size in EW_SIZES:
    x = torch.randn(size).to(device)  # drawn on the CPU: the same numbers on every device
    seconds = time_fn(sin_plus_square, x, min_run_time=0.05)
    rate = FLOPS_PER_ELEMENT * size / seconds
    # per_device: the sizes (and so the labels) differ between a CPU and a GPU
    measured(f"sin(x) + x*x, {size:>10,} elements", seconds * 1e6, "µs", per_device=True)
    measured("  achieved", rate / 1e9, "GFLOP/s", per_device=True)
    measured("  achieved (eager traffic)", EW_BYTES_EAGER * size / seconds / 1e9, "GB/s", per_device=True)
    ew_points.append((f"sin(x)+x*x, 2^{size.bit_length() - 1}", float(ew_intensity), rate))
del x

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.2 Matrix multiplication is the main course
#
# For $Y = XW$ with $X \in \mathbb{R}^{B \times D}$ and $W \in \mathbb{R}^{D \times K}$, each
# of the $BK$ outputs is a sum of $D$ products: $D$ multiplies and $D$ adds. So
#
# $$\text{FLOPs}(XW) = 2BDK.$$
#
# `FlopCounterMode` is an independent oracle here: it reads the shapes of the matmuls that
# actually ran. With `backward=True`, `count_flops` also runs the backward pass, which
# computes $\nabla_X = \nabla_Y W^\top$ and $\nabla_W = X^\top \nabla_Y$: two matmuls of the
# same size, $4BDK$ (self-test Q1).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: a matmul is 2BDK FLOPs over O(n²) bytes, so its intensity grows like n/6.
# - Run live: the roofline cell, and read which points sit left of the ridge.
# - Point at: the ridge point; elementwise is far left, big matmuls touch the flat roof.

# %%
# @save lecture_utils/flops.py
def matmul_flops(b, d, k):
    """FLOPs of (b x d) @ (d x k): b*k outputs, each d multiplies and d adds."""
    return 2 * b * d * k


# %% slideshow={"slide_type": "subslide"}
SHAPES = [(2, 3, 4), (64, 128, 32), (100, 7, 300), (512, 1024, 256)]
for b, d, k in SHAPES:
    X = torch.randn(b, d, requires_grad=True)
    W = torch.randn(d, k, requires_grad=True)
    counted = count_flops(torch.matmul, X, W)
    check(f"({b}x{d}) @ ({d}x{k}): forward == 2BDK", counted.forward, matmul_flops(b, d, k))
    check(f"({b}x{d}) @ ({d}x{k}): backward == 4BDK", counted.backward, 2 * matmul_flops(b, d, k))

# A batch dimension multiplies the count: (8, 16, 32) @ (32, 64) is B = 8 * 16 rows.
X3 = torch.randn(8, 16, 32)
check("(8x16x32) @ (32x64) == 2 * (8*16) * 32 * 64",
      count_flops(torch.matmul, X3, torch.randn(32, 64), backward=False).forward,
      matmul_flops(8 * 16, 32, 64))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Intensity of a matmul.** A square $n \times n$ fp32 matmul does $2n^3$ FLOPs and, at
# the minimum, reads two $n \times n$ matrices and writes one: $3 \cdot 4n^2$ bytes. Its
# intensity is $2n^3 / 12n^2 = n/6$ FLOP/byte, so it **grows with $n$**, while the
# elementwise op stays at 3/28 however large the tensor. (Real kernels move more than the
# minimum, since tiles are re-read from memory when they do not fit in cache, but the
# growth with $n$ is what matters.)

# %% slideshow={"slide_type": "subslide"}
def matmul_intensity(n, bytes_per_element=4):
    return Fraction(matmul_flops(n, n, n), 3 * n * n * bytes_per_element)


print(f"{'n':>5} {'FLOPs':>10} {'min bytes':>10} {'FLOP/byte':>10} {'x elementwise':>14}")
for size in (64, 256, 1024, 4096, 8192):
    i = matmul_intensity(size)
    print(f"{size:>5} {matmul_flops(size, size, size):>10.3g} {3 * size * size * 4:>10.3g} "
          f"{float(i):>10.1f} {float(i / ew_intensity):>14,.0f}")
check("n x n fp32 matmul: intensity == n/6", [matmul_intensity(s) for s in (64, 1024, 8192)],
      [Fraction(64, 6), Fraction(1024, 6), Fraction(8192, 6)])
check("1024^3 matmul vs eager sin(x)+x*x: intensity ratio", matmul_intensity(1024) / ew_intensity,
      Fraction(14336, 9))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Measured: square fp32 matmuls of growing size, with `matmul_flops_per_s` (which also
# times through `torch.utils.benchmark`). The sizes again depend on the device.

# %%
MM_SIZES = [1024, 2048, 4096, 8192] if ON_GPU else [64, 128, 256, 512]
mm_points = []
for size in MM_SIZES:
    rate = matmul_flops_per_s(size, "fp32", device, min_run_time=0.05)
    measured(f"fp32 matmul {size}^3", matmul_flops(size, size, size) / rate * 1e6, "µs", per_device=True)
    measured("  achieved", rate / 1e9, "GFLOP/s", per_device=True)
    mm_points.append((f"matmul {size}", float(matmul_intensity(size)), rate))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The roofline
#
# A chip has two limits: it cannot compute faster than its **peak FLOP/s**, and it cannot
# feed the arithmetic faster than its **memory bandwidth** allows. An op with intensity $I$
# FLOP/byte can therefore reach at most
#
# $$\text{attainable FLOP/s} = \min(\text{peak},\ \text{bandwidth} \times I).$$
#
# On a log-log plot that is a slanted line (memory-bound) meeting a flat one (compute-bound)
# at the **ridge point** $I^* = \text{peak} / \text{bandwidth}$. An op left of the ridge
# cannot use the chip's arithmetic however well it is written; only moving fewer bytes
# helps (fusion, Lectures 5–6).
#
# The ceilings: on a known GPU they come from the spec sheet (fp32 on CUDA cores, to match
# the fp32 points, and HBM bandwidth); on a CPU there is no spec sheet, so both are
# **measured** here, the best of a 1024³ and a 512³ fp32 matmul for the peak and a 64 MiB
# copy for the bandwidth. A measured peak is only the best timing seen so far: a 512³
# matmul timed a moment earlier can beat it (timing noise, turbo clocks), so on the CPU the
# flat roof is raised to the best matmul point plotted, which makes it a roof.

# %% caption="Roofline: measured FLOP/s of the eager elementwise op and square matmuls against arithmetic intensity, under the memory and compute ceilings." slideshow={"slide_type": "subslide"}
acc = detect(device)
if acc is not None:
    roof_peak, roof_bw = acc.peak("fp32"), acc.hbm_bandwidth
    best = max(rate for _, _, rate in mm_points)
    measured("best matmul plotted / spec-sheet peak", best / roof_peak, per_device=True)
    measured("ceilings", f"{acc.name} spec sheet (fp32 peak, HBM bandwidth)")
    assert best <= roof_peak, "an fp32 matmul beat the spec sheet: was TF32 on?"
else:
    roof_peak = peak_flops(device, "fp32", min_run_time=0.1).flops_per_s
    copy_bytes = 2**30 if ON_GPU else 64 * 2**20
    roof_bw = copy_bandwidth(copy_bytes, device, min_run_time=0.1)
    best = max(rate for _, _, rate in mm_points)
    measured("best matmul plotted / measured peak", best / roof_peak, per_device=True)
    roof_peak = max(roof_peak, best)  # a roof no point beats
    measured("ceilings", f"measured on {device.type} (fp32 matmul peak, "
             f"{copy_bytes // 2**20} MiB copy)")
measured("peak", roof_peak / 1e9, "GFLOP/s")
measured("bandwidth", roof_bw / 1e9, "GB/s")
measured("ridge point", roof_peak / roof_bw, "FLOP/byte")

fig = plot_roofline(ew_points + mm_points, roof_peak, roof_bw,
                    title=f"fp32 roofline on {device.type}: sin(x)+x*x (eager) and square matmuls")
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# How to read it:
#
# * The elementwise points all sit at 3/28 FLOP/byte, far left of the ridge: they are
#   **memory-bound**, capped by the slanted roof. On a GPU, larger tensors get closer to it
#   as the fixed cost of launching three kernels is amortised.
# * On a CPU, small tensors can land *above* the roof (they fit in cache, which is faster
#   than the memory the roof was measured on), and a point far *below* it does more work than
#   our 3-FLOP convention admits (a CPU `sin` costs many instructions).
# * The matmul points move right as $n$ grows (intensity $n/6$) and climb towards the flat
#   roof. Matmuls dominate the FLOPs, but not necessarily the *time*: elementwise ops, norms
#   and softmax do few FLOPs yet each pays full memory traffic.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.3 A first-order estimate of training FLOPs: 6ND
#
# Forward, every parameter of a weight matrix takes part in one multiply-add per token: $2N$
# FLOPs per token, $2ND$ in all. Backward does two matmuls of the same size for each one in
# the forward pass (one for the weight gradient, one for the input gradient): $4ND$. Total
# $6ND$.
#
# That is an approximation; `transformer_flops` is the exact count of every matmul in the
# course's GPT, and `count_flops` counts what actually runs. On the `tiny` config (math
# attention, so every matmul is a visible `@`), one batch of 2 sequences of 128 tokens.
# FLOP counts do not depend on the device, so this runs on the CPU everywhere:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: forward 2ND, backward 4ND; 6ND leaves out attention.
# - Run live: `transformer_flops` against `FlopCounterMode` on the small GPT.
# - Point at: attention adds 15% for GPT-2 small at T = 1024 and 66% for a 70B shape at 32K.

# %% slideshow={"slide_type": "subslide"}
cfg = get_config("tiny")
model = GPT(cfg)
batch, seq = 2, cfg.seq_len
tokens = batch * seq
idx = torch.randint(0, cfg.vocab_size, (batch, seq))
counted = count_flops(model, idx)
exact_per_seq = transformer_flops(**cfg.flops_kwargs(seq))
print(cfg)
print(f"counted forward  {counted.forward:>13,}")
print(f"counted backward {counted.backward:>13,}")
check("forward == transformer_flops x batch (exact)", counted.forward, exact_per_seq * batch)
check("backward == 2 x forward (exact)", counted.backward, 2 * counted.forward)
check("no matmul went uncounted", counted.uncounted_ops, ())

# %% [markdown] slideshow={"slide_type": "subslide"}
# Now the approximation: $2N \times \text{tokens}$ with $N$ = the non-embedding parameters
# (embedding lookups are not matmuls; the output layer is, and it is in $N$). It is close,
# but not equal. Two things differ:
#
# * **Attention does matmuls that have no parameters.** $QK^\top$ and the weighted sum
#   $AV$ each cost $2T^2d$ per layer per sequence; the pair costs $4T^2d$, that is $4Td$ per
#   token per layer for both together. $6ND$ leaves them out.
# * **LayerNorm has parameters that do no matmul.** Its scale and shift are in $N$, so
#   $2N$ overcounts them by 2 FLOPs per parameter per token. (The course's `Linear` has no
#   bias; a bias would be another such parameter.)
#
# Together these explain the gap exactly:

# %% slideshow={"slide_type": "subslide"}
N_tiny = n_params(model, non_embedding=True)
ln_params = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.LayerNorm)
                for p in m.parameters())
L, d, T = cfg.n_layers, cfg.d_model, seq
estimate = 2 * N_tiny * tokens
print(f"N (non-embedding) = {N_tiny:,}, of which LayerNorm {ln_params:,}")
print(f"2N x tokens       = {estimate:,}")
print(f"exact forward     = {counted.forward:,}  ({counted.forward / estimate:.4f} x)")
attention = tokens * 4 * L * T * d
check("exact - 2N*tokens == attention - LayerNorm's share",
      counted.forward - estimate, attention - 2 * ln_params * tokens)
parts = transformer_flops_breakdown(**cfg.flops_kwargs(seq))
check("attention term == QK^T + AV parts of the exact count",
      attention, batch * (parts["attention scores (QK^T)"] + parts["attention weighted sum (AV)"]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Where the exact forward FLOPs of the tiny model go, per sequence. The vocabulary (8192) is
# large next to $d_\text{model} = 64$, so the output layer dominates:

# %%
for part, flops in parts.items():
    print(f"{part:<28} {flops:>12,}  {flops / exact_per_seq:6.1%}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A silent zero: fused attention on the CPU
#
# The same model with `attention="sdpa"` calls `F.scaled_dot_product_attention`, which on
# a GPU dispatches to fused kernels (FlashAttention and friends). On the CPU it runs an op
# that `FlopCounterMode` has **no formula for**, so the attention matmuls are counted as
# zero and the total is too low. `count_flops` names the op in `uncounted_ops`, so the
# number below is labelled as an undercount rather than silently trusted:

# %% slideshow={"slide_type": "subslide"}
model_sdpa = GPT(get_config("tiny", attention="sdpa"))
model_sdpa.load_state_dict(model.state_dict())
counted_sdpa = count_flops(model_sdpa, idx)
print("uncounted:", counted_sdpa.uncounted_ops)
missing = counted.forward - counted_sdpa.forward
print(f"sdpa forward count {counted_sdpa.forward:,}: {missing:,} FLOPs short "
      f"({missing / counted.forward:.1%}), an UNDERCOUNT")
check("sdpa on CPU: an uncounted op is reported", len(counted_sdpa.uncounted_ops) > 0, True)
check("the missing forward FLOPs are exactly QK^T + AV", missing, attention)
check("same outputs as math attention", torch.allclose(model_sdpa(idx), model(idx), atol=1e-5),
      True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# On CUDA, `FlopCounterMode` *does* have formulas for the fused attention kernels, so the
# forward count is exact again. (Its backward formula also counts the recomputation of the
# attention scores that fused kernels do, so the backward can come out a little above 2×
# the forward.)

# %%
if cuda_only(device, "counting fused (sdpa) attention on CUDA"):
    with torch.device(device):  # initialised on the GPU, from its own random stream
        gpu_model = GPT(get_config("tiny", attention="sdpa"))
    gpu_counted = count_flops(gpu_model, idx.to(device))
    measured("sdpa on CUDA: forward count", f"{gpu_counted.forward:,}", per_device=True)
    measured("sdpa on CUDA: backward / forward", gpu_counted.backward / gpu_counted.forward, per_device=True)
    measured("sdpa on CUDA: uncounted ops", gpu_counted.uncounted_ops, per_device=True)
    assert gpu_counted.forward == counted.forward, (gpu_counted.forward, counted.forward)
    assert gpu_counted.backward >= 2 * gpu_counted.forward
    del gpu_model

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The attention term that 6ND leaves out
#
# Per token and per layer, attention adds $4Td$ FLOPs to the forward pass, while the
# weights cost $2N$ per token in all. With $N$ the matmul weights, the exact count over the
# estimate is therefore
#
# $$\frac{\text{exact}}{2NT} = 1 + \frac{4LTd}{2N} = 1 + \frac{2LTd}{N}.$$
#
# It grows linearly in $T$, and the attention term equals the parametric one at
# $T^* = N / (2Ld)$. For a standard block ($N \approx 12Ld^2$, ignoring the output layer)
# that is $T^* \approx 6d$ (a large vocabulary pushes it higher): what matters is the
# context length *relative to the width*.
#
# We check the formula against `transformer_flops` for two shapes, without building either
# model: the course's `gpu` config (GPT-2 small: 12 layers, $d = 768$) and a 70B-shaped one
# (80 layers, $d = 8192$, 64 heads, vocabulary 32000; plain multi-head attention with a
# $4d$ MLP, so $N$ = 64.7B rather than Llama's exact 70B).

# %% slideshow={"slide_type": "subslide"}
SHAPES_70B = {"n_layers": 80, "d_model": 8192, "n_heads": 64, "vocab_size": 32000, "d_ff": 32768}
MODELS = {"GPT-2 small (gpu config)": {k: v for k, v in get_config("gpu").flops_kwargs().items()
                                       if k != "seq_len"},
          "70B-shaped": SHAPES_70B}
SEQ_LENS = [2**p for p in range(7, 16)]  # 128 ... 32768

ratios, formula_holds = {}, []
for label, shape in MODELS.items():
    L, d, V, ff = shape["n_layers"], shape["d_model"], shape["vocab_size"], shape["d_ff"]
    N_mm = L * (4 * d * d + 2 * d * ff) + d * V  # qkv, out proj, MLP up/down; unembedding
    ratios[label] = []
    for T in SEQ_LENS:
        exact = transformer_flops(**shape, seq_len=T)
        ratio = Fraction(exact, 2 * N_mm * T)
        ratios[label].append(ratio)
        formula_holds.append(ratio == 1 + Fraction(2 * L * T * d, N_mm))  # exact fractions
    crossover = N_mm / (2 * L * d)
    print(f"{label}: N (matmul weights) = {N_mm / 1e9:.3g}B, T* = N/(2Ld) = {crossover:,.0f} "
          f"(6d = {6 * d:,})")
    print("   T:     " + " ".join(f"{T:>6}" for T in SEQ_LENS))
    print("   ratio: " + " ".join(f"{float(r):>6.3f}" for r in ratios[label]))
check("exact / 2NT == 1 + 2LTd/N: cases where it holds exactly", formula_holds.count(True),
      2 * len(SEQ_LENS))
check("GPT-2 small at its own T = 1024: ratio", float(ratios["GPT-2 small (gpu config)"][3]),
      1.1527, rel=1e-4)
check("70B-shaped at T = 4096: ratio", float(ratios["70B-shaped"][5]), 1.0830, rel=1e-4)
check("70B-shaped at T = 32768: ratio", float(ratios["70B-shaped"][8]), 1.6640, rel=1e-4)

# %% caption="Exact forward FLOPs over 2NT against sequence length: the attention term grows linearly in T." slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7.0, 3.5))
for label, r in ratios.items():
    ax.plot(SEQ_LENS, [float(v) for v in r], "o-", label=label)
ax.axhline(2, color="0.5", lw=1, ls=":", label="attention == weights")
ax.set_xscale("log", base=2)
ax.set(xlabel="sequence length T", ylabel="exact forward FLOPs / 2NT")
ax.set_title("exact / 2NT = 1 + 2LTd/N: linear in T (the x axis is log)", loc="left")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# The notes say the attention term is small "when the context is well below the model
# width in order of magnitude" and must be added back "for long contexts (32K+)". The
# checks above make that precise, and show it is looser than it sounds:
#
# * The comparison is $T$ against $6d$, not against $d$. GPT-2 small at its own context
#   (1024) is already **15%** above $6ND$; at $T = 8192$ its attention costs more than its
#   weights.
# * For the 70B shape, $6d = 49{,}152$: 8% extra at 4K tokens, and **66%** extra at 32K.
#   "32K+" is about right for that width, and far too late for a small model.
# * A causal mask makes half of each $T \times T$ matrix unnecessary. Our count (like
#   `FlopCounterMode`) computes the full matrix and then masks it; kernels that skip masked
#   blocks (FlashAttention) do about half the attention work, so the real extra is roughly
#   half of what is plotted.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.4 FLOPs, FLOP/s and MFU
#
# Two words that look alike:
#
# | name | meaning | example |
# | :--- | :--- | :--- |
# | **FLOPs** | an *amount* of floating-point work | an 8192³ matmul is $2 \cdot 8192^3 \approx 1.1 \times 10^{12}$ FLOPs |
# | **FLOP/s** | a *rate*, the speed of hardware (also written FLOPS) | an H100 does $989.5 \times 10^{12}$ bf16 FLOP/s, dense |
#
# Dividing an amount by a rate gives a time:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: FLOPs are an amount, FLOP/s a rate; MFU = useful FLOP/s / dense peak of the dtype that ran.
# - Run live: the measured matmul's MFU, then the tile-unfriendly shapes (8191, 4097).
# - Point at: HFU flatters (recomputation counted); changing the dtype changes the denominator.

# %%
work = matmul_flops(8192, 8192, 8192)
check("FLOPs of an 8192^3 matmul", work, 1_099_511_627_776)
check("its time at the H100's dense bf16 peak (ms)", work / h100.peak("bf16") * 1e3, 1.111,
      rel=1e-3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The notes' table of dense peaks, checked against the hardware table (which is built from
# the vendors' datasheets):

# %% slideshow={"slide_type": "subslide"}
NOTES_TABLE = {"A100": (19.5e12, 312e12), "H100": (67e12, 989.5e12)}  # (FP32, BF16), FLOP/s
print(f"{'GPU':<14} {'FP32 TFLOP/s':>13} {'BF16 TFLOP/s':>13} {'BF16 / FP32':>12}")
for gpu, (fp32, bf16) in NOTES_TABLE.items():
    entry = lookup(gpu)
    print(f"{entry.name:<14} {entry.peak('fp32') / 1e12:>13g} {entry.peak('bf16') / 1e12:>13g} "
          f"{entry.peak('bf16') / entry.peak('fp32'):>12.2f}")
    check(f"{entry.name}: (fp32, bf16) peaks as in the notes",
          (entry.peak("fp32"), entry.peak("bf16")), (fp32, bf16))
check("A100: BF16 / FP32", lookup("A100").peak("bf16") / lookup("A100").peak("fp32"), 16.0)
check("H100: BF16 / FP32", h100.peak("bf16") / h100.peak("fp32"), 14.77, rel=1e-3)
check("H100: the tensor-core fp32 mode (TF32) is 494.5 TFLOP/s, not 67", h100.peak("tf32"), 494.5e12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The notes say the BF16 peak is **15–16×** the FP32 peak. That holds for the A100 (exactly
# 16×); the H100 is slightly below the range, at **14.8×**. The FP32 column is the
# CUDA-core rate; in between sits TF32 (fp32 tensors, tensor-core math with a 10-bit
# mantissa), which is half the BF16 rate, 494.5 TFLOP/s on an H100. **Erratum in the
# notes:** their table labels the 67 TFLOP/s FP32 row "(tensor core)"; 67 is the CUDA-core
# rate, and PyTorch uses it for fp32 matmuls by default
# (`torch.get_float32_matmul_precision() == "highest"`, no TF32).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### MFU of a measured matmul
#
# $$\text{MFU} = \frac{\text{achieved useful FLOP/s}}{\text{peak FLOP/s}}$$
#
# The peak must be the dense peak *for the dtype that ran*. `peak_flops(device, dtype)`
# returns the spec sheet's figure on a known GPU; on a CPU it **measures** the best of a
# 1024³ and a 512³ matmul in that dtype (labelled as measured, and raised to any timing that
# beats it), so CPU MFU means "how close this size gets to our best matmul". Each dtype is
# timed at two sizes, because small shapes lower MFU (idle cores, fixed overheads weigh
# more). On a GPU this cell adds TF32, the fp32 tensor-core mode.

# %% slideshow={"slide_type": "subslide"}
MFU_SIZES = (1024, 4096) if ON_GPU else (128, 512)
MFU_DTYPES = ["fp32", "tf32", "bf16"] if ON_GPU else ["fp32", "bf16"]
mfus, raw_mfus, rates_by_dtype = {}, {}, {}
for dt in MFU_DTYPES:
    peak = peak_flops(device, dt, min_run_time=0.1)
    flops = {s: matmul_flops(s, s, s) for s in MFU_SIZES}
    seconds = {s: flops[s] / matmul_flops_per_s(s, dt, device, min_run_time=0.05)
               for s in MFU_SIZES}
    achieved = {s: flops[s] / seconds[s] for s in MFU_SIZES}  # as mfu() computes it
    rates_by_dtype[dt] = dict(achieved)  # kept for the throughput figure below
    denominator = (max(peak.flops_per_s, *achieved.values()) if peak.is_measured
                   else peak.flops_per_s)
    measured(f"{dt} peak ({peak.source})", denominator / 1e12, "TFLOP/s", per_device=True)
    for s in MFU_SIZES:
        mfus[dt, s] = mfu(flops[s], seconds[s], denominator)
        measured(f"  {dt} {s}^3 matmul: TFLOP/s, MFU", f"{achieved[s] / 1e12:.3g}, {mfus[dt, s]:.3g}",
                 per_device=True)
        raw_mfus[dt, s] = achieved[s] / peak.flops_per_s  # against the peak as first measured
if device.type == "cpu" and Path("/proc/cpuinfo").exists():
    flags = set(Path("/proc/cpuinfo").read_text().split())
    measured("CPU bf16 matrix instructions (avx512_bf16, amx_bf16)",
             ", ".join(f for f in ("avx512_bf16", "amx_bf16") if f in flags) or "none", per_device=True)
# falsifiable: another dtype's peak (4-15x apart) or a FLOP count 4x off breaks it; a peak
# measured while the machine was busy can be beaten by later timings, but not 3x
check("every MFU against its own dtype's peak (as measured, or spec) is in (0, 3)",
      all(0 < v < 3 for v in raw_mfus.values()), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The timings taken so far, as one picture: achieved FLOP/s against matmul size, one line
# per dtype (the fp32 sizes of §3.2 plus this cell's sizes; nothing is re-timed). Small
# matmuls cannot keep the machine busy; the curves flatten as they approach the peak.

# %% caption="Measured matmul throughput against matrix size for each dtype on this machine." slideshow={"slide_type": "subslide"}
for size, (_, _, rate) in zip(MM_SIZES, mm_points, strict=True):
    rates_by_dtype["fp32"][size] = max(rate, rates_by_dtype["fp32"].get(size, 0.0))
fig, ax = plt.subplots(figsize=(10, 5))
for dt, by_size in rates_by_dtype.items():
    sizes = sorted(by_size)
    ax.plot(sizes, [by_size[n] / 1e9 for n in sizes], "o-", lw=2.5, ms=8, label=dt)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("matmul size n (n×n @ n×n)", fontsize=13)
ax.set_ylabel("achieved GFLOP/s (measured)", fontsize=13)
ax.set_title(f"Matmul throughput versus size, per dtype, on {device.type}", fontsize=14)
ax.legend(fontsize=12)
ax.tick_params(labelsize=12)
fig.tight_layout()
plt.show()
check("sizes plotted per dtype", {dt: len(v) for dt, v in rates_by_dtype.items()},
      {dt: (4 if dt == "fp32" else 2) for dt in MFU_DTYPES})

# %% [markdown] slideshow={"slide_type": "subslide"}
# bf16 on a CPU is fast only where the CPU has bf16 matrix instructions (AVX-512 BF16,
# AMX; run on a CPU, the line above says which this one has). Without them torch converts to fp32 and
# back, and a bf16 matmul can run several times *slower* than fp32: no bf16 units, not a
# bug. On a GPU bf16 is the fast path.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### MFU versus HFU
#
# MFU counts only the model's own FLOPs ($6ND$ per step). **HFU** (hardware FLOPs
# utilisation) counts every FLOP the chip executes, recomputation included: with full
# activation checkpointing the forward pass runs twice, $8ND$ per step, so HFU = 4/3 × MFU
# for the same step. Recomputation is not useful work: a run that recomputes is slower and
# has a *lower* MFU, yet its HFU can look better. Compare runs by MFU (the notes' rule).

# %% slideshow={"slide_type": "subslide"}
n_ex, d_ex, peak_ex = 124e6, 0.5e6, h100.peak("bf16")  # 124M params, 0.5M tokens per step
t_plain = 6 * n_ex * d_ex / (0.45 * peak_ex)  # a step at MFU 0.45 without recomputation
t_ckpt = 1.25 * t_plain                       # the same step, recomputing the forward
mfu_plain = mfu(6 * n_ex * d_ex, t_plain, peak_ex)
mfu_ckpt = mfu(6 * n_ex * d_ex, t_ckpt, peak_ex)
hfu_ckpt = mfu(8 * n_ex * d_ex, t_ckpt, peak_ex)  # hardware FLOPs: the forward counted twice
check("MFU without recomputation", mfu_plain, 0.45, rel=1e-12)
check("MFU with recomputation (25% slower step)", mfu_ckpt, 0.36, rel=1e-12)
check("HFU with recomputation = 4/3 x its MFU", hfu_ckpt, 0.48, rel=1e-12)
check("HFU of the slower run exceeds the faster run's MFU", hfu_ckpt > mfu_plain, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Changing the dtype changes the denominator
#
# The notes warn that switching to BF16 *raises the peak*, so the same code can report a
# worse MFU while running faster. The H100 table makes this concrete. A job that reaches 400
# TFLOP/s is at MFU 0.81 if it runs in TF32, but at 0.40 if it runs in BF16. And a job that
# moves from FP32 at 50 TFLOP/s to BF16 at 300 TFLOP/s trains **6× faster** while its MFU
# drops from 0.75 to 0.30:

# %% slideshow={"slide_type": "subslide"}
check("400 TFLOP/s against the TF32 peak", 400e12 / h100.peak("tf32"), 0.8089, rel=1e-3)
check("400 TFLOP/s against the BF16 peak", 400e12 / h100.peak("bf16"), 0.4042, rel=1e-3)
fp32_job, bf16_job = 50e12, 300e12
check("fp32 job at 50 TFLOP/s: MFU", fp32_job / h100.peak("fp32"), 0.7463, rel=1e-3)
check("bf16 job at 300 TFLOP/s: MFU", bf16_job / h100.peak("bf16"), 0.3032, rel=1e-3)
check("...and it is this much faster", bf16_job / fp32_job, 6.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# So an MFU is only comparable to another MFU with the same dtype convention, and a paper's
# MFU figure should always say which peak it divides by.
#
# On a GPU, a large bf16 matmul is the best case any training step can hope for: one big,
# tile-friendly shape and nothing else. The cell below prints what it reaches here; the best
# published H100 figure, searched over shapes, is 80.3% of the dense peak
# (docs/gpu/reference.md, `bf16-gemm-8192`), and `benchmarks/matmul_mfu.py` compares this
# shape with that (a notebook prints timings; speed targets live in the benchmarks).

# %%
if cuda_only(device, "the MFU of an 8192^3 bf16 matmul"):
    gpu = detect(device)
    big = matmul_flops(8192, 8192, 8192)
    rate = matmul_flops_per_s(8192, "bf16", device, min_run_time=0.5)
    measured("8192^3 bf16 matmul", rate / 1e12, "TFLOP/s", per_device=True)
    if gpu is not None:
        big_mfu = mfu(big, big / rate, gpu.peak("bf16"))
        measured(f"MFU against the {gpu.name} dense bf16 peak", big_mfu, per_device=True)
        assert 0 < big_mfu < 1, f"MFU {big_mfu:.2f}: the FLOP count or the peak is wrong"

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Tile-unfriendly shapes lose MFU
#
# Matmul kernels work in fixed tiles (on a GPU e.g. 128 × 128 outputs per thread block,
# with K consumed in steps too; below, 128 in all three dimensions for simplicity) and load rows with wide, aligned memory instructions.
# A dimension one short of a power of two, 8191 instead of 8192, does 0.04% *fewer*
# FLOPs, but its rows are no longer 16-byte aligned (8191 × 2 bytes in bf16), so the
# library falls back to slower kernels or pads; one *over* (4097) costs a whole extra
# row of tiles. MFU counts only the useful FLOPs, so either way it drops. The same pair
# is timed below at a size this device handles quickly: 8191 vs 8192 in bf16 on a GPU,
# 511 vs 512 in fp32 on a CPU. The numbers are printed, not asserted: on a CPU the library
# often hides most of the penalty.

# %% slideshow={"slide_type": "subslide"}
TILE = 128
check("4097 needs 33 tiles of 128 per side, 4096 only 32: (33/32)**3 the tile work",
      (-(-4097 // TILE), 4096 // TILE, round(33**3 / 32**3, 3)), (33, 32, 1.097))
check("rows of 8192 bf16 are 16-byte aligned, rows of 8191 are not",
      ((8192 * 2) % 16, (8191 * 2) % 16), (0, 14))
check("8191^3 does fewer FLOPs than 8192^3 (ratio)",
      matmul_flops(8191, 8191, 8191) / matmul_flops(8192, 8192, 8192), 0.99963, rel=1e-5)

pair, tile_dtype = ((8191, 8192), "bf16") if ON_GPU else ((511, 512), "fp32")
tile_rates = {n: matmul_flops_per_s(n, tile_dtype, device, min_run_time=0.1) for n in pair}
for n, rate in tile_rates.items():  # per_device: the pair and dtype differ on a GPU
    measured(f"{tile_dtype} {n}^3 matmul", rate / 1e9, "GFLOP/s", per_device=True)
measured(f"{pair[0]} / {pair[1]} throughput (1 = no penalty)",
         tile_rates[pair[0]] / tile_rates[pair[1]], per_device=True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Back to §1.1: a training-time calculator
#
# Everything in the opening estimate fits in one formula: days = $6ND$ / (dense peak × MFU
# × GPUs) / 86 400. Move the sliders to try other models, token budgets and clusters (this
# needs a live kernel; a static view shows only the widget's description, so the same
# numbers follow as a printed table).

# %% slideshow={"slide_type": "subslide"}
training_time_calculator()

# %% [markdown]
# The static version: 70B parameters, 15T tokens, 1024 GPUs of each generation, at four
# MFUs, against the dense bf16 peak. The H200 row equals the H100 row: the same chip with
# more and faster memory, which a FLOP count cannot see (bandwidth only shows in the time of
# memory-bound work, like the elementwise op of §3.1).

# %% slideshow={"slide_type": "subslide"}
GPUS = [("A100", 1024), ("H100", 1024), ("H200", 1024), ("B200", 1024)]
MFUS = (0.3, 0.4, 0.5, 1.0)
table = training_time_table(N, D, GPUS, mfus=MFUS)
print(f"{'70B x 15T tokens':<18} {'GPUs':>5}" + "".join(f"{'MFU ' + str(m):>10}" for m in MFUS))
for name, count, days_by_mfu in table:
    print(f"{name:<18} {count:>5}" + "".join(f"{days_by_mfu[m]:>10.1f}" for m in MFUS))
rows = {name: days_by_mfu for name, _, days_by_mfu in table}
check("H100 row == training_days for every MFU (144 and 72 days at 0.5 and 1)", rows["H100 SXM"],
      {m: training_days(C.total, "H100", 1024, m) for m in MFUS})
check("H200 == H100: same compute, more memory", rows["H200"], rows["H100 SXM"])
check("A100 / H100 days == H100 / A100 peak", rows["A100 SXM 80GB"][0.5] / rows["H100 SXM"][0.5],
      989.5 / 312, rel=1e-12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same formula for every GPU in the hardware table, as curves: days = $6ND$ /
# (dense bf16 peak × MFU × 1024) / 86 400 falls as 1/MFU, so halving MFU doubles the time
# on every chip. The dotted line marks the notes' MFU 0.5.

# %% caption="Training days for 6ND against MFU for each GPU's dense bf16 peak, 1024 GPUs." slideshow={"slide_type": "subslide"}
from lecture_utils.hardware import ACCELERATORS

MFU_GRID = [m / 100 for m in range(10, 101, 5)]
curves = {name: [training_days(C.total, name, 1024, m) for m in MFU_GRID] for name in ACCELERATORS}
fig, ax = plt.subplots(figsize=(10, 5))
for name, days_curve in curves.items():
    ax.plot(MFU_GRID, days_curve, lw=2.5, label=name,
            ls="--" if name == "H200" else "-")  # H200 lies on H100 SXM: same compute
ax.axvline(0.5, color="k", ls=":", lw=1.5)
ax.text(0.51, ax.get_ylim()[0] * 1.3, "MFU 0.5 (the notes)", fontsize=12)
ax.set_yscale("log")
ax.set_xlabel("MFU", fontsize=13)
ax.set_ylabel("days (70B params, 15T tokens, 1024 GPUs)", fontsize=13)
ax.set_title("Training time versus MFU, 6ND against each GPU's dense bf16 peak", fontsize=14)
ax.legend(fontsize=12, ncol=2)
ax.tick_params(labelsize=12)
fig.tight_layout()
plt.show()

at_half = MFU_GRID.index(0.5)
check("H100 SXM curve at MFU 0.5: 143.9 days", curves["H100 SXM"][at_half], 143.9, rel=1e-3)
check("every curve: MFU 0.25 takes twice as long as 0.5",
      {n: c[MFU_GRID.index(0.25)] / c[at_half] for n, c in curves.items()},
      dict.fromkeys(curves, 2.0))
check("B200 at 0.5: 6.3e24 / (2250e12 * 0.5 * 1024) / 86400 days", curves["B200"][at_half],
      6.3e24 / (2250e12 * 0.5 * 1024) / 86400, rel=1e-12)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Training costs about 6ND FLOPs (forward 2ND, backward 4ND); days = 6ND / (dense peak ×
#   MFU × GPUs) / 86 400. Use the *dense* peak: the spec sheet's headline is 2:4 sparse.
# - Arithmetic intensity (FLOPs per byte) decides memory- versus compute-bound: an eager
#   elementwise op is at 3/28, an n³ matmul at n/6.
# - 6ND leaves out attention: 2LTd/N extra (≈ T/(6d) without the vocabulary), 15% for
#   GPT-2 small at T = 1024, 66% for a 70B shape at 32K.
# - MFU = useful FLOP/s / the dense peak *of the dtype that ran*; changing dtype changes the
#   denominator, and HFU (recomputation counted) flatters, so compare runs by MFU.
# - Big, tile-friendly matmuls get closest to peak; small or awkward shapes (8191, 4097)
#   lose MFU without doing less useful work.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Recap: days = 6ND / (dense peak × MFU × GPUs) / 86 400; intensity decides memory- versus compute-bound.
# - Ask the room: what MFU did their last run reach, and against which peak?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises (from the self-test)
#
# For each question: fill in the `...` in the exercise cell, run it and the check cell
# under it (it says whether your answer is right, without giving it away), and expand the
# hidden solution only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Give 3 minutes per question: fill in the `...`, run the check cell.
# - Then expand the hidden solution live and point at the `✓ ... is right` lines.
# - Point at: Q4, 180 days at MFU 0.4 (25% longer than at 0.5).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Q4. A 70B model, 15T tokens, 1024 H100s, MFU 0.4: how many days?
#
# Work it out from $6ND$ and the dense bf16 peak. How much longer is it than at MFU 0.5?

# %% tags=["exercise"]
q4_days = ...  # training time at MFU 0.4, in days
q4_ratio = ...  # that time / the time at MFU 0.5 (a ratio)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("Q4, days at MFU 0.4", q4_days)
check_answer("Q4, time at MFU 0.4 / at MFU 0.5", q4_ratio)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. C = 6 * 70e9 * 15e12 = 6.3e24 FLOPs. Effective throughput = 989.5e12 * 0.4 *
# 1024 ≈ 4.05e17 FLOP/s, so the run takes 6.3e24 / 4.05e17 ≈ 1.55e7 s ≈ 180 days: 25%
# longer than at MFU 0.5 (144 days), since time is proportional to 1 / MFU. With the
# sparse 1979 TFLOP/s by mistake you would say 90 days.
flops_q4 = 6 * 70e9 * 15e12
throughput = 989.5e12 * 0.4 * 1024
seconds_q4 = flops_q4 / throughput
days_q4 = seconds_q4 / 86_400
check("effective throughput (FLOP/s)", throughput, 4.053e17, rel=1e-3)
check("seconds", seconds_q4, 1.554e7, rel=1e-3)
check("days at MFU 0.4", days_q4, 179.9, rel=1e-3)
check("agrees with training_days", training_days(flops_q4, "H100", 1024, 0.4), days_q4, rel=1e-12)
check("MFU 0.4 / MFU 0.5 time ratio", days_q4 / days_half, 1.25, rel=1e-12)
check("with the sparse peak by mistake", days_at(h100.sparse_flops["bf16"], 0.4), 89.96,
      rel=1e-3)

q4_days, q4_ratio = days_q4, days_q4 / days_half
check_answer("Q4, days at MFU 0.4", q4_days)
check_answer("Q4, time at MFU 0.4 / at MFU 0.5", q4_ratio)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E3.1. What MFU does a training log imply?
#
# A run of the course's `gpu` config (GPT-2 small, $T = 1024$) on 8 H100s in bf16 logs
# **2.0M tokens/s**. What MFU is that by $6ND$? By the exact count, which includes
# attention? (Hint: you can count the parameters of a model without allocating it by
# building it on the `meta` device.) Which of the two should the log report?

# %% tags=["exercise"]
e3_1_mfu_6nd = ...  # MFU by 6ND (a fraction, e.g. 0.5)
e3_1_mfu_exact = ...  # MFU by the exact count, attention included

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E3.1, MFU by 6ND", e3_1_mfu_6nd)
check_answer("E3.1, MFU by the exact count", e3_1_mfu_exact)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. N (non-embedding) = 123.6M, so 6N * 2.0e6 tokens/s = 1.48e15 FLOP/s against
# 8 * 989.5e12 = 7.92e15: MFU 0.187 by 6ND. The exact count is 3x the exact forward FLOPs
# (backward = 2x forward), 15% more at T = 1024 because of attention: MFU 0.216. Both are
# honest if labelled; the exact count is the "useful work" the model really needs.
# (Fused attention that skips the masked half does less work than either count, and
# LayerNorm's parameters make 6N a hair larger than the matmul weights alone.)
gpu_cfg = get_config("gpu")
with torch.device("meta"):  # shapes only: no memory, no initialisation cost
    meta_model = GPT(gpu_cfg)
N_gpu = n_params(meta_model, non_embedding=True)
tokens_per_s, n_h100 = 2.0e6, 8
cluster_peak = n_h100 * h100.peak("bf16")
mfu_6nd = 6 * N_gpu * tokens_per_s / cluster_peak
exact_per_token = 3 * transformer_flops(**gpu_cfg.flops_kwargs(1024)) / 1024
mfu_exact = exact_per_token * tokens_per_s / cluster_peak
print(f"N = {N_gpu:,}; MFU by 6ND {mfu_6nd:.3f}, by the exact count {mfu_exact:.3f}")
check("N of the gpu config (non-embedding)", N_gpu, 123_606_528)
check("MFU by 6ND", mfu_6nd, 0.1874, rel=1e-3)
check("MFU by the exact count", mfu_exact, 0.2160, rel=1e-3)
check("exact / 6ND", mfu_exact / mfu_6nd, 1.1524, rel=1e-3)

e3_1_mfu_6nd, e3_1_mfu_exact = mfu_6nd, mfu_exact
check_answer("E3.1, MFU by 6ND", e3_1_mfu_6nd)
check_answer("E3.1, MFU by the exact count", e3_1_mfu_exact)
