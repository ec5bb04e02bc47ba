import math

import pytest
import torch
import torch.nn.functional as F

from lecture_utils.models import CONFIGS, GPT, GPTConfig, get_config, n_params
from lecture_utils.nn import Linear, init_weight


def test_linear_matches_functional_linear():
    torch.manual_seed(0)
    layer = Linear(16, 8)
    x = torch.randn(4, 16)
    assert layer.weight.shape == (16, 8)
    torch.testing.assert_close(layer(x), F.linear(x, layer.weight.T))
    assert [name for name, _ in layer.named_parameters()] == ["weight"]


def test_init_is_truncated_at_three_std():
    torch.manual_seed(0)
    w = init_weight(1024, 512)
    std = 1 / math.sqrt(1024)
    assert w.abs().max() <= 3 * std
    # A normal cut at +-3 std has std 0.9866 of the uncut one.
    assert w.std().item() == pytest.approx(0.9866 * std, rel=0.01)


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


def test_math_and_sdpa_attention_agree():
    torch.manual_seed(0)
    math_model = GPT(get_config("tiny", attention="math"))
    sdpa_model = GPT(get_config("tiny", attention="sdpa"))
    sdpa_model.load_state_dict(math_model.state_dict())
    idx = torch.randint(0, 8192, (2, 32))
    torch.testing.assert_close(sdpa_model(idx), math_model(idx), rtol=1e-4, atol=1e-5)


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
