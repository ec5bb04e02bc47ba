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
# The lecture's core path for §7.1–§7.2 (about 15 minutes to read); each section ends in a
# "Going deeper" part. A `✓` line is an assertion.

# %%
from lecture_utils import setup; device = setup()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.1 From SGD to AdamW
#
# $g$ is the gradient, $\eta$ (`lr`) the learning rate, $\theta$ the parameters. Each
# `update` writes the notes' formulas, one line per term, with torch.optim's names
# (`weight_decay` is L2: $\lambda\theta$ added to $g$).

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Say: one `update` per optimizer, one line per term of the notes' formulas.
# - Ask the room: which of the six keep no state, which two tensors per parameter?

# %%
import gc

import matplotlib.pyplot as plt
import torch

from lecture_utils import check, measured
from lecture_utils.optim import descend  # descend(optimizer_class, grad, start, steps, **hyper): the points visited

# %% slideshow={"slide_type": "slide"}
# @save lecture_utils/optim.py
class UpdateRule(torch.optim.Optimizer):
    # What the six share: each parameter with a gradient gets `update`, with its own `state`
    # and its group's hyper-parameters by name (lr=..., weight_decay=...; **_ takes the rest).
    @torch.no_grad()  # an update is not part of any graph
    def step(self, closure=None):
        with torch.enable_grad():
            loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.update(p, p.grad, self.state[p], **group)
        return loss


# %% slideshow={"slide_type": "slide"}
# @save lecture_utils/optim.py
class SGD(UpdateRule):
    def __init__(self, params, lr=1e-3, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))

    def update(self, p, g, state, lr, weight_decay, **_):
        g = g + weight_decay * p  # L2: lambda theta joins the gradient
        p -= lr * g  # theta <- theta - lr g


class Momentum(UpdateRule):
    def __init__(self, params, lr=1e-3, momentum=0.9, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    def update(self, p, g, state, lr, momentum, weight_decay, **_):
        g = g + weight_decay * p
        # b <- mu b + g (b starts at 0): torch's convention, a decaying sum that grows to
        # g / (1 - mu); the notes' "moving average", mu b + (1 - mu) g, needs a 10x larger lr
        b = state["momentum_buffer"] = momentum * state.get("momentum_buffer", 0) + g
        p -= lr * b  # theta <- theta - lr b


# %% slideshow={"slide_type": "slide"}
# @save lecture_utils/optim.py
class AdaGrad(UpdateRule):  # a step size per coordinate: divide by the root of a sum of g^2
    def __init__(self, params, lr=1e-2, eps=1e-10, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, eps=eps, weight_decay=weight_decay))

    def update(self, p, g, state, lr, eps, weight_decay, **_):
        g = g + weight_decay * p
        # s <- s + g^2, as one fused multiply-add (so it rounds as torch.optim's does)
        s = torch.addcmul(state.get("sum", torch.zeros_like(p)), g, g)
        state.update(step=state.get("step", 0) + 1, sum=s)
        p -= lr * g / (s.sqrt() + eps)  # theta <- theta - lr g / (sqrt(s) + eps)


class RMSProp(UpdateRule):  # ... or of a moving average of g^2
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay))

    def update(self, p, g, state, lr, alpha, eps, weight_decay, **_):
        g = g + weight_decay * p
        # s <- alpha s + (1 - alpha) g^2, starting at 0
        s = alpha * state.get("square_avg", 0) + (1 - alpha) * g**2
        state.update(step=state.get("step", 0) + 1, square_avg=s)
        p -= lr * g / (s.sqrt() + eps)  # theta <- theta - lr g / (sqrt(s) + eps)


# %% [markdown] slideshow={"slide_type": "slide"}
# Adam averages $g$ and $g^2$ and corrects both for their start at 0: after one step
# $m = 0.1\,g$ and $v = 0.001\,g^2$, divided by $1-\beta^t$ exactly $g$ and $g^2$. AdamW
# first shrinks $\theta$ by $\eta\lambda\theta$.

