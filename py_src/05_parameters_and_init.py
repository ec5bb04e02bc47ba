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
# # 05 · Parameters and initialisation: what the optimizer sees, and where training starts
#
# Notebooks 02 and 03 priced parameters in bytes and FLOPs; this one asks how PyTorch knows
# a tensor *is* one, and what values it should start from (§5.1, §5.2):
#
# 1. **§5.1**: `nn.Parameter` registers a tensor with its module, which opens three
#    channels: `parameters()` (what the optimizer updates), `state_dict()` (what a
#    checkpoint saves) and `.to()` (what moves and casts). A plain tensor attribute misses
#    all three; `register_buffer` is the home for state that is not trained.
# 2. **§5.1**: the lecture's `Linear` (`y = x @ W`, W stored as `(d_in, d_out)`) and its
#    init rule, written here, checked against `torch.nn.functional.linear` and `torch.nn.Linear`.

# %% [markdown] slideshow={"slide_type": "subslide"}
# 3. **§5.2**: $\mathrm{Var}(y) = d_\text{in}\,\mathrm{Var}(x)\,\mathrm{Var}(W)$ measured; N(0, 1)
#    weights overflow fp32 at exactly layer 32 of a width-256 network, while
#    $1/\sqrt{d_\text{in}}$ (and $\sqrt{2/d_\text{in}}$ with ReLU) keeps activations near 1.
# 4. **§5.2**: the notes' `trunc_normal_(..., a=-3, b=3)` does not cut at ±3σ (`a`, `b` are
#    absolute); the correct call does, and shrinks the std by 0.9866 per layer. And
#    `torch.nn.init`'s fan-in reads the wrong axis of a `(d_in, d_out)` weight.
#
# A `✓` line is a checked claim; a `[measured]` line depends on the machine. All numeric
# work runs on the CPU, so the outputs are the same everywhere; one cell adds a GPU check.

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes.** Corrections this notebook makes to the lecture notes, each
# > shown (and checked) where linked:
# >
# > - `nn.init.trunc_normal_(..., std=1/sqrt(d_in), a=-3, b=3)` does not cut at ±3σ: `a` and
# >   `b` are absolute values, 96σ at $d_\text{in} = 1024$, so it returns a plain normal draw. Use
# >   `a=-3*std, b=3*std`, which also shrinks the std by 0.9866 per layer:
# >   [The notes' trunc_normal_ call does not truncate](#The-notes'-trunc_normal_-call-does-not-truncate).
# > - The $1/\sqrt{d_\text{in}}$ rule is LeCun initialisation, not Xavier (Glorot uses
# >   $\sqrt{2/(d_\text{in} + d_\text{out})}$); and it keeps the variance only in expectation:
# >   [Through depth](#Through-depth:-exponential-growth,-or-none).
# > - With the notes' `(d_in, d_out)` weight layout, `torch.nn.init`'s fan-in reads
# >   $d_\text{out}$; use `mode="fan_out"`: [A layout trap in torch.nn.init](#A-layout-trap-in-torch.nn.init).

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
import io
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from lecture_utils import check, check_answer, check_raises, cuda_only, measured
from lecture_utils.checks import fmt, rounded  # print random-data values stably
from lecture_utils.memory import format_bytes, tensor_bytes
from lecture_utils.models import Cruncher, n_params

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §5.1 What is a parameter?
#
# A trainable parameter in PyTorch is an `nn.Parameter`: a tensor subclass that an
# `nn.Module` registers automatically when you assign it as an attribute. The registration
# happens in `nn.Module.__setattr__`: a `Parameter` goes into the module's `_parameters`
# dictionary instead of the ordinary attribute dictionary, and everything below works by
# walking `_parameters` (and `_buffers`, and the submodules'). Here is the notes' `Linear`,
# verbatim (its `randn` initialisation is the subject of §5.2):


# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Start from the notes' `Linear`: the `Parameter` assignment is all the registration there is.
# - Run the cell and point at `'weight' is not in vars(layer)`: it lives in `_parameters`.
# - Promise the three channels (optimizer, checkpoint, `.to()`) that the next slides test one by one.

