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
# # 08 · The training loop: six lines, and what production adds to them
#
# The earlier notebooks built the pieces; this one puts them together (§8, §8.1–§8.3, the
# memory table of §1.2): the loss and the notes' six-line loop on the
# course's tiny GPT; each production piece written here and shown doing its job (LR
# schedule, gradient clipping, validation, the full step); randomness (§8.1); a bit-exact
# resume from a checkpoint (§8.2); mixed precision and its 16 bytes per parameter (§8.3,
# §1.2); and `lecture_utils.train.Trainer`, built from these functions, with its MFU.
#
# Cells that start with `# @save lecture_utils/...` are lesson code: edit and re-run them;
# `make export` copies them into the package, which the `Trainer` imports. A `✓` line is
# an assertion; `[measured]` lines depend on the machine. Training runs on the CPU so the
# recorded outputs are the same everywhere; GPU cells say so and are skipped elsewhere.

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes.** Corrections this notebook makes to the lecture notes, each
# > shown (and checked) where linked:
# >
# > - `optimizer.zero_grad(set_to_none=True)` is not an optimisation to opt into: it has been
# >   `zero_grad`'s default since PyTorch 2.0: [§8 The training loop](#§8-The-training-loop).
# > - The notes' checkpoint (model, optimizer, step, `torch.get_rng_state()`) does not resume a
# >   run: the sampler's generator, the numpy, python and CUDA RNG states are missing and the
# >   write is not atomic, so the resumed losses differ from the uninterrupted run's:
# >   [What the notes' checkpoint misses](#What-the-notes'-checkpoint-misses).
# > - "Reductions stay fp32" under autocast holds on CUDA; on the CPU softmax and layer norm
# >   *return* bf16 after a bf16 matmul, while their kernels still accumulate in fp32:
# >   [§8.3 Mixed precision](#§8.3-Mixed-precision).

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes (continued).**
# >
# > - Autocast's bf16 weight copies are not per-op temporaries: with `cache_enabled=True`
# >   they live for the whole autocast region (about 2 bytes per parameter more at the
# >   peak): [§1.2 Bytes per parameter](#§1.2-Bytes-per-parameter:-mixed-precision-still-costs-16).
# > - "GPT-2 small, 124M": 123.6M is the count without the token and position tables; the
# >   course's untied `gpu` config (vocabulary 50304) has 163,026,432 parameters: section
# >   "§8 The packaged loop: `Trainer`, and its MFU".
# > - The H100's 1979 TFLOP/s is the 2:4 structured-sparsity figure; training time uses the
# >   dense 989.5 TFLOP/s: notebook 03, "Dense versus sparse".

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
import copy
import inspect
import json
import math
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from lecture_utils import check, check_answer, check_raises, cuda_only, measured
from lecture_utils.data import data_dir, get_batch, load_tokens
from lecture_utils.flops import transformer_flops
from lecture_utils.memory import (
    bytes_per_param,
    max_params_that_fit,
    param_breakdown,
    saved_tensor_bytes,
    tensor_bytes,
)
from lecture_utils.models import GPT, get_config, n_params
from lecture_utils.optim import AdamW
from lecture_utils.plots import plot_training_curves
from lecture_utils.train import TrainConfig, Trainer, read_checkpoint, rng_state, seed_everything, set_rng_state

CPU = torch.device("cpu")  # every training demo below runs here, on any machine
train_data = load_tokens(data_dir() / "tokens" / "train.bin")
val_data = load_tokens(data_dir() / "tokens" / "val.bin")
tiny = get_config("tiny")
print(f"train: {len(train_data):,} tokens, val: {len(val_data):,} tokens, vocabulary {tiny.vocab_size}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 The training loop
#
# The loss first. Cross-entropy at a position is $\log \sum_j e^{z_j} - z_{target}$. Written
# as it reads, $e^{z}$ overflows fp32 for logits above about 88; subtracting the largest
# logit first changes nothing mathematically ($\log \sum_j e^{z_j} = m + \log \sum_j e^{z_j - m}$)
# and keeps every exponent $\le 0$:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Cross-entropy first: the naive form overflows fp32 above logits of about 88; subtracting the max fixes it.
# - Then the six-line loop on the tiny GPT: batch, forward, loss, zero_grad, backward, step. Run it live.
# - Everything after this section is added around those six lines, not inside them.

# %%
# @save lecture_utils/nn.py
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over positions of logsumexp(z) - z[target]; logits (..., vocab), targets (...) ids."""
    z = logits.float()  # reductions in fp32, whatever dtype autocast gave the logits
    peak = z.amax(dim=-1, keepdim=True).detach()
    log_sum = (z - peak).exp().sum(dim=-1).log() + peak.squeeze(-1)
    picked = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (log_sum - picked).mean()

# %% [markdown]
# With `get_batch` (notebook 06), the tiny GPT (2 layers, $d_{model} = 64$, vocabulary
# 8192), `AdamW` (notebook 07) and batches of 8 × 64 tokens: ours agrees with the notes'
# `F.cross_entropy` (on flattened logits), also where the naive formula overflows:

# %% slideshow={"slide_type": "subslide"}
batch_size, seq_len, num_steps = 8, 64, 30
vocab_size = tiny.vocab_size

seed_everything(0)
model = GPT(tiny).to(CPU)
optimizer = AdamW(model.parameters(), lr=3e-3)

x, y = get_batch(train_data, batch_size, seq_len, CPU)
with torch.no_grad():
    logits = model(x)
loss_torch = F.cross_entropy(logits.view(-1, vocab_size), y.view(-1))
loss_ours = cross_entropy(logits, y)
check("F.cross_entropy == cross_entropy", loss_ours, loss_torch, rel=1e-6)
huge = torch.tensor([[1000.0, 0.0]])
naive = -(huge.exp() / huge.exp().sum()).log()[0, 0].item()  # e^1000 = inf, inf / inf = nan
check("logits (1000, 0), target 0: the naive -log(softmax) is nan", math.isnan(naive), True)
check("... ours gives the right answer, 0", cross_entropy(huge, torch.tensor([0])).item(), 0.0)
# random logits with variance s^2 cost about ln(V) + s^2 / 2, a bit more than a uniform guess
predicted = math.log(vocab_size) + logits.var().item() / 2
print(f"initial loss {loss_ours.item():.1f}, ln(8192) + var(logits) / 2 = {predicted:.1f}")
check("untrained: loss ≈ ln(8192) + var(logits) / 2 (within 2%)",
      math.isclose(loss_ours.item(), predicted, rel_tol=0.02), True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Now the notes' six lines (get a batch, run the model, compute the loss, clear the old
# gradients, backpropagate, step), run for 30 steps, plus one line to keep the losses:

# %% slideshow={"slide_type": "subslide"}
losses = []
for step in range(num_steps):  # noqa: B007 (the notes' loop, verbatim)
    x, y = get_batch(train_data, batch_size, seq_len, CPU)

    logits = model(x)
    loss = F.cross_entropy(
        logits.view(-1, vocab_size),
        y.view(-1),
    )

    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print(f"loss: step 1 {losses[0]:.2f} -> step {num_steps} {losses[-1]:.2f}")
check("the loss fell by more than 1.5 nats in 30 steps", losses[0] - losses[-1] > 1.5, True)
check("AdamW keeps m and v for every parameter",
      all({"exp_avg", "exp_avg_sq"} <= set(optimizer.state[p]) for p in model.parameters()), True)
optimizer.zero_grad(set_to_none=True)
check("zero_grad(set_to_none=True) frees the gradients (None, not zeros)",
      all(p.grad is None for p in model.parameters()), True)
check("set_to_none=True is zero_grad's default (since PyTorch 2.0)",
      inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# (`set_to_none=True`: one memory write fewer, and the next `backward()` *assigns*; it has
# been `zero_grad`'s default since PyTorch 2.0, so the notes' advice is now written out only
# for clarity.) The
# notes list what production adds to these six lines: seeds, checkpoints, an LR schedule,
# gradient clipping, mixed precision, logging and validation, and OOM recovery (in
# `Trainer`: on CUDA out-of-memory it halves the micro-batch and accumulates twice as
# many, so the effective batch stays the same). One at a time:

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 (continued) Learning-rate schedule: warm-up, then cosine decay
#
# At step 0 Adam's second-moment estimate $v$ rests on a single gradient, so its steps
# are unreliable; a *warm-up* ramps the learning rate linearly from 0. Afterwards a
# *cosine decay* lowers it from `max_lr` to `min_lr` over the rest of the run:
#
# $$\eta_t = \eta_{min} + \tfrac12\left(1 + \cos\left(\pi\,\tfrac{t - t_{warm}}{T - t_{warm}}\right)\right)(\eta_{max} - \eta_{min})$$

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Warm-up because Adam's v rests on one gradient at step 0; then cosine down to min_lr.
# - Point at the figure: max_lr at step 20, (max + min) / 2 at step 110, min_lr from step 200 on.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/train/loop.py
def cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Linear warm-up from 0 to max_lr over warmup_steps, cosine decay to min_lr at
    total_steps, min_lr after. (TrainConfig checks the arguments.)"""
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)  # 0 -> 1 over the decay
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)

