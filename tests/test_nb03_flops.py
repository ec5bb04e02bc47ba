"""Checks that left notebook 03 (FLOPs and MFU) because they test lecture_utils, not the lecture.

Each one asserts against an independent oracle where there is one: PyTorch's own
``FlopCounterMode`` for matmul counts, the notes' arithmetic for training days, a model's
parameters for the matmul weights of the exact count.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.flops import (
    count_flops,
    matmul_flops,
    training_days,
    training_flops,
    training_time_table,
    transformer_flops_breakdown,
)
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.models import GPT, get_config, n_params

SHAPES = [(2, 3, 4), (64, 128, 32), (100, 7, 300), (512, 1024, 256)]  # the notebook's shapes
C_70B = training_flops(70_000_000_000, 15_000_000_000_000).total


def _counter_flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


@pytest.mark.parametrize(("b", "d", "k"), SHAPES)
def test_a_matmul_costs_2bdk_forward_and_4bdk_backward(b, d, k):
    x = torch.randn(b, d, requires_grad=True)
    w = torch.randn(d, k, requires_grad=True)
    counted = count_flops(torch.matmul, x, w)
    assert counted.forward == matmul_flops(b, d, k) == _counter_flops(torch.matmul, x, w) == 2 * b * d * k
    assert counted.backward == 2 * counted.forward  # grad_x = G W^T and grad_w = X^T G
    assert counted.uncounted_ops == ()


def test_a_batch_dimension_multiplies_the_rows():
    x, w = torch.randn(8, 16, 32), torch.randn(32, 64)
    forward = count_flops(torch.matmul, x, w, backward=False).forward
    assert forward == matmul_flops(8 * 16, 32, 64) == _counter_flops(torch.matmul, x, w)


def test_the_table_rows_are_training_days_and_h200_computes_like_h100():
    mfus = (0.3, 0.5, 1.0)
    rows = {name: days for name, _, days in training_time_table(
        70e9, 15e12, [("A100", 1024), ("H100", 1024), ("H200", 1024)], mfus=mfus)}
    # The notes' arithmetic: 6ND / (1979e12 / 2 * MFU * 1024) / 86 400.
    assert rows["H100 SXM"] == pytest.approx({m: 6.3e24 / (1979e12 / 2 * m * 1024) / 86_400 for m in mfus},
                                             rel=1e-12)
    assert rows["H200"] == rows["H100 SXM"]  # same compute, more memory: a FLOP count cannot see it
    assert rows["A100 SXM 80GB"][0.5] / rows["H100 SXM"][0.5] == pytest.approx(989.5 / 312, rel=1e-12)


@pytest.mark.parametrize("name", list(ACCELERATORS))
def test_days_fall_as_one_over_mfu_on_every_gpu(name):
    assert training_days(C_70B, name, 1024, 0.25) / training_days(C_70B, name, 1024, 0.5) == pytest.approx(2.0)


def test_b200_days_use_its_dense_bf16_peak():
    assert training_days(C_70B, "B200", 1024, 0.5) == pytest.approx(6.3e24 / (2250e12 * 0.5 * 1024) / 86_400,
                                                                   rel=1e-12)


def test_the_gpu_config_has_gpt2_smalls_non_embedding_parameters():
    with torch.device("meta"):
        model = GPT(get_config("gpu"))
    assert n_params(model, non_embedding=True) == 123_606_528


@pytest.mark.parametrize("name", ["tiny", "gpu"])
def test_the_exact_count_without_attention_is_2nt_of_the_matmul_weights(name):
    """§3.3's over_6nd divides the attention matmuls by the rest, taken to be 2NT: check that
    the rest is 2T times the model's matmul weights (non-embedding parameters less LayerNorm's)."""
    cfg = get_config(name)
    with torch.device("meta"):
        model = GPT(cfg)
    ln = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.LayerNorm) for p in m.parameters())
    weights = n_params(model, non_embedding=True) - ln
    parts = transformer_flops_breakdown(**cfg.flops_kwargs(cfg.seq_len))
    attention = parts["attention scores (QK^T)"] + parts["attention weighted sum (AV)"]
    T, L, d = cfg.seq_len, cfg.n_layers, cfg.d_model
    assert attention == 4 * L * T * T * d  # QK^T and AV: 2 T^2 d each, per layer
    assert sum(parts.values()) - attention == 2 * weights * T
