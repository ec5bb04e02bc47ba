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
# *How long will it take?* (§1.1, §3.1–§3.4, self-test Q4): the core path (about 17 minutes),
# then "Going deeper" sections. `✓` marks a checked claim.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §1.1 The opening estimate: how long does a 70B model take to train?
#
# $N = 70 \times 10^9$ parameters, $D = 15 \times 10^{12}$ tokens: about $6ND$ FLOPs ($2ND$ forward, $4ND$ backward, §3.3).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: the datasheet says 1979 TFLOP/s in bf16. Do we divide by that?

# %%
from fractions import Fraction

import torch

from lecture_utils import check, cuda_only, measured
from lecture_utils.flops import TrainingFlops  # forward, backward, and .total


# %% slideshow={"slide_type": "-"}
# @save lecture_utils/flops.py
def training_flops(n_params, n_tokens) -> TrainingFlops:
    """6ND: forward 2ND (a multiply-add per parameter per token), backward 4ND (§3.3)."""
    return TrainingFlops(forward=2 * n_params * n_tokens, backward=4 * n_params * n_tokens)


# %% tags=["claim-S1"]
N, D = 70_000_000_000, 15_000_000_000_000  # integers keep the arithmetic exact
C = training_flops(N, D)  # C.forward = 2ND, C.backward = 4ND
check("6ND for 70B params x 15T tokens (FLOPs)", C.total, 6_300_000_000_000_000_000_000_000)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The datasheet's headline figure is the sparse one: halve it
#
# The H100 datasheet's **1979 TFLOP/s** (bf16) is "with sparsity": it counts skipped zero
# weights as work. Training is dense: halve it, **989.5 TFLOP/s** (the hardware table's
# `.peak()`).

# %% [markdown]
# > **The notes say** the headline figure assumes "2:1 structured sparsity" (§1.1).
# > **In fact** NVIDIA's pattern is **2:4**: at most two nonzero values in every group of
# > four weights (NVIDIA Technical Blog, "NVIDIA Ampere Architecture In-Depth",
# > "Fine-grained structured sparsity"): the factor 2.

# %% tags=["claim-S2"]
from lecture_utils.hardware import find_accelerator

h100 = find_accelerator("H100")
check("H100 dense bf16 peak = 1979 x 2/4, two multiplies of every four (TFLOP/s)", h100.peak("bf16") / 1e12, 1979 * 2 / 4)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### About 144 days
#
# No run reaches the peak (communication, memory traffic, kernel launches, data loading).
# The fraction of it doing useful work is the **MFU** (§3.4); 0.5 is good. The notes'
# calculation, then at MFU 1:

# %% tags=["claim-S3"]
total_flops = 6 * 70e9 * 15e12          # 6.3e24 FLOPs
h100_flop_per_sec = 1979e12 / 2         # 989.5 TFLOP/s (BF16 dense peak)
mfu = 0.5
flops_per_day = h100_flop_per_sec * mfu * 1024 * 60 * 60 * 24
days = total_flops / flops_per_day      # ≈ 144 days
days_ideal = total_flops / (h100_flop_per_sec * 1.0 * 1024 * 60 * 60 * 24)
check("1024 H100s at MFU 0.5 (days)", round(days, 1), 143.9)
check("1024 H100s at MFU 1, the peak itself (days)", round(days_ideal, 1), 72.0)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the scale anchors, the sparse trap, and the estimate for other GPUs
#
# **For scale.** This run is 20 GPT-3s, a third of a GPT-4, under the $10^{26}$ FLOPs of the
# 2023 US reporting rule (EO 14110, revoked 2025). GPT-3's $3.14 \times 10^{23}$ is its paper's own figure (Brown et al. 2020,
# Table D.1: 3,640 petaflop/s-days, the figure `lecture_02.py` cites through Lambda's "Demystifying
# GPT-3"); $6ND$ with its 175B parameters and 300B tokens gives $3.15 \times 10^{23}$, the same to
# 0.3%. GPT-4's $2 \times 10^{25}$ is an outside estimate, not a published figure (`lecture_02.py`:
# "speculated", citing Pat McGuinness, "GPT-4 details revealed"). `lecture_02.py` titles its
# last anchor "8 H100s for 2 weeks" but multiplies by seven days, one week: $4.8 \times 10^{21}$;
# two weeks are twice that.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
gpt3 = training_flops(175_000_000_000, 300_000_000_000).total  # 6ND
gpt3_paper = 3640 * 1e15 * 86_400  # 3,640 petaflop/s-days
two_weeks = 8 * 2 * 7 * 86_400 * h100.peak("bf16")  # 8 H100s at the dense bf16 peak, MFU 1
check("GPT-3 (FLOPs): its paper's 3,640 petaflop/s-days, and 6ND", (f"{gpt3_paper:.3g}", f"{gpt3:.3g}"),
      ("3.14e+23", "3.15e+23"))
check("this run in GPT-3s and in GPT-4s (2e25), and under 1e26",
      (round(C.total / gpt3), round(C.total / 2e25, 2), C.total < 10**26), (20, 0.32, True))
check("8 H100s for 2 weeks at the dense bf16 peak (FLOPs); lecture_02.py's one week",
      (f"{two_weeks:.2g}", f"{two_weeks / 2:.2g}"), ("9.6e+21", "4.8e+21"))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The 2:4 pattern.** In a 2:4 sparse row two of every four weights are zero; the sparse
# tensor cores do only the other two multiplies, the share that turns 1979 into 989.5:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
row = torch.tensor([0.7, 0.0, -1.3, 0.0, 0.0, 0.2, 0.0, 0.9])  # 2:4 sparse: two zeros in every four
done = (row != 0).float().mean().item()  # the share of multiplies the sparse tensor cores really do
check("H100 dense bf16 peak = 1979 x that share (TFLOP/s)", 1979 * done, h100.peak("bf16") / 1e12)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The trap.** Plug in the sparse 1979 by mistake and the same MFU 0.5 gives 72 days: a
# plausible-looking number that is half the real time. The notes warn that the real time
# is easily 2–4× the "ideal" estimate; the full 4× is exactly this pair of mistakes:
# sparse peak *and* MFU 1.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import matplotlib.pyplot as plt