# %% slideshow={"slide_type": "slide"}
# @save lecture_utils/optim.py
class Adam(UpdateRule):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def update(self, p, g, state, lr, betas, eps, weight_decay, **_):
        b1, b2 = betas
        g = g + weight_decay * p  # Adam's weight_decay is L2: divided by sqrt(v_hat) below
        t = state["step"] = state.get("step", 0) + 1
        # m <- b1 m + (1 - b1) g and v <- b2 v + (1 - b2) g^2, both starting at 0
        m = state["exp_avg"] = b1 * state.get("exp_avg", 0) + (1 - b1) * g
        v = state["exp_avg_sq"] = b2 * state.get("exp_avg_sq", 0) + (1 - b2) * g**2
        m_hat = m / (1 - b1**t)  # bias correction
        v_hat = v / (1 - b2**t)
        p -= lr * m_hat / (v_hat.sqrt() + eps)  # theta <- theta - lr m_hat / (sqrt(v_hat) + eps)


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr, betas, eps, weight_decay)

    def update(self, p, g, state, lr, weight_decay, **hyper):
        p *= 1 - lr * weight_decay  # theta <- theta - lr lambda theta, outside the gradient
        super().update(p, g, state, lr=lr, weight_decay=0.0, **hyper)  # then Adam, without L2

