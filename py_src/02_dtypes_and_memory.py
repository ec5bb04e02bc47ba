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
# # 02 · dtypes and memory: what every number costs
#
# Lecture 2, §2, §2.1 and §1.2, and self-test Q2 and Q3: the core path below is the lecture
# (about 16 minutes to read), and "Going deeper" sections hold the details.
# The question is the lecture's first: *will it fit?* A `✓` line is a checked claim; a
# `[measured]` line depends on the machine.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2 A tensor's memory is numel × bytes per element
#
# Parameters, gradients, optimizer state, batches and activations are all tensors, so
# memory accounting starts with one rule: $\text{memory} = \text{numel} \times
# \text{bytes per element}$. `numel` is the product of the shape; the dtype sets the bytes.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: how many bytes does a 4 × 8 × 16 float32 tensor take? And in bf16, in fp8?
# - Run live: the cell below, and compare with the storage torch allocated.

# %% tags=["claim-S7"]
import torch

from lecture_utils import check, measured

x = torch.zeros(4, 8, 16)  # float32 by default
check("numel × bytes per element = 512 × 4", x.numel() * x.element_size(), 2048)
dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
check("bytes torch allocated in fp32, fp16, bf16, fp8 e4m3, fp8 e5m2",
      [torch.empty(4, 8, 16, dtype=dt).untyped_storage().nbytes() for dt in dtypes], [2048, 1024, 1024, 512, 512])

# %% [markdown] slideshow={"slide_type": "slide"}
# **On the device.** A tensor starts on the CPU; `.to(device)` copies it (or returns it when
# it is already there). Predict, then measure what the allocator hands out (`Allocated`:
# `memory_allocated()` on a GPU, the allocator's events on a CPU): one 32 × 32 fp32 tensor
# moved there, one created there, then that one cast to bf16:

# %% tags=["claim-S7"]
from lecture_utils.allocator import Allocated

w = torch.zeros(32, 32)  # on the CPU, the default device: 32 * 32 * 4 = 4096 bytes
with Allocated(device) as grown:
    moved, created = w.to(device), torch.zeros(32, 32, device=device)
with Allocated(device) as to_bf16:
    half = created.to(torch.bfloat16)
check("bytes each holds on the device: numel × element_size", [t.untyped_storage().nbytes() for t in (moved, created, half)], [4096, 4096, 2048])
predicted = (4096 * (1 if moved is w else 2), 32 * 32 * 2)  # on the CPU, w.to(device) is w itself: nothing copied
measured("bytes allocated: moving and creating, then the cast", f"{grown.bytes:,} and {to_bf16.bytes:,} (predicted {predicted[0]:,} and {predicted[1]:,}; {grown.counter})")
assert (grown.bytes, to_bf16.bytes) == predicted, (grown.bytes, to_bf16.bytes)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: a slice keeps its parent's storage alive
#
# The rule counts a tensor's *own* elements. A slice is a view that shares its parent's
# storage (notebook 01), so holding on to a small slice keeps the whole storage alive.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.sizes import tensor_bytes

row = x[0]
check("x[0]: its own bytes, and the storage it keeps alive", (tensor_bytes(row), row.untyped_storage().nbytes()),
      (8 * 16 * 4, 2048))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.1 The dtype sets the cost of every number
#
# A floating-point number has a **sign** bit, **exponent** bits that set the *range* (how
# large and how small it can be) and **mantissa** bits that set the *precision* (how many
# significant digits it keeps). Fewer bits save memory and bandwidth, and narrow the range,
# the precision, or both. Next, the notes' table: `dtype_info` reads it from `torch.finfo`,
# so nothing in it is typed in.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: fp16 and bf16 both take 2 bytes. Where do their 15 bits after the sign go?
# - Run live: the table, the 1e-8 cell, then `1 + 1/256` in bf16.
# - Ask the room: what does one GPT-3 FFN weight matrix cost in fp32, and in bf16?

# %% slideshow={"slide_type": "slide"} tags=["claim-S8"]
import matplotlib.pyplot as plt

from lecture_utils.dtypes import dtype_info
from lecture_utils.plots import plot_bit_layout

FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
infos = {name: dtype_info(name) for name in FLOATS}
print(f"{'dtype':<14} {'s/e/m':<8} {'bytes':>5} {'max':>10} {'smallest normal':>16} {'eps':>9}")
for name, i in infos.items():
    layout = f"{i.sign_bits}/{i.exponent_bits}/{i.mantissa_bits}"
    print(f"{name:<14} {layout:<8} {i.bytes:>5} {i.max:>10.4g} {i.smallest_normal:>16.4g} {i.eps:>9.4g}")
check("s/e/m bits and bytes, as in the notes' table",
      [(i.sign_bits, i.exponent_bits, i.mantissa_bits, i.bytes) for i in infos.values()],
      [(1, 8, 23, 4), (1, 5, 10, 2), (1, 8, 7, 2), (1, 4, 3, 1), (1, 5, 2, 1)])
