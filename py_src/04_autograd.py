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
# # 04 · Autograd: what the backward pass costs
#
# Notebook 03 took "backward costs twice the forward pass" on trust to get $6ND$. This one
# opens up autograd and prices it in FLOPs and in bytes (§4.1–§4.3 of the notes, self-test
# Q1). A core path, the lecture (about 14 minutes to read), then "Going deeper"
# sections. A `✓` line is a checked claim, a `[measured]` line depends on the machine.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §4.1 Forward and backward
#
# The notes' smallest example has one input $x$ and one parameter $w$:
#
# $$y = \tfrac12 (xw - 5)^2, \qquad \frac{\partial y}{\partial w} = (xw - 5)\,x.$$
#
# The forward pass records each operation in a graph; `backward()` applies the chain rule
# through it. The gradient uses forward values, $x$ and $xw - 5$, so autograd keeps them
# until backward has used them: **that is why activations take memory**. With $x = 2$, $w = 4$:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: which values from the forward pass does dy/dw need?

# %% tags=["claim-S21"]
import torch

from lecture_utils import check, cuda_only, measured

x = torch.tensor(2.0)                       # data: no gradient wanted
w = torch.tensor(4.0, requires_grad=True)   # a parameter
y = 0.5 * (x * w - 5) ** 2
y.backward()
check("y = 0.5 * (2*4 - 5)**2", y.item(), 4.5)
check("w.grad == (xw - 5) * x", w.grad.item(), (2.0 * 4.0 - 5) * 2.0)
check("no .grad for the data x, nor for y (not a leaf)", (x.grad, y.is_leaf), (None, False))

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Gradients accumulate
#
# `backward()` does not *write* `w.grad`, it *adds* to it, until you zero it. That is how
# gradient accumulation over micro-batches works, and the classic bug of a training loop that
# forgets `zero_grad()`:

# %% tags=["claim-S21"]
w.grad = None                          # what optimizer.zero_grad() does by default
for _ in range(2):                     # two forward and backward passes, without zeroing between
    (0.5 * (x * w - 5) ** 2).backward()
check("w.grad after two backward() calls: 6 + 6", w.grad.item(), 12.0)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: what autograd keeps, and why a graph runs backward once
#
# `SavedTensors` (from `lecture_utils.trace`, built on
# `torch.autograd.graph.saved_tensors_hooks`) lists every tensor saved for backward. The
# same forward pass again:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.trace import SavedTensors

w.grad = None
with SavedTensors() as kept:
    y = 0.5 * (x * w - 5) ** 2