# %% slideshow={"slide_type": "slide"} tags=["claim-S31"]
# Ours against torch.optim, 100 steps of a least-squares fit (tests/test_optim.py: 1,000 steps
# of a small network, with L2 and other betas too). descend (lecture_utils.optim) runs an
# optimizer from `start` with the gradient grad(theta) and returns every point it visits.
A = torch.randn(32, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
fit = (lambda theta: A.T @ (A @ theta - 1), [0.0] * 16, 100)  # the gradient of |A theta - 1|^2 / 2
TWINS = {SGD: (torch.optim.SGD, {}), Momentum: (torch.optim.SGD, {"momentum": 0.9}), AdaGrad: (torch.optim.Adagrad, {}),
         RMSProp: (torch.optim.RMSprop, {}), Adam: (torch.optim.Adam, {}), AdamW: (torch.optim.AdamW, {})}
for ours, (theirs, hyper) in TWINS.items():
    check(f"{ours.__name__} takes torch.optim.{theirs.__name__}'s 100 steps",
          descend(ours, *fit, lr=0.01, **hyper), descend(theirs, *fit, lr=0.01, **hyper), rel=1e-9)
# %% [markdown] slideshow={"slide_type": "slide"}
# ### Adam + L2 versus AdamW: who gets regularised?
#
# The notes: L2 inside Adam is divided by $\sqrt{\hat v}$, so weights with large gradients
# are barely regularised. Two weights from 1, gradients alternating $\pm 10^{-3}$ and
# $\pm 10^2$, 1,000 steps; each as a fraction of the run without decay:

# %% slideshow={"slide_type": "-"} tags=["claim-S32"]
def after_1000_steps(optimizer_class, weight_decay):
    grads = iter(torch.tensor([1e-3, 1e2], dtype=torch.float64) * sign for sign in [1.0, -1.0] * 500)
    return descend(optimizer_class, lambda p: next(grads), [1.0, 1.0], 1000, lr=0.01, weight_decay=weight_decay)[-1]


kept = {cls.__name__: after_1000_steps(cls, 0.1) / after_1000_steps(cls, 0.0) for cls in (Adam, AdamW)}
check("AdamW: both weights keep (1 - lr wd)^1000", kept["AdamW"], torch.full_like(kept["AdamW"], 0.999**1000), rel=1e-3)
check("Adam + L2: the weight with large gradients keeps 99%", round(kept["Adam"][1].item(), 3), 0.99)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: the six optimizers up close
#
# Six optimizers on one valley, then the claims behind the picture, each checked:
# momentum's sum, the valley in closed form, AdaGrad's and RMSProp's effective learning
# rates, Adam's bias correction step by step and what happens without it, and Adam + L2 on
# small gradients.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Six optimizers on one valley
#
# A valley 50 times steeper across than along; its gradient is $(x, 50y)$:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.plots import plot_optimizer_paths

CURVATURE = torch.tensor([1.0, 50.0], dtype=torch.float64)
RUNS = {"SGD, lr 0.035": (SGD, 0.035), "Momentum 0.9, lr 0.035": (Momentum, 0.035), "AdaGrad, lr 1": (AdaGrad, 1.0),
        "RMSProp, lr 0.1": (RMSProp, 0.1), "Adam, lr 0.2": (Adam, 0.2), "AdamW, lr 0.2, wd 0.01": (AdamW, 0.2)}
paths = {name: descend(cls, lambda p: CURVATURE * p, (-8.0, 1.5), 60, lr=lr) for name, (cls, lr) in RUNS.items()}

# %% caption="Paths of the six optimizers on the valley f(x, y) = (x\u00b2 + 50 y\u00b2) / 2, all from the same start in 60 steps." slideshow={"slide_type": "skip"} tags=["deeper"]
plot_optimizer_paths(paths, curvature=(1, 50))
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# SGD zigzags across the valley and crawls along it: the steep direction caps its `lr`. The
# adaptive three scale each coordinate by its own gradient size. AdaGrad's sum only grows,
# so its steps die like $1/\sqrt t$; RMSProp's average does not.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Momentum: a decaying sum, not an average
#
# In torch's convention (ours above), $b_t = \mu b_{t-1} + g_t$ grows under a constant
# gradient to $g/(1-\mu) = 10g$ for $\mu = 0.9$. The averaging form
# $b_t = \mu b_{t-1} + (1-\mu) g_t$ is the same optimizer with $\eta$ multiplied by $1-\mu$,
# so a learning rate tuned in one convention is 10× off in the other.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
import math

import numpy as np

f64 = torch.float64
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
averaging = descend(Momentum, lambda p: CURVATURE * p, (-8.0, 1.5), 60, lr=0.035)
check("averaging form with lr / (1 - mu) == sum form with lr (the valley, 60 steps)",
      descend(Momentum, lambda p: (1 - mu) * CURVATURE * p, (-8.0, 1.5), 60, lr=0.035 / (1 - mu)),
      averaging, rel=1e-9)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### The valley, checked
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

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
short = {name: name.split()[0].rstrip(",") for name in paths}  # "SGD", "Momentum", ...
f = {short[name]: 0.5 * (CURVATURE * path**2).sum(-1) for name, path in paths.items()}
by_name = {short[name]: path for name, path in paths.items()}
print(f"{'optimizer':<27} {'f after 10':>10} {'30':>8} {'60 steps':>9}")
for name, fs in zip(RUNS, f.values(), strict=True):
    print(f"{name:<27} {fs[10].item():>10.3g} {fs[30].item():>8.3g} {fs[60].item():>9.3g}")
final = {name: fs[-1].item() for name, fs in f.items()}
sgd, lr_sgd, steps_n = by_name["SGD"], 0.035, 60
closed_form = torch.tensor([-8.0 * (1 - lr_sgd) ** steps_n, 1.5 * (1 - 50 * lr_sgd) ** steps_n], dtype=f64)
check("SGD: (x_N, y_N) == (x_0 (1 - lr)^N, y_0 (1 - 50 lr)^N)", sgd[-1], closed_form, rel=1e-12)
signs = torch.sign(sgd[:, 1])
check("SGD: steps (of 60) at which y changes sign", int((signs[1:] == -signs[:-1]).sum()), steps_n)
moduli = [np.abs(np.roots([1, -(1 + mu - lr_sgd * lam), mu])) for lam in CURVATURE.tolist()]
check("Momentum: every root has modulus sqrt(mu), along x and across y", np.concatenate(moduli),
      np.full(4, math.sqrt(mu)), rel=1e-9)
check("Momentum ends lower than SGD at the same lr", final["Momentum"] < final["SGD"], True)
for name, move in (("AdaGrad", 1.0), ("RMSProp", 0.1 / math.sqrt(1 - 0.99)), ("Adam", 0.2)):
    check(f"{name}: first step moves |dx| == |dy| == {move:g}", (by_name[name][1] - by_name[name][0]).abs(),
          torch.full((2,), move, dtype=f64), rel=1e-7)
check("with these lrs, every adaptive method ends below SGD",
      all(final[n] < final["SGD"] for n in ("AdaGrad", "RMSProp", "Adam", "AdamW")), True)
gap = (by_name["Adam"] - by_name["AdamW"]).norm(dim=1).max().item()
print(f"largest distance between the Adam and AdamW paths: {gap:.2f}")
check("AdamW's path stays within 0.3 of Adam's", gap < 0.3, True)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Two caveats keep this picture honest. The valley is *axis-aligned*, exactly the case a
# per-coordinate scale fixes; rotate it 45° and $\sqrt{s}$ can no longer tell the steep
# direction from the flat one. And a 2-D quadratic has no noise, where momentum and the
# moving averages earn most of their keep in real training. AdamW's decay,
# $\eta\lambda = 0.002$ per step, pulls towards the origin, here also the minimum, so its
# path stays close to Adam's.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### AdaGrad's and RMSProp's effective learning rates in closed form
#
# Feed both a constant gradient $g$ and read the effective learning rate
# $\eta / (\sqrt{s_t} + \epsilon)$ from the optimizer's own state:
#
# * AdaGrad sums: $s_t = t\,g^2$, so $\eta/\sqrt{s_t} = \eta / (|g|\sqrt t)$. It falls like
#   $1/\sqrt t$ for ever, however long the gradient stays informative.
# * RMSProp averages: $s_t = (1-\alpha^t)\,g^2$, so $\eta/\sqrt{s_t} = \eta /
#   (|g|\sqrt{1-\alpha^t}) \to \eta/|g|$. The step settles instead of dying.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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
check("AdaGrad's total distance < 2 eta sqrt(T)", ada_moved.sum().item() < 2 * LR * math.sqrt(T), True)

# %% caption="Effective learning rate against step on log axes: AdaGrad's falls like 1/\u221at, RMSProp's settles at \u03b7 / |g|." slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The plot shows a second thing the notes do not mention: RMSProp's *first* step is
# $1/\sqrt{1-\alpha} = 10$ times too large. Its average starts at $s_0 = 0$, so after one
# step it holds only $(1-\alpha) g^2 = 0.01\,g^2$ and underestimates $g^2$ a hundredfold.
# That zero-initialisation bias is what Adam corrects.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Adam's bias correction, step by step
#
# Under a constant gradient $m_t = (1-\beta_1^t)\,g$ and $v_t = (1-\beta_2^t)\,g^2$ start far
# too small; dividing by $1-\beta^t$ removes the bias exactly, so $\hat m_t = g$ and
# $\hat v_t = g^2$ from the first step on. So Adam's first step is $-\eta\,\mathrm{sign}(g)$,
# whatever the size of $g$:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
g = torch.tensor([1e-3, 1.0, 1e3, -50.0], dtype=torch.float64)
check("Adam's first step is -lr sign(g), for |g| from 1e-3 to 1e3", descend(Adam, lambda p: g, [0.0] * 4, 1, lr=0.01)[1],
      -0.01 * g.sign(), rel=1e-5)

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
beta1, beta2, lr = 0.9, 0.999, 0.01
p = torch.zeros(4, dtype=f64)
adam = Adam([p], lr=lr, betas=(beta1, beta2))
ms, vs = [], []
for _ in range(20):
    p.grad = g.clone()
    adam.step()
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# **What happens without the correction?** The notes say it compensates for the underestimate that
# the zero initialisation causes early on, which is true of $m$ and of $v$. One might
# conclude that uncorrected steps would be too small. But the step is their ratio: without correction
# it is the corrected one times $r(t) = (1-\beta_1^t) / \sqrt{1-\beta_2^t}$, and with the
# common $\beta_2 = 0.999$ the denominator is the smaller one: the first step is
# $0.1/\sqrt{0.001} = 3.2\times$ too *large*, and the error peaks at about $6.6\times$
# around step 12. With $\beta_2 = 0.95$, common for LLMs, the first eight steps are too small
# instead, and later ones up to 10% too large. We check $r(t)$ against an uncorrected Adam
# written out by hand, run side by side with the real one:

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% caption="Ratio of Adam's uncorrected to corrected step against step for \u03b2\u2082 = 0.999 and 0.95: up to 6.6x too large early on." slideshow={"slide_type": "skip"} tags=["deeper"]
fig, ax = plt.subplots(figsize=(7.0, 3.5))
for b2, ratio in r.items():
    ax.semilogx(steps_r, ratio, label=f"β₁ = 0.9, β₂ = {b2}")
ax.axhline(1, color="0.5", lw=1)
ax.set(xlabel="step t", ylabel="uncorrected / corrected step",
       title="Without bias correction, Adam's early steps are wrong by up to 6.6x")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Adam + L2 the other way round: small gradients
#
# The effect also runs the other way, which the notes do not say: for the weight with tiny
# gradients, $\lambda\theta = 0.1$ *is* most of its gradient, and Adam normalises it into a
# full $\eta$-sized step towards zero every step, so it is driven to zero. Adam + L2 decays
# each weight at a rate set by its gradient scale; per step, the large-gradient weight
# decays 100 times more slowly than under AdamW.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
per_step = {k: 1 - s ** (1 / 1000) for k, s in kept.items()}
check("Adam + L2, large gradients: kept exp(-T lr wd / 100)", round(kept["Adam"][1].item(), 4),
      math.exp(-1000 * 0.01 * 0.1 / 100), rel=1e-3)
check("Adam + L2, large gradients: 100x weaker decay per step than AdamW",
      round((per_step["AdamW"][1] / per_step["Adam"][1]).item(), 1), 100, rel=0.01)
check("Adam + L2, small gradients: decayed to almost nothing (kept < 0.1%)",
      kept["Adam"][0].item() < 1e-3, True)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.2 Why AdamW eats memory
#
# A state tensor has its parameter's shape, so the state is a whole number of copies of the
# model. Predict, then measure (`Allocated`, notebook 02): each optimizer's first step on a
# small MLP allocates exactly its state; then AdamW's ledger (§1.2: 4 + 4 + 4 + 4 bytes per
# parameter):

# %%
# @save lecture_utils/optim.py
def state_bytes(optimizer):  # bytes of every tensor the optimizer keeps in `optimizer.state`
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))