check("largest fp16, fp8 e4m3, fp8 e5m2", [infos[n].max for n in ("float16", "float8_e4m3fn", "float8_e5m2")], [65504.0, 448.0, 57344.0])

# %% caption="Bit layout of each floating-point dtype: sign, exponent and mantissa bits, fp32 down to fp8." slideshow={"slide_type": "slide"}
plot_bit_layout(FLOATS)  # to scale: fp16 spends its bits on precision, bf16 on range (fp32's exponent)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Underflow: fp16 loses small numbers, bf16 keeps them
#
# The notes' example is a value like 1e-8, the size of a small gradient. Store it, and
# read back what the dtype kept:

# %% tags=["claim-S9"]
def cast(value, dtype):
    """Store a Python float in ``dtype`` and read back the value actually stored."""
    return torch.tensor(value, dtype=dtype).item()


fp16, bf16 = torch.float16, torch.bfloat16
check("1e-8 in fp16: underflows to 0", cast(1e-8, fp16), 0.0)
check("1e-8 in bf16, divided by 1e-8 (3 decimals)", round(cast(1e-8, bf16) / 1e-8, 3), 1.001)

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** (§2.1, the dtype table) fp16 "underflows below 6×10⁻⁵". **In fact**
# > $6.1\times10^{-5} = 2^{-14}$ is fp16's smallest *normal* number. Below it come the
# > subnormals of IEEE 754 (binary16: the exponent field is 0 and the leading 1 becomes a
# > 0), which keep values down to $2^{-24} \approx 6\times10^{-8}$ with fewer and fewer
# > significant bits: the loss is gradual, and exact zeros start far lower.

