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
# Lecture 2, §2.2–§2.4. Every parameter, gradient, optimizer state and activation in a
# training run is a tensor, so the memory bill is a sum over tensors. This notebook looks
# under the hood of one: a flat block of bytes (the **storage**) plus a little metadata
# (shape, stride, offset) that says how to read it. Knowing which operations only touch
# the metadata and which ones copy the bytes is knowing which lines of your code cost
# memory and bandwidth.
#
# Every claim below is checked by code (`✓` lines); anything timed on this machine is
# marked `[measured]`.

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
import itertools

import matplotlib.pyplot as plt
import torch
import torch.utils.benchmark as benchmark
from einops import EinopsError, einsum, rearrange, reduce
from jaxtyping import Float, TypeCheckError, jaxtyped
from torch import Tensor

from lecture_utils import check, check_answer, check_raises, measured
from lecture_utils.memory import format_bytes, tensor_bytes
from lecture_utils.plots import plot_strides

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.2 A tensor is a pointer plus metadata
#
# The bytes live in one place, the storage; the tensor object you hold is only a view
# description on top of it. Memory is paid for storages, not for tensor objects, so
# this split is the first thing to get right in any memory estimate.
#
# The notes' example: twelve integers laid out as a 3 × 4 matrix.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: memory is paid per storage, not per tensor object; shape, stride and offset are free.
# - Run live: the 3 × 4 `arange` cell, then `storage_of(x)[9]` against `x[2, 1]`.
# - Point at: `tensor_bytes(x)` = 96 (12 elements × 8 bytes).

# %% slideshow={"slide_type": "subslide"}
x = torch.arange(12).view(3, 4)
print(x)
check("x.shape", tuple(x.shape), (3, 4))
check("x.stride()", x.stride(), (4, 1))
check("x.storage_offset()", x.storage_offset(), 0)
check("x.dtype", x.dtype, torch.int64)
check("bytes per element", x.element_size(), 8)
check("storage bytes = numel × bytes per element", x.untyped_storage().nbytes(), 12 * 8)
check("tensor_bytes(x)", tensor_bytes(x), 96)

# %% [markdown] slideshow={"slide_type": "subslide"}
# `stride=(4, 1)` means: one step down a row skips 4 elements of storage, one step along
# a column skips 1. Element `x[r, c]` lives at storage index
#
# $$\text{index} = \text{offset} + r \cdot s_0 + c \cdot s_1 ,$$
#
# counted in **elements**, not bytes (the byte address is the storage's start plus
# `index × element_size`). In $n$ dimensions it is
# $\text{offset} + \sum_k i_k s_k$.
#
# To test the formula we need to read the storage *without* going through the tensor's
# own metadata. `storage_of` wraps the raw storage in a fresh flat tensor (offset 0,
# stride 1); `addresses` applies the formula to every index tuple, using nothing but
# `shape`, `stride()` and `storage_offset()`.