# %% slideshow={"slide_type": "subslide"}
class NotesLinear(nn.Module):
    """The notes' Linear: y = x @ W, W a (in_dim, out_dim) Parameter drawn from randn."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_dim, out_dim))

    def forward(self, x):
        return x @ self.weight


torch.manual_seed(0)
layer = NotesLinear(4, 3)
check("a Parameter is a Tensor", isinstance(layer.weight, torch.Tensor), True)
check("...that requires grad by default", layer.weight.requires_grad, True)
check("named_parameters()", [(name, tuple(p.shape)) for name, p in layer.named_parameters()],
      [("weight", (4, 3))])
check("stored in layer._parameters", list(layer._parameters), ["weight"])
check("'weight' is not in the ordinary attribute dict, vars(layer)", "weight" not in vars(layer),
      True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Channel 1: `parameters()` is what the optimizer updates
#
# An optimizer is constructed from `model.parameters()` and updates exactly those tensors.
# One SGD step on a toy loss moves the weight by $-\text{lr} \times \text{gradient}$:

# %% slideshow={"slide_type": "subslide"}
LR = 0.1
x = torch.randn(8, 4)
opt = torch.optim.SGD(layer.parameters(), lr=LR)
check("the optimizer holds the registered weight", [p is layer.weight for p in
                                                    opt.param_groups[0]["params"]], [True])

before = layer.weight.detach().clone()
layer(x).pow(2).mean().backward()
opt.step()
check("after one step: W = W_before - lr * grad", layer.weight.detach(),
      before - LR * layer.weight.grad, rel=1e-6, abs=1e-7)
check("W moved", not torch.equal(layer.weight, before), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Channel 2: `state_dict()` is what a checkpoint saves and restores
#
# `state_dict()` maps each registered name to its tensor. Saving it and loading it into a
# freshly initialised model (a different seed, so different weights) restores the weights
# exactly. The round trip goes through `torch.save` and `torch.load` into an in-memory buffer,
# as it would through a file.

# %% slideshow={"slide_type": "subslide"}
state = layer.state_dict()
check("state_dict keys", list(state), ["weight"])
buffer = io.BytesIO()
torch.save(state, buffer)

torch.manual_seed(1)
fresh = NotesLinear(4, 3)
check("a fresh model (seed 1) has other weights", not torch.equal(fresh.weight, layer.weight),
      True)
buffer.seek(0)
fresh.load_state_dict(torch.load(buffer, weights_only=True))
check("after load_state_dict: the same weights", torch.equal(fresh.weight, layer.weight), True)

# %% [markdown]
# One trap: `state_dict()` returns the parameters' *own* storage, not a copy. A dict you keep
# in a variable is not a snapshot: it follows the training. Save it (as above) or clone it.

# %% slideshow={"slide_type": "subslide"}
check("state_dict()['weight'] shares the parameter's storage",
      state["weight"].data_ptr() == layer.weight.data_ptr(), True)
kept = state["weight"].clone()
layer(x).pow(2).mean().backward()
opt.step()
check("after another step the 'snapshot' moved too", torch.equal(state["weight"], layer.weight),
      True)
check("the clone kept the old values", not torch.equal(kept, layer.weight), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Channel 3: `.to()` moves and casts every registered tensor
#
# `module.to(...)` works in place: it walks the registered tensors, converts each one, and
# returns the module itself. `tensor.to(...)`, by contrast, returns a *new* tensor and
# leaves the old one alone. For a dtype change (and a CPU↔CUDA move) the module keeps the
# same `Parameter` objects and swaps their data, so an optimizer built earlier still points
# at them. Moving to the `meta` device (shapes and dtypes, no data) replaces the objects.

# %% slideshow={"slide_type": "subslide"}
check("module.to() returns the module itself", layer.to(torch.float64) is layer, True)
check("weight dtype after .to(torch.float64)", layer.weight.dtype, torch.float64)
check("...and still the object the optimizer holds", opt.param_groups[0]["params"][0] is layer.weight,
      True)
check("the forward pass now takes float64", layer(x.double()).dtype, torch.float64)

layer.to("meta")
check("after .to('meta'): device", layer.weight.device.type, "meta")
check("...shape kept", tuple(layer.weight.shape), (4, 3))
check("after .to('meta') the optimizer holds a stale object",
      opt.param_groups[0]["params"][0] is not layer.weight, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# That is why the usual order is: build the model, move it to its device and dtype, *then*
# build the optimizer. On a GPU, `.to(device)` moves the weight and the forward pass runs
# there (this cell runs on CUDA only):

# %%
if cuda_only(device, "moving a module to the GPU with .to(device)"):
    torch.manual_seed(0)
    gpu_layer = NotesLinear(4, 3)
    weight_object = gpu_layer.weight
    gpu_layer.to(device)
    out = gpu_layer(torch.randn(8, 4, device=device))
    measured("weight device after .to(device)", gpu_layer.weight.device, per_device=True)
    measured("same Parameter object after the move", gpu_layer.weight is weight_object, per_device=True)
    measured("output device", out.device, per_device=True)
    assert gpu_layer.weight.is_cuda and out.is_cuda
    assert gpu_layer.weight is weight_object  # CPU<->CUDA swaps .data, like a dtype change
    del gpu_layer, weight_object, out

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §5.1 The lecture's `Linear`, checked against torch
#
# The course's `Linear` is the notes' layer with two changes: no `randn` (it uses
# `init_weight`, whose ±3σ cut §5.2 studies), and it takes `device` and `dtype`. It keeps the
# lecture's layout: `W` is `(d_in, d_out)` and `y = x @ W`. `torch.nn.Linear` stores the
# transpose, `(d_out, d_in)`, and computes `x @ W.T + b`; `F.linear(x, A)` computes
# `x @ A.T`, so the lecture's layer equals `F.linear(x, W.T)`. Later notebooks and the
# course's models import this cell from `lecture_utils.nn`.


# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - The lecture stores W as `(d_in, d_out)`; torch stores the transpose: say it before running.
# - Run the `F.linear(x, W.T)` check live, then the parameter count: `Cruncher(4096, 8)` is 0.5 GiB in fp32.
# - Then break a model on purpose (`Forgetful`): nothing fails until a channel is used.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/nn.py
def init_weight(d_in, d_out, *, device=None, dtype=None):
    """A (d_in, d_out) weight from a normal with std 1/sqrt(d_in), cut at ±3 std.

    The cut removes the 0.27% of draws beyond 3 std, so the std becomes 0.9866 / sqrt(d_in).
    ``trunc_normal_``'s ``a`` and ``b`` are *absolute* bounds, so they are scaled by std.
    """
    std = 1 / math.sqrt(d_in)
    weight = torch.empty(d_in, d_out, device=device, dtype=dtype)
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std)


class Linear(nn.Module):
    """y = x @ W with W of shape (d_in, d_out), no bias (torch.nn.Linear stores W.T)."""

    def __init__(self, d_in, d_out, *, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(init_weight(d_in, d_out, device=device, dtype=dtype))

    def forward(self, x):
        return x @ self.weight

    def extra_repr(self):
        return f"d_in={self.weight.shape[0]}, d_out={self.weight.shape[1]}"


# %% slideshow={"slide_type": "subslide"}
D_IN, D_OUT, BATCH = 512, 2048, 64
torch.manual_seed(0)
lin = Linear(D_IN, D_OUT)
xb = torch.randn(BATCH, D_IN)
y = lin(xb)
print(lin)
check("W shape (d_in, d_out)", tuple(lin.weight.shape), (D_IN, D_OUT))
check("y shape", tuple(y.shape), (BATCH, D_OUT))
check("x @ W == F.linear(x, W.T)", y, F.linear(xb, lin.weight.T), rel=1e-5, abs=1e-6)

ref = nn.Linear(D_IN, D_OUT, bias=False)
check("torch.nn.Linear stores (d_out, d_in)", tuple(ref.weight.shape), (D_OUT, D_IN))
with torch.no_grad():
    ref.weight.copy_(lin.weight.T)
check("== torch.nn.Linear with W.T copied in", y, ref(xb), rel=1e-5, abs=1e-6)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Its cost: $d_\text{in} \cdot d_\text{out}$ parameters, 4 bytes each in fp32 (a bias
# would add $d_\text{out}$ more). The notes' toy MLP (§4.3) is $L$ such $D \times D$ layers,
# so about $L D^2$ parameters; the course's `Cruncher` adds a $D \to 1$ head. Building it on
# the `meta` device counts the parameters without allocating or initialising anything.

# %% slideshow={"slide_type": "subslide"}
print(f"Linear({D_IN}, {D_OUT}): {n_params(lin):,} parameters, "
      f"{format_bytes(tensor_bytes(lin.weight))} in fp32")
check("parameters = d_in * d_out", n_params(lin), D_IN * D_OUT)
check("fp32 bytes = 4 * d_in * d_out", tensor_bytes(lin.weight), 4 * D_IN * D_OUT)
check("bf16 bytes", tensor_bytes(Linear(D_IN, D_OUT, dtype=torch.bfloat16).weight),
      2 * D_IN * D_OUT)
check("torch.nn.Linear with its bias: + d_out", n_params(nn.Linear(D_IN, D_OUT)),
      D_IN * D_OUT + D_OUT)

with torch.device("meta"):
    cruncher = Cruncher(4096, 8)
check("Cruncher(4096, 8): L * D^2 + D parameters", n_params(cruncher), 8 * 4096**2 + 4096)
check("...in fp32 (GiB)", n_params(cruncher) * 4 / 2**30, 0.50002, rel=1e-5)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What goes wrong with a plain tensor attribute
#
# Now a two-layer model where only the first weight is a `Parameter`. The second is an
# ordinary tensor attribute, even with `requires_grad=True`: a common slip when a module is
# written by hand. It computes the right outputs, so nothing looks wrong until one of the
# three channels is used.

# %% slideshow={"slide_type": "subslide"}
class Forgetful(nn.Module):
    """w1 is a registered Parameter; w2 is a plain tensor attribute (the bug)."""

    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.w1 = nn.Parameter(init_weight(d_in, d_hidden))
        self.w2 = init_weight(d_hidden, d_out).requires_grad_()  # not registered

    def forward(self, x):
        return torch.relu(x @ self.w1) @ self.w2


torch.manual_seed(0)
model = Forgetful(4, 16, 2)
check("named_parameters() sees only w1", [name for name, _ in model.named_parameters()], ["w1"])

# %% [markdown]
# **The optimizer never updates it.** Autograd still computes `w2.grad` (the FLOPs are
# spent), but the optimizer was built from `parameters()` and has never heard of `w2`:

# %% slideshow={"slide_type": "subslide"}
opt = torch.optim.SGD(model.parameters(), lr=LR)
w1_before, w2_before = model.w1.detach().clone(), model.w2.detach().clone()
model(x).pow(2).mean().backward()
opt.step()
check("w2 has a gradient", model.w2.grad is not None, True)
check("w1 moved by the step", not torch.equal(model.w1, w1_before), True)
check("w2 unchanged by the step", torch.equal(model.w2, w2_before), True)

# %% [markdown]
# **A checkpoint loses it.** `state_dict()` has no entry for `w2`, so a save/load round trip
# restores `w1` and silently keeps whatever `w2` the new model was initialised with:

# %% slideshow={"slide_type": "subslide"}
check("state_dict keys", list(model.state_dict()), ["w1"])
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
torch.manual_seed(1)
restored = Forgetful(4, 16, 2)
buffer.seek(0)
restored.load_state_dict(torch.load(buffer, weights_only=True))
check("w1 restored", torch.equal(restored.w1, model.w1), True)
check("w2 not restored", not torch.equal(restored.w2, model.w2), True)
check("the restored model gives other outputs", not torch.allclose(restored(x), model(x)), True)

# %% [markdown]
# **`.to()` leaves it behind.** Casting the module to float64 converts `w1` only. The next
# forward pass multiplies a float64 activation by the float32 `w2` and fails; moving to
# another device would fail the same way, with a device mismatch.

# %% slideshow={"slide_type": "subslide"}
model.to(torch.float64)
check("w1 after .to(float64)", model.w1.dtype, torch.float64)
check("w2 after .to(float64)", model.w2.dtype, torch.float32)
err = check_raises("forward with a float64 input", RuntimeError, model, x.double())
check("...because of a dtype mismatch", "same dtype" in str(err), True)
model.to("meta")
check("w2 after .to('meta') is still on the CPU", (model.w1.device.type, model.w2.device.type),
      ("meta", "cpu"))

# %% [markdown]
# The same goes for *modules* kept in a plain Python list: `nn.Module` registers
# submodules only when they are assigned directly or held in an `nn.ModuleList` /
# `nn.ModuleDict`. A model whose layers all sit in a list has no parameters at all, and the
# optimizer refuses to be built:

# %% slideshow={"slide_type": "subslide"}
class ListMLP(nn.Module):
    def __init__(self, width, n_layers, container):
        super().__init__()
        self.layers = container(Linear(width, width) for _ in range(n_layers))

    def forward(self, x):
        for layer_ in self.layers:
            x = layer_(x)
        return x


check("layers in a Python list: parameters", n_params(ListMLP(8, 3, list)), 0)
err = check_raises("SGD on it", ValueError, torch.optim.SGD, ListMLP(8, 3, list).parameters(),
                   lr=LR)
check("...'empty parameter list'", "empty parameter list" in str(err), True)
check("layers in an nn.ModuleList: parameters", n_params(ListMLP(8, 3, nn.ModuleList)), 3 * 8 * 8)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### `register_buffer`: state that moves and is saved, but is not trained
#
# Some tensors belong to the model but must not be trained: a causal mask, RoPE's sine and
# cosine tables, BatchNorm's running statistics, a fixed output scale. A plain attribute
# would miss `state_dict()` and `.to()`; a `Parameter` would be handed to the optimizer.
# `register_buffer` gives the right mix: it is in `state_dict()` and moves with `.to()`, but
# it is not in `parameters()`. With `persistent=False` it is left out of the checkpoint too,
# for tables that are cheap to recompute from the config.

# %%
class ScaledLinear(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(init_weight(d_in, d_out))
        self.register_buffer("scale", torch.full((d_out,), 0.5))          # fixed, saved
        self.register_buffer("table", torch.arange(d_out, dtype=torch.float32),
                             persistent=False)                            # fixed, recomputable

    def forward(self, x):
        return (x @ self.weight) * self.scale


# %% slideshow={"slide_type": "subslide"}
torch.manual_seed(0)
scaled = ScaledLinear(4, 3)
check("parameters()", [name for name, _ in scaled.named_parameters()], ["weight"])
check("buffers()", [name for name, _ in scaled.named_buffers()], ["scale", "table"])
check("state_dict(): the persistent buffer only", list(scaled.state_dict()), ["weight", "scale"])
check("a buffer needs no grad", not scaled.scale.requires_grad, True)

opt = torch.optim.SGD(scaled.parameters(), lr=LR)
scaled(x).pow(2).mean().backward()
opt.step()
check("after a training step the buffer is unchanged", torch.equal(scaled.scale, torch.full((3,), 0.5)),
      True)
scaled.to(torch.float64)
check(".to(float64) casts parameters and buffers", {t.dtype for t in scaled.state_dict().values()}
      | {scaled.table.dtype}, {torch.float64})
check("...and the forward pass works", scaled(x.double()).dtype, torch.float64)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §5.2 Why initialisation matters
#
# One output of a linear layer is a sum of $d_\text{in}$ products,
# $y_k = \sum_{i=1}^{d_\text{in}} x_i W_{ik}$. If the $x_i$ and $W_{ik}$ are independent,
# have mean zero, and the $W$ entries share one variance, the variances of the terms add:
#
# $$\mathrm{Var}(y_k) = d_\text{in} \cdot \mathrm{Var}(x_i) \cdot \mathrm{Var}(W_{ik}).$$
#
# So with N(0, 1) weights the output std is $\sqrt{d_\text{in}}$ times the input std, and
# with std $1/\sqrt{d_\text{in}}$ it stays the same. We measure $\mathrm{Var}(y)$ for five
# widths and three settings (one of them with input std 2, so that every factor of the
# formula is exercised), in float64 so the last digits shown cannot wobble.


# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Write $\mathrm{Var}(y) = d_\text{in}\,\mathrm{Var}(x)\,\mathrm{Var}(W)$ on the board first.
# - The number to point at: N(0, 1) weights overflow fp32 at exactly layer 32 of a width-256 network ($16^{32} = 2^{128}$).
# - Then the notes' `trunc_normal_(a=-3, b=3)` cuts at 96σ, i.e. nowhere; the right cut costs 0.9866 per layer.

# %% slideshow={"slide_type": "subslide"}
WIDTHS = [16, 64, 256, 1024, 4096]
SETTINGS = {  # name: (std of x, std of W as a function of d_in)
    "N(0,1) weights": (1.0, lambda d: 1.0),
    "x std 2, N(0,1) weights": (2.0, lambda d: 1.0),
    "std 1/sqrt(d_in)": (1.0, lambda d: 1 / math.sqrt(d)),
}


def output_var(d_in, std_x, std_w, seed, batch=512):
    """Var(x @ W) over 512 inputs, all entries N(0, std^2); W has 2**16 entries."""
    d_out = 2**16 // d_in  # enough columns that Var(W) is pinned down even for small d_in
    g = torch.Generator().manual_seed(seed)
    x = std_x * torch.randn(batch, d_in, generator=g, dtype=torch.float64)
    W = std_w * torch.randn(d_in, d_out, generator=g, dtype=torch.float64)
    return (x @ W).var().item()


print(f"{'d_in':>5}" + "".join(f"{name:>26}" for name in SETTINGS))
print(f"{'':>5}" + "".join(f"{'predicted   measured/pred':>26}" for _ in SETTINGS))
ratios = {name: [] for name in SETTINGS}
for d in WIDTHS:
    row = f"{d:>5}"
    for seed, (name, (std_x, std_w)) in enumerate(SETTINGS.items()):
        predicted = d * std_x**2 * std_w(d) ** 2
        ratios[name].append(output_var(d, std_x, std_w(d), seed) / predicted)
        row += f"{predicted:>14g}{fmt(ratios[name][-1], '.2f'):>12}"
    print(row)
for name, r in ratios.items():
    check(f"{name}: measured / predicted Var(y), every d_in", torch.tensor(r, dtype=torch.float64),
          torch.ones(len(WIDTHS), dtype=torch.float64), rel=0.05)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Through depth: exponential growth, or none
#
# $L$ layers multiply the variance by $(d_\text{in} \mathrm{Var}(W))^L$. For width 256 and
# N(0, 1) weights the std grows 16× per layer, and $16^{32} = 2^{128}$ is exactly where fp32
# runs out (its max is $(2 - 2^{-23}) \cdot 2^{127}$): the prediction is `inf` at layer 32.
# A ReLU zeroes half of each pre-activation's second moment, so the gain per layer halves:
# std $1/\sqrt{d_\text{in}}$ then *vanishes* like $2^{-L/2}$, the fix is
# $\sqrt{2/d_\text{in}}$ (He, or "Kaiming", initialisation), and N(0, 1) weights grow by
# $\sqrt{128}$ per layer, overflowing a few layers later than the linear network.
#
# All five networks below (width 256, 50 layers) use the *same* N(0, 1) draws, scaled
# differently, on the same 512 inputs (fp32, CPU). We record each layer's output RMS (after
# the ReLU where there is one) and the first layer whose output contains `inf`.

# %% slideshow={"slide_type": "subslide"}
WIDTH, DEPTH = 256, 50
g = torch.Generator().manual_seed(0)
Z = torch.randn(DEPTH, WIDTH, WIDTH, generator=g)  # one set of N(0, 1) draws for every network
x0 = torch.randn(512, WIDTH, generator=g)
FP32_MAX = torch.finfo(torch.float32).max


def run_stack(scale, relu):
    """Per layer: RMS of the output (float64, after ReLU if any) and max |pre-activation|."""
    x, rms, peak = x0, [], []
    for W in Z:
        pre = x @ (scale * W)
        peak.append(pre.abs().max().item())
        x = F.relu(pre) if relu else pre
        rms.append(x.double().pow(2).mean().sqrt().item())
    return rms, peak


def first_overflow(peak):
    """The first layer (counting from 1) whose pre-activation is not finite, or None."""
    return next((i + 1 for i, p in enumerate(peak) if not math.isfinite(p)), None)


RUNS = {  # label: (weight std, ReLU?)
    "linear, N(0,1)": (1.0, False),
    "linear, std 1/sqrt(d)": (1 / math.sqrt(WIDTH), False),
    "ReLU, N(0,1)": (1.0, True),
    "ReLU, std 1/sqrt(d)": (1 / math.sqrt(WIDTH), True),
    "ReLU, std sqrt(2/d) (Kaiming)": (math.sqrt(2 / WIDTH), True),
}
stacks = {label: run_stack(*args) for label, args in RUNS.items()}
rms = {label: r for label, (r, _) in stacks.items()}
overflow = {label: first_overflow(p) for label, (_, p) in stacks.items()}
for label, layer_ in overflow.items():
    print(f"{label:<31} first inf at layer: {layer_}")

# %% slideshow={"slide_type": "subslide"}
check("16**32 == 2**128", 16**32, 2**128)
check("fp32 max just below 2**128", FP32_MAX / 2.0**128, 1 - 2.0**-24)
check("linear, N(0,1): first inf at layer", overflow["linear, N(0,1)"], 32)
check("...its layer-31 peak was within 16x of the fp32 max, so one more x16 overflows",
      1 / 16 < stacks["linear, N(0,1)"][1][30] / FP32_MAX < 1, True)
check("the well-scaled networks never overflow",
      [overflow[k] for k in RUNS if "N(0,1)" not in k], [None, None, None])

# %% [markdown]
# Because the networks share their draws, and both matmul and ReLU commute with a positive
# scale, each N(0, 1) network is an exactly scaled copy of its well-scaled twin: the init
# scale sets the *slope* of log RMS against depth, and the wiggles around that slope are the
# same random walk. For the linear pair the scale is $16 = 2^4$, a power of two, so the
# copy is exact to the last bit. That also predicts the ReLU network's overflow layer from its
# Kaiming twin, without running it.

# %% slideshow={"slide_type": "subslide"}
lin_n, lin_s = rms["linear, N(0,1)"], rms["linear, std 1/sqrt(d)"]
check("linear: RMS(N(0,1)) == 16**L * RMS(1/sqrt(d)), layers 1-31",
      torch.tensor(lin_n[:31], dtype=torch.float64),
      torch.tensor([r * 16.0 ** (L + 1) for L, r in enumerate(lin_s[:31])], dtype=torch.float64),
      rel=1e-12)

kaiming = "ReLU, std sqrt(2/d) (Kaiming)"
relu_n, relu_s, relu_k = rms["ReLU, N(0,1)"], rms["ReLU, std 1/sqrt(d)"], rms[kaiming]
n_finite = overflow["ReLU, N(0,1)"] - 1
check("ReLU: RMS(N(0,1)) == sqrt(128)**L * RMS(Kaiming), before overflow",
      torch.tensor(relu_n[:n_finite], dtype=torch.float64),
      torch.tensor([r * 128 ** ((L + 1) / 2) for L, r in enumerate(relu_k[:n_finite])],
                   dtype=torch.float64), rel=1e-4)
check("ReLU: RMS(1/sqrt(d)) == 2**(-L/2) * RMS(Kaiming), all 50 layers",
      torch.tensor(relu_s, dtype=torch.float64),
      torch.tensor([r * 2 ** (-(L + 1) / 2) for L, r in enumerate(relu_k)], dtype=torch.float64),
      rel=1e-4)

kaiming_peak = stacks[kaiming][1]
predicted = next(L + 1 for L, p in enumerate(kaiming_peak) if p * 128 ** ((L + 1) / 2) > FP32_MAX)
check("ReLU, N(0,1): first inf, predicted from the Kaiming twin", overflow["ReLU, N(0,1)"],
      predicted)
check("...a few layers after the linear network", 35 <= overflow["ReLU, N(0,1)"] <= 38, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# And the well-scaled networks: the linear one stays within 20% of 1 for all 50 layers; the
# ReLU network at $1/\sqrt{d}$ vanishes, and Kaiming keeps it at order 1.

# %%
check("linear, 1/sqrt(d): every layer's RMS in [0.8, 1.25]", all(0.8 < r < 1.25 for r in lin_s),
      True)
check("ReLU, 1/sqrt(d): RMS at layer 50 below 1e-7 (2**-25 = 3e-8)", relu_s[-1] < 1e-7, True)
check("ReLU, Kaiming: every layer's RMS in [0.25, 4]", all(0.25 < r < 4 for r in relu_k), True)


# %% slideshow={"slide_type": "subslide"}
def plot_depth(curves, title, ylim=None):
    """RMS of each layer's output against depth on a log axis (inf and 0 left out)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    for label, (values, style) in curves.items():
        finite = [(L + 1, v) for L, v in enumerate(values) if math.isfinite(v) and v > 0]
        ax.plot(*zip(*finite, strict=True), style, label=label, lw=1.5)
    if ylim is None:
        ax.axhline(FP32_MAX, color="0.3", lw=1, ls=":", label="fp32 max")
    ax.set(yscale="log", ylim=ylim, xlabel="layer", ylabel="RMS of the layer's output")
    ax.set_title(title, loc="left")
    ax.legend(frameon=False, fontsize=12)
    fig.tight_layout()
    plt.show()


