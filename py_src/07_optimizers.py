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
# # 07 · Optimizers: update rules, and the memory they cost
#
# The optimizer is the last piece of a training step, and the one that decides most of
# its memory. This notebook covers §7.1, §7.2 and §1.2 of the lecture notes: the six
# optimizers from SGD to AdamW, written out as short classes and run
# on one problem, with the three fixes that separate them (AdaGrad's dying step size,
# Adam's bias correction, AdamW's decoupled weight decay); the state each keeps, measured
# (0, 1, 1, 1, 2 and 2 copies of the parameters), and the 16 bytes per parameter of fp32
# AdamW; and the two ways out, sharding (ZeRO stages 1–3) and compression (8-bit, Adafactor).
#
# Every claim prints a `✓` line: it is an assertion, so the notebook fails if a claim
# is wrong. Lines starting with `[measured]` depend on the machine. The one cell that
# needs a CUDA GPU says so and is skipped elsewhere.

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **Errata in the notes.** Corrections this notebook makes to the lecture notes, each
# > shown (and checked) where linked:
# >
# > - Momentum as torch writes it, $b_t = \mu b_{t-1} + g_t$, is a decaying *sum*, not an
# >   "exponential moving average": it grows to $g/(1-\mu)$, so learning rates differ 10×
# >   between the two conventions: [§7.1 From SGD to AdamW](#§7.1-From-SGD-to-AdamW).
# > - Without Adam's bias correction the early steps are mostly too *large* (3.2× at step 1
# >   with $\beta_2 = 0.999$), not too small:
# >   [Adam's bias correction, step by step](#Adam's-bias-correction,-step-by-step).
# > - AdamW's state is "4× the parameter" only against fp32 weights; against the bf16
# >   weights of mixed precision it is 8×:
# >   [§1.2 The 16 bytes per parameter](#§1.2-The-16-bytes-per-parameter,-rebuilt-from-measured-tensors).

# %%
from lecture_utils import setup; device = setup()

# %% slideshow={"slide_type": "subslide"}
import math
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.optim import Optimizer

from lecture_utils import check, check_answer, cuda_only, measured
from lecture_utils.memory import (
    bytes_per_param,
    format_bytes,
    param_breakdown,
    predict_training_memory,
    tensor_bytes,
)
from lecture_utils.optim import zero_state_bytes

f64 = torch.float64  # the toy problems below run in float64 on the CPU: exact and repeatable

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.1 From SGD to AdamW
#
# Write $g$ for the gradient, $\eta$ (`lr`) for the learning rate and $\theta$ for the
# parameters. Every optimizer runs the same loop: each parameter that has a gradient gets
# an update, which may keep a `state` of its own, tensors of the parameter's shape
# (squares, roots and divisions act elementwise). SGD keeps nothing,
# $\theta \leftarrow \theta - \eta\, g$; Momentum keeps a buffer
# $b_t = \mu\, b_{t-1} + g_t$ and steps along it. The conventions are torch.optim's
# (tests/test_optim.py checks each class against it); there, `weight_decay` is L2:
# $\lambda\theta$ added to the gradient. The updates use torch's in-place arithmetic:
# `a.add_(b, alpha=c)` is $a \mathrel{+}= c\,b$, `a.addcmul_(b, c, value=v)` is
# $a \mathrel{+}= v\,b\,c$ and `a.addcdiv_(b, c, value=v)` is $a \mathrel{+}= v\,b/c$.
# Cells that start with `# @save lecture_utils/optim.py` are exported to the package
# (`make export`), which notebook 08 and the trainer import; edit one here and re-run the
# cells below it.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Six optimizers, each a short class: read SGD and Momentum aloud, the rest only differ in the state they keep.
# - Run the valley figure live: same start, same 60 steps; point at SGD's zigzag (y flips sign every step) and the adaptive methods' diagonal first step.
# - The number: torch's momentum is a decaying sum that grows to g/(1-μ), 10x at μ = 0.9.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/optim.py
class UpdateRule(Optimizer):
    """The loop every optimizer below shares: each parameter with a gradient gets `update`."""

    @torch.no_grad()
    def step(self, closure=None):
        with torch.enable_grad():
            loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.update(p, p.grad, self.state[p], group)
        return loss


def with_l2(g, p, weight_decay):
    """L2 regularisation folded into the gradient (torch.optim's `weight_decay`): g + wd * theta."""
    return g.add(p, alpha=weight_decay) if weight_decay else g


class SGD(UpdateRule):
    """theta -= lr * g"""

    def __init__(self, params, lr=1e-3, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    def update(self, p, g, state, group):
        g = with_l2(g, p, group["weight_decay"])
        p.add_(g, alpha=-group["lr"])


class Momentum(UpdateRule):
    """b = mu * b + g (b = g at the first step); theta -= lr * b"""

    def __init__(self, params, lr=1e-3, momentum=0.9, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def update(self, p, g, state, group):
        g = with_l2(g, p, group["weight_decay"])
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = g.clone()
        else:
            state["momentum_buffer"].mul_(group["momentum"]).add_(g)
        p.add_(state["momentum_buffer"], alpha=-group["lr"])


# %% [markdown] slideshow={"slide_type": "subslide"}
# **A loose word in the notes.** The notes' table calls momentum "an exponential moving
# average of the gradient". In the convention of `Momentum` above (torch's, and the one
# most code uses), $b_t = \mu b_{t-1} + g_t$ is a *sum* with decaying weights, not an
# average: under a constant gradient it grows to $g/(1-\mu) = 10g$ for $\mu = 0.9$. The
# averaging form $b_t = \mu b_{t-1} + (1-\mu) g_t$ is the same optimizer with $\eta$
# multiplied by $1-\mu$, so a learning rate tuned in one convention is 10 × off in the other.

# %% slideshow={"slide_type": "subslide"}
mu, g_const = 0.9, 3.0
w = torch.zeros(1, dtype=f64)
opt = Momentum([w], lr=0.01, momentum=mu)
buffers = []
for _ in range(200):
    w.grad = torch.full_like(w, g_const)
    opt.step()
    buffers.append(opt.state[w]["momentum_buffer"].item())
for t in (1, 2, 10, 200):
    print(f"t = {t:>3}: b_t / g = {buffers[t - 1] / g_const:.4f}")
expected = [g_const * (1 - mu**t) / (1 - mu) for t in range(1, 201)]
check("b_t == g (1 - mu^t) / (1 - mu), t = 1..200", torch.tensor(buffers, dtype=f64),
      torch.tensor(expected, dtype=f64), rel=1e-12)
check("steady state b / g -> 1 / (1 - mu)", round(buffers[-1] / g_const, 6), 10.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# AdaGrad and RMSProp give every coordinate its own step size, dividing by the root of a
# running statistic of $g^2$: AdaGrad sums, $s_t = s_{t-1} + g_t^2$; RMSProp averages,
# $s_t = \alpha\, s_{t-1} + (1-\alpha)\, g_t^2$. Both then step
# $\theta \leftarrow \theta - \eta\, g_t / (\sqrt{s_t} + \epsilon)$. Like torch.optim they
# also count the steps $t$, here as a Python `int` (torch.optim keeps a 4-byte tensor per
# parameter tensor, which §7.2 counts).

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/optim.py
class AdaGrad(UpdateRule):
    """s += g^2; theta -= lr * g / (sqrt(s) + eps). s only grows, so the step size only shrinks."""

    def __init__(self, params, lr=1e-2, eps=1e-10, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "eps": eps, "weight_decay": weight_decay})

    def update(self, p, g, state, group):
        g = with_l2(g, p, group["weight_decay"])
        if not state:
            state["step"], state["sum"] = 0, torch.zeros_like(p)
        state["step"] += 1
        state["sum"].addcmul_(g, g)
        p.addcdiv_(g, state["sum"].sqrt().add_(group["eps"]), value=-group["lr"])


class RMSProp(UpdateRule):
    """s = alpha * s + (1 - alpha) * g^2; theta -= lr * g / (sqrt(s) + eps)"""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay})

    def update(self, p, g, state, group):
        g = with_l2(g, p, group["weight_decay"])
        if not state:
            state["step"], state["square_avg"] = 0, torch.zeros_like(p)
        state["step"] += 1
        state["square_avg"].mul_(group["alpha"]).addcmul_(g, g, value=1 - group["alpha"])
        p.addcdiv_(g, state["square_avg"].sqrt().add_(group["eps"]), value=-group["lr"])