# %% slideshow={"slide_type": "subslide"}
def storage_of(t: Tensor) -> Tensor:
    """The whole storage under ``t`` as a flat 1-D tensor, ignoring t's shape/stride/offset."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def addresses(t: Tensor) -> dict[tuple[int, ...], int]:
    """Storage index of every element of ``t``: offset + sum_k i_k * stride_k."""
    offset, strides = t.storage_offset(), t.stride()
    return {idx: offset + sum(i * s for i, s in zip(idx, strides, strict=True))
            for idx in itertools.product(*(range(n) for n in t.shape))}


def n_matching(t: Tensor) -> int:
    """How many elements satisfy t[idx] == storage[formula(idx)]."""
    storage = storage_of(t)
    return sum(bool(t[idx] == storage[a]) for idx, a in addresses(t).items())


print("storage of x:", storage_of(x))
check("x[2, 1] sits at 0 + 2*4 + 1*1", addresses(x)[(2, 1)], 9)
check("storage[9] == x[2, 1]", storage_of(x)[9].item(), x[2, 1].item())

# %% [markdown] slideshow={"slide_type": "subslide"}
# Now every element of four different views of the same storage. For each we write down
# the metadata we expect by hand, then check the formula against the storage for *all*
# elements (the number printed is how many matched; it must equal `numel`).

# %% slideshow={"slide_type": "subslide"}
views = {
    #  name          tensor       expected (shape, stride, offset)
    "x":          (x,           ((3, 4), (4, 1), 0)),
    "x[:, 1]":    (x[:, 1],     ((3,), (4,), 1)),
    "x.T":        (x.T,         ((4, 3), (1, 4), 0)),
    "x[1:, ::2]": (x[1:, ::2],  ((2, 2), (4, 2), 4)),
}
for name, (t, expected) in views.items():
    check(f"{name}: (shape, stride, offset)",
          (tuple(t.shape), t.stride(), t.storage_offset()), expected)
    check(f"{name}: elements with t[idx] == storage[offset + Σ i·s]", n_matching(t), t.numel())

# %% [markdown] slideshow={"slide_type": "subslide"}
# Because `x` holds `0..11`, each value *is* its storage index, so printing a view shows
# where its elements live. The transpose walks the storage column by column:

# %%
print(x.T)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The formula is not special to small integers or to 2-D. Here it is on random floats in
# 4-D, through a permute, slices with steps, and an integer index (values no longer equal
# their positions, so a wrong address would show up):

# %%
t4 = torch.randn(2, 3, 4, 5)
for name, v in {
    "t4.permute(3, 1, 0, 2)[1:, :, :, ::2]": t4.permute(3, 1, 0, 2)[1:, :, :, ::2],
    "t4[..., 2]": t4[..., 2],
    "t4.transpose(1, 3)[:, 1:3]": t4.transpose(1, 3)[:, 1:3],
}.items():
    check(f"{name}: elements matching the formula", n_matching(v), v.numel())

# %% [markdown] slideshow={"slide_type": "subslide"}
# The offset is in elements; `data_ptr()` (the address of a view's first element) moves
# by `offset × element_size` bytes. We compare differences of pointers, never the
# pointers themselves, which change from run to run.

# %%
for name, v in {"x[:, 1]": x[:, 1], "x[1:, ::2]": x[1:, ::2]}.items():
    check(f"{name}: data_ptr shift in bytes = offset × 8",
          v.data_ptr() - x.data_ptr(), v.storage_offset() * x.element_size())

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Figure: how strides walk the storage
#
# Top strip: the 12 storage slots, coloured like the row of the view that reads them (grey:
# unreachable). Grid: each element of the view, labelled with its storage index. `x` reads
# the strip in order; `x.T` jumps by 4 along a row; `x[:, 1:3]` has `x`'s strides but starts
# at offset 1 and skips slots 0, 3, 4, 7, 8, 11.

# %% caption="Three views of one 12-element storage (x, x.T, x[:, 1:3]): which storage slot each element reads, and in what order." slideshow={"slide_type": "subslide"}
for name, v in {"x": x, "x.T": x.T, "x[:, 1:3]": x[:, 1:3]}.items():
    plot_strides(v, f"{name}: shape {tuple(v.shape)}, stride {v.stride()}, "
                    f"offset {v.storage_offset()}")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.3 Views are cheap, copies are expensive
#
# An operation that changes only shape/stride/offset costs O(1): no new memory, no memory
# traffic. A copy reads and writes every byte (in a training step, `copy_` kernels eating
# bandwidth). Slicing, integer indexing, `transpose`/`.T` and `view` return views: new
# metadata, same storage, which we prove by comparing the storages' start addresses.


# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: slicing, `.T` and `view` only rewrite metadata; `contiguous()` and a failing-`view` `reshape` copy every byte.
# - Run live: the failing `view` cell (the error is the point), then `contiguous()` and its new storage.
# - Point at: the copy's new storage, numel × element_size = 12 × 8 = 96 bytes, and the `[measured]` view vs copy times.

# %% slideshow={"slide_type": "subslide"}
def same_storage(a: Tensor, b: Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


for name, v in {"x[:, 1]": x[:, 1], "x.transpose(0, 1)": x.transpose(0, 1),
                "x.view(2, 6)": x.view(2, 6), "x[1:, ::2]": x[1:, ::2]}.items():
    check(f"{name} shares x's storage", same_storage(v, x), True)
    check(f"{name}: storage bytes (nothing new allocated)", v.untyped_storage().nbytes(), 96)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Shared storage means a write through one view is visible through every other.

# %%
a = torch.arange(12).view(3, 4)
col = a[:, 1]
col[0] = 100                # write through the column view ...
check("... and a[0, 1] sees it", a[0, 1].item(), 100)
a.T[3, 2] = -1              # write through the transpose ...
check("... and a[2, 3] sees it", a[2, 3].item(), -1)
print(a)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Contiguous versus not
#
# A tensor is **contiguous** when its strides are exactly those of a row-major layout of
# its shape: the last stride is 1 and each earlier stride is the product of the sizes
# after it (PyTorch ignores dimensions of size 1). The notes describe non-contiguous as
# "the strides are no longer decreasing"; that is too loose. `x[:, ::2]` has strides
# `(4, 2)`, decreasing, and is still not contiguous, because it skips every other slot.


# %% slideshow={"slide_type": "subslide"}
def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


for name, v in {"x": x, "x[1:]": x[1:], "x[:, 1]": x[:, 1], "x.T": x.T,
                "x[:, ::2]": x[:, ::2]}.items():
    row_major = v.stride() == row_major_strides(tuple(v.shape))
    check(f"{name} is {'' if row_major else 'not '}contiguous (stride {v.stride()}): torch and the "
          "row-major rule agree", v.is_contiguous() == row_major, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The failing `view`
#
# Flattening the transpose with `view` fails. This cell raises on purpose:

# %% tags=["raises-exception"]
z = x.transpose(0, 1)
z.view(12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Why: `view` never moves data, so it must express the new shape with new strides over
# the *same* storage. Merging dimensions `i` and `i+1` into one is possible only if they
# are adjacent in memory: `stride[i] == stride[i+1] * size[i+1]`. For `z`, stride 0 is 1
# but `stride[1] * size[1]` is 4 × 3 = 12, so the 12 elements in the order `view(12)`
# wants (`0, 4, 8, 1, 5, ...`) are not equally spaced in storage: no single stride works.
#
# So the notes' "view only works on a contiguous layout" is too strong. `view` works on a
# non-contiguous tensor whenever the new shape only *splits* dimensions, or merges
# dimensions that are adjacent in memory:

# %% slideshow={"slide_type": "subslide"}
check("z: dims 0 and 1 cannot merge, stride[0] != stride[1] * size[1]",
      z.stride(0) != z.stride(1) * z.size(1), True)
z_split = z.view(2, 2, 3)   # split dim 0 (size 4, stride 1) into (2, 2): strides (2, 1)
check("z is not contiguous", not z.is_contiguous(), True)
check("z.view(2, 2, 3) stride", z_split.stride(), (2, 1, 4))
check("z.view(2, 2, 3) shares the storage", same_storage(z_split, x), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### `contiguous()` makes a real copy
#
# `contiguous()` allocates a new storage and copies the elements in the view's logical
# order, after which `view(12)` is fine. The cost is one extra buffer of
# `numel × element_size` bytes, plus reading that many bytes and writing that many again.
# If the tensor is already contiguous, `contiguous()` returns it unchanged and copies
# nothing (the notes' warning only applies to tensors that actually need it).

# %% slideshow={"slide_type": "subslide"}
zc = z.contiguous()
check("zc.is_contiguous() after", zc.is_contiguous(), True)
check("zc has its own storage", not same_storage(zc, x), True)
check("zc.stride()", zc.stride(), (3, 1))
check("its new storage holds numel × element_size = 12 × 8 bytes", zc.untyped_storage().nbytes(),
      z.numel() * z.element_size())
check("zc.view(12)", zc.view(12), torch.tensor([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]))
check("x.contiguous() is x (already contiguous: no copy)", x.contiguous() is x, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### `reshape`: a view if possible, else a copy
#
# `reshape` tries `view` first and silently falls back to `contiguous()` + `view`. That is
# convenient, and also how a copy hides in a hot path: the code looks the same either
# way. Check which one you got by comparing storages (or use `view` where you want an
# error instead of a silent copy).

# %%
for name, v, is_view in [("x.reshape(2, 6)", x.reshape(2, 6), True),
                         ("z.reshape(2, 2, 3)", z.reshape(2, 2, 3), True),
                         ("z.reshape(12)", z.reshape(12), False)]:
    check(f"{name} {'is a view of' if is_view else 'is a copy, not a view of'} x",
          same_storage(v, x) == is_view, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Aside: broadcasting is a view with stride 0
#
# `expand` repeats a tensor along a new dimension by giving it stride 0, so one storage
# slot serves every row. No memory is used until something materialises it.
# `tensor_bytes` counts logical elements (numel × element size), so here it over-states
# the memory actually held; the storage is what you pay for.

# %% slideshow={"slide_type": "subslide"}
row = torch.arange(4)
e = row.expand(3, 4)
check("e.stride()", e.stride(), (0, 1))
check("e shares row's storage", same_storage(e, row), True)
check("storage actually held (bytes)", e.untyped_storage().nbytes(), 4 * 8)
check("tensor_bytes(e): logical bytes", tensor_bytes(e), 12 * 8)
check("e.contiguous() materialises all of them", e.contiguous().untyped_storage().nbytes(), 96)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What a copy costs in time
#
# A 2048 × 2048 float32 matrix: a transpose view versus a transposed copy and a plain
# `clone` (medians from `torch.utils.benchmark`). The view costs only Python and dispatcher
# overhead; a copy's time grows with the bytes moved, and the transposing copy is usually
# slower than `clone` because it reads the source with a stride of 2048 elements.

# %%
n = 2048
big = torch.randn(n, n).to(device)  # drawn on the CPU: the same numbers on every device
check("big: bytes", tensor_bytes(big), n * n * 4)
moved = 2 * tensor_bytes(big)  # a copy reads every byte once and writes it once
check("bytes moved by one copy (read + write)", moved, 33_554_432)


def median_seconds(stmt: str) -> float:
    timer = benchmark.Timer(stmt, globals={"big": big}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=0.1).median


# %% slideshow={"slide_type": "subslide"}
t_view = median_seconds("big.T")
t_copy = median_seconds("big.T.contiguous()")
t_clone = median_seconds("big.clone()")
measured("big.T (view), median", t_view * 1e6, "µs")
measured("big.T.contiguous() (transposed copy), median", t_copy * 1e3, "ms")
measured("big.clone() (plain copy), median", t_clone * 1e3, "ms")
measured("transposed copy / view", t_copy / t_view, "×")
measured("transposed copy: effective bandwidth", moved / t_copy / 1e9, "GB/s")
measured("plain copy: effective bandwidth", moved / t_clone / 1e9, "GB/s")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §2.4 einops: give dimensions names
#
# Code like `x.transpose(1, 2).reshape(B, T, -1)` is full of positional magic numbers; a
# wrong axis often still runs and silently computes garbage, or forces a copy you did not
# intend. einops writes the dimensions out by name. Below, the notes' three examples, each
# checked against the plain PyTorch it replaces.
#
# **einsum**: attention scores, a dot product over `hidden` for every pair of positions.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Say: named dimensions replace positional magic numbers; jaxtyping turns a wrong axis into an error at the call.
# - Run live: the einsum scores cell, then the `buggy_scores` cell whose wrong return shape is rejected.
# - Point at: `rearrange` returns a view of `h` (no copy), round trip included.

# %%
batch, seq1, seq2, hidden = 2, 3, 5, 64
q = torch.randn(batch, seq1, hidden)
k = torch.randn(batch, seq2, hidden)
scores = einsum(q, k, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")
reference = q @ k.transpose(-2, -1)
check("einsum scores: shape", tuple(scores.shape), (batch, seq1, seq2))
check("einsum == q @ k.transpose(-2, -1) (rtol 1e-5)",
      torch.allclose(scores, reference, rtol=1e-5, atol=1e-5), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **reduce**: sum over `hidden`; `...` keeps any leading dimensions as they are.

# %%
h = torch.randn(batch, seq1, hidden)
s = reduce(h, "... hidden -> ...", "sum")
check("reduce: shape", tuple(s.shape), (batch, seq1))
check("reduce == h.sum(-1) (rtol 1e-5)", torch.allclose(s, h.sum(-1), rtol=1e-5, atol=1e-5), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **rearrange**: split `hidden = heads × d` into two dimensions for multi-head attention,
# and merge them back. einops uses `view`/`reshape` underneath, so both directions are
# views here: pure metadata, exactly the same numbers, no copy.

# %%
split = rearrange(h, "... (heads d) -> ... heads d", heads=8)
check("rearrange: shape", tuple(split.shape), (batch, seq1, 8, hidden // 8))
check("rearrange == h.view(..., 8, -1) (exact)",
      torch.equal(split, h.view(*h.shape[:-1], 8, -1)), True)
check("rearrange returned a view of h", same_storage(split, h), True)
back = rearrange(split, "... heads d -> ... (heads d)")
check("round trip gives h back (exact)", torch.equal(back, h), True)
check("round trip is still a view of h", same_storage(back, h), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A named pattern also refuses what cannot be true: 64 does not split into 7 heads.

# %%
heads_error = check_raises("heads=7 on hidden=64", EinopsError,
                           rearrange, h, "... (heads d) -> ... heads d", heads=7)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Shape annotations checked at run time (jaxtyping + beartype)
#
# Names in a docstring are documentation; names in an annotation can be *enforced*.
# `@jaxtyped(typechecker=beartype)` binds each dimension name to a size on the first
# argument that mentions it and then insists every later use agrees, including the
# return value.


# %%
from beartype import beartype  # the runtime type checker jaxtyping hands its checks to


@jaxtyped(typechecker=beartype)
def attention_scores(q: Float[Tensor, "batch seq1 hidden"],
                     k: Float[Tensor, "batch seq2 hidden"]) -> Float[Tensor, "batch seq1 seq2"]:
    return einsum(q, k, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")


check("attention_scores(q, k): shape", tuple(attention_scores(q, k).shape), (2, 3, 5))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Pass a `k` whose hidden size disagrees with `q`'s (63 instead of 64):

# %%
k_bad = torch.randn(batch, seq2, hidden - 1)
caught = check_raises("a wrong hidden size is rejected", TypeCheckError, attention_scores, q, k_bad)
check("the message blames parameter 'k'", "parameter 'k'" in str(caught), True)
check("and shows the bound size hidden=64", "hidden=64" in str(caught), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The return annotation catches a classic transposition bug: computing `k qᵀ` instead of
# `q kᵀ` gives `batch seq2 seq1`. An honest limit: shapes cannot tell equal-sized
# dimensions apart, so when `seq1 == seq2` the same bug passes unnoticed.


# %%
@jaxtyped(typechecker=beartype)
def buggy_scores(q: Float[Tensor, "batch seq1 hidden"],
                 k: Float[Tensor, "batch seq2 hidden"]) -> Float[Tensor, "batch seq1 seq2"]:
    return k @ q.transpose(-2, -1)  # bug: (batch, seq2, seq1)


caught = check_raises("wrong return shape rejected when seq1 != seq2 (3 != 5)", TypeCheckError,
                      buggy_scores, q, k)
check("the message says it was the return value", "return value" in str(caught), True)
k_square = torch.randn(batch, seq1, hidden)
check("same bug, seq1 == seq2: passes the shape check",
      tuple(buggy_scores(q, k_square).shape), (batch, seq1, seq1))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - A tensor = storage (the bytes you pay for) + shape, stride, offset (free).
#   Element address: `offset + Σ iₖ·sₖ`, in elements.
# - Slicing, integer indexing, `transpose`, `view`, `expand` and most `rearrange`s are
#   views: O(1), no new memory, writes are shared.
# - `contiguous()` on a non-contiguous tensor, and `reshape` when `view` is impossible,
#   allocate `numel × element_size` bytes and move twice that. `view` raises instead of
#   copying, so use it where a copy would be a bug.
# - Name dimensions (einops) and check them (jaxtyping) so that axis mistakes fail loudly.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Recap in one breath: storage = bytes you pay for; views are O(1); copies cost numel × element_size and twice that in traffic.
# - Ask the room: which line of their last model copies?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises (from the self-test)
#
# For each question: fill in the `...` in the exercise cell, run it and the check cell
# under it (it says whether your answer is right, without giving it away), and expand the
# hidden solution only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Give 3 minutes per question: fill in the `...`, run the check cell.
# - Then expand the hidden solution live and point at the `✓ ... is right` lines.
# - Point at: Q5's fix costs 1.21 GB for one GPT-3 FFN matrix in bf16.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Q5. Why does `x.transpose(0, 1).view(-1)` raise, and what does `.contiguous()` cost?
#
# Answer with the merge condition from §2.3, then put numbers on the cost of the fix for
# the notes' GPT-3 FFN matrix `[12288, 49152]` in bfloat16 (§2.1).

# %% tags=["exercise"]
q5_needed = ...  # the value stride[0] of x.T would need for view(-1) to work (x is 3 x 4)
q5_extra_bytes = ...  # extra memory of w.T.contiguous() for the FFN matrix, in bytes
q5_traffic_bytes = ...  # bytes the copy reads plus writes, in bytes

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("Q5, stride[0] that view(-1) needs", q5_needed)
check_answer("Q5, extra memory (bytes)", q5_extra_bytes)
check_answer("Q5, memory traffic (bytes)", q5_traffic_bytes)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. transpose only swaps the strides, so xt = x.T has strides (1, 4). view(-1) must
# merge both dims into one with a single stride, which needs stride[0] == stride[1] *
# size[1]: 1 vs 12, impossible without moving data, so view raises. contiguous() moves
# the data: a second buffer of numel × element_size bytes, and every byte read once and
# written once (the transposed copy timed above, strided reads included). Hot path = paid
# on every step.
xt = x.transpose(0, 1)
check_raises("x.transpose(0, 1).view(-1)", RuntimeError, xt.view, -1)
# Flattening merges dims 0 and 1; that needs stride[0] == stride[1] * size[1].
check("stride[0], stride[1] * size[1]", (xt.stride(0), xt.stride(1) * xt.size(1)), (1, 12))
fixed = xt.contiguous().view(-1)
check("xt.contiguous().view(-1) has its own storage", not same_storage(fixed, x), True)

# The cost for the FFN matrix, on the meta device (shapes and strides, no memory).
w = torch.empty(12288, 49152, dtype=torch.bfloat16, device="meta")
wt = w.T.contiguous()
check("w.T.contiguous(): new row-major strides", wt.stride(), (12288, 1))
extra = tensor_bytes(wt)
check("extra memory: numel × 2 bytes", extra, 12288 * 49152 * 2)
check("in words", format_bytes(extra), "1.21 GB (1.12 GiB)")
check("memory traffic: read + write", format_bytes(2 * extra), "2.42 GB (2.25 GiB)")

q5_needed = xt.stride(1) * xt.size(1)
q5_extra_bytes, q5_traffic_bytes = extra, 2 * extra
check_answer("Q5, stride[0] that view(-1) needs", q5_needed)
check_answer("Q5, extra memory (bytes)", q5_extra_bytes)
check_answer("Q5, memory traffic (bytes)", q5_traffic_bytes)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E1.1. Strides by hand
#
# With `x = torch.arange(12).view(3, 4)`, predict shape, stride and storage offset of
# `x[::2, 1:]`, `x.T` and `x.T[1:, ::2]` without running anything. Then predict the values
# of `x.T[1:, ::2]` from the formula alone.

# %% tags=["exercise"]
e1_1_a = ...  # (shape, stride, offset) of x[::2, 1:], e.g. ((3, 4), (4, 1), 0)
e1_1_b = ...  # (shape, stride, offset) of x.T
e1_1_c = ...  # (shape, stride, offset) of x.T[1:, ::2]
e1_1_values = ...  # the values of x.T[1:, ::2], as a nested list of rows

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E1.1, x[::2, 1:]", e1_1_a)
check_answer("E1.1, x.T", e1_1_b)
check_answer("E1.1, x.T[1:, ::2]", e1_1_c)
check_answer("E1.1, values of x.T[1:, ::2]", e1_1_values)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# x[::2, 1:]: rows 0 and 2 -> row stride 2*4 = 8; columns from 1 -> offset 1.
# x.T: swap shape and strides. x.T[1:, ::2]: offset 1*1 = 1, column stride 2*4 = 8.
answers = {
    "x[::2, 1:]":   (x[::2, 1:],   ((2, 3), (8, 1), 1)),
    "x.T":          (x.T,          ((4, 3), (1, 4), 0)),
    "x.T[1:, ::2]": (x.T[1:, ::2], ((3, 2), (1, 8), 1)),
}
for name, (v, expected) in answers.items():
    check(f"{name}: (shape, stride, offset)", (tuple(v.shape), v.stride(), v.storage_offset()),
          expected)
    check(f"{name}: elements matching the formula", n_matching(v), v.numel())
# Values = storage indices (x holds 0..11): offset 1 + r*1 + c*8.
check("x.T[1:, ::2]", x.T[1:, ::2], torch.tensor([[1, 9], [2, 10], [3, 11]]))

e1_1_a, e1_1_b, e1_1_c = ((tuple(v.shape), v.stride(), v.storage_offset())
                          for v, _ in answers.values())
e1_1_values = x.T[1:, ::2].tolist()
check_answer("E1.1, x[::2, 1:]", e1_1_a)
check_answer("E1.1, x.T", e1_1_b)
check_answer("E1.1, x.T[1:, ::2]", e1_1_c)
check_answer("E1.1, values of x.T[1:, ::2]", e1_1_values)