# %% slideshow={"slide_type": "slide"} tags=["claim-S33", "claim-S4"]
from lecture_utils.allocator import Allocated

model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128)).to(device)
params = list(model.parameters())  # every tensor a multiple of 512 bytes: the CUDA allocator's rounding
model(torch.randn(32, 128).to(device)).pow(2).mean().backward()  # gradients, then one step of each optimizer
n, param_bytes = sum(p.numel() for p in params), sum(p.nbytes for p in params)
copies, allocated = {}, {}
for cls in TWINS:
    optimizer = cls(params)
    gc.collect()  # the previous optimizer and its state are gone before the count starts
    with Allocated(device) as grown:
        optimizer.step()
    copies[cls.__name__], allocated[cls.__name__] = state_bytes(optimizer) / param_bytes, grown.bytes
    assert grown.bytes == state_bytes(optimizer), (cls, grown.bytes, state_bytes(optimizer))
check("optimizer state, in copies of the parameters", copies, dict(SGD=0, Momentum=1, AdaGrad=1, RMSProp=1, Adam=2, AdamW=2))
measured(f"bytes allocated by the first step (predicted: copies x {param_bytes:,})", allocated, "bytes")

# %% slideshow={"slide_type": "-"} tags=["claim-S4"]
ledger = {"weights": param_bytes / n, "gradients": sum(p.grad.nbytes for p in params) / n, "m and v": state_bytes(optimizer) / n}
check("fp32 AdamW, measured bytes per parameter", ledger, {"weights": 4, "gradients": 4, "m and v": 8})
check("the 16 bytes per parameter over the parameter's own 4: the notes' 4x", sum(ledger.values()) / ledger["weights"], 4.0)

