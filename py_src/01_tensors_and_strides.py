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
# # 01 · Tensors, storage and strides
#
# Lecture 2, §1 and §2.2–§2.4: the core path below is the lecture (about 15 minutes to
# read), and "Going deeper" sections at the end of its sections hold the details.
# A `✓` line is a checked claim; a `[measured]` line depends on the machine.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §1 Two estimates before any code
#
# The lecture opens with napkin math (§1.1–§1.2): a 70B model trained on 15T tokens costs
# about $6ND$ FLOPs, and fp32 training with AdamW keeps 16 bytes per parameter (weights,
# gradient, Adam's m and v). Notebooks 02 and 03 work both out; here, the two divisions:

# %% tags=["claim-S1", "claim-S3", "claim-S4"]
from lecture_utils import check
from lecture_utils.flops import training_days, training_flops
from lecture_utils.recipes import bytes_per_param
from lecture_utils.sizes import format_bytes

N, D = 70e9, 15e12                  # parameters, training tokens
flops = training_flops(N, D).total  # 6ND
check("compute: 6ND FLOPs", flops, 6.3e24)
days = training_days(flops, "H100", n_gpus=1024, mfu=0.5)  # the dense bf16 peak, half of it used
check("time on 1024 H100s at MFU 0.5 (days)", round(days), 144)
check("memory: 70B × 16 bytes (fp32 AdamW)", format_bytes(N * bytes_per_param("fp32_adamw")),
      "1.12 TB (1.02 TiB)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.2 A tensor is a pointer plus metadata
#
# Every one of those bytes sits in a tensor. A tensor has two layers: a flat block of
# numbers, the **storage**, and metadata that says how to read it (shape, stride, offset,
# dtype, device). Memory is paid per storage; the metadata is free. The notes' example:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: `x` is 3 × 4 int64. How many bytes does it hold, and what do you expect `x.stride()` to be?
# - Run live: the `arange` cell, then the formula cell.
# - Ask the room: which storage slot holds `x[2, 1]`?

# %% tags=["claim-S11"]
import torch

x = torch.arange(12).view(3, 4)
print(x)
check("x: shape, stride, storage offset", (tuple(x.shape), x.stride(), x.storage_offset()),
      ((3, 4), (4, 1), 0))
check("its storage: 12 numbers × 8 bytes", x.untyped_storage().nbytes(), 96)

# %% [markdown] slideshow={"slide_type": "slide"}
# `stride=(4, 1)`: one step down a row skips 4 elements of storage, one step along a
# column skips 1. Element `x[r, c]` lives at storage index
# $\text{offset} + r \cdot s_0 + c \cdot s_1$, counted in elements (in $n$ dimensions,
# $\text{offset} + \sum_k i_k s_k$). Since `x` holds `0..11`, each value *is* its storage
# index, so the formula can be checked on every element of any view of `x`:

# %% tags=["claim-S11"]
import itertools


def storage_index(t, idx):
    """Where t[idx] lives in t's storage, in elements: offset + sum of i_k * stride_k."""
    return t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride(), strict=True))


views = {"x": x, "x[:, 1]": x[:, 1], "x.T": x.T, "x[1:, ::2]": x[1:, ::2]}
for name, v in views.items():
    print(f"{name:<10}  shape {tuple(v.shape)}, stride {v.stride()}, offset {v.storage_offset()}")
found = sum(v[idx].item() == storage_index(v, idx)
            for v in views.values() for idx in itertools.product(*map(range, v.shape)))
check("elements of these views that sit where the formula says", found, 12 + 3 + 12 + 4)

# %% [markdown] slideshow={"slide_type": "slide"}
# How strides walk the storage: above, the 12 storage slots, coloured like the row of
# the view that reads them (grey: never read); below, each element labelled with its
# storage index. `x.T` jumps by 4 along a row; `x[:, 1:3]` starts at offset 1 and skips slots.

# %% caption="Three views of one 12-element storage (x, x.T, x[:, 1:3]): which storage slot each element reads, and in what order."
import matplotlib.pyplot as plt

from lecture_utils.plots import plot_strides

