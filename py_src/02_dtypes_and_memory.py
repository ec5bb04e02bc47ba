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
# CS336 Lecture 2 asks, before any code is written, *will it fit?* This notebook
# answers that question bottom-up, covering §2, §2.1 and §1.2 of the lecture notes and
# self-test questions Q2 and Q3:
#
# 1. **§2**: a tensor costs `numel × bytes per element`, checked against real tensors.
# 2. **§2.1**: the dtype sets the bytes per element, and also the range and precision
#    you get for them. The dtype table here is computed by torch, not copied from the notes.
# 3. **§1.2**: training keeps several numbers per parameter (16 bytes with AdamW),
#    which is enough to settle how big a model 8 × 80 GB H100s can train.
#
# A `✓` line is a checked claim; a `[measured]` line depends on the machine.

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes** (each is shown, with numbers, where linked)
# >
# > * "bf16 has the same dynamic range as fp32": the same *exponent* and smallest normal,
# >   but a 0.4% lower max and subnormals that stop at 9.2e-41, not 1.4e-45
# >   ([The table, computed](#The-table,-computed)).
# > * "fp16 underflows below 6×10⁻⁵": 6.1e-5 is its smallest *normal*; subnormals keep
# >   values down to 6e-8 with growing error, and only values ≤ 2⁻²⁵ ≈ 3e-8 become 0
# >   ([Underflow](#Underflow:-fp16-loses-small-numbers,-bf16-keeps-them)).
# > * bf16's peak is "about 15×" fp32's only against fp32 on CUDA cores; against TF32 tensor
# >   cores it is 2×, and PyTorch's default fp32 matmul uses no TF32
# >   ([§1.2](#§1.2-Bytes-per-parameter:-how-big-a-model-can-8-H100s-train?)).
# > * "80 GB" is taken as 80 × 10⁹ bytes; the H100's HBM is about 80 GiB, 7% more
# >   ([The 8 × 80 GB question](#The-8-×-80-GB-question)).

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
import copy
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from lecture_utils import check, check_answer, cuda_only, measured
from lecture_utils.memory import (
    RECIPES,
    bytes_per_param,
    dtype_info,
    format_bytes,
    max_params_that_fit,
    param_breakdown,
    tensor_bytes,
    training_state_table,
)
from lecture_utils.plots import plot_bit_layout

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2 A tensor's memory is numel × bytes per element
#
# Parameters, gradients, optimizer state, batches and activations are all tensors, so
# memory accounting starts with one rule:
#
# $$\text{memory} = \text{numel} \times \text{bytes per element}$$
#
# `numel` is the product of the shape, and the dtype sets the bytes per element.
# We check the formula three ways on a real tensor: `numel() * element_size()`,
# the course helper `tensor_bytes`, and the size of the storage torch actually allocated.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: every memory estimate starts from numel × bytes per element; a slice keeps its parent's whole storage alive.
# - Run live: the 4 × 8 × 16 float32 tensor, then the one-row slice.
# - Point at: the slice counts 512 bytes but keeps all 2048 alive.

# %% slideshow={"slide_type": "subslide"}
x = torch.zeros(4, 8, 16)  # float32 by default
check("numel = 4 * 8 * 16", x.numel(), 512)
check("bytes per float32 element", x.element_size(), 4)
check("numel * element_size", x.numel() * x.element_size(), 2048)
check("tensor_bytes(x)", tensor_bytes(x), 2048)
check("bytes torch allocated (storage)", x.untyped_storage().nbytes(), 2048)

# %% [markdown] slideshow={"slide_type": "subslide"}
# One caveat: the formula counts a tensor's *own* elements. A slice is a view
# that shares its parent's storage, so holding on to a small slice keeps the whole
# storage alive.

# %%
row = x[0]
check("a slice counts its own elements", tensor_bytes(row), 8 * 16 * 4)
check("...but keeps the whole storage alive", row.untyped_storage().nbytes(), 2048)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same shape in other dtypes. Each allocation below is real, and its storage size
# matches `tensor_bytes(shape, dtype)`, which is computed from the dtype alone.

# %%
shape = (4, 8, 16)
for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
    allocated = torch.empty(shape, dtype=dt).untyped_storage().nbytes()
    check(f"{str(dt).removeprefix('torch.'):<14} {shape}", allocated, tensor_bytes(shape, dt))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.1 The dtype sets the cost of every number
#
# A floating-point number has three fields: a **sign** bit, **exponent** bits that set
# the *range* (how large and how small a number can be), and **mantissa** bits that set the
# *precision* (how many significant digits it keeps). Lower precision saves memory and
# bandwidth, but it narrows the range, the precision, or both. Which one gives way decides
# whether training stays stable.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: exponent bits buy range, mantissa bits buy precision; which one gives way decides whether training stays stable.
# - Run live: the underflow and overflow cells (fp16 loses 1e-8, tops out at 65504; bf16 keeps both).
# - Point at: bf16's eps = 1/128 against fp16's 1/1024, and the GPT-3 FFN weight in each dtype.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The table, computed
#
# `dtype_info` reads everything from `torch.finfo`, so nothing in this table was typed in:

# %% slideshow={"slide_type": "subslide"}
FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
infos = {name: dtype_info(name) for name in FLOATS}

print(f"{'dtype':<14} {'bits (s/e/m)':<13} {'bytes':>5} {'max':>10} {'smallest normal':>16} "
      f"{'smallest subnormal':>19} {'eps':>10}")
