"""Notebook 05's package checks (issue 22): the lecture's Linear and init_weight, the parameter
counts the notebook used to print, and its exercises' answers, found by experiment.

Oracles: ``torch.nn.functional.linear`` and ``torch.nn.Linear`` for the layer, a real
tensor's bytes for the counts, ``torch.nn.init.trunc_normal_`` with the bounds scaled by
hand and the closed-form truncated-normal variance for ``init_weight``, and torch's own
registration (``parameters()``, ``state_dict()``, ``.to()``) for the exercises.
"""

from __future__ import annotations

import io
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lecture_utils.exercises import ANSWERS
from lecture_utils.models import Cruncher, n_params
from lecture_utils.nn import Linear, init_weight
from lecture_utils.sizes import tensor_bytes

# The std of N(0, 1) truncated to [-3, 3]: sqrt(1 - 2 a phi(a) / erf(a / sqrt 2)) at a = 3.
PHI3 = math.exp(-4.5) / math.sqrt(2 * math.pi)
SHRINK = math.sqrt(1 - 6 * PHI3 / math.erf(3 / math.sqrt(2)))


def test_the_truncation_factor():
    assert SHRINK == pytest.approx(0.98658, rel=1e-5)
    assert SHRINK**50 == pytest.approx(0.5088, rel=1e-3)


def test_linear_equals_torch_in_its_transposed_layout():
    torch.manual_seed(0)
    lin = Linear(512, 2048)
    x = torch.randn(64, 512)
    y = lin(x)
    assert lin.weight.shape == (512, 2048) and y.shape == (64, 2048)  # (d_in, d_out): y = x @ W
    torch.testing.assert_close(y, F.linear(x, lin.weight.T))
    ref = nn.Linear(512, 2048, bias=False)
    assert ref.weight.shape == (2048, 512)  # torch stores the transpose
    with torch.no_grad():
        ref.weight.copy_(lin.weight.T)
    torch.testing.assert_close(y, ref(x))
    assert repr(lin) == "Linear(d_in=512, d_out=2048)"


def test_parameter_counts_and_bytes():
    d_in, d_out = 512, 2048
    lin = Linear(d_in, d_out)
    assert n_params(lin) == d_in * d_out == lin.weight.numel()
    assert tensor_bytes(lin.weight) == 4 * d_in * d_out == lin.weight.nbytes
    assert tensor_bytes(Linear(d_in, d_out, dtype=torch.bfloat16).weight) == 2 * d_in * d_out
    assert n_params(nn.Linear(d_in, d_out)) == d_in * d_out + d_out  # torch's, with its bias
    with torch.device("meta"):  # counted without allocating or initialising anything
        cruncher = Cruncher(4096, 8)
    assert n_params(cruncher) == 8 * 4096**2 + 4096  # L * D^2 and a D -> 1 head
    assert n_params(cruncher) * 4 / 2**30 == pytest.approx(0.50002, rel=1e-5)


def test_init_weight_is_the_notes_call_with_the_bounds_scaled():
    d = 1024
    std = 1 / math.sqrt(d)
    torch.manual_seed(0)
    w = init_weight(d, d)
    torch.manual_seed(0)
    by_hand = nn.init.trunc_normal_(torch.empty(d, d), std=std, a=-3 * std, b=3 * std)
    assert torch.equal(w, by_hand)
    assert w.abs().max() <= 3 * std
    assert w.std().item() / std == pytest.approx(SHRINK, rel=2e-3)
    torch.manual_seed(0)
    notes = nn.init.trunc_normal_(torch.empty(d, d), std=std, a=-3, b=3)  # the notes' bounds
    assert (notes.abs() > 3 * std).float().mean().item() == pytest.approx(0.0027, rel=0.05)
    assert torch.equal(w != notes, notes.abs() > 3 * std)  # exactly the tails were redrawn


def test_init_weight_shrinks_the_signal_by_the_factor_per_layer():
    torch.manual_seed(0)
    one = Linear(1024, 1024)
    x = torch.randn(256, 1024)
    assert one(x).var().item() / x.var().item() == pytest.approx(SHRINK**2, rel=0.01)
    torch.manual_seed(0)
    deep = Cruncher(256, 50)
    x = torch.randn(128, 256)
    with torch.no_grad():
        for layer in deep.layers:
            x = layer(x)
    assert 0.35 < x.pow(2).mean().sqrt().item() < 0.7  # 0.9866**50 = 0.51, not 1