# %% tags=["claim-S8"]
check("fp16's smallest normal is 2**-14", infos["float16"].smallest_normal, 2.0**-14)
check("1e-6 survives as a subnormal: stored / 2**-24 (1.3% off)", cast(1e-6, fp16) / 2.0**-24, 17.0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Precision: what bf16 gives up
#
# bf16 keeps only 7 mantissa bits: the gap after 1 (`eps`) is $2^{-7} = 1/128$, and an
# update of half of it or less vanishes (half exactly is a tie, which rounds to even: to 1).
# This is why sums, optimizer state and master weights are kept in fp32.

# %%
check("bf16: eps; 1 + 1/256 (half of eps, a tie) and 1 + 1/512 stored, both updates lost",
      (infos["bfloat16"].eps, cast(1 + 1 / 256, bf16), cast(1 + 1 / 512, bf16)), (1 / 128, 1.0, 1.0))

# %% [markdown] slideshow={"slide_type": "slide"}
# ### A real matrix: one GPT-3 FFN weight
#
# GPT-3 175B has $d_\text{model} = 12288$, and its feed-forward layer widens that to
# $4 d_\text{model} = 49152$. A tensor on the `meta` device has a shape and a dtype but
# no data, so the `[12288, 49152]` matrix costs nothing to "create". GB = 10⁹ bytes (spec
# sheets, the lecture), GiB = 2³⁰ bytes (`nvidia-smi`, allocators): 7% apart.

# %% tags=["claim-S10"]
from lecture_utils.sizes import format_bytes

w = torch.empty(12288, 49152, device="meta")  # shape and dtype only: no memory
check("GPT-3 FFN weight in fp32, in bf16", [format_bytes(w.numel() * dt.itemsize) for dt in (torch.float32, bf16)],
      ["2.42 GB (2.25 GiB)", "1.21 GB (1.12 GiB)"])

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the table tested without `finfo`
#
# **Casts.** Cast numbers into each dtype and read back what is stored: `max` must survive,
# the next step up (`max` plus the gap between neighbours in the top binade) must overflow,
# the smallest subnormal must survive and half of it must round to 0.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import math

overflow = {}
print(f"{'dtype':<14} {'max':>10} {'-> stored':>10} {'subnormal':>10} {'-> stored':>10} {'half -> stored':>15}")
for name, i in infos.items():
    dt = getattr(torch, name)
    spacing = 2.0 ** (math.frexp(i.max)[1] - 1 - i.mantissa_bits)  # max = 1.xxx * 2**(frexp - 1)
    overflow[name] = cast(i.max + spacing, dt)
    print(f"{name:<14} {i.max:>10.4g} {cast(i.max, dt):>10.4g} {i.smallest_subnormal:>10.4g} "
          f"{cast(i.smallest_subnormal, dt):>10.4g} {cast(i.smallest_subnormal / 2, dt):>15.4g}")
check("max, smallest subnormal survive; half of it -> 0 (all five)",
      {(cast(i.max, getattr(torch, n)) == i.max, cast(i.smallest_subnormal, getattr(torch, n)) == i.smallest_subnormal,
        cast(i.smallest_subnormal / 2, getattr(torch, n))) for n, i in infos.items()}, {(True, True, 0.0)})

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Four dtypes overflow to `inf`, but **float8_e4m3fn stays at 448**: `fn` means "finite,
# NaN". The format has no infinity (it uses the top exponent for ordinary numbers; only
# `S.1111.111` is NaN), so an overflowing cast must produce something else. The PyTorch
# release of `constraints.txt` **saturates** to ±448, even for `inf`; older releases
# produced NaN, so this is a library choice, checked here for that release.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
e4m3 = torch.float8_e4m3fn
check("max + spacing: fp32, fp16, bf16, e5m2 -> inf; e4m3fn saturates",
      [overflow[n] for n in FLOATS], [math.inf, math.inf, math.inf, 448.0, math.inf])
check("e4m3fn: 1e6, inf, -inf saturate; nan stays nan",
      [cast(1e6, e4m3), cast(math.inf, e4m3), cast(-math.inf, e4m3), math.isnan(cast(math.nan, e4m3))],
      [448.0, 448.0, -448.0, True])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Every bit pattern.** A 16-bit dtype has 65,536 patterns and an 8-bit one 256, so the
# small formats can be decoded exhaustively:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
print(f"{'dtype':<14} {'patterns':>8} {'inf':>4} {'NaN':>5} {'largest finite':>15} {'smallest > 0':>13}")
every = {}
for name in FLOATS[1:]:
    if infos[name].bits == 16:
        patterns = torch.arange(-2**15, 2**15, dtype=torch.int16)
    else:
        patterns = torch.arange(256, dtype=torch.int16).to(torch.uint8)
    values = patterns.view(getattr(torch, name)).float()  # every value this dtype can hold
    n_inf, n_nan = int(values.isinf().sum()), int(values.isnan().sum())
    every[name] = (values[values.isfinite()].max().item(), values[values > 0].min().item())
    print(f"{name:<14} {values.numel():>8} {n_inf:>4} {n_nan:>5} {every[name][0]:>15.6g} {every[name][1]:>13.4g}")
check("dtypes whose largest finite and smallest positive patterns are the table's max and smallest subnormal",
      [n for n in every if every[n] == (infos[n].max, infos[n].smallest_subnormal)], list(every))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The bits of a number.** Store a number, view the same bytes as an integer, and split
# the bits into sign | exponent | mantissa with `dtype_info`'s widths. Decoding the fields
# by the IEEE rule, $(-1)^s \cdot 1.m \cdot 2^{e - \text{bias}}$ with
# $\text{bias} = 2^{E-1}-1$ (subnormals: $0.m \cdot 2^{1-\text{bias}}$), must give back the
# stored value; a wrong field width would not.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32}


def bit_fields(value, name):
    """(sign, exponent, mantissa) bit strings of `value` stored in dtype `name`."""
    i = infos[name]
    raw = torch.tensor([value], dtype=getattr(torch, name)).view(INT_VIEW[i.bytes]).item()
    bits = format(raw & (2**i.bits - 1), f"0{i.bits}b")  # two's complement -> raw bits
    return bits[:1], bits[1:1 + i.exponent_bits], bits[1 + i.exponent_bits:]


def decode(sign, exponent, mantissa):
    bias = 2 ** (len(exponent) - 1) - 1
    e, m = int(exponent, 2), int(mantissa, 2) / 2 ** len(mantissa)
    value = (1 + m) * 2.0 ** (e - bias) if e else m * 2.0 ** (1 - bias)
    return -value if sign == "1" else value


decoded, stored = {}, {}
for value in (-1.5, 0.1):
    print(f"{value} stored as:")
    for name in FLOATS:
        s, e, m = bit_fields(value, name)
        decoded[value, name], stored[value, name] = decode(s, e, m), cast(value, getattr(torch, name))
        print(f"  {name:<14} {s} | {e:<8} | {m:<23}  = {stored[value, name]!r}")
check("cases where the decoded bits give the value torch stored", sum(decoded[k] == stored[k] for k in stored), 10)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# -1.5 has the same bits in every dtype: sign 1, the exponent field equal to the bias
# ($2^0$), mantissa `1000…` (binary 1.1). 0.1 has no exact binary form, so each dtype keeps
# what its mantissa allows: e5m2 stores 0.09375, 6% off.
#
# **bf16's range, precisely.** Same exponent bits as fp32, so the same smallest normal;
# its largest value is 0.4% lower (fewer mantissa bits to fill the top binade), and its
# subnormals stop at 9.2e-41 rather than 1.4e-45. For training, "the same range" holds.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("bf16 / fp32: smallest normal, largest value (3 digits)",
      (infos["bfloat16"].smallest_normal / infos["float32"].smallest_normal,
       round(infos["bfloat16"].max / infos["float32"].max, 3)), (1.0, 0.996))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the fp16 cliff, overflow, and rounding error across the range
#
# **The cliff below 6e-5.** Subnormal fp16 values lose relative precision as they shrink,
# from the 0.05% bound of normal numbers (`eps/2`) to 100%. (These casts run on the CPU,
# which implements subnormals; kernels that flush subnormals to zero for speed make the
# cutoff 6e-5 after all.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
print(f"{'value':>9} {'stored in fp16':>15} {'relative error':>15}")
for value in (1e-4, 6.2e-5, 1e-6, 3.0e-8, 2.9e-8):
    got = cast(value, fp16)
    print(f"{value:>9.3g} {got:>15.6g} {abs(got - value) / value:>15.2%}")
