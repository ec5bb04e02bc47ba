"""The training loop's lesson pieces (§8), exported from notebook 08: ``cosine_lr``,
``clip_grad_norm``, ``lm_loss`` (F.cross_entropy), ``evaluate`` and ``train_step``.

The Trainer (lecture_utils/train/trainer.py) runs them: the loop a student reads in notebook 08
is the loop the command line trains with.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


# >>> lesson code from py_src/08_training_loop.py: edit it there, then `make export`
def cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Linear warm-up from 0 to max_lr over warmup_steps, cosine decay to min_lr at
    total_steps, min_lr after. (TrainConfig checks the arguments.)"""
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)  # 0 -> 1 over the decay
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


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
# <<< lesson code from py_src/08_training_loop.py
