"""The training-memory predictor against the measurer, to the byte, on the CPU."""

import pytest
import torch

from lecture_utils.models import Cruncher
from lecture_utils.training_memory import (
    OPTIMIZER_STATE_COPIES,
    TrainingMemory,
    measure_training_memory,
    mlp_activation_bytes,
    mlp_peak_bytes,
    predict_training_memory,
    saved_tensor_bytes,
)

OPTIMIZERS = {
    "sgd": (torch.optim.SGD, {}),
    "momentum": (torch.optim.SGD, {"momentum": 0.9}),
    "adagrad": (torch.optim.Adagrad, {}),
    "rmsprop": (torch.optim.RMSprop, {}),
    "adam": (torch.optim.Adam, {}),
    "adamw": (torch.optim.AdamW, {}),
}


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize(("n_layers", "width", "batch", "relu"), [(1, 8, 4, False), (4, 64, 32, False),
                                                                   (3, 48, 100, True)])
def test_prediction_equals_measurement_to_the_byte(optimizer, n_layers, width, batch, relu):
    torch.manual_seed(0)
    model = Cruncher(width, n_layers, relu=relu)
    cls, kw = OPTIMIZERS[optimizer]
    measured = measure_training_memory(model, torch.randn(batch, width), cls(model.parameters(), lr=1e-3, **kw))
    predicted = predict_training_memory(
        model, optimizer=optimizer,
        activations=mlp_activation_bytes(n_layers=n_layers, width=width, batch=batch))
    assert measured == predicted


def test_only_activations_grow_with_batch():
    model = Cruncher(32, 3)
    small, big = (measure_training_memory(model, torch.randn(b, 32), torch.optim.AdamW(model.parameters()))
                  for b in (8, 64))
    assert (small.params, small.grads, small.optimizer_state) == (big.params, big.grads, big.optimizer_state)
    assert big.activations == 8 * small.activations


def test_bf16_model_halves_every_part():
    fp32, bf16 = Cruncher(16, 2), Cruncher(16, 2, dtype=torch.bfloat16)
    a = predict_training_memory(fp32, optimizer="sgd")
    b = predict_training_memory(bf16, optimizer="sgd")
    assert (b.params * 2, b.grads * 2) == (a.params, a.grads)
    assert mlp_activation_bytes(n_layers=2, width=16, batch=4, dtype="bf16") * 2 == \
        mlp_activation_bytes(n_layers=2, width=16, batch=4)


def test_saved_tensor_bytes_counts_storages_once_and_skips_parameters():
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    # x @ w saves x and w; (x @ w) * (x @ w) saves the product's output twice (one storage).
    n, saved = saved_tensor_bytes(lambda: (x @ w).pow(2).sum())
    assert n == 4 * 8 * 4 + 8 * 8 * 4 + 4 * 8 * 4  # x, w and the matmul output (for pow)
    n_excluded, _ = saved_tensor_bytes(lambda: (x @ w).pow(2).sum(), exclude=[w])
    assert n_excluded == n - 8 * 8 * 4
    assert ((4, 8), torch.float32) in saved


def test_no_grad_saves_nothing():
    model = Cruncher(16, 2)
    with torch.no_grad():
        n, saved = saved_tensor_bytes(model, torch.randn(4, 16))
    assert (n, saved) == (0, [])


def test_total_and_state_copies():
    m = TrainingMemory(params=4, grads=4, optimizer_state=8, activations=3)
    assert m.total == 19
    assert OPTIMIZER_STATE_COPIES == {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}


def test_peak_formula_composition():
    L, D, B = 8, 2048, 8192
    params = (L * D * D + D) * 4
    expected = params + 2 * params + 4 * (L + 1) + (L * B * D + 2 * B * D + D * D + D) * 4
    assert mlp_peak_bytes(n_layers=L, width=D, batch=B) == expected
    assert mlp_peak_bytes(n_layers=L, width=D, batch=B, optimizer="sgd") == expected - 2 * params - 4 * (L + 1)


@pytest.mark.parametrize(("call", "error"), [
    (lambda: predict_training_memory(Cruncher(4, 1), optimizer="lion"), ValueError),  # name lookups
    (lambda: predict_training_memory(Cruncher(4, 1), optimizer=None), TypeError),
    (lambda: mlp_peak_bytes(n_layers=1, width=4, batch=4, optimizer="adamax"), ValueError),
    (lambda: mlp_activation_bytes(n_layers=1, width=4, batch=4, dtype="float9"), ValueError),
    (lambda: mlp_activation_bytes(n_layers=-2, width=4, batch=4), AssertionError),  # a negative count
])
def test_bad_names_and_counts_are_refused(call, error):
    with pytest.raises(error):
        call()


def test_optimizer_names_are_case_insensitive():
    model = Cruncher(4, 1)
    assert predict_training_memory(model, optimizer="AdamW") == predict_training_memory(model)


def test_cruncher_shape():
    assert Cruncher(8, 3)(torch.randn(5, 8)).shape == (5,)
    assert len(Cruncher(8, 3).layers) == 3