# %% [markdown] slideshow={"slide_type": "subslide"}
# Adam keeps moving averages of both $g$ and $g^2$, and divides each by its bias
# correction $1 - \beta^t$ (why, further down):
#
# $$m_t = \beta_1 m_{t-1} + (1-\beta_1)\, g_t,\qquad v_t = \beta_2 v_{t-1} + (1-\beta_2)\, g_t^2,$$
# $$\hat m_t = \frac{m_t}{1-\beta_1^t},\qquad \hat v_t = \frac{v_t}{1-\beta_2^t},\qquad
# \theta \leftarrow \theta - \eta\, \frac{\hat m_t}{\sqrt{\hat v_t} + \epsilon}.$$
#
# AdamW first shrinks the parameters, $\theta \leftarrow \theta - \eta\lambda\,\theta$, and
# then takes the Adam step; plain Adam adds $\lambda\theta$ to the gradient instead.

# %% slideshow={"slide_type": "subslide"}
# @save lecture_utils/optim.py
class Adam(UpdateRule):
    """Adam; its weight_decay is L2 folded into g (then divided by sqrt(v_hat) like the rest)."""

    decoupled = False  # AdamW: weight decay outside the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    def update(self, p, g, state, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if self.decoupled:
            p.mul_(1 - lr * wd)  # AdamW: shrink theta directly, untouched by sqrt(v)
        else:
            g = with_l2(g, p, wd)  # Adam + L2: the decay term joins the gradient
        if not state:
            state["step"] = 0
            state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(g, 1 - beta1)  # m = beta1 m + (1 - beta1) g, written as torch.optim does
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        # m_hat / (sqrt(v_hat) + eps), arranged as torch.optim does, so it rounds identically
        denom = (v.sqrt() / math.sqrt(bias2)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bias1)


class AdamW(Adam):
    """Adam with weight decay decoupled from the gradient: theta -= lr * wd * theta, then Adam."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr, betas, eps, weight_decay)


OPTIMIZERS = {"sgd": SGD, "momentum": Momentum, "adagrad": AdaGrad, "rmsprop": RMSProp,
              "adam": Adam, "adamw": AdamW}

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Six optimizers on one ill-conditioned valley
#
# The test problem is the quadratic $f(x, y) = \tfrac12\,(x^2 + 50\,y^2)$, a valley 50
# times steeper across ($y$) than along ($x$). Its gradient is $(x, 50y)$, so we compute it
# exactly instead of calling autograd. Every optimizer starts at $(-8, 1.5)$ and takes 60
# steps. The learning rates are sensible ones for each method, not tuned to a winner: SGD
# gets $\eta = 0.035$, just under its stability limit $2/50 = 0.04$, and Momentum gets the
# same $\eta$ with the usual $\mu = 0.9$.

# %% slideshow={"slide_type": "subslide"}
CURVATURE = torch.tensor([1.0, 50.0], dtype=f64)
START, STEPS = (-8.0, 1.5), 60


def f(p):
    """The valley's loss for points p of shape (..., 2)."""
    return 0.5 * (CURVATURE * p**2).sum(-1)


def trajectory(cls, **hparams):
    """The STEPS + 1 points an optimizer visits from START, as a (STEPS + 1, 2) tensor."""
    p = torch.tensor(START, dtype=f64)
    opt = cls([p], **hparams)
    path = [p.clone()]
    for _ in range(STEPS):
        p.grad = CURVATURE * p  # the exact gradient of f
        opt.step()
        path.append(p.clone())
    return torch.stack(path)


RUNS = {"SGD": (SGD, {"lr": 0.035}), "Momentum": (Momentum, {"lr": 0.035, "momentum": 0.9}),
        "AdaGrad": (AdaGrad, {"lr": 1.0}), "RMSProp": (RMSProp, {"lr": 0.1}),
        "Adam": (Adam, {"lr": 0.2}), "AdamW": (AdamW, {"lr": 0.2, "weight_decay": 0.01})}
paths = {name: trajectory(cls, **hp) for name, (cls, hp) in RUNS.items()}
final = {name: f(path[-1]).item() for name, path in paths.items()}

print(f"{'optimizer':<9} {'hyper-parameters':<30} {'f after 10':>10} {'30':>8} {'60 steps':>9}")
for name, path in paths.items():
    hp = ", ".join(f"{k}={v}" for k, v in RUNS[name][1].items())
    print(f"{name:<9} {hp:<30} {f(path[10]).item():>10.3g} {f(path[30]).item():>8.3g} "
          f"{final[name]:>9.3g}")

# %% caption="Paths of the six optimizers on the valley f(x, y) = (x\u00b2 + 50 y\u00b2) / 2, all from the same start in 60 steps." slideshow={"slide_type": "subslide"}
X, Y = np.meshgrid(np.linspace(-9, 4, 200), np.linspace(-2, 2, 200))
fig, axes = plt.subplots(2, 3, figsize=(11, 5.5), sharex=True, sharey=True)
for ax, (name, path) in zip(axes.flat, paths.items(), strict=True):
    ax.contour(X, Y, 0.5 * (X**2 + 50 * Y**2), levels=np.geomspace(0.05, 150, 12), colors="0.7",
               linewidths=0.7)
    ax.plot(path[:, 0], path[:, 1], ".-", color="C3", lw=1, ms=3)
    ax.plot(*START, "ko", ms=4)
    ax.plot(0, 0, "k*", ms=8)
    hp = ", ".join(f"{k}={v}" for k, v in RUNS[name][1].items())
    ax.set_title(f"{name} ({hp})\nf after {STEPS} steps: {final[name]:.3g}", fontsize=12)
