"""Compute accounting: FLOPs of a matmul, of training, of a transformer; MFU; days.

FLOPs (a count of floating-point operations) are not FLOP/s (a rate). A multiply and
an add are two FLOPs, so a (B x D) @ (D x K) matmul costs 2BDK.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from lecture_utils.checks import positive_int
from lecture_utils.hardware import Accelerator, lookup

SECONDS_PER_DAY = 24 * 60 * 60


def _positive(value, what: str, *, integral: bool = False) -> float:
    """Validate a positive, finite number (``70e9`` is fine where an integer is meant)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}")
    if integral and value != int(value):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    return value


# >>> lesson code from notebooks/03_flops_and_mfu.py: edit it there, then `make export`
@dataclass(frozen=True)
class TrainingFlops:
    """6ND split into its forward (2ND) and backward (4ND) parts."""

    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


def training_flops(n_params, n_tokens) -> TrainingFlops:
    """The 6ND rule: forward 2ND (one multiply-add per parameter per token), backward
    4ND (two matmuls per layer: one for the weight gradient, one for the input's)."""
    return TrainingFlops(forward=2 * n_params * n_tokens, backward=4 * n_params * n_tokens)


def matmul_flops(b, d, k):
    """FLOPs of (b x d) @ (d x k): b*k outputs, each d multiplies and d adds."""
    return 2 * b * d * k
# <<< lesson code from notebooks/03_flops_and_mfu.py


def _fraction(value, what: str) -> float:
    value = _positive(value, what)
    if value > 1:
        raise ValueError(f"{what} is a fraction of peak in (0, 1], got {value!r}")
    return value


def training_days(flops: float, gpu: str | Accelerator, n_gpus: int, mfu: float,
                  dtype: str = "bf16") -> float:
    """Wall-clock days for ``flops`` on ``n_gpus`` of ``gpu`` at utilisation ``mfu``,
    against the *dense* peak for ``dtype`` (never the sparse spec-sheet figure)."""
    total = _positive(flops, "flops")
    count = positive_int(n_gpus, "n_gpus")
    utilisation = _fraction(mfu, "mfu")
    peak = lookup(gpu).peak(dtype)
    return total / (peak * utilisation * count) / SECONDS_PER_DAY