# %% caption="Output RMS of each layer against depth for five width-256 networks: N(0,1) weights overflow fp32, 1/sqrt(d) (ReLU: sqrt(2/d)) stays near 1." slideshow={"slide_type": "subslide"}
plot_depth({label: (r, "-") for label, r in rms.items()},
           "width 256, 50 layers: N(0,1) overflows, 1/sqrt(d) (ReLU: sqrt(2/d)) stays near 1")

# %% [markdown] slideshow={"slide_type": "subslide"}
# Two caveats the notes' one-liner hides. First, the variance is preserved *in expectation*;
# a real network is one draw, and its log RMS takes a random walk whose spread grows like
# $\sqrt{L / d}$ (ReLU makes the steps larger, which is why the Kaiming curve wanders between
# about 0.3 and 1). Wider layers make it steadier. Second, the notes call the
# $1/\sqrt{d_\text{in}}$ rule "the idea of Xavier initialisation". Strictly, it is LeCun
# initialisation. Xavier (Glorot) uses $\sqrt{2 / (d_\text{in} + d_\text{out})}$, a
# compromise that also keeps the *backward* pass's gradient variance in check. The two agree
# for square layers like these.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The notes' `trunc_normal_` call does not truncate
#
# The notes initialise with
#
# ```python
# nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=1 / math.sqrt(input_dim), a=-3, b=3)
# ```
#
# and say the cut is at ±3σ. But `a` and `b` are **absolute** bounds, not multiples of
# `std` (torch's own default, `a=-2, b=2`, is absolute too). With std $1/\sqrt{d_\text{in}}$,
# the bounds ±3 sit at $\pm 3\sqrt{d_\text{in}}$ standard deviations: ±3σ only when
# $d_\text{in} = 1$.