# %% caption="Training state per parameter for each optimizer, measured after one step: weights, gradients, and the optimizer's state." slideshow={"slide_type": "slide"}
fig, ax = plt.subplots(figsize=(10, 2.6), layout="constrained")
names = list(copies)
ax.bar(names, [4] * len(names), label="weights (fp32)", color="C0")
ax.bar(names, [4] * len(names), bottom=[4] * len(names), label="gradients (fp32)", color="C1")
ax.bar(names, [4 * c for c in copies.values()], bottom=[8] * len(names), label="optimizer state (measured)", color="C2")
ax.set(ylabel="bytes per parameter", ylim=(0, 18), yticks=[0, 4, 8, 12, 16])
ax.legend(frameon=False, fontsize=12, loc="upper left")
plt.show()

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: torch.optim's state, mixed precision, and the memory inside `step()`
#
# torch.optim keeps the same tensors plus, for the adaptive optimizers, a 4-byte `step`
# tensor per parameter tensor (ours count steps in a Python int).
# `lecture_utils.training_memory.predict_training_memory` is modelled on torch.optim
# (tests/test_nb07_optim.py checks the two agree).

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
ours, theirs = {}, {}
print(f"{'optimizer':<9} {'state per parameter':<20} {'ours':>7} {'torch.optim':>11}")
for cls, (torch_cls, hyper) in TWINS.items():
    pair = (cls(params), torch_cls(params, **hyper))
    for opt in pair:
        model(torch.randn(32, 128).to(device)).pow(2).mean().backward()
        opt.step()
    name = cls.__name__
    ours[name], theirs[name] = state_bytes(pair[0]), state_bytes(pair[1])
    kept_names = ", ".join(k for k, v in pair[0].state[params[0]].items() if isinstance(v, torch.Tensor))
    print(f"{name:<9} {kept_names or '(none)':<20} {ours[name]:>7,} {theirs[name]:>11,}")
check("torch.optim - ours: 4 B of step per parameter tensor, adaptive optimizers only",
      [theirs[n] - ours[n] for n in ours], [0, 0, 16, 16, 16, 16])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# In the mixed-precision recipe of §1.2 (bf16 weights 2 + bf16 gradients 2 + fp32 master
