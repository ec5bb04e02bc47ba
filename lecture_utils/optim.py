"""Optimizers written from their update equations (§7.1), as torch.optim.Optimizer subclasses.

The lineage adds memory to the gradient, one piece at a time:

    SGD       theta -= lr * g                                            state: none
    Momentum  b = mu * b + g;            theta -= lr * b                 state: b
    AdaGrad   s = s + g^2;               theta -= lr * g / (sqrt(s) + eps)      state: s
    RMSProp   s = a * s + (1 - a) g^2;   theta -= lr * g / (sqrt(s) + eps)      state: s
    Adam      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
              theta -= lr * m_hat / (sqrt(v_hat) + eps), hats = bias-corrected   state: m, v
    AdamW     Adam, plus theta -= lr * wd * theta, *decoupled* from g        state: m, v

Hyper-parameter conventions are torch.optim's, so each can be checked against its
counterpart (tests/test_optim.py). The step count is a plain int in ``self.state``,
so the state tensors are exactly 0, 1, 1, 1, 2 and 2 copies of the parameters.
"""

from __future__ import annotations

import math
import numbers
import sys

import torch
from torch.optim import Optimizer


def _check(name: str, value, *, low: float = 0.0, low_open: bool = False, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"Invalid {name} value: {value!r} (must be a finite number)")
    if value < low or (low_open and value == low) or (high is not None and value >= high):
        bounds = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'})"
        raise ValueError(f"Invalid {name} value: {value!r} (must be in {bounds})")
    return float(value)


def _with_l2(g: torch.Tensor, p: torch.Tensor, weight_decay: float) -> torch.Tensor:
    """L2 regularisation folded into the gradient, torch.optim's ``weight_decay``: g + wd * theta."""
    return g.add(p, alpha=weight_decay) if weight_decay else g


class _Base(Optimizer):
    """Shared loop: for every parameter with a gradient, call ``_update``."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                self._update(p, p.grad, self.state[p], group)
        return loss

    def _update(self, p, g, state, group):  # pragma: no cover - abstract
        raise NotImplementedError


class SGD(_Base):
    """theta -= lr * g (with optional L2 weight decay folded into g, as torch does)."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.0):
        defaults = {"lr": _check("learning rate", lr), "weight_decay": _check("weight_decay", weight_decay)}
        super().__init__(params, defaults)

    def _update(self, p, g, state, group):
        g = _with_l2(g, p, group["weight_decay"])
        p.add_(g, alpha=-group["lr"])


class Momentum(_Base):
    """Heavy-ball momentum, torch's convention: b = mu * b + g (b = g at the first step);
    theta -= lr * b. (Some texts use b = mu * b + (1 - mu) g: the same with lr scaled.)"""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.9, weight_decay: float = 0.0):
        defaults = {"lr": _check("learning rate", lr), "momentum": _check("momentum", momentum, high=1.0),
                    "weight_decay": _check("weight_decay", weight_decay)}
        super().__init__(params, defaults)

    def _update(self, p, g, state, group):
        g = _with_l2(g, p, group["weight_decay"])
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = g.clone()
        else:
            state["momentum_buffer"].mul_(group["momentum"]).add_(g)
        p.add_(state["momentum_buffer"], alpha=-group["lr"])


