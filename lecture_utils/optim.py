"""The six optimizers of §7.1 (SGD, Momentum, AdaGrad, RMSProp, Adam, AdamW), ``OPTIMIZERS``,
``state_bytes`` and a measured ZeRO stage 1 (``zero_state_bytes``).

The optimizers are lesson code: they are written, and explained, in
py_src/07_optimizers.py, and the region below is exported from there (``make export``).
Hyper-parameter conventions are torch.optim's, so each is checked against its counterpart
(tests/test_optim.py). The step count is a plain int in ``self.state``, so the state
tensors are exactly 0, 1, 1, 1, 2 and 2 copies of the parameters.
"""

from __future__ import annotations

import math
import sys

import torch
from torch.optim import Optimizer

from lecture_utils import validate


# >>> lesson code from py_src/07_optimizers.py: edit it there, then `make export`
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


def state_bytes(optimizer):
    """Bytes of every tensor the optimizer keeps in `optimizer.state`."""
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))
# <<< lesson code from py_src/07_optimizers.py


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

    sizes = tuple(validate.integer(s, "a layer width") for s in sizes)
    validate.integer(len(sizes), "the number of layer widths in sizes", low=2)
    world_size = validate.integer(world_size, "world_size", high=8)
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