for name, i in infos.items():
    layout = f"{i.bits} ({i.sign_bits}/{i.exponent_bits}/{i.mantissa_bits})"
    print(f"{name:<14} {layout:<13} {i.bytes:>5} {i.max:>10.5g} {i.smallest_normal:>16.4g} "
          f"{i.smallest_subnormal:>19.4g} {i.eps:>10.4g}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The role each dtype plays in training
#
# The notes' table has one more column: what each format is *for* in a training run.
# Wider formats hold the numbers that accumulate many small changes; narrower ones feed
# the matmuls, whose outputs are accumulated in fp32 inside the kernel.

# %% slideshow={"slide_type": "subslide"}
ROLE = {
    "float32": "master weights, optimizer state (Adam m, v), accumulation",
    "float16": "activations / matmul inputs under autocast, with loss scaling",
    "bfloat16": "activations / matmul inputs under autocast (no loss scaling)",
    "float8_e4m3fn": "forward matmul inputs (weights, activations): more precision",
    "float8_e5m2": "gradients in backward: more range",
    "int8": "quantised inference (weights, sometimes activations)",
}
for name, role in ROLE.items():
    nbytes = infos[name].bytes if name in infos else torch.iinfo(getattr(torch, name)).bits // 8
    print(f"{name:<14} {nbytes} B  {role}")
check("every float in the table has a role", set(FLOATS) <= set(ROLE), True)
check("int8 is 1 byte, range -128..127",
      (torch.iinfo(torch.int8).bits // 8, torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max),
      (1, -128, 127))
check("e4m3 trades range for precision vs e5m2 (mantissa bits, max)",
      (infos["float8_e4m3fn"].mantissa_bits, infos["float8_e5m2"].mantissa_bits,
       infos["float8_e4m3fn"].max < infos["float8_e5m2"].max), (3, 2, True))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Checked against the table in the notes: the bit layouts, the byte counts, and the three
# maxima the notes quote.

# %% slideshow={"slide_type": "subslide"}
NOTES_LAYOUT = {  # (sign, exponent, mantissa, bytes) as the notes list them
    "float32": (1, 8, 23, 4),
    "float16": (1, 5, 10, 2),
    "bfloat16": (1, 8, 7, 2),
    "float8_e4m3fn": (1, 4, 3, 1),
    "float8_e5m2": (1, 5, 2, 1),
}
for name, expected in NOTES_LAYOUT.items():
    i = infos[name]
    check(f"{name} s/e/m, bytes", (i.sign_bits, i.exponent_bits, i.mantissa_bits, i.bytes),
          expected)
check("float16 max", infos["float16"].max, 65504.0)
check("float8_e4m3fn max", infos["float8_e4m3fn"].max, 448.0)
check("float8_e5m2 max", infos["float8_e5m2"].max, 57344.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The notes say bf16 has "the same dynamic range as fp32". At the bottom of the *normal*
# range that is exact, because both have 8 exponent bits. The largest value is 0.4% lower,
# since bf16 has fewer mantissa bits to fill the top binade, and the subnormals stop far
# earlier (9.2e-41 against 1.4e-45). None of this matters for training, but "same
# exponent" is the precise statement:

# %%
f32, b16 = infos["float32"], infos["bfloat16"]
check("bf16 smallest normal == fp32 smallest normal", b16.smallest_normal, f32.smallest_normal)
check("bf16 max / fp32 max", b16.max / f32.max, 0.996, rel=1e-3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### An independent oracle: cast real values
#
# The table comes from `finfo`, so let's test it without `finfo`. We cast numbers
# into each dtype and read back what is stored:
#
# * `max` must survive the cast unchanged;
# * the next step up, `max + spacing` (where `spacing` is the gap between neighbours
#   in the top binade), must overflow;
# * the smallest subnormal must survive, and half of it must round to 0.

# %% slideshow={"slide_type": "subslide"}
def cast(value, dt):
    """Store a Python float in dtype `dt` and read back the value actually stored."""
    return torch.tensor(value, dtype=dt).item()


print(f"{'dtype':<14} {'max':>10} {'max + spacing':>14} {'-> stored':>10} "
      f"{'subnormal':>10} {'-> stored':>10} {'half -> stored':>15}")
overflow = {}
for name, i in infos.items():
    dt = getattr(torch, name)
    top_exponent = math.frexp(i.max)[1] - 1          # max = 1.xxx * 2**top_exponent
    spacing = 2.0 ** (top_exponent - i.mantissa_bits)
    overflow[name] = cast(i.max + spacing, dt)
    print(f"{name:<14} {cast(i.max, dt):>10.5g} {i.max + spacing:>14.5g} {overflow[name]:>10.5g} "
          f"{i.smallest_subnormal:>10.4g} {cast(i.smallest_subnormal, dt):>10.4g} "
          f"{cast(i.smallest_subnormal / 2, dt):>15.4g}")

for name, i in infos.items():
    dt = getattr(torch, name)
    check(f"{name}: max survives", cast(i.max, dt), i.max)
    check(f"{name}: smallest subnormal survives", cast(i.smallest_subnormal, dt),
          i.smallest_subnormal)
    check(f"{name}: half the smallest subnormal -> 0", cast(i.smallest_subnormal / 2, dt), 0.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The overflow column has an exception. Four of the dtypes overflow to `inf`, but
# **float8_e4m3fn stays at 448**. The `fn` in its name means "finite, NaN": the format has
# no bit pattern for infinity, because it uses the top exponent for ordinary numbers to
# stretch its range. Only `S.1111.111` is NaN. So a cast that overflows has to produce
# *something else*. The PyTorch used here **saturates** to ±448, even for `inf` itself.
# Conversions have not always done this (older PyTorch releases produced NaN here), so
# what a cast produces on overflow is a library choice, checked below for the pinned
# version; the format itself never holds an `inf`.

# %% slideshow={"slide_type": "subslide"}
measured("torch version", torch.__version__)
for name in ["float32", "float16", "bfloat16", "float8_e5m2"]:
    check(f"{name}: max + spacing -> inf", overflow[name], math.inf)
e4m3 = torch.float8_e4m3fn
check("float8_e4m3fn: 480 saturates to 448", overflow["float8_e4m3fn"], 448.0)
check("float8_e4m3fn: 1e6 saturates to 448", cast(1e6, e4m3), 448.0)
check("float8_e4m3fn: inf saturates to 448", cast(math.inf, e4m3), 448.0)
check("float8_e4m3fn: -inf saturates to -448", cast(-math.inf, e4m3), -448.0)
check("float8_e4m3fn: nan stays nan", math.isnan(cast(math.nan, e4m3)), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The small formats can also be checked exhaustively. A 16-bit dtype has only 65,536 bit
# patterns and an 8-bit one has 256, so we decode every pattern and count:

# %% slideshow={"slide_type": "subslide"}
print(f"{'dtype':<14} {'patterns':>8} {'inf':>4} {'NaN':>5} {'largest finite':>15} "
      f"{'smallest > 0':>13}")
every = {}
for name in ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]:
    if infos[name].bits == 16:
        patterns = torch.arange(-2**15, 2**15, dtype=torch.int16)
    else:
        patterns = torch.arange(256, dtype=torch.int16).to(torch.uint8)
    values = patterns.view(getattr(torch, name)).float()  # every value this dtype can hold
    n_inf, n_nan = int(values.isinf().sum()), int(values.isnan().sum())
    largest = values[values.isfinite()].max().item()
    smallest = values[values > 0].min().item()
    every[name] = (n_inf, largest, smallest)
    print(f"{name:<14} {values.numel():>8} {n_inf:>4} {n_nan:>5} {largest:>15.6g} {smallest:>13.4g}")

for name, (_, largest, smallest) in every.items():
    check(f"{name}: largest finite pattern == finfo max", largest, infos[name].max)
    check(f"{name}: smallest positive pattern == smallest subnormal", smallest,
          infos[name].smallest_subnormal)
check("float8_e4m3fn has no inf pattern at all", every["float8_e4m3fn"][0], 0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Where the bits go
#
# The five layouts drawn to scale. fp16 and bf16 both use 16 bits, and the difference
# between them is where the bits after the sign go: fp16 puts more into the mantissa
# (precision), bf16 into the exponent (range).

# %% caption="Bit layout of each floating-point dtype: sign, exponent and mantissa bits, fp32 down to fp8." slideshow={"slide_type": "subslide"}
fig = plot_bit_layout(FLOATS)
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# Here are the actual bits. We store a number in each dtype, view the same bytes as an
# integer (`x.view(torch.int16)` and so on), and split the binary string into
# sign | exponent | mantissa using `dtype_info`'s field widths. As a check, we decode the
# fields by hand with the IEEE rule
# $(-1)^s \cdot 1.m \cdot 2^{e - \text{bias}}$, where $\text{bias} = 2^{E-1}-1$ for $E$
# exponent bits (subnormals, with an all-zero exponent field, use $0.m \cdot 2^{1-\text{bias}}$), and
# compare the result with the value torch stored. If a field width were wrong, the decoded
# value would not match.

# %% slideshow={"slide_type": "subslide"}
INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32}


def bit_fields(value, name):
    """(sign, exponent, mantissa) bit strings of `value` stored in dtype `name`."""
    i = infos[name]
    raw = torch.tensor([value], dtype=getattr(torch, name)).view(INT_VIEW[i.bytes]).item()
    bits = format(raw & (2**i.bits - 1), f"0{i.bits}b")  # two's complement -> raw bits
    return bits[:1], bits[1:1 + i.exponent_bits], bits[1 + i.exponent_bits:]


def decode(sign, exponent, mantissa):
    """The IEEE-style value of the three bit fields (normal and subnormal numbers)."""
    bias = 2 ** (len(exponent) - 1) - 1
    e, m = int(exponent, 2), int(mantissa, 2) / 2 ** len(mantissa)
    value = (1 + m) * 2.0 ** (e - bias) if e else m * 2.0 ** (1 - bias)
    return -value if sign == "1" else value


decoded, stored = {}, {}
for value in (-1.5, 0.1):
    print(f"{value} stored as:")
    for name in FLOATS:
        s, e, m = bit_fields(value, name)
        decoded[value, name] = decode(s, e, m)
        stored[value, name] = cast(value, getattr(torch, name))
        print(f"  {name:<14} {s} | {e:<8} | {m:<23}  = {stored[value, name]!r}")

check("decoded bits == value torch stored (10 cases)", decoded, stored)
check("-1.5: exponent field == bias in every dtype",
      [int(bit_fields(-1.5, n)[1], 2) == 2 ** (infos[n].exponent_bits - 1) - 1 for n in FLOATS],
      [True] * 5)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The bits for -1.5 are the same in every dtype: sign 1, an exponent field equal to the
# bias ($2^0$), and the mantissa `1000…` (binary 1.1 = 1.5). 0.1 has no exact binary form,
# so each dtype keeps as many digits as its mantissa allows. e5m2 stores 0.09375,
# which is 6% off.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Underflow: fp16 loses small numbers, bf16 keeps them
#
# The notes' first example is a value like 1e-8, the size of a small gradient:

# %%
fp16, bf16 = torch.float16, torch.bfloat16
tiny = 1e-8
check("1e-8 in fp16 -> 0 (underflow)", cast(tiny, fp16), 0.0)
tiny_bf16 = cast(tiny, bf16)
print(f"1e-8 in bf16 is stored as {tiny_bf16!r}")
check("bf16 stores 2**-27 * (1 + 44/128)", tiny_bf16, 2.0**-27 * (1 + 44 / 128))
rel_err = abs(tiny_bf16 - tiny) / tiny
check("bf16 relative error of 1e-8", rel_err, 0.00117, rel=0.01)
check("...within bf16's rounding bound eps/2", rel_err < infos["bfloat16"].eps / 2, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The notes overstate this.** They say fp16 "underflows below 6×10⁻⁵". But 6.1e-5 is
# fp16's smallest *normal* number. Below it come the **subnormals**: the exponent stays at
# its minimum and the implicit leading 1 becomes a 0, so smaller numbers still survive, but
# with fewer and fewer significant bits. The loss is gradual:
#
# * 1e-6 survives, but with about 1% relative error, far worse than the 0.05% rounding bound ($\text{eps}/2$) for normal fp16 numbers;
# * numbers become exactly 0 only at or below $2^{-25} \approx 2.98\times10^{-8}$, half the smallest subnormal. Just above that they round *up* to $5.96\times10^{-8}$, which is almost a 100% error.

# %% slideshow={"slide_type": "subslide"}
h = infos["float16"]
print(f"{'value':>9} {'stored in fp16':>15} {'relative error':>15}")
for value in (1e-4, 6.2e-5, 1e-6, 1e-7, 3.0e-8, 2.9e-8, 1e-8):
    got = cast(value, fp16)
    print(f"{value:>9.3g} {got:>15.6g} {abs(got - value) / value:>15.2%}")

check("fp16 smallest normal ≈ 6.1e-5", h.smallest_normal, 2.0**-14)
check("1e-6 survives as a subnormal: 17 * 2**-24", cast(1e-6, fp16), 17 * 2.0**-24)
err = abs(cast(1e-6, fp16) - 1e-6) / 1e-6
check("relative error of 1e-6 in fp16", err, 0.0133, rel=0.01)
check("...over 25x fp16's bound for normals (eps/2)", err / (h.eps / 2) > 25, True)
check("3.0e-8 rounds UP to the smallest subnormal", cast(3.0e-8, fp16), h.smallest_subnormal)
check("2.9e-8 rounds to 0", cast(2.9e-8, fp16), 0.0)
check("2**-25 (exact tie) rounds to even: 0", cast(2.0**-25, fp16), 0.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# (These casts run on the CPU, which implements subnormals. Hardware modes and kernels that
# flush subnormals to zero for speed make the cutoff ~6e-5 after all.)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Overflow: fp16 tops out at 65504
#
# Large values fail the other way. fp16 overflows to `inf` once rounding passes
# 65504, that is from the midpoint 65520 upward. bf16 keeps 70000, but only
# to the nearest multiple of 512 (its spacing between 65536 and 131072):

# %%
check("65519 in fp16 rounds down to max", cast(65519.0, fp16), 65504.0)
check("65520 in fp16 -> inf", cast(65520.0, fp16), math.inf)
check("70000 in fp16 -> inf", cast(70000.0, fp16), math.inf)
check("70000 in bf16 -> 70144 (= 137 * 512)", cast(70000.0, bf16), 70144.0)
check("bf16 relative error at 70000", (70144 - 70000) / 70000, 0.00206, rel=0.01)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Precision: what bf16 gives up
#
# bf16 has 7 mantissa bits, so `eps` (the gap between 1 and the next number) is
# $2^{-7} = 1/128$. Adding anything up to half of that (1/256) to 1 changes nothing. This is why
# sums and optimizer updates are kept in fp32. (1/256 is exactly halfway between
# neighbours, and round-half-to-even picks 1.)

# %%
one = torch.tensor(1.0, dtype=bf16)
check("bf16 eps = 1/128", infos["bfloat16"].eps, 1 / 128)
check("1 + 1/128 in bf16 (representable)", (one + 1 / 128).item(), 1.0078125)
check("1 + 1/256 == 1 in bf16", (one + 1 / 256).item(), 1.0)
check("1 + 0.003 == 1 in bf16", (one + 0.003).item(), 1.0)
check("1 + 1/256 in fp16 (eps 1/1024) survives", cast(1 + 1 / 256, fp16), 1.00390625)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Rounding error across the whole range, in one picture
#
# The last few sections probed single values. Here every binade (each interval
# $[2^k, 2^{k+1})$) from $2^{-30}$ to $2^{20}$ gets 64 values, cast into each dtype and
# compared with the float64 original. We plot the *worst* relative error in each binade.
# Inside the normal range it is flat at about eps/2 (the mantissa sets it, whatever the
# exponent); below the smallest normal (the subnormal cliff) it doubles with every binade
# down until values round to 0 (error 100%); past `max` the cast overflows to inf (drawn
# at 100% too).

# %% caption="Worst relative rounding error against a value's magnitude for fp32, fp16 and bf16, with each dtype's eps/2 dotted." slideshow={"slide_type": "subslide"}
K = torch.arange(-30, 21)                                   # binade exponents
x64 = torch.logspace(-30, 21, 64 * len(K) + 1, base=2, dtype=torch.float64)[:-1]
worst = {}
for name in ("float32", "float16", "bfloat16"):
    stored = x64.to(getattr(torch, name)).double()
    rel = ((stored - x64).abs() / x64).nan_to_num(posinf=1.0).clamp(max=1.0)
    worst[name] = rel.view(len(K), 64).max(dim=1).values   # worst case per binade

fig, ax = plt.subplots(figsize=(10, 5))
for name, color in (("float32", "C0"), ("float16", "C3"), ("bfloat16", "C2")):
    ax.step(2.0 ** K, worst[name], where="post", color=color, lw=2.5, label=name)
    ax.axhline(infos[name].eps / 2, color=color, ls=":", lw=1)
h16 = infos["float16"]
ax.axvline(h16.smallest_normal, color="C3", ls="--", lw=1.5)
ax.text(h16.smallest_normal * 1.2, 1e-2, "fp16 smallest normal 2^-14\n(subnormal cliff)",
        color="C3", fontsize=12)
ax.axvline(h16.max, color="C3", ls="-.", lw=1.5)
ax.text(h16.max / 1.3, 1e-5, "fp16 max 65504\n(overflow -> inf)", color="C3", fontsize=12,
        ha="right")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xlabel("magnitude of the value", fontsize=13)
ax.set_ylabel("worst relative rounding error", fontsize=13)
ax.set_title("Relative rounding error vs magnitude (dotted: eps/2)", fontsize=14)
ax.legend(fontsize=12, loc="center left")
ax.tick_params(labelsize=12)
fig.tight_layout()
plt.show()

# %% slideshow={"slide_type": "subslide"}
def worst_at(name, k):
    """The worst relative error in binade [2**k, 2**(k+1))."""
    return worst[name][k - int(K[0])].item()


check("bf16: worst error in every binade 2^-30..2^20 lies in [2^-9, 2^-8]",
      all(2.0**-9 <= w <= 2.0**-8 for w in worst["bfloat16"].tolist()), True)
check("fp32: never worse than 2^-24 here", worst["float32"].max().item() <= 2.0**-24, True)
check("fp16 normal range 2^-14..2^15: within eps/2 = 2^-11",
      all(worst_at("float16", k) <= 2.0**-11 for k in range(-14, 16)), True)
check("fp16 below 2^-14: the error doubles each binade down (2^-16 vs 2^-15, 2^-20 vs 2^-19)",
      torch.tensor([worst_at("float16", -16) / worst_at("float16", -15),
                    worst_at("float16", -20) / worst_at("float16", -19)]),
      torch.tensor([2.0, 2.0]), rel=0.1)  # 64 samples per binade miss the exact worst case
check("fp16 from 2^-25 down: 100% (rounds to 0 or to the smallest subnormal)",
      all(worst_at("float16", k) >= 0.5 for k in range(-30, -24)), True)
check("fp16 at 2^16 and above: overflow (drawn as 100%)", worst_at("float16", 16), 1.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A real matrix: one GPT-3 FFN weight
#
# GPT-3 175B has $d_\text{model} = 12288$, and its feed-forward layer widens that to
# $4 d_\text{model} = 49152$. One weight matrix of that layer, `[12288, 49152]`, holds
# 604M numbers. A tensor on the `meta` device has a shape and a dtype but no data, so we
# can "create" it for free and read its size. Two units appear below: **GB** = 10⁹ bytes
# (spec sheets, the lecture) and **GiB** = 2³⁰ bytes (`nvidia-smi`, allocators). At this
# scale they differ by 7%.

# %% slideshow={"slide_type": "subslide"}
shape = (12288, 49152)
ffn_bytes = {}
for dt in (torch.float32, torch.bfloat16):
    name = str(dt).removeprefix("torch.")
    w = torch.empty(shape, dtype=dt, device="meta")  # shape and dtype only: no memory
    ffn_bytes[dt] = tensor_bytes(shape, dt)
    print(f"{name:<9} {w.numel():,} x {w.element_size()} B = {format_bytes(ffn_bytes[dt])}")
    check(f"{name}: meta numel * element_size == tensor_bytes", w.numel() * w.element_size(),
          ffn_bytes[dt])
    check(f"{name}: ...and the meta tensor holds no data",
          (w.is_meta, w.untyped_storage().data_ptr()), (True, 0))
check("fp32 ≈ 2.4 GB", ffn_bytes[torch.float32] / 1e9, 2.42, rel=0.01)
check("bf16 ≈ 1.2 GB", ffn_bytes[torch.bfloat16] / 1e9, 1.21, rel=0.01)
check("fp32 in GiB", ffn_bytes[torch.float32] / 2**30, 2.25)

# %% [markdown] slideshow={"slide_type": "subslide"}
# On a GPU the prediction can be set beside a real allocation: the caching allocator's
# `memory_allocated()` must grow by exactly the predicted bytes (1,207,959,552 is a
# multiple of the allocator's 512-byte rounding, so nothing is added). This cell runs on
# CUDA only; elsewhere it prints one line saying why it was skipped.

# %%
if cuda_only(device, "allocating the bf16 FFN matrix for real"):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    w_gpu = torch.empty(shape, dtype=torch.bfloat16, device=device)
    grown = torch.cuda.memory_allocated() - before
    measured("memory_allocated() grew by", format_bytes(grown), per_device=True)
    measured("predicted (tensor_bytes)", format_bytes(ffn_bytes[torch.bfloat16]), per_device=True)
    assert grown == ffn_bytes[torch.bfloat16], (grown, ffn_bytes[torch.bfloat16])
    del w_gpu
    torch.cuda.empty_cache()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §1.2 Bytes per parameter: how big a model can 8 H100s train?
#
# Training does not store each parameter once. It keeps the weight, its gradient and
# the optimizer's running statistics, so the bytes per parameter decide how many
# parameters fit before a single activation is stored. `param_breakdown` builds each
# recipe from dtypes, so every byte count below comes from `itemsize`.
#
# Naive fp32 training with AdamW stores four fp32 numbers per parameter:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: training keeps weight, gradient and optimizer state: 16 B/param for AdamW, in fp32 and in mixed precision alike.
# - Run live: the measured AdamW state, then the 8 × 80 GB bar chart; move the calculator's sliders if time allows.
# - Point at: 5B parameters on 8 replicated GPUs, 40B sharded, before any activation.

# %% slideshow={"slide_type": "subslide"}
def show_breakdown(recipe):
    parts = param_breakdown(recipe)
    print(recipe)
    for (part, b), (_, dt) in zip(parts.items(), RECIPES[recipe], strict=True):
        print(f"  {part:<18} {str(dt).removeprefix('torch.'):<9} {b:>2} B")
    print(f"  {'total':<28} {sum(parts.values()):>2} B / param")


show_breakdown("fp32_adamw")
check("fp32 AdamW: 4 + 4 + 4 + 4", tuple(param_breakdown("fp32_adamw").values()), (4, 4, 4, 4))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Mixed precision changes which numbers are bf16, but the total stays the same. It adds an
# fp32 **master** copy of the weights, because updates as small as lr × gradient would
# vanish in bf16's 7-bit mantissa (the `1 + 1/256 == 1` problem above):

# %%
show_breakdown("mixed_bf16_adamw")
check("mixed bf16 AdamW: 2 + 2 + 4 + 4 + 4", tuple(param_breakdown("mixed_bf16_adamw").values()),
      (2, 2, 4, 4, 4))

# %% [markdown] slideshow={"slide_type": "subslide"}
# So **mixed precision saves compute time and activation memory, not optimizer
# state**. An H100 SXM's dense bf16 tensor-core peak (989.5 TFLOP/s) is 2× its TF32
# tensor-core peak (494.5) and about 15× its fp32 CUDA-core peak (67; §3.4). The 15× is
# what a plain fp32 matmul gets: PyTorch's default `torch.get_float32_matmul_precision()`
# is `"highest"`, which uses no TF32, so fp32 runs on the CUDA cores unless you opt in
# (`torch.set_float32_matmul_precision("high")`). bf16 activations also take half the
# memory, but the 16 bytes per parameter remain. That is why the big memory savings come
# from *sharding* the optimizer state (ZeRO / FSDP, Lectures 7–8).

# %%
from lecture_utils.hardware import ACCELERATORS

h100_peaks = ACCELERATORS["H100 SXM"].dense_flops
check("H100 SXM dense bf16 / TF32 (both tensor cores): 2x", h100_peaks["bf16"] / h100_peaks["tf32"], 2.0, rel=2e-3)
check("H100 SXM dense bf16 / fp32 (CUDA cores), 1 decimal", round(h100_peaks["bf16"] / h100_peaks["fp32"], 1), 14.8)
check("torch's default fp32 matmul precision (no TF32)", torch.get_float32_matmul_precision(), "highest")

# %% [markdown] slideshow={"slide_type": "subslide"}
#
# Other optimizers keep fewer statistics:

# %% slideshow={"slide_type": "subslide"}
print(f"{'recipe':<20} {'bytes':<18} {'total':>5}   parts")
for recipe in RECIPES:
    parts = param_breakdown(recipe)
    bytes_ = " + ".join(str(b) for b in parts.values())
    print(f"{recipe:<20} {bytes_:<18} {bytes_per_param(recipe):>5}   {', '.join(parts)}")
EXPECTED_TOTALS = {"fp32_adamw": 16, "mixed_bf16_adamw": 16, "autocast_bf16_adamw": 16,
                   "fp32_sgd": 8, "fp32_sgd_momentum": 12, "fp32_adagrad": 12}
check("bytes / param for every recipe", {r: bytes_per_param(r) for r in RECIPES},
      EXPECTED_TOTALS)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Measured: what does torch's AdamW actually keep?
#
# The table is arithmetic. To test it, we build a small model, run one real AdamW step,
# and add up the bytes of every tensor training keeps: the parameters, their `.grad`, and
# everything in `optimizer.state`. The totals are deterministic, so they go through
# `check`. torch's AdamW also keeps a `step` counter per parameter *tensor*: a 0-d fp32
# tensor of 4 bytes, independent of the tensor's size. We count it separately.

# %% slideshow={"slide_type": "subslide"}
def training_bytes(params, optimizer):
    """Bytes of params, grads and optimizer state, grouped by what they are."""
    parts = {"weights": 0, "gradients": 0, "exp_avg": 0, "exp_avg_sq": 0, "step": 0}
    for p in params:
        parts["weights"] += tensor_bytes(p)
        parts["gradients"] += tensor_bytes(p.grad)
        for key, t in optimizer.state[p].items():
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
for key, b in parts.items():
    print(f"  {key:<11} {b:>7,} B")
check("parameters", n_params, 64 * 128 + 128 + 128 * 64 + 64)
check("optimizer state keys", sorted(optimizer.state[params[0]]), ["exp_avg", "exp_avg_sq", "step"])
check("step counters: one 4-byte scalar per parameter tensor", parts["step"], 4 * len(params))
check("everything else = 16 bytes * n_params", sum(parts.values()) - parts["step"], 16 * n_params)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Now the same check for the two mixed-precision recipes.
#
# * **`torch.autocast`** (what §8.3 of the notes shows) runs the matmuls in bf16, but the
#   parameters stay fp32 and so do their gradients. Its bf16 weight copies are transient
#   but not per-op: with the default `cache_enabled=True` each weight's cast is cached for
#   the whole autocast region, and the copies saved for backward live until backward
#   (about 2 bytes per parameter more at the peak, counted as activation memory). Still
#   16 bytes of training state.
# * **bf16 weights + fp32 master** (the notes' 2 + 2 + 4 + 4 + 4): the model itself is in
#   bf16, and AdamW updates an fp32 copy. The gradient is converted to fp32 just for the
#   step and then freed. A system that kept a full fp32 gradient as well would pay 20 bytes
#   per parameter; real implementations convert the gradients a bucket at a time.

# %% slideshow={"slide_type": "subslide"}
# autocast: bf16 compute, fp32 parameters and gradients
check("autocast caches its weight casts by default (cache_enabled=True)", torch.is_autocast_cache_enabled(), True)
model_ac = copy.deepcopy(model)
params_ac = list(model_ac.parameters())
opt_ac = torch.optim.AdamW(params_ac, lr=1e-3)
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = model_ac(batch)
check("autocast: the matmul output is bf16", out.dtype, torch.bfloat16)
out.float().pow(2).mean().backward()
opt_ac.step()
check("autocast: parameters and gradients stay fp32", {(p.dtype, p.grad.dtype) for p in params_ac},
      {(torch.float32, torch.float32)})
parts_ac = training_bytes(params_ac, opt_ac)
check("autocast: bytes / param (without step counters)",
      (sum(parts_ac.values()) - parts_ac["step"]) / n_params, 16.0)

# bf16 model + fp32 master weights
model_bf = copy.deepcopy(model).to(torch.bfloat16)
params_bf = list(model_bf.parameters())
master = [p.detach().float().requires_grad_() for p in params_bf]
opt_master = torch.optim.AdamW(master, lr=1e-3)
model_bf(batch.bfloat16()).float().pow(2).mean().backward()
for m, p in zip(master, params_bf, strict=True):
    m.grad = p.grad.float()          # transient fp32 copy of the gradient...
opt_master.step()
for m, p in zip(master, params_bf, strict=True):
    m.grad = None                    # ...freed after the step
    with torch.no_grad():
        p.copy_(m)                   # the bf16 weights follow the fp32 master

kept = {
    "weights (bf16)": sum(tensor_bytes(p) for p in params_bf),
    "gradients (bf16)": sum(tensor_bytes(p.grad) for p in params_bf),
    "master weights": sum(tensor_bytes(m) for m in master),
    "adam m + v": sum(tensor_bytes(opt_master.state[m][k]) for m in master
                      for k in ("exp_avg", "exp_avg_sq")),
}
for key, b in kept.items():
    print(f"  {key:<17} {b / n_params:>4.0f} B / param")
check("bf16 + fp32 master: measured per-param bytes", tuple(b / n_params for b in kept.values()),
      (2.0, 2.0, 4.0, 8.0))
check("...matches the mixed_bf16_adamw recipe", sum(kept.values()),
      bytes_per_param("mixed_bf16_adamw") * n_params)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The 8 × 80 GB question
#
# With 16 bytes per parameter, how large a model can 8 H100s (80 GB each) train?
#
# * **Replicated** (plain data parallel): every GPU holds the full training state, so
#   adding GPUs does not help, and the limit is 80 GB / 16 B = **5B** parameters.
# * **Perfectly sharded** (ZeRO-3 / FSDP): the state is split 8 ways, so the limit is
#   8 × 80 GB / 16 B = **40B** parameters.

# %%
H100 = 80e9  # bytes, as the notes count it
replicated = max_params_that_fit(H100, n_gpus=8, recipe="fp32_adamw")
sharded = max_params_that_fit(H100, n_gpus=8, recipe="fp32_adamw", sharded=True)
check("8 x 80 GB replicated: params", replicated, 5_000_000_000)
check("8 x 80 GB perfectly sharded: params", sharded, 40_000_000_000)
check("mixed precision changes nothing",
      max_params_that_fit(H100, n_gpus=8, recipe="mixed_bf16_adamw", sharded=True), sharded)

# %% [markdown] slideshow={"slide_type": "subslide"}
# "80 GB" is marketing rounding. The notes take it as 80 × 10⁹ bytes, but the H100's
# HBM is closer to 80 **GiB**, and `nvidia-smi` reports a bit less than that as usable.
# Read as 80 GiB, the answer grows by 7%:

# %%
H100_GIB = 80 * 2**30
print(f"80e9 bytes   = {format_bytes(H100)}")
print(f"80 GiB       = {format_bytes(H100_GIB)}")
for label, mem in (("80 GB ", H100), ("80 GiB", H100_GIB)):
    r = max_params_that_fit(mem, n_gpus=8)
    s = max_params_that_fit(mem, n_gpus=8, sharded=True)
    print(f"{label}: replicated {r / 1e9:.2f}B, sharded {s / 1e9:.2f}B params")
check("80 GiB replicated", max_params_that_fit(H100_GIB, n_gpus=8), 5_368_709_120)
check("80 GiB sharded", max_params_that_fit(H100_GIB, n_gpus=8, sharded=True), 42_949_672_960)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Both numbers are **upper bounds**, because the training state is not all that lives on a
# GPU. These are not counted:
#
# * **activations**, which grow with batch size × sequence length × depth (often the
#   largest item);
# * **temporary buffers**: ZeRO-3's all-gathered layer weights, communication buckets,
#   matmul workspaces, the CUDA context;
# * **allocator caching and fragmentation**: memory reserved but not usable.
#
# In practice the real limit is well below 5B replicated and 40B sharded.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Try it: a memory calculator
#
# Move the sliders to see the per-GPU training state for any size, recipe and GPU count.
# Widgets need a live kernel; in a static view (GitHub, HTML export) the cell shows only
# the widget's text description, so the same numbers follow as a printed table.

# %% slideshow={"slide_type": "subslide"}
from lecture_utils.memory import memory_calculator

memory_calculator()

# %% [markdown]
# The static version: a 7B model with fp32 AdamW, per GPU, on 1 GPU, on 8 replicated
# GPUs, and on 8 sharded GPUs.

# %% slideshow={"slide_type": "subslide"}
N = 7_000_000_000
CONFIGS = {"1 GPU": (1, False), "8 GPUs replicated": (8, False), "8 GPUs sharded": (8, True)}
tables = {label: dict(training_state_table(N, n_gpus=g, sharded=s, recipe="fp32_adamw"))
          for label, (g, s) in CONFIGS.items()}

print(f"{'7B, fp32_adamw':<15}" + "".join(f"{label:>22}" for label in CONFIGS))
for part in tables["1 GPU"]:
    print(f"{part:<15}" + "".join(f"{format_bytes(t[part]):>22}" for t in tables.values()))
print(f"{'fits in 80 GB?':<15}" + "".join(f"{'yes' if t['total'] <= H100 else 'no':>22}"
                                         for t in tables.values()))

check("1 GPU total", tables["1 GPU"]["total"], 16 * N)
check("replicated: per-GPU total unchanged", tables["8 GPUs replicated"]["total"], 16 * N)
check("sharded: per-GPU total / 8", tables["8 GPUs sharded"]["total"], 16 * N // 8)
check("7B fits in 80 GB only when sharded", [t["total"] <= H100 for t in tables.values()],
      [False, False, True])

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same numbers for every recipe, as a picture: per-GPU training state of the 7B model,
# each bar stacked from the recipe's parts (bytes per parameter × 7B ÷ shards). On one GPU,
# or replicated on eight, only plain SGD (8 B/param) gets under the 80 GB line; sharded
# eight ways, every recipe does.

# %% caption="Training state per GPU for a 7B model by recipe, on 1 GPU, 8 replicated and 8 sharded, against 80 GB." slideshow={"slide_type": "subslide"}
PART_COLORS = {}
fig, axes = plt.subplots(1, 3, figsize=(14, 5.5), sharey=True)
per_gpu_gb = {}
for ax, (label, (g, s)) in zip(axes, CONFIGS.items(), strict=True):
    for x_pos, recipe in enumerate(RECIPES):
        bottom = 0.0
        for part, b in param_breakdown(recipe).items():
            height = b * N / (g if s else 1) / 1e9
            color = PART_COLORS.setdefault(part, f"C{len(PART_COLORS)}")
            ax.bar(x_pos, height, bottom=bottom, color=color, edgecolor="white")
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

# %% slideshow={"slide_type": "subslide"}
check("bars: fp32 AdamW on 1 GPU = 112 GB", per_gpu_gb["1 GPU", "fp32_adamw"], 112.0)
check("bars: SGD (8 B/param) on 1 GPU = 56 GB, under the line",
      per_gpu_gb["1 GPU", "fp32_sgd"], 56.0)
check("bars: replication changes nothing", [per_gpu_gb["8 GPUs replicated", r] for r in RECIPES],
      [per_gpu_gb["1 GPU", r] for r in RECIPES])
check("bars: every recipe fits when sharded 8 ways (AdamW: 14 GB)",
      (all(per_gpu_gb["8 GPUs sharded", r] <= H100 / 1e9 for r in RECIPES),
       per_gpu_gb["8 GPUs sharded", "fp32_adamw"]), (True, 14.0))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Memory = numel × bytes per element; a slice keeps its parent's whole storage alive.
# - Exponent bits buy range, mantissa bits buy precision: bf16 keeps fp32's range with
#   eps = 1/128; fp16 is 8× more precise but loses values below 6.1e-5 (gradually, then
#   to 0 below 3e-8) and overflows above 65504, hence loss scaling.
# - Roles: fp32 for master weights, optimizer state and accumulation; bf16/fp16 for matmul
#   inputs under autocast; fp8 e4m3 forward, e5m2 gradients; int8 for quantised inference.
# - AdamW training state is 16 B/param in fp32 *and* in mixed precision: mixed precision
#   saves compute and activation memory, sharding saves optimizer state.
# - 8 × 80 GB holds at most 5B parameters replicated, 40B sharded, before activations.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Recap: memory = numel × bytes; bf16 keeps fp32's range, fp16 needs loss scaling; AdamW = 16 B/param.
# - Ask the room: what does mixed precision save, if not optimizer state?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises (from the self-test)
#
# For each question: fill in the `...` in the exercise cell, run it and the check cell
# under it (it says whether your answer is right, without giving it away), and expand the
# hidden solution only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Give 3 minutes per question: fill in the `...`, run the check cell.
# - Then expand the hidden solution live and point at the `✓ ... is right` lines.
# - Point at: Q2, three gradients vanish in fp16 and none in bf16; Q3, 5B on one GPU, 40B on 8 sharded.

# %% [markdown] slideshow={"slide_type": "subslide"}
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
check_answer("Q2, gradients lost in fp16", q2_zeros_fp16)
check_answer("Q2, gradients lost in bf16", q2_zeros_bf16)
check_answer("Q2, gradients loss scaling rescues", q2_rescued)
check_answer("Q2, 1.0 x 2**16 in fp16", q2_one_scaled)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. fp16 has 5 exponent bits: its normal range ends at 6.1e-5 and its subnormals
# at 6e-8, so small gradients first lose precision and then become exactly 0. Loss scaling
# shifts every gradient up into fp16's range and back down in fp32. But one fixed scale
# cannot suit every gradient: scaled large gradients overflow to inf (the last row), so
# fp16 training needs a *dynamic* loss scaler that skips the step and lowers the scale
# when it sees inf. bf16 has fp32's 8 exponent bits, so every gradient above ~1e-38 keeps
# its magnitude and the whole machinery is unnecessary. bf16 pays in precision instead
# (eps = 1/128); training tolerates that noise well, but a gradient rounded to 0 carries
# no signal at all.
SCALE = 2.0**16
grads = [1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
print(f"{'gradient':>9} {'fp16':>11} {'bf16':>11} {'fp16 x 2^16':>12} {'unscaled':>11}")
vanished_fp16, vanished_bf16, rescued = [], [], []
for g in grads:
    in_fp16, in_bf16 = cast(g, fp16), cast(g, bf16)
    scaled = cast(g * SCALE, fp16)
    unscaled = scaled / SCALE  # in full precision (a Python float64)
    print(f"{g:>9.0e} {in_fp16:>11.4g} {in_bf16:>11.4g} {scaled:>12.4g} {unscaled:>11.4g}")
    vanished_fp16 += [g] if in_fp16 == 0 else []
    vanished_bf16 += [g] if in_bf16 == 0 else []
    rescued += [g] if in_fp16 == 0 and math.isfinite(unscaled) and unscaled != 0 else []

check("fp16 flushes these gradients to 0", vanished_fp16, [1e-10, 1e-09, 1e-08])
check("bf16 flushes none", vanished_bf16, [])
check("bf16 keeps every gradient within eps/2",
      all(abs(cast(g, bf16) - g) / g <= infos["bfloat16"].eps / 2 for g in grads), True)
check("loss scaling rescues all of them", rescued, vanished_fp16)
check("1e-8, scaled and unscaled: relative error < fp16 eps",
      abs(cast(1e-8 * SCALE, fp16) / SCALE - 1e-8) / 1e-8 < infos["float16"].eps, True)
check("...but a gradient of 1.0 now overflows: 65536 -> inf", cast(1.0 * SCALE, fp16), math.inf)

q2_zeros_fp16, q2_zeros_bf16, q2_rescued = len(vanished_fp16), len(vanished_bf16), len(rescued)
q2_one_scaled = cast(1.0 * SCALE, fp16)
check_answer("Q2, gradients lost in fp16", q2_zeros_fp16)
check_answer("Q2, gradients lost in bf16", q2_zeros_bf16)
check_answer("Q2, gradients loss scaling rescues", q2_rescued)
check_answer("Q2, 1.0 x 2**16 in fp16", q2_one_scaled)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Q3. How big a model fits in training state on one 80 GB H100 with naive fp32 AdamW? And on 8 with ZeRO (perfect sharding)?
#
# Work it out from the bytes per parameter, not from a helper. As a follow-up, suppose
# you hold back 20% of each GPU for activations and buffers. What are the limits then?

# %% tags=["exercise"]
q3_one_gpu = ...  # parameters that fit on one 80 GB GPU (a count, e.g. 1e9)
q3_eight_sharded = ...  # parameters that fit on 8 GPUs, perfectly sharded
q3_one_gpu_80 = ...  # one GPU with 20% held back
q3_eight_sharded_80 = ...  # 8 sharded GPUs with 20% held back

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("Q3, one GPU (params)", q3_one_gpu)
check_answer("Q3, 8 GPUs sharded (params)", q3_eight_sharded)
check_answer("Q3, one GPU, 20% held back", q3_one_gpu_80)
check_answer("Q3, 8 sharded, 20% held back", q3_eight_sharded_80)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. 16 bytes per parameter (4 + 4 + 4 + 4), so one 80 GB GPU holds
# 80e9 / 16 = 5B parameters and 8 perfectly sharded GPUs hold 40B. Replication (plain data
# parallel) leaves the limit at 5B however many GPUs you add. Both figures exclude
# activations, buffers and fragmentation; hold back 20% for those and they drop to 4B and 32B.
per_param = 4 * torch.float32.itemsize  # weights, grads, m, v: all fp32
one_gpu = int(80e9 // per_param)
eight_sharded = int(8 * 80e9 // per_param)
check("bytes / param, from itemsize", per_param, 16)
check("one 80 GB GPU: ~5B params", one_gpu, 5_000_000_000)
check("8 GPUs, perfectly sharded: ~40B params", eight_sharded, 40_000_000_000)
check("agrees with max_params_that_fit (1 GPU)", max_params_that_fit(80e9), one_gpu)
check("agrees with max_params_that_fit (8, sharded)",
      max_params_that_fit(80e9, n_gpus=8, sharded=True), eight_sharded)

usable = 0.8 * 80e9  # 20% held back for activations and buffers
check("with 20% held back, one GPU", max_params_that_fit(usable), 4_000_000_000)
check("with 20% held back, 8 sharded", max_params_that_fit(usable, n_gpus=8, sharded=True),
      32_000_000_000)

q3_one_gpu, q3_eight_sharded = one_gpu, eight_sharded
q3_one_gpu_80 = max_params_that_fit(usable)
q3_eight_sharded_80 = max_params_that_fit(usable, n_gpus=8, sharded=True)
check_answer("Q3, one GPU (params)", q3_one_gpu)
check_answer("Q3, 8 GPUs sharded (params)", q3_eight_sharded)
check_answer("Q3, one GPU, 20% held back", q3_one_gpu_80)
check_answer("Q3, 8 sharded, 20% held back", q3_eight_sharded_80)