def mfu(flops: float, seconds: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: achieved useful FLOP/s over the peak FLOP/s.

    Count only the model's own FLOPs (e.g. 6ND), not recomputation. A result above 1
    means the peak or the FLOP count is wrong, so it raises.
    """
    achieved = _positive(flops, "flops") / _positive(seconds, "seconds")
    value = achieved / _positive(peak_flops_per_s, "peak_flops_per_s")
    if value > 1.05:  # a measured peak can be beaten by noise; 5% more cannot be real
        raise ValueError(f"MFU {value:.2f} > 1: the peak ({peak_flops_per_s:.3g} FLOP/s) is too low "
                         f"or the FLOP count ({flops:.3g}) too high")
    return value


# --- transformers -----------------------------------------------------------------


def transformer_flops_breakdown(*, n_layers: int, d_model: int, n_heads: int, seq_len: int,
                                vocab_size: int, d_ff: int | None = None) -> dict[str, int]:
    """Forward FLOPs of every matmul for one sequence of a GPT-style decoder, by part.

    The convention is the one ``FlopCounterMode`` uses on ``lecture_utils.models.GPT``:
    matmuls only (2 FLOPs per multiply-add; no bias adds, norms, softmax or GELU),
    and the causal mask does not halve the attention matmuls (they are computed in
    full, then masked).
    """
    L, d = positive_int(n_layers, "n_layers"), positive_int(d_model, "d_model")
    h, t = positive_int(n_heads, "n_heads"), positive_int(seq_len, "seq_len")
    v = positive_int(vocab_size, "vocab_size")
    ff = 4 * d if d_ff is None else positive_int(d_ff, "d_ff")
    if d % h:
        raise ValueError(f"d_model ({d}) must be divisible by n_heads ({h})")
    per_layer = {
        "qkv projections": matmul_flops(t, d, 3 * d),
        "attention scores (QK^T)": h * matmul_flops(t, d // h, t),
        "attention weighted sum (AV)": h * matmul_flops(t, t, d // h),
        "output projection": matmul_flops(t, d, d),
        "MLP up": matmul_flops(t, d, ff),
        "MLP down": matmul_flops(t, ff, d),
    }
    parts = {name: L * flops for name, flops in per_layer.items()}
    parts["unembedding"] = matmul_flops(t, d, v)
    return parts


def transformer_flops(*, n_layers: int, d_model: int, n_heads: int, seq_len: int,
                      vocab_size: int, d_ff: int | None = None) -> int:
    """Exact forward FLOPs for one sequence (see :func:`transformer_flops_breakdown`)."""
    return sum(transformer_flops_breakdown(n_layers=n_layers, d_model=d_model, n_heads=n_heads,
                                           seq_len=seq_len, vocab_size=vocab_size,
                                           d_ff=d_ff).values())


# --- counting what actually ran -----------------------------------------------------


@dataclass(frozen=True)
class FlopCount:
    forward: int
    backward: int  # 0 when backward was not run
    by_module: dict[str, int]  # forward FLOPs per module path ("GPT.blocks.0.attn", ...)
    uncounted_ops: tuple[str, ...]  # ops that ran but FlopCounterMode has no formula for

    @property
    def total(self) -> int:
        return self.forward + self.backward


class _OpRecorder(TorchDispatchMode):
    """Records every aten op that runs, to find the ones FlopCounterMode cannot see."""

    def __init__(self):
        super().__init__()
        self.ops: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.overloadpacket)
        return func(*args, **(kwargs or {}))


# Ops that do matmul work. If one of these runs without a flop formula (CPU
# scaled_dot_product_attention, for one), the count is too low and we say so.
_MATMUL_WORDS = ("mm", "matmul", "conv", "attention", "linear", "einsum")


def count_flops(fn_or_module, *inputs, backward: bool = True) -> FlopCount:
    """Count FLOPs with ``torch.utils.flop_counter.FlopCounterMode``.

    Runs ``fn_or_module(*inputs)``; with ``backward=True`` also runs ``.sum().backward()``
    on the output (which must then require grad) and counts that separately.
    ``uncounted_ops`` lists matmul-like ops that ran without a FLOP formula: on CPU,
    ``scaled_dot_product_attention`` is counted as zero, and a silent zero is a wrong number.
    """
    if not callable(fn_or_module):
        raise TypeError(f"expected a module or function, got {type(fn_or_module).__name__}")
    recorder = _OpRecorder()
    with FlopCounterMode(display=False) as counter, recorder:
        out = fn_or_module(*inputs)
    forward = counter.get_total_flops()
    by_module = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()
                 if name != "Global"}
    back = 0
    if backward:
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            raise ValueError("backward=True needs an output tensor that requires grad")
        with FlopCounterMode(display=False) as counter, recorder:
            out.sum().backward()
        back = counter.get_total_flops()
    uncounted = sorted(str(op) for op in recorder.ops
                       if op not in flop_registry and any(w in str(op) for w in _MATMUL_WORDS))
    return FlopCount(forward, back, by_module, tuple(uncounted))


# --- the training-time calculator ---------------------------------------------------


def training_time_table(n_params: float, n_tokens: float, gpus: list[tuple[str, int]],
                        mfus: tuple[float, ...] = (0.3, 0.4, 0.5, 1.0),
                        dtype: str = "bf16") -> list[tuple[str, int, dict[float, float]]]:
    """Days to train by 6ND for each (gpu, count) and MFU: rows of (gpu name, count, {mfu: days}).

    The static twin of :func:`training_time_calculator`.
    """
    if not isinstance(gpus, (list, tuple)) or not gpus:
        raise ValueError("gpus must be a non-empty list of (name, count) pairs")
    total = training_flops(n_params, n_tokens).total
    rows = []
    for entry in gpus:
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise TypeError(f"each gpus entry must be a (name, count) pair, got {entry!r}")
        name, count = entry
        acc = lookup(name)
        rows.append((acc.name, count, {m: training_days(total, acc, count, m, dtype) for m in mfus}))
    return rows


def training_time_calculator():
    """An ipywidgets calculator: params, tokens, GPU, count, MFU -> days (6ND, dense peak)."""
    import ipywidgets as w

    from lecture_utils.hardware import ACCELERATORS

    params = w.FloatLogSlider(value=70e9, base=10, min=8, max=13, step=0.05, description="params",
                              readout_format=".3g")
    tokens = w.FloatLogSlider(value=15e12, base=10, min=9, max=14, step=0.05, description="tokens",
                              readout_format=".3g")
    gpu = w.Dropdown(options=list(ACCELERATORS), value="H100 SXM", description="GPU")
    count = w.IntText(value=1024, description="GPUs")
    utilisation = w.FloatSlider(value=0.5, min=0.05, max=1.0, step=0.05, description="MFU")
    out = w.HTML()

    def update(*_):
        if count.value < 1:
            out.value = "<p>GPUs must be at least 1</p>"
            return
        total = training_flops(int(params.value), int(tokens.value)).total
        days = training_days(total, gpu.value, count.value, utilisation.value)
        peak = lookup(gpu.value).peak("bf16")
        out.value = (f"<p>6ND = {total:.3g} FLOPs; dense bf16 peak {peak / 1e12:g} TFLOP/s per GPU"
                     f"<br><b>{days:.1f} days</b> on {count.value} x {gpu.value} at MFU "
                     f"{utilisation.value:.2f}</p>")

    for widget in (params, tokens, gpu, count, utilisation):
        widget.observe(update, names="value")
    update()
    return w.VBox([params, tokens, gpu, count, utilisation, out])