def days_at(peak_flops_per_s, mfu_, n_gpus=1024):
    return C.total / (peak_flops_per_s * mfu_ * n_gpus) / 86_400


days_sparse = days_at(h100.sparse_flops["bf16"], 0.5)
days_paper = days_at(h100.sparse_flops["bf16"], 1.0)
print(f"dense peak,  MFU 0.5: {days:6.1f} days  <- the honest estimate")
print(f"sparse peak, MFU 0.5: {days_sparse:6.1f} days  <- the sparse trap")
print(f"sparse peak, MFU 1.0: {days_paper:6.1f} days  <- the spec sheet's dream")
check("sparse at MFU 0.5 == dense at MFU 1 (days)", round(days_sparse, 6), round(days_ideal, 6))
check("the honest estimate / the dream", round(days / days_paper, 9), 4.0)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **A calculator.** Everything in the opening estimate fits in one formula: days = $6ND$ /
# (dense peak × MFU × GPUs) / 86 400. `training_days` computes it against any GPU of the
# hardware table, and the widget below puts it behind input boxes (it needs a live kernel; a
# static view shows only the widget's description, so a printed table follows).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.flops import training_days, training_time_table
from lecture_utils.widgets import training_time_calculator

training_time_calculator()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The static version: 70B parameters, 15T tokens, 1024 GPUs of each generation, at three
# MFUs, against the dense bf16 peak. The H200 row equals the H100 row: the same chip with
# more and faster memory, which a FLOP count cannot see (bandwidth only shows in the time of
# memory-bound work, like the elementwise op of §3.1). `tests/test_nb03_flops.py` checks the
# rows.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
GPUS = [("A100", 1024), ("H100", 1024), ("H200", 1024), ("B200", 1024)]
MFUS = (0.3, 0.5, 1.0)
table = training_time_table(N, D, GPUS, mfus=MFUS)
print(f"{'70B x 15T tokens':<18} {'GPUs':>5}" + "".join(f"{'MFU ' + str(m):>10}" for m in MFUS))
for name, count, days_by_mfu in table:
    print(f"{name:<18} {count:>5}" + "".join(f"{days_by_mfu[m]:>10.1f}" for m in MFUS))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The same formula for every GPU in the hardware table, as curves: days = $6ND$ /
# (dense bf16 peak × MFU × 1024) / 86 400 falls as 1/MFU, so halving MFU doubles the time
# on every chip. The dotted line marks the notes' MFU 0.5.

# %% caption="Training days for 6ND against MFU for each GPU's dense bf16 peak, 1024 GPUs." slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.1 Elementwise operations: cheap arithmetic, expensive traffic
#
# `y = torch.sin(x) + x * x` does **3 FLOPs** per element. Eager PyTorch runs each op as a
# kernel that reads its inputs from memory and writes its output back (fp32 bytes):
#
# | kernel | reads | writes |
# | :--- | ---: | ---: |
# | `s = sin(x)` | 4 | 4 |
# | `q = x * x` | 4 | 4 |
# | `y = s + q` | 8 | 4 |
#
# 28 bytes for 3 FLOPs. FLOPs per byte is the **arithmetic intensity**; below the *ridge
# point* (peak FLOP/s ÷ bandwidth; H100 fp32: 20) an op is **memory-bound**. Next: traced.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: on an H100, does `sin(x) + x*x` wait on the arithmetic or on memory?

# %% slideshow={"slide_type": "slide"} tags=["claim-S15"]
from lecture_utils.trace import OpLog


def sin_plus_square(x):
    return torch.sin(x) + x * x


x_small = torch.randn(1000)
with OpLog() as traffic:
    y_small = sin_plus_square(x_small)