axes[0, 0].set(xlim=(-9, 4), ylim=(-2, 2))
fig.supxlabel("x")
fig.supylabel("y")
fig.suptitle("f(x, y) = (x² + 50 y²) / 2: same start, same number of steps", fontsize=14)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# What the picture shows, checked:
#
# * **SGD** on a quadratic is solvable exactly: each coordinate is multiplied by
#   $1 - \eta\lambda$ per step. Across the valley that factor is $1 - 0.035 \cdot 50 =
#   -0.75$, so $y$ flips sign at *every* step (the zigzag); along it the factor is
#   $0.965$, so $x$ crawls. The steep direction caps $\eta$, and the flat one pays for it.
# * **Momentum** at the same $\eta$ ends lower, but not by damping the zigzag. With
#   $\mu = 0.9$ both directions shrink by $\sqrt{\mu} \approx 0.949$ per step (the moduli
#   of the roots of $z^2 - (1 + \mu - \eta\lambda) z + \mu$, complex for both curvatures
#   here). Along $x$ that beats SGD's $0.965$; across $y$ it is slower than SGD's $0.75$,
#   so the path keeps swinging across the valley and overshoots the minimum. The flat
#   direction is what holds SGD back, so the trade pays off.
# * **AdaGrad, RMSProp and Adam** divide each coordinate by its own gradient scale, so
#   their first step is the same length in $x$ and $y$ (a diagonal move), whatever the
#   50 × difference in curvature. AdaGrad and Adam move exactly $\eta$ per coordinate;
#   RMSProp moves $\eta/\sqrt{1-\alpha} = 10\eta$, for a reason shown further down.

# %% slideshow={"slide_type": "subslide"}
sgd = paths["SGD"]
lr_sgd = RUNS["SGD"][1]["lr"]
closed_form = torch.tensor([START[0] * (1 - lr_sgd) ** STEPS, START[1] * (1 - 50 * lr_sgd) ** STEPS],
                           dtype=f64)
print(f"SGD after {STEPS} steps: x = {sgd[-1, 0].item():.6f}, y = {sgd[-1, 1].item():.3e}")
check("SGD: (x_N, y_N) == (x_0 (1 - lr)^N, y_0 (1 - 50 lr)^N)", sgd[-1], closed_form, rel=1e-12)
signs = torch.sign(sgd[:, 1])
check("SGD: steps (of 60) at which y changes sign", int((signs[1:] == -signs[:-1]).sum()), STEPS)
mu_run = RUNS["Momentum"][1]["momentum"]
moduli = [np.abs(np.roots([1, -(1 + mu_run - lr_sgd * lam), mu_run])) for lam in CURVATURE.tolist()]
check("Momentum: every root has modulus sqrt(mu), along x and across y", np.concatenate(moduli),
      np.full(4, math.sqrt(mu_run)), rel=1e-9)
check("Momentum ends lower than SGD at the same lr", final["Momentum"] < final["SGD"], True)
for name, scale in (("AdaGrad", 1.0), ("RMSProp", 1 / math.sqrt(1 - 0.99)), ("Adam", 1.0)):
    move = scale * RUNS[name][1]["lr"]  # RMSProp: 1 / sqrt(1 - alpha), its default alpha 0.99
    check(f"{name}: first step moves |dx| == |dy| == {move:g}", (paths[name][1] - paths[name][0]).abs(),
          torch.full((2,), move, dtype=f64), rel=1e-7)
check("with these lrs, every adaptive method ends below SGD",
      all(final[n] < final["SGD"] for n in ("AdaGrad", "RMSProp", "Adam", "AdamW")), True)
