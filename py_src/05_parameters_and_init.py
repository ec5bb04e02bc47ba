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
# A core path, the lecture on §5.1 and §5.2 of the notes (about 11 minutes to read),
# then "Going deeper" sections. `✓` marks a checked claim.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §5.1 What is a parameter?
#
# An `nn.Parameter` is a tensor that an `nn.Module` registers when you assign it as an
# attribute. Registration opens three channels: `parameters()` (trained), `state_dict()`
# (saved) and `.to()` (moved, cast). The notes' `Linear`, verbatim:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Say: the `Parameter` assignment is all the registration there is.
# - Ask the room, before the buffer slide: what does a plain tensor attribute get?

# %% slideshow={"slide_type": "-"} tags=["claim-S25"]
import torch
from torch import nn

from lecture_utils import check, measured


class NotesLinear(nn.Module):  # the notes' Linear (§5.1)
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_dim, out_dim))

    def forward(self, x):
        return x @ self.weight


layer = NotesLinear(4, 3)
check("named_parameters() lists the assigned Parameter", [n for n, _ in layer.named_parameters()], ["weight"])

# %% [markdown] slideshow={"slide_type": "slide"}
# **Channel 1: `parameters()`** is all an optimizer updates. One SGD step moves the weight
# by −lr × gradient:

# %% tags=["claim-S25"]
x = torch.randn(8, 4)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
before = layer.weight.detach().clone()
layer(x).pow(2).mean().backward()
opt.step()
check("one SGD step: W = W_before - lr * W.grad", layer.weight.detach(), before - 0.1 * layer.weight.grad, rel=1e-6, abs=1e-7)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Channel 2: `state_dict()`** maps each registered name to its tensor: what a checkpoint
# saves (`torch.save`) and loads into a fresh model:

# %% tags=["claim-S25"]
fresh = NotesLinear(4, 3)  # other random weights
fresh.load_state_dict(layer.state_dict())
check("a fresh model after load_state_dict() holds the same weights", torch.equal(fresh.weight, layer.weight), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Channel 3: `.to()`** converts every registered tensor in place: same `Parameter`
# objects, new data, so the optimizer still holds the right tensor.

# %% tags=["claim-S25"]
layer.to(torch.float64)
check("after layer.to(torch.float64): the weight's dtype", layer.weight.dtype, torch.float64)
check("...and it is the Parameter the optimizer holds", opt.param_groups[0]["params"][0] is layer.weight, True)
layer = layer.to(torch.float32)  # back (the same module), so that the cells above run again as they are

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Buffers: state that is not trained
#
# A plain tensor attribute is never registered (Going deeper shows what that breaks).
# Untrained state, like a causal mask, goes in `register_buffer`; `persistent=False` suits
# a table cheap to recompute (which channels see a buffer: exercise E5.3, after the lecture):
#
# ```python
# self.register_buffer("scale", torch.full((d_out,), 0.5))  # a fixed output scale
# self.register_buffer("table", torch.arange(d_out, dtype=torch.float32), persistent=False)  # recomputable
# ```

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the channels up close, and what a forgotten registration breaks
#
# **A plain tensor attribute gets none of it.** Assign an ordinary tensor instead, even one
# with `requires_grad=True`, and the module never hears of it: the optimizer skips it, a
# checkpoint loses it, `.to()` leaves it behind.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
layer.plain = torch.randn(4, 3, requires_grad=True)  # a plain tensor attribute: not registered
layer.to(torch.float64)
check("layer.plain: in parameters(), in state_dict(), cast by .to(torch.float64)",
      ("plain" in dict(layer.named_parameters()), "plain" in layer.state_dict(), layer.plain.dtype == torch.float64),
      (False, False, False))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# `nn.Module.__setattr__` does the registering: a `Parameter` goes into the module's
# `_parameters` dictionary instead of the ordinary attribute dictionary, and every channel
# works by walking `_parameters` (and `_buffers`, and the submodules').

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("stored in layer._parameters", list(layer._parameters), ["weight"])
check("'weight' is not in the ordinary attribute dict, vars(layer)", "weight" not in vars(layer), True)
check("...while the plain tensor is", "plain" in vars(layer), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# On a GPU, `.to(device)` moves the weight the same way as a dtype change: the same
# `Parameter` object, its data swapped (this cell runs on CUDA only).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils import cuda_only

if cuda_only(device, "moving a module to the GPU with .to(device)"):
    torch.manual_seed(0)
    gpu_layer = NotesLinear(4, 3)
    weight_object = gpu_layer.weight
    gpu_layer.to(device)
    out = gpu_layer(torch.randn(8, 4).to(device))
    measured("weight device after .to(device)", gpu_layer.weight.device, per_device=True)
    measured("same Parameter object after the move", gpu_layer.weight is weight_object, per_device=True,
             ref="module-to-device")
    measured("output device", out.device, per_device=True)
    assert gpu_layer.weight.is_cuda and out.is_cuda
    assert gpu_layer.weight is weight_object  # CPU<->CUDA swaps .data, like a dtype change
    del gpu_layer, weight_object, out

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Now a two-layer model where only the first weight is a `Parameter`: a common slip when a
# module is written by hand. `Forgetful` computes the right outputs, so nothing looks wrong
# until a channel is used. **The optimizer never updates `w2`.** Autograd still computes
# `w2.grad` (the FLOPs are spent), but the optimizer was built from `parameters()` and has
# never heard of `w2`:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
class Forgetful(nn.Module):
    """w1 is a registered Parameter; w2 is a plain tensor attribute (the bug)."""

    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(d_in, d_hidden))
        self.w2 = torch.randn(d_hidden, d_out).requires_grad_()  # not registered

    def forward(self, x):
        return torch.relu(x @ self.w1) @ self.w2


LR = 0.1
torch.manual_seed(0)
model = Forgetful(4, 16, 2)
opt = torch.optim.SGD(model.parameters(), lr=LR)
w1_before, w2_before = model.w1.detach().clone(), model.w2.detach().clone()
model(x).pow(2).mean().backward()
opt.step()
check("w2 has a gradient", model.w2.grad is not None, True)
check("w1 moved by the step", not torch.equal(model.w1, w1_before), True)
check("w2 unchanged by the step", torch.equal(model.w2, w2_before), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **A checkpoint loses it.** `state_dict()` has no entry for `w2`, so a save/load round trip
# restores `w1` and silently keeps whatever `w2` the new model was initialised with:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import io

checkpoint = io.BytesIO()  # a file in memory
torch.save(model.state_dict(), checkpoint)
torch.manual_seed(1)
restored = Forgetful(4, 16, 2)
checkpoint.seek(0)
restored.load_state_dict(torch.load(checkpoint, weights_only=True))
check("w1 restored", torch.equal(restored.w1, model.w1), True)
check("w2 not restored", not torch.equal(restored.w2, model.w2), True)
check("the restored model gives other outputs", not torch.allclose(restored(x), model(x)), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **`.to()` leaves it behind.** Casting the module to float64 converts `w1` only. The next
# forward pass multiplies a float64 activation by the float32 `w2` and fails; moving to
# another device would fail the same way, with a device mismatch.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
model.to(torch.float64)
check("w2 after .to(torch.float64)", model.w2.dtype, torch.float32)
err = check("a forward pass with a float64 input", lambda: model(x.double()), raises=RuntimeError)
print("   ", err)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **A `state_dict()` is not a snapshot.** It returns the parameters' *own* storage, not a
# copy: a dict kept in a variable follows the training. Save it (as above) or clone it.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
state = layer.state_dict()
check("state_dict()['weight'] shares the parameter's storage", state["weight"].data_ptr() == layer.weight.data_ptr(),
      True)
kept = state["weight"].clone()
opt = torch.optim.SGD(layer.parameters(), lr=LR)
layer(x.double()).pow(2).mean().backward()
opt.step()
check("after another step the 'snapshot' moved too", torch.equal(state["weight"], layer.weight), True)
check("the clone kept the old values", not torch.equal(kept, layer.weight), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **`.to("meta")` replaces the objects.** A dtype change or a CPU↔CUDA move keeps the
# `Parameter` objects, but a move to the `meta` device (shapes and dtypes, no data) makes
# new ones, and an optimizer built earlier holds stale tensors. That is why the usual order
# is: build the model, move it to its device and dtype, *then* build the optimizer.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("module.to() returns the module itself", layer.to("meta") is layer, True)
check("after .to('meta'): device, shape", (layer.weight.device.type, tuple(layer.weight.shape)), ("meta", (4, 3)))
check("...and the optimizer holds a stale object", opt.param_groups[0]["params"][0] is not layer.weight, True)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## §5.2 Why initialisation matters
#
# One output sums `d_in` products, `y_k = Σ_i x_i W_ik`; with independent, mean-zero terms
# the variances add:
#
# $$\mathrm{Var}(y) = d_\text{in} \cdot \mathrm{Var}(x) \cdot \mathrm{Var}(W).$$
#
# So the notes' `randn` weights multiply the std by `sqrt(d_in)` per layer (16 at width 256)
# until fp32 overflows. Predict, then measure, on this device: two 50-layer networks on the
# same N(0, 1) draws, the second scaled to std `1/sqrt(d_in)`, on the next slide.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Write $\mathrm{Var}(y) = d_\text{in}\,\mathrm{Var}(x)\,\mathrm{Var}(W)$ on the board.
# - Ask the room: at width 256, after how many N(0, 1) layers does fp32 overflow?

# %% slideshow={"slide_type": "slide"} tags=["claim-S26", "claim-S27"]
import math

import matplotlib.pyplot as plt

WIDTH, DEPTH = 256, 50
g = torch.Generator().manual_seed(0)
Z = torch.randn(DEPTH, WIDTH, WIDTH, generator=g).to(device)  # N(0, 1) draws, shared by both networks
x0 = torch.randn(512, WIDTH, generator=g).to(device)  # drawn on the CPU: the same numbers on any device
rms = {}
for name, std in {"N(0, 1), the notes' randn": 1.0, "std 1/sqrt(d_in)": 1 / math.sqrt(WIDTH)}.items():
    x, rms[name] = x0, []
    for W in Z:
        x = x @ (std * W)
        rms[name].append(x.double().pow(2).mean().sqrt().item())  # RMS of this layer's output
rms_randn, rms_scaled = rms.values()
first_inf = next(L + 1 for L, r in enumerate(rms_randn) if not math.isfinite(r))
check("N(0, 1): growth of the RMS per layer (sqrt(256) = 16)", round((rms_randn[30] / rms_randn[0]) ** (1 / 30), 1), 16.0, rel=0.05)
check("N(0, 1): the first layer whose output overflows fp32", first_inf, 32)
check("std 1/sqrt(d_in): every layer's RMS within [0.8, 1.25]", all(0.8 < r < 1.25 for r in rms_scaled), True)
measured("RMS of layer 50's output with std 1/sqrt(d_in) (predicted 1)", rms_scaled[-1])

# %% caption="Output RMS of each layer against depth, width 256: N(0,1) weights grow 16x per layer until fp32 overflows at layer 32; std 1/sqrt(d_in) stays near 1." slideshow={"slide_type": "slide"}
fig, ax = plt.subplots(figsize=(10, 2.7))
for name, r in rms.items():
    ax.plot(range(1, DEPTH + 1), r, label=name)  # inf is left out
ax.axhline(torch.finfo(torch.float32).max, color="0.3", ls=":", label="fp32 max")
ax.set(yscale="log", xlabel="layer", ylabel="RMS of the layer's output")
ax.legend(frameon=False, fontsize=12)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The notes' truncated normal
#
# The notes' fix: std `1/sqrt(d_in)`, truncated against rare huge weights.
#
# > **The notes say** `trunc_normal_(..., std=1 / math.sqrt(input_dim), a=-3, b=3)` cuts
# > the draw at ±3σ (§5.2). **In fact** `a` and `b` are absolute bounds ("the minimum cutoff
# > value", "the maximum cutoff value" in the PyTorch docs of `torch.nn.init.trunc_normal_`;
# > `torch/nn/init.py` compares the draws with them unscaled). At `d_in = 1024` the bound 3
# > is 96σ away: nothing is cut. Pass `a=-3 * std, b=3 * std`, as `init_weight` does:

# %% slideshow={"slide_type": "-"}
# @save lecture_utils/nn.py
def init_weight(d_in, d_out, *, device=None, dtype=None):
    """A (d_in, d_out) weight, normal with std 1/sqrt(d_in), cut at ±3 std (a, b are absolute)."""
    std = 1 / math.sqrt(d_in)
    weight = torch.empty(d_in, d_out, device=device, dtype=dtype)
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std)


# %% slideshow={"slide_type": "slide"} tags=["claim-S27"]
D = 1024
std = 1 / math.sqrt(D)
torch.manual_seed(0)
w_notes = nn.init.trunc_normal_(torch.empty(D, D), std=std, a=-3, b=3)  # the notes' call
torch.manual_seed(0)
w_cut = init_weight(D, D)  # the bounds scaled by std
check("largest |w| in units of std: notes' call, init_weight",
      (round(w_notes.abs().max().item() / std, 1), round(w_cut.abs().max().item() / std, 1)), (4.8, 3.0))
check("init_weight's std, in units of std", round(w_cut.std().item() / std, 4), 0.9866, rel=2e-3)

# %% [markdown]
# The cut costs a little variance: std × 0.9866 (Lecture 3's normalisation absorbs it).
# Later notebooks import `init_weight` and `Linear` (the notes' layer with it) from
# `lecture_utils.nn`.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: every factor of the variance rule, and ReLU networks
#
# The core followed the std through depth at one width. Here every factor of
# $\mathrm{Var}(y) = d_\text{in}\,\mathrm{Var}(x)\,\mathrm{Var}(W)$ is exercised, for one
# layer: three settings (one of them with input std 2), five widths, in float64 so the last
# digits shown cannot wobble.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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
var_ratios = {name: [] for name in SETTINGS}
for d in WIDTHS:
    row = f"{d:>5}"
    for seed, (name, (std_x, std_w)) in enumerate(SETTINGS.items()):
        predicted = d * std_x**2 * std_w(d) ** 2
        var_ratios[name].append(output_var(d, std_x, std_w(d), seed) / predicted)
        row += f"{predicted:>14g}{var_ratios[name][-1]:>12.2f}"
    print(row)
for name, r in var_ratios.items():
    check(f"{name}: measured / predicted Var(y), every d_in", torch.tensor(r, dtype=torch.float64),
          torch.ones(len(WIDTHS), dtype=torch.float64), rel=0.05)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### ReLU networks
#
# A ReLU zeroes half of each pre-activation's second moment, so the gain per layer halves:
# std $1/\sqrt{d_\text{in}}$ then *vanishes* like $2^{-L/2}$, the fix is
# $\sqrt{2/d_\text{in}}$ (He, or "Kaiming", initialisation), and N(0, 1) weights grow by
# $\sqrt{128}$ per layer, overflowing a few layers later than the linear network. All five
# networks below (width 256, 50 layers) use the core's N(0, 1) draws `Z`, scaled
# differently, on the same 512 inputs (fp32, CPU). We record each layer's output RMS (after
# the ReLU where there is one) and the first layer whose pre-activation contains `inf`.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import torch.nn.functional as F

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

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("16**32 == 2**128", 16**32, 2**128)
check("fp32 max just below 2**128", FP32_MAX / 2.0**128, 1 - 2.0**-24)
check("linear, N(0,1): first inf at layer (as the RMS in the core)", overflow["linear, N(0,1)"], first_inf)
check("...its layer-31 peak was within 16x of the fp32 max, so one more x16 overflows",
      1 / 16 < stacks["linear, N(0,1)"][1][30] / FP32_MAX < 1, True)
check("the well-scaled networks never overflow",
      [overflow[k] for k in RUNS if "N(0,1)" not in k], [None, None, None])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Because the networks share their draws, and both matmul and ReLU commute with a positive
# scale, each N(0, 1) network is an exactly scaled copy of its well-scaled twin: the init
# scale sets the *slope* of log RMS against depth, and the wiggles around that slope are the
# same random walk. For the linear pair the scale is $16 = 2^4$, a power of two, so the
# copy is exact to the last bit. That also predicts the ReLU network's overflow layer from its
# Kaiming twin, without running it.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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
check("ReLU, 1/sqrt(d): RMS at layer 50 below 1e-7 (2**-25 = 3e-8)", relu_s[-1] < 1e-7, True)
check("ReLU, Kaiming: every layer's RMS in [0.25, 4]", all(0.25 < r < 4 for r in relu_k), True)


# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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


# %% caption="Output RMS of each layer against depth for five width-256 networks: N(0,1) weights overflow fp32, 1/sqrt(d) (ReLU: sqrt(2/d)) stays near 1." slideshow={"slide_type": "skip"} tags=["deeper"]
plot_depth({label: (r, "-") for label, r in rms.items()},
           "width 256, 50 layers: N(0,1) overflows, 1/sqrt(d) (ReLU: sqrt(2/d)) stays near 1")

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Two caveats the notes' one-liner hides. First, the variance is preserved *in expectation*;
# a real network is one draw, and its log RMS takes a random walk whose spread grows like
# $\sqrt{L / d}$ (ReLU makes the steps larger, which is why the Kaiming curve wanders between
# about 0.3 and 1). Wider layers make it steadier. Second, the notes call the
# $1/\sqrt{d_\text{in}}$ rule "the idea of Xavier initialisation". Glorot and Bengio (2010)
# derive it as the forward-pass condition and then average it with the backward one,
# $\sqrt{2 / (d_\text{in} + d_\text{out})}$; the rule alone is often called LeCun
# initialisation. The two agree for square layers like these.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: how much a ±3σ cut removes, and what it costs
#
# **The course's `Linear`** is the notes' layer with `init_weight` (and `device`, `dtype`
# arguments); later notebooks import it from `lecture_utils.nn`. The last Going deeper
# section compares its layout with `torch.nn.Linear`'s.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
# @save lecture_utils/nn.py
class Linear(nn.Module):
    """y = x @ W with W of shape (d_in, d_out), no bias (torch.nn.Linear stores W.T)."""

    def __init__(self, d_in, d_out, *, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(init_weight(d_in, d_out, device=device, dtype=dtype))

    def forward(self, x):
        return x @ self.weight

    def extra_repr(self):
        return f"d_in={self.weight.shape[0]}, d_out={self.weight.shape[1]}"


# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# With std $1/\sqrt{d_\text{in}}$, the absolute bounds ±3 sit at $\pm 3\sqrt{d_\text{in}}$
# standard deviations: ±3σ only when $d_\text{in} = 1$ (torch's own default, `a=-2, b=2`,
# is absolute too).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
print("d_in:            " + " ".join(f"{d:>6}" for d in (1, 4, 64, 1024, 12288)))
print("bound 3 in std:  " + " ".join(f"{3 * math.sqrt(d):>5.0f}σ" for d in (1, 4, 64, 1024, 12288)))
check("d_in = 1024: the bound 3 is at (in std)", 3 / std, 96.0)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# How much of a normal lies beyond $k$ standard deviations? $P(|Z| > k) = 1 -
# \mathrm{erf}(k / \sqrt 2)$. At $k = 3$ that is 0.27%, the mass a real ±3σ cut removes. At
# $k = 96$ it is far below anything a float64 can hold, so `1 - math.erf` returns exactly 0;
# its logarithm follows from the standard tail bound
# $P(|Z| > k) \approx 2\varphi(k)/k$ (with $\varphi$ the normal density), which we first test
# against `math.erfc` at $k = 6$.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# So nothing is cut. This torch version draws from the normal and redraws only the values
# outside `[a, b]`; with nothing outside, the notes' call returns *exactly* the plain normal
# draw from the same seed. Its largest weight in a 1024 × 1024 matrix is near 5σ, as for
# any million normal draws, and 0.27% of the weights lie beyond 3σ. The correct call, from
# the same seed, redraws exactly those positions.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
torch.manual_seed(0)
w_plain = torch.empty(D, D).normal_(0, std)  # a plain normal draw
check("the notes' call == a plain normal draw, bit for bit", torch.equal(w_notes, w_plain), True)
z_notes = w_notes / std  # in units of std (dividing by 2**-5 is exact)
max_sigma = z_notes.abs().max().item()
n_beyond = int((z_notes.abs() > 3).sum())
print(f"notes' call: max |w| = {max_sigma:.1f}σ, beyond 3σ: {n_beyond:,} of {D**2:,} weights")
check("max |w| between 4σ and 6σ (nowhere near the 96σ bound)", 4 < max_sigma < 6, True)
check("weights beyond 3σ: about P(|Z| > 3) * 1024**2", n_beyond, p_beyond(3) * D**2, rel=0.05)
check("sample std / std", round(w_notes.std().item() / std, 3), 1.0, rel=2e-3)
check("the positions the correct call redrew are exactly those beyond 3σ",
      torch.equal(w_cut != w_notes, z_notes.abs() > 3), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Cutting the tails also removes variance. For a standard normal truncated to $[-a, a]$,
#
# $$\mathrm{Var} = 1 - \frac{2a\,\varphi(a)}{\mathrm{erf}(a/\sqrt 2)},$$
#
# so at $a = 3$ the std shrinks by the factor $\sqrt{1 - 6\varphi(3)/\mathrm{erf}(3/\sqrt2)}
# = 0.9866$. With the correct call, $\mathrm{Var}(W) = 0.9733 / d_\text{in}$, not
# $1 / d_\text{in}$, so each layer multiplies the variance by 0.9733. One layer of
# `Linear(1024, 1024)` shows it; over the 50 linear layers of the course's `Cruncher`
# (`init_weight` in every layer) the std shrinks by $0.9866^{50} = 0.51$.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.models import Cruncher

A = 3.0
phi = math.exp(-A * A / 2) / math.sqrt(2 * math.pi)
SHRINK = math.sqrt(1 - 2 * A * phi / math.erf(A / math.sqrt(2)))
check("std factor of N(0,1) truncated at ±3", SHRINK, 0.98658, rel=1e-5)
check("...clearly below the untruncated 1 in the sample", w_cut.std().item() / std < 0.99, True)
torch.manual_seed(0)
one_layer = Linear(D, D)
x = torch.randn(256, D)
check("one Linear(1024, 1024): Var(y) / Var(x)", round(one_layer(x).var().item() / x.var().item(), 3),
      SHRINK**2, rel=0.01)
check("predicted std factor after 50 layers", SHRINK**50, 0.5089, rel=1e-3)

torch.manual_seed(0)
deep = Cruncher(WIDTH, DEPTH)  # 50 lecture Linears, width 256
x = x0
trunc_rms = []
with torch.no_grad():
    for layer_ in deep.layers:
        x = layer_(x)
        trunc_rms.append(x.double().pow(2).mean().sqrt().item())
check("Cruncher (init_weight), RMS after 50 layers: near 0.51, not 1", 0.35 < trunc_rms[-1] < 0.7, True)

# %% caption="Output RMS through 50 linear layers: init_weight's \u00b13\u03c3 cut follows 0.9866 ** layer instead of staying at 1." slideshow={"slide_type": "skip"} tags=["deeper"]
plot_depth({"linear, std 1/sqrt(d) (core)": (rms_scaled, "-"),
            "linear, init_weight (cut at ±3σ)": (trunc_rms, "-"),
            "0.9866 ** layer": ([SHRINK ** (L + 1) for L in range(DEPTH)], "k--")},
           "the ±3σ cut shrinks the std by 0.9866 per layer", ylim=(0.35, 1.3))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the lecture's layout beside `torch.nn.Linear`, and a trap in `torch.nn.init`
#
# The lecture's `Linear` stores `W` as `(d_in, d_out)` and computes `y = x @ W`.
# `torch.nn.Linear` stores the transpose, `(d_out, d_in)`, and computes `x @ W.T + b`;
# `F.linear(x, A)` computes `x @ A.T`, so the lecture's layer equals `F.linear(x, W.T)`.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
torch.manual_seed(0)
lin = Linear(512, 2048)
xb = torch.randn(64, 512)
check("torch.nn.Linear stores (d_out, d_in)", tuple(nn.Linear(512, 2048).weight.shape), (2048, 512))
check("x @ W == F.linear(x, W.T)", lin(xb), F.linear(xb, lin.weight.T), rel=1e-5, abs=1e-6)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The layout matters to `torch.nn.init`: `kaiming_normal_` and `kaiming_uniform_` compute
# the fan-in from the tensor's shape, assuming torch's own layout, `(d_out, d_in)`: fan-in
# is `shape[1]` (`xavier_normal_` uses fan-in + fan-out, so the layout does not change it). On a weight in the lecture's `(d_in, d_out)` layout they read
# $d_\text{out}$ instead. For a `(1024, 16)` weight (1024 inputs, 16 outputs), the "fan-in"
# std comes out $1/\sqrt{16}$ instead of $1/\sqrt{1024}$: 8 times too large. `mode="fan_out"`
# reads `shape[0]`, which for this layout is the true fan-in.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
torch.manual_seed(0)
W_lecture = torch.empty(1024, 16)  # (d_in, d_out), the lecture's layout
nn.init.kaiming_normal_(W_lecture, nonlinearity="linear")  # mode="fan_in" by default
check("kaiming_normal_ on (d_in, d_out): std in units of the intended 1/sqrt(d_in)",
      round(W_lecture.std().item() * math.sqrt(1024), 1), 8.0, rel=0.03)
nn.init.kaiming_normal_(W_lecture, mode="fan_out", nonlinearity="linear")
check("with mode='fan_out': std in units of 1/sqrt(d_in)", round(W_lecture.std().item() * math.sqrt(1024), 2),
      1.0, rel=0.03)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - `nn.Parameter` registers a tensor: `parameters()` trains it, `state_dict()` saves it,
#   `.to()` moves and casts it. Untrained state goes in `register_buffer`.
# - Var(y) = `d_in` · Var(x) · Var(W): N(0, 1) weights grow the activations `sqrt(d_in)`×
#   per layer until fp32 overflows; std `1/sqrt(d_in)` keeps them near 1.
# - `trunc_normal_`'s `a`, `b` are absolute: cut at `±3 * std` (the std shrinks by 0.9866).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...`, run the cell and the check under it (right or not, never the answer),
# then expand the hidden solution.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Give the room two minutes for E5.1, then run its check cell live.

# %% [markdown] slideshow={"slide_type": "-"}
# ### E5.1 What does each channel hold?
#
# A layer holds a `(1024, 4096)` weight `Parameter` and the two fp32 buffers of the
# `register_buffer` slide with `d_out = 4096`. How many numbers does the optimizer update?
# How many bytes does its `state_dict()` hold? And after `.to(torch.bfloat16)`, how many
# bytes do all its registered tensors (parameters and buffers) take?

# %% tags=["exercise"]
e5_1_trained = ...  # numbers in parameters()
e5_1_saved_bytes = ...  # bytes in state_dict(), fp32
e5_1_bf16_bytes = ...  # bytes of every parameter and buffer after .to(torch.bfloat16)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("E5.1 numbers the optimizer updates", e5_1_trained)
check_answer("E5.1 state_dict() bytes in fp32", e5_1_saved_bytes)
check_answer("E5.1 bytes of all registered tensors in bf16", e5_1_bf16_bytes)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. parameters() holds the weight only: 1024 \* 4096 = 4,194,304 numbers. state_dict()
# holds the weight and the persistent buffer `scale` (4096), 4 bytes each: 16,793,600 bytes;
# the non-persistent `table` is left out. .to() converts every parameter and buffer, `table`
# included: 2 bytes \* (4,194,304 + 4096 + 4096) = 8,404,992 bytes. (E5.3 shows it by
# experiment.)
#
# ```python
# e5_1_trained = 1024 * 4096
# e5_1_saved_bytes = 4 * (1024 * 4096 + 4096)
# e5_1_bf16_bytes = 2 * (1024 * 4096 + 4096 + 4096)
# check_answer("E5.1 numbers the optimizer updates", e5_1_trained)
# check_answer("E5.1 state_dict() bytes in fp32", e5_1_saved_bytes)
# check_answer("E5.1 bytes of all registered tensors in bf16", e5_1_bf16_bytes)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# Two more exercises, for practice after the lecture: initialisation, and which channels see a buffer.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E5.2 Which std keeps the variance constant at `d_in = 4096`?
#
# Give the weight std that keeps E[y²] = E[x²] for one layer with `d_in = 4096` and
# x ~ N(0, 1): (a) for `y = x @ W`; (b) for `y = relu(x) @ W`; (c) for (a) with
# `init_weight`'s ±3σ cut, keeping the variance exact. Three significant figures suffice.

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e5_2_std_a = ...  # weight std for y = x @ W
e5_2_std_b = ...  # weight std for y = relu(x) @ W
e5_2_std_c = ...  # std to draw with before the ±3σ cut, so that (a) holds after it

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E5.2 (a) std", e5_2_std_a)
check_answer("E5.2 (b) std", e5_2_std_b)
check_answer("E5.2 (c) std", e5_2_std_c)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. (a) Var(y) = d_in \* Var(x) \* Var(W) = 1 needs std 1/sqrt(4096) = 1/64 = 0.0156.
# (b) relu(x) keeps half of E[x^2], so Var(W) must double: sqrt(2/4096) = 0.0221 (Kaiming).
# (c) the ±3σ cut multiplies the std by 0.9866, so draw with std (1/64) / 0.9866 = 0.01584
# and cut at ±3 times that. (The second Going deeper section of §5.2 measures the 0.9866.)
#
# ```python
# e5_2_std_a, e5_2_std_b = 1 / math.sqrt(4096), math.sqrt(2 / 4096)
# e5_2_std_c = e5_2_std_a / 0.9866
# check_answer("E5.2 (a) std", e5_2_std_a)
# check_answer("E5.2 (b) std", e5_2_std_b)
# check_answer("E5.2 (c) std", e5_2_std_c)
# ```
#
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E5.3 Which tensors does each channel see?
#
# A module holds six things: (a) a `Parameter`, (b) a plain tensor, (c) a persistent
# buffer, (d) a non-persistent buffer, (e) a `Linear` inside a Python list, and (f) a
# `Linear` inside an `nn.ModuleList`. Which are in `parameters()`? Which in
# `state_dict()`? Which does `.to(torch.float64)` convert? Answer with the letters in
# order, e.g. `"abc"`; predict, then build the module and check.

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e5_3_trained = ...  # letters of the tensors in parameters(), e.g. "abc"
e5_3_saved = ...  # letters of the tensors in state_dict()
e5_3_converted = ...  # letters of the tensors that .to(torch.float64) converts

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E5.3 trained", e5_3_trained)
check_answer("E5.3 saved", e5_3_saved)
check_answer("E5.3 converted", e5_3_converted)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. Parameter: all three. Plain tensor: none. Persistent buffer: saved and converted,
# not trained. Non-persistent buffer: converted only. A Linear in a Python list: none (the
# module never sees it; an optimizer over a model whose layers all sit in a list refuses:
# "empty parameter list"). A Linear in an nn.ModuleList: all three, like a Parameter.
#
# ```python
# m = nn.Module()
# m.a = nn.Parameter(torch.zeros(2))
# m.b = torch.zeros(2)
# m.register_buffer("c", torch.zeros(2))
# m.register_buffer("d", torch.zeros(2), persistent=False)
# m.e = [Linear(2, 2)]
# m.f = nn.ModuleList([Linear(2, 2)])
# e5_3_trained = "".join(name[0] for name, _ in m.named_parameters())  # names "a", "f.0.weight"
# e5_3_saved = "".join(name[0] for name in m.state_dict())
# m.to(torch.float64)
# tensors = [m.a, m.b, m.c, m.d, m.e[0].weight, m.f[0].weight]
# e5_3_converted = "".join(k for k, t in zip("abcdef", tensors, strict=True) if t.dtype == torch.float64)
# check_answer("E5.3 trained", e5_3_trained)
# check_answer("E5.3 saved", e5_3_saved)
# check_answer("E5.3 converted", e5_3_converted)
# ```
#
# </details>
