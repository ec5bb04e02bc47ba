"""Checks that left notebook 04 (autograd) because they test lecture_utils, not the lecture.

Oracles: the tensors a real training step holds (``measure_training_memory`` adds up what
exists), a model's own parameters, and plain arithmetic on the 80 GB budget.
"""

from __future__ import annotations

import pytest
import torch

from lecture_utils.models import Cruncher
from lecture_utils.training_memory import (
    measure_training_memory,
    mlp_activation_bytes,
    predict_training_memory,
)


@pytest.mark.parametrize("batch", [1, 4, 16, 64, 256, 1024, 4096])
def test_measured_activations_are_l_plus_1_saved_inputs_at_every_batch(batch):
    L, D = 4, 64
    model = Cruncher(D, L)
    step = measure_training_memory(model, torch.randn(batch, D), torch.optim.AdamW(model.parameters()))
    assert step.activations == (L + 1) * batch * D * 4 == mlp_activation_bytes(n_layers=L, width=D, batch=batch)


E41_L, E41_D, BUDGET = 32, 8192, 80e9


def _e41_fixed_bytes() -> int:
    with torch.device("meta"):  # shapes only
        big = Cruncher(E41_D, E41_L)
    assert sum(p.numel() for p in big.parameters()) == 2_147_491_840 == E41_L * E41_D**2 + E41_D
    return predict_training_memory(big, optimizer="adamw").total


def test_e4_1_the_notes_bld_estimate_allows_a_batch_that_does_not_fit():
    fixed = _e41_fixed_bytes()
    b_lecture = int((BUDGET - fixed) // (E41_L * E41_D * 4))  # B * L * D floats per example
    assert b_lecture == 43_525
    per_example = mlp_activation_bytes(n_layers=E41_L, width=E41_D, batch=1)  # what autograd keeps
    assert per_example == (E41_L + 1) * E41_D * 4
    overflow = fixed + b_lecture * per_example - BUDGET
    assert overflow / 1e9 == pytest.approx(1.43, rel=0.01)