gap = (paths["Adam"] - paths["AdamW"]).norm(dim=1).max().item()
print(f"largest distance between the Adam and AdamW paths: {gap:.2f}")
check("AdamW's path stays within 0.3 of Adam's", gap < 0.3, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Two caveats keep this picture honest. The valley is *axis-aligned*, exactly the case a
# per-coordinate scale fixes; rotate it 45° and $\sqrt{s}$ can no longer tell the steep
# direction from the flat one. And a 2-D quadratic has no noise, where momentum and the
# moving averages earn most of their keep in real training. AdamW's decay,
# $\eta\lambda = 0.002$ per step, pulls towards the origin, here also the minimum, so its
# path stays close to Adam's; where decoupling matters is shown under Adam + L2 below.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### AdaGrad's step size dies; RMSProp's does not
#
# Feed both a constant gradient $g$ and read the effective learning rate
# $\eta / (\sqrt{s_t} + \epsilon)$ from the optimizer's own state. Both have a closed form:
#
# * AdaGrad sums: $s_t = t\,g^2$, so $\eta/\sqrt{s_t} = \eta / (|g|\sqrt t)$. It falls like
#   $1/\sqrt t$ for ever, however long the gradient stays informative.
# * RMSProp averages: $s_t = (1-\alpha^t)\,g^2$, so $\eta/\sqrt{s_t} = \eta /
#   (|g|\sqrt{1-\alpha^t}) \to \eta/|g|$. The step settles instead of dying.

# %% slideshow={"slide_type": "subslide"}
G, LR, T = 2.0, 0.01, 1000


def effective_lr(cls, key, **hparams):
    """Run T steps on a constant gradient G; return eta / (sqrt(s) + eps) and the distance moved."""
    p = torch.zeros(1, dtype=f64)
    opt = cls([p], lr=LR, **hparams)
    eps = opt.defaults["eps"]
    eff, moved = [], []
    for _ in range(T):
        before = p.item()
        p.grad = torch.full_like(p, G)
        opt.step()
        eff.append(LR / (opt.state[p][key].sqrt().item() + eps))
        moved.append(before - p.item())
    return torch.tensor(eff, dtype=f64), torch.tensor(moved, dtype=f64)


t = torch.arange(1, T + 1, dtype=f64)
ada_eff, ada_moved = effective_lr(AdaGrad, "sum")
rms_eff, rms_moved = effective_lr(RMSProp, "square_avg", alpha=0.99)
check("AdaGrad: eta / sqrt(s_t) == eta / (|g| sqrt t)", ada_eff, LR / (G * t.sqrt()), rel=1e-9)
check("RMSProp: eta / sqrt(s_t) == eta / (|g| sqrt(1 - alpha^t))", rms_eff,
      LR / (G * (1 - 0.99**t).sqrt()), rel=1e-7)
check("AdaGrad: step 100 is 1/10 of step 1", round((ada_moved[99] / ada_moved[0]).item(), 9), 0.1)
check("RMSProp: step 1000 is within 0.01% of eta", round(rms_moved[-1].item(), 7), LR, rel=1e-4)
print(f"after {T} steps: AdaGrad moved {ada_moved.sum().item():.4f}, "
      f"RMSProp moved {rms_moved.sum().item():.4f} (eta * T = {LR * T:g})")
check("AdaGrad's total distance < 2 eta sqrt(T)", ada_moved.sum().item() < 2 * LR * math.sqrt(T),
      True)

# %% caption="Effective learning rate against step on log axes: AdaGrad's falls like 1/\u221at, RMSProp's settles at \u03b7 / |g|." slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7.0, 3.5))
ax.loglog(t, ada_eff, label="AdaGrad: η / (|g| √t)")
ax.loglog(t, rms_eff, label="RMSProp (α = 0.99): η / (|g| √(1 − αᵗ))")
ax.axhline(LR / G, color="0.5", lw=1, ls=":")
ax.text(1.2, LR / G * 1.1, "η / |g|", color="0.4", fontsize=12)
ax.set(xlabel="step t (constant gradient g = 2)", ylabel="effective lr  η / √s",
       title="AdaGrad's step size falls like 1/√t; RMSProp's settles")
ax.legend(frameon=False, fontsize=12, loc="lower left")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# The plot shows a second thing the notes do not mention: RMSProp's *first* step is
# $1/\sqrt{1-\alpha} = 10$ times too large. Its average starts at $s_0 = 0$, so after one
# step it holds only $(1-\alpha) g^2 = 0.01\,g^2$ and underestimates $g^2$ a hundredfold.
# That zero-initialisation bias is what Adam corrects.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Adam's bias correction, step by step
#
# Adam starts $m_0 = v_0 = 0$ as well. Under a constant gradient $m_t = (1-\beta_1^t)\,g$
# and $v_t = (1-\beta_2^t)\,g^2$ start far too small; dividing by $1-\beta^t$ removes the
# bias exactly, so $\hat m_t = g$ and $\hat v_t = g^2$ from the first step on. So the first
# step moves every parameter by $\eta\, g/(|g| + \epsilon) \approx \eta \operatorname{sign}(g)$,
# whatever the gradient's scale: four gradients from $10^{-3}$ to $10^3$ all move by $\eta$
# (up to $\epsilon/|g| \le 10^{-5}$):

# %% slideshow={"slide_type": "subslide"}
beta1, beta2, lr = 0.9, 0.999, 0.01
g = torch.tensor([1e-3, 1.0, 1e3, -50.0], dtype=f64)
p = torch.zeros(4, dtype=f64)
adam = Adam([p], lr=lr, betas=(beta1, beta2))
ms, vs = [], []
for step in range(1, 21):
    p.grad = g.clone()
    adam.step()
    if step == 1:  # p started at 0, so p is the first step
        check("first step == -lr * sign(g), for |g| from 1e-3 to 1e3", p, -lr * g.sign(), rel=1e-5)
    ms.append(adam.state[p]["exp_avg"].clone())
    vs.append(adam.state[p]["exp_avg_sq"].clone())
t20 = torch.arange(1, 21, dtype=f64)[:, None]
m, m_hat, v_hat = torch.stack(ms), torch.stack(ms) / (1 - beta1**t20), torch.stack(vs) / (1 - beta2**t20)

print(f"{'t':>3} {'m_t / g (raw)':>14} {'1 - beta1^t':>12} {'m_hat_t / g':>12}")
for step in (1, 2, 3, 5, 10, 20):
    print(f"{step:>3} {(m[step - 1] / g)[1].item():>14.4f} {1 - beta1**step:>12.4f} "
          f"{(m_hat[step - 1] / g)[1].item():>12.4f}")
check("raw m_t == (1 - beta1^t) g, t = 1..20", m, (1 - beta1**t20) * g, rel=1e-12)
check("corrected m_hat_t == g at every step", m_hat, g.expand(20, 4), rel=1e-12)
check("corrected v_hat_t == g^2 at every step", v_hat, (g**2).expand(20, 4), rel=1e-12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **What happens without the correction?** The notes say it "offsets the underestimate
# caused by the zero initialisation", which suggests that uncorrected steps would be too
# small. Both moments are underestimated, but the step is their ratio: without correction
# it is the corrected one times $r(t) = (1-\beta_1^t) / \sqrt{1-\beta_2^t}$,
# and with the common $\beta_2 = 0.999$ the denominator is the smaller one: the first
# step is $0.1/\sqrt{0.001} = 3.2\times$ too *large*, and the error peaks at about
# $6.6\times$ around step 12. With $\beta_2 = 0.95$, common for LLMs, the first eight
# steps are too small instead, and later ones up to 10% too large. We check $r(t)$
# against an uncorrected Adam written out by hand, run side by side with the real one:

# %% slideshow={"slide_type": "subslide"}
def uncorrected_over_corrected(beta1, beta2, steps, g=1.0, lr=1e-3):
    """Step of Adam without bias correction / step of Adam with it, under a constant g."""
    p = torch.zeros(1, dtype=f64)
    adam = Adam([p], lr=lr, betas=(beta1, beta2))
    m = v = 0.0
    ratios = []
    for _ in range(steps):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        raw_step = lr * m / (math.sqrt(v) + 1e-8)
        before = p.item()
        p.grad = torch.full_like(p, g)
        adam.step()
        ratios.append(raw_step / (before - p.item()))
    return torch.tensor(ratios, dtype=f64)


steps_r = torch.arange(1, 10_001, dtype=f64)
r = {b2: (1 - beta1**steps_r) / (1 - b2**steps_r).sqrt() for b2 in (0.999, 0.95)}
for b2 in r:
    check(f"beta2 = {b2}: r(t) matches uncorrected / corrected Adam, t = 1..50",
          uncorrected_over_corrected(beta1, b2, 50), r[b2][:50], rel=1e-6)
peak = int(r[0.999].argmax()) + 1
check("beta2 = 0.999: first uncorrected step is 3.16x too large", round(r[0.999][0].item(), 4),
      3.162, rel=1e-3)
check("beta2 = 0.999: worst step", peak, 12)
check("beta2 = 0.999: ...and its ratio", round(r[0.999].max().item(), 4), 6.57, rel=1e-3)
late = int((r[0.999] - 1 > 0.01).nonzero().max()) + 1
check("beta2 = 0.999: still > 1% too large until step", late, 3924)
check("beta2 = 0.95: first uncorrected step is too small", round(r[0.95][0].item(), 4), 0.447,
      rel=1e-3)
check("beta2 = 0.95: first step that is too large", int((r[0.95] > 1).nonzero().min()) + 1, 9)
check("beta2 = 0.95: ...by at most", round(r[0.95].max().item(), 4), 1.097, rel=1e-3)

# %% caption="Ratio of Adam's uncorrected to corrected step against step for \u03b2\u2082 = 0.999 and 0.95: up to 6.6x too large early on." slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7.0, 3.5))
for b2, ratio in r.items():
    ax.semilogx(steps_r, ratio, label=f"β₁ = 0.9, β₂ = {b2}")
ax.axhline(1, color="0.5", lw=1)
ax.set(xlabel="step t", ylabel="uncorrected / corrected step",
       title="Without bias correction, Adam's early steps are wrong by up to 6.6x")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Adam + L2 versus AdamW: who gets regularised?
#
# Plain Adam's weight decay, the L2 term $\lambda\theta$, goes through the normalisation
# like the rest of $g$, so the decay a parameter feels is $\eta\lambda\theta / \sqrt{\hat v}$:
# divided by that parameter's own gradient scale. AdamW applies
# $\theta \leftarrow \theta - \eta\lambda\theta$ *outside* the normalisation, the same for
# everyone. An experiment: two parameters start at 1, one with gradients of size $10^{-3}$,
# the other $10^2$, with alternating signs so that the gradient alone does not move either
# far. Each is trained for 1000 steps ($\eta = 10^{-2}$, $\lambda = 0.1$) without decay,
# with Adam + L2 and with AdamW; dividing by the no-decay run isolates what the decay did.

# %% slideshow={"slide_type": "subslide"}
SCALES = torch.tensor([1e-3, 1e2], dtype=f64)
T_WD, LR_WD, WD = 1000, 1e-2, 0.1


def train(cls, weight_decay):
    p = torch.ones(2, dtype=f64)
    opt = cls([p], lr=LR_WD, weight_decay=weight_decay)
    for step in range(T_WD):
        p.grad = SCALES * (1.0 if step % 2 == 0 else -1.0)
        opt.step()
    return p


no_decay = train(Adam, 0.0)
shrink = {"Adam + L2": train(Adam, WD) / no_decay, "AdamW": train(AdamW, WD) / no_decay}
per_step = {k: 1 - s ** (1 / T_WD) for k, s in shrink.items()}

print(f"{'gradient scale':>14} {'kept: Adam + L2':>16} {'AdamW':>6} {'decay/step: Adam + L2':>22} {'AdamW':>9}")
for i, scale in enumerate(SCALES.tolist()):
    print(f"{scale:>14g} {shrink['Adam + L2'][i].item():>16.3g} {shrink['AdamW'][i].item():>6.3g} "
          f"{per_step['Adam + L2'][i].item():>22.2e} {per_step['AdamW'][i].item():>9.2e}")

check("AdamW: both parameters keep (1 - lr * wd)^T", shrink["AdamW"],
      torch.full((2,), (1 - LR_WD * WD) ** T_WD, dtype=f64), rel=1e-3)
check("Adam + L2, large gradients: decay divided by |g| = 100, exp(-T lr wd / 100)",
      round(shrink["Adam + L2"][1].item(), 4), math.exp(-T_WD * LR_WD * WD / 100), rel=1e-3)
check("Adam + L2, large gradients: 100x weaker decay per step than AdamW",
      round((per_step["AdamW"][1] / per_step["Adam + L2"][1]).item(), 1), 100, rel=0.01)
check("Adam + L2, small gradients: decayed to almost nothing (kept < 0.1%)",
      shrink["Adam + L2"][0].item() < 1e-3, True)

# %% [markdown] slideshow={"slide_type": "subslide"}
# This is the notes' point, made quantitative. The parameter with large gradients is
# **barely regularised**: 1% decay instead of AdamW's 63%. The effect also runs the other
# way, which the notes do not say: for the parameter with tiny gradients, $\lambda\theta
# = 0.1$ *is* most of its gradient, and Adam normalises it into a full $\eta$-sized step
# towards zero every step, so it is driven to zero. Adam + L2 decays each parameter at a
# rate set by its gradient scale. AdamW decays all of them at the same rate $\eta\lambda$.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.2 Why AdamW eats memory
#
# Each state tensor has the shape of its parameter, so the state is a whole number of
# copies of the model. `state_bytes` adds up the bytes in `optimizer.state`. We run one
# step of each optimizer on the same small MLP, and of its torch.optim counterpart, and
# set both beside the prediction of `lecture_utils.memory.predict_training_memory`. That
# prediction is modelled on torch.optim: for the adaptive optimizers it adds torch's
# 4-byte `step` tensor per parameter tensor, which ours keep as a Python int.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - State is a whole number of copies of the parameters: 0, 1, 1, 1, 2, 2 (the printed table).
# - The number to point at: fp32 AdamW is 16 bytes per parameter, 8 of them optimizer state.
# - The GPU cell (foreach vs fused) is skipped on a CPU laptop: say what it shows, or run it on a GPU.

# %%
# @save lecture_utils/optim.py
def state_bytes(optimizer):
    """Bytes of every tensor the optimizer keeps in `optimizer.state`."""
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))


