"""The lecture's Linear and init_weight, Cruncher and the GPT, against torch (F.linear, nn.Linear,
trunc_normal_, registration); the exercises of notebook 05 found by experiment."""

import io
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lecture_utils.exercises import ANSWERS
from lecture_utils.models import CONFIGS, GPT, Cruncher, GPTConfig, get_config, n_params
from lecture_utils.nn import Linear, init_weight
from lecture_utils.sizes import tensor_bytes


def test_linear_equals_torch_in_its_transposed_layout_and_counts_its_parameters():
    torch.manual_seed(0)
    lin = Linear(512, 2048)
    x = torch.randn(64, 512)
    y = lin(x)
    assert lin.weight.shape == (512, 2048) and y.shape == (64, 2048)  # (d_in, d_out): y = x @ W
    torch.testing.assert_close(y, F.linear(x, lin.weight.T))
    ref = nn.Linear(512, 2048, bias=False)  # torch stores the transpose
    with torch.no_grad():
        ref.weight.copy_(lin.weight.T)
    torch.testing.assert_close(y, ref(x))
    assert repr(lin) == "Linear(d_in=512, d_out=2048)" and [n for n, _ in lin.named_parameters()] == ["weight"]
    assert n_params(lin) == 512 * 2048 and n_params(nn.Linear(512, 2048)) == 512 * 2048 + 2048  # torch's has a bias
    assert tensor_bytes(Linear(512, 2048, dtype=torch.bfloat16).weight) == 2 * 512 * 2048
    with torch.device("meta"):  # counted without allocating or initialising anything
        assert n_params(Cruncher(4096, 8)) == 8 * 4096**2 + 4096  # L * D^2 and a D -> 1 head


def test_a_linear_round_trips_through_its_state_dict_and_converts_in_place():
    torch.manual_seed(0)
    lin = Linear(4, 3)
    assert lin.weight.requires_grad and list(lin.state_dict()) == ["weight"]
    buffer = io.BytesIO()
    torch.save(lin.state_dict(), buffer)
    torch.manual_seed(1)
    fresh = Linear(4, 3)
    assert not torch.equal(fresh.weight, lin.weight)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(fresh.weight, lin.weight)
    assert lin.to(torch.float64) is lin and lin(torch.randn(2, 4, dtype=torch.float64)).dtype == torch.float64


def test_init_weight_is_trunc_normal_with_the_bounds_scaled_and_takes_device_and_dtype():
    d = 1024
    std = 1 / math.sqrt(d)
    torch.manual_seed(0)
    w = init_weight(d, d)
    torch.manual_seed(0)
    assert torch.equal(w, nn.init.trunc_normal_(torch.empty(d, d), std=std, a=-3 * std, b=3 * std))
    assert w.abs().max() <= 3 * std  # (the notes' a=-3, b=3 cut nothing: notebook 05 shows it)
    w = init_weight(8, 4, dtype=torch.float64, device="cpu")
    assert (w.shape, w.dtype, w.device.type) == ((8, 4), torch.float64, "cpu")
    assert Linear(8, 4, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


def test_gpt_forward_shapes_and_causality():
    torch.manual_seed(0)
    cfg = get_config("tiny", n_layers=1)
    model = GPT(cfg)
    idx = torch.randint(0, cfg.vocab_size, (2, 16))
    logits = model(idx)
    assert logits.shape == (2, 16, cfg.vocab_size)
    changed = idx.clone()
    changed[:, 10] = (changed[:, 10] + 1) % cfg.vocab_size
    # Causal: positions before 10 cannot see the change.
    torch.testing.assert_close(model(changed)[:, :10], logits[:, :10])
    assert not torch.allclose(model(changed)[:, 10:], logits[:, 10:])


def test_tied_embeddings_share_one_table():
    model = GPT(get_config("tiny", tie_embeddings=True))
    assert model.lm_head is None
    untied = GPT(get_config("tiny", tie_embeddings=False))
    assert untied.lm_head is not None
    assert n_params(untied) - n_params(model) == 8192 * 64
    assert n_params(untied, non_embedding=True) == n_params(model, non_embedding=True)


def test_gpu_config_is_about_gpt2_small():
    cfg = CONFIGS["gpu"]
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.seq_len) == (12, 768, 12, 1024)
    with torch.device("meta"):  # 124M-ish parameters without allocating them
        model = GPT(cfg)
    assert 120e6 < n_params(model, non_embedding=True) < 170e6


@pytest.mark.parametrize(("kw", "match"), [({"n_heads": 3}, "divisible"), ({"attention": "flash"}, "attention"),
                                           ({"d_model": 0}, "d_model"), ({"d_ff": 0}, "d_ff")])
def test_config_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        get_config("tiny", **kw)


@pytest.mark.parametrize(("kw", "error"), [({"n_layers": 2.5}, TypeError), ({"vocab_size": True}, TypeError),
                                           ({"attention": None}, TypeError)])
def test_config_validation_of_types(kw, error):
    with pytest.raises(error):
        get_config("tiny", **kw)


def test_config_lookup_names_the_choices():
    assert get_config("TINY") == CONFIGS["tiny"]
    with pytest.raises(ValueError, match="valid: tiny, gpu"):
        get_config("huge")
    # The model trusts its config; torch itself refuses what it cannot run.
    model = GPT(GPTConfig(vocab_size=10, seq_len=4, n_layers=1, d_model=8, n_heads=2))
    with pytest.raises(IndexError):
        model(torch.zeros(1, 5, dtype=torch.long))  # longer than the position table
    with pytest.raises(RuntimeError):
        model(torch.zeros(1, 4))  # float token ids


# --- the exercises of notebook 05, whose solutions count by hand: found by experiment

class _ScaledLinear(nn.Module):
    """The layer of the notebook's register_buffer slide (and of exercise E5.1)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out))
        self.register_buffer("scale", torch.full((d_out,), 0.5))
        self.register_buffer("table", torch.arange(d_out, dtype=torch.float32), persistent=False)


def test_exercise_5_1_answers_by_experiment():
    scaled = _ScaledLinear(1024, 4096)
    assert sum(p.numel() for p in scaled.parameters()) == ANSWERS["E5.1 numbers the optimizer updates"].expected
    assert sum(t.nbytes for t in scaled.state_dict().values()) == ANSWERS["E5.1 state_dict() bytes in fp32"].expected
    scaled.to(torch.bfloat16)
    every = [*scaled.parameters(), *scaled.buffers()]
    assert sum(t.nbytes for t in every) == ANSWERS["E5.1 bytes of all registered tensors in bf16"].expected


def test_exercise_5_2_answers_keep_the_second_moment():
    d, shrink = 4096, 0.98658  # the std of N(0, 1) cut at +-3 (notebook 05 computes it)
    a, b, c = (ANSWERS[f"E5.2 ({k}) std"].expected for k in "abc")
    assert (a, b, c) == pytest.approx((1 / 64, math.sqrt(2 / d), 1 / (64 * shrink)), rel=1e-4)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, d, generator=g, dtype=torch.float64)
    w_a = a * torch.randn(d, 256, generator=g, dtype=torch.float64)
    w_b = b * torch.randn(d, 256, generator=g, dtype=torch.float64)
    w_c = nn.init.trunc_normal_(torch.empty(d, 256, dtype=torch.float64), std=c, a=-3 * c, b=3 * c, generator=g)
    assert (x @ w_a).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert (F.relu(x) @ w_b).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert (x @ w_c).pow(2).mean().item() == pytest.approx(1.0, rel=0.05)
    assert w_c.abs().max().item() <= 3 * c