# weights, $m$ and $v$, 4 each) the total is again 16 bytes per parameter, 4× the fp32
# master copy but 8× the bf16 weights the model computes with; its optimizer state alone
# (master, $m$, $v$) is 6× those weights.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.recipes import bytes_per_param, param_breakdown
from lecture_utils.sizes import tensor_bytes

mixed = param_breakdown("mixed_bf16_adamw")
check("mixed bf16 AdamW: bytes / param", bytes_per_param("mixed_bf16_adamw"), 16)
check("... over the bf16 weight's bytes", bytes_per_param("mixed_bf16_adamw") / mixed["weights (bf16)"], 8.0)
check("... optimizer state (master + m + v) over the bf16 weight's bytes",
      (mixed["master weights"] + mixed["adam m"] + mixed["adam v"]) / mixed["weights (bf16)"], 6.0)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### On a GPU: the memory *inside* `step()`
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

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils import cuda_only, measured
from lecture_utils.sizes import format_bytes

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
    measured("AdamW foreach: extra peak over the for-loop step",
             format_bytes(peak_extra["foreach"] - peak_extra["for-loop"]), per_device=True, ref="adamw-foreach-extra")
    measured("AdamW fused: extra peak during step()", format_bytes(peak_extra["fused"]), per_device=True,
             ref="adamw-fused-extra")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## §7.2 The ways out: sharding and compressing the state
#
# **Sharding.** ZeRO (Rajbhandari et al., SC 2020) splits the state over $G$ data-parallel
# GPUs in stages: optimizer state (1), gradients (2), parameters (3). Mixed-precision Adam:
# 2 + 2 + 12 bytes, the notes' 16.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - Write 2 + 2 + K/G on the board for stage 1; ask the room what stage 3 divides by G.

# %% slideshow={"slide_type": "slide"} tags=["claim-S33"]
from fractions import Fraction


def zero_bytes_per_gpu(n, gpus, stage, param=2, grad=2, k=12):
    # Training-state bytes per GPU for n parameters at ZeRO `stage` (0: plain data parallel):
    # from stage 1 on the optimizer state is split over the GPUs, from 2 the gradients, at 3 the parameters.
    split = lambda nbytes, from_stage: Fraction(nbytes, gpus) if stage >= from_stage else nbytes  # noqa: E731
    return n * (split(k, 1) + split(grad, 2) + split(param, 3))


check("7.5B parameters on 64 GPUs, GB per GPU at stages 0-3 (the paper's Figure 1)",
      [round(float(zero_bytes_per_gpu(7_500_000_000, 64, s)) / 1e9, 1) for s in range(4)], [120.0, 31.4, 16.6, 1.9])

# %% [markdown] slideshow={"slide_type": "slide"}
# **Compressing.** 8-bit Adam (Dettmers et al., 2022) stores $m$, $v$ as 1-byte codes, one
# fp32 scale per block of 2048. Adafactor (Shazeer & Stern, 2018) keeps one average of
# $g^2$ per row and per column of a matrix, and no $m$:

# %% slideshow={"slide_type": "-"} tags=["claim-S33"]
matrix = torch.zeros(2048, 2048)
matrix.grad = torch.ones_like(matrix)
adafactor = torch.optim.Adafactor([matrix])
adafactor.step()
check("Adafactor on a 2048 x 2048 matrix: a row and a column of fp32, and a 4-byte step", state_bytes(adafactor), (2048 + 2048) * 4 + 4)

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ### Going deeper: ZeRO stage by stage, a measured stage 1, and what compression costs
#
# `zero_bytes_per_gpu` is exact (Fractions). Across $G$, stages 1 and 2 flatten out: each
# GPU still holds the full bf16 parameters (and, in stage 1, the gradients), so they bottom
# out at 4 and 2 bytes per parameter. Only stage 3 keeps falling as $1/G$, and it pays for
# that by gathering every layer's parameters over the network before using them
# (Lectures 7–8). For plain fp32 AdamW, pass `param=4, grad=4, k=8`.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
N_PAPER, G_PAPER = 7_500_000_000, 64
PAPER_FIGURE_1_GB = [120, 31.4, 16.6, 1.9]
print(f"{'7.5B params':<13}" + "".join(f"{'G = ' + str(gp):>12}" for gp in (1, 8, 64, 1024)))
for stage in range(4):
    cells = [float(zero_bytes_per_gpu(N_PAPER, gp, stage)) / 1e9 for gp in (1, 8, 64, 1024)]
    print(f"stage {stage:<7}" + "".join(f"{c:>9.4g} GB" for c in cells))
