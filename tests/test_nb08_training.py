"""Checks that left notebook 08 (the training loop) because they test lecture_utils, and the
notebook's determinism check (S36) shown to fail when deterministic mode is off.

The determinism check is the notebook's, verbatim: a kernel with no deterministic
implementation (``put_`` with ``accumulate=False``, listed as raising in the
``torch.use_deterministic_algorithms`` docs) must raise. The notebook's earlier check compared
two runs' losses, which match on a CPU whether the mode is on or not, and ran after
``seed_all(seed)``, which switches the mode off: it passed with determinism never on.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch

from lecture_utils import check, train
from lecture_utils.device import seed_all
from lecture_utils.models import GPT, get_config
from lecture_utils.optim import AdamW, state_bytes
from lecture_utils.recipes import bytes_per_param, max_params_that_fit, param_breakdown


def notebook_determinism_check():
    """Notebook 08, §8.1, the cell tagged claim-S36: passes only in deterministic mode."""
    return check("deterministic mode is on: put_, which has no deterministic kernel, raises",
                 lambda: torch.zeros(4).put_(torch.tensor([0, 0]), torch.ones(2)), raises=RuntimeError)


@pytest.fixture
def mode_restored():
    yield
    seed_all(0)  # off again: the flag is global
    assert not torch.are_deterministic_algorithms_enabled()


def test_the_determinism_check_fails_with_the_mode_off(mode_restored):
    seed_all(0)
    assert not torch.are_deterministic_algorithms_enabled()
    with pytest.raises(AssertionError, match="expected: RuntimeError"):
        notebook_determinism_check()


def test_the_determinism_check_passes_with_the_mode_on(mode_restored):
    seed_all(0, deterministic=True)
    err = notebook_determinism_check()
    assert "does not have a deterministic implementation" in str(err)


def test_seeding_again_switches_the_mode_off_so_the_check_then_fails(mode_restored):
    # The old notebook turned the mode on, then seeded a run with seed_all(seed): off again.
    seed_all(0, deterministic=True)
    seed_all(0)
    assert not torch.are_deterministic_algorithms_enabled()
    with pytest.raises(AssertionError):
        notebook_determinism_check()


def test_losses_match_with_the_mode_off_too_so_they_prove_nothing_about_it(mode_restored):
    def losses():
        model = GPT(get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8))
        opt = AdamW(model.parameters(), lr=1e-2)
        x = torch.randint(0, 64, (4, 8), generator=torch.Generator().manual_seed(1))
        out = []
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.roll(-1, 1).flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out

    seed_all(0)
    off = losses()
    seed_all(0, deterministic=True)
    assert losses() == off


def test_a_checkpoint_holds_every_rng_state_and_leaves_no_temporary_file(tmp_path):
    # (moved from notebook 08, §8.2: "the checkpoint holds every RNG state", "no temporary file")
    model = GPT(get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8))
    train.save_checkpoint(tmp_path / "c.pt", model, AdamW(model.parameters()), 3, generator=torch.Generator())
    assert sorted(train.read_checkpoint(tmp_path / "c.pt")["rng"]) == ["cuda", "generator", "numpy", "python",
                                                                       "torch"]
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_mixed_precision_measured_part_by_part_is_the_recipe():
    # (moved from notebook 08, §1.2: "bf16 + master == param_breakdown('mixed_bf16_adamw')")
    torch.manual_seed(0)
    cfg = get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8)
    model_bf = GPT(cfg).to(torch.bfloat16)
    x = torch.randint(0, 64, (2, 8))
    torch.nn.functional.cross_entropy(model_bf(x).flatten(0, 1).float(), x.flatten()).backward()
    master = [p.detach().float() for p in model_bf.parameters()]
    for m, p in zip(master, model_bf.parameters(), strict=True):
        m.grad = p.grad.float()
    opt = AdamW(master)
    opt.step()
    n = sum(m.numel() for m in master)

    def per_param(tensors):
        return sum(t.numel() * t.element_size() for t in tensors) / n

    measured = {"weights (bf16)": per_param(model_bf.parameters()),
                "gradients (bf16)": per_param(p.grad for p in model_bf.parameters()),
                "master weights": per_param(master),
                "adam m": per_param(opt.state[m]["exp_avg"] for m in master),
                "adam v": per_param(opt.state[m]["exp_avg_sq"] for m in master)}
    assert measured == {k: float(v) for k, v in param_breakdown("mixed_bf16_adamw").items()}
    assert state_bytes(opt) / n == 8


@pytest.mark.parametrize("recipe", ["fp32_adamw", "mixed_bf16_adamw", "autocast_bf16_adamw"])
def test_every_adamw_recipe_is_16_bytes_so_an_80_gb_gpu_holds_5b_parameters(recipe):
    # (moved from notebook 08, §1.2: max_params_that_fit for the three recipes)
    assert bytes_per_param(recipe) == 16
    assert max_params_that_fit(80e9, recipe=recipe) == 5_000_000_000


def test_set_to_none_is_zero_grads_default():
    # the notebook says so in prose (it has been the default since PyTorch 2.0)
    assert inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default is True


def test_evaluate_builds_no_graph_and_restores_training_mode():
    torch.manual_seed(0)
    model = GPT(get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8))
    x = torch.randint(0, 64, (2, 8))
    seen = []
    model.register_forward_hook(lambda m, i, out: seen.append((m.training, out.requires_grad)))
    loss = train.evaluate(model, [(x, x)])
    assert seen == [(False, False)] and model.training
    assert math.isclose(loss, train.loop.lm_loss(model(x), x).item(), rel_tol=1e-6)
