"""Compute accounting: FLOPs of a matmul, of training, of a transformer; MFU; days.

FLOPs (a count of floating-point operations) are not FLOP/s (a rate). A multiply and
an add are two FLOPs, so a (B x D) @ (D x K) matmul costs 2BDK.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from lecture_utils import validate
from lecture_utils.hardware import Accelerator, find_accelerator

SECONDS_PER_DAY = 24 * 60 * 60


@dataclass(frozen=True)
class TrainingFlops:
    """The FLOPs of training, forward and backward (what ``training_flops`` returns)."""

    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


# >>> lesson code from py_src/03_flops_and_mfu.py: edit it there, then `make export`
def training_flops(n_params, n_tokens) -> TrainingFlops:
    """6ND: forward 2ND (a multiply-add per parameter per token), backward 4ND (§3.3)."""
    return TrainingFlops(forward=2 * n_params * n_tokens, backward=4 * n_params * n_tokens)


def matmul_flops(b, d, k):
    """FLOPs of (b x d) @ (d x k): b*k outputs, each d multiplies and d adds."""
    return 2 * b * d * k
# <<< lesson code from py_src/03_flops_and_mfu.py


def training_days(flops: float, gpu: str | Accelerator, n_gpus: int, mfu: float,
                  dtype: str = "bf16") -> float:
    """Wall-clock days for ``flops`` on ``n_gpus`` of ``gpu`` at utilisation ``mfu``,
    against the *dense* peak for ``dtype`` (never the sparse spec-sheet figure).
    A calculator people type into, so it checks its input."""
    total = validate.positive(flops, "flops")
    count = validate.integer(n_gpus, "n_gpus")
    utilisation = validate.number(mfu, "mfu (a fraction of peak)", low=0, low_open=True, high=1)
    peak = find_accelerator(gpu).peak(dtype)
    return total / (peak * utilisation * count) / SECONDS_PER_DAY


def mfu(flops: float, seconds: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilisation: achieved useful FLOP/s over the peak FLOP/s.

    Count only the model's own FLOPs (e.g. 6ND), not recomputation. A result above 1
    means the peak or the FLOP count is wrong, so it raises.
    """
    value = flops / seconds / peak_flops_per_s
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
    L, d, h, t, v = n_layers, d_model, n_heads, seq_len, vocab_size
    ff = 4 * d if d_ff is None else d_ff
    assert d % h == 0, f"d_model ({d}) must be divisible by n_heads ({h})"  # else d // h undercounts
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
    recorder = _OpRecorder()
    with FlopCounterMode(display=False) as counter, recorder:
        out = fn_or_module(*inputs)
    forward = counter.get_total_flops()
    by_module = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()
                 if name != "Global"}
    back = 0
    if backward:  # the output must require grad
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

    The static twin of :func:`training_time_calculator`; a calculator, so it checks its input.
    """
    if not validate.instance(gpus, (list, tuple), "gpus"):  # an empty table is a mistake
        raise ValueError("gpus must be a non-empty list of (name, count) pairs")
    total = training_flops(validate.positive(n_params, "n_params"), validate.positive(n_tokens, "n_tokens")).total
    rows = []
    for entry in gpus:
        name, count = validate.instance(entry, tuple, "each gpus entry (a (name, count) pair)")
        acc = find_accelerator(name)
        rows.append((acc.name, count, {m: training_days(total, acc, count, m, dtype) for m in mfus}))
    return rows