check("in units of 2**-24: 3.0e-8 rounds up to 1; 2.9e-8 and 2**-25 (a tie, to even) to 0",
      [cast(v, fp16) / 2.0**-24 for v in (3.0e-8, 2.9e-8, 2.0**-25)], [1.0, 0.0, 0.0])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Overflow.** fp16 overflows to `inf` once rounding passes 65504, from the midpoint 65520
# upward. bf16 keeps 70000, to the nearest multiple of 512 (its spacing in $[2^{16}, 2^{17})$).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("fp16: 65519, 65520, 70000", [cast(v, fp16) for v in (65519.0, 65520.0, 70000.0)],
      [65504.0, math.inf, math.inf])
check("bf16: 70000 -> 137 × 512", cast(70000.0, bf16), 70144.0)
check("1 + 1/256 survives in fp16 (eps 1/1024)", cast(1 + 1 / 256, fp16), 1.00390625)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Rounding error across the range.** Every binade $[2^k, 2^{k+1})$ from $2^{-30}$ to
# $2^{20}$ gets 64 values, cast into each dtype and compared with the float64 original; the
# plot shows the *worst* relative error per binade. In the normal range it is flat at about
# eps/2; below the smallest normal it doubles with every binade down until values round to
# 0 (100%); past `max` the cast overflows (drawn at 100% too).

# %% caption="Worst relative rounding error against a value's magnitude for fp32, fp16 and bf16, with each dtype's eps/2 dotted." slideshow={"slide_type": "skip"} tags=["deeper"]
K = torch.arange(-30, 21)                                   # binade exponents
x64 = torch.logspace(-30, 21, 64 * len(K) + 1, base=2, dtype=torch.float64)[:-1]
worst = {}
for name in ("float32", "float16", "bfloat16"):
    rel = ((x64.to(getattr(torch, name)).double() - x64).abs() / x64).nan_to_num(posinf=1.0).clamp(max=1.0)
    worst[name] = rel.view(len(K), 64).max(dim=1).values   # worst case per binade

fig, ax = plt.subplots(figsize=(10, 5))
for name, color in (("float32", "C0"), ("float16", "C3"), ("bfloat16", "C2")):
    ax.step(2.0 ** K, worst[name], where="post", color=color, lw=2.5, label=name)
    ax.axhline(infos[name].eps / 2, color=color, ls=":", lw=1)
h16 = infos["float16"]
ax.axvline(h16.smallest_normal, color="C3", ls="--", lw=1.5)
ax.text(h16.smallest_normal * 1.2, 1e-2, "fp16 smallest normal 2^-14\n(subnormal cliff)", color="C3", fontsize=12)
ax.axvline(h16.max, color="C3", ls="-.", lw=1.5)
ax.text(h16.max / 1.3, 1e-5, "fp16 max 65504\n(overflow -> inf)", color="C3", fontsize=12, ha="right")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xlabel("magnitude of the value", fontsize=13)
ax.set_ylabel("worst relative rounding error", fontsize=13)
ax.set_title("Relative rounding error vs magnitude (dotted: eps/2)", fontsize=14)
ax.legend(fontsize=12, loc="center left")
ax.tick_params(labelsize=12)
fig.tight_layout()
plt.show()


# %% slideshow={"slide_type": "skip"} tags=["deeper"]
def worst_at(name, k):
    """The worst relative error in binade [2**k, 2**(k+1))."""
    return worst[name][k - int(K[0])].item()


check("worst error per binade: bf16 within [2^-9, 2^-8], fp32 <= 2^-24, normal fp16 <= 2^-11",
      [all(2.0**-9 <= w <= 2.0**-8 for w in worst["bfloat16"].tolist()), worst["float32"].max().item() <= 2.0**-24,
       all(worst_at("float16", k) <= 2.0**-11 for k in range(-14, 16))], [True, True, True])
check("fp16 below 2^-14: the error doubles each binade down (2^-16 vs 2^-15, 2^-20 vs 2^-19)",
      torch.tensor([worst_at("float16", -16) / worst_at("float16", -15),
                    worst_at("float16", -20) / worst_at("float16", -19)]),
      torch.tensor([2.0, 2.0]), rel=0.1)  # 64 samples per binade miss the exact worst case