def test_init_weight_takes_device_and_dtype():
    w = init_weight(8, 4, dtype=torch.float64, device="cpu")
    assert (w.shape, w.dtype, w.device.type) == ((8, 4), torch.float64, "cpu")
    assert Linear(8, 4, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


def test_a_parameter_is_a_tensor_that_requires_grad_and_round_trips():
    torch.manual_seed(0)
    lin = Linear(4, 3)
    assert isinstance(lin.weight, torch.Tensor) and lin.weight.requires_grad
    assert list(lin.state_dict()) == ["weight"]
    buffer = io.BytesIO()
    torch.save(lin.state_dict(), buffer)
    torch.manual_seed(1)
    fresh = Linear(4, 3)
    assert not torch.equal(fresh.weight, lin.weight)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(fresh.weight, lin.weight)
    assert lin.to(torch.float64) is lin and lin(torch.randn(2, 4, dtype=torch.float64)).dtype == torch.float64


class _ListMLP(nn.Module):
    def __init__(self, width, n_layers, container):
        super().__init__()
        self.layers = container(Linear(width, width) for _ in range(n_layers))


def test_layers_in_a_python_list_are_not_registered():
    assert n_params(_ListMLP(8, 3, list)) == 0
    with pytest.raises(ValueError, match="empty parameter list"):
        torch.optim.SGD(_ListMLP(8, 3, list).parameters(), lr=0.1)
    assert n_params(_ListMLP(8, 3, nn.ModuleList)) == 3 * 8 * 8


class _ScaledLinear(nn.Module):
    """The layer of the notebook's register_buffer slide (and of exercise E5.1)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out))
        self.register_buffer("scale", torch.full((d_out,), 0.5))
        self.register_buffer("table", torch.arange(d_out, dtype=torch.float32), persistent=False)

    def forward(self, x):
        return (x @ self.weight) * self.scale


def test_buffers_are_saved_and_moved_but_not_trained():
    torch.manual_seed(0)
    scaled = _ScaledLinear(4, 3)
    assert [n for n, _ in scaled.named_parameters()] == ["weight"]
    assert [n for n, _ in scaled.named_buffers()] == ["scale", "table"]
    assert list(scaled.state_dict()) == ["weight", "scale"]  # persistent buffers only
    assert not scaled.scale.requires_grad
    opt = torch.optim.SGD(scaled.parameters(), lr=0.1)
    scaled(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
    assert torch.equal(scaled.scale, torch.full((3,), 0.5))
    scaled.to(torch.float64)
    assert {t.dtype for t in [*scaled.parameters(), *scaled.buffers()]} == {torch.float64}
    assert scaled(torch.randn(8, 4, dtype=torch.float64)).dtype == torch.float64


def test_exercise_5_1_answers_by_experiment():
    scaled = _ScaledLinear(1024, 4096)
    assert sum(p.numel() for p in scaled.parameters()) == ANSWERS["E5.1 numbers the optimizer updates"].expected
    assert sum(t.nbytes for t in scaled.state_dict().values()) == ANSWERS["E5.1 state_dict() bytes in fp32"].expected
    scaled.to(torch.bfloat16)
    every = [*scaled.parameters(), *scaled.buffers()]
    assert sum(t.nbytes for t in every) == ANSWERS["E5.1 bytes of all registered tensors in bf16"].expected


def test_exercise_5_2_answers_keep_the_second_moment():
    d = 4096
    a, b, c = (ANSWERS[f"E5.2 ({k}) std"].expected for k in "abc")
    assert (a, b, c) == pytest.approx((1 / 64, math.sqrt(2 / d), 1 / (64 * SHRINK)), rel=1e-4)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, d, generator=g, dtype=torch.float64)
    w_a = a * torch.randn(d, 256, generator=g, dtype=torch.float64)
    w_b = b * torch.randn(d, 256, generator=g, dtype=torch.float64)
    w_c = nn.init.trunc_normal_(torch.empty(d, 256, dtype=torch.float64), std=c, a=-3 * c, b=3 * c, generator=g)
    assert (x @ w_a).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert (F.relu(x) @ w_b).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert (x @ w_c).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert w_c.abs().max().item() <= 3 * c


def test_exercise_5_3_answers_by_experiment():
    m = nn.Module()
    m.a = nn.Parameter(torch.zeros(2))
    m.b = torch.zeros(2)
    m.register_buffer("c", torch.zeros(2))
    m.register_buffer("d", torch.zeros(2), persistent=False)
    m.e = [Linear(2, 2)]
    m.f = nn.ModuleList([Linear(2, 2)])

    def tensors():  # looked up again after .to(): buffers are replaced
        return dict(zip("abcdef", [m.a, m.b, m.c, m.d, m.e[0].weight, m.f[0].weight], strict=True))

    trained = {id(p) for p in m.parameters()}
    saved = {t.data_ptr() for t in m.state_dict().values()}
    assert "".join(k for k, t in tensors().items() if id(t) in trained) == ANSWERS["E5.3 trained"].expected
    assert "".join(k for k, t in tensors().items() if t.data_ptr() in saved) == ANSWERS["E5.3 saved"].expected
    m.to(torch.float64)
    converted = "".join(k for k, t in tensors().items() if t.dtype == torch.float64)
    assert converted == ANSWERS["E5.3 converted"].expected
