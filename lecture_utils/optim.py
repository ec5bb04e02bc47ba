"""The six optimizers of §7.1 (SGD, Momentum, AdaGrad, RMSProp, Adam, AdamW), ``OPTIMIZERS``,
``state_bytes``, ``descend`` (the points an optimizer visits) and a measured ZeRO stage 1
(``zero_state_bytes``).

The optimizers are lesson code: they are written, and explained, in
py_src/07_optimizers.py (one line per term of the notes' formulas), and the region below is
exported from there (``make export``). Hyper-parameter conventions are torch.optim's, so each
is checked against its counterpart (tests/test_optim.py). The step count is a plain int in
``self.state``, so the state tensors are exactly 0, 1, 1, 1, 2 and 2 copies of the parameters.
"""

from __future__ import annotations

import sys

import torch

from lecture_utils import validate


# >>> lesson code from py_src/07_optimizers.py: edit it there, then `make export`
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


def state_bytes(optimizer):  # bytes of every tensor the optimizer keeps in `optimizer.state`
    return sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values()
               if isinstance(t, torch.Tensor))
# <<< lesson code from py_src/07_optimizers.py


# The six by the names lecture_utils.training_memory and the trainer's --optimizer use.
OPTIMIZERS = {"sgd": SGD, "momentum": Momentum, "adagrad": AdaGrad, "rmsprop": RMSProp,
              "adam": Adam, "adamw": AdamW}


def descend(optimizer_class, grad, start, steps, **hyper):
    """The points an optimizer visits from ``start`` when the gradient at theta is ``grad(theta)``.

    ``optimizer_class([theta], **hyper)`` builds the optimizer (ours or torch.optim's) over
    one float64 tensor ``theta``, which starts at ``start``; each of the ``steps`` steps sets
    ``theta.grad = grad(theta)`` and calls ``step()``. Returns a tensor of shape
    ``(steps + 1, *theta.shape)``: the start, then the point after each step. Notebook 07 runs
    its optimizers with it (the checks against torch.optim, Adam + L2, the valley).
    """
    theta = torch.tensor(start, dtype=torch.float64)
    optimizer = optimizer_class([theta], **hyper)
    path = [theta.clone()]
    for _ in range(steps):
        theta.grad = grad(theta)
        optimizer.step()
        path.append(theta.clone())
    return torch.stack(path)


# --- ZeRO stage 1, measured: two CPU processes ---------------------------------------


# pragma: no mutate start
# (make mutation leaves this harness alone: its workers run in other processes, whose calls
# mutmut cannot map to tests, and each run costs two processes' torch imports; its checks are
# tests/test_optim.py's TestZeroStage1 (make test-slow) and notebook 07 under nbval)
def _zero_worker(rank: int, world_size: int, port: int, sizes: tuple[int, ...], results) -> None:
    import os

    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    torch.set_num_threads(1)  # a forked child must not enter its parent's OpenMP pool: it would hang
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
    import importlib
    import socket

    import torch.multiprocessing as mp

    from lecture_utils.progress import progress

    sizes = tuple(validate.integer(s, "a layer width") for s in sizes)
    validate.integer(len(sizes), "the number of layer widths in sizes", low=2)
    world_size = validate.integer(world_size, "world_size", high=8)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # "fork" starts a worker at once, with torch already imported; "spawn" starts a fresh Python
    # that imports torch again (seconds). Fork only where it is safe: on Linux (macOS's system
    # libraries are not fork-safe) and before this process has touched CUDA (a forked child
    # cannot use it, and torch refuses to re-initialise it there).
    method = "fork" if sys.platform.startswith("linux") and not torch.cuda.is_initialized() else "spawn"
    importlib.import_module("torch.distributed.optim")  # once, here: forked workers inherit it
    results = mp.get_context(method).SimpleQueue()
    # "spawn" re-runs the parent's __main__ file in each worker. From a notebook there is
    # none; from a plain script (a notebook's .py twin) there is, without a __main__
    # guard, so hide it: the workers need only lecture_utils.
    main = sys.modules["__main__"]
    main_file = main.__dict__.pop("__file__", None)
    try:
        context = mp.start_processes(_zero_worker, args=(world_size, port, sizes, results), nprocs=world_size,
                                     start_method=method, join=False)
        # spawned workers take seconds to import torch: a bar that ticks while they run, in a live kernel
        for _ in progress(iter(lambda: context.join(timeout=0.25), True), desc="ZeRO-1 on 2 processes"):
            pass
    finally:
        if main_file is not None:
            main.__file__ = main_file
    rows = sorted(results.get() for _ in range(world_size))
    return [{"rank": r, "state_bytes": b, "params": n} for r, b, n in rows]
# pragma: no mutate end