check("fp16 from 2^-25 down, and past its max: 100%",
      [min(worst_at("float16", k) for k in range(-30, -24)) >= 0.5, worst_at("float16", 20)], [True, 1.0])

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: roles, and the FFN matrix allocated on a GPU
#
# The notes' table has one more column, each format's role in a training run:
#
# | dtype | role |
# | :--- | :--- |
# | float32 | master weights, optimizer state (Adam m, v), accumulation |
# | float16 | activations and matmul inputs under autocast, with loss scaling |
# | bfloat16 | activations and matmul inputs under autocast, no loss scaling |
# | float8_e4m3fn | forward matmul inputs (weights, activations): more precision |
# | float8_e5m2 | gradients in backward: more range |
# | int8 (1 byte, −128..127) | quantised inference |
#
# The FFN prediction set beside a real allocation on this device: the allocator must hand
# out exactly the predicted bytes (on a GPU, 1,207,959,552 is a multiple of the caching
# allocator's 512-byte rounding). `torch.empty` writes nothing, so on a CPU the operating
# system maps the pages only when they are touched: the bytes are reserved, not yet resident.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
predicted = tensor_bytes((12288, 49152), torch.bfloat16)
with Allocated(device) as ffn:
    w_ffn = torch.empty(12288, 49152, dtype=torch.bfloat16, device=device)
measured("the allocator handed out", format_bytes(ffn.bytes), ref="alloc-bf16-ffn" if device.type == "cuda" else None)
check("predicted (tensor_bytes)", format_bytes(predicted), "1.21 GB (1.12 GiB)")
assert ffn.bytes == predicted, (ffn.bytes, predicted)
del w_ffn
if device.type == "cuda":
    torch.cuda.empty_cache()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §1.2 Bytes per parameter: how big a model can 8 H100s train?
#
# Training stores more than each weight: its gradient, and the optimizer's running
# statistics. Naive fp32 training with AdamW keeps four fp32 numbers per parameter
# (`param_breakdown` builds each recipe from dtypes, so its bytes come from `itemsize`):

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: what does training keep for each parameter, and how many bytes is that with AdamW?
# - Ask the room: does mixed precision shrink that number?
# - Ask the room: why does adding replicated GPUs not raise the limit?

# %% tags=["claim-S4"]
from lecture_utils.recipes import bytes_per_param, param_breakdown

print(param_breakdown("fp32_adamw"))
check("fp32 AdamW: 4 + 4 + 4 + 4 bytes per parameter", bytes_per_param("fp32_adamw"), 16)

# %% [markdown] slideshow={"slide_type": "slide"}
# That settles the notes' question before any activation is stored. Replicated (plain data
# parallel) every GPU holds all the state, so more GPUs do not raise the limit; perfectly
# sharded (ZeRO / FSDP) the state is split 8 ways:

# %% tags=["claim-S5"]
per_param = 4 + 4 + 4 + 4  # bytes: weights, gradients, Adam's m and v, all fp32
check("parameters whose state fits: one 80 GB GPU, 8 perfectly sharded", (80e9 / per_param, 8 * 80e9 / per_param),
      (5e9, 40e9))

# %% [markdown] slideshow={"slide_type": "slide"}
# **Mixed precision** computes in bf16 but keeps an fp32 *master* copy of the weights,
# because an update as small as lr × gradient vanishes in bf16 (`1 + 1/256` above).

# %% [markdown] slideshow={"slide_type": "slide"}
# The notes count bf16 weights (2) + bf16 gradients (2) + fp32 master weights (4) + m (4) +
# v (4) = "still 16 bytes per parameter": the ZeRO paper's standard accounting
# (Rajbhandari et al., SC 2020, §3.1: 2Ψ + 2Ψ + 12Ψ).
#
# > **Note: recipes differ.** **16**: ZeRO and DeepSpeed, whose optimizer reads the 16-bit
# > gradients. **18**: Megatron-LM with bf16 weights keeps an fp32 *main gradient* and drops
# > the 16-bit one (its distributed-optimizer documentation: 2 + 4 + 4 + 4 + 4; notebook 08
# > measures it). **20**: both gradients kept (Megatron's fp16 case). **16 again** under
# > `torch.autocast`: fp32 weights and gradients, the bf16 copies counted as activations.

# %% tags=["claim-S6"]
b16, b32 = torch.bfloat16.itemsize, torch.float32.itemsize
# ZeRO (§3.1): 2 + 2 + K with K = 12 for mixed-precision Adam
check("the notes' and ZeRO's count: 2 + 2 + 4 + 4 + 4", bytes_per_param("mixed_bf16_adamw"), 16)
# Megatron-LM, docs "Distributed Optimizer": fp32 main grads; bf16 params + fp32 grads = 18
megatron = {"weights": b16, "main gradients": b32, "master weights": b32, "adam m": b32, "adam v": b32}
check("Megatron-LM, bf16 weights with fp32 main gradients: 2 + 4 + 4 + 4 + 4", sum(megatron.values()), 18)
check("... with a 16-bit gradient kept as well", sum(megatron.values()) + b16, 20)

# %% [markdown] slideshow={"slide_type": "slide"}
# So **mixed precision saves compute time and activation memory, not training state**:
# 16 to 20 bytes per parameter remain, against 16 in fp32. The big savings come from
# *sharding* that state across GPUs (ZeRO / FSDP, Lectures 7–8).

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: AdamW's training state, measured
#
# The table is arithmetic. To test it, build a small model, run one real AdamW step, and
# add up every tensor training keeps: the parameters, their `.grad`, and `optimizer.state`.
# torch's AdamW also keeps a `step` counter per parameter *tensor* (a 0-d fp32 tensor, 4
# bytes whatever the tensor's size), counted separately.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import copy