# %% slideshow={"slide_type": "subslide"}
print("d_in:            " + " ".join(f"{d:>6}" for d in (1, 4, 64, 1024, 12288)))
print("bound 3 in std:  " + " ".join(f"{3 * math.sqrt(d):>5.0f}σ" for d in (1, 4, 64, 1024, 12288)))
D = 1024
std = 1 / math.sqrt(D)
check("d_in = 1024: the bound 3 is at (in std)", 3 / std, 96.0)

# %% [markdown]
# How much of a normal lies beyond $k$ standard deviations? $P(|Z| > k) = 1 -
# \mathrm{erf}(k / \sqrt 2)$. At $k = 3$ that is 0.27%, the mass a real ±3σ cut removes. At
# $k = 96$ it is far below anything a float64 can hold, so `1 - math.erf` returns exactly 0;
# its logarithm follows from the standard tail bound
# $P(|Z| > k) \approx 2\varphi(k)/k$ (with $\varphi$ the normal density), which we first test
# against `math.erfc` at $k = 6$.

# %% slideshow={"slide_type": "subslide"}
def p_beyond(k):
    """P(|Z| > k) for Z ~ N(0, 1)."""
    return 1 - math.erf(k / math.sqrt(2))


def log10_tail(k):
    """log10 of the tail approximation 2 * phi(k) / k (accurate to ~1/k**2)."""
    return (-k * k / 2 - math.log(k * math.sqrt(math.pi / 2))) / math.log(10)