plot_strides({"x": x, "x.T": x.T, "x[:, 1:3]": x[:, 1:3]})
plt.show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the formula on random numbers, in 4-D, and in bytes
#
# The check above leans on `x` holding its own indices. To test the formula without that
# help, read the raw storage directly: `storage_of` wraps it in a fresh flat tensor (offset
# 0, stride 1), and `n_matching` counts the elements with `t[idx] == storage[formula(idx)]`,
# here on random floats in 4-D through a permute, steps and an integer index.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
def storage_of(t):
    """The whole storage under ``t`` as a flat 1-D tensor, ignoring t's shape, stride and offset."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def n_matching(t):
    storage = storage_of(t)
    return sum(bool(t[idx] == storage[storage_index(t, idx)]) for idx in itertools.product(*map(range, t.shape)))


t4 = torch.randn(2, 3, 4, 5)
hard = [t4.permute(3, 1, 0, 2)[1:, :, :, ::2], t4[..., 2], t4.transpose(1, 3)[:, 1:3]]
check("random 4-D views: elements at storage[offset + Σ iₖ·sₖ]", [n_matching(v) for v in hard],
      [v.numel() for v in hard])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The offset is in elements; `data_ptr()` (the address of a view's first element) moves by
# `offset × element_size` bytes. Differences of pointers are stable; pointers are not.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("data_ptr shift of x[:, 1] and x[1:, ::2] in bytes = offset × 8",
      [v.data_ptr() - x.data_ptr() for v in (x[:, 1], x[1:, ::2])], [1 * 8, 4 * 8])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.3 Views are cheap, copies are expensive
#
# Slicing, basic indexing (integers, slices, `None`, `...`), `transpose` and `view` change
# only shape, stride and offset: O(1), no new memory, no traffic. The result is a **view**
# that shares the storage, so a write through one is seen through all. Indexing with a list
# or a tensor (*advanced* indexing) copies, as does anything that reads and writes every byte.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: after `col = a[:, 1]; col[0] = 100`, what is `a[0, 1]`?
# - Run live: the failing `view` cell, then `contiguous()`.
# - Ask the room: how many bytes does `contiguous()` allocate here, and how many does it move?

# %% tags=["claim-S12"]
def same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


y = x[:, 1]            # a view: new offset and stride
z = x.transpose(0, 1)  # a view: the strides swapped
check("storages under x, x[:, 1], x.transpose(0, 1) and x.view(2, 6)",
      len({v.untyped_storage().data_ptr() for v in (x, y, z, x.view(2, 6))}), 1)

a = torch.arange(12).view(3, 4)
a.T[3, 2] = -1         # write through the transpose ...
check("... and a[2, 3] sees it", a[2, 3].item(), -1)
check("x[[0, 2]], advanced indexing, shares x's storage (no: a copy)", same_storage(x[[0, 2]], x), False)

# %% [markdown] slideshow={"slide_type": "slide"}
# A tensor is **contiguous** when its strides are those of a row-major layout of its
# shape: the last stride is 1 and each earlier one is the product of the sizes after it.
# `z = x.T` (shape `(4, 3)`, strides `(1, 4)`) is not, and flattening it with `view` fails:

# %% tags=["claim-S13"]
err = check("z.view(12) on the non-contiguous transpose", lambda: z.view(12), raises=RuntimeError)
print(err)

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** (§2.3, and the answer to Q5) that `view` "only works on a contiguous
# > layout". **In fact** `view` needs only that the new shape can be read from the same
# > storage with new strides: each new dimension either splits one old dimension, or merges
# > old dimensions $d, \dots, d+k$ that are adjacent in memory,
# > $\text{stride}[i] = \text{stride}[i+1] \times \text{size}[i+1]$ for $d \le i < d+k$
# > (PyTorch's documentation of `Tensor.view`). `z` is not contiguous, yet splitting its
# > first dimension is a view:

# %% tags=["claim-S13"]
check("z.view(2, 2, 3) of non-contiguous z: a view with strides", z.view(2, 2, 3).stride(), (2, 1, 4))

# %% [markdown] slideshow={"slide_type": "slide"}
# `contiguous()` makes the copy: a new storage holding the elements in the view's logical
# order, after which `view(12)` works. It costs `numel × element_size` bytes of memory and
# twice that in traffic (every byte read once, written once). `reshape` is `view` when
# possible and this copy otherwise: the same line of code, with or without the cost.

# %% tags=["claim-S13"]
zc = z.contiguous()
allocated = 0 if same_storage(zc, x) else zc.untyped_storage().nbytes()
check("bytes z.contiguous() allocated: numel × element_size", allocated, z.numel() * z.element_size())
check("then view(12) works", zc.view(12), torch.tensor([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]))
check("z.reshape(12) shares x's storage (no: it copied)", same_storage(z.reshape(12), x), False)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Predict, then measure.** A view is O(1): the same time at any size. A copy is O(n): 64×
# the elements, about 64× the time on a CPU (caches speed the small copy; on a GPU a small
# copy is bound by its launch, so the ratio falls short). Timed by `time_fn`
# (`torch.utils.benchmark`: warm-up, median, spread, one thread; notebook 03 opens it up):

# %% tags=["claim-S13"]
from lecture_utils import measured
from lecture_utils.bench import conditions, time_fn

sides = (1024, 8192) if device.type == "cuda" else (256, 2048)  # 64x the elements
times = {}
for side in sides:
    t = torch.randn(side, side, generator=torch.Generator().manual_seed(0)).to(device)  # the timing's own draws
    times[side] = [time_fn(fn, t, threads=1, min_run_time=0.05) for fn in (torch.t, lambda t: t.T.contiguous())]
(view_small, copy_small), (view_large, copy_large) = times.values()
measured("the view t.T: large / small, in time (predicted 1)", view_large.median / view_small.median, spread=(view_large, view_small))
measured("the copy t.T.contiguous(): large / small, in time (predicted 64)", copy_large.median / copy_small.median, spread=(copy_large, copy_small))
measured("the large copy: bytes read and written per second", 2 * t.nbytes / copy_large.median / 1e9, "GB/s", spread=copy_large)
if conditions(view_small, copy_small, view_large, copy_large):  # O(n) and O(1), on a clock that can be trusted
    assert copy_large.median / copy_small.median > 8 and view_large.median / view_small.median < 2, times

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: contiguity, stride 0, and which copy is slower
#
# **Contiguous is not "decreasing strides".** `x[:, ::2]` has strides `(4, 2)`, decreasing,
# and is not contiguous: it skips every other slot. Torch's `is_contiguous()` agrees with
# the row-major rule on every view here (it ignores dimensions of size 1).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
def row_major_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


some = {"x": x, "x[1:]": x[1:], "x[:, 1]": x[:, 1], "x.T": x.T, "x[:, ::2]": x[:, ::2]}
check("contiguous by torch, and by the row-major rule",
      {name: v.is_contiguous() for name, v in some.items()},
      {name: v.stride() == row_major_strides(tuple(v.shape)) for name, v in some.items()})
check("x.contiguous() is x itself: already contiguous, nothing copied", x.contiguous() is x, True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **`reshape` returns a view whenever `view` would work**, so only the impossible merge copies.
# And **broadcasting is a view with stride 0**: `expand` lets one storage slot serve every row,
# and memory is paid only when something materialises it.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("x.reshape(2, 6) and z.reshape(2, 2, 3) are views of x",
      [same_storage(x.reshape(2, 6), x), same_storage(z.reshape(2, 2, 3), x)], [True, True])
row = torch.arange(4)
e = row.expand(3, 4)
check("row.expand(3, 4): strides, and bytes held (4 int64s)", (e.stride(), e.untyped_storage().nbytes()),
      ((0, 1), 32))
check("e.contiguous() materialises all 12", e.contiguous().untyped_storage().nbytes(), 96)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Which copy.** At the large size of the core's timing, the transposed copy against a plain
# `clone`: both move every byte twice, but the transposing one reads with a stride of a
# whole row, so it is usually slower.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
t_clone = time_fn(torch.clone, t, threads=1, min_run_time=0.05)
measured("t.clone() (plain copy), median", t_clone.median * 1e3, "ms", spread=t_clone)
measured("t.T.contiguous() / t.clone(), in time", copy_large.median / t_clone.median, spread=(copy_large, t_clone))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.4 einops: give dimensions names
#
# `x.transpose(1, 2).reshape(B, T, -1)` is full of positional magic numbers; a wrong axis
# often still runs. einops names the dimensions instead. The notes' three examples, each
# against the plain PyTorch it replaces:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: in `x.transpose(1, 2).reshape(B, T, -1)`, which axis is which?
# - Run live: `einsum`, `reduce`, `rearrange`, then a wrong `k` passed to `attention_scores`.
# - Ask the room: does `rearrange` into heads copy the data?

# %% tags=["claim-S14"]
from einops import einsum, rearrange, reduce

batch, seq1, seq2, hidden = 2, 3, 5, 64
q, k = torch.randn(batch, seq1, hidden), torch.randn(batch, seq2, hidden)
scores = einsum(q, k, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")
check("einsum scores == q @ k.transpose(-2, -1)", scores, q @ k.transpose(-2, -1), rel=1e-5, abs=1e-5)
s = reduce(q, "... hidden -> ...", "sum")  # "..." keeps the leading dims as they are
check("reduce over hidden == q.sum(-1)", s, q.sum(-1), rel=1e-5, abs=1e-5)
heads = rearrange(q, "... (heads d) -> ... heads d", heads=8)  # split hidden = 8 heads × 8
check("q split into 8 heads of 8: shape", tuple(heads.shape), (2, 3, 8, 8))
check("the heads are a view of q (no copy)", same_storage(heads, q), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# Names in an annotation can be enforced: with jaxtyping, `@jaxtyped(typechecker=beartype)`
# binds each dimension name to a size at its first use and insists every later use agrees,
# the return value included.

# %% tags=["claim-S14"]
from beartype import beartype
from jaxtyping import Float, TypeCheckError, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def attention_scores(q: Float[Tensor, "batch seq1 hidden"],
                     k: Float[Tensor, "batch seq2 hidden"]) -> Float[Tensor, "batch seq1 seq2"]:
    return einsum(q, k, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")


k_bad = torch.randn(batch, seq2, hidden - 1)  # hidden 63 where q has 64
shape_error = check("a k with the wrong hidden size, rejected at the call",
                    lambda: attention_scores(q, k_bad), raises=TypeCheckError)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: what einops and jaxtyping refuse, and what they cannot see
#
# A named pattern refuses what cannot be true (64 does not split into 7 heads), and the
# round trip through `rearrange` is exact and still a view. jaxtyping's message names the
# parameter and the size it bound.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from einops import EinopsError

heads_error = check("heads=7 on hidden=64", lambda: rearrange(q, "... (heads d) -> ... heads d", heads=7),
                    raises=EinopsError)
back = rearrange(heads, "... heads d -> ... (heads d)")
check("round trip: q back exactly, still a view", (torch.equal(back, q), same_storage(back, q)), (True, True))
check("the message blames parameter 'k' and shows hidden=64",
      ["parameter 'k'" in str(shape_error), "hidden=64" in str(shape_error)], [True, True])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The return annotation catches a classic transposition bug, `k qᵀ` instead of `q kᵀ`
# (shape `batch seq2 seq1`). Its limit: shapes cannot tell equal sizes apart, so when
# `seq1 == seq2` the same bug passes.


# %% slideshow={"slide_type": "skip"} tags=["deeper"]
@jaxtyped(typechecker=beartype)
def buggy_scores(q: Float[Tensor, "batch seq1 hidden"],
                 k: Float[Tensor, "batch seq2 hidden"]) -> Float[Tensor, "batch seq1 seq2"]:
    return k @ q.transpose(-2, -1)  # bug: (batch, seq2, seq1)


caught = check("wrong return shape rejected when seq1 != seq2 (3 != 5)", lambda: buggy_scores(q, k),
               raises=TypeCheckError)
check("the message says it was the return value", "return value" in str(caught), True)
check("same bug, seq1 == seq2: passes the shape check",
      tuple(buggy_scores(q, torch.randn(batch, seq1, hidden)).shape), (batch, seq1, seq1))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - A tensor = storage (the bytes you pay for) + shape, stride, offset (free).
#   Element address: `offset + Σ iₖ·sₖ`, in elements.
# - Slicing, basic indexing, `transpose`, `view`, `expand` and most `rearrange`s are views:
#   O(1), no new memory, writes are shared; `x[[0, 2]]` (advanced indexing) copies.
# - `view` works when the new shape splits dimensions or merges ones adjacent in memory;
#   otherwise `contiguous()` (or `reshape`) copies: `numel × element_size` bytes, twice
#   that in traffic.
# - Name dimensions (einops) and check them (jaxtyping), so axis mistakes fail loudly.

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
# - Ask the room (Q5): which condition does `view(-1)` need, and what does the fix cost for one FFN matrix?
# - Then expand the hidden solution live.

# %% [markdown] slideshow={"slide_type": "-"}
# ### Q5. Why does `x.transpose(0, 1).view(-1)` raise, and what does `.contiguous()` cost?
#
# Answer with the merge condition from §2.3, then put numbers on the cost of the fix for
# the notes' GPT-3 FFN matrix `[12288, 49152]` in bfloat16 (§2.1).

# %% tags=["exercise"]
q5_needed = ...  # x.T (shape (4, 3)) keeps stride[1] = 4: the stride[0] that lets view(-1) merge dims 0 and 1
q5_extra_bytes = ...  # extra memory of w.T.contiguous() for the FFN matrix, in bytes
q5_traffic_bytes = ...  # bytes the copy reads plus writes, in bytes

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("Q5, stride[0] that view(-1) needs", q5_needed)
check_answer("Q5, extra memory (bytes)", q5_extra_bytes)
check_answer("Q5, memory traffic (bytes)", q5_traffic_bytes)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "claim-S39"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. transpose only swaps the strides: xt = x.T has shape (4, 3) and strides (1, 4).
# view(-1) merges dims 0 and 1 into one, which needs stride[0] == stride[1] \* size[1] = 4
# \* 3 = 12; it is 1, so no single stride reads the elements in order and view refuses.
# contiguous() copies: a second buffer of numel × element_size bytes, every byte read once
# and written once. For the FFN matrix, on the meta device (shapes and strides, no memory):
#
# ```python
# xt = x.transpose(0, 1)
# w = torch.empty(12288, 49152, dtype=torch.bfloat16, device="meta")
# extra = w.T.contiguous().numel() * w.element_size()
# print(f"{format_bytes(extra)} more memory, {format_bytes(2 * extra)} of traffic, on every call")
#
# q5_needed = xt.stride(1) * xt.size(1)
# check("x.T's stride[0], and the stride[0] that view(-1) needs", (xt.stride(0), q5_needed), (1, 12))
# q5_extra_bytes, q5_traffic_bytes = extra, 2 * extra
# check_answer("Q5, stride[0] that view(-1) needs", q5_needed)
# check_answer("Q5, extra memory (bytes)", q5_extra_bytes)
# check_answer("Q5, memory traffic (bytes)", q5_traffic_bytes)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, strides worked by hand, for practice after the lecture.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E1.1. Strides by hand
#
# With `x = torch.arange(12).view(3, 4)`, predict shape, stride and storage offset of
# `x[::2, 1:]` and `x.T[1:, ::2]` without running anything. Then predict the values of
# `x.T[1:, ::2]` from the formula alone.

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e1_1_a = ...  # (shape, stride, offset) of x[::2, 1:], e.g. ((3, 4), (4, 1), 0)
e1_1_b = ...  # (shape, stride, offset) of x.T[1:, ::2]
e1_1_values = ...  # the values of x.T[1:, ::2], as a nested list of rows

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E1.1, x[::2] from column 1 on", e1_1_a)
check_answer("E1.1, x.T[1:, ::2]", e1_1_b)
check_answer("E1.1, values of x.T[1:, ::2]", e1_1_values)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# x[::2, 1:]: rows 0 and 2, so the row stride is 2 \* 4 = 8; columns from 1, so offset 1.
# x.T has strides (1, 4); [1:] moves the offset by 1 \* 1, ::2 doubles the column stride to
# 8. Values = storage indices (x holds 0..11): offset 1 + r \* 1 + c \* 8.
#
# ```python
# def metadata(v):
#     return (tuple(v.shape), v.stride(), v.storage_offset())
#
#
# e1_1_a, e1_1_b = metadata(x[::2, 1:]), metadata(x.T[1:, ::2])
# e1_1_values = [[1 + r * 1 + c * 8 for c in range(2)] for r in range(3)]
# print("x.T[1:, ::2] =", x.T[1:, ::2].tolist())
# check_answer("E1.1, x[::2] from column 1 on", e1_1_a)
# check_answer("E1.1, x.T[1:, ::2]", e1_1_b)
# check_answer("E1.1, values of x.T[1:, ::2]", e1_1_values)
# ```
#
# </details>
