"""Each optimizer against its torch.optim counterpart: 1,000 steps, within 1e-6."""

import copy

import pytest
import torch

from lecture_utils import optim
from lecture_utils.memory import OPTIMIZER_STATE_COPIES

# (ours, theirs, hyper-parameters in both conventions)
PAIRS = {
    "sgd": (optim.SGD, torch.optim.SGD, {"lr": 0.01}, {"lr": 0.01}),
    "sgd+l2": (optim.SGD, torch.optim.SGD, {"lr": 0.01, "weight_decay": 0.1}, {"lr": 0.01, "weight_decay": 0.1}),
    "momentum": (optim.Momentum, torch.optim.SGD, {"lr": 0.01, "momentum": 0.9}, {"lr": 0.01, "momentum": 0.9}),
    "adagrad": (optim.AdaGrad, torch.optim.Adagrad, {"lr": 0.05}, {"lr": 0.05}),
    "rmsprop": (optim.RMSProp, torch.optim.RMSprop, {"lr": 0.001}, {"lr": 0.001}),
    "adam": (optim.Adam, torch.optim.Adam, {"lr": 0.001}, {"lr": 0.001}),
    "adam+l2": (optim.Adam, torch.optim.Adam, {"lr": 0.001, "weight_decay": 0.1}, {"lr": 0.001, "weight_decay": 0.1}),
    "adamw": (optim.AdamW, torch.optim.AdamW, {}, {}),  # both default weight_decay=0.01
    "adamw-betas": (optim.AdamW, torch.optim.AdamW, {"lr": 3e-3, "betas": (0.8, 0.95), "weight_decay": 0.1},
                    {"lr": 3e-3, "betas": (0.8, 0.95), "weight_decay": 0.1}),
}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def _train(model, opt, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=g)
        y = x.sum(dim=1, keepdim=True).sin()
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("name", list(PAIRS))
def test_matches_torch_optim_after_1000_steps(name):
    ours_cls, theirs_cls, ours_kw, theirs_kw = PAIRS[name]
    a, b = _model(), _model()
    _train(a, ours_cls(a.parameters(), **ours_kw), 1000)
    _train(b, theirs_cls(b.parameters(), foreach=False, **theirs_kw), 1000)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=1e-6)
    moved = sum((pa - pc).abs().sum() for pa, pc in zip(a.parameters(), _model().parameters(), strict=True))
    assert moved > 1e-3  # the comparison is not vacuous: training changed the weights


@pytest.mark.parametrize("name", ["momentum", "adagrad", "rmsprop", "adam", "adamw"])
def test_state_dict_round_trip_resumes_identically(name):
    cls, _, kw, _ = PAIRS[name]
    a = _model()
    opt_a = cls(a.parameters(), **kw)
    _train(a, opt_a, 50)
    b = copy.deepcopy(a)
    opt_b = cls(b.parameters(), **kw)
    opt_b.load_state_dict(copy.deepcopy(opt_a.state_dict()))
    _train(a, opt_a, 50, seed=2)
    _train(b, opt_b, 50, seed=2)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    fresh = copy.deepcopy(b)
    _train(fresh, cls(fresh.parameters(), **kw), 50, seed=2)  # without the state: different
    assert any(not torch.equal(pa, pf) for pa, pf in zip(a.parameters(), fresh.parameters(), strict=True))


@pytest.mark.parametrize(("name", "copies"), list(OPTIMIZER_STATE_COPIES.items()))
def test_state_is_0_1_1_1_2_2_copies(name, copies):
    model = _model()
    opt = optim.OPTIMIZERS[name](model.parameters(), lr=1e-3)
    _train(model, opt, 1)
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert optim.state_bytes(opt) == copies * n_bytes


@pytest.mark.parametrize(("cls", "kw"), [
    (optim.SGD, {"lr": -0.1}), (optim.SGD, {"lr": float("nan")}), (optim.SGD, {"weight_decay": -1}),
    (optim.Momentum, {"momentum": 1.0}), (optim.Momentum, {"momentum": -0.1}),
    (optim.AdaGrad, {"eps": 0}), (optim.RMSProp, {"alpha": 1.0}), (optim.RMSProp, {"eps": -1e-8}),
    (optim.Adam, {"betas": (1.0, 0.999)}), (optim.Adam, {"betas": (0.9, -0.1)}), (optim.Adam, {"betas": 0.9}),
    (optim.AdamW, {"eps": 0.0}), (optim.AdamW, {"lr": "0.1"}), (optim.AdamW, {"weight_decay": -0.01}),
])
def test_bad_hyper_parameters_are_rejected(cls, kw):
    with pytest.raises(ValueError, match="Invalid"):
        cls(_model().parameters(), **kw)


def test_adamw_defaults_and_decoupling():
    opt = optim.AdamW(_model().parameters())
    assert opt.defaults == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
    # With a zero gradient Adam's step is 0, so only the decay moves theta: by lr * wd * theta.
    p = torch.nn.Parameter(torch.tensor([2.0, -4.0]))
    p.grad = torch.zeros(2)
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    torch.testing.assert_close(p.detach(), torch.tensor([2.0, -4.0]) * (1 - 0.1 * 0.5))


def test_state_bytes_rejects_non_optimizers():
    with pytest.raises(TypeError):
        optim.state_bytes("adam")


def test_zero_stage1_halves_each_ranks_adamw_state():
    rows = optim.zero_state_bytes(sizes=(64, 128, 128, 64), world_size=2)
    n_params = 64 * 128 + 128 * 128 + 128 * 64
    assert [r["rank"] for r in rows] == [0, 1]
    assert sum(r["params"] for r in rows) == n_params
    for r in rows:
        # m and v for this rank's shard, plus a 4-byte step counter per parameter tensor.
        assert r["state_bytes"] - 8 * r["params"] in (4, 8, 12)
        assert r["state_bytes"] == pytest.approx(8 * n_params / 2, rel=0.01)


@pytest.mark.parametrize(("kw", "error"), [({"sizes": (64,)}, ValueError), ({"sizes": [64, 64]}, ValueError),
                                           ({"world_size": 0}, ValueError), ({"world_size": 2.0}, ValueError)])
def test_zero_state_bytes_rejects_bad_input(kw, error):
    with pytest.raises(error):
        optim.zero_state_bytes(**kw)
