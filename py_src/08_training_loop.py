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
# §8 of the notes: the core path (about 17 minutes), then "Going deeper" parts.
# Checked runs are on the CPU (the same outputs anywhere); the timed one on your device.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 The training loop
#
# The notes' six lines, in a function, on the course's tiny GPT (`get_batch`: notebook 06,
# `AdamW`: notebook 07):

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: why set the gradients to None instead of zeroing them?

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from lecture_utils import check, measured
from lecture_utils.data import data_dir, get_batch, load_tokens
from lecture_utils.models import GPT, get_config, n_params
from lecture_utils.optim import AdamW
from lecture_utils.progress import progress
from lecture_utils.device import seed_all
from lecture_utils.train import TrainConfig, Trainer, load_checkpoint, save_checkpoint

train_data = load_tokens(data_dir() / "tokens" / "train.bin")
CPU, tiny = torch.device("cpu"), get_config("tiny")  # every run here is on the CPU
batch_size, seq_len, vocab_size = 8, 64, tiny.vocab_size  # tiny: 2 layers, width 64

# %% slideshow={"slide_type": "slide"}
def train(model, optimizer, generator, steps, device=CPU):  # generator: the sampler's (None: torch's global one)
    losses = []
    for _ in progress(range(steps), desc="training"):  # a bar while it runs, none in the stored output
        x, y = get_batch(train_data, batch_size, seq_len, device, generator=generator)

        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, vocab_size), y.view(-1))

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses

# %% slideshow={"slide_type": "-"} tags=["claim-S34"]
model = GPT(tiny)  # (setup() seeded everything with 0)
optimizer = AdamW(model.parameters(), lr=3e-3)
losses = train(model, optimizer, None, steps=30)
print(f"loss: step 1 {losses[0]:.2f} -> step 30 {losses[-1]:.2f}")
check("the loss fell by more than 1.5 nats in 30 steps", losses[0] - losses[-1] > 1.5, True)
optimizer.zero_grad(set_to_none=True)
check("zero_grad(set_to_none=True): every .grad is None, not zeros", {p.grad for p in model.parameters()}, {None})

# %% caption="Training loss of the six-line loop over its 30 steps, from log(8192), a uniform guess." slideshow={"slide_type": "slide"}
fig, ax = plt.subplots(figsize=(10, 3), layout="constrained")
ax.plot(range(1, len(losses) + 1), losses, "o-", lw=2.5)
ax.axhline(math.log(vocab_size), color="0.4", ls=":")
ax.set(xlabel="step", ylabel="training loss (nats)", title="the loop above; dotted: log(8192), a uniform guess")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# `set_to_none=True` frees each `.grad` instead of zeroing it: one memory write fewer, and
# the next `backward()` assigns instead of adding.
#
# **Predict, then measure.** A step costs about $6N$ FLOPs per token: tokens/s × $6N$ over
# notebook 03's peak is the loop's MFU, far below 1 for tiny matmuls. Timed ten steps a call,
# on every core (`loss.item()` waits for each step, so the clock is honest):

# %% tags=["claim-S34"]
from lecture_utils.bench import conditions, mfu_text, peak_flops, time_fn

timed = GPT(tiny).to(device)  # initialised on the CPU, then moved
timed_optimizer = AdamW(timed.parameters(), lr=3e-3)
flops_6nd = 6 * n_params(timed, non_embedding=True) * batch_size * seq_len  # a step's FLOPs: 6N per token
step = time_fn(train, timed, timed_optimizer, torch.Generator().manual_seed(0), 10, device, min_run_time=0.5)
tokens_per_s = 10 * batch_size * seq_len / step.median
achieved, peak = flops_6nd / (batch_size * seq_len) * tokens_per_s, peak_flops(device, "fp32")
measured("the six-line loop, tiny GPT", tokens_per_s / 1e3, "k tokens/s", spread=step)
measured("its MFU by 6ND against the fp32 peak", f"{mfu_text(achieved, peak)} ({peak.source})")
if conditions(step) and peak.flops_per_s:  # launch-bound on a GPU (1e-4 to 0.05), small matmuls on a CPU
    assert (1e-4 if device.type == "cuda" else 0.005) < achieved / peak.flops_per_s < (0.05 if device.type == "cuda" else 0.6)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the loop on a GPU, bound by launches
#
# A model this small does little work per op, so on a GPU each op costs about the same fixed
# time to launch (taken here as 10 µs of Python, dispatch and kernel launch), however little
# it computes. Count the ops of one step (on the CPU: the same ops anywhere), and the step
# time and MFU follow, a prediction for the GPU check to set a measurement beside:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import copy

from lecture_utils.hardware import find_accelerator
from lecture_utils.trace import OpLog

counted = copy.deepcopy(timed).cpu()
with OpLog() as ops:
    train(counted, AdamW(counted.parameters(), lr=3e-3), torch.Generator().manual_seed(0), 1)
launch_bound = flops_6nd / (len(ops.ops) * 10e-6) / find_accelerator("H100").peak("fp32")
check("aten ops in one step (on a GPU, a kernel launch each); the MFU that predicts on an H100 (fp32 peak)",
      (len(ops.ops), round(launch_bound, 4)), (578, 0.0049))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the loss and the production pieces, written out