from torch import nn


def training_bytes(params, optimizer, grads_of=None):
    """Bytes of params, grads (of ``grads_of``, default the params) and optimizer state."""
    parts = {"weights": 0, "gradients": 0, "exp_avg": 0, "exp_avg_sq": 0, "step": 0}
    for p, g in zip(params, grads_of or params, strict=True):
        parts["weights"] += tensor_bytes(p)
        parts["gradients"] += tensor_bytes(g.grad) if g.grad is not None else 0
        for key, t in optimizer.state[g].items():
            parts[key] += tensor_bytes(t)
    return parts


model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
params = list(model.parameters())
n_params = sum(p.numel() for p in params)
optimizer = torch.optim.AdamW(params, lr=1e-3)
batch = torch.randn(32, 64)
model(batch).pow(2).mean().backward()
optimizer.step()
parts = training_bytes(params, optimizer)
print({key: f"{b / n_params:g} B/param" for key, b in parts.items()})
check("step counters: one 4-byte scalar per parameter tensor", parts["step"], 4 * len(params))
check("everything else: 16 bytes per parameter", (sum(parts.values()) - parts["step"]) / n_params, 16.0)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The two mixed-precision layouts, measured the same way:
#
# * **`torch.autocast`** (the notes' §8.3) runs matmuls in bf16, but parameters and
#   gradients stay fp32: 16 bytes of state. Its bf16 weight casts are cached for the whole
#   autocast region (`cache_enabled=True` by default) and those saved for backward live
#   until backward: about 2 bytes per parameter more at the peak, counted as activations.
# * **bf16 weights with fp32 master weights and fp32 main gradients** (Megatron-LM's
#   layout): each bf16 gradient is accumulated into a persistent fp32 main gradient and
#   then dropped, and AdamW updates the fp32 master: 18 bytes.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
model_ac = copy.deepcopy(model)
params_ac = list(model_ac.parameters())
opt_ac = torch.optim.AdamW(params_ac, lr=1e-3)
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = model_ac(batch)
out.float().pow(2).mean().backward()
opt_ac.step()
parts_ac = training_bytes(params_ac, opt_ac)
check("autocast: bf16 matmul output; fp32 parameters and gradients",
      (out.dtype, {(p.dtype, p.grad.dtype) for p in params_ac}), (torch.bfloat16, {(torch.float32, torch.float32)}))
check("autocast: bytes per parameter (without step counters)", (sum(parts_ac.values()) - parts_ac["step"]) / n_params,
      16.0)

model_bf = copy.deepcopy(model).to(torch.bfloat16)
params_bf = list(model_bf.parameters())
master = [p.detach().float().requires_grad_() for p in params_bf]
opt_master = torch.optim.AdamW(master, lr=1e-3)
model_bf(batch.bfloat16()).float().pow(2).mean().backward()
for m, p in zip(master, params_bf, strict=True):
    m.grad = p.grad.float()          # the fp32 main gradient, kept ...
    p.grad = None                    # ... and the bf16 gradient dropped
opt_master.step()
with torch.no_grad():
    for m, p in zip(master, params_bf, strict=True):
        p.copy_(m)                   # the bf16 weights follow the fp32 master
parts_bf = training_bytes(params_bf, opt_master, grads_of=master)
parts_bf["master weights"] = sum(tensor_bytes(m) for m in master)
print({key: f"{b / n_params:g} B/param" for key, b in parts_bf.items()})
check("bf16 weights + fp32 main gradients + fp32 master, m, v (without step counters)",
      (sum(parts_bf.values()) - parts_bf["step"]) / n_params, 18.0)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: every recipe, and a calculator
#
# Other optimizers keep fewer statistics:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.recipes import RECIPES

print(f"{'recipe':<20} {'bytes':<18} {'total':>5}   parts")
for recipe in RECIPES:
    parts = param_breakdown(recipe)
    print(f"{recipe:<20} {' + '.join(map(str, parts.values())):<18} {bytes_per_param(recipe):>5}   {', '.join(parts)}")

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Change the inputs to see the per-GPU training state for any size, recipe and GPU count.
# Widgets need a live kernel; a static view shows only their text, so a printed table and a
# figure for a 7B model follow.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.widgets import memory_calculator

memory_calculator()

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.recipes import training_state_table

N, H100 = 7_000_000_000, 80e9
CONFIGS = {"1 GPU": (1, False), "8 GPUs replicated": (8, False), "8 GPUs sharded": (8, True)}
tables = {label: dict(training_state_table(N, n_gpus=g, sharded=s, recipe="fp32_adamw"))
          for label, (g, s) in CONFIGS.items()}