# %% slideshow={"slide_type": "subslide"}
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
params = list(model.parameters())
n_params = sum(p.numel() for p in params)
param_bytes = sum(tensor_bytes(p) for p in params)
batch = torch.randn(32, 64)
TORCH_OPTIMIZERS = {"sgd": (torch.optim.SGD, {}), "momentum": (torch.optim.SGD, {"momentum": 0.9}),
                    "adagrad": (torch.optim.Adagrad, {}), "rmsprop": (torch.optim.RMSprop, {}),
                    "adam": (torch.optim.Adam, {}), "adamw": (torch.optim.AdamW, {})}


def one_step(opt):
    opt.zero_grad(set_to_none=True)
    model(batch).pow(2).mean().backward()
    opt.step()
    return state_bytes(opt)


print(f"model: {n_params:,} parameters in {len(params)} tensors, {param_bytes:,} B")
print(f"{'optimizer':<9} {'state per parameter':<20} {'ours':>7} {'/ params':>8} "
      f"{'torch.optim':>11} {'predicted':>9}")
ours, theirs, predicted = {}, {}, {}
for name, cls in OPTIMIZERS.items():
    opt = cls(params, lr=1e-3)
    ours[name] = one_step(opt)
    torch_cls, kwargs = TORCH_OPTIMIZERS[name]
    theirs[name] = one_step(torch_cls(params, lr=1e-3, **kwargs))
    predicted[name] = predict_training_memory(model, optimizer=name).optimizer_state
    kept = ", ".join(k for k, v in opt.state[params[0]].items() if isinstance(v, torch.Tensor))
    print(f"{name:<9} {kept or '(none)':<20} {ours[name]:>7,} {ours[name] / param_bytes:>8g} "
          f"{theirs[name]:>11,} {predicted[name]:>9,}")

check("ours: state bytes / parameter bytes", [ours[n] / param_bytes for n in OPTIMIZERS],
      [0.0, 1.0, 1.0, 1.0, 2.0, 2.0])
check("torch.optim - ours: 4 B of step per parameter tensor, adaptive optimizers only",
      [theirs[n] - ours[n] for n in OPTIMIZERS], [0, 0, 16, 16, 16, 16])
check("torch.optim == predict_training_memory", theirs, predicted)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### §1.2 The 16 bytes per parameter, rebuilt from measured tensors
#
# §1.2 of the notes counts 4 + 4 + 4 + 4 bytes per parameter for fp32 AdamW. Here each
# term is a sum of real tensors after a real step: the parameters, their `.grad`, and
# AdamW's `exp_avg` ($m$) and `exp_avg_sq` ($v$). (tests/test_optim.py does the same for
# the other fp32 recipes of `lecture_utils.memory`.)

# %% slideshow={"slide_type": "subslide"}
adamw = AdamW(params, lr=1e-3)
one_step(adamw)
measured_parts = {
    "weights": sum(tensor_bytes(p) for p in params),
    "gradients": sum(tensor_bytes(p.grad) for p in params),
    "adam m": sum(tensor_bytes(adamw.state[p]["exp_avg"]) for p in params),
    "adam v": sum(tensor_bytes(adamw.state[p]["exp_avg_sq"]) for p in params),
}
check("fp32 AdamW, measured per part", {k: b / n_params for k, b in measured_parts.items()},
      {k: float(b) for k, b in param_breakdown("fp32_adamw").items()})
check("fp32 AdamW, measured total / param", sum(measured_parts.values()) / n_params,
      float(bytes_per_param("fp32_adamw")))

mixed = param_breakdown("mixed_bf16_adamw")
check("fp32 AdamW: bytes / param over the weight's bytes",
      bytes_per_param("fp32_adamw") / param_breakdown("fp32_adamw")["weights"], 4.0)
check("mixed bf16 AdamW: bytes / param over the bf16 weight's bytes",
      bytes_per_param("mixed_bf16_adamw") / mixed["weights (bf16)"], 8.0)