class AdaGrad(_Base):
    """s += g^2; theta -= lr * g / (sqrt(s) + eps). The sum only grows, so the effective
    step lr / sqrt(s) shrinks for ever."""

    def __init__(self, params, lr: float = 1e-2, eps: float = 1e-10, weight_decay: float = 0.0):
        defaults = {"lr": _check("learning rate", lr), "eps": _check("epsilon", eps, low_open=True),
                    "weight_decay": _check("weight_decay", weight_decay)}
        super().__init__(params, defaults)

    def _update(self, p, g, state, group):
        g = _with_l2(g, p, group["weight_decay"])
        if "sum" not in state:
            state["step"] = 0
            state["sum"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["step"] += 1
        state["sum"].addcmul_(g, g)
        p.addcdiv_(g, state["sum"].sqrt().add_(group["eps"]), value=-group["lr"])


class RMSProp(_Base):
    """s = alpha * s + (1 - alpha) * g^2; theta -= lr * g / (sqrt(s) + eps): AdaGrad with
    a moving average instead of a sum, so the step size does not die."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0):
        defaults = {"lr": _check("learning rate", lr), "alpha": _check("alpha", alpha, high=1.0),
                    "eps": _check("epsilon", eps, low_open=True),
                    "weight_decay": _check("weight_decay", weight_decay)}
        super().__init__(params, defaults)

    def _update(self, p, g, state, group):
        g = _with_l2(g, p, group["weight_decay"])
        if "square_avg" not in state:
            state["step"] = 0
            state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["step"] += 1
        alpha = group["alpha"]
        state["square_avg"].mul_(alpha).addcmul_(g, g, value=1 - alpha)
        p.addcdiv_(g, state["square_avg"].sqrt().add_(group["eps"]), value=-group["lr"])


class Adam(_Base):
    """m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  m_hat = m / (1 - b1^t);
    v_hat = v / (1 - b2^t);  theta -= lr * m_hat / (sqrt(v_hat) + eps).

    ``weight_decay`` here is L2 folded into the gradient (g += wd * theta), as in the
    original Adam: it is then divided by sqrt(v_hat) like the rest of g. See AdamW.
    """

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"Invalid betas: {betas!r} (must be a pair (beta1, beta2))")
        defaults = {"lr": _check("learning rate", lr),
                    "betas": (_check("beta parameter at index 0", betas[0], high=1.0),
                              _check("beta parameter at index 1", betas[1], high=1.0)),
                    "eps": _check("epsilon", eps, low_open=True),
                    "weight_decay": _check("weight_decay", weight_decay)}
        super().__init__(params, defaults)

    def _update(self, p, g, state, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd and self.decoupled:
            p.mul_(1 - lr * wd)  # AdamW: shrink theta directly, untouched by sqrt(v)
        else:
            g = _with_l2(g, p, wd)  # Adam + L2: the decay term joins the gradient
        if "exp_avg" not in state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        # m_hat / (sqrt(v_hat) + eps), arranged as torch does for identical rounding.
        denom = (v.sqrt() / math.sqrt(bias2)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bias1)


class AdamW(Adam):
    """Adam with weight decay *decoupled* from the gradient (Loshchilov & Hutter):
    theta -= lr * wd * theta, then the Adam step. Every parameter decays at the same
    rate, whatever its gradient scale."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


OPTIMIZERS = {"sgd": SGD, "momentum": Momentum, "adagrad": AdaGrad, "rmsprop": RMSProp,
              "adam": Adam, "adamw": AdamW}


def state_bytes(optimizer: Optimizer) -> int:
    """Bytes of every tensor the optimizer keeps in ``optimizer.state``."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"expected a torch.optim.Optimizer, got {type(optimizer).__name__}")
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))


# --- ZeRO stage 1, measured: two CPU processes ---------------------------------------


def _zero_worker(rank: int, world_size: int, port: int, sizes: tuple[int, ...], results) -> None:
    import os

    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        torch.manual_seed(0)  # every rank builds the same model
        layers = [torch.nn.Linear(a, b, bias=False) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        model = torch.nn.Sequential(*layers)
        zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
        model(torch.randn(4, sizes[0])).sum().backward()
        zero.step()
        local = zero.optim  # this rank's AdamW, over its shard of the parameters
        n_local = sum(p.numel() for group in local.param_groups for p in group["params"])
        results.put((rank, state_bytes(local), n_local))
    finally:
        dist.destroy_process_group()


def zero_state_bytes(sizes: tuple[int, ...] = (256, 512, 512, 256), world_size: int = 2) -> list[dict]:
    """Run ``ZeroRedundancyOptimizer`` (ZeRO stage 1: optimizer state sharded) with AdamW
    on ``world_size`` CPU processes (gloo) and report each rank's state bytes.

    ``sizes`` are the widths of a bias-free Linear stack; each weight matrix goes whole
    to one rank, so the split is as even as the matrices allow.
    Returns ``[{"rank", "state_bytes", "params"}, ...]`` sorted by rank.
    """
    import socket

    import torch.multiprocessing as mp

    if not isinstance(sizes, tuple) or len(sizes) < 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
        raise ValueError(f"sizes must be a tuple of at least two positive ints, got {sizes!r}")
    if isinstance(world_size, bool) or not isinstance(world_size, int) or not 1 <= world_size <= 8:
        raise ValueError(f"world_size must be an int in 1..8, got {world_size!r}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    # "spawn" re-runs the parent's __main__ file in each worker. From a notebook there is
    # none; from a plain script (a notebook's .py twin) there is, without a __main__
    # guard, so hide it: the workers need only lecture_utils.
    main = sys.modules["__main__"]
    main_file = main.__dict__.pop("__file__", None)
    try:
        mp.start_processes(_zero_worker, args=(world_size, port, sizes, results), nprocs=world_size,
                           start_method="spawn")
    finally:
        if main_file is not None:
            main.__file__ = main_file
    rows = sorted(results.get() for _ in range(world_size))
    return [{"rank": r, "state_bytes": b, "params": n} for r, b, n in rows]