saved = [t.item() for t in kept.tensors]
y.backward()
check("values saved for backward: x and (xw - 5)", saved, [2.0, 3.0])
check("w.grad is the product of the two saved values", w.grad.item(), saved[1] * saved[0])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The two saved values are exactly the two factors of the gradient formula: `x * w` saved
# $x$ (the gradient of $xw$ with respect to $w$ is $x$), and `** 2` saved its input
# $xw - 5$ (the derivative of $u^2$ is $2u$). Nothing else was kept: the constant 0.5
# and the subtraction need no tensors. Once backward has used them, autograd frees them,
# and the same graph cannot be run backward a second time:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
err = check("backward through the same graph again", y.backward, raises=RuntimeError)
check("w.grad is untouched by the failed call", w.grad.item(), 6.0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §4.2 Why backward costs about twice the forward pass (the 4ND of §3.3)
#
# Take one linear layer $H = XW$ with $X$ of shape $(B, D)$ and $W$ of shape $(D, K)$, and
# let $G = \partial L / \partial H$ be the gradient arriving from above. Backward answers
# two questions with two matmuls:
#
# $$\nabla_W = X^\top G \quad (D \times B)(B \times K), \qquad
#   \nabla_X = G W^\top \quad (B \times K)(K \times D).$$
#
# The first tells the optimizer how to change $W$; the second passes the blame back to the layer
# before it. Each costs the forward's $2BDK$ FLOPs: backward is $4BDK$. Next, both by hand
# against autograd, with $G$ random (`H.backward(G)`), and counted.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: backward of H = XW answers two questions. Which two, and what does each cost?

# %% slideshow={"slide_type": "slide"} tags=["claim-S22"]
from lecture_utils.flops import count_flops, matmul_flops

B, D, K = 32, 64, 48
X = torch.randn(B, D, requires_grad=True)
W = torch.randn(D, K, requires_grad=True)
G = torch.randn(B, K)  # the gradient arriving from above
(X @ W).backward(G)
check("grad_W = X^T G (by hand) vs autograd", X.detach().T @ G, W.grad, rel=1e-5, abs=1e-5)
check("grad_X = G W^T (by hand) vs autograd", G @ W.detach().T, X.grad, rel=1e-5, abs=1e-5)
flops = {name: count_flops(torch.matmul, a, b, backward=False).forward
         for name, (a, b) in {"X @ W": (X, W), "X^T @ G": (X.T, G), "G @ W^T": (G, W.T)}.items()}
check("FLOPs of the forward matmul and of both backward ones (all 2BDK)", flops,
      dict.fromkeys(flops, matmul_flops(B, D, K)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Counting a whole network
#
# The lecture's toy model, `Cruncher`: `n_layers` bias-free `Linear(width, width)` layers
# and a `Linear(width, 1)` head. Summed over the layers, forward is $2ND$ and backward
# $4ND$, with one exception the notes point out: the **first layer** needs no $\nabla_X$
# when its input is the data batch, which wants no gradient, so autograd skips it.
# `count_flops` (PyTorch's `FlopCounterMode`) on 4 layers of width 64 at batch 32:

# %% tags=["claim-S18", "claim-S22"]
from lecture_utils.bench import conditions, time_fn
from lecture_utils.models import Cruncher

L, D, B = 4, 64, 32
net = Cruncher(D, L)
data = count_flops(net, torch.randn(B, D))                        # input: a data batch
hidden = count_flops(net, torch.randn(B, D, requires_grad=True))  # input: needs a gradient
layer = matmul_flops(B, D, D)
check("forward: L layers of 2BD^2 plus the 2BD head", data.forward, L * layer + matmul_flops(B, D, 1))
check("input needs a gradient: backward == 2 x forward", hidden.backward, 2 * hidden.forward)
check("data input: backward == 2 x forward - the first layer's grad_X", data.backward, 2 * data.forward - layer)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Predict, then measure.** A matmul-heavy model's backward should take about twice its
# forward. A Cruncher whose input requires grad (FLOP ratio 2), timed with `time_fn`
# (`torch.utils.benchmark`, one thread: two passes compared); backward alone reruns a kept
# graph, its gradients dropped.

# %% tags=["claim-S18", "claim-S22"]
def time_forward_backward(width, n_layers=4):  # median seconds of forward, and of backward alone
    model = Cruncher(width, n_layers).to(device)  # drawn on the CPU: the same on any device
    x = torch.randn(width, width).to(device).requires_grad_()  # batch = width
    loss = model(x).sum()

    def backward_only():
        model.zero_grad(set_to_none=True)
        x.grad = None
        loss.backward(retain_graph=True)

    return time_fn(model, x, threads=1, min_run_time=0.1), time_fn(backward_only, threads=1, min_run_time=0.1)


T_WIDTH = 4096 if device.type == "cuda" else 512
t_forward, t_backward = time_forward_backward(T_WIDTH)
measured("backward / forward, in time (the FLOPs predict 2)", t_backward.median / t_forward.median, spread=(t_backward, t_forward))
if conditions(t_forward, t_backward):  # a loose band around 2, on a clock we can trust
    assert 1 < t_backward.median / t_forward.median < 4, (t_forward, t_backward)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: module by module, depth, a transformer, and the clock in detail
#
# The counter reports the backward pass as one total and the forward pass per module, so
# we predict the backward total from the forward counts: twice each layer's forward,
# except the first layer's, which pays only $\nabla_W$.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
multiple = {f"Cruncher.layers.{i}": 2 for i in range(L)} | {"Cruncher.final": 2, "Cruncher.layers.0": 1}
expected_fwd = {name: layer for name in multiple} | {"Cruncher.final": matmul_flops(B, D, 1)}
print(f"{'module':<19} {'forward':>9} {'backward':>9} {'x':>3}")
for name, fwd in expected_fwd.items():
    print(f"{name:<19} {data.by_module[name]:>9,} {multiple[name] * fwd:>9,} {multiple[name]:>3}")
print(f"{'total':<19} {data.forward:>9,} {data.backward:>9,}")
check("forward per module == 2BDK (layers), 2BD (head)",
      {k: v for k, v in data.by_module.items() if k != "Cruncher"}, expected_fwd)
check("backward total == 1x first layer + 2x the rest", data.backward,
      sum(multiple[name] * fwd for name, fwd in expected_fwd.items()))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The notes call the first-layer saving negligible "in a network of dozens of layers".
# That is right, but the ratio approaches 2 only as $2 - 1/L$ (the small head adds a
# little), so a shallow stack is visibly below 2. In a transformer the saving does not
# even exist: the first matmul's input is an embedding lookup, and the embedding table is
# a parameter, so its gradient must flow all the way down. `count_flops` on the course's
# GPT (small shapes, explicit attention) finds backward exactly 2× the forward, which is
# §3.3's $4ND = 2 \times 2ND$ (counting matmuls; `FlopCounterMode` counts elementwise work
# as zero).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from fractions import Fraction

from lecture_utils.models import GPT, GPTConfig

ratios, formula = {}, {}
for n_layers in (1, 2, 4, 8, 16, 32, 64):
    c = count_flops(Cruncher(16, n_layers), torch.randn(4, 16))
    ratios[n_layers] = Fraction(c.backward, c.forward)
    # in units of 2BD: forward L*D + 1 (head), backward D + 2(L-1)D + 2
    formula[n_layers] = Fraction((2 * n_layers - 1) * 16 + 2, n_layers * 16 + 1)
print("layers L:          " + " ".join(f"{n:>6}" for n in ratios))
print("backward/forward   " + " ".join(f"{float(r):>6.3f}" for r in ratios.values()))
print("2 - 1/L            " + " ".join(f"{2 - 1 / n:>6.3f}" for n in ratios))
check("ratio == ((2L-1)D + 2) / (LD + 1) for every L (exact fractions)", ratios, formula)
check("always below 2 when the data is the first input", max(ratios.values()) < 2, True)

cfg = GPTConfig(vocab_size=256, seq_len=32, n_layers=2, d_model=64, n_heads=4)  # math attention
gpt_flops = count_flops(GPT(cfg), torch.randint(0, cfg.vocab_size, (2, cfg.seq_len)))
check("GPT (math attention): backward == 2 x forward", gpt_flops.backward, 2 * gpt_flops.forward)
check("GPT: nothing uncounted", gpt_flops.uncounted_ops, ())

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The clock in detail.** The FLOP ratio at the timed shape, counted on the `meta` device
# (shapes only), and the backward time:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if device.type == "cuda":
    torch.cuda.empty_cache()
with torch.device("meta"):  # shapes only: counting needs no data and no memory
    t_flops = count_flops(Cruncher(T_WIDTH, 4), torch.randn(T_WIDTH, T_WIDTH, requires_grad=True))
check("FLOP ratio backward / forward at this shape", t_flops.backward / t_flops.forward, 2.0)
measured(f"width = batch = {T_WIDTH}; forward, backward (ms)",
         f"{t_forward.median * 1e3:.3g} ±{t_forward.spread:.0%}, {t_backward.median * 1e3:.3g} ±{t_backward.spread:.0%}",
         per_device=True)  # the width differs on a GPU

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Expect a time ratio near 2 but not exactly 2: the backward matmuls use transposed
# operands ($X^\top G$, $G W^\top$), which some kernels run at a different speed, and
# backward also accumulates the weight gradients and runs small elementwise kernels that
# the FLOP count ignores. The same two passes side by side, in both currencies: FLOPs
# (counted, exact) on the left, milliseconds (measured on this machine) on the right. The
# dashed line marks twice the forward bar.

# %% caption="Forward and backward of a 4-layer Cruncher: counted FLOPs and measured time, with 2 x forward marked." slideshow={"slide_type": "skip"} tags=["deeper"]
import matplotlib.pyplot as plt

fig, (ax_f, ax_t) = plt.subplots(1, 2, figsize=(10, 5))
for ax, (fwd, bwd), unit in ((ax_f, (t_flops.forward / 1e9, t_flops.backward / 1e9), "GFLOP"),
                             (ax_t, (t_forward.median * 1e3, t_backward.median * 1e3), "ms")):
    ax.bar(["forward", "backward"], [fwd, bwd], color=["tab:blue", "tab:orange"])
    ax.axhline(2 * fwd, color="0.3", linestyle="--", label="2 × forward")
    ax.set_ylim(0, 2.5 * max(fwd, bwd / 2))
    ax.set_ylabel(unit, fontsize=13)
    ax.tick_params(labelsize=12)
    ax.legend(frameon=False, fontsize=12, loc="upper left")
ax_f.set_title("FLOPs (counted)", fontsize=14)
ax_t.set_title("time (measured here)", fontsize=14)
fig.suptitle(f"Cruncher, 4 layers, width = batch = {T_WIDTH}, input requires grad", fontsize=14)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §4.3 Gradients take memory
#
# After `backward()`, each parameter has a `.grad` of its own shape and dtype: as many bytes
# again as the parameters. On a fresh Cruncher:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: you double the batch. Which terms of the memory bill grow?

# %% tags=["claim-S23"]
model = Cruncher(D, L)
model(torch.randn(B, D)).sum().backward()
params = list(model.parameters())
check("each .grad's shape and dtype", [(tuple(p.grad.shape), p.grad.dtype) for p in params],
      [(tuple(p.shape), p.dtype) for p in params])
check("gradient bytes == parameter bytes", sum(p.grad.nbytes for p in params), sum(p.nbytes for p in params))

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** every trainable parameter gets a same-shape `.grad` after
# > `backward()` (§4.3). **In fact** only the parameters the loss depends on do; any other
# > keeps `.grad = None` (PyTorch docs, `torch.Tensor.grad`: "None by default and becomes a
# > Tensor the first time a call to backward() computes gradients for self"), and
# > optimizers skip it.

# %%
from torch import nn

spare = Cruncher(D, L)
spare.unused = nn.Parameter(torch.zeros(D))  # registered, but the forward never uses it
spare(torch.randn(B, D)).sum().backward()
check(".grad of a parameter the loss never touched", spare.unused.grad, None)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The toy MLP's memory bill
#
# The notes' bill for an MLP with $L$ layers of width $D$ at batch $B$, in fp32 (4 bytes
# per number): parameters $\approx L \cdot D^2$; activations $\approx B \cdot L \cdot D$
# (each layer's values kept for backward); gradients as many as the parameters; optimizer
# state one copy of them (AdaGrad) or two (Adam). **Only the activations grow with $B$**,
# which is why "lower the batch size" is the first fix for an out-of-memory error. The bill
# as code, against what the model holds and what autograd really saves, then drawn against
# $B$: the activations pass the parameters at $B = D$.

# %% slideshow={"slide_type": "slide"} tags=["claim-S24"]
from lecture_utils.training_memory import saved_tensor_bytes


def mlp_bill(n_layers, width, batch, state_copies=2):
    """The notes' toy-MLP bill in fp32 bytes (state_copies: AdaGrad 1, Adam 2)."""
    params = n_layers * width**2
    return {"params": 4 * params, "grads": 4 * params, "optimizer state": 4 * state_copies * params,
            "activations": 4 * batch * n_layers * width}


batch = torch.randn(B, D)
saved, _ = saved_tensor_bytes(model, batch, exclude=params + [batch])  # what autograd keeps for backward
check("Cruncher's parameters: L*D^2, plus a D-weight head", sum(p.numel() for p in params), L * D * D + D)
check("bytes autograd saves beside the data batch x == the bill's B*L*D*4", saved, mlp_bill(L, D, B)["activations"])
check("from B = 32 to B = 2048, each term grows by",
      {k: v // mlp_bill(L, D, 32)[k] for k, v in mlp_bill(L, D, 2048).items()},
      {"params": 1, "grads": 1, "optimizer state": 1, "activations": 64})

# %% caption="The notes' toy-MLP bill against batch size (L = 4, D = 64, Adam): only the activations grow." slideshow={"slide_type": "slide"}
import matplotlib.pyplot as plt

BATCHES = [2**p for p in range(13)]  # 1 ... 4096
fig, ax = plt.subplots(figsize=(12, 3), layout="constrained")
for term, style in zip(mlp_bill(L, D, 1), ("s-", "x--", "^-", "o-"), strict=True):
    ax.plot(BATCHES, [mlp_bill(L, D, b)[term] for b in BATCHES], style, label=term)
ax.set(xscale="log", yscale="log", xlabel="batch size B", ylabel="bytes (fp32)")
ax.legend(frameon=False, loc="upper left", ncol=4)
plt.show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: what autograd saves, exactly
#
# A bf16 model gets bf16 gradients, as many bytes again as its parameters:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.sizes import tensor_bytes

m = Cruncher(32, 3, dtype=torch.bfloat16)
m(torch.randn(8, 32, dtype=torch.bfloat16)).sum().backward()
check("bf16: every .grad has its parameter's shape and dtype",
      [(p.grad.shape, p.grad.dtype) == (p.shape, p.dtype) for p in m.parameters()], [True] * 4)
check("bf16: gradient bytes == parameter bytes", sum(tensor_bytes(p.grad) for p in m.parameters()),
      sum(tensor_bytes(p) for p in m.parameters()))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **What autograd keeps, tensor by tensor.** The core checked the bill's $B \cdot L \cdot D$
# against the bytes autograd saves *beside the data batch*. `SavedTensors` lists every
# tensor saved for backward, the batch included:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from collections import Counter

names = {batch.data_ptr(): "x (the data batch)"}
names |= {p.data_ptr(): f"weight {name}" for name, p in model.named_parameters()}
with SavedTensors() as kept:
    out = model(batch)
everything = [names.get(t.data_ptr(), f"activation {tuple(t.shape)}") for t in kept.tensors]
print("\n".join(everything))
check("tensors saved", Counter(n.split()[0] for n in everything),
      Counter({"activation": L, "weight": L, "x": 1}))
check("layers.0.weight is not among them", "weight layers.0.weight" not in everything, True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Each matmul $h_{i+1} = h_i W_i$ saves what its two backward matmuls need: its input
# $h_i$ (for $\nabla_W$) and its weight $W_i$ (for $\nabla_X$). Three details:
#
# * **The weights cost nothing extra**: a saved weight is a reference to the parameter,
#   which is in memory anyway. (The first layer does not even save its weight: it will
#   not compute $\nabla_X$.) `saved_tensor_bytes(..., exclude=params)` skips them.
# * **There are $L + 1$ saved inputs, not $L$**: $x, h_1, \dots, h_L$, one per matmul,
#   and the head is a matmul too. The notes' "≈ $B \cdot L \cdot D$" counts $h_1 \dots h_L$;
#   the data batch $x$, which the first layer saves as its input, comes on top (in a
#   training loop it is held anyway, as the batch).
# * **The last layer's output is not saved**: a matmul keeps its *input*; nothing needs
#   its output (here the head's $(B, 1)$ result).
#
# So the exact count is $(L + 1) \cdot B \cdot D$ elements, which `mlp_activation_bytes`
# computes:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.training_memory import mlp_activation_bytes

act_bytes, act_saved = saved_tensor_bytes(model, batch, exclude=params)
check("saved activations (params excluded), bytes", act_bytes, (L + 1) * B * D * 4)
check("== mlp_activation_bytes", act_bytes, mlp_activation_bytes(n_layers=L, width=D, batch=B))
check("all of them (B, D) float32", act_saved, [((B, D), torch.float32)] * (L + 1))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **The constant depends on the layer's operations.** The lecture's Cruncher has no
# nonlinearity. Add one and the answer depends on *what the nonlinearity's backward needs*:
#
# * `relu` saves its **output** (the derivative is 1 where the output is positive). That
#   output is the next matmul's input, which is saved anyway: the same storage, no extra
#   bytes. The same holds for `tanh` and `sigmoid`, whose derivatives are functions of
#   their outputs.
# * `gelu` saves its **input**, the matmul's output, which nothing else keeps: one more
#   $B \times D$ tensor per layer. So does an elementwise square `h * h`.
#
# We count both the references autograd takes and the distinct bytes:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import torch.nn.functional as F

ACTIVATIONS = {"none (the lecture's)": None, "relu": F.relu, "tanh": torch.tanh,
               "sigmoid": torch.sigmoid, "gelu": F.gelu, "square h*h": lambda h: h * h}


def mlp_with(act, model):
    def forward(x):
        for layer in model.layers:
            x = layer(x)
            x = x if act is None else act(x)
        return model.final(x).squeeze(-1)
    return forward


skip = {p.untyped_storage().data_ptr() for p in params}
per_layer = {}
print(f"{'nonlinearity':<21} {'references':>10} {'bytes':>8} {'B*D*4 units':>12}")
for label, act in ACTIVATIONS.items():
    n_bytes, _ = saved_tensor_bytes(mlp_with(act, model), batch, exclude=params)
    with SavedTensors() as kept:
        mlp_with(act, model)(batch)
    refs = sum(t.untyped_storage().data_ptr() not in skip for t in kept.tensors)
    per_layer[label] = n_bytes // (B * D * 4)
    print(f"{label:<21} {refs:>10} {n_bytes:>8,} {per_layer[label]:>12}")

relu_model = Cruncher(D, L, relu=True)
check("Cruncher(relu=True) saves the same bytes as Cruncher",
      saved_tensor_bytes(relu_model, batch, exclude=list(relu_model.parameters()))[0], act_bytes)
check("B*D*4 units saved: relu, tanh, sigmoid add nothing",
      [per_layer[k] for k in ("relu", "tanh", "sigmoid")], [L + 1] * 3)
check("gelu and h*h add one B*D per layer",
      [per_layer[k] for k in ("gelu", "square h*h")], [2 * L + 1] * 2)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# `relu` takes four more references than no nonlinearity at all, yet costs zero bytes;
# `gelu` nearly doubles the activation memory. In a transformer block every op (norms,
# softmax, GELU, attention) adds its own term, which is why the notes defer the exact
# transformer count to assignment 1: "activations ∝ $B \cdot L \cdot D$" is right, but
# the constant in front has to be counted for the ops you use.

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the bill to the byte, and where a step peaks
#
# The notes' list: parameters + gradients + optimizer state + activations (+ temporary
# buffers and the allocator's cache, which we come to below). `predict_training_memory`
# computes the first three from the parameters alone: one gradient per parameter, and
# 0 (SGD), 1 (momentum) or 2 (Adam, AdamW: $m$ and $v$) state copies of it, plus the
# 4-byte `step` counter that `torch.optim`'s Adam keeps per parameter tensor. The
# activations come from `mlp_activation_bytes`. `measure_training_memory` runs one real
# step and adds up the tensors that exist: saved activations, `.grad`s, and every tensor
# in `optimizer.state`. (`tests/test_training_memory.py` checks prediction against
# measurement to the byte for six optimizers.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.sizes import format_bytes
from lecture_utils.training_memory import measure_training_memory, predict_training_memory

OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3),
    "momentum": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3),
}
acts = mlp_activation_bytes(n_layers=L, width=D, batch=B)
bills = {}
for name, make in OPTIMIZERS.items():
    m = Cruncher(D, L)
    bills[name] = measure_training_memory(m, torch.randn(B, D), make(m.parameters()))
check("adamw: predicted == measured", predict_training_memory(m, optimizer="adamw", activations=acts),
      bills["adamw"])

print(f"\n{'optimizer':<9} {'params':>9} {'grads':>9} {'opt state':>9} {'activations':>11}"
      f" {'total':>22}")
for name, bill in bills.items():
    print(f"{name:<9} {bill.params:>9,} {bill.grads:>9,} {bill.optimizer_state:>9,} "
          f"{bill.activations:>11,} {format_bytes(bill.total):>22}")

P = bills["sgd"].params
check("state: 0, 1, 2, 2 copies (+ 4 B step counters per tensor for Adam)",
      [bills[k].optimizer_state for k in OPTIMIZERS], [0, P, 2 * P + 4 * (L + 1), 2 * P + 4 * (L + 1)])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# With the notes' rule of thumb "$4 \times$ (params + activations + grads + state)" this is
# the same sum: every number here is 4 bytes. The `step` counters are the only thing the
# rule of thumb leaves out, and at 4 bytes per tensor they never matter. Measured at batch
# sizes from 1 to 4096 (width 64, 4 layers, AdamW), only the activations grow:

# %% caption="Measured memory of params, grads, AdamW state and activations against batch size: only activations grow." slideshow={"slide_type": "skip"} tags=["deeper"]
BATCHES = [1, 4, 16, 64, 256, 1024, 4096]
m = Cruncher(D, L)
by_batch = {b: measure_training_memory(m, torch.randn(b, D), torch.optim.AdamW(m.parameters()))
            for b in BATCHES}
crossover = next(b for b in BATCHES if by_batch[b].activations > by_batch[b].params)
check("activations outweigh the params above B = (LD + 1)/(L + 1) = 51.4: first such B",
      crossover, min(b for b in BATCHES if b > (L * D + 1) / (L + 1)))

fig, ax = plt.subplots(figsize=(7.0, 3.8))
for field, style in (("params", "s-"), ("grads", "x--"), ("optimizer_state", "^-"),
                     ("activations", "o-")):
    ax.plot(BATCHES, [getattr(by_batch[b], field) for b in BATCHES], style,
            label=field.replace("_", " "))
ax.plot(BATCHES, [by_batch[b].total for b in BATCHES], "k:", label="total")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xlabel("batch size B")
ax.set_ylabel("bytes (measured)")
ax.set_title(f"Cruncher(width={D}, n_layers={L}), AdamW: only activations grow with B",
             loc="left")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Where a step peaks.** The bill adds up tensors that never all exist at once.
# `zero_grad(set_to_none=True)` frees the gradients before the forward pass; backward then
# makes them one layer at a time while it frees the saved activations one layer at a time.
# The number that decides whether a step fits is the **peak** of live tensor bytes. We can
# measure it exactly on the CPU with `LiveBytes` (from `lecture_utils.trace`): it sees every
# tensor any op creates, forward and backward, notices when its storage is freed, and
# reports the peak and the shapes that were live at that moment.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.trace import LiveBytes


def train_step(model, x, opt, set_to_none=True):
    opt.zero_grad(set_to_none=set_to_none)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()


def step_peak(n_layers, width, batch, set_to_none=True):
    """Peak live bytes of one steady-state AdamW step (after a warm-up step)."""
    model = Cruncher(width, n_layers)
    x = torch.randn(batch, width)
    opt = torch.optim.AdamW(model.parameters())
    train_step(model, x, opt, set_to_none)  # warm-up: creates the AdamW state
    tracker = LiveBytes([x, *model.parameters(), *(p.grad for p in model.parameters()),
                         *(t for s in opt.state.values() for t in s.values())])
    with tracker:
        train_step(model, x, opt, set_to_none)
    return tracker


L, D, B = 4, 64, 256
peak = step_peak(L, D, B)
P = (L * D * D + D) * 4
steps = 4 * (L + 1)
print(f"live at the peak (shape: count): {dict(sorted(peak.at_peak.items()))}")
check("(B, D) tensors live at the peak", peak.at_peak[(B, D)], L + 2)
check("(D, D) tensors: L weights + 2L AdamW moments + 1 fresh gradient",
      peak.at_peak[(D, D)], 3 * L + 1)
exact = 3 * P + steps + 4 * ((L + 2) * B * D + D * D + D) + 8
check("peak == params + AdamW state + 4*((L+2)BD + D^2 + D) + 8", peak.peak, exact)
bill_total = predict_training_memory(Cruncher(D, L), optimizer="adamw",
                                     activations=mlp_activation_bytes(n_layers=L, width=D,
                                                                      batch=B)).total
check("the bill's total", bill_total, 4 * P + steps + 4 * (L + 1) * B * D)
check("peak - bill == transients - the gradients not yet made", peak.peak - bill_total,
      (4 * (B * D + D * D + D) + 8) - P)


def exact_peak_over_bill(n_layers, width, batch):
    p = (n_layers * width * width + width) * 4
    peak = 3 * p + 4 * (n_layers + 1) + 4 * ((n_layers + 2) * batch * width + width**2 + width) + 8
    return peak / (4 * p + 4 * (n_layers + 1) + 4 * (n_layers + 1) * batch * width)


check("by the same count, the GPU cell's shape: peak / bill", round(exact_peak_over_bill(8, 2048, 8192), 3),
      0.956)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The peak comes in the backward pass, in the last hidden layer's node: its two matmuls
# have just produced $\nabla_X$ $(B, D)$ and $\nabla_W$ $(D, D)$ while the gradient they
# consumed $(B, D)$ is still alive, and the saved inputs $x, h_1, \dots, h_{L-1}$ are still
# waiting. The head's saved input $h_L$ is already gone: autograd frees a node's saved
# tensors as soon as the node has run. So at the peak:
#
# * parameters and AdamW's $m$, $v$ (and step counters): $3P$;
# * $(L + 2)$ tensors of shape $(B, D)$: $L$ saved inputs, the incoming and the outgoing
#   gradient;
# * one $(D, D)$ weight gradient; earlier gradients were freed by
#   `zero_grad(set_to_none=True)`, and only the head's $(D, 1)$ one exists yet;
# * the scalar loss and the seed gradient that backward started from (4 bytes each).

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# This holds while $B > D$; with $B \ll D$ the gradients, which grow by $D^2$ per layer as
# backward proceeds, outweigh the activations it frees, and the peak moves later in the
# step. Note that the peak is *not* the bill's total. The gradients and the activations
# mostly take turns (only one $(D, D)$ gradient exists at the peak), but the peak has
# transients the bill does not list: one more $(B, D)$ gradient and that $(D, D)$ one.
# Here the two effects nearly cancel; for the shape of the GPU cell below ($B = 4D$ again,
# but 8 layers of width 2048) the same count puts the peak 4% under the bill.
#
# On a GPU the caching allocator keeps its own books: `torch.cuda.max_memory_allocated()`
# is the peak of allocated blocks (rounded up to 512 bytes), and it includes the cuBLAS
# workspaces that no tensor of ours accounts for: one per thread and stream (32 MiB each on
# Hopper, the size the cuBLAS docs recommend there under `cublasSetWorkspace()`), so one for
# the forward pass and one for autograd's backward thread. The cell
# below first runs one small matmul forward and backward, so both exist, and takes
# `memory_allocated()` then as its baseline. It then runs one steady-state AdamW step of a
# Cruncher of width 2048 with 8 layers at batch 8192 and compares the peak *above that
# baseline* with the course's prediction `mlp_peak_bytes` (within 5%) and with the exact
# count of this section (a floor: the allocator can only add to it).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.training_memory import mlp_peak_bytes

if cuda_only(device, "the peak memory of an AdamW step, against the prediction"):
    G_L, G_D, G_B = 8, 2048, 8192
    torch.cuda.empty_cache()
    warm = torch.randn(256, 256, device=device, requires_grad=True)
    (warm @ warm).sum().backward()  # cuBLAS's workspaces: this thread's and autograd's
    del warm
    torch.cuda.synchronize()
    g_base = torch.cuda.memory_allocated()  # the workspaces, and whatever earlier cells still hold
    g_model = Cruncher(G_D, G_L, device=device)
    g_x = torch.randn(G_B, G_D, device=device)
    g_opt = torch.optim.AdamW(g_model.parameters())
    train_step(g_model, g_x, g_opt)  # warm-up: creates AdamW's state
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    train_step(g_model, g_x, g_opt)
    torch.cuda.synchronize()
    g_peak = torch.cuda.max_memory_allocated() - g_base
    measured("baseline before the model (cuBLAS workspaces, earlier cells)", format_bytes(g_base), per_device=True)
    g_predicted = mlp_peak_bytes(n_layers=G_L, width=G_D, batch=G_B, optimizer="adamw")
    g_P = (G_L * G_D * G_D + G_D) * 4
    g_floor = 3 * g_P + 4 * ((G_L + 2) * G_B * G_D + G_D * G_D + G_D)
    measured("peak allocated above the baseline, one AdamW step", format_bytes(g_peak), per_device=True)
    measured("mlp_peak_bytes prediction", format_bytes(g_predicted), per_device=True)
    measured("measured / predicted", g_peak / g_predicted, per_device=True, ref="adamw-step-peak")
    measured("exact count of live tensors (this notebook)", format_bytes(g_floor), per_device=True)
    measured("allocator extras above it (rounding)", format_bytes(g_peak - g_floor), per_device=True)
    assert abs(g_peak / g_predicted - 1) < 0.05, (g_peak, g_predicted)
    assert g_peak >= g_floor, (g_peak, g_floor)
    del g_model, g_x, g_opt
    torch.cuda.empty_cache()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **Reserved versus allocated: the caching allocator.** Asking the driver for GPU memory
# (`cudaMalloc`) is slow and synchronises the device, so PyTorch's **caching allocator** asks
# for large segments once and carves tensors out of them. When a tensor dies its block goes
# back to the allocator's cache, not to the driver, ready for the next tensor of a similar
# size. So there are two numbers: `torch.cuda.memory_allocated()` counts the bytes in blocks
# that live tensors hold, and `torch.cuda.memory_reserved()` counts every segment the
# allocator holds, used or cached. `nvidia-smi` shows roughly the reserved figure (plus the
# CUDA context), which is why it looks larger than your tensors. `torch.cuda.empty_cache()`
# hands the unused cached segments back to the driver; it frees no tensor and makes no more
# memory available to this process, only to others. The cell below frees a 256 MiB tensor
# and watches both numbers.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
if cuda_only(device, "reserved versus allocated memory of the caching allocator"):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    a0, r0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    big = torch.empty(64 * 2**20, device=device)  # 64 Mi floats = 256 MiB
    a1, r1 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    del big
    a2, r2 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    a3, r3 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    for label, a, r in (("before", a0, r0), ("with a 256 MiB tensor", a1, r1)):
        measured(f"{label}: allocated / reserved", f"{format_bytes(a)} / {format_bytes(r)}", per_device=True)
    measured("after del: allocated / reserved", f"{format_bytes(a2)} / {format_bytes(r2)}", per_device=True,
             ref="reserved-vs-allocated")
    measured("after empty_cache(): allocated / reserved", f"{format_bytes(a3)} / {format_bytes(r3)}",
             per_device=True)
    assert a1 - a0 == 2**28, (a0, a1)       # the tensor's bytes, exactly
    assert a2 == a0, (a0, a2)               # del: the block is free again...
    assert r2 == r1, (r1, r2)               # ...but stays reserved, cached for reuse
    assert r2 - a2 >= 2**28, (r2, a2)       # at least the freed 256 MiB sit in the cache
    assert a3 == a2 and r3 <= r2, (a3, r3)  # empty_cache frees no tensor, only cached segments
    assert all(r >= a for a, r in ((a0, r0), (a1, r1), (a2, r2), (a3, r3)))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: zeroing the gradients, `set_to_none=True` or in place?
#
# `optimizer.zero_grad()` has two modes. `set_to_none=True` (the default since PyTorch 2.0)
# drops every `.grad`; `set_to_none=False` keeps the tensors and writes zeros into them.
# The gradients that come out of the next backward are identical; what differs is the
# work and the memory. We watch every aten op with `OpLog`, as in notebook 03: how many
# kernels of each kind ran, and the bytes they read.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.trace import OpLog

L, D, B = 4, 64, 32
model = Cruncher(D, L)
batch = torch.randn(B, D)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
grad_bytes = sum(tensor_bytes(p) for p in model.parameters())


def held():
    return sum(tensor_bytes(p.grad) for p in model.parameters() if p.grad is not None)


model(batch).sum().backward()
reference = [p.grad.clone() for p in model.parameters()]
results = {}
for set_to_none in (False, True):
    with OpLog() as zeroing:
        opt.zero_grad(set_to_none=set_to_none)
    bytes_between = held()
    with OpLog() as backward:
        model(batch).sum().backward()
    results[set_to_none] = (bytes_between, zeroing.count("zero_"), backward.count("add_"))
    check(f"set_to_none={set_to_none}: gradients identical to a fresh backward",
          all(torch.equal(p.grad, r) for p, r in zip(model.parameters(), reference, strict=True)), True)

n_tensors = len(reference)
check("in place: grad bytes held until the next backward", results[False][0], grad_bytes)
check("in place: zero_ kernels and the bytes they write", results[False][1], (n_tensors, grad_bytes))
check("in place: backward then adds into each grad (reads 2x grad bytes)", results[False][2],
      (n_tensors, 2 * grad_bytes))
check("set_to_none: grad bytes held until the next backward", results[True][0], 0)
check("set_to_none: no zeroing kernels", results[True][1], (0, 0))
check("set_to_none: backward assigns, no adds", results[True][2], (0, 0))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# So zeroing in place costs, every step, a pass that writes every gradient byte, and then
# makes backward *accumulate* into the zeros: an add per parameter that reads the old
# gradient and the new one and writes the sum. With `set_to_none=True` backward simply
# hands its fresh gradient tensor to `.grad`. It also frees the gradients between
# `zero_grad()` and backward, so the forward pass's activations can use that memory. In
# the peak of the previous section, that is worth one full set of gradients, less the
# head's $(D, 1)$ gradient, which exists at the peak either way:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
L, D, B = 4, 64, 256
P = (L * D * D + D) * 4
in_place, to_none = step_peak(L, D, B, set_to_none=False), step_peak(L, D, B, set_to_none=True)
check("peak with zeroing in place - peak with set_to_none", in_place.peak - to_none.peak, P - 4 * D)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# One behavioural difference to know: an optimizer skips a parameter whose `.grad` is
# `None`, but updates one whose gradient is a tensor of zeros. With momentum (or weight
# decay), a parameter that got no gradient in this step still moves in the second case:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
def moves_after(zero_grad_to):
    p = nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = torch.ones(3)
    opt.step()                    # builds up momentum
    p.grad = zero_grad_to
    before = p.detach().clone()
    opt.step()                    # a step with no new gradient
    return not torch.equal(p.detach(), before)


check("grad = zeros: the parameter still moves (momentum)", moves_after(torch.zeros(3)), True)
check("grad = None: the optimizer skips it, the parameter stays", not moves_after(None), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Autograd keeps the forward values that gradient formulas need (activations), and
#   `backward()` *adds* into `.grad` until you zero it.
# - Backward of a linear layer is two matmuls, $\nabla_W = X^\top G$ and
#   $\nabla_X = G W^\top$, each as large as the forward one: backward ≈ 2× forward, so
#   training ≈ $6ND$ (the first layer skips $\nabla_X$).
# - The bill: params ($L D^2$) + grads + optimizer state + activations ($B L D$); only the
#   activations grow with the batch.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises (from the self-test)
#
# Fill in the `...`, run the cell and the check under it (it says whether you are right,
# not the answer), then expand the hidden solution.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room (Q1): does the first layer cost as much backward as the others? Why?

# %% [markdown] slideshow={"slide_type": "-"}
# ### Q1. Why does backward cost about twice the FLOPs of the forward pass?
#
# Derive it for one layer $H = XW$, then check it with `count_flops` on a stack of your
# own: three `Linear` layers $96 \to 128 \to 64 \to 32$ at batch 16. Predict the forward
# and backward counts before you run it, once with a data batch as the input and once
# with an input that requires grad.

# %% tags=["exercise"]
q1_forward = ...  # forward FLOPs of the three-layer stack at batch 16
q1_backward_data = ...  # backward FLOPs when the input is a data batch
q1_backward_grad = ...  # backward FLOPs when the input requires grad

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("Q1, forward FLOPs", q1_forward)
check_answer("Q1, backward FLOPs, data input", q1_backward_data)
check_answer("Q1, backward FLOPs, input requires grad", q1_backward_grad)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "claim-S39"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. Forward, each layer is one matmul, 2\*B\*d_in\*d_out FLOPs. Backward needs two of
# the same size: grad_W = X^T G (to update W) and grad_X = G W^T (to pass the gradient
# down): 4\*B\*d_in\*d_out. Summed over the layers: forward 2ND, backward 4ND, total 6ND
# (§3.3). The first layer skips grad_X when its input is data, so there backward is 2 x
# forward - (first layer's forward): 2 \* 720,896 - 393,216 = 1,048,576.
#
# ```python
# from itertools import pairwise
#
# from lecture_utils.nn import Linear
#
# WIDTHS, BATCH = [96, 128, 64, 32], 16
# stack = nn.Sequential(*(Linear(a, b) for a, b in pairwise(WIDTHS)))
# data = count_flops(stack, torch.randn(BATCH, WIDTHS[0]))
# hidden = count_flops(stack, torch.randn(BATCH, WIDTHS[0], requires_grad=True))
# check("forward == sum of 2*B*d_in*d_out", data.forward, sum(matmul_flops(BATCH, a, b) for a, b in pairwise(WIDTHS)))
#
# q1_forward, q1_backward_data, q1_backward_grad = data.forward, data.backward, hidden.backward
# check_answer("Q1, forward FLOPs", q1_forward)
# check_answer("Q1, backward FLOPs, data input", q1_backward_data)
# check_answer("Q1, backward FLOPs, input requires grad", q1_backward_grad)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, for practice after the lecture: the memory bill of a large MLP.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E4.1. How large a batch fits?
#
# A Cruncher with $L = 32$ layers of width $D = 8192$ trains in fp32 with AdamW on an
# 80 GB GPU. How many bytes do parameters, gradients and optimizer state take? How many
# activation bytes does one example add (every matmul keeps its input for backward, the
# first one's included)? What is the largest batch for which the whole bill fits in 80 GB?
# Hint: a model built on the `meta` device has shapes but no memory, and
# `predict_training_memory` needs nothing more.

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e4_1_fixed_bytes = ...  # params + grads + AdamW state, in bytes
e4_1_per_example = ...  # activation bytes one example adds, in bytes
e4_1_b_max = ...  # the largest batch whose whole bill fits in 80 GB (a count)

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E4.1, params + grads + state (bytes)", e4_1_fixed_bytes)
check_answer("E4.1, activation bytes per example", e4_1_per_example)
check_answer("E4.1, largest batch", e4_1_b_max)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. N = 32 \* 8192^2 + 8192 = 2.15B parameters: 8.59 GB each for params and grads,
# 17.2 GB for AdamW's m and v, 34.4 GB in all. One example saves (L + 1) \* D = 270,336
# floats: 1.08 MB. 45.6 GB are left, so B = 42,206 fits. The notes' B\*L\*D (1.05 MB per
# example) says 43,525, which needs 1.4 GB more than the GPU has. (The peak of a real step
# is lower than this bill, since gradients and activations take turns, but a real step also
# needs the cuBLAS workspace and the allocator's slack: keep a margin.)
#
# ```python
# from lecture_utils.training_memory import mlp_activation_bytes, predict_training_memory
#
# BUDGET, QL, QD = 80e9, 32, 8192
# with torch.device("meta"):
#     big = Cruncher(QD, QL)
# fixed = predict_training_memory(big, optimizer="adamw").total
# per_example = mlp_activation_bytes(n_layers=QL, width=QD, batch=1)  # (L + 1) * D * 4
# b_max = int((BUDGET - fixed) // per_example)
# check("b_max fits, b_max + 1 does not",
#       (fixed + b_max * per_example <= BUDGET, fixed + (b_max + 1) * per_example > BUDGET), (True, True))
#
# e4_1_fixed_bytes, e4_1_per_example, e4_1_b_max = fixed, per_example, b_max
# check_answer("E4.1, params + grads + state (bytes)", e4_1_fixed_bytes)
# check_answer("E4.1, activation bytes per example", e4_1_per_example)
# check_answer("E4.1, largest batch", e4_1_b_max)
# ```
#
# </details>