#
# (`set_to_none=True` has been `zero_grad`'s default since PyTorch 2.0.) The lesson code
# `lecture_utils.train.Trainer` runs (the package's copies of these cells):
# cross-entropy written out, the learning-rate schedule, gradient clipping, validation, and
# the full step with gradient accumulation. Each is shown doing its job.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Cross-entropy
#
# Cross-entropy at a position is $\log \sum_j e^{z_j} - z_{target}$. Written as it reads,
# $e^{z}$ overflows fp32 for logits above about 88; subtracting the largest logit first
# changes nothing mathematically ($\log \sum_j e^{z_j} = m + \log \sum_j e^{z_j - m}$) and
# keeps every exponent $\le 0$:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
# @save lecture_utils/nn.py
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over positions of logsumexp(z) - z[target]; logits (..., vocab), targets (...) ids."""
    z = logits.float()  # reductions in fp32, whatever dtype autocast gave the logits
    peak = z.amax(dim=-1, keepdim=True).detach()
    log_sum = (z - peak).exp().sum(dim=-1).log() + peak.squeeze(-1)
    picked = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (log_sum - picked).mean()

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import math

seed_all(0)
fresh_model = GPT(tiny)
x, y = get_batch(train_data, batch_size, seq_len, CPU)
with torch.no_grad():
    logits = fresh_model(x)
loss_ours = cross_entropy(logits, y)
check("F.cross_entropy == cross_entropy", loss_ours, F.cross_entropy(logits.view(-1, vocab_size), y.view(-1)),
      rel=1e-6)
huge = torch.tensor([[1000.0, 0.0]])
naive = -(huge.exp() / huge.exp().sum()).log()[0, 0].item()  # e^1000 = inf, inf / inf = nan
check("logits (1000, 0), target 0: the naive -log(softmax) is nan", math.isnan(naive), True)
check("... ours gives the right answer, 0", cross_entropy(huge, torch.tensor([0])).item(), 0.0)
# random logits with variance s^2 cost about ln(V) + s^2 / 2, a bit more than a uniform guess
predicted = math.log(vocab_size) + logits.var().item() / 2
print(f"initial loss {loss_ours.item():.1f}, ln(8192) + var(logits) / 2 = {predicted:.1f}")
check("untrained: loss ≈ ln(8192) + var(logits) / 2 (within 2%)",
      math.isclose(loss_ours.item(), predicted, rel_tol=0.02), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Learning-rate schedule: warm-up, then cosine decay
#
# At step 0 Adam's second-moment estimate $v$ rests on a single gradient, so its steps are
# unreliable; a *warm-up* ramps the learning rate linearly from 0. Afterwards a *cosine
# decay* lowers it from `max_lr` to `min_lr` over the rest of the run:
#
# $$\eta_t = \eta_{min} + \tfrac12\left(1 + \cos\left(\pi\,\tfrac{t - t_{warm}}{T - t_{warm}}\right)\right)(\eta_{max} - \eta_{min})$$

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% caption="cosine_lr for a 200-step run: linear warm-up to 3e-3 over 20 steps, cosine decay to 3e-4 at step 200, constant after." slideshow={"slide_type": "skip"} tags=["deeper"]
import matplotlib.pyplot as plt

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
check("step 0: lr = 0", lrs[0], 0.0)
check("half-way through warm-up: max_lr / 2", lrs[10], max_lr / 2, rel=1e-12)
check("end of warm-up: max_lr", lrs[20], max_lr, rel=1e-12)
check("half-way through the decay: (max_lr + min_lr) / 2", lrs[110], (max_lr + min_lr) / 2, rel=1e-12)
check("end of the run and after: min_lr", (lrs[200], lrs[240]), (min_lr, min_lr))
check("never increases after warm-up", all(a >= b for a, b in zip(lrs[20:], lrs[21:], strict=False)), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Gradient clipping: what a loss spike does to an update
#
# Now and then a batch produces a gradient far larger than usual (a loss spike), and one
# huge update can undo hours of training. Clipping scales every gradient by
# `max_norm / norm` when their global L2 norm exceeds `max_norm`: the direction is kept,
# the length bounded. (tests/test_train.py checks it against `torch.nn.utils.clip_grad_norm_`.)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Simulate a spike on the model trained above: the same batch, once normally and once with
# the loss multiplied by 1000. With a plain gradient step (SGD, learning rate $\eta$) the
# parameter change is $\eta \lVert g \rVert$, so the spike moves the weights 1000 times as
# far as a normal step, while the clipped step moves them exactly $\eta \cdot$ `max_norm`.
# AdamW divides by $\sqrt{v}$ and so partly normalises a single spike away, but the spike
# poisons its *state*: $v$ absorbs $(1 - \beta_2)\, g_{spike}^2$ and stays inflated for
# many steps, shrinking every later update. Both, measured on copies of the model:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import copy


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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Validation loss, and the step with all the pieces
#
# The training loss is measured on the batch the model is about to learn from: noisy and
# optimistic. The validation loss is on held-out text (the `val` split), on a *fixed* set
# of windows, so two measurements differ only because the model changed. `model.eval()`
# switches off dropout, `torch.no_grad()` keeps no graph, `model.train()` switches back.
# `lm_loss` is torch's `F.cross_entropy`, our `cross_entropy`'s value with a fused
# log-softmax: for backward it keeps one positions × vocabulary tensor where ours keeps two.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.sizes import tensor_bytes
from lecture_utils.training_memory import saved_tensor_bytes

val_data = load_tokens(data_dir() / "tokens" / "val.bin")
generator = torch.Generator().manual_seed(10_000)
val_batches = [get_batch(val_data, batch_size, seq_len, CPU, generator=generator) for _ in range(2)]
val_loss = evaluate(model, val_batches)
print(f"validation loss of the six-line model: {val_loss:.2f}")
check("the model is back in training mode", model.training, True)
check("the same windows give the same loss, bit for bit", evaluate(model, val_batches) == val_loss, True)
check("30 steps brought the val loss well below ln(8192)", val_loss < math.log(vocab_size) - 1.0, True)
logits = model(x)  # with a graph, as in training
n_by_v = tensor_bytes(logits)  # one fp32 positions x vocabulary tensor
saved_ours, _ = saved_tensor_bytes(lambda z: cross_entropy(z, y), logits)
saved_torch, _ = saved_tensor_bytes(lambda z: lm_loss(z, y), logits)
check("lm_loss == cross_entropy", lm_loss(logits, y), cross_entropy(logits, y), rel=1e-6)
check("saved for backward, in positions x vocabulary fp32 tensors: ours, lm_loss",
      (saved_ours // n_by_v, saved_torch // n_by_v), (2, 1))

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# One optimizer step: the scheduled learning rate, clipping, and *gradient accumulation*
# (each micro-batch's loss divided by their number, so the summed gradients are those of
# the mean loss: a bigger effective batch without more memory). `scaler` is for fp16
# (§8.3). `Trainer` calls this same function for every step.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
one, halves = copy.deepcopy((model, optimizer)), copy.deepcopy((model, optimizer))
loss_one, norm_one = train_step(*one, [(x, y)], lr=1e-3, clip=1e9)
loss_two, norm_two = train_step(*halves, [(x[:4], y[:4]), (x[4:], y[4:])], lr=1e-3, clip=1e9)
check("one batch of 8 or two micro-batches of 4: the same mean loss and gradient norm (to 1e-5)",
      math.isclose(loss_two, loss_one, rel_tol=1e-5) and math.isclose(norm_two, norm_one, rel_tol=1e-5), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.1 Randomness
#
# Randomness hides in five places: initialisation, dropout, batch sampling, data order and
# GPU kernels that add in no fixed order. Seeds fix the first four (`seed_all`: the notes'
# four seeding lines; the sampler gets its own seeded generator).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: which of the five sources can a seed not fix?

# %% slideshow={"slide_type": "slide"}
def fresh(seed, deterministic=False):  # what a new process builds: model, optimizer, data sampler
    seed_all(seed, deterministic)  # deterministic=True: also use_deterministic_algorithms(True)
    model = GPT(tiny)
    return model, AdamW(model.parameters(), lr=3e-3), torch.Generator().manual_seed(seed + 1)


losses_a = train(*fresh(0), steps=5)
check("seed 0 twice: the same 5 losses, bit for bit", train(*fresh(0), steps=5) == losses_a, True)

# %% [markdown] slideshow={"slide_type": "-"}
# Seeds do not fix the fifth: float addition is not associative, so the order in which
# threads add changes the last bits. `torch.use_deterministic_algorithms(True)` swaps in
# deterministic kernels, or raises where there are none; with the mode off, this check fails:

# %% slideshow={"slide_type": "-"} tags=["claim-S36"]
seed_all(0, deterministic=True)  # seeded, then deterministic mode on
err = check("deterministic mode is on: put_, which has no deterministic kernel, raises",
            lambda: torch.zeros(4).put_(torch.tensor([0, 0]), torch.ones(2)), raises=RuntimeError)
seed_all(0)  # the flag is global: off again (seed_all turns it off unless asked)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: float order, deterministic mode on the CPU and on CUDA
#
# Another seed gives another run; deterministic mode gives the same one. "Bit for bit"
# holds on one machine with one thread count: another order of the same additions changes
# the last bits. The docs of `torch.use_deterministic_algorithms` list, for instance,
# `index_add_` on CUDA and `index_put_(accumulate=True)` on the CPU as made deterministic,
# `put_(accumulate=False)` (any device) as raising. On the CPU the kernels used here are deterministic
# already, so the flag changes no loss; what it does change is `torch.empty`: with
# `torch.utils.deterministic.fill_uninitialized_memory` (on by default) memory that was
# never written reads as NaN (integers: their largest value), the same loudly wrong value
# every run instead of leftover bytes. On CUDA, an example of the notes' "atomicAdd
# reductions" that the flag refuses: `bincount` with weights, an `atomicAdd` histogram.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils import cuda_only, measured

check("seed 1: all 5 losses differ", all(a != b for a, b in zip(losses_a, train(*fresh(1), steps=5), strict=True)), True)
check("(0.1 + 0.2) + 0.3", (0.1 + 0.2) + 0.3, 0.6000000000000001)
check("0.1 + (0.2 + 0.3)", 0.1 + (0.2 + 0.3), 0.6)
check("deterministic algorithms are off by default", not torch.are_deterministic_algorithms_enabled(), True)
torch.use_deterministic_algorithms(True)
try:
    check("in deterministic mode: the same 5 losses, bit for bit", train(*fresh(0, deterministic=True), steps=5) == losses_a,
          True)  # fresh() seeds with the mode on
    check("torch.empty(4) in deterministic mode: all NaN", torch.empty(4).isnan().all().item(), True)
    check("torch.empty(2, dtype=torch.long): int64's largest value", torch.empty(2, dtype=torch.long).tolist(),
          [2**63 - 1] * 2)
    if cuda_only(device, "a CUDA kernel that deterministic mode refuses (bincount with weights)"):
        counts = torch.tensor([0, 1, 1], device="cuda")
        try:  # an atomicAdd histogram: torch's docs list it as raising in deterministic mode
            torch.bincount(counts, weights=torch.ones(3, device="cuda"))
            outcome = "ran (a deterministic kernel in this torch)"
        except RuntimeError as err:
            outcome = f"raises RuntimeError: {str(err)[:60]}"
        measured("CUDA bincount with weights, deterministic mode", outcome, per_device=True,
                 ref="bincount-deterministic")
finally:
    torch.use_deterministic_algorithms(False)
check("use_deterministic_algorithms(False) turned them off again (the flag is global)",
      not torch.are_deterministic_algorithms_enabled(), True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.2 Checkpointing
#
# A checkpoint holds what the next step reads: weights, optimizer state (Adam's $m$, $v$),
# step, RNG state. `save_checkpoint` saves it atomically: a crash mid-save leaves the old
# file whole.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: what does the notes' checkpoint leave out? For which samplers does it matter?

# %% [markdown] slideshow={"slide_type": "slide"}
# > **The notes say** (§8.2) save the RNG state: `torch.get_rng_state()`. **In fact** that
# > is only torch's default CPU generator
# > ([torch.get_rng_state](https://pytorch.org/docs/stable/generated/torch.get_rng_state.html)).
# > It suffices for the notes' loop on a CPU; a sampler's own generator, numpy's, Python's
# > and CUDA's (GPU dropout) are not in it. `save_checkpoint` has them all.
#
# A crash after step 5; a new process resumes from each checkpoint:

# %% slideshow={"slide_type": "-"} tags=["claim-S37"]
import tempfile
from pathlib import Path

workdir = Path(tempfile.mkdtemp(prefix="lecture08-"))
model, optimizer, generator = fresh(0)
losses = train(model, optimizer, generator, 5)
save_checkpoint(workdir / "checkpoint.pt", model, optimizer, 5, generator=generator)
losses += train(model, optimizer, generator, 5)

model, optimizer, generator = fresh(1234)  # the crash: a new process, other weights and data order
step = load_checkpoint(workdir / "checkpoint.pt", model, optimizer, generator=generator)
check("save_checkpoint: steps 6-10 after the resume are bitwise the uninterrupted run's",
      (step, train(model, optimizer, generator, 5) == losses[5:]), (5, True))

# %% slideshow={"slide_type": "slide"} tags=["claim-S37"]
model, optimizer, _ = fresh(0)  # the notes' loop: its sampler reads torch's global generator
notes_losses = train(model, optimizer, None, 5)
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 5,
            "rng_state": torch.get_rng_state()}, workdir / "notes_checkpoint.pt")  # the notes' checkpoint
notes_losses += train(model, optimizer, None, 5)

model, optimizer, _ = fresh(1234)  # the crash, a new process
ckpt = torch.load(workdir / "notes_checkpoint.pt")
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])
torch.set_rng_state(ckpt["rng_state"])
check("the notes' checkpoint, the notes' sampler: steps 6-10 bitwise the uninterrupted run's",
      train(model, optimizer, None, 5) == notes_losses[5:], True)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: what the notes' checkpoint misses, the checkpoint written out, and a resume of the production loop
#
# First the gap: the notes' checkpoint of the first run above, whose sampler draws from a
# generator of its own. `torch.get_rng_state()` does not hold it, so after the resume the
# sampler starts over from its seed and replays batches 1-5:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
model, optimizer, generator = fresh(0)
train(model, optimizer, generator, 5)
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 5,
            "rng_state": torch.get_rng_state()}, workdir / "notes_own_generator.pt")
model, optimizer, generator = fresh(1234)  # the crash, a new process; the sampler's generator seeded afresh
ckpt = torch.load(workdir / "notes_own_generator.pt")
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])
torch.set_rng_state(ckpt["rng_state"])
generator.manual_seed(0 + 1)  # the sampler is not in the file: it starts over from its seed
check("the notes' checkpoint, a sampler with its own generator: steps 6-10, no loss matches",
      all(a != b for a, b in zip(train(model, optimizer, generator, 5), losses[5:], strict=True)), True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Then `save_checkpoint` and `load_checkpoint` as the package has them, and the same
# experiment with the production loop: the schedule, clipping, validation every 5
# steps and a log record per step, 30 steps with the crash after step 15. The resumed run's
# losses, gradient norms, validation losses and final weights are bitwise the uninterrupted
# run's; the notes' checkpoint, and the notes' checkpoint without its optimizer state, learn
# along another path. (tests/test_train.py checks that a truncated file and a pickled
# function are refused, and that an interrupted save leaves the old checkpoint intact.)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### `save_checkpoint` and `load_checkpoint`, written out
#
# `rng_state` collects every generator the next step may read: Python's, numpy's, torch's
# CPU and CUDA ones, and the sampler's own. `replace_atomically` (`lecture_utils/files.py`,
# the one place the course writes files that must survive) writes a temporary file beside the
# target, syncs it to disk, renames it over the target and syncs the folder, so that both
# the bytes and the rename survive a power cut: a reader finds the old checkpoint or the new
# one, never half of one. `read_checkpoint` loads with `torch.load(weights_only=True)`, which
# never runs code from the file, and turns a bad file into one clear error.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.files import replace_atomically
from lecture_utils.train import read_checkpoint, rng_state, set_rng_state

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
# @save lecture_utils/train/checkpoint.py
def save_checkpoint(path, model, optimizer, step: int, *, generator=None, **extra) -> Path:
    """Save model, optimizer, step, every RNG state and ``extra`` (plain data) atomically."""
    path = Path(path)
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step),
               "rng": rng_state(generator), "extra": extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    # into a temporary file, synced, renamed over `path`, folder synced: never half a checkpoint
    return replace_atomically(path, lambda f: torch.save(payload, f))


def load_checkpoint(path, model, optimizer, *, generator=None) -> int:
    """Restore model, optimizer and every RNG state from ``path``; return the step."""
    payload = read_checkpoint(path)  # torch.load(weights_only=True): tensors and plain data only
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    set_rng_state(payload["rng"], generator)
    return payload["step"]

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
MAX_LR, MIN_LR, WARMUP, TOTAL, CLIP, VAL_EVERY, CRASH = 3e-3, 3e-4, 5, 30, 1.0, 5, 15


def train_with_schedule(model, optimizer, generator, start, stop, log):
    for step in range(start, stop):
        lr = cosine_lr(step, MAX_LR, MIN_LR, WARMUP, TOTAL)
        batch = get_batch(train_data, batch_size, seq_len, CPU, generator=generator)
        loss, norm = train_step(model, optimizer, [batch], lr, CLIP)
        log.append({"step": step + 1, "loss": loss, "lr": lr, "grad_norm": norm})
        if (step + 1) % VAL_EVERY == 0:
            log[-1]["val_loss"] = evaluate(model, val_batches)


model, optimizer, generator = fresh(0)
log_a = []
train_with_schedule(model, optimizer, generator, 0, CRASH, log_a)
save_checkpoint(workdir / "long.pt", model, optimizer, CRASH, generator=generator, note="after step 15")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": CRASH,
            "rng_state": torch.get_rng_state()}, workdir / "long_notes.pt")
train_with_schedule(model, optimizer, generator, CRASH, TOTAL, log_a)
final_a = copy.deepcopy(model.state_dict())

model, optimizer, generator = fresh(1234)
step = load_checkpoint(workdir / "long.pt", model, optimizer, generator=generator)
log_b = []
train_with_schedule(model, optimizer, generator, step, TOTAL, log_b)
check("resumed: losses, gradient norms and validation losses of steps 16-30 bitwise equal",
      [(r["loss"], r["grad_norm"], r.get("val_loss")) for r in log_b]
      == [(r["loss"], r["grad_norm"], r.get("val_loss")) for r in log_a[CRASH:]], True)
check("the final weights are bitwise equal", all(torch.equal(model.state_dict()[k], final_a[k]) for k in final_a),
      True)


def resume_notes_way(keep_optimizer):
    model, optimizer, generator = fresh(1234)
    ckpt = torch.load(workdir / "long_notes.pt", weights_only=True)
    model.load_state_dict(ckpt["model"])
    if keep_optimizer:
        optimizer.load_state_dict(ckpt["optimizer"])
    torch.set_rng_state(ckpt["rng_state"])
    generator.manual_seed(0 + 1)  # the sampler is not in the file: it starts over
    log = []
    train_with_schedule(model, optimizer, generator, ckpt["step"], TOTAL, log)
    return log


log_notes = resume_notes_way(keep_optimizer=True)
log_no_opt = resume_notes_way(keep_optimizer=False)
check("without the optimizer state the first resumed loss differs as well", log_no_opt[0]["loss"] != log_a[CRASH]["loss"],
      True)

# %% caption="Training loss against step: the run resumed from save_checkpoint lies on the uninterrupted one, the notes' checkpoint runs drift off it after the crash at step 15." slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The blue dots lie exactly on the grey curve: no seam. The other two runs learn along a
# different path, no longer reproducible from the seed, and their loss even looks *better*
# (replayed batches were already learned): that is how a resume bug hides in a loss curve.
# Beside the missing RNG states the notes' `torch.save` is not atomic (a crash mid-write
# leaves half a file), and `torch.load` without `weights_only=True` would run code from the
# file (the default has been `True` since torch 2.6; `rng_state` stores numpy's state as
# tensors so that it loads under it).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8.3 Mixed precision
#
# `torch.autocast` picks a precision per operation: matmuls in bf16, reductions (softmax,
# norms, the loss) accumulated in fp32; weights and optimizer state stay fp32. On this CPU:

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Ask the room: fp16 and bf16 are both 2 bytes; why does only fp16 need loss scaling?

# %% slideshow={"slide_type": "-"} tags=["claim-S38"]
a, w, targets = torch.randn(8, 16), torch.randn(16, 16), torch.zeros(8, dtype=torch.long)
with torch.autocast("cpu", dtype=torch.bfloat16):
    h = a @ w
    loss = F.cross_entropy(h, targets)
check("under autocast: matmul in bf16, loss in fp32", (h.dtype, loss.dtype), (torch.bfloat16, torch.float32))

# %% [markdown] slideshow={"slide_type": "slide"}
# fp16 has 5 exponent bits: below $3 \times 10^{-8}$ a number rounds to 0. *Loss scaling*
# multiplies the loss by $2^k$ and divides the gradients back; bf16 has fp32's 8 exponent
# bits and needs none. A gradient of $10^{-8}$:

# %% slideshow={"slide_type": "-"} tags=["claim-S38"]
grads = {}
for dtype, scale in ((torch.float16, 1), (torch.float16, 2**14), (torch.bfloat16, 1)):
    w = torch.ones(4, dtype=dtype, requires_grad=True)
    (w * torch.full((4,), 1e-4, dtype=dtype) * 1e-4 * scale).sum().backward()  # d/dw = 1e-8 (x scale)
    grads[dtype, scale] = w.grad.float() / scale  # divided back in fp32
check("fp16: the gradient underflows to 0", grads[torch.float16, 1].abs().max().item(), 0.0)
check("fp16, loss scaled by 2^14: it survives", grads[torch.float16, 2**14], torch.full((4,), 1e-8), rel=2e-3)
check("bf16, no scaling: it survives", grads[torch.bfloat16, 1], torch.full((4,), 1e-8), rel=1e-2)

# %% [markdown] slideshow={"slide_type": "slide"}
# FP8 (Hopper, Ada and later GPUs) goes further, with scale factors ("Going deeper").
# Memory (§1.2): the notes' 2 + 2 + 4 + 4 + 4 = 16 bytes has the optimizer read bf16
# gradients (ZeRO). Cast them to fp32 for the step and drop the bf16 ones (Megatron-LM):
# 18, predicted, then measured by the allocator (`Allocated`, notebook 02) on one matrix:

# %% slideshow={"slide_type": "-"} tags=["claim-S6"]
from lecture_utils.allocator import Allocated

predicted = {"bf16 weights": 2, "fp32 gradients": 4, "fp32 master": 4, "m and v": 4 + 4}  # bytes per parameter
x_mp = torch.randn(8, 64).to(device, torch.bfloat16)  # a bf16 input (drawn on the CPU, then moved)
x_mp @ x_mp.T  # a first bf16 matmul, outside the count: on a GPU it allocates cuBLAS's workspace
w_mp = master = opt_master = None  # a run before this one (the cell run again) frees its tensors here
with Allocated(device) as held:
    w_mp = torch.randn(64, 64).to(device, torch.bfloat16).requires_grad_()  # a bf16 weight matrix
    (x_mp @ w_mp).float().square().mean().backward()  # its gradient: bf16
    master = w_mp.detach().float()  # the fp32 master copy, which the optimizer updates
    master.grad = w_mp.grad.float()  # the fp32 gradient the step reads ...
    w_mp.grad = None  # ... and the bf16 one dropped: every tensor below is live during the step
    opt_master = AdamW([master], lr=1e-3)
    opt_master.step()
check("mixed precision: bytes per parameter the allocator holds after the step (predicted 2 + 4 + 4 + 8)",
      held.bytes / w_mp.numel(), float(sum(predicted.values())))

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: autocast per device, fp16's smallest numbers, FP8, and the autocast recipe
#
# Which ops autocast keeps in fp32 is a per-device list. On CUDA softmax, layer norm,
# `exp`, `sum` and the losses run in fp32, as the notes say; on the CPU (torch 2.13) only a
# few, the losses among them, so softmax and layer norm *return* bf16 after a bf16 matmul.
# Inside, their kernels still accumulate in fp32 (torch's "opmath" type), which is what the
# notes mean by accumulating in fp32; only the stored output is bf16. A sum of 10,000 bf16
# ones and a softmax over 10,000 zeros show it (a bf16 accumulator would stall at 256). `cross_entropy` above casts
# its logits to fp32 itself, so its output is fp32 everywhere.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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
check("CPU autocast: softmax and layer norm follow their bf16 input",
      (cpu_dtypes["softmax of the matmul output"], cpu_dtypes["layer norm of the matmul output"]),
      (torch.bfloat16, torch.bfloat16))
check("our cross_entropy always reduces in fp32", cpu_dtypes["cross_entropy (ours) loss"], torch.float32)
check("a bf16 sum of 10,000 ones accumulates in fp32 (10,000 rounded to bf16)",
      torch.ones(10_000, dtype=torch.bfloat16).sum().item(), 9984.0)
check("a bf16 softmax over 10,000 zeros: each 1/10,000 (fp32 denominator)",
      torch.softmax(torch.zeros(10_000, dtype=torch.bfloat16), 0)[0].item(), 1e-4, rel=4e-3)

if cuda_only(device, "the CUDA autocast dtype list"):
    gpu_dtypes = autocast_dtypes("cuda")
    assert gpu_dtypes["matmul"] == torch.bfloat16
    assert gpu_dtypes["softmax of the matmul output"] == torch.float32
    assert gpu_dtypes["layer norm of the matmul output"] == torch.float32
    assert gpu_dtypes["F.cross_entropy loss"] == torch.float32
    measured("CUDA autocast dtypes", ", ".join(f"{k}: {v}" for k, v in gpu_dtypes.items()), per_device=True,
             ref="autocast-dtypes")

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### fp16's smallest numbers, and `GradScaler`
#
# fp16's smallest positive (subnormal) number is $2^{-24} \approx 6 \times 10^{-8}$; a value
# below half of it rounds to 0, one just above rounds up to $2^{-24}$. In the toy above the
# whole graph is fp16, so the scaled loss itself must stay below fp16's largest number 65504
# ($2^{16}$ would overflow); with an fp32 loss, as under autocast, `torch.amp.GradScaler`
# starts at $2^{16}$, halves the factor when gradients overflow (skipping that step) and
# grows it again after a run of good steps. `train_step` calls its `unscale_` before
# clipping; `Trainer` uses one for `precision="fp16"`, none for bf16.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
check("bf16: 1e-8 survives (to 3 digits)", torch.tensor(1e-8).bfloat16().item(), 1e-8, rel=4e-3)
check("fp16's smallest subnormal", torch.finfo(torch.float16).smallest_normal * 2**-10, 2**-24)
check("fp16: 3e-8 rounds up to 2^-24, 2.9e-8 rounds to 0",
      (torch.tensor(3e-8).half().item(), torch.tensor(2.9e-8).half().item()), (2**-24, 0.0))
check("GradScaler's default initial scale (fp32 loss)", torch.amp.GradScaler("cpu").get_scale(), 65536.0)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### FP8: two formats and their scale factors
#
# The notes' §8.3 mentions FP8 training (H100 and later, through NVIDIA's Transformer
# Engine) and its scale factors. Notebook 02's dtype table has the two formats: **e4m3**
# (largest value 448) for the forward pass's weights and activations, where precision
# matters more, and **e5m2** (largest 57344) for the gradients, which span more range. Both
# have far too little range for raw values, so each cast goes through a scale,
# scale = format max / amax (the largest |value|): multiply before the cast, divide after
# the matmul. How many values share a scale depends on the recipe. Transformer Engine's
# *delayed scaling* keeps one per tensor, computed from a history of the amax of recent
# steps (`DelayedScaling`: "Use scale factor from previous iteration and record amax
# history of `amax_history_len` steps",
# [Transformer Engine docs](https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/api/common.html));
# *MXFP8* on Blackwell GPUs scales each block of 32 consecutive values with its own power of
# two ([Transformer Engine, MXFP8](https://nvidia.github.io/TransformerEngine/features/low_precision_training/mxfp8/mxfp8.html)).
# One scale per tensor, on activations around $10^{-4}$ and gradients around $10^{-6}$,
# cast and cast back on the CPU:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
check("e4m3 and e5m2: largest values", (torch.finfo(E4M3).max, torch.finfo(E5M2).max), (448.0, 57344.0))
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
for what, values, fmt8 in (("activations ~1e-4 in e4m3", acts, E4M3), ("gradients ~1e-6 in e5m2", grads8, E5M2)):
    check(f"{what}, unscaled: fraction flushed to 0",
          (fp8_round_trip(values, fmt8, scaled=False) == 0).float().mean().item(), 1.0)
check("activations in e4m3 with a per-tensor scale: relative error (3 decimals)",
      round(rel_error(acts, fp8_round_trip(acts, E4M3, scaled=True)), 3), 0.028)
check("gradients in e5m2 with a per-tensor scale: relative error (3 decimals)",
      round(rel_error(grads8, fp8_round_trip(grads8, E5M2, scaled=True)), 3), 0.052)
# the same scaled tensor in both formats: e4m3's extra mantissa bit halves the error
check("e5m2 / e4m3 relative error on the same scaled activations (1 decimal)",
      round(rel_error(acts, fp8_round_trip(acts, E5M2, scaled=True))
            / rel_error(acts, fp8_round_trip(acts, E4M3, scaled=True)), 1), 1.9)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# A few percent per element is the price of 8 bits; the scale is what keeps it a few
# percent rather than 100%. The matmul's sums are a second source of error: on Hopper the
# FP8 tensor cores accumulate with about 14 bits of precision, not fp32's 24, so FP8
# training code promotes the partial sums to fp32 at intervals (DeepSeek-V3 copies them to
# fp32 registers every 128 elements of the inner dimension:
# [DeepSeek-V3 Technical Report](https://arxiv.org/abs/2412.19437), §3.3.2 "Increasing
# Accumulation Precision"). The master weights and optimizer state stay fp32.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### The autocast recipe's bytes
#
# `torch.autocast` keeps fp32 weights and gradients (4 + 4 + 4 + 4 = 16 again). Its bf16
# weight copies are not counted there but are not free: with the default
# `cache_enabled=True` each weight's cast is cached for the whole autocast region, and the
# copies saved for backward live until backward, about 2 bytes per parameter more at the
# peak.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.recipes import bytes_per_param, param_breakdown

check("autocast caches its weight casts by default (cache_enabled=True)", torch.is_autocast_cache_enabled(), True)
model_ac = GPT(tiny)
opt_ac = AdamW(model_ac.parameters(), lr=1e-3)
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = cross_entropy(model_ac(x), y)
loss.backward()
opt_ac.step()
params_ac = list(model_ac.parameters())
n = sum(p.numel() for p in params_ac)
measured_ac = {"weights": params_ac, "gradients": [p.grad for p in params_ac],
               "adam m": [opt_ac.state[p]["exp_avg"] for p in params_ac],
               "adam v": [opt_ac.state[p]["exp_avg_sq"] for p in params_ac]}
measured_ac = {k: sum(t.numel() * t.element_size() for t in ts) / n for k, ts in measured_ac.items()}
check("autocast: bytes / param, part by part, == param_breakdown('autocast_bf16_adamw')", measured_ac,
      {k: float(v) for k, v in param_breakdown("autocast_bf16_adamw").items()})
check("autocast: the same 16 in all", sum(measured_ac.values()), float(bytes_per_param("autocast_bf16_adamw")))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §8 The packaged loop: `Trainer`
#
# `Trainer` adds the rest: warm-up and cosine decay, clipping, validation, a `log.jsonl`
# line per step, checkpoints, and out-of-memory recovery (the step redone in half-size
# micro-batches). 15 CPU steps, out of memory above 4 sequences:

# %% slideshow={"slide_type": "-"}
from functools import partial

cfg = TrainConfig(steps=15, batch_size=8, seq_len=64, warmup=3, val_every=5, device="cpu")  # tiny, lr 3e-3


def forward_that_runs_out_of_memory(forward, x):  # a GPU too small to train on more than 4 sequences at once
    if x.shape[0] > 4 and torch.is_grad_enabled():  # (validation keeps no activations for backward)
        raise torch.OutOfMemoryError("CUDA out of memory (raised by hand)")
    return forward(x)

# %% slideshow={"slide_type": "slide"} tags=["claim-S35"]
trainer = Trainer(cfg, tempfile.mkdtemp(dir=workdir), progress=False, echo=print)  # a new run each time
trainer.parts.model.forward = partial(forward_that_runs_out_of_memory, trainer.parts.model.forward)
records = trainer.run()
check("out of memory: micro-batches of 4, two per step", (trainer.parts.batches.micro, trainer.parts.batches.accum), (4, 2))
check("validation at steps", [r["step"] for r in records if "val_loss" in r], [5, 10, 15])
check("learning rate: warm-up over steps 1-3 to 3e-3, then decay",
      ([r["lr"] for r in records[:4]], records[3]["lr"] > records[-1]["lr"]), ([0.0, 1e-3, 2e-3, 3e-3], True))
check("steps whose gradient norm was above clip = 1.0, so clipped", sum(r["grad_norm"] > cfg.clip for r in records) > 0,
      True)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the run's curves, its MFU, and GPT-2 small on a GPU
#
# The same run as curves, read back from its `log.jsonl` by
# `lecture_utils.plots.plot_training_curves`: the training loss every step, the validation
# loss every 5 steps, the learning rate's warm-up and cosine decay, and the measured
# throughput (machine-dependent, so nothing checks it). From the shell: `python -m
# lecture_utils.train --steps 200 --out runs/tiny` trains, `python -m lecture_utils.train
# plot OUT` draws the same panels into `OUT/curves.png`.

# %% caption="The Trainer's 15-step CPU run read back from log.jsonl: training and validation loss, learning rate and tokens per second against step." slideshow={"slide_type": "skip"} tags=["deeper"]
import json

from lecture_utils.plots import plot_training_curves

logged = [json.loads(line) for line in (trainer.out / "log.jsonl").read_text().splitlines()]
check("log.jsonl: one JSON line per step", len(logged), 15)
check("warm-up: the lr of steps 1-3", [r["lr"] for r in records[:3]], [0.0, 1e-3, 2e-3])
check("log.jsonl: the same losses the trainer returned", [r["loss"] for r in logged] == [r["loss"] for r in records],
      True)
fig = plot_training_curves(trainer.out)
check("the loss panel draws those losses", list(fig.axes[0].lines[0].get_ydata()) == [r["loss"] for r in records],
      True)
check("the loss fell by more than 1.0", records[0]["loss"] - records[-1]["loss"] > 1.0, True)
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Each record also holds the step's throughput and MFU: the FLOPs of a step are three times
# the exact forward count of notebook 03 (backward ≈ 2 × forward) times the batch; the
# denominator is the peak of notebook 03, on a CPU its nominal one. Since that count is a formula, not `FlopCounterMode`, `Trainer` builds the GPT with
# fused attention (`attention="sdpa"`: the same logits, but no score matrix kept for
# backward).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import statistics

from lecture_utils.flops import transformer_flops

flops_per_step = 3 * transformer_flops(**tiny.flops_kwargs(seq_len)) * batch_size
check("Trainer's GPT runs F.scaled_dot_product_attention", trainer.plan.model_cfg.attention, "sdpa")
check("FLOPs per step = 3 x forward x batch: about 2.0 GFLOP for the tiny GPT at 8 x 64",
      (trainer.plan.flops_per_step, flops_per_step), (1_962_934_272, 1_962_934_272))
later = records[3:]  # the first steps include one-off costs
measured("the peak MFU divides by", f"{trainer.peak / 1e9:.3g} GFLOP/s, {trainer.peak_source}"
         if trainer.peak else trainer.peak_source)
measured("tokens/s (median of steps 4-15)", statistics.median(r["tokens_per_s"] for r in later), "tokens/s")
measured("MFU (median of steps 4-15)", statistics.median(r["mfu"] for r in later) if trainer.peak else "no MFU")

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# On a GPU: the `gpu` config, GPT-2 small's shape (12 layers, width 768, 1024 positions),
# bf16 autocast and torch's fused AdamW, 10 steps of 8 × 1024 tokens, against the GPU's
# dense bf16 peak. The notes cite GPT-2 only for its vocabulary of 50,257 tokens (§6); they
# give no parameter count. The counts, from the shapes: GPT-2 small itself (tied
# input/output table, vocabulary 50,257, biases in every linear layer) has 124,439,808
# parameters, the "124M"; without the position table 123.65M (the tied token table counted
# once, as the output layer); without both tables about 85M, the non-embedding $N$ of $6ND$.
# The course's `gpu` config is untied, bias-free and pads the vocabulary to 50,304:
# 163,026,432 parameters, 123.6M without its two tables, because its separate output layer
# (38.6M) still counts. Then the scratch folder of this notebook's checkpoints is removed.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import atexit
import shutil

from lecture_utils.models import n_params

d, layers, ff, positions, vocab = 768, 12, 4 * 768, 1024, 50_257
block = (2 * d + d * 3 * d + 3 * d + d * d + d) + (2 * d + d * ff + ff + ff * d + d)  # ln1, qkv, proj, ln2, mlp
gpt2 = {"token table": vocab * d, "position table": positions * d, "blocks + final norm": layers * block + 2 * d}
check("GPT-2 small: all parameters (the token table tied to the output layer)", sum(gpt2.values()), 124_439_808)
check("... without the position table", sum(gpt2.values()) - gpt2["position table"], 123_653_376)
check("... without both tables (about 85M)", gpt2["blocks + final norm"], 85_056_000)
with torch.device("meta"):  # shapes only, no memory
    gpt2_shape = GPT(get_config("gpu"))
check("the course's gpu config (untied, no biases, vocabulary 50304)", n_params(gpt2_shape), 163_026_432)
check("... without its token and position tables (its own output layer still counted)",
      n_params(gpt2_shape, non_embedding=True), 123_606_528)
if cuda_only(device, "GPT-2 small in bf16 with fused AdamW"):
    gpu_cfg = TrainConfig(config="gpu", steps=10, batch_size=8, seq_len=1024, warmup=2, val_every=0,
                          device="cuda", precision="bf16", optimizer="fused", seed=0)
    gpu_trainer = Trainer(gpu_cfg, workdir / "gpu", progress=False, echo=lambda message: None)
    gpu_records = gpu_trainer.run()
    assert len(gpu_records) == 10 and all(math.isfinite(r["loss"]) for r in gpu_records)
    assert min(r["loss"] for r in gpu_records[-3:]) < gpu_records[0]["loss"]
    steady = gpu_records[4:]
    gpu_mfu = statistics.median(r["mfu"] for r in steady) if gpu_trainer.peak else None  # None: no datasheet peak
    assert gpu_mfu is None or 0 < gpu_mfu < 1
    measured("gpu config: peak (dense bf16)", gpu_trainer.peak_source, per_device=True)
    measured("gpu config: tokens/s (median of steps 5-10)",
             statistics.median(r["tokens_per_s"] for r in steady), "tokens/s", per_device=True)
    measured("gpu config: MFU (median of steps 5-10)", gpu_mfu, per_device=True, ref="gpt2-small-mfu")
    measured("gpu config: loss step 1 -> 10", f"{gpu_records[0]['loss']:.2f} -> {gpu_records[-1]['loss']:.2f}",
             per_device=True)
    gpu_trainer.close()
    del gpu_trainer
    torch.cuda.empty_cache()

trainer.close()
atexit.register(shutil.rmtree, workdir, ignore_errors=True)  # when the kernel stops: the slides still write there

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - Six lines of loop; production goes around them, not inside. MFU = tokens/s × 6N / peak.
# - Same seed, same machine: the same run to the last bit; kernels need deterministic mode.
# - A checkpoint holds all the next step reads, every RNG too.
# - Mixed precision saves compute and activations, not the 16 to 20 bytes per parameter; fp16 needs loss scaling, bf16 not.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...`, run the cell and the check under it (it says whether you are right,
# not the answer), then expand the hidden solution.

# %% [markdown] slideshow={"slide_type": "-"}
# ### E8.1 Steps for a token budget, and the learning rate
#
# A run trains on batches of 512 sequences of 2048 tokens until it has seen 300 billion
# tokens (GPT-3's budget), with `cosine_lr(step, 6e-4, 6e-5, 2000, total_steps)`. How many
# steps does it take (a last, partial step counts as one)? What is the learning rate at
# step 500?

# %% tags=["exercise"]
e8_1_steps = ...  # steps to reach 300e9 tokens, rounded up
e8_1_lr_500 = ...  # learning rate at step 500

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("E8.1 steps for 300B tokens", e8_1_steps)
check_answer("E8.1 learning rate at step 500", e8_1_lr_500)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. One step sees 512 \* 2048 = 2^20 = 1,048,576 tokens, so 300e9 tokens take 300e9 /
# 2^20 = 286,102.3 steps: 286,103 with the partial last one. Step 500 is a quarter of the
# way through the 2000 warm-up steps, so the learning rate is 6e-4 / 4 = 1.5e-4 (the cosine
# part starts only at step 2000).
#
# ```python
# import math
#
# e8_1_steps = math.ceil(300e9 / (512 * 2048))
# e8_1_lr_500 = cosine_lr(500, 6e-4, 6e-5, 2000, e8_1_steps)
# check_answer("E8.1 steps for 300B tokens", e8_1_steps)
# check_answer("E8.1 learning rate at step 500", e8_1_lr_500)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, for practice after the lecture: a checkpoint's size on disk.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E8.2 How big is a checkpoint, and what does saving it need?
#
# (a) A model trained in fp32 with AdamW is checkpointed for an exact resume. How many bytes
# per parameter do the checkpoint's tensors take? (b) `save_checkpoint` writes a 7B model's
# checkpoint next to the previous one and renames it over it. How many GB ($10^9$ bytes) of
# disk does the run's folder need at that moment?

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e8_2_bytes_per_param = ...  # bytes per parameter of the checkpoint's tensors
e8_2_disk_gb = ...  # GB of disk while a 7B model's checkpoint is being saved

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E8.2 (a) checkpoint bytes per parameter", e8_2_bytes_per_param)
check_answer("E8.2 (b) disk during a save of a 7B model (GB)", e8_2_disk_gb)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. (a) 12: the fp32 weights (4) and AdamW's m and v (4 + 4). The gradients (the other
# 4 of the 16 bytes in training memory) are not saved: the next step recomputes them. (b)
# One checkpoint is 12 \* 7e9 = 84 GB; until the rename the old one is still there beside
# the new one: 168 GB.
#
# ```python
# e8_2_bytes_per_param = predicted["m and v"] + 4  # m and v, and the fp32 weights: no gradients
# e8_2_disk_gb = 2 * e8_2_bytes_per_param * 7e9 / 1e9  # the old checkpoint and the new one
# check_answer("E8.2 (a) checkpoint bytes per parameter", e8_2_bytes_per_param)
# check_answer("E8.2 (b) disk during a save of a 7B model (GB)", e8_2_disk_gb)
# ```
#
# </details>