# %% [markdown]
# It is pure arithmetic, so the schedule of a 200-step run is plotted without training:

# %% caption="cosine_lr for a 200-step run: linear warm-up to 3e-3 over 20 steps, cosine decay to 3e-4 at step 200, constant after." slideshow={"slide_type": "subslide"}
max_lr, min_lr, warmup, total = 3e-3, 3e-4, 20, 200
steps = list(range(0, 241))
lrs = [cosine_lr(s, max_lr, min_lr, warmup, total) for s in steps]

with plt.rc_context({"font.size": 13}):  # projector-sized; constrained layout keeps the title in
    fig, ax = plt.subplots(figsize=(10, 4), layout="constrained")
    ax.plot(steps, lrs, lw=2)
    ax.axvline(warmup, color="grey", ls=":", lw=1)
    ax.axvline(total, color="grey", ls=":", lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.set_title("cosine_lr: 20 warm-up steps, cosine decay to step 200, then min_lr", loc="left")
    plt.show()

# %% slideshow={"slide_type": "subslide"}
check("step 0: lr = 0", lrs[0], 0.0)
check("half-way through warm-up: max_lr / 2", lrs[10], max_lr / 2, rel=1e-12)
check("end of warm-up: max_lr", lrs[20], max_lr, rel=1e-12)
check("half-way through the decay: (max_lr + min_lr) / 2", lrs[110], (max_lr + min_lr) / 2, rel=1e-12)
check("end of the run: min_lr", lrs[200], min_lr, rel=1e-12)
check("after the end: stays at min_lr", lrs[240], min_lr)
check("never increases after warm-up", all(a >= b for a, b in zip(lrs[20:], lrs[21:], strict=False)), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 (continued) Gradient clipping: what a loss spike does to an update
#
# Now and then a batch produces a gradient far larger than usual (a loss spike), and one
# huge update can undo hours of training. Clipping scales every gradient by
# `max_norm / norm` when their global L2 norm exceeds `max_norm`: the direction is kept,
# the length bounded. (tests/test_train.py checks it against `torch.nn.utils.clip_grad_norm_`.)

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Clipping keeps the direction and bounds the length of the whole update.
# - Run the spike cell: one huge gradient, clipped to max_norm 1.0, and the update stays small.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/train/loop.py
def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """Scale all gradients in place so their global L2 norm is at most max_norm; return the
    norm before clipping. Parameters without a gradient are skipped."""
    assert max_norm > 0, "max_norm <= 0 would zero or flip every gradient"
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # shrink, never grow
    for g in grads:
        g.mul_(coef.to(g.device, g.dtype))
    return total

# %% [markdown] slideshow={"slide_type": "subslide"}
# Simulate a spike on the model trained above: the same batch, once normally and once with
# the loss multiplied by 1000. With a plain gradient step (SGD, learning rate $\eta$) the
# parameter change is $\eta \lVert g \rVert$, so the spike moves the weights 1000 times as
# far as a normal step, while the clipped step moves them exactly $\eta \cdot$ `max_norm`.
# AdamW divides by $\sqrt{v}$ and so partly normalises a single spike away, but the spike
# poisons its *state*: $v$ absorbs $(1 - \beta_2)\, g_{spike}^2$ and stays inflated for
# many steps, shrinking every later update. Both, measured on copies of the model:

# %% slideshow={"slide_type": "subslide"}
def grads_for(model, x, y, scale=1.0):
    model.zero_grad(set_to_none=True)
    (cross_entropy(model(x), y) * scale).backward()


def norm_of(tensors):
    """The global L2 norm of a list of tensors."""
    return torch.linalg.vector_norm(torch.stack([t.norm() for t in tensors])).item()


def step_change(model, optimizer, clip):
    """Apply one spiked step to copies; return (parameter change, sqrt of Adam's v after)."""
    model, optimizer = copy.deepcopy((model, optimizer))  # one deepcopy keeps them linked
    before = [p.detach().clone() for p in model.parameters()]
    grads_for(model, x, y, scale=1000.0)
    if clip:
        clip_grad_norm(model.parameters(), max_norm=1.0)
    optimizer.step()
    change = norm_of([p - b for p, b in zip(model.parameters(), before, strict=True)])
    return change, math.sqrt(norm_of([optimizer.state[p]["exp_avg_sq"] for p in model.parameters()]))


x, y = get_batch(train_data, batch_size, seq_len, CPU, generator=torch.Generator().manual_seed(7))
params = list(model.parameters())
grads_for(model, x, y)
normal_norm = norm_of([p.grad for p in params])
grads_for(model, x, y, scale=1000.0)
spike_norm = clip_grad_norm(params, max_norm=1.0).item()  # returns the norm *before* clipping
clipped_norm = norm_of([p.grad for p in params])
print(f"gradient norm: normal batch ≈ {normal_norm:.1f}, spike ≈ {spike_norm:.0f}, after clipping {clipped_norm:.4f}")
check("the spike's gradient is 1000x the normal one", round(spike_norm / normal_norm, 1), 1000.0)
check("after clipping the global norm is max_norm (an SGD step: lr * max_norm)", round(clipped_norm, 4), 1.0)
adam_free, v_free = step_change(model, optimizer, clip=False)
adam_clip, v_clip = step_change(model, optimizer, clip=True)
print(f"AdamW, one spiked step: parameter change {adam_free:.2g} unclipped vs {adam_clip:.2g} clipped; "
      f"sqrt(||v||) {v_free:.2g} vs {v_clip:.2g}")
check("AdamW: the unclipped spike moves the weights further", adam_free > adam_clip, True)
check("AdamW: the unclipped spike inflates sqrt(||v||) more than 20x", v_free / v_clip > 20, True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 (continued) Validation loss
#
# The training loss is measured on the batch the model is about to learn from: noisy and
# optimistic. The validation loss is on held-out text (the `val` split), on a *fixed* set
# of windows, so two measurements differ only because the model changed. `model.eval()`
# switches off dropout, `torch.no_grad()` keeps no graph, `model.train()` switches back.
#
# From here on the loops (and `Trainer`) compute the loss with `lm_loss`: torch's
# `F.cross_entropy`, which gives our `cross_entropy`'s value (checked above) with a fused
# log-softmax. For backward it keeps one positions × vocabulary tensor (the
# log-probabilities) where ours keeps two (the logits and their exponentials): at this
# notebook's 8 × 64 tokens and 8,192 words, 16 MiB less.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Held-out text on fixed windows, eval mode, no graph: two measurements differ only because the model changed.
# - Then one `train_step` with all the pieces: schedule, clipping, step, validation every few steps.

# %%
# @save lecture_utils/train/loop.py
def lm_loss(logits, targets):
    """Our cross_entropy's value, by F.cross_entropy (fp32, over every position)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def evaluate(model, batches) -> float:
    """Mean loss over (x, y) batches, in eval mode and without building a graph."""
    model.eval()
    with torch.no_grad():
        losses = [lm_loss(model(x), y).item() for x, y in batches]
    model.train()
    return sum(losses) / len(losses)

# %% slideshow={"slide_type": "subslide"}
generator = torch.Generator().manual_seed(10_000)
val_batches = [get_batch(val_data, batch_size, seq_len, CPU, generator=generator) for _ in range(2)]
val_loss = evaluate(model, val_batches)
print(f"validation loss of the six-line model: {val_loss:.2f}")
with torch.no_grad():
    check("under no_grad no graph is built (the loss does not require grad)",
          not cross_entropy(model(x), y).requires_grad, True)
check("the model is back in training mode", model.training, True)
check("the same windows give the same loss, bit for bit", evaluate(model, val_batches) == val_loss, True)
logits = model(x)  # with a graph, as in training
n_by_v = tensor_bytes(logits)  # one fp32 positions x vocabulary tensor
saved_ours, _ = saved_tensor_bytes(lambda z: cross_entropy(z, y), logits)
saved_torch, _ = saved_tensor_bytes(lambda z: lm_loss(z, y), logits)
check("lm_loss == cross_entropy", lm_loss(logits, y), cross_entropy(logits, y), rel=1e-6)
check("one positions x vocabulary fp32 tensor: 8 x 64 x 8192 x 4 bytes = 16 MiB", n_by_v, 16 * 2**20)
check("saved for backward, in such tensors: ours, lm_loss", (saved_ours // n_by_v, saved_torch // n_by_v), (2, 1))
check("30 steps brought the val loss well below ln(8192)", val_loss < math.log(vocab_size) - 1.0, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The step with all the pieces
#
# One optimizer step: the scheduled learning rate, clipping, and *gradient accumulation*
# (each micro-batch's loss divided by their number, so the summed gradients are those of
# the mean loss: a bigger effective batch without more memory). `scaler` is for fp16
# (§8.3). `Trainer` calls this same function for every step.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/train/loop.py
def train_step(model, optimizer, batches, lr: float, clip: float, scaler=None) -> tuple[float, float]:
    """One optimizer step over the micro-batches ``batches`` (a list of (x, y)).
    Returns (mean loss, gradient norm before clipping)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for x, y in batches:
        loss = lm_loss(model(x), y) / len(batches)
        (scaler.scale(loss) if scaler else loss).backward()  # gradients add up over the micro-batches
        total += loss.item()
    if scaler:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
    norm = clip_grad_norm(model.parameters(), clip)
    if scaler:
        scaler.step(optimizer)  # skipped if a gradient overflowed to inf
        scaler.update()
    else:
        optimizer.step()
    return total, norm.item()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.1 Randomness
#
# Randomness hides in parameter initialisation, dropout, batch sampling, data order, and
# CUDA kernels whose reductions are not deterministic. Seeds control the first four:
# `seed_everything(seed)` seeds python, numpy, torch and every CUDA device; the data
# sampler gets its own `torch.Generator`, whose state a checkpoint saves (§8.2). Train
# twice from seed 0 and once from seed 1, ten steps each:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Same seed, same machine, same threads: bitwise the same losses; seed 1 gives other ones.
# - The sampler has its own generator, which is why a checkpoint must save it (next section).

# %% slideshow={"slide_type": "subslide"}
def fresh_run(seed):
    """Model, optimizer and data generator, all from one seed: what a new process builds."""
    seed_everything(seed)
    model = GPT(tiny).to(CPU)
    optimizer = AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    generator = torch.Generator().manual_seed(seed + 1)  # the data order
    return model, optimizer, generator


def short_run(seed, steps=10):
    model, optimizer, generator = fresh_run(seed)
    losses = [train_step(model, optimizer, [get_batch(train_data, batch_size, seq_len, CPU, generator=generator)],
                         lr=3e-3, clip=1.0)[0] for _ in range(steps)]
    return losses, model.state_dict()


losses_a, weights_a = short_run(seed=0)
losses_b, weights_b = short_run(seed=0)
losses_c, weights_c = short_run(seed=1)

check("seed 0 twice: the 10 losses are bitwise equal", losses_a == losses_b, True)
check("seed 0 twice: every weight is bitwise equal",
      all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a), True)
check("seed 0 vs seed 1: all 10 losses differ", all(a != c for a, c in zip(losses_a, losses_c, strict=True)), True)
check("seed 0 vs seed 1: every weight tensor differs",
      not any(torch.equal(weights_a[k], weights_c[k]) for k in weights_a), True)
check("both seeds learn (loss fell by > 0.5)", min(losses_a[0] - losses_a[-1], losses_c[0] - losses_c[-1]) > 0.5,
      True)
# "bitwise" holds on one machine with one thread count: float addition is not associative
check("(0.1 + 0.2) + 0.3", (0.1 + 0.2) + 0.3, 0.6000000000000001)
check("0.1 + (0.2 + 0.3)", 0.1 + (0.2 + 0.3), 0.6)

# %% [markdown] slideshow={"slide_type": "subslide"}
# So another thread count, or a GPU kernel that accumulates with `atomicAdd` (on CUDA
# `index_add_`, `scatter_add_` and `index_put_(accumulate=True)`, which torch's
# `use_deterministic_algorithms` docs list as nondeterministic), changes the last bits.
# `seed_everything(seed, deterministic=True)` calls `torch.use_deterministic_algorithms(True)`:
# torch picks deterministic kernels or raises where none exists, at some cost in speed. On
# the CPU the kernels here are deterministic already, so nothing in this course raises; what
# the flag does change on the CPU is `torch.empty`: with
# `torch.utils.deterministic.fill_uninitialized_memory` (on by default) memory that was
# never written reads as NaN (integers: their largest value), the same loudly wrong value
# every run instead of leftover bytes. The flag is global, so the cell turns it off again:

# %% slideshow={"slide_type": "subslide"}
check("deterministic algorithms are off by default", not torch.are_deterministic_algorithms_enabled(), True)
torch.use_deterministic_algorithms(True)
try:
    check("use_deterministic_algorithms(True) turned them on", torch.are_deterministic_algorithms_enabled(), True)
    check("torch.empty(4) in deterministic mode: all NaN", torch.empty(4).isnan().all().item(), True)
    check("torch.empty(2, dtype=torch.long): int64's largest value", torch.empty(2, dtype=torch.long).tolist(),
          [2**63 - 1] * 2)
    losses_det, weights_det = short_run(seed=0)
    check("seed 0 in deterministic mode: the same 10 losses, bit for bit", losses_det == losses_a, True)
    check("... and the same weights", all(torch.equal(weights_a[k], weights_det[k]) for k in weights_a), True)
    if cuda_only(device, "a CUDA kernel that deterministic mode refuses (bincount with weights)"):
        counts = torch.tensor([0, 1, 1], device="cuda")
        try:  # an atomicAdd histogram: torch's docs list it as raising in deterministic mode
            torch.bincount(counts, weights=torch.ones(3, device="cuda"))
            measured("CUDA bincount with weights, deterministic mode", "ran (a deterministic kernel in this torch)", per_device=True)
        except RuntimeError as err:
            measured("CUDA bincount with weights, deterministic mode", f"raises RuntimeError: {str(err)[:60]}", per_device=True)
finally:
    torch.use_deterministic_algorithms(False)
check("use_deterministic_algorithms(False) turned them off again (the flag is global)",
      not torch.are_deterministic_algorithms_enabled(), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.2 Checkpointing
#
# Long runs crash. A checkpoint must hold everything the next step depends on: the
# weights, **the optimizer state** (Adam's $m$ and $v$), the step, and **every RNG state**
# (python, numpy, torch, CUDA and the data sampler's: `rng_state`); without them the loss
# curve shows a seam. The file is written to a temporary name, flushed to disk and renamed
# over the old one, so a crash *during* the save leaves the old checkpoint intact; it is
# read with `torch.load(weights_only=True)` (in `read_checkpoint`, which also turns a bad
# file into one clear error), which never executes pickled code.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - List what the next step reads: weights, m and v, the step, every RNG; write to a temp file, fsync, rename.
# - Show the figure: the resumed run's dots sit on the uninterrupted curve; the notes' checkpoint drifts off (and looks better).
# - Then the safety checks: truncated file reported, pickled function refused.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/train/checkpoint.py
def save_checkpoint(path, model, optimizer, step: int, *, generator=None, **extra) -> Path:
    """Save model, optimizer, step, every RNG state and ``extra`` (plain data) atomically."""
    path = Path(path)
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step),
               "rng": rng_state(generator), "extra": extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())  # the bytes are on disk before the rename
    os.replace(tmp, path)  # atomic: a reader sees the old file or the new one, never half
    folder = os.open(path.parent, os.O_RDONLY)
    os.fsync(folder)  # and the rename itself survives a power cut
    os.close(folder)
    return path


def load_checkpoint(path, model, optimizer, *, generator=None) -> int:
    """Restore model, optimizer and every RNG state from ``path``; return the step."""
    payload = read_checkpoint(path)  # torch.load(weights_only=True): tensors and plain data only
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    set_rng_state(payload["rng"], generator)
    return payload["step"]

# %% [markdown] slideshow={"slide_type": "subslide"}
# The experiment: the loop below (schedule, clipping, validation every 5 steps, a log
# record per step) runs 30 steps and writes a checkpoint after step 15 on its way (what a
# run that crashed at step 16 leaves on disk). Then *everything in memory is thrown away*:
# a new model, optimizer and generator from a *different* seed load the checkpoint and
# train steps 16–30.

# %% slideshow={"slide_type": "subslide"}
MAX_LR, MIN_LR, WARMUP, TOTAL, CLIP, VAL_EVERY = 3e-3, 3e-4, 5, 30, 1.0, 5


def train(model, optimizer, generator, start, stop, log):
    for step in range(start, stop):
        lr = cosine_lr(step, MAX_LR, MIN_LR, WARMUP, TOTAL)
        batch = get_batch(train_data, batch_size, seq_len, CPU, generator=generator)
        loss, norm = train_step(model, optimizer, [batch], lr, CLIP)
        log.append({"step": step + 1, "loss": loss, "lr": lr, "grad_norm": norm})
        if (step + 1) % VAL_EVERY == 0:
            log[-1]["val_loss"] = evaluate(model, val_batches)


workdir = Path(tempfile.mkdtemp(prefix="lecture08-"))
ckpt_path = workdir / "checkpoint.pt"
CRASH = 15

model, optimizer, generator = fresh_run(seed=0)
log_a = []
train(model, optimizer, generator, 0, CRASH, log_a)
save_checkpoint(ckpt_path, model, optimizer, CRASH, generator=generator, note="after step 15")
notes_ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": CRASH,
              "rng_state": torch.get_rng_state()}  # the notes' checkpoint, for comparison below