eager_bytes = sum(read + written for _, read, written in traffic.ops) / x_small.numel()
intensity = Fraction(3, int(eager_bytes))  # FLOPs per byte moved
check("eager sin(x) + x*x, traced: bytes moved per element", eager_bytes, 28.0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Predict, then measure: a clock you can trust
#
# Three traps: a GPU op *returns before it has run* (the CPU only queues it), a first call
# pays one-off costs, one run is noisy. So: warm up, synchronize, take a median:

# %% slideshow={"slide_type": "-"}
import statistics
import time

SYNC = {"cuda": torch.cuda.synchronize, "mps": torch.mps.synchronize, "cpu": lambda: None}


def time_op(fn, *args, repeats=5):
    """Median seconds of fn(*args) after a warm-up call, the device idle around each timed call."""
    sync = SYNC[device.type]
    fn(*args)  # warm-up: the first call pays for allocation, kernel choice, cold caches
    times = []
    for _ in range(repeats):
        sync()  # start from an idle device (a GPU call returns before its kernels run) ...
        start = time.perf_counter()
        fn(*args)
        sync()  # ... and stop the clock when this call's work is done
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# %% [markdown] slideshow={"slide_type": "slide"}
# From here on `time_fn` times (`torch.utils.benchmark`) and prints the spread, threads (one
# to compare kernels, all to measure the machine), and whether the machine was too busy.
#
# If time followed FLOPs, a copy (`x.clone()`: 8 bytes per element, 0 FLOPs) would be free;
# by bytes, `sin(x) + x*x` takes $28/8 = 3.5$ copies: the prediction for a GPU (not yet
# measured on one, `docs/gpu/`). A CPU's `sin` costs dozens of instructions, so higher:

# %% tags=["claim-S15"]
from lecture_utils.bench import conditions, time_fn

g = torch.Generator().manual_seed(0)  # the timing's own draws: the global generator stays put
x = torch.randn(2**28 if device.type == "cuda" else 2**22, generator=g).to(device)  # 1 GiB, or 16 MiB
t_op, t_copy = time_fn(sin_plus_square, x, threads=1), time_fn(torch.clone, x, threads=1)  # two kernels compared
measured("sin(x) + x*x, achieved", 3 * x.numel() / t_op.median / 1e9, "GFLOP/s", spread=t_op)
measured("sin(x) + x*x, achieved traffic (28 B per element)", 28 * x.numel() / t_op.median / 1e9, "GB/s", spread=t_op)
measured("its time / a copy's (the bytes predict 3.5)", t_op.median / t_copy.median, spread=(t_op, t_copy))
if conditions(t_op, t_copy):  # asserts only on a trustworthy clock: noise never fails the cell
    assert 3.5 / 2 < t_op.median / t_copy.median < (10 if device.type == "cuda" else 100), (t_op, t_copy)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: what the counters see, and fusion
#
# **FLOPs.** A `sin` is really a dozen or more instructions, but the literature counts each
# elementwise op as one FLOP, or as zero. `FlopCounterMode`, the counter behind
# `count_flops`, counts zero: it has formulas only for matmuls, convolutions and attention.
# `count_flops` flags matmul-like ops that ran without a formula; elementwise ops are not
# matmul-like, so nothing is flagged either:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.flops import count_flops

ew = count_flops(sin_plus_square, x_small, backward=False)
check("FlopCounterMode: sin(x) + x*x costs", ew.forward, 0)
check("...and nothing is flagged as uncounted", ew.uncounted_ops, ())
ridge = h100.peak("fp32") / h100.hbm_bandwidth  # 67 TFLOP/s / 3.35 TB/s = 20 FLOP/byte
check("the H100's fp32 ridge point is this many times its intensity: memory-bound", round(ridge / intensity), 187)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The clock, checked.** `time_op` must wait for the device before and after each timed
# call (counted through a wrapper around this device's synchronize), and its median must
# land near `time_fn`'s, which `torch.utils.benchmark` takes.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
waits, real_sync = [], SYNC[device.type]
SYNC[device.type] = lambda: (waits.append(1), real_sync())
try:
    time_op(torch.clone, x_small, repeats=5)
finally:
    SYNC[device.type] = real_sync
check("time_op waits for the device before and after each of 5 timed calls", len(waits), 10)
t_lesson_op = time_op(sin_plus_square, x)  # on torch's default threads, as time_fn below
t_library = time_fn(sin_plus_square, x, threads=torch.get_num_threads(), min_run_time=0.05)
measured("torch.utils.benchmark's median / time_op's", t_library.median / t_lesson_op, spread=t_library)
if conditions(t_library):
    assert 0.1 < t_library.median / t_lesson_op < 10  # the same order of magnitude: a broken clock is off by far more

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Bytes.** The unavoidable traffic is to read `x` once and write `y` once: 4 + 4 = **8
# bytes per element** in fp32. That is what a *fused* kernel (one pass over memory) moves,
# and the traced eager table above, kernel by kernel (`x * x` passes the same tensor twice;
# a kernel reads it once):

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
n = x_small.numel()
print(f"{'kernel':<7} {'read B/elem':>12} {'written B/elem':>15}")
for name, read, written in traffic.ops:
    print(f"{name:<7} {read / n:>12g} {written / n:>15g}")
fused_bytes = (x_small.nbytes + y_small.nbytes) / n
check("fused minimum (read x, write y), bytes per element", fused_bytes, 8.0)
check("fused intensity (FLOP/byte), and fusion's cut in traffic",
      (Fraction(3, int(fused_bytes)), Fraction(int(eager_bytes), int(fused_bytes))),
      (Fraction(3, 8), Fraction(7, 2)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.2 Matrix multiplication is the main course
#
# For $Y = XW$ with $X \in \mathbb{R}^{B \times D}$ and $W \in \mathbb{R}^{D \times K}$, each
# of the $BK$ outputs is a sum of $D$ products: $D$ multiplies and $D$ adds. So
#
# $$\text{FLOPs}(XW) = 2BDK.$$
#
# `count_flops` (`FlopCounterMode`) counts the matmuls that ran. Leading dimensions are a
# batch, which is how FLOPs are counted per token:

# %%
# @save lecture_utils/flops.py
def matmul_flops(b, d, k):
    """FLOPs of (b x d) @ (d x k): b*k outputs, each d multiplies and d adds."""
    return 2 * b * d * k


# %% tags=["claim-S16"]
from lecture_utils.flops import count_flops

X, W = torch.randn(64, 128), torch.randn(128, 32)
check("(64x128) @ (128x32): FlopCounterMode's count == 2BDK", count_flops(torch.matmul, X, W, backward=False).forward, matmul_flops(64, 128, 32))
check("(4, 8, 16, 32) @ (32, 2) == 2BDK with B = 4*8*16", count_flops(
      torch.matmul, torch.randn(4, 8, 16, 32), torch.randn(32, 2), backward=False).forward, matmul_flops(4 * 8 * 16, 32, 2))

# %% [markdown] slideshow={"slide_type": "slide"}
# **Intensity of a matmul.** An $n^3$ matmul does $2n^3$ FLOPs and moves at least $3n^2$
# elements: $n/6$ FLOP/byte in fp32 ($n/3$ in bf16). It **grows with $n$**: a matmul is
# compute-bound once its intensity passes the ridge point. Predict, then measure on one core
# (sizes compared): small matmuls far below its best, large ones near it:

# %% tags=["claim-S17"]
from lecture_utils.bench import time_matmul
from lecture_utils.plots import plot_roofline

check("an n^3 fp32 matmul: 2n^3 FLOPs over 3n^2 x 4 bytes, n/6 FLOP/byte (n = 64, 1024)", [Fraction(matmul_flops(n, n, n), 3 * n * n * 4) for n in (64, 1024)], [Fraction(64, 6), Fraction(1024, 6)])
SIZES = [256, 512, 1024, 2048, 4096, 8192] if device.type == "cuda" else [8, 16, 32, 64, 128, 256, 512]
timings = {n: time_matmul(n, "fp32", device, threads=1, min_run_time=0.1) for n in SIZES}
fp32_rates = {n: matmul_flops(n, n, n) / t.median for n, t in timings.items()}
measured("fp32 matmuls, n: GFLOP/s", ", ".join(f"{n}: {r / 1e9:.3g}" for n, r in fp32_rates.items()) + " (1 thread)", per_device=True)
best, bandwidth = max(fp32_rates.values()), 8 * x.numel() / t_copy.median  # one core's roofs, measured
points = [("sin(x) + x*x", float(intensity), 3 * x.numel() / t_op.median)] + [(f"matmul n = {n}", n / 6, rate) for n, rate in fp32_rates.items()]
if conditions(*timings.values(), rising=list(fp32_rates.values())):
    assert fp32_rates[SIZES[-1]] > 5 * fp32_rates[SIZES[0]], fp32_rates  # largest far above smallest
    assert points[0][2] < best / 10, points[0]  # the elementwise op far below the best matmul

# %% caption="Measured roofline of one core of this machine: sin(x)+x*x and square fp32 matmuls, against the best matmul and the copy bandwidth timed here." slideshow={"slide_type": "slide"}
fig = plot_roofline(points, best, bandwidth, title=f"fp32 on one {device.type} core, measured: the roofs are the best matmul and the copy")

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the roofline from the spec sheet
#
# The **roofline** draws both limits at once: an op of intensity $I$ can reach at most
# $\min(\text{peak},\ \text{bandwidth} \times I)$ FLOP/s. Below, the H100's fp32 roofline
# from its spec sheet, with each op placed at the best it can reach. The elementwise op sits
# far left of the ridge: memory-bound. Matmuls move right as $n$ grows and reach the flat
# roof from $n = 128$. Matmuls dominate the FLOPs, but not necessarily the *time*:
# elementwise ops, norms and softmax do few FLOPs yet each pays full memory traffic.

# %% caption="H100 fp32 roofline from the spec sheet, with sin(x)+x*x and square matmuls at the best FLOP/s each can reach." slideshow={"slide_type": "skip"} tags=["deeper"]
import matplotlib.pyplot as plt


def matmul_intensity(n, bytes_per_element):
    return Fraction(matmul_flops(n, n, n), 3 * n * n * bytes_per_element)  # FLOPs / bytes moved


spec_peak, spec_bandwidth = h100.peak("fp32"), h100.hbm_bandwidth
ops = {"sin(x) + x*x (eager)": intensity} | {f"matmul n = {s}": matmul_intensity(s, 4)
                                             for s in (16, 64, 256, 1024, 4096)}
fig = plot_roofline([(label, float(i), min(spec_peak, spec_bandwidth * float(i))) for label, i in ops.items()],
                    spec_peak, spec_bandwidth, title="H100 fp32 roofline (spec sheet): the best each op can reach")
fig.axes[0].set_ylabel("attainable FLOP/s (at best)", fontsize=13)
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The numbers behind the picture: FLOPs, minimum bytes and intensity of square fp32
# matmuls, how many times the elementwise op's intensity each one reaches, and the
# smallest power-of-two $n$ at which each dtype's matmul passes the H100's ridge.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
print(f"{'n':>5} {'FLOPs':>10} {'min bytes':>10} {'FLOP/byte':>10} {'x elementwise':>14}")
for size in (64, 256, 1024, 4096, 8192):
    i = matmul_intensity(size, 4)
    print(f"{size:>5} {matmul_flops(size, size, size):>10.3g} {3 * size * size * 4:>10.3g} "
          f"{float(i):>10.1f} {float(i / intensity):>14,.0f}")
check("n x n fp32 matmul: intensity == n/6", [matmul_intensity(s, 4) for s in (64, 1024, 8192)],
      [Fraction(64, 6), Fraction(1024, 6), Fraction(8192, 6)])
first_compute_bound = {dt: min(2**p for p in range(4, 14)  # n = 16 ... 8192
                               if matmul_intensity(2**p, nbytes) > h100.peak(dt) / h100.hbm_bandwidth)
                       for dt, nbytes in (("fp32", 4), ("bf16", 2))}
check("H100: the smallest power-of-two n at which an n^3 matmul is compute-bound", first_compute_bound,
      {"fp32": 128, "bf16": 1024})

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# How to read the measured roofline of the core: on a CPU, small tensors can land *above*
# the slanted roof (they fit in cache, faster than the memory the copy was timed on), and
# the elementwise point sits far *below* it because a CPU `sin` costs many instructions,
# not the 1 FLOP of our convention. On a GPU, matmuls below $n \approx 1024$ are limited by
# launch and tile overheads rather than by either roof.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.3 A first-order estimate of training FLOPs: 6ND
#
# Forward, every weight does one multiply-add per token: $2ND$. Backward does two matmuls
# for each forward one (weight gradient, input gradient): $4ND$. Notebook 04 counts and
# times that factor 2; here, what $6ND$ leaves out.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: which matmuls does 6ND not see, and when do they matter?

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The attention term that 6ND leaves out
#
# $QK^\top$ and $AV$ have no weights: $6ND$ misses their $4Td$ FLOPs per token per layer,
# $T/(6d)$ of a block's $24d^2$ (22% at $T = 1024$, $d = 768$), small while $T \ll 6d$ (the
# notes). For the model, $2LTd/N$; the course's GPT-2 small counts its untied output layer
# in $N$ = 123.6M (not the usual 85M): 15%, or 7.6% skipping the masked half:

# %% tags=["claim-S18"]
from lecture_utils.flops import transformer_flops_breakdown
from lecture_utils.models import get_config


def over_6nd(**shape):
    # exact FLOPs / 6ND's count: all of attention, then with the masked half skipped
    parts = transformer_flops_breakdown(**shape)
    attention = parts["attention scores (QK^T)"] + parts["attention weighted sum (AV)"]
    weights = sum(parts.values()) - attention  # 2 * N * T, N = the matmul weights
    return round(1 + attention / weights, 3), round(1 + attention / 2 / weights, 3)


gpt2_small = get_config("gpu").flops_kwargs(1024)
check("the whole model (N = 123.6M): exact / 6ND, and with the masked half skipped", over_6nd(**gpt2_small), (1.153, 1.076))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the gap to 6ND exactly, fused attention, and the attention term against T
#
# On the tiny model (2 sequences of 128 tokens) two things separate the count from
# $2N \times \text{tokens}$, with $N$ the non-embedding parameters:
#
# * **Attention does matmuls that have no parameters.** $QK^\top$ and $AV$ each cost
#   $2T^2d$ per layer per sequence; the pair costs $4Td$ per token per layer.
# * **LayerNorm has parameters that do no matmul.** Its scale and shift are in $N$, so
#   $2N$ overcounts them by 2 FLOPs per parameter per token. (The course's `Linear` has no
#   bias; a bias would be another such parameter.) Embedding lookups are not matmuls and are
#   not in $N$; the output layer is a matmul, and it is.
#
# Together these explain the gap exactly. First the count itself, backward twice the forward:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.models import GPT

cfg = get_config("tiny")
model = GPT(cfg)
idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))  # 2 sequences of 128 tokens
counted = count_flops(model, idx)  # forward, then backward
check("backward == 2 x forward (4ND == 2 x 2ND)", counted.backward, 2 * counted.forward)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.flops import transformer_flops
from lecture_utils.models import n_params

batch, seq = idx.shape
tokens = batch * seq
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
exact_per_seq = transformer_flops(**cfg.flops_kwargs(seq))
parts = transformer_flops_breakdown(**cfg.flops_kwargs(seq))
check("attention term == QK^T + AV parts of the exact count",
      attention, batch * (parts["attention scores (QK^T)"] + parts["attention weighted sum (AV)"]))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Where the exact forward FLOPs of the tiny model go, per sequence. The vocabulary (8192) is
# large next to $d_\text{model} = 64$, so the output layer dominates:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
for part, flops in parts.items():
    print(f"{part:<28} {flops:>12,}  {flops / exact_per_seq:6.1%}")

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **A silent zero: fused attention on the CPU.** The same model with `attention="sdpa"`
# calls `F.scaled_dot_product_attention`, which on a GPU dispatches to fused kernels
# (FlashAttention and friends). On the CPU it runs an op that `FlopCounterMode` has **no
# formula for**, so the attention matmuls are counted as zero and the total is too low.
# `count_flops` names the op in `uncounted_ops`, so the number below is labelled as an
# undercount rather than silently trusted:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# On CUDA, `FlopCounterMode` *does* have formulas for the fused attention kernels, so the
# forward count is exact again. (Its backward formula also counts the recomputation of the
# attention scores that fused kernels do, so the backward can come out a little above 2×
# the forward.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if cuda_only(device, "counting fused (sdpa) attention on CUDA"):
    with torch.device(device):  # initialised on the GPU, from its own random stream
        gpu_model = GPT(get_config("tiny", attention="sdpa"))
    gpu_counted = count_flops(gpu_model, idx.to(device))
    measured("sdpa on CUDA: forward count", f"{gpu_counted.forward:,}", per_device=True)
    measured("sdpa on CUDA: backward / forward", gpu_counted.backward / gpu_counted.forward, per_device=True,
             ref="sdpa-backward-forward")
    measured("sdpa on CUDA: uncounted ops", gpu_counted.uncounted_ops, per_device=True)
    assert gpu_counted.forward == counted.forward, (gpu_counted.forward, counted.forward)
    assert gpu_counted.backward >= 2 * gpu_counted.forward
    del gpu_model

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The attention term against $T$.** Per token and per layer, attention adds $4Td$ FLOPs
# to the forward pass, while the weights cost $2N$ per token in all. With $N$ the matmul
# weights, the exact count over the estimate is
#
# $$\frac{\text{exact}}{2NT} = 1 + \frac{4LTd}{2N} = 1 + \frac{2LTd}{N}.$$
#
# It grows linearly in $T$, and the attention term equals the parametric one at
# $T^* = N / (2Ld)$. For a standard block ($N \approx 12Ld^2$, ignoring the output layer)
# that is $T^* \approx 6d$ (a large vocabulary pushes it higher). The formula is checked
# against `transformer_flops` for GPT-2 small and a 70B-shaped model (80 layers,
# $d = 8192$), at $T$ = 128, 256, ..., 32K, without building either model.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
MODELS = {"GPT-2 small (gpu config)": {k: v for k, v in gpt2_small.items() if k != "seq_len"},
          # 70B-shaped: plain multi-head attention and a 4d MLP, so N = 64.7B, not Llama's 70B
          "70B-shaped": {"n_layers": 80, "d_model": 8192, "n_heads": 64, "vocab_size": 32000,
                         "d_ff": 32768}}
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
check("70B-shaped at T = 4K and at 32K: ratio",
      (round(float(ratios["70B-shaped"][5]), 3), round(float(ratios["70B-shaped"][8]), 3)), (1.083, 1.664))

# %% caption="Exact forward FLOPs over 2NT against sequence length: the attention term grows linearly in T." slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The notes say the attention term is small "when the context is well below the model
# width" and must be added back "for long contexts (32K+)". Both hold; the numbers show
# where the line falls:
#
# * Per block the comparison is $T$ against $6d$: GPT-2 small at its own context (1024,
#   above its width of 768) adds 22% per block, **15%** over the whole model, whose $N$
#   includes the untied 38.6M output layer; at $T = 8192$ its attention costs more than its
#   weights.
# * For the 70B shape, $6d = 49{,}152$: 8% extra at 4K tokens, and **66%** extra at 32K.
#   "32K+" is about right for that width; a small model gets there much earlier.
# * Our count (like `FlopCounterMode`) computes each full $T \times T$ matrix and then masks
#   it; kernels that skip masked blocks do about half the attention work, so the real extra
#   is roughly half of what is plotted.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §3.4 FLOPs, FLOP/s and MFU
#
# | name | meaning |
# | :--- | :--- |
# | **FLOPs** | an *amount* of floating-point work |
# | **FLOP/s** | a *rate*, the speed of hardware (also written FLOPS) |
#
# An amount over a rate is a time. Next, the notes' dense peaks (BF16 15–16× FP32), and what
# their FP32 figures count.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: a job moves to bf16 and runs 6× faster. Does its MFU go up?

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** the table gives tensor-core peaks, FP32 included (§3.4). **In fact** the
# > FP32 figures (19.5 and 67 TFLOP/s) are the CUDA-core rates; fp32 on the tensor cores is
# > TF32, 156 TFLOP/s dense on the A100 and 494.5 on the H100 (NVIDIA A100 and H100 Tensor
# > Core GPU datasheets, "TF32 Tensor Core", halved from the sparse figures). PyTorch's fp32
# > matmuls use the CUDA cores by default (`torch.get_float32_matmul_precision() == "highest"`).

# %% tags=["claim-S19"]
peaks = {g: {dt: find_accelerator(g).peak(dt) / 1e12 for dt in ("fp32", "tf32", "bf16")} for g in ("A100", "H100")}
check("(FP32, BF16) as in the notes (TFLOP/s)", {g: (p["fp32"], p["bf16"]) for g, p in peaks.items()},
      {"A100": (19.5, 312.0), "H100": (67.0, 989.5)})
check("BF16 / FP32, rounded", {g: round(p["bf16"] / p["fp32"], 1) for g, p in peaks.items()}, {"A100": 16.0, "H100": 14.8})
check("TF32, fp32 on the tensor cores (TFLOP/s)", {g: p["tf32"] for g, p in peaks.items()}, {"A100": 156.0, "H100": 494.5})

# %% [markdown] slideshow={"slide_type": "slide"}
# ### MFU: achieved over peak
#
# $$\text{MFU} = \frac{\text{achieved useful FLOP/s}}{\text{peak FLOP/s}}$$
#
# *Useful*: $6ND$, not recomputation. *Peak*: the dense peak of the dtype that ran (bf16 can
# run faster at a *worse* MFU): a GPU's datasheet figure, a CPU's **nominal** cores × clock ×
# FLOP per cycle. Never the best rate measured: that makes MFU at most 1 by construction.

# %% tags=["claim-S20"]
from lecture_utils.bench import mfu_text, peak_flops

check("400 TFLOP/s on an H100: MFU against the TF32 peak, against the BF16 peak", (round(400e12 / h100.peak("tf32"), 2), round(400e12 / h100.peak("bf16"), 2)), (0.81, 0.4))
n = 4096 if device.type == "cuda" else 512
useful = matmul_flops(n, n, n)  # predicted: 2n^3 useful FLOPs per matmul
a, b = torch.randn(n, n, generator=g).to(device), torch.randn(n, n, generator=g).to(device)
check("FlopCounterMode's count of the timed matmul / 2n^3", count_flops(torch.matmul, a, b, backward=False).forward / useful, 1.0)

# %% slideshow={"slide_type": "slide"}
mfu_timings, achieved, peaks = {}, {}, {}
for dt, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
    a, b = a.to(dtype), b.to(dtype)
    mfu_timings[dt], peaks[dt] = time_fn(torch.matmul, a, b), peak_flops(device, dt)  # the machine: every core
    achieved[dt] = useful / mfu_timings[dt].median
    measured(f"{dt} peak", peaks[dt])
    measured(f"{dt} achieved", achieved[dt] / 1e12, "TFLOP/s", spread=mfu_timings[dt])
    measured(f"{dt} MFU = achieved / peak", mfu_text(achieved[dt], peaks[dt]))
mfu_reliable = conditions(*mfu_timings.values())
if mfu_reliable:  # a clock that missed the work, or a wrong count, lands far outside
    for dt, peak in peaks.items():
        assert peak.flops_per_s is None or 0.01 < achieved[dt] / peak.flops_per_s < 3, (dt, achieved, peak)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: MFU across dtypes, sizes and shapes

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **bf16 against fp32.** The prediction on an H100 (not yet measured on a GPU here,
# `docs/gpu/`): bf16 many times faster than fp32 at about the same MFU, its peak being 14.8×
# higher. A CPU runs bf16 fast only with bf16 units (AVX-512 BF16 or AMX on x86); without them
# torch converts every element to fp32 and back, about 50× *slower* than fp32 (46× measured on a
# 2-core Zen 3). The core's two timings, on this machine:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.hardware import cpu_spec

has_units = device.type != "cpu" or cpu_spec().flops_per_cycle("bf16") is not None
speed = mfu_timings["fp32"].median / mfu_timings["bf16"].median
measured("bf16 speed / fp32 speed", f"predicted above 1 (bf16 units), measured {speed:.3g}" if has_units
         else f"predicted below 1/5 (no bf16 units: emulated), measured {speed:.3g}",
         spread=(mfu_timings["fp32"], mfu_timings["bf16"]))
if mfu_reliable:
    assert speed > 1 if has_units else speed < 0.2, speed

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **A sweep.** Each dtype timed at two sizes, because small shapes lower MFU (idle cores,
# fixed overheads weigh more); on a GPU the sweep adds TF32, the fp32 tensor-core mode. Each
# MFU is against the same peak as the core's: a datasheet's, or this CPU's nominal one.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.flops import mfu as mfu_of

ON_GPU = device.type == "cuda"
MFU_SIZES = (1024, 4096) if ON_GPU else (128, 512)
MFU_DTYPES = ["fp32", "tf32", "bf16"] if ON_GPU else ["fp32", "bf16"]
rates_by_dtype, sweep_timings = {}, []
for dt in MFU_DTYPES:
    dt_peak = peak_flops(device, dt)
    rates_by_dtype[dt] = {}
    for size in MFU_SIZES:
        sweep_timings.append(time_matmul(size, dt, device, min_run_time=0.05))
        rates_by_dtype[dt][size] = matmul_flops(size, size, size) / sweep_timings[-1].median
        measured(f"  {dt} {size}^3 matmul", f"{rates_by_dtype[dt][size] / 1e12:.3g} TFLOP/s, "
                 f"{mfu_text(rates_by_dtype[dt][size], dt_peak)}", per_device=True)
sweep_reliable = conditions(*sweep_timings)  # its line printed; the value is not shown

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The timings taken so far, as one picture: achieved FLOP/s against matmul size, one line
# per dtype (the fp32 sizes of §3.2's roofline plus this sweep's sizes; nothing is re-timed). Small
# matmuls cannot keep the machine busy; the curves flatten as they approach the peak.

# %% caption="Measured matmul throughput against matrix size for each dtype on this machine." slideshow={"slide_type": "skip"} tags=["deeper"]
for size, rate in fp32_rates.items():  # the fp32 sweep of §3.2
    rates_by_dtype["fp32"][size] = max(rate, rates_by_dtype["fp32"].get(size, 0.0))
fig, ax = plt.subplots(figsize=(10, 5))
for dt, by_size in rates_by_dtype.items():
    sizes_dt = sorted(by_size)
    ax.plot(sizes_dt, [by_size[s] / 1e9 for s in sizes_dt], "o-", lw=2.5, ms=8, label=dt)
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
      {dt: (len(set(SIZES) | set(MFU_SIZES)) if dt == "fp32" else 2) for dt in MFU_DTYPES})

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **MFU versus HFU.** MFU counts only the model's own FLOPs ($6ND$ per step). **HFU**
# (hardware FLOPs utilisation) counts every FLOP the chip executes, recomputation included:
# with full activation checkpointing the forward pass runs twice, $8ND$ per step, so HFU =
# 4/3 × MFU for the same step. Recomputation is not useful work: a run that recomputes is
# slower and has a *lower* MFU, yet its HFU can look better. Compare runs by MFU, which
# counts only useful work (the notes' numerator), against the same dtype's peak.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
n_ex, d_ex, peak_ex = 124e6, 0.5e6, h100.peak("bf16")  # 124M params, 0.5M tokens per step
t_plain = 6 * n_ex * d_ex / (0.45 * peak_ex)  # a step at MFU 0.45 without recomputation
t_ckpt = 1.25 * t_plain                       # the same step, recomputing the forward
mfu_plain = mfu_of(6 * n_ex * d_ex, t_plain, peak_ex)
mfu_ckpt = mfu_of(6 * n_ex * d_ex, t_ckpt, peak_ex)
hfu_ckpt = mfu_of(8 * n_ex * d_ex, t_ckpt, peak_ex)  # hardware FLOPs: the forward counted twice
check("MFU without recomputation", round(mfu_plain, 9), 0.45)
check("MFU with recomputation (25% slower step)", round(mfu_ckpt, 9), 0.36)
check("HFU with recomputation = 4/3 x its MFU", round(hfu_ckpt, 9), 0.48)
check("HFU of the slower run exceeds the faster run's MFU", hfu_ckpt > mfu_plain, True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The best case on a GPU.** A large bf16 matmul is the best any training step can hope
# for: one big, tile-friendly shape and nothing else. The cell below prints what it reaches
# here. One published measurement (Bekman's maximum achievable matmul FLOPS table, searched
# over shapes) is 794.5 TFLOP/s on an H100, 80.3% of the dense peak (docs/gpu/reference.md, row `bf16-gemm-8192`); `benchmarks/matmul_mfu.py`
# compares this shape with it (a notebook prints timings; speed targets live in the
# benchmarks).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if cuda_only(device, "the MFU of an 8192^3 bf16 matmul"):
    big, gpu_peak = matmul_flops(8192, 8192, 8192), peak_flops(device, "bf16")
    big_timing = time_matmul(8192, "bf16", device, min_run_time=0.5)
    rate = big / big_timing.median
    measured("8192^3 bf16 matmul", rate / 1e12, "TFLOP/s", per_device=True, ref="bf16-gemm-8192")
    measured("its MFU", f"{mfu_text(rate, gpu_peak)} ({gpu_peak.source})", per_device=True)
    if gpu_peak.flops_per_s is not None:
        assert 0 < rate / gpu_peak.flops_per_s < 1, f"MFU {rate / gpu_peak.flops_per_s:.2f}: the FLOP count or the peak is wrong"

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Tile-unfriendly shapes lose MFU.** Matmul kernels work in fixed tiles (on a GPU e.g.
# 128 × 128 outputs per thread block, with K consumed in steps too; below, 128 in all three
# dimensions for simplicity) and load rows with wide, aligned memory instructions. A
# dimension one short of a power of two, 8191 instead of 8192, does 0.04% *fewer* FLOPs, but
# its rows are no longer 16-byte aligned (8191 × 2 bytes in bf16), so the library falls back
# to slower kernels or pads; one *over* (4097) costs a whole extra row of tiles. MFU counts
# only the useful FLOPs, so either way it drops. The same pair is timed below at a size this
# device handles quickly: 8191 vs 8192 in bf16 on a GPU, 511 vs 512 in fp32 on a CPU. The
# numbers are printed, not asserted: on a CPU the library often hides most of the penalty.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
TILE = 128
check("4097 needs 33 tiles of 128 per side, 4096 only 32: (33/32)**3 the tile work",
      (-(-4097 // TILE), 4096 // TILE, round(33**3 / 32**3, 3)), (33, 32, 1.097))
check("rows of 8192 bf16 are 16-byte aligned, rows of 8191 are not",
      ((8192 * 2) % 16, (8191 * 2) % 16), (0, 14))
check("8191^3 does fewer FLOPs than 8192^3 (ratio)",
      round(matmul_flops(8191, 8191, 8191) / matmul_flops(8192, 8192, 8192), 5), 0.99963)

pair, tile_dtype = ((8191, 8192), "bf16") if ON_GPU else ((511, 512), "fp32")
tile_timings = {s: time_matmul(s, tile_dtype, device, threads=1, min_run_time=0.1) for s in pair}  # kernels compared
tile_rates = {s: matmul_flops(s, s, s) / t.median for s, t in tile_timings.items()}
for s, rate in tile_rates.items():  # per_device: the pair and dtype differ on a GPU
    measured(f"{tile_dtype} {s}^3 matmul", rate / 1e9, "GFLOP/s", per_device=True, spread=tile_timings[s])
measured(f"{pair[0]} / {pair[1]} throughput (1 = no penalty)",
         tile_rates[pair[0]] / tile_rates[pair[1]], per_device=True, spread=tuple(tile_timings.values()))
tile_reliable = conditions(*tile_timings.values())  # its line printed; the value is not shown

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Training ≈ 6ND FLOPs; days = 6ND / (dense peak × MFU × GPUs).
# - FLOPs per byte: memory- or compute-bound (`sin(x) + x*x` 3/28, an n³ matmul n/6).
# - 6ND leaves out attention: T/(6d) per block, 2LTd/N for the model.
# - Time honestly: warm up, synchronize, median, spread, threads.
# - MFU = useful FLOP/s / the dense peak *of the dtype that ran* (datasheet, or nominal), never a measured rate.

# %% [markdown] slideshow={"slide_type": "-"}
# ## Exercises (from the self-test)
#
# Fill in the `...`, run the cell and the check under it (right or not, never the answer),
# then expand the hidden solution.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room (Q4): more or less than the 144 days at MFU 0.5, and by what factor?

# %% [markdown] slideshow={"slide_type": "-"}
# ### Q4. A 70B model, 15T tokens, 1024 H100s, MFU 0.4: how many days?
#
# Work it out from $6ND$ and the dense bf16 peak. How much longer is it than at MFU 0.5?

# %% tags=["exercise"]
q4_days = ...  # training time at MFU 0.4, in days
q4_ratio = ...  # that time / the time at MFU 0.5 (a ratio)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("Q4, days at MFU 0.4", q4_days)
check_answer("Q4, time at MFU 0.4 / at MFU 0.5", q4_ratio)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "claim-S39"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. C = 6 \* 70e9 \* 15e12 = 6.3e24 FLOPs. Effective throughput = 989.5e12 \* 0.4 \*
# 1024 ≈ 4.05e17 FLOP/s, so the run takes 6.3e24 / 4.05e17 ≈ 1.55e7 s ≈ 180 days: 25% longer
# than at MFU 0.5 (144 days), since time is proportional to 1 / MFU. With the sparse 1979
# TFLOP/s by mistake you would say 90 days.
#
# ```python
# days_q4 = 6 * 70e9 * 15e12 / (989.5e12 * 0.4 * 1024) / 86_400
# check("days at MFU 0.4", round(days_q4, 1), 179.9)
#
# q4_days, q4_ratio = days_q4, days_q4 / days
# check_answer("Q4, days at MFU 0.4", q4_days)
# check_answer("Q4, time at MFU 0.4 / at MFU 0.5", q4_ratio)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, for practice after the lecture: the MFU a real training log implies.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E3.1. What MFU does a training log imply?
#
# The course's `gpu` config (GPT-2 small, $T = 1024$) trains on 8 H100s in bf16 at **2.0M
# tokens/s**. What MFU is that by $6ND$? By the exact count, attention included? Which should
# the log report? (A model built on the `meta` device has parameters but no memory.)

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e3_1_mfu_6nd = ...  # MFU by 6ND (a fraction, e.g. 0.5)
e3_1_mfu_exact = ...  # MFU by the exact count, attention included

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E3.1, MFU by 6ND", e3_1_mfu_6nd)
check_answer("E3.1, MFU by the exact count", e3_1_mfu_exact)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. N (non-embedding) = 123.6M: the 12 blocks' 85M (GPT-2 small's usual N) plus this
# model's untied output layer, 38.6M weights that do a matmul for every token. 6N \* 2.0e6
# tokens/s = 1.48e15 FLOP/s against 8 \* 989.5e12 = 7.92e15: MFU 0.187 by 6ND. The exact
# count is 15% more at T = 1024 because of attention (§3.3's over_6nd): MFU 0.216. Both are
# honest if labelled; the exact count is the "useful work" the model really needs. A fused
# attention kernel that skips the masked half does less work than the exact count but more
# than 6ND: half of the attention term, about 1.076 x 6ND for this model at T = 1024 (§3.3
# checks it). LayerNorm's parameters make 6N a hair larger than the matmul weights alone.
#
# ```python
# from lecture_utils.models import GPT, n_params
#
# with torch.device("meta"):  # shapes only: no memory, no initialisation cost
#     N_gpu = n_params(GPT(get_config("gpu")), non_embedding=True)
# e3_1_mfu_6nd = 6 * N_gpu * 2.0e6 / (8 * h100.peak("bf16"))  # useful FLOP/s / the 8 GPUs' peak
# e3_1_mfu_exact = e3_1_mfu_6nd * over_6nd(**gpt2_small)[0]
# check_answer("E3.1, MFU by 6ND", e3_1_mfu_6nd)
# check_answer("E3.1, MFU by the exact count", e3_1_mfu_exact)
# ```
#
# </details>
