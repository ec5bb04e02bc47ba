"""The lecture's building blocks (§5): a Linear layer with 1/sqrt(d_in) initialisation."""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn


def _dim(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    return int(value)


def init_weight(d_in: int, d_out: int, *, device=None, dtype=None) -> torch.Tensor:
    """A (d_in, d_out) weight from a normal with std 1/sqrt(d_in), cut at +-3 std.

    ``nn.init.trunc_normal_``'s ``a`` and ``b`` are *absolute* bounds, not multiples of
    std (the notes' ``a=-3, b=3`` with std 1/sqrt(d_in) cuts almost nothing), so the
    cut-offs are scaled by std here.
    """
    d_in, d_out = _dim(d_in, "d_in"), _dim(d_out, "d_out")
    std = 1 / math.sqrt(d_in)
    weight = torch.empty(d_in, d_out, device=device, dtype=dtype)
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std)


class Linear(nn.Module):
    """``y = x @ W`` with W of shape (d_in, d_out), as written in the lecture (§5.1).

    No bias. ``torch.nn.Linear`` stores the transpose (d_out, d_in); the result is the
    same as ``F.linear(x, W.T)``.
    """

    def __init__(self, d_in: int, d_out: int, *, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(init_weight(d_in, d_out, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight

    def extra_repr(self) -> str:
        return f"d_in={self.weight.shape[0]}, d_out={self.weight.shape[1]}"