torch.save(notes_ckpt, workdir / "notes_checkpoint.pt")
train(model, optimizer, generator, CRASH, TOTAL, log_a)
final_a = copy.deepcopy(model.state_dict())

# the crash: nothing survives but the file
del model, optimizer, generator, notes_ckpt
model, optimizer, generator = fresh_run(seed=1234)  # different init, different data order
step = load_checkpoint(ckpt_path, model, optimizer, generator=generator)
log_b = []
train(model, optimizer, generator, step, TOTAL, log_b)

check("resumed at step", step, CRASH)
check("the checkpoint holds every RNG state", sorted(read_checkpoint(ckpt_path)["rng"]),
      ["cuda", "generator", "numpy", "python", "torch"])
check("steps 16-30: the resumed losses are bitwise the uninterrupted ones",
      [r["loss"] for r in log_b] == [r["loss"] for r in log_a[CRASH:]], True)
check("... and so are the gradient norms and validation losses",
      [(r["grad_norm"], r.get("val_loss")) for r in log_b]
      == [(r["grad_norm"], r.get("val_loss")) for r in log_a[CRASH:]], True)
check("the final weights are bitwise equal", all(torch.equal(model.state_dict()[k], final_a[k]) for k in final_a),
      True)
check("the full run learned: loss fell by more than 1.5", log_a[0]["loss"] - log_a[-1]["loss"] > 1.5, True)
check("validation loss fell too", log_a[4]["val_loss"] - log_a[-1]["val_loss"] > 0.5, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What the notes' checkpoint misses
#
# The notes save the model, the optimizer, the step and `torch.get_rng_state()` with a
# plain `torch.save`, right for their loop (batches from torch's global RNG) but not in
# general: no sampler generator, numpy, python or CUDA RNG state; no atomic write; and
# `torch.load` without `weights_only=True` runs code from the file (the default since
# torch 2.6, under which a numpy RNG state loads only if stored as tensors, as
# `rng_state` does). Resumed into our loop, the notes' checkpoint restarts the sampler,
# which replays batches 1–15; a second resume also drops the optimizer state.

# %% slideshow={"slide_type": "subslide"}
def resume_notes_way(keep_optimizer):
    model, optimizer, generator = fresh_run(seed=1234)
    ckpt = torch.load(workdir / "notes_checkpoint.pt", weights_only=True)
    model.load_state_dict(ckpt["model"])
    if keep_optimizer:
        optimizer.load_state_dict(ckpt["optimizer"])
    torch.set_rng_state(ckpt["rng_state"])
    generator.manual_seed(0 + 1)  # the sampler is not in the file: it starts over
    log = []
    train(model, optimizer, generator, ckpt["step"], TOTAL, log)
    return log


log_notes = resume_notes_way(keep_optimizer=True)
log_no_opt = resume_notes_way(keep_optimizer=False)
check("notes' checkpoint: the first resumed batch is a replay, so its loss differs",
      log_notes[0]["loss"] != log_a[CRASH]["loss"], True)
check("notes' checkpoint: no resumed loss matches the uninterrupted run",
      all(a["loss"] != b["loss"] for a, b in zip(log_notes, log_a[CRASH:], strict=True)), True)
check("without the optimizer state the first resumed loss differs as well",
      log_no_opt[0]["loss"] != log_a[CRASH]["loss"], True)

# %% caption="Training loss against step: the run resumed from save_checkpoint lies on the uninterrupted one, the notes' checkpoint runs drift off it after the crash at step 15." slideshow={"slide_type": "subslide"}
with plt.rc_context({"font.size": 13}):
    fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
    for log, style, label in ((log_a, {"color": "black", "lw": 3, "alpha": 0.35}, "uninterrupted"),
                              (log_b, {"ls": "", "marker": "o", "ms": 4, "color": "C0"},
                               "resumed with save_checkpoint / load_checkpoint"),
                              (log_notes, {"ls": "--", "color": "C1"}, "notes' checkpoint (sampler restarts)"),
                              (log_no_opt, {"ls": ":", "color": "C3"}, "notes' checkpoint without the optimizer state")):
        ax.plot([r["step"] for r in log], [r["loss"] for r in log], label=label, **style)
    ax.axvline(CRASH + 0.5, color="grey", lw=1)
    ax.text(CRASH + 0.7, ax.get_ylim()[1] - 0.2, "crash + resume", va="top")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    fig.legend(loc="outside lower center", ncols=2, frameon=False)  # below the axes, off the curves
    ax.set_title("The resumed run lies on the uninterrupted one, bit for bit", loc="left")
    plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# The blue dots lie exactly on the grey curve: no seam. The other two runs learn along a
# different path, no longer reproducible from the seed, and their loss even looks *better*
# (replayed batches were already learned): that is how a resume bug hides in a loss curve.
# Finally, the safety properties: no temporary file left behind, a truncated file reported
# as such, and pickled Python objects refused, not executed.

# %% slideshow={"slide_type": "subslide"}
check("save_checkpoint leaves no temporary file behind",
      sorted(p.name for p in workdir.iterdir()), ["checkpoint.pt", "notes_checkpoint.pt"])

truncated = workdir / "truncated.pt"
truncated.write_bytes(ckpt_path.read_bytes()[: ckpt_path.stat().st_size // 2])
err = check_raises("a half-written checkpoint", ValueError, read_checkpoint, truncated)
check("... is reported as truncated", "truncated or corrupt" in str(err), True)

hostile = workdir / "hostile.pt"
torch.save({"model": {}, "optimizer": {}, "step": 0, "rng": {}, "hook": print}, hostile)
err = check_raises("a checkpoint holding a pickled function", ValueError, read_checkpoint, hostile)
check("... is refused, not executed", "arbitrary pickled objects" in str(err), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.3 Mixed precision
#
# Mixed precision assigns a precision per operation. In the notes' `torch.autocast`,
# matmuls run in bf16, reductions are supposed to stay fp32, and weights, gradients and
# optimizer state stay fp32. What autocast actually does on the CPU (and on CUDA):

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - What autocast really runs in bf16 on this device: the printed table, not the notes' summary.
# - fp16 underflows small gradients (loss scaling); bf16 has fp32's range and needs none.
# - The number: mixed precision still costs 16 bytes per parameter (2 + 2 + 4 + 4 + 4).

# %% slideshow={"slide_type": "subslide"}
def autocast_dtypes(device_type):
    a = torch.randn(8, 16, device=device_type)
    w = torch.randn(16, 16, device=device_type)
    norm = torch.nn.LayerNorm(16).to(device_type)
    targets = torch.zeros(8, dtype=torch.long, device=device_type)
    with torch.autocast(device_type, dtype=torch.bfloat16):
        h = a @ w
        return {
            "matmul": h.dtype,
            "softmax of the matmul output": h.softmax(dim=-1).dtype,
            "layer norm of the matmul output": norm(h).dtype,
            "F.cross_entropy loss": F.cross_entropy(h, targets).dtype,
            "cross_entropy (ours) loss": cross_entropy(h, targets).dtype,
        }


cpu_dtypes = autocast_dtypes("cpu")
for op, dtype in cpu_dtypes.items():
    print(f"  {op:<38} {dtype}")
check("CPU autocast: the matmul runs in bf16", cpu_dtypes["matmul"], torch.bfloat16)
check("CPU autocast: the loss comes out fp32", cpu_dtypes["F.cross_entropy loss"], torch.float32)
check("CPU autocast: softmax and layer norm follow their bf16 input",
      (cpu_dtypes["softmax of the matmul output"], cpu_dtypes["layer norm of the matmul output"]),
      (torch.bfloat16, torch.bfloat16))
check("our cross_entropy always reduces in fp32", cpu_dtypes["cross_entropy (ours) loss"], torch.float32)

if cuda_only(device, "the CUDA autocast dtype list"):
    gpu_dtypes = autocast_dtypes("cuda")
    assert gpu_dtypes["matmul"] == torch.bfloat16
    assert gpu_dtypes["softmax of the matmul output"] == torch.float32
    assert gpu_dtypes["layer norm of the matmul output"] == torch.float32
    assert gpu_dtypes["F.cross_entropy loss"] == torch.float32
    measured("CUDA autocast dtypes", ", ".join(f"{k}: {v}" for k, v in gpu_dtypes.items()), per_device=True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Which ops autocast keeps in fp32 is a per-device list: on CUDA softmax, layer norm,
# `exp`, `sum` and the losses, as the notes say; on the CPU (torch 2.13) only a few, the
# losses among them, so softmax and layer norm *return* bf16 after a matmul. Inside, their
# kernels still accumulate in fp32 (torch's "opmath" type), which is what the notes mean by
# "accumulate in fp32"; only the stored output is bf16. Two sums of 10,000 bf16 numbers show
# it (a bf16 accumulator would stall at 256). Our `cross_entropy` casts its logits to fp32
# itself so that its output is fp32 too.

# %%
check("a bf16 sum of 10,000 ones accumulates in fp32 (10,000 rounded to bf16)",
      torch.ones(10_000, dtype=torch.bfloat16).sum().item(), 9984.0)
check("a bf16 softmax over 10,000 zeros: each 1/10,000 (fp32 denominator)",
      torch.softmax(torch.zeros(10_000, dtype=torch.bfloat16), 0)[0].item(), 1e-4, rel=4e-3)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why fp16 needs loss scaling and bf16 does not
#
# fp16 has 5 exponent bits: its smallest positive (subnormal) number is about
# $6 \times 10^{-8}$ ($2^{-24}$); a value below half of it ($2^{-25} \approx 3 \times 10^{-8}$)
# rounds to 0, one just above rounds up to $6 \times 10^{-8}$. Small gradients do get that small.
# bf16 has fp32's 8 exponent bits, so it represents the same range as fp32 (with only 7
# mantissa bits). A gradient of $10^{-8}$:

# %% slideshow={"slide_type": "subslide"}
check("bf16: 1e-8 survives (to 3 digits)", torch.tensor(1e-8).bfloat16().item(), 1e-8, rel=4e-3)
check("fp16's smallest subnormal", torch.finfo(torch.float16).smallest_normal * 2**-10, 2**-24)
check("fp16: 3e-8 rounds up to 2^-24, 2.9e-8 rounds to 0",
      (torch.tensor(3e-8).half().item(), torch.tensor(2.9e-8).half().item()), (2**-24, 0.0))
# a backward pass in fp16: the weight's gradient is x * upstream, all tiny
w16 = torch.ones(4, dtype=torch.float16, requires_grad=True)
x16 = torch.full((4,), 1e-4, dtype=torch.float16)
(w16 * x16 * 1e-4).sum().backward()  # d/dw = 1e-8 per element
check("fp16 backward: the gradient is all zeros", w16.grad.abs().max().item(), 0.0)

# loss scaling: multiply the loss by 2**14, backpropagate, divide in fp32 before the step
# (in this toy the whole graph is fp16, so the scaled loss itself must stay below fp16's
# largest number 65504 and 2**16 = 65536 would overflow; with an fp32 loss, as under
# autocast, torch.amp.GradScaler starts at 2**16 and halves it only when gradients overflow)
check("GradScaler's default initial scale (fp32 loss)", torch.amp.GradScaler("cpu").get_scale(), 65536.0)
scale = 2.0**14
w16.grad = None
((w16 * x16 * 1e-4).sum() * scale).backward()
unscaled = w16.grad.float() / scale
check("fp16 backward with the loss scaled by 2^14: the gradient survives", unscaled, torch.full((4,), 1e-8),
      rel=2e-3)
# bf16 needs none of it
wbf = torch.ones(4, dtype=torch.bfloat16, requires_grad=True)
(wbf * x16.bfloat16() * 1e-4).sum().backward()
check("bf16 backward without scaling: the gradient survives", wbf.grad.float(), torch.full((4,), 1e-8), rel=1e-2)

# %% [markdown] slideshow={"slide_type": "subslide"}
# `torch.amp.GradScaler` automates this: it scales the loss, divides the gradients back
# before the step (`unscale_`, which `train_step` calls before clipping), skips a step
# whose gradients overflowed, and adjusts the factor as it goes. `Trainer` passes one to
# `train_step` for `precision="fp16"`; bf16 (the default on CUDA) needs none: same 2
# bytes, no scaling machinery, at the cost of a coarser mantissa.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### FP8: two formats, and one scale per tensor
#
# The notes' §8.3 mentions FP8 training (H100 and later, through NVIDIA's Transformer
# Engine). Notebook 02's dtype table (§2.1, "The role each dtype plays in training") has its
# two formats: **e4m3** (4 exponent and 3 mantissa bits, largest value 448) for the forward
# pass's weights and activations, where precision matters more, and **e5m2** (5 and 2,
# largest 57344) for the gradients of the backward pass, whose values span more range. Both
# have far too little range for raw values, so FP8 recipes keep one fp32 **scale per
# tensor**: scale = format max / amax (the tensor's largest |value|; Transformer Engine takes
# it from a history of recent steps), multiply before the cast, divide after the matmul.
# Activations around $10^{-4}$ and gradients around $10^{-6}$, cast and cast back on the CPU:

# %% slideshow={"slide_type": "subslide"}
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
check("e4m3 (forward: weights, activations): largest value", torch.finfo(E4M3).max, 448.0)
check("e5m2 (backward: gradients): largest value", torch.finfo(E5M2).max, 57344.0)
check("mantissa bits of e4m3, e5m2 (eps = 2^-bits)",
      (-math.log2(torch.finfo(E4M3).eps), -math.log2(torch.finfo(E5M2).eps)), (3.0, 2.0))


def fp8_round_trip(x, dtype, scaled):
    """x cast to fp8 and back; scaled: first multiply by max / amax, so |x|'s largest maps to the format's max."""
    scale = torch.finfo(dtype).max / x.abs().max() if scaled else torch.tensor(1.0)
    return (x * scale).to(dtype).float() / scale


def rel_error(x, approx):
    return ((x - approx).norm() / x.norm()).item()


g8 = torch.Generator().manual_seed(0)
acts = torch.randn(1000, generator=g8) * 1e-4
grads8 = torch.randn(1000, generator=g8) * 1e-6
for what, x, fmt8 in (("activations ~1e-4 in e4m3", acts, E4M3), ("gradients ~1e-6 in e5m2", grads8, E5M2)):
    check(f"{what}, unscaled: fraction flushed to 0", (fp8_round_trip(x, fmt8, scaled=False) == 0).float().mean().item(),
          1.0)
    check(f"{what}, unscaled: relative error", rel_error(x, fp8_round_trip(x, fmt8, scaled=False)), 1.0)
check("activations in e4m3 with a per-tensor scale: relative error (3 decimals)",
      round(rel_error(acts, fp8_round_trip(acts, E4M3, scaled=True)), 3), 0.028)
check("gradients in e5m2 with a per-tensor scale: relative error (3 decimals)",
      round(rel_error(grads8, fp8_round_trip(grads8, E5M2, scaled=True)), 3), 0.052)
# the same scaled tensor in both formats: e4m3's extra mantissa bit halves the error
check("e5m2 / e4m3 relative error on the same scaled activations (1 decimal)",
      round(rel_error(acts, fp8_round_trip(acts, E5M2, scaled=True))
            / rel_error(acts, fp8_round_trip(acts, E4M3, scaled=True)), 1), 1.9)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A few percent per element is the price of 8 bits; the scale is what keeps it a few percent
# rather than 100%. The matmul itself then accumulates in fp32 or higher on the tensor
# cores, and the master weights and optimizer state stay fp32 as in the bf16 recipes below.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### §1.2 Bytes per parameter: mixed precision still costs 16
#
# fp32 AdamW pays 4 bytes each for weights, gradient, $m$ and $v$: 16 per parameter. Mixed
# precision (§1.2) pays bf16 weights (2) + bf16 gradients (2) + fp32 master (4) + $m$ (4) +
# $v$ (4) = 16, and `torch.autocast` keeps fp32 weights and gradients (4 + 4 + 4 + 4). Its
# bf16 weight copies are not counted here but are not free: with the default
# `cache_enabled=True` each weight's cast is cached for the whole autocast region, and the
# copies saved for backward live until backward, about 2 bytes per parameter more at the
# peak. Both measured after one step of the tiny GPT:

# %% slideshow={"slide_type": "subslide"}
def per_param(parts, n):
    """Bytes per parameter of each part ({name: tensors})."""
    return {name: sum(t.numel() * t.element_size() for t in tensors) / n for name, tensors in parts.items()}


def adam_parts(optimizer, params):
    return {"adam m": [optimizer.state[p]["exp_avg"] for p in params],
            "adam v": [optimizer.state[p]["exp_avg_sq"] for p in params]}


check("autocast caches its weight casts by default (cache_enabled=True)", torch.is_autocast_cache_enabled(), True)
seed_everything(0)
x, y = get_batch(train_data, batch_size, seq_len, CPU)

# torch.autocast: fp32 weights, bf16 matmuls
model_ac = GPT(tiny).to(CPU)
params_ac = list(model_ac.parameters())
n = sum(p.numel() for p in params_ac)
opt_ac = AdamW(params_ac, lr=1e-3)
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = cross_entropy(model_ac(x), y)
loss.backward()
opt_ac.step()
measured_ac = per_param({"weights": params_ac, "gradients": [p.grad for p in params_ac],
                         **adam_parts(opt_ac, params_ac)}, n)
print(f"tiny GPT: {n:,} parameters")
check("autocast: per-part bytes / param == param_breakdown('autocast_bf16_adamw')", measured_ac,
      {k: float(v) for k, v in param_breakdown("autocast_bf16_adamw").items()})
check("autocast: total", sum(measured_ac.values()), float(bytes_per_param("autocast_bf16_adamw")))

# bf16 weights + fp32 master copy
model_bf = GPT(tiny).to(CPU, torch.bfloat16)
params_bf = list(model_bf.parameters())
master = [p.detach().float().requires_grad_() for p in params_bf]
opt_master = AdamW(master, lr=1e-3)
cross_entropy(model_bf(x), y).backward()
for m, p in zip(master, params_bf, strict=True):
    m.grad = p.grad.float()  # a transient fp32 copy, freed right after the step
opt_master.step()
measured_bf = per_param({"weights (bf16)": params_bf, "gradients (bf16)": [p.grad for p in params_bf],
                         "master weights": master, **adam_parts(opt_master, master)}, n)
for m, p in zip(master, params_bf, strict=True):
    m.grad = None
    with torch.no_grad():
        p.copy_(m)  # the bf16 weights follow the fp32 master
check("bf16 + master: 2 + 2 + 4 + 4 + 4 == param_breakdown('mixed_bf16_adamw')", measured_bf,
      {k: float(v) for k, v in param_breakdown("mixed_bf16_adamw").items()})
check("bf16 + master: total, the same 16 as fp32", sum(measured_bf.values()), float(bytes_per_param("fp32_adamw")))

# So §1.2's answer does not depend on the recipe: at 16 bytes per parameter an 80 GB H100
# holds the training state of 5B parameters; 8 of them replicated (plain data parallel)
# still 5B; sharded perfectly across the 8 (ZeRO / FSDP) 40B. All before one activation.
for recipe in ("fp32_adamw", "mixed_bf16_adamw", "autocast_bf16_adamw"):
    check(f"{recipe}: one 80 GB GPU", max_params_that_fit(80e9, recipe=recipe), 5_000_000_000)
check("8 GPUs, replicated", max_params_that_fit(80e9, n_gpus=8), 5_000_000_000)
check("8 GPUs, sharded", max_params_that_fit(80e9, n_gpus=8, sharded=True), 40_000_000_000)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Mixed precision saves compute time and activation memory, not optimizer state.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 The packaged loop: `Trainer`, and its MFU
#
# `lecture_utils.train.Trainer` runs this notebook's `train_step`, `cosine_lr`,
# `clip_grad_norm`, `evaluate` and `save_checkpoint` (the package's copies) with the
# machinery a real run needs: autocast, DDP and ZeRO-1, OOM recovery, `torch.compile`,
# MFU, and one JSON line per step in `log.jsonl`. From a shell (`--help` lists every
# field of `TrainConfig`):
#
# ```
# python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny --ckpt-every 50
# python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny --resume
# ```
#
# (The test suite kills such a run with SIGKILL mid-way and checks that `--resume` finishes
# it bit for bit like an uninterrupted run.) In-process, 15 steps on the CPU. Each record
# also holds the step's throughput and MFU: the FLOPs of a step are three times the exact
# forward count of notebook 03 (backward ≈ 2 × forward) times the batch; on the CPU the
# denominator is the best matmul rate `Trainer` measured here at the start of the run.
# Since that count is a formula, not `FlopCounterMode`, `Trainer` builds the GPT with fused
# attention (`attention="sdpa"`: the same logits, but no score matrix kept for backward).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - The Trainer imports this notebook's functions; show the two shell lines (train, resume).
# - Run the 15-step CPU run; point at FLOPs per step (about 2.0 GFLOP) and the MFU line, then the curves figure.

# %% slideshow={"slide_type": "subslide"}
cfg = TrainConfig(config="tiny", steps=15, batch_size=8, seq_len=64, lr=3e-3, min_lr=3e-4, warmup=3,
                  val_every=5, val_batches=2, device="cpu", precision="fp32", optimizer="lecture", seed=0)
trainer = Trainer(cfg, workdir / "trainer", progress=False, echo=print)
records = trainer.run()

check("one record per step", [r["step"] for r in records], list(range(1, 16)))
check("validation at steps 5, 10, 15", [r["step"] for r in records if "val_loss" in r], [5, 10, 15])
check("log.jsonl has the same 15 lines", len((workdir / "trainer" / "log.jsonl").read_text().splitlines()), 15)
check("the checkpoint is at step 15", read_checkpoint(workdir / "trainer" / "checkpoint.pt")["step"], 15)
check("the loss fell by more than 1.0", records[0]["loss"] - records[-1]["loss"] > 1.0, True)
check("warm-up: lr at the first three steps", [r["lr"] for r in records[:3]], [0.0, 1e-3, 2e-3])
flops_per_step = 3 * transformer_flops(**tiny.flops_kwargs(seq_len)) * batch_size
check("Trainer's GPT runs F.scaled_dot_product_attention", trainer.model_cfg.attention, "sdpa")
check("FLOPs per step = 3 x forward x batch", trainer.flops_per_step, flops_per_step)
check("... about 2.0 GFLOP for the tiny GPT at 8 x 64", flops_per_step, 1_962_934_272)
later = records[3:]  # the first steps include one-off costs
measured("peak the MFU divides by (a measured matmul on a CPU)", trainer.peak / 1e9, "GFLOP/s")
measured("tokens/s (median of steps 4-15)", statistics.median(r["tokens_per_s"] for r in later), "tokens/s")
measured("MFU (median of steps 4-15)", statistics.median(r["mfu"] for r in later))

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same run as curves, read back from its `log.jsonl` (one JSON object per step) by
# `lecture_utils.plots.plot_training_curves`: the training loss every step, the validation
# loss every 5 steps, the learning rate's warm-up and cosine decay, and the measured
# throughput (machine-dependent, so nothing checks it). For a run of your own,
# `python -m lecture_utils.train plot OUT` draws the same three panels into `OUT/curves.png`.

# %% caption="The Trainer's 15-step CPU run read back from log.jsonl: training and validation loss, learning rate and tokens per second against step." slideshow={"slide_type": "subslide"}
logged = [json.loads(line) for line in (workdir / "trainer" / "log.jsonl").read_text().splitlines()]
check("log.jsonl: one line per step, the same losses the trainer returned",
      [r["loss"] for r in logged] == [r["loss"] for r in records], True)
fig = plot_training_curves(workdir / "trainer")
check("the loss panel draws those losses", list(fig.axes[0].lines[0].get_ydata()) == [r["loss"] for r in records],
      True)
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# On a GPU: the `gpu` config (GPT-2 small's shape: 12 layers, width 768; untied with the
# vocabulary padded to 50304 it has 163,026,432 parameters, 123.6M without the token and
# position tables, the $N$ of $6ND$), bf16 autocast and torch's fused AdamW,
# 10 steps of 8 × 1024 tokens, against the GPU's dense bf16 peak. Then the scratch folder
# of this notebook's checkpoints is removed.

# %% slideshow={"slide_type": "subslide"}
with torch.device("meta"):  # shapes only, no memory
    gpt2_shape = GPT(get_config("gpu"))
check("gpu config: parameters (untied, vocab 50304)", n_params(gpt2_shape), 163_026_432)
check("gpu config: without the token and position tables", n_params(gpt2_shape, non_embedding=True), 123_606_528)
if cuda_only(device, "GPT-2 small in bf16 with fused AdamW"):
    gpu_cfg = TrainConfig(config="gpu", steps=10, batch_size=8, seq_len=1024, warmup=2, val_every=0,
                          device="cuda", precision="bf16", optimizer="fused", seed=0)
    gpu_trainer = Trainer(gpu_cfg, workdir / "gpu", progress=False, echo=lambda message: None)
    gpu_records = gpu_trainer.run()
    assert len(gpu_records) == 10 and all(math.isfinite(r["loss"]) for r in gpu_records)
    assert min(r["loss"] for r in gpu_records[-3:]) < gpu_records[0]["loss"]
    steady = gpu_records[4:]
    gpu_mfu = statistics.median(r["mfu"] for r in steady)
    assert 0 < gpu_mfu < 1
    measured("gpu config: peak (dense bf16)", gpu_trainer.peak / 1e12, "TFLOP/s", per_device=True)
    measured("gpu config: tokens/s (median of steps 5-10)",
             statistics.median(r["tokens_per_s"] for r in steady), "tokens/s", per_device=True)
    measured("gpu config: MFU (median of steps 5-10)", gpu_mfu, per_device=True)
    measured("gpu config: loss step 1 -> 10", f"{gpu_records[0]['loss']:.2f} -> {gpu_records[-1]['loss']:.2f}", per_device=True)
    del gpu_trainer
    torch.cuda.empty_cache()

shutil.rmtree(workdir)
check("the scratch folder is gone", not workdir.exists(), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - The loop is six lines (batch, forward, loss, `zero_grad`, `backward`, `step`); production
#   adds an LR schedule (warm-up, cosine), gradient clipping, validation, checkpoints,
#   mixed precision and logging around them, not inside them.
# - Same seed, same machine, same thread count: bitwise the same run.
#   `torch.use_deterministic_algorithms(True)` swaps in deterministic kernels or raises
#   where none exists (on CUDA); float addition is not associative, so any other order
#   changes the last bits.
# - A checkpoint must hold everything the next step reads: weights, optimizer state, step,
#   every RNG (the sampler's generator too), written atomically. Then a resume is bit-exact.
# - Mixed precision: bf16 matmuls, fp32 accumulation, fp32 master weights and optimizer
#   state: still 16 bytes per parameter. fp16 needs loss scaling; bf16 (fp32's range) does
#   not. FP8 uses e4m3 forward, e5m2 for gradients, and one scale per tensor.
# - MFU = (3 × forward FLOPs × tokens per step) / (time × peak); training days =
#   $6ND$ / (GPUs × dense peak × MFU).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Read the bullets; the one to stress: a checkpoint must hold everything the next step reads.
# - Ask: what two things does bf16 save you from that fp16 needs (loss scaling, underflow)?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...` in each exercise cell, then run it and the check cell below it: the check
# says "not answered yet", right, or not right yet, without giving the answer away. Expand the
# hidden solution cell only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - E8.1 is arithmetic with cosine_lr: tokens per step, steps for a budget, lr in warm-up.
# - E8.2: ask first why the gradients are not in the checkpoint; then the 12 bytes per parameter.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E8.1 Tokens per step, steps for a token budget, and the learning rate
#
# A run trains on batches of 512 sequences of 2048 tokens until it has seen 300 billion
# tokens (GPT-3's budget), with `cosine_lr(step, 6e-4, 6e-5, 2000, total_steps)`. How many
# tokens does one step see? How many steps does the run take (a last, partial step counts
# as one)? What is the learning rate at step 500?

# %% tags=["exercise"]
e8_1_tokens_per_step = ...  # tokens in one step
e8_1_steps = ...  # steps to reach 300e9 tokens, rounded up
e8_1_lr_500 = ...  # learning rate at step 500

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E8.1 tokens per step", e8_1_tokens_per_step)
check_answer("E8.1 steps for 300B tokens", e8_1_steps)
check_answer("E8.1 learning rate at step 500", e8_1_lr_500)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. One step sees 512 * 2048 = 2^20 = 1,048,576 tokens, so 300e9 tokens take
# 300e9 / 2^20 = 286,102.3 steps: 286,103 with the partial last one. Step 500 is a quarter
# of the way through the 2000 warm-up steps, so the learning rate is 6e-4 / 4 = 1.5e-4
# (the cosine part starts only at step 2000).
e8_1_tokens_per_step = 512 * 2048
e8_1_steps = math.ceil(300e9 / e8_1_tokens_per_step)
e8_1_lr_500 = cosine_lr(500, 6e-4, 6e-5, 2000, e8_1_steps)
check("tokens per step == 2**20", e8_1_tokens_per_step, 2**20)
check("the steps cover the budget, one step fewer would not",
      (e8_1_steps * e8_1_tokens_per_step >= 300e9, (e8_1_steps - 1) * e8_1_tokens_per_step < 300e9),
      (True, True))
check("lr at step 500 = max_lr * 500 / 2000", e8_1_lr_500, 6e-4 * 500 / 2000, rel=1e-12)
check_answer("E8.1 tokens per step", e8_1_tokens_per_step)
check_answer("E8.1 steps for 300B tokens", e8_1_steps)
check_answer("E8.1 learning rate at step 500", e8_1_lr_500)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E8.2 What must a checkpoint hold, and how big is it?
#
# (a) A model trained in fp32 with AdamW is checkpointed for an exact resume. How many bytes
# per parameter do the checkpoint's tensors take? (b) How many GB ($10^9$ bytes) is that
# for a 7B model? (c) The notes' checkpoint saves the model, the optimizer, the step and
# `torch.get_rng_state()`. Of these seven, which does it lack for an exact resume in our
# loop: 1 weights, 2 optimizer state, 3 step, 4 torch's CPU RNG, 5 the data sampler's
# generator, 6 the numpy and python RNGs, 7 the CUDA RNG? Answer with the digits in order,
# e.g. `"123"`.

# %% tags=["exercise"]
e8_2_bytes_per_param = ...  # bytes per parameter of the checkpoint's tensors
e8_2_gb_7b = ...  # GB of checkpoint for a 7B model
e8_2_missing = ...  # digits of what the notes' checkpoint lacks, e.g. "123"

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E8.2 (a) checkpoint bytes per parameter", e8_2_bytes_per_param)
check_answer("E8.2 (b) checkpoint of a 7B model (GB)", e8_2_gb_7b)
check_answer("E8.2 (c) what the notes' checkpoint lacks", e8_2_missing)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. (a) 12: the fp32 weights (4) and AdamW's m and v (4 + 4). The gradients (the
# other 4 of the 16 bytes in training memory) are not saved: the next step recomputes them
# from scratch. Measured on the tiny GPT after one step. (b) 12 * 7e9 = 84 GB.
# (c) "567": the sampler's generator, the numpy and python RNGs and the CUDA RNG are
# missing, which is the gap `rng_state` fills (its keys, less torch's own state).
model_q, optimizer_q, generator_q = fresh_run(seed=0)
train(model_q, optimizer_q, generator_q, 0, 1, [])  # one step, so AdamW has its m and v
tensors_q = [*model_q.state_dict().values(),
             *(t for s in optimizer_q.state_dict()["state"].values() for t in s.values()
               if isinstance(t, torch.Tensor))]
e8_2_bytes_per_param = sum(t.numel() * t.element_size() for t in tensors_q) / n_params(model_q)
e8_2_gb_7b = e8_2_bytes_per_param * 7e9 / 1e9
DIGIT = {"generator": "5", "numpy": "6", "python": "6", "cuda": "7"}
e8_2_missing = "".join(sorted({DIGIT[k] for k in rng_state(generator_q) if k != "torch"}))
check("checkpoint bytes / param == weights + m + v of fp32 AdamW",
      e8_2_bytes_per_param, sum(v for k, v in param_breakdown("fp32_adamw").items() if k != "gradients"))
check_answer("E8.2 (a) checkpoint bytes per parameter", e8_2_bytes_per_param)
check_answer("E8.2 (b) checkpoint of a 7B model (GB)", e8_2_gb_7b)
check_answer("E8.2 (c) what the notes' checkpoint lacks", e8_2_missing)
