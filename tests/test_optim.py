"""Each optimizer against its torch.optim counterpart (the independent oracle), within 1e-6."""

import copy

import pytest
import torch

from lecture_utils import optim
from lecture_utils.recipes import bytes_per_param

# (ours, theirs, hyper-parameters in both conventions). The six plain cases run 1,000 steps,
# the variants 200 (enough to separate L2, betas and decoupling; more adds nothing but time).
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


LONG = {"sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"}


@pytest.mark.parametrize("name", list(PAIRS))
def test_matches_torch_optim(name):
    ours_cls, theirs_cls, ours_kw, theirs_kw = PAIRS[name]
    steps = 1000 if name in LONG else 200
    a, b = _model(), _model()
    _train(a, ours_cls(a.parameters(), **ours_kw), steps)
    _train(b, theirs_cls(b.parameters(), foreach=False, **theirs_kw), steps)
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


@pytest.mark.parametrize(("name", "copies"), [("sgd", 0), ("momentum", 1), ("adagrad", 1), ("rmsprop", 1),
                                               ("adam", 2), ("adamw", 2)])
def test_state_is_0_1_1_1_2_2_copies(name, copies):
    model = _model()
    opt = optim.OPTIMIZERS[name](model.parameters(), lr=1e-3)
    _train(model, opt, 1)
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert optim.state_bytes(opt) == copies * n_bytes


@pytest.mark.parametrize(("name", "recipe"), [("sgd", "fp32_sgd"), ("momentum", "fp32_sgd_momentum"),
                                              ("adagrad", "fp32_adagrad"), ("adamw", "fp32_adamw")])
def test_measured_bytes_per_param_match_the_fp32_recipes(name, recipe):
    model = _model()
    opt = optim.OPTIMIZERS[name](model.parameters(), lr=1e-3)
    _train(model, opt, 1)
    params = list(model.parameters())
    weights_and_grads = sum(t.numel() * t.element_size() for p in params for t in (p, p.grad))
    n_params = sum(p.numel() for p in params)
    assert (weights_and_grads + optim.state_bytes(opt)) / n_params == bytes_per_param(recipe)


def test_adamw_defaults_and_decoupling():
    opt = optim.AdamW(_model().parameters())
    assert opt.defaults == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
    # With a zero gradient Adam's step is 0, so only the decay moves theta: by lr * wd * theta.
    p = torch.nn.Parameter(torch.tensor([2.0, -4.0]))
    p.grad = torch.zeros(2)
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    torch.testing.assert_close(p.detach(), torch.tensor([2.0, -4.0]) * (1 - 0.1 * 0.5))


def test_step_skips_parameters_without_a_gradient_and_returns_the_closures_loss():
    weights = torch.arange(3.0)
    for name, cls in optim.OPTIMIZERS.items():
        used, unused = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
        opt = cls([used, unused], lr=0.1)

        def closure(opt=opt, used=used):
            opt.zero_grad()
            loss = (used * weights).sum()
            loss.backward()  # step() runs under no_grad: the closure must get grad back
            return loss

        loss = opt.step(closure)
        assert loss.item() == 3.0, name  # the loss before the update: 0 + 1 + 2
        assert not torch.equal(used.detach(), torch.ones(3)), name
        assert torch.equal(unused.detach(), torch.ones(3)) and not opt.state[unused], name


@pytest.mark.multiprocess
@pytest.mark.slow  # seconds: make test-slow (CI) runs it
class TestZeroStage1:  # two spawned gloo processes: its own xdist unit (tests/conftest.py)
    def test_zero_stage1_halves_each_ranks_adamw_state(self):
        rows = optim.zero_state_bytes(sizes=(64, 128, 128, 64), world_size=2)
        n_params = 64 * 128 + 128 * 128 + 128 * 64
        assert [r["rank"] for r in rows] == [0, 1]
        assert sum(r["params"] for r in rows) == n_params
        for r in rows:
            # m and v for this rank's shard, plus a 4-byte step counter per parameter tensor.
            assert r["state_bytes"] - 8 * r["params"] in (4, 8, 12)
            assert r["state_bytes"] == pytest.approx(8 * n_params / 2, rel=0.01)


@pytest.mark.parametrize(("kw", "error"), [({"sizes": (64,)}, ValueError), ({"sizes": (64, 0)}, ValueError),
                                           ({"sizes": (64, "8")}, TypeError), ({"world_size": 0}, ValueError),
                                           ({"world_size": 9}, ValueError), ({"world_size": "2"}, TypeError)])
def test_zero_state_bytes_rejects_bad_input(kw, error):
    with pytest.raises(error):
        optim.zero_state_bytes(**kw)