print(f"{'7B, fp32_adamw':<15}" + "".join(f"{label:>22}" for label in CONFIGS))
for part in tables["1 GPU"]:
    print(f"{part:<15}" + "".join(f"{format_bytes(t[part]):>22}" for t in tables.values()))
check("per-GPU totals: 16 B × 7B, unchanged by replication, / 8 when sharded",
      [t["total"] for t in tables.values()], [16 * N, 16 * N, 16 * N // 8])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Per-GPU training state of the 7B model for every recipe, each bar stacked from its parts.
# On one GPU, or replicated on eight, only plain SGD (8 B/param) gets under the 80 GB line;
# sharded eight ways, every recipe does. Each bar is a floor, and the model sizes that fit
# are upper bounds: activations, temporary buffers (all-gathered weights, communication
# buckets, workspaces, the CUDA context) and allocator fragmentation also live on the GPU.

# %% caption="Training state per GPU for a 7B model by recipe, on 1 GPU, 8 replicated and 8 sharded, against 80 GB." slideshow={"slide_type": "skip"} tags=["deeper"]
PART_COLORS = {}
fig, axes = plt.subplots(1, 3, figsize=(14, 5.5), sharey=True)
per_gpu_gb = {}
for ax, (label, (g, s)) in zip(axes, CONFIGS.items(), strict=True):
    for x_pos, recipe in enumerate(RECIPES):
        bottom = 0.0
        for part, b in param_breakdown(recipe).items():
            height = b * N / (g if s else 1) / 1e9
            ax.bar(x_pos, height, bottom=bottom, color=PART_COLORS.setdefault(part, f"C{len(PART_COLORS)}"),
                   edgecolor="white")
            bottom += height
        per_gpu_gb[label, recipe] = bottom
    ax.axhline(H100 / 1e9, color="k", ls="--", lw=1.5)
    ax.text(-0.4, H100 / 1e9 + 2, "80 GB", ha="left", fontsize=12)
    ax.set_xticks(range(len(RECIPES)), list(RECIPES), rotation=35, ha="right", fontsize=12)
    ax.set_title(label, fontsize=14)
    ax.tick_params(axis="y", labelsize=12)
axes[0].set_ylabel("GB per GPU (7B params, no activations)", fontsize=13)
fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in PART_COLORS.values()],
           labels=list(PART_COLORS), loc="upper right", fontsize=12, ncol=1, frameon=False)
fig.suptitle("Training state per GPU by recipe, 7B model", fontsize=15)
fig.tight_layout(rect=(0, 0, 0.86, 1))
plt.show()
check("recipes under 80 GB: 1 GPU, 8 replicated, 8 sharded",
      [[r for r in RECIPES if per_gpu_gb[label, r] <= H100 / 1e9] for label in CONFIGS],
      [["fp32_sgd"], ["fp32_sgd"], list(RECIPES)])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Memory = numel × bytes per element; the dtype sets the bytes.
# - Exponent bits buy range, mantissa bits precision: bf16 keeps fp32's range (eps = 1/128);
#   fp16 is 8× more precise but flushes small gradients to 0 (below 3e-8), hence loss
#   scaling, which risks overflow above 65504, hence a dynamic scale.
# - Keep in fp32 what accumulates small changes (master weights, optimizer state, sums).
# - AdamW's training state: 16 B/param in fp32; in mixed precision 16, 18 or 20, by the
#   gradients kept. Mixed precision saves compute and activations; sharding saves state.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises (from the self-test)
#
# For each question: fill in the `...` in the exercise cell, run it and the check cell
# under it (it says whether your answer is right, without giving it away), and expand the
# hidden solution only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Give 3 minutes per question: fill in the `...`, run the check cell.
# - Ask the room (Q2): which of the 11 gradients survive fp16, and what does scaling by 2**16 break?
# - Ask the room (Q3): why does adding replicated GPUs not raise the limit?

# %% [markdown] slideshow={"slide_type": "-"}
# ### Q2. fp16 and bf16 are both 2 bytes. Why does bf16 training need no loss scaling?
#
# Show it with numbers: take the 11 gradients 1e-10, 1e-9, ..., 1e-1, 1, store them in fp16
# and in bf16, and count how many vanish. Then apply fp16 *loss scaling*: multiply the loss,
# and with it every gradient, by $2^{16}$ before the cast, and divide by $2^{16}$ again in
# fp32. What does scaling rescue, and what new risk does it create?