check("P(|Z| > 3): what a real ±3σ cut removes", p_beyond(3), 0.0027, rel=0.01)
check("tail approximation at k = 6 vs erfc", 10 ** log10_tail(6), math.erfc(6 / math.sqrt(2)),
      rel=0.03)
check("P(|Z| > 96) in float64", p_beyond(96), 0.0)
check("...its log10", log10_tail(96), -2003.3, abs=0.1)

# %% [markdown] slideshow={"slide_type": "subslide"}
# So nothing is cut. This torch version draws from the normal and redraws only the values
# outside `[a, b]`; with nothing outside, the notes' call returns *exactly* the plain normal
# draw from the same seed. Its largest weight in a 1024 × 1024 matrix is near 5σ, as for
# any million normal draws, and 0.27% of the weights lie beyond 3σ.

# %% slideshow={"slide_type": "subslide"}
torch.manual_seed(0)
w_notes = nn.init.trunc_normal_(torch.empty(D, D), std=std, a=-3, b=3)
torch.manual_seed(0)
w_plain = torch.empty(D, D).normal_(0, std)
z_notes = w_notes / std  # in units of std (dividing by 2**-5 is exact)
max_sigma = z_notes.abs().max().item()
n_beyond = int((z_notes.abs() > 3).sum())
print(f"notes' call: max |w| = {fmt(max_sigma, '.2f')}σ, beyond 3σ: {fmt(n_beyond / D**2, '.2%')}")
check("the notes' call == a plain normal draw, bit for bit", torch.equal(w_notes, w_plain), True)
check("max |w| between 4σ and 6σ (nowhere near the 96σ bound)", 4 < max_sigma < 6, True)
check("weights beyond 3σ: about P(|Z| > 3) * 1024**2", n_beyond, p_beyond(3) * D**2, rel=0.05)
check("sample std / std", rounded(w_notes.std().item() / std, 4), 1.0, rel=2e-3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The correct call scales the bounds: `a=-3 * std, b=3 * std`. From the same seed, it
# redraws exactly the 0.27% of positions that were beyond 3σ, and every weight ends up
# within ±3σ.
#
# Cutting the tails also removes variance. For a standard normal truncated to $[-a, a]$,
#
# $$\mathrm{Var} = 1 - \frac{2a\,\varphi(a)}{\mathrm{erf}(a/\sqrt 2)},$$
#
# so at $a = 3$ the std shrinks by the factor $\sqrt{1 - 6\varphi(3)/\mathrm{erf}(3/\sqrt2)}
# = 0.9866$. The sample agrees:

# %% slideshow={"slide_type": "subslide"}
torch.manual_seed(0)
w_right = nn.init.trunc_normal_(torch.empty(D, D), std=std, a=-3 * std, b=3 * std)
z_right = w_right / std
check("correct call: max |w| <= 3σ", z_right.abs().max().item() <= 3, True)
check("the positions it redrew are exactly those beyond 3σ",
      torch.equal(w_right != w_notes, z_notes.abs() > 3), True)

A = 3.0
phi = math.exp(-A * A / 2) / math.sqrt(2 * math.pi)
SHRINK = math.sqrt(1 - 2 * A * phi / math.erf(A / math.sqrt(2)))
check("std factor of N(0,1) truncated at ±3", SHRINK, 0.98658, rel=1e-5)
check("sample std / std (correct call)", rounded(w_right.std().item() / std, 4), SHRINK,
      rel=2e-3)
check("...clearly below the untruncated 1", w_right.std().item() / std < 0.99, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# The `init_weight` cell of §5.1 makes the correct call: from the same seed it returns the
# same matrix bit for bit.

# %%
torch.manual_seed(0)
check("init_weight(1024, 1024) == the correct call", torch.equal(init_weight(D, D), w_right), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The price of the cut: 0.9866 per layer
#
# With the correct call, $\mathrm{Var}(W) = 0.9733 / d_\text{in}$, not $1 / d_\text{in}$, so
# each layer multiplies the variance by 0.9733. One layer of `Linear(1024, 1024)` shows it;
# over 50 linear layers the std shrinks by $0.9866^{50} = 0.51$. That is not an explosion,
# but it is not "variance preserved" either. The simple fix is to divide the std by 0.9866
# before cutting (and cut at ±3 times the new std); in a Transformer, normalisation layers
# and residual connections (Lecture 3) absorb a constant factor like this.

# %% slideshow={"slide_type": "subslide"}
torch.manual_seed(0)
one_layer = Linear(D, D)
x = torch.randn(256, D)
check("one Linear(1024, 1024): Var(y) / Var(x)",
      rounded(one_layer(x).var().item() / x.var().item()), SHRINK**2, rel=0.01)
check("predicted std factor after 50 layers", SHRINK**50, 0.5089, rel=1e-3)

torch.manual_seed(0)
deep = Cruncher(WIDTH, DEPTH)  # 50 lecture Linears, width 256: init_weight in every layer
x = x0
trunc_rms = []
with torch.no_grad():
    for layer_ in deep.layers:
        x = layer_(x)
        trunc_rms.append(x.double().pow(2).mean().sqrt().item())
check("Cruncher (init_weight), RMS after 50 layers: near 0.51, not 1",
      0.35 < trunc_rms[-1] < 0.7, True)

# %% caption="Output RMS through 50 linear layers: init_weight's \u00b13\u03c3 cut follows 0.9866 ** layer instead of staying at 1." slideshow={"slide_type": "subslide"}
plot_depth({"linear, std 1/sqrt(d) (from above)": (lin_s, "-"),
            "linear, init_weight (cut at ±3σ)": (trunc_rms, "-"),
            "0.9866 ** layer": ([SHRINK ** (L + 1) for L in range(DEPTH)], "k--")},
           "the ±3σ cut shrinks the std by 0.9866 per layer", ylim=(0.35, 1.3))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A layout trap in `torch.nn.init`
#
# `nn.init.kaiming_normal_`, `xavier_normal_` and friends compute the fan-in from the
# tensor's shape, and they assume torch's own layout, `(d_out, d_in)`: fan-in is
# `shape[1]`. On a weight in the lecture's `(d_in, d_out)` layout they read $d_\text{out}$
# instead. For a `(1024, 16)` weight (1024 inputs, 16 outputs), the "fan-in" std comes out
# $1/\sqrt{16}$ instead of $1/\sqrt{1024}$: 8 times too large. `mode="fan_out"` reads
# `shape[0]`, which for this layout is the true fan-in.

# %% slideshow={"slide_type": "subslide"}
torch.manual_seed(0)
W_lecture = torch.empty(1024, 16)  # (d_in, d_out), the lecture's layout
nn.init.kaiming_normal_(W_lecture, nonlinearity="linear")  # mode="fan_in" by default
check("kaiming_normal_ on (d_in, d_out): std", rounded(W_lecture.std().item()), 1 / math.sqrt(16),
      rel=0.03)
check("...in units of the intended 1/sqrt(d_in)", rounded(W_lecture.std().item() * math.sqrt(1024)),
      8.0, rel=0.03)
nn.init.kaiming_normal_(W_lecture, mode="fan_out", nonlinearity="linear")
check("with mode='fan_out': std", rounded(W_lecture.std().item()), 1 / math.sqrt(1024), rel=0.03)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - `nn.Parameter` registers a tensor: it then appears in `parameters()` (trained),
#   `state_dict()` (saved) and `.to()` (moved, cast). A plain tensor attribute gets none
#   of the three; non-trained state belongs in `register_buffer`.
# - $\mathrm{Var}(y) = d_\text{in}\,\mathrm{Var}(x)\,\mathrm{Var}(W)$: N(0, 1) weights grow the
#   activations by $\sqrt{d_\text{in}}$ per layer until fp32 overflows.
# - Std $1/\sqrt{d_\text{in}}$ (LeCun; $\sqrt{2/d_\text{in}}$ with ReLU) keeps activations
#   near 1 in expectation, through any depth.
# - `trunc_normal_`'s `a`, `b` are absolute: cut at `±3 * std`, and expect the std to
#   shrink by 0.9866.
# - `torch.nn.init` assumes the `(d_out, d_in)` layout: check the fan it reads.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Read the five bullets aloud; each one maps to a slide above.
# - Ask the room: which of the three channels does a forgotten `Parameter` miss? (All three.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...` in each exercise cell, then run it and the check cell below it: the check
# says "not answered yet", right, or not right yet, without giving the answer away. Expand the
# hidden solution cell only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Give the room two minutes for E5.1 (pure counting), then run its check cell live.
# - E5.2 reuses the 0.9866 from the truncation slide; E5.3 is a prediction, then the table.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E5.1 What does each channel hold for `ScaledLinear(1024, 4096)`?
#
# Take the `ScaledLinear` of the `register_buffer` slide with $d_\text{in} = 1024$,
# $d_\text{out} = 4096$, in fp32. How many numbers does the optimizer update? How many bytes
# does a checkpoint of its `state_dict()` hold? And after `.to(torch.bfloat16)`, how many
# bytes do all its registered tensors (parameters and buffers) take?

# %% tags=["exercise"]
e5_1_trained = ...  # numbers in parameters()
e5_1_saved_bytes = ...  # bytes in state_dict(), fp32
e5_1_bf16_bytes = ...  # bytes of every parameter and buffer after .to(torch.bfloat16)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E5.1 numbers the optimizer updates", e5_1_trained)
check_answer("E5.1 state_dict() bytes in fp32", e5_1_saved_bytes)
check_answer("E5.1 bytes of all registered tensors in bf16", e5_1_bf16_bytes)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. parameters() holds the weight only: 1024 * 4096 = 4,194,304 numbers. state_dict()
# holds the weight and the persistent buffer `scale` (4096), 4 bytes each: 16,793,600 bytes;
# the non-persistent `table` is left out. .to() converts every parameter and buffer, `table`
# included: 2 bytes * (4,194,304 + 4096 + 4096) = 8,404,992 bytes.
torch.manual_seed(0)
scaled_q = ScaledLinear(1024, 4096)
e5_1_trained = sum(p.numel() for p in scaled_q.parameters())
e5_1_saved_bytes = sum(tensor_bytes(t) for t in scaled_q.state_dict().values())
scaled_q.to(torch.bfloat16)
e5_1_bf16_bytes = sum(tensor_bytes(t) for t in [*scaled_q.parameters(), *scaled_q.buffers()])
check("trained numbers = d_in * d_out", e5_1_trained, 1024 * 4096)
check("state_dict bytes = 4 * (d_in * d_out + d_out)", e5_1_saved_bytes, 4 * (1024 * 4096 + 4096))
check("bf16 bytes = 2 * (d_in * d_out + 2 * d_out)", e5_1_bf16_bytes, 2 * (1024 * 4096 + 2 * 4096))
check_answer("E5.1 numbers the optimizer updates", e5_1_trained)
check_answer("E5.1 state_dict() bytes in fp32", e5_1_saved_bytes)
check_answer("E5.1 bytes of all registered tensors in bf16", e5_1_bf16_bytes)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E5.2 Which std keeps the variance constant at $d_\text{in} = 4096$?
#
# Give the weight std that keeps $\mathrm{E}[y^2] = \mathrm{E}[x^2]$ for one layer with
# $d_\text{in} = 4096$ and $x \sim N(0, 1)$: (a) for `y = x @ W`; (b) for `y = relu(x) @ W`;
# (c) for (a) with `init_weight`'s ±3σ truncation, keeping the variance exact. Three
# significant figures are enough.

# %% tags=["exercise"]
e5_2_std_a = ...  # weight std for y = x @ W
e5_2_std_b = ...  # weight std for y = relu(x) @ W
e5_2_std_c = ...  # std to draw with before the ±3σ cut, so that (a) holds after it

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E5.2 (a) std", e5_2_std_a)
check_answer("E5.2 (b) std", e5_2_std_b)
check_answer("E5.2 (c) std", e5_2_std_c)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. (a) Var(y) = d_in * Var(x) * Var(W) = 1 needs std 1/sqrt(4096) = 1/64 = 0.0156.
# (b) relu(x) keeps half of E[x^2], so Var(W) must double: sqrt(2/4096) = 0.0221 (Kaiming).
# (c) the ±3σ cut multiplies the std by 0.9866, so draw with std (1/64) / 0.9866 = 0.01584
# and cut at ±3 times that.
D_Q = 4096
e5_2_std_a, e5_2_std_b, e5_2_std_c = 1 / math.sqrt(D_Q), math.sqrt(2 / D_Q), 1 / (math.sqrt(D_Q) * SHRINK)
check("(a) std", e5_2_std_a, 0.015625)
check("(b) std", e5_2_std_b, 0.0221, rel=1e-3)
check("(c) std", e5_2_std_c, 0.01584, rel=1e-3)

g = torch.Generator().manual_seed(0)
x_q = torch.randn(256, D_Q, generator=g, dtype=torch.float64)
W_a = e5_2_std_a * torch.randn(D_Q, 256, generator=g, dtype=torch.float64)
W_b = e5_2_std_b * torch.randn(D_Q, 256, generator=g, dtype=torch.float64)
torch.manual_seed(0)
W_c = nn.init.trunc_normal_(torch.empty(D_Q, 256, dtype=torch.float64), std=e5_2_std_c,
                            a=-3 * e5_2_std_c, b=3 * e5_2_std_c)
check("(a) E[y^2] with y = x @ W", rounded((x_q @ W_a).pow(2).mean().item()), 1.0, rel=0.05)
check("(b) E[y^2] with y = relu(x) @ W", rounded((F.relu(x_q) @ W_b).pow(2).mean().item()), 1.0,
      rel=0.05)
check("(c) E[y^2], truncated with the corrected std", rounded((x_q @ W_c).pow(2).mean().item()),
      1.0, rel=0.05)
check("(c) ...and every weight within ±3 of its std", W_c.abs().max().item() <= 3 * e5_2_std_c, True)
check_answer("E5.2 (a) std", e5_2_std_a)
check_answer("E5.2 (b) std", e5_2_std_b)
check_answer("E5.2 (c) std", e5_2_std_c)


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E5.3 Which tensors does each channel see?
#
# A module holds six things: (a) a `Parameter`, (b) a plain tensor, (c) a persistent
# buffer, (d) a non-persistent buffer, (e) a `Linear` inside a Python list, and (f) a
# `Linear` inside an `nn.ModuleList`. Which are in `parameters()` (trained)? Which in
# `state_dict()` (checkpointed)? Which are converted by `.to(torch.float64)`? Answer each
# with the letters in order, e.g. `"abc"`; predict, then build the module and check.

# %% tags=["exercise"]
e5_3_trained = ...  # letters of the tensors in parameters(), e.g. "abc"
e5_3_saved = ...  # letters of the tensors in state_dict()
e5_3_converted = ...  # letters of the tensors that .to(torch.float64) converts

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E5.3 trained", e5_3_trained)
check_answer("E5.3 saved", e5_3_saved)
check_answer("E5.3 converted", e5_3_converted)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. Parameter: all three. Plain tensor: none. Persistent buffer: checkpointed and
# converted, not trained. Non-persistent buffer: converted only. A Linear in a Python list:
# none (the module never sees it). A Linear in an nn.ModuleList: all three, like a Parameter.
class Everything(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.zeros(2))
        self.plain = torch.zeros(2)
        self.register_buffer("buffer", torch.zeros(2))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.in_list = [Linear(2, 2)]
        self.in_module_list = nn.ModuleList([Linear(2, 2)])


def tensors_of(m):
    return {"Parameter": m.param, "plain tensor": m.plain, "buffer": m.buffer,
            "buffer, persistent=False": m.scratch, "Linear in a list": m.in_list[0].weight,
            "Linear in a ModuleList": m.in_module_list[0].weight}


everything = Everything()
trained = {id(p) for p in everything.parameters()}
saved = {t.data_ptr() for t in everything.state_dict().values()}
seen = {name: [id(t) in trained, t.data_ptr() in saved] for name, t in tensors_of(everything).items()}
everything.to(torch.float64)
for name, t in tensors_of(everything).items():
    seen[name].append(t.dtype == torch.float64)

print(f"{'':<25} {'trained':>8} {'saved':>6} {'.to()':>6}")
for name, (is_trained, is_saved, is_moved) in seen.items():
    print(f"{name:<25} {is_trained!s:>8} {is_saved!s:>6} {is_moved!s:>6}")
EXPECTED = {  # (trained, saved, converted)
    "Parameter": [True, True, True],
    "plain tensor": [False, False, False],
    "buffer": [False, True, True],
    "buffer, persistent=False": [False, False, True],
    "Linear in a list": [False, False, False],
    "Linear in a ModuleList": [True, True, True],
}
for name, expected in EXPECTED.items():
    check(f"{name}: trained, saved, converted", seen[name], expected)
letters = dict(zip(EXPECTED, "abcdef", strict=True))
e5_3_trained, e5_3_saved, e5_3_converted = (
    "".join(letters[name] for name in EXPECTED if seen[name][k]) for k in range(3))
check_answer("E5.3 trained", e5_3_trained)
check_answer("E5.3 saved", e5_3_saved)
check_answer("E5.3 converted", e5_3_converted)