check("stage 0 is the notes' 16 bytes / param",
      zero_bytes_per_gpu(N_PAPER, 64, 0) / N_PAPER, Fraction(bytes_per_param("mixed_bf16_adamw")))
check("stages 1 and 2 at G = 10^6: bytes / param, still above 4 and 2",
      [float(zero_bytes_per_gpu(N_PAPER, 10**6, s) / N_PAPER) for s in (1, 2)], [4.000012, 2.000014])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# The paper's Figure 1 as a picture: each stage's bar split into what is left of the
# parameters, the gradients and the optimizer state on one GPU. `zero_bytes_per_gpu` is
# linear in its three byte counts, so each part is the function with the other two set to
# zero. The dashed line is one 80 GB H100.

# %% caption="Training state per GPU for 7.5B parameters on 64 GPUs at ZeRO stages 0-3, split into parameters, gradients and optimizer state, with the 80 GB line." slideshow={"slide_type": "skip"} tags=["deeper"]
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

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### One point measured: ZeRO stage 1 on two processes
#
# `lecture_utils.optim.zero_state_bytes()` runs torch's `ZeroRedundancyOptimizer` with
# AdamW on 2 CPU processes (gloo), for a bias-free stack of Linear layers of widths
# 256 → 512 → 512 → 256, and reports each rank's optimizer state. Unsharded, AdamW's
# state would be $8N$ bytes ($m$ and $v$ in fp32) plus torch's 4-byte step counter per
# tensor. Stage 1 on $G = 2$ should leave about half of it on each rank; not exactly
# half, because whole tensors are assigned to ranks.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
from lecture_utils.optim import zero_state_bytes

SIZES = (256, 512, 512, 256)
n_zero = sum(a * b for a, b in zip(SIZES[:-1], SIZES[1:], strict=True))
n_tensors = len(SIZES) - 1
one_rank_total = 8 * n_zero + 4 * n_tensors
ranks = zero_state_bytes(SIZES, world_size=2)
print(f"unsharded AdamW state: 8 x {n_zero:,} + 4 x {n_tensors} = {one_rank_total:,} B")
for row in ranks:
    print(f"rank {row['rank']}: {row['params']:,} params, {row['state_bytes']:,} B "
          f"({row['state_bytes'] / one_rank_total:.4f} of the total)")
check("the ranks' state adds up to the unsharded total", sum(row["state_bytes"] for row in ranks), one_rank_total)
check("each rank holds half of it, within 1%", [round(row["state_bytes"] / one_rank_total, 2) for row in ranks],
      [0.5, 0.5])

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# #### Compression in more detail
#
# The 8-bit paper uses blocks of 2048; later bitsandbytes releases use 256, and keep
# tensors with fewer than 4096 elements in 32-bit (which costs little in a large model).
# Adafactor with a first moment pays 4 bytes per parameter for $m$ again. A vector (a bias)
# has no rows and columns to factor, so Adafactor keeps its full $v$.

# %% slideshow={"slide_type": "skip"} tags=["deeper"]
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
check("8-bit, blocks of 256: bytes / param", Fraction(state_rows["8-bit Adam, blocks of 256"], numel),
      2 + Fraction(8, 256))
check("Adafactor / AdamW state for a d x d matrix == 1 / d",
      Fraction(state_rows["Adafactor (factored v, no m)"], state_rows["AdamW, fp32 m + v"]), Fraction(1, D))
bias = torch.zeros(D)
bias.grad = torch.ones(D)
adafactor = torch.optim.Adafactor([matrix, bias])
adafactor.step()
for label, tensor in (("matrix", matrix), ("bias", bias)):
    print(f"torch.optim.Adafactor, {label}: " + ", ".join(
        f"{k} {tuple(v.shape)}" for k, v in adafactor.state[tensor].items()))
check("measured: a vector is not factored (full v + step)",
      sum(tensor_bytes(v) for v in adafactor.state[bias].values()), D * 4 + 4)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# Both are approximations, and neither is free. An 8-bit state is a lossy copy that must
# be dequantised and requantised at every step, and factoring $v$ assumes that the
# second moment is close to rank one. The savings are large all the same: 8 → 2 bytes per
# parameter for 8-bit Adam, and essentially 8 → 0 for Adafactor's matrices. Both combine
# with sharding.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What to remember
#
# - State in copies of the parameters: SGD 0; momentum, AdaGrad, RMSProp 1; Adam(W) 2.
# - AdamW decays every weight alike; L2 inside Adam spares large gradients.
# - fp32 AdamW: 16 bytes per parameter, 4× the parameter.
# - Ways out: shard the state (ZeRO) or compress it (8-bit, Adafactor).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# Fill in the `...`, run the cell and the check under it (it says whether you are right,
# not the answer), then expand the hidden solution.