# %% tags=["exercise"]
q2_zeros_fp16 = ...  # how many of the 11 gradients become exactly 0 in fp16 (a count)
q2_zeros_bf16 = ...  # how many become 0 in bf16 (a count)
q2_rescued = ...  # how many of the fp16 zeros survive with loss scaling by 2**16 (a count)
q2_one_scaled = ...  # what a gradient of 1.0, scaled by 2**16, becomes in fp16 (a float)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("Q2, gradients lost in fp16", q2_zeros_fp16)
check_answer("Q2, gradients lost in bf16", q2_zeros_bf16)
check_answer("Q2, gradients loss scaling rescues", q2_rescued)
check_answer("Q2, 1.0 x 2**16 in fp16", q2_one_scaled)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "claim-S39"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. fp16 has 5 exponent bits: its normal range ends at 6.1e-5 and its subnormals at
# 6e-8, so 1e-8 and below become exactly 0. Scaling by 2\*\*16 lifts them into fp16's range
# (1e-8 -> 6.6e-4), and dividing in fp32 brings them back. But one fixed scale cannot suit
# every gradient: 1.0 \* 2\*\*16 = 65536 is above fp16's max 65504, so it overflows to inf,
# and fp16 training needs a \*dynamic\* loss scaler that skips the step and lowers the scale
# when it sees inf. bf16 has fp32's 8 exponent bits: every gradient above ~1e-38 keeps its
# magnitude and none of this is needed. It pays in precision instead (eps = 1/128), which
# training tolerates; a gradient rounded to 0 carries no signal at all.
#
# ```python
# SCALE = 2.0**16
# grads = [1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
# print(f"{'gradient':>9} {'fp16':>11} {'bf16':>11} {'fp16 x 2^16':>12} {'unscaled':>11}")
# for g in grads:
#     print(f"{g:>9.0e} {cast(g, fp16):>11.4g} {cast(g, bf16):>11.4g} {cast(g * SCALE, fp16):>12.4g} "
#           f"{cast(g * SCALE, fp16) / SCALE:>11.4g}")
# lost_fp16 = [g for g in grads if cast(g, fp16) == 0]
# q2_zeros_fp16, q2_zeros_bf16 = len(lost_fp16), sum(cast(g, bf16) == 0 for g in grads)
# q2_rescued = sum(0 < cast(g * SCALE, fp16) < float("inf") for g in lost_fp16)
# q2_one_scaled = cast(1.0 * SCALE, fp16)
# check("fp16 loses gradients that bf16 keeps, and scaling rescues every one of them",
#       (q2_zeros_fp16 > q2_zeros_bf16, q2_rescued == q2_zeros_fp16), (True, True))
# check_answer("Q2, gradients lost in fp16", q2_zeros_fp16)
# check_answer("Q2, gradients lost in bf16", q2_zeros_bf16)
# check_answer("Q2, gradients loss scaling rescues", q2_rescued)
# check_answer("Q2, 1.0 x 2**16 in fp16", q2_one_scaled)
# ```
#
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Q3. How big a model fits on 8 × 80 GB H100s once activations need room?
#
# §1.2 fit 5B parameters on one GPU and 40B on 8 perfectly sharded, with nothing else on
# the GPUs (the notes' answer to their Q3). Hold back 20% of each GPU for activations and
# buffers: what are the two limits now? And on the 8 sharded GPUs with Megatron's mixed
# precision (bf16 weights, fp32 main gradients, master weights, m and v), 20% held back?
# Work it out from the bytes per parameter, not from a helper.

# %% tags=["exercise"]
q3_one_gpu_80 = ...  # parameters that fit on one GPU with 20% held back (a count, e.g. 1e9)
q3_eight_sharded_80 = ...  # on 8 GPUs, perfectly sharded, 20% held back
q3_mixed_sharded_80 = ...  # the same 8 sharded GPUs with Megatron's mixed precision

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("Q3, one GPU with 20% held back", q3_one_gpu_80)
check_answer("Q3, eight GPUs sharded with 20% held back", q3_eight_sharded_80)
check_answer("Q3, eight sharded in Megatron's mixed precision with 20% held back", q3_mixed_sharded_80)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "claim-S39"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. Only 0.8 \* 80 GB is left for the training state: naive fp32 AdamW (16 bytes per
# parameter) fits 0.8 \* 80e9 / 16 = 4B on one GPU and 0.8 \* 8 \* 80e9 / 16 = 32B on 8
# sharded. Megatron's layout keeps 2 + 4 + 4 + 4 + 4 = 18 bytes per parameter: 0.8 \* 640e9
# / 18 = 28.4B. (Read "80 GB" as 80 GiB, closer to the H100's HBM, and every limit grows by
# 7%.)
#
# ```python
# fp32_adamw, megatron = 4 + 4 + 4 + 4, 2 + 4 + 4 + 4 + 4  # bytes per parameter
# q3_one_gpu_80, q3_eight_sharded_80 = 0.8 * 80e9 / fp32_adamw, 0.8 * 8 * 80e9 / fp32_adamw
# q3_mixed_sharded_80 = 0.8 * 8 * 80e9 / megatron
# check("mixed precision fits fewer parameters than fp32 AdamW: 18 > 16 bytes",
#       q3_mixed_sharded_80 < q3_eight_sharded_80, True)
# check_answer("Q3, one GPU with 20% held back", q3_one_gpu_80)
# check_answer("Q3, eight GPUs sharded with 20% held back", q3_eight_sharded_80)
# check_answer("Q3, eight sharded in Megatron's mixed precision with 20% held back", q3_mixed_sharded_80)
# ```
#
# </details>
