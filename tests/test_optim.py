"""Each optimizer against its torch.optim counterpart (the independent oracle), within 1e-6; its
state; ZeRO-1's; and descend, which notebook 07 runs them with."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lecture_utils import optim

# (ours, theirs, hyper-parameters in both conventions). Each runs 200 steps, enough to separate L2,
# betas, decoupling and the defaults (docs/mutation.md: the optimizers' mutants run against these).
PAIRS = {
    "sgd": (optim.SGD, torch.optim.SGD, {"lr": 0.01}, {"lr": 0.01}),
    "sgd+l2": (optim.SGD, torch.optim.SGD, {"lr": 0.01, "weight_decay": 0.1}, {"lr": 0.01, "weight_decay": 0.1}),
    "momentum": (optim.Momentum, torch.optim.SGD, {"lr": 0.01, "momentum": 0.9}, {"lr": 0.01, "momentum": 0.9}),
    "momentum+l2": (optim.Momentum, torch.optim.SGD, {"lr": 0.01, "momentum": 0.8, "weight_decay": 0.1},
                    {"lr": 0.01, "momentum": 0.8, "weight_decay": 0.1}),
    "adagrad": (optim.AdaGrad, torch.optim.Adagrad, {"lr": 0.05}, {"lr": 0.05}),
    "adagrad+l2": (optim.AdaGrad, torch.optim.Adagrad, {"lr": 0.05, "weight_decay": 0.1},
                   {"lr": 0.05, "weight_decay": 0.1}),
    "rmsprop": (optim.RMSProp, torch.optim.RMSprop, {"lr": 0.001}, {"lr": 0.001}),
    "rmsprop+l2": (optim.RMSProp, torch.optim.RMSprop, {"lr": 0.001, "alpha": 0.9, "weight_decay": 0.1},
                   {"lr": 0.001, "alpha": 0.9, "weight_decay": 0.1}),
    "adam": (optim.Adam, torch.optim.Adam, {"lr": 0.001}, {"lr": 0.001}),
    "adam+l2": (optim.Adam, torch.optim.Adam, {"lr": 0.001, "weight_decay": 0.1}, {"lr": 0.001, "weight_decay": 0.1}),
    "adamw": (optim.AdamW, torch.optim.AdamW, {}, {}),  # both default weight_decay=0.01
    "adamw-betas": (optim.AdamW, torch.optim.AdamW, {"lr": 3e-3, "betas": (0.8, 0.95), "weight_decay": 0.1},
                    {"lr": 3e-3, "betas": (0.8, 0.95), "weight_decay": 0.1}),
    # every default as torch.optim's (Momentum's 0.9 is the lesson's; torch's SGD has momentum 0)
    **{f"{name}-defaults": (ours, theirs, {}, kw) for name, ours, theirs, kw in [
        ("sgd", optim.SGD, torch.optim.SGD, {}), ("momentum", optim.Momentum, torch.optim.SGD, {"momentum": 0.9}),
        ("adagrad", optim.AdaGrad, torch.optim.Adagrad, {}), ("rmsprop", optim.RMSProp, torch.optim.RMSprop, {}),
        ("adam", optim.Adam, torch.optim.Adam, {})]},
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
def test_matches_torch_optim(name):
    ours_cls, theirs_cls, ours_kw, theirs_kw = PAIRS[name]
    steps = 200
    a, b = _model(), _model()
    _train(a, ours_cls(a.parameters(), **ours_kw), steps)
    _train(b, theirs_cls(b.parameters(), foreach=False, **theirs_kw), steps)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=1e-6)
    moved = sum((pa - pc).abs().sum() for pa, pc in zip(a.parameters(), _model().parameters(), strict=True))
    assert moved > 1e-3  # the comparison is not vacuous: training changed the weights


@pytest.mark.parametrize("name", ["adagrad", "rmsprop", "adam", "adamw"])
def test_step_counts_the_steps_taken_as_torch_optims_does(name):
    # ours keeps the count as a plain int, torch.optim as a tensor; both are the number of steps
    a, b = _model(), _model()
    ours, theirs = optim.OPTIMIZERS[name](a.parameters()), TORCH[name][0](b.parameters(), **TORCH[name][1])
    _train(a, ours, 3)
    _train(b, theirs, 3)
    assert [ours.state[p]["step"] for p in a.parameters()] == [theirs.state[p]["step"].item()
                                                               for p in b.parameters()] == [3.0] * 4


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


def test_adagrad_is_bit_identical_to_torch_optim():
    # The lesson writes s <- s + g^2 as one fused torch.addcmul so that it rounds as torch.optim does.
    a, b = _model(), _model()
    _train(a, optim.AdaGrad(a.parameters(), lr=0.05), 20)
    _train(b, torch.optim.Adagrad(b.parameters(), lr=0.05, foreach=False), 20)
    assert all(torch.equal(pa, pb) for pa, pb in zip(a.parameters(), b.parameters(), strict=True))


TORCH = {"sgd": (torch.optim.SGD, {}), "momentum": (torch.optim.SGD, {"momentum": 0.9}),
         "adagrad": (torch.optim.Adagrad, {}), "rmsprop": (torch.optim.RMSprop, {}),
         "adam": (torch.optim.Adam, {}), "adamw": (torch.optim.AdamW, {})}


@pytest.mark.parametrize("name", list(TORCH))
def test_ours_keep_torch_optims_state_less_its_step_tensors_and_ignore_extra_group_keys(name):
    model = _model()
    ours = optim.OPTIMIZERS[name](model.parameters(), lr=1e-3)
    _train(model, ours, 1)
    cls, kwargs = TORCH[name]
    theirs = cls(model.parameters(), lr=1e-3, **kwargs)
    _train(model, theirs, 1)
    step_bytes = 4 * len(list(model.parameters())) if name in {"adagrad", "rmsprop", "adam", "adamw"} else 0
    assert optim.state_bytes(theirs) - optim.state_bytes(ours) == step_bytes
    assert {k for k, v in ours.state[model[0].weight].items() if torch.is_tensor(v)} == \
           {k for k, v in theirs.state[model[0].weight].items() if torch.is_tensor(v) and v.dim()}
    # update() takes its hyper-parameters by name from the group; keys others add (an LR scheduler's
    # initial_lr, torch's differentiable after load_state_dict) must not break it
    torch.optim.lr_scheduler.StepLR(ours, step_size=1)
    ours.load_state_dict(copy.deepcopy(ours.state_dict()))
    for o in (ours, copy.deepcopy(ours)):  # notebook 08 steps a deep copy
        _train(model, o, 1)
    assert "initial_lr" in ours.param_groups[0]


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
class TestZeroStage1:  # two gloo processes: its own xdist unit (tests/conftest.py)
    def test_zero_stage1_halves_each_ranks_adamw_state(self):
        rows = optim.zero_state_bytes(sizes=(64, 128, 128, 64), world_size=2)
        n_params = 64 * 128 + 128 * 128 + 128 * 64
        assert [r["rank"] for r in rows] == [0, 1]
        assert sum(r["params"] for r in rows) == n_params
        for r in rows:
            # m and v for this rank's shard, plus a 4-byte step counter per parameter tensor.
            assert r["state_bytes"] - 8 * r["params"] in (4, 8, 12)
            assert r["state_bytes"] == pytest.approx(8 * n_params / 2, rel=0.01)

    def test_forked_workers_finish_after_the_parent_ran_torch_on_two_threads(self):
        # a forked child that enters an OpenMP region of its parent's pool hangs (libgomp is not
        # fork-safe): the workers keep to one thread, as DataLoader's do. A fresh Python, since
        # make test-slow's workers run with OMP_NUM_THREADS=1.
        code = ("import torch; torch.set_num_threads(2); torch.randn(256, 256) @ torch.randn(256, 256); "
                "from lecture_utils import optim; print(len(optim.zero_state_bytes(sizes=(64, 128, 64))))")
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                              cwd=Path(__file__).resolve().parents[1])
        assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr[-2000:]

    def test_spawned_workers_report_what_forked_ones_do(self, monkeypatch):
        # Linux forks the workers; macOS, or a process that has used CUDA, spawns them
        forked = optim.zero_state_bytes(sizes=(64, 128, 64), world_size=2)
        monkeypatch.setattr(optim.sys, "platform", "darwin")
        assert optim.zero_state_bytes(sizes=(64, 128, 64), world_size=2) == forked


@pytest.mark.parametrize(("kw", "error"), [({"sizes": (64,)}, ValueError), ({"sizes": (64, 0)}, ValueError),
                                           ({"sizes": (64, "8")}, TypeError), ({"world_size": 0}, ValueError),
                                           ({"world_size": 9}, ValueError), ({"world_size": "2"}, TypeError)])
def test_zero_state_bytes_rejects_bad_input(kw, error):
    with pytest.raises(error):
        optim.zero_state_bytes(**kw)


def test_descend_returns_the_start_then_every_step_as_sgd_does_in_closed_form():
    # on the valley f = (x^2 + 50 y^2) / 2 plain SGD multiplies x by (1 - lr) and y by (1 - 50 lr) each step
    start = [-8.0, 1.5]
    path = optim.descend(torch.optim.SGD, lambda p: torch.tensor([1.0, 50.0], dtype=torch.float64) * p, start, 60,
                         lr=0.035)
    assert path.shape == (61, 2) and path.dtype == torch.float64 and start == [-8.0, 1.5]
    expected = torch.tensor([[-8.0 * 0.965**t, 1.5 * (-0.75) ** t] for t in range(61)], dtype=torch.float64)
    torch.testing.assert_close(path, expected, rtol=1e-12, atol=0)
    assert optim.descend(optim.SGD, lambda p: torch.ones_like(p), [0.0], 0, lr=1.0).tolist() == [[0.0]]
