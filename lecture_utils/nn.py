"""The lecture's building blocks (§5): a Linear layer with 1/sqrt(d_in) initialisation."""

from __future__ import annotations

import math

import torch
from torch import nn


# >>> lesson code from py_src/05_parameters_and_init.py: edit it there, then `make export`
def init_weight(d_in, d_out, *, device=None, dtype=None):
    """A (d_in, d_out) weight, normal with std 1/sqrt(d_in), cut at ±3 std (a, b are absolute)."""
    std = 1 / math.sqrt(d_in)
    weight = torch.empty(d_in, d_out, device=device, dtype=dtype)
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std)


class Linear(nn.Module):
    """y = x @ W with W of shape (d_in, d_out), no bias (torch.nn.Linear stores W.T)."""

    def __init__(self, d_in, d_out, *, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(init_weight(d_in, d_out, device=device, dtype=dtype))

    def forward(self, x):
        return x @ self.weight

    def extra_repr(self):
        return f"d_in={self.weight.shape[0]}, d_out={self.weight.shape[1]}"
# <<< lesson code from py_src/05_parameters_and_init.py


# >>> lesson code from py_src/08_training_loop.py: edit it there, then `make export`
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over positions of logsumexp(z) - z[target]; logits (..., vocab), targets (...) ids."""
    z = logits.float()  # reductions in fp32, whatever dtype autocast gave the logits
    peak = z.amax(dim=-1, keepdim=True).detach()
    log_sum = (z - peak).exp().sum(dim=-1).log() + peak.squeeze(-1)
    picked = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (log_sum - picked).mean()
# <<< lesson code from py_src/08_training_loop.py