check("mixed bf16 AdamW: optimizer state (master + m + v) / bf16 weight",
      (mixed["master weights"] + mixed["adam m"] + mixed["adam v"]) / mixed["weights (bf16)"], 6.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# So fp32 AdamW spends 8 of its 16 bytes on optimizer state, twice the parameters
# themselves, and the mixed-precision recipe of §1.2 (2 + 2 + 4 + 4 + 4) spends 12,
# six times its bf16 weights. The notes' summary says AdamW makes the bytes per parameter
# "4× the parameter itself". That holds for fp32 (16 / 4). Against the bf16 weights that
# mixed precision actually computes with, it is 8× (16 / 2). Either way, the state is the
# largest item, and the two ways out below go after it.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### On a GPU: the memory *inside* `step()`
#
# `step()` also allocates temporaries while it runs, and how many depends on the
# implementation. torch.optim.AdamW has three: **for-loop** (`foreach=False`) updates one
# parameter at a time, so its temporaries ($\sqrt{v}$ and the denominator) are the size of
# one parameter tensor; **foreach** (the default on CUDA) runs one batched kernel per
# operation across *all* parameters, so `_foreach_sqrt` materialises $\sqrt{v}$ for the
# whole model, about one more copy of the parameters; **fused** (`fused=True`) does the
# whole update per element in one kernel, with essentially no temporaries. The cell
# measures the peak during a second `step()` (the first allocates $m$ and $v$) on 8
# matrices of 2048 × 2048, 134 MB of fp32 parameters.

# %% slideshow={"slide_type": "subslide"}
if cuda_only(device, "the peak memory of torch.optim.AdamW's step(): for-loop, foreach, fused"):
    N_MATRICES, SIDE = 8, 2048
    # predicted temporaries, in copies of all the parameters: sqrt(v) and the denominator of
    # one matrix at a time / sqrt(v) of every matrix at once / none
    PREDICTED = {"default": 1.0, "for-loop": 2 / N_MATRICES, "foreach": 1.0, "fused": 0.0}
    IMPLEMENTATIONS = {"default": {}, "for-loop": {"foreach": False}, "foreach": {"foreach": True},
                       "fused": {"fused": True}}
    peak_extra = {}
    for impl, kwargs in IMPLEMENTATIONS.items():
        gen = torch.Generator(device=device).manual_seed(0)
        weights = [torch.randn(SIDE, SIDE, device=device, generator=gen, requires_grad=True)
                   for _ in range(N_MATRICES)]
        for weight in weights:
            weight.grad = torch.randn(weight.shape, device=device, generator=gen)
        gpu_param_bytes = sum(tensor_bytes(weight) for weight in weights)
        gpu_opt = torch.optim.AdamW(weights, lr=1e-3, **kwargs)
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        gpu_opt.step()  # the first step allocates m and v
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        gpu_opt.step()  # the second step only needs temporaries
        torch.cuda.synchronize()
        peak_extra[impl] = torch.cuda.max_memory_allocated() - before
        measured(f"AdamW {impl}: state allocated by the first step", format_bytes(before - start), per_device=True)
        measured(f"AdamW {impl}: extra memory during step()",
                 f"{format_bytes(peak_extra[impl])} = {peak_extra[impl] / gpu_param_bytes:.3g} "
                 f"copies of the parameters (predicted about {PREDICTED[impl]:g})", per_device=True)
        assert before - start >= 2 * gpu_param_bytes, (impl, before - start)
        del weights, weight, gpu_opt
        torch.cuda.empty_cache()
    assert peak_extra["fused"] <= peak_extra["foreach"], peak_extra
    assert peak_extra["for-loop"] < peak_extra["foreach"], peak_extra

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.2 Way out 1: sharding (ZeRO stages 1–3)
#
# With data parallelism on $G$ GPUs, every GPU normally holds all of the training state.
# ZeRO (Rajbhandari et al., 2020) partitions it in three stages: first the optimizer
# state, then the gradients, then the parameters themselves. `zero_bytes_per_gpu` below
# gives the bytes per GPU, with params + grads + $K$ (optimizer state) bytes per
# parameter. The ZeRO paper's mixed-precision Adam has bf16/fp16 parameters (2) and
# gradients (2), and $K = 12$ for the fp32 master weights, $m$ and $v$: the notes'
# 2 + 2 + 4 + 4 + 4 = 16 (for plain fp32 AdamW, 4 + 4 + $K$ with $K = 8$). Fractions keep
# the arithmetic exact; the paper's Figure 1 (7.5B parameters on 64 GPUs) is the check.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - ZeRO shards state, then gradients, then parameters: write 2 + 2 + K/G on the board.
# - The figure reproduces the paper's Figure 1: 120 GB per GPU at stage 0 for 7.5B on 64 GPUs, 1.9 GB at stage 3.
# - Run the two-process ZeRO-1 cell live: each rank holds about half the state.

# %% slideshow={"slide_type": "subslide"}
def zero_bytes_per_gpu(n, gpus, stage, param=2, grad=2, k=12):
    """Training-state bytes per GPU for n parameters under ZeRO `stage` (0-3), as a Fraction."""
    n, g = Fraction(n), Fraction(gpus)
    return {0: (param + grad + k) * n,  # plain data parallelism: nothing partitioned
            1: (param + grad + k / g) * n,  # the optimizer state partitioned over the G GPUs
            2: (param + (grad + k) / g) * n,  # ... and the gradients
            3: (param + grad + k) * n / g}[stage]  # ... and the parameters


N_PAPER, G_PAPER = 7_500_000_000, 64
PAPER_FIGURE_1_GB = [120, 31.4, 16.6, 1.9]
print(f"{'7.5B params':<13}" + "".join(f"{'G = ' + str(gp):>12}" for gp in (1, 8, 64, 1024)))
for stage in range(4):
    cells = [float(zero_bytes_per_gpu(N_PAPER, gp, stage)) / 1e9 for gp in (1, 8, 64, 1024)]
    print(f"stage {stage:<7}" + "".join(f"{c:>9.4g} GB" for c in cells))
check("ZeRO paper, Figure 1 (7.5B on 64 GPUs, GB per GPU)",
      [round(float(zero_bytes_per_gpu(N_PAPER, G_PAPER, s)) / 1e9, 1) for s in range(4)],
      PAPER_FIGURE_1_GB)
check("stage 0 is the notes' 16 bytes / param",
      zero_bytes_per_gpu(N_PAPER, 64, 0) / N_PAPER, Fraction(bytes_per_param("mixed_bf16_adamw")))
check("stages 1 and 2 at G = 10^6: bytes / param, still above 4 and 2",
      [float(zero_bytes_per_gpu(N_PAPER, 10**6, s) / N_PAPER) for s in (1, 2)], [4.000012, 2.000014])

# %% [markdown] slideshow={"slide_type": "subslide"}
# The paper's Figure 1 as a picture: the same 7.5B model on 64 GPUs, each stage's bar split
# into what is left of the parameters, the gradients and the optimizer state on one GPU.
# `zero_bytes_per_gpu` is linear in its three byte counts, so each part is the function
# with the other two set to zero. The dashed line is one 80 GB H100.

# %% caption="Training state per GPU for 7.5B parameters on 64 GPUs at ZeRO stages 0-3, split into parameters, gradients and optimizer state, with the 80 GB line." slideshow={"slide_type": "subslide"}
PARTS = {"parameters (bf16)": {"param": 2, "grad": 0, "k": 0},
         "gradients (bf16)": {"param": 0, "grad": 2, "k": 0},
         "optimizer state (fp32 master, m, v)": {"param": 0, "grad": 0, "k": 12}}
H100_GB = 80
part_gb = {part: [float(zero_bytes_per_gpu(N_PAPER, G_PAPER, s, **kw)) / 1e9 for s in range(4)]
           for part, kw in PARTS.items()}
totals_gb = [sum(gb[s] for gb in part_gb.values()) for s in range(4)]
with plt.rc_context({"font.size": 13}):
    fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
    bottom = np.zeros(4)
    for (part, gb), color in zip(part_gb.items(), ("C0", "C1", "C2"), strict=True):
        ax.bar(range(4), gb, bottom=bottom, color=color, label=part)
        bottom += gb
    for s, total in enumerate(totals_gb):
        ax.annotate(f"{total:.4g} GB", (s, total), textcoords="offset points", xytext=(0, 4),
                    ha="center", va="bottom")
    ax.axhline(H100_GB, color="black", ls="--", lw=1.5, label=f"one H100: {H100_GB} GB")
    ax.set_xticks(range(4), ["stage 0\n(plain DP)", "stage 1\n(+ state sharded)",
                             "stage 2\n(+ gradients)", "stage 3\n(+ parameters)"])
    ax.set_ylim(0, 135)
    ax.set_ylabel("GB per GPU")
    ax.set_title(f"ZeRO: training state per GPU, 7.5B parameters on {G_PAPER} GPUs", loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the bars, never on them
    plt.show()
check("bar heights (GB) are the paper's Figure 1", [round(t, 1) for t in totals_gb], PAPER_FIGURE_1_GB)
check("stage 0 bar: parameters, gradients, optimizer state (GB)",
      [gb[0] for gb in part_gb.values()], [15.0, 15.0, 90.0])
check("stages under the 80 GB line", [s for s in range(4) if totals_gb[s] <= H100_GB], [1, 2, 3])

# %% [markdown] slideshow={"slide_type": "subslide"}
# Stages 1 and 2 flatten out as $G$ grows: each GPU still holds the full bf16 parameters
# (and, in stage 1, the gradients), so they bottom out at 4 and 2 bytes per parameter.
# Only stage 3 keeps falling as $1/G$, and it pays for that by gathering every layer's
# parameters over the network before using them (Lectures 7–8).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### One point measured: ZeRO stage 1 on two processes
#
# `lecture_utils.optim.zero_state_bytes()` runs torch's `ZeroRedundancyOptimizer` with
# AdamW on 2 CPU processes (gloo), for a bias-free stack of Linear layers of widths
# 256 → 512 → 512 → 256, and reports each rank's optimizer state. Unsharded, AdamW's
# state would be $8N$ bytes ($m$ and $v$ in fp32) plus torch's 4-byte step counter per
# tensor. Stage 1 on $G = 2$ should leave about half of it on each rank; not exactly
# half, because whole tensors are assigned to ranks.

# %% slideshow={"slide_type": "subslide"}
SIZES = (256, 512, 512, 256)
n_zero = sum(a * b for a, b in zip(SIZES[:-1], SIZES[1:], strict=True))
n_tensors = len(SIZES) - 1
one_rank_total = 8 * n_zero + 4 * n_tensors
ranks = zero_state_bytes(SIZES, world_size=2)
print(f"unsharded AdamW state: 8 x {n_zero:,} + 4 x {n_tensors} = {one_rank_total:,} B")
for row in ranks:
    print(f"rank {row['rank']}: {row['params']:,} params, {row['state_bytes']:,} B "
          f"({row['state_bytes'] / one_rank_total:.4f} of the total)")
check("each parameter lives on exactly one rank", sum(row["params"] for row in ranks), n_zero)
check("the ranks' state adds up to the unsharded total",
      sum(row["state_bytes"] for row in ranks), one_rank_total)
for row in ranks:
    check(f"rank {row['rank']}: within 1% of half", row["state_bytes"], one_rank_total / 2, rel=0.01)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.2 Way out 2: compressing the state (8-bit optimizers, Adafactor)
#
# Instead of splitting the state, store less of it.
#
# * **8-bit Adam** (Dettmers et al., 2022) keeps $m$ and $v$ as 8-bit codes, 1 byte each,
#   in blocks that each carry one fp32 scale (the block's absolute maximum). The paper
#   uses blocks of 2048; later bitsandbytes releases use 256. Per parameter that is
#   $2 + 2 \cdot 4/B$ bytes instead of 8. (bitsandbytes also keeps tensors with fewer
#   than 4096 elements in 32-bit, which costs little in a large model.)
# * **Adafactor** (Shazeer & Stern, 2018) keeps, for an $r \times c$ matrix, only one
#   running average of $g^2$ per row and one per column, and rebuilds $v$ from their
#   (normalised) outer product: $r + c$ numbers instead of $r c$, so $2d$ instead of
#   $d^2$ for a $d \times d$ matrix. By default it keeps no first moment at all.
#
# Computed for one 2048 × 2048 matrix, and Adafactor measured on `torch.optim.Adafactor`
# (bitsandbytes is not installed here, so the 8-bit rows stay arithmetic):

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Compress instead of splitting: 8-bit states cost 2 bytes per parameter, Adafactor's factored v almost 0.
# - Run the Adafactor cell: its state for a 2048 x 2048 matrix is two vectors, (rows + cols) x 4 bytes.

# %% slideshow={"slide_type": "subslide"}
D = 2048
numel = D * D
state_rows = {
    "AdamW, fp32 m + v": 2 * numel * 4,
    "8-bit Adam, blocks of 2048": 2 * numel * 1 + 2 * math.ceil(numel / 2048) * 4,
    "8-bit Adam, blocks of 256": 2 * numel * 1 + 2 * math.ceil(numel / 256) * 4,
    "Adafactor (factored v, no m)": (D + D) * 4,
    "Adafactor + fp32 m": (D + D) * 4 + numel * 4,
}
print(f"{'state of one 2048 x 2048 matrix':<32} {'bytes':>12} {'B / param':>10}")
for label, b in state_rows.items():
    print(f"{label:<32} {b:>12,} {b / numel:>10.4g}")

check("8-bit, blocks of 2048: bytes / param", Fraction(state_rows["8-bit Adam, blocks of 2048"], numel),
      2 + Fraction(8, 2048))
check("8-bit, blocks of 256: bytes / param", Fraction(state_rows["8-bit Adam, blocks of 256"], numel),
      2 + Fraction(8, 256))
check("Adafactor / AdamW state for a d x d matrix == 1 / d",
      Fraction(state_rows["Adafactor (factored v, no m)"], state_rows["AdamW, fp32 m + v"]),
      Fraction(1, D))

matrix, bias = torch.zeros(D, D), torch.zeros(D)
matrix.grad, bias.grad = torch.ones(D, D), torch.ones(D)
adafactor = torch.optim.Adafactor([matrix, bias])
adafactor.step()
for label, tensor in (("matrix", matrix), ("bias", bias)):
    print(f"torch.optim.Adafactor, {label}: " + ", ".join(
        f"{k} {tuple(v.shape)}" for k, v in adafactor.state[tensor].items()))
check("measured: Adafactor state of the matrix == (rows + cols) * 4 + 4-byte step",
      sum(tensor_bytes(v) for v in adafactor.state[matrix].values()), (D + D) * 4 + 4)
check("measured: a vector is not factored (full v + step)",
      sum(tensor_bytes(v) for v in adafactor.state[bias].values()), D * 4 + 4)

# %% [markdown] slideshow={"slide_type": "subslide"}
# Both are approximations, and neither is free. An 8-bit state is a lossy copy that must
# be dequantised and requantised at every step, and factoring $v$ assumes that the
# second moment is close to rank one. The savings are large all the same: 8 → 2 bytes per
# parameter for 8-bit Adam, and essentially 8 → 0 for Adafactor's matrices. Both combine
# with sharding.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - SGD keeps no state; momentum, AdaGrad and RMSProp one copy of the parameters; Adam
#   and AdamW two ($m$ and $v$).
# - Adam's bias correction fixes the zero-initialised moments; without it the first steps
#   are mostly too large, not too small.
# - AdamW decays every weight at the same rate $\eta\lambda$; Adam + L2 barely regularises
#   the weights with large gradients.
# - fp32 AdamW costs 16 bytes per parameter (4 + 4 + 4 + 4), the mixed-precision recipe
#   also 16 (2 + 2 + 4 + 4 + 4), before activations.
# - The ways out: shard the state across GPUs (ZeRO 1–3), or compress it (8-bit states,
#   Adafactor's factored second moment).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - Read the bullets; ask which optimizer keeps no state (SGD) and which two keep two copies (Adam, AdamW).
# - The one number to leave with: 16 bytes per parameter before activations.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...` in each exercise cell, then run it and the check cell below it: the check
# says "not answered yet", right, or not right yet, without giving the answer away. Expand the
# hidden solution cell only after you have tried.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# - E7.1 is the state table times 7B: give two minutes, then run its check cell.
# - E7.2 reuses zero_bytes_per_gpu; ask for the stage first, then the 20% held back.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E7.1 Optimizer state of a 7B model: momentum, AdamW, 8-bit Adam
#
# A model with 7 billion parameters is trained in fp32. How many GB ($10^9$ bytes) of
# optimizer state does (a) SGD with momentum keep, (b) AdamW, (c) 8-bit Adam with blocks of
# 2048 (treat the model as one long tensor)? Start from the copies-of-the-parameters column
# of the state table and the 8-bit rows above; ignore torch's 4-byte `step` counters.

# %% tags=["exercise"]
e7_1_momentum_gb = ...  # GB of state for SGD with momentum
e7_1_adamw_gb = ...  # GB of state for AdamW
e7_1_8bit_gb = ...  # GB of state for 8-bit Adam, blocks of 2048

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E7.1 (a) momentum state (GB)", e7_1_momentum_gb)
check_answer("E7.1 (b) AdamW state (GB)", e7_1_adamw_gb)
check_answer("E7.1 (c) 8-bit Adam state (GB)", e7_1_8bit_gb)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. Momentum keeps one fp32 copy of the parameters: 4 B * 7e9 = 28 GB. AdamW keeps two
# (m and v): 56 GB, more than the 28 GB of the weights themselves. 8-bit Adam keeps m and v as
# 1-byte codes plus one fp32 scale per block of 2048 for each: 2 + 8/2048 B per parameter,
# 14.03 GB, a quarter of AdamW's.
N_7B = 7_000_000_000
copies = {name: ours[name] / param_bytes for name in ("momentum", "adamw")}  # measured above
e7_1_momentum_gb = copies["momentum"] * 4 * N_7B / 1e9
e7_1_adamw_gb = copies["adamw"] * 4 * N_7B / 1e9
e7_1_8bit_gb = state_rows["8-bit Adam, blocks of 2048"] / numel * N_7B / 1e9
check("copies of the parameters: momentum, AdamW", (copies["momentum"], copies["adamw"]), (1.0, 2.0))
check("8-bit Adam, blocks of 2048: GB for 7B", e7_1_8bit_gb, (2 + 8 / 2048) * 7, rel=1e-12)
check("8-bit Adam / AdamW state", e7_1_8bit_gb / e7_1_adamw_gb, 0.2505, rel=1e-3)
check_answer("E7.1 (a) momentum state (GB)", e7_1_momentum_gb)
check_answer("E7.1 (b) AdamW state (GB)", e7_1_adamw_gb)
check_answer("E7.1 (c) 8-bit Adam state (GB)", e7_1_8bit_gb)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### E7.2 Which ZeRO stage does a 13B model need?
#
# You train a 13B-parameter model with mixed-precision Adam (2 + 2 + 12 bytes per
# parameter) on 8 GPUs of 80 GB. How many GB per GPU does stage 1 need? What is the smallest
# ZeRO stage whose training state fits? And if you hold back 20% of each GPU for activations
# and buffers?

# %% tags=["exercise"]
e7_2_stage1_gb = ...  # GB per GPU of training state at ZeRO stage 1
e7_2_stage_80 = ...  # smallest stage (0-3) that fits in 80 GB
e7_2_stage_64 = ...  # smallest stage that fits with 20% of each GPU held back

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
check_answer("E7.2 stage 1 per GPU (GB)", e7_2_stage1_gb)
check_answer("E7.2 smallest stage in 80 GB", e7_2_stage_80)
check_answer("E7.2 smallest stage in 64 GB", e7_2_stage_64)

# %% jupyter={"outputs_hidden": true, "source_hidden": true} slideshow={"slide_type": "skip"} tags=["solution"]
# Answer. Stage 0 needs 16 * 13e9 = 208 GB per GPU: no. Stage 1 needs (4 + 12/8) * 13e9 =
# 71.5 GB: it fits, just. With 20% held back only 64 GB is usable, and stage 1 no longer
# fits; stage 2 needs (2 + 14/8) * 13e9 = 48.75 GB and does. Sharding the optimizer state
# alone already removes most of the 16 bytes. Sharding the gradients as well is what makes
# room for activations.
N_13B = 13_000_000_000


def smallest_stage(budget):
    return next(s for s in range(4) if zero_bytes_per_gpu(N_13B, 8, s) <= budget)


for s in range(4):
    print(f"stage {s}: {float(zero_bytes_per_gpu(N_13B, 8, s)) / 1e9:g} GB per GPU")
check("stage 1 needs (GB)", float(zero_bytes_per_gpu(N_13B, 8, 1)) / 1e9, 71.5)
check("smallest stage that fits in 80 GB", smallest_stage(80e9), 1)
check("smallest stage that fits in 64 GB (20% held back)", smallest_stage(0.8 * 80e9), 2)
e7_2_stage1_gb = float(zero_bytes_per_gpu(N_13B, 8, 1)) / 1e9
e7_2_stage_80, e7_2_stage_64 = smallest_stage(80e9), smallest_stage(0.8 * 80e9)
check_answer("E7.2 stage 1 per GPU (GB)", e7_2_stage1_gb)
check_answer("E7.2 smallest stage in 80 GB", e7_2_stage_80)
check_answer("E7.2 smallest stage in 64 GB", e7_2_stage_64)