# %% [markdown] jupyter={"source_hidden": true} slideshow={"slide_type": "notes"}
# **For the presenter**
#
# - E7.1 scales this notebook's measurements up to 7B: two minutes. E7.2 (after the lecture) reuses zero_bytes_per_gpu.

# %% [markdown] slideshow={"slide_type": "-"}
# ### E7.1 Optimizer state of a 7B model: AdamW and 8-bit Adam
#
# A 7B model. How many GB ($10^9$ bytes) of optimizer state does (a) fp32 AdamW keep,
# (b) 8-bit Adam, blocks of 2048 (the model as one long tensor)?

# %% tags=["exercise"]
e7_1_adamw_gb = ...  # GB of state for AdamW
e7_1_8bit_gb = ...  # GB of state for 8-bit Adam, blocks of 2048

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check"]
from lecture_utils import check_answer

check_answer("E7.1 (a) AdamW state (GB)", e7_1_adamw_gb)
check_answer("E7.1 (b) 8-bit Adam state (GB)", e7_1_8bit_gb)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. AdamW keeps two fp32 copies of the parameters (m and v), 8 bytes per parameter: 8
# \* 7e9 = 56 GB, twice the 28 GB of the weights themselves. 8-bit Adam keeps m and v as
# 1-byte codes plus one fp32 scale per block of 2048 for each: 2 + 8/2048 bytes per
# parameter, 14.03 GB, a quarter of AdamW's.
#
# ```python
# e7_1_adamw_gb = copies["AdamW"] * 4 * 7e9 / 1e9
# e7_1_8bit_gb = (2 + 2 * 4 / 2048) * 7e9 / 1e9
# check_answer("E7.1 (a) AdamW state (GB)", e7_1_adamw_gb)
# check_answer("E7.1 (b) 8-bit Adam state (GB)", e7_1_8bit_gb)
# ```
#
# </details>

# %% [markdown] jp-MarkdownHeadingCollapsed=true slideshow={"slide_type": "skip"} tags=["deeper"]
# ## Going deeper: more exercises
#
# One more exercise, for practice after the lecture: which ZeRO stage a 13B model needs.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["deeper"]
# ### E7.2 Which ZeRO stage does a 13B model need?
#
# A 13B model, mixed-precision Adam (2 + 2 + 12 bytes per parameter), 8 GPUs of 80 GB. GB
# per GPU at stage 1? The smallest stage that fits with 20% held back for activations?

# %% slideshow={"slide_type": "skip"} tags=["exercise", "deeper"]
e7_2_stage1_gb = ...  # GB per GPU of training state at ZeRO stage 1
e7_2_stage_64 = ...  # smallest stage (0-3) that fits with 20% of each GPU held back

# %% jupyter={"source_hidden": true} slideshow={"slide_type": "skip"} tags=["exercise-check", "deeper"]
from lecture_utils import check_answer

check_answer("E7.2 stage 1 per GPU (GB)", e7_2_stage1_gb)
check_answer("E7.2 smallest stage in 64 GB", e7_2_stage_64)

# %% [markdown] slideshow={"slide_type": "skip"} tags=["solution", "deeper"]
# <details>
# <summary><b>Solution</b> (open it once you have tried)</summary>
#
# Answer. Stage 0 needs 16 \* 13e9 = 208 GB per GPU. Stage 1 needs (4 + 12/8) \* 13e9 = 71.5
# GB: it fits in 80 GB, just. With 20% held back only 64 GB is usable, and stage 1 no longer
# fits; stage 2 needs (2 + 14/8) \* 13e9 = 48.75 GB and does. Sharding the optimizer state
# alone removes most of the 16 bytes; sharding the gradients as well is what makes room for
# activations.
#
# ```python
# e7_2_stage1_gb = float(zero_bytes_per_gpu(13e9, 8, 1)) / 1e9
# e7_2_stage_64 = next(s for s in range(4) if zero_bytes_per_gpu(13e9, 8, s) <= 0.8 * 80e9)
# check_answer("E7.2 stage 1 per GPU (GB)", e7_2_stage1_gb)
# check_answer("E7.2 smallest stage in 64 GB", e7_2_stage_64)
# ```
#
# </details>
