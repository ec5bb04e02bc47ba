"""Checks that left notebook 07 (optimizers) because they test lecture_utils, not the lesson.

Each compares the package with an independent oracle where one exists: torch.optim for the
optimizers and their state, real tensors for the bytes per parameter, the plotted data for
``plot_optimizer_paths``. The optimizers' agreement with torch.optim over 1,000 steps is in
tests/test_optim.py.
"""

from __future__ import annotations

import copy

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lecture_utils import optim  # noqa: E402
from lecture_utils.plots import OPTIMIZER_PATHS_FIGSIZE, plot_optimizer_paths  # noqa: E402
from lecture_utils.recipes import param_breakdown  # noqa: E402
from lecture_utils.sizes import tensor_bytes  # noqa: E402
from lecture_utils.training_memory import predict_training_memory  # noqa: E402

TORCH = {"sgd": (torch.optim.SGD, {}), "momentum": (torch.optim.SGD, {"momentum": 0.9}),
         "adagrad": (torch.optim.Adagrad, {}), "rmsprop": (torch.optim.RMSprop, {}),
         "adam": (torch.optim.Adam, {}), "adamw": (torch.optim.AdamW, {})}


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))


def _one_step(model, opt):
    opt.zero_grad(set_to_none=True)
    model(torch.randn(32, 64, generator=torch.Generator().manual_seed(1))).pow(2).mean().backward()
    opt.step()


@pytest.mark.parametrize("name", list(TORCH))
def test_predict_training_memory_matches_torch_optims_state(name):
    # (moved from notebook 07, §7.2: "torch.optim == predict_training_memory")
    model = _mlp()
    cls, kwargs = TORCH[name]
    opt = cls(model.parameters(), lr=1e-3, **kwargs)
    _one_step(model, opt)
    assert optim.state_bytes(opt) == predict_training_memory(model, optimizer=name).optimizer_state


@pytest.mark.parametrize("name", list(TORCH))
def test_ours_keep_torch_optims_state_less_its_step_tensors(name):
    model = _mlp()
    ours = optim.OPTIMIZERS[name](model.parameters(), lr=1e-3)
    _one_step(model, ours)
    cls, kwargs = TORCH[name]
    theirs = cls(model.parameters(), lr=1e-3, **kwargs)
    _one_step(model, theirs)
    n_tensors = len(list(model.parameters()))
    step_bytes = 4 * n_tensors if name in {"adagrad", "rmsprop", "adam", "adamw"} else 0
    assert optim.state_bytes(theirs) - optim.state_bytes(ours) == step_bytes
    assert {k for k, v in ours.state[model[0].weight].items() if torch.is_tensor(v)} == \
           {k for k, v in theirs.state[model[0].weight].items() if torch.is_tensor(v) and v.dim()}


def test_fp32_adamw_measured_part_by_part_is_the_recipe():
    # (moved from notebook 07, §1.2: "fp32 AdamW, measured per part == param_breakdown")
    model = _mlp()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    _one_step(model, opt)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    measured = {"weights": sum(tensor_bytes(p) for p in params) / n,
                "gradients": sum(tensor_bytes(p.grad) for p in params) / n,
                "adam m": sum(tensor_bytes(opt.state[p]["exp_avg"]) for p in params) / n,
                "adam v": sum(tensor_bytes(opt.state[p]["exp_avg_sq"]) for p in params) / n}
    assert measured == {k: float(v) for k, v in param_breakdown("fp32_adamw").items()}


def test_adagrad_is_bit_identical_to_torch_optim():
    # The lesson writes s <- s + g^2 as one fused torch.addcmul so that it rounds as torch.optim does.
    a, b = _mlp(), _mlp()
    opt_a, opt_b = optim.AdaGrad(a.parameters(), lr=0.05), torch.optim.Adagrad(b.parameters(), lr=0.05, foreach=False)
    for _ in range(20):
        _one_step(a, opt_a)
        _one_step(b, opt_b)
    assert all(torch.equal(pa, pb) for pa, pb in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize("name", list(TORCH))
def test_extra_param_group_keys_are_ignored(name):
    # update() takes its hyper-parameters by name from the group; keys others add (an LR
    # scheduler's initial_lr, torch's differentiable after load_state_dict) must not break it.
    model = _mlp()
    opt = optim.OPTIMIZERS[name](model.parameters(), lr=1e-2)
    _one_step(model, opt)
    torch.optim.lr_scheduler.StepLR(opt, step_size=1)  # adds "initial_lr" to every group
    opt.load_state_dict(copy.deepcopy(opt.state_dict()))  # adds "differentiable" to defaults
    twin = copy.deepcopy(opt)  # notebook 08 steps a deep copy
    for o in (opt, twin):
        _one_step(model, o)
    assert "initial_lr" in opt.param_groups[0]


def test_optimizer_paths_figure_draws_each_path_in_its_own_panel():
    paths = {"a": torch.tensor([[-8.0, 1.5], [-4.0, -1.0], [0.0, 0.0]]),
             "b": np.array([[-8.0, 1.5], [-7.0, 1.0]]), "c": torch.zeros(4, 2)}
    fig = plot_optimizer_paths(paths, curvature=(1.0, 50.0))
    drawn = [ax for ax in fig.axes if ax.get_title()]
    assert len(drawn) == 3 and len(fig.axes) == 3  # one row of three
    for ax, (name, path) in zip(drawn, paths.items(), strict=True):
        line = next(line for line in ax.lines if line.get_gid() == "path")
        np.testing.assert_array_equal(np.column_stack([line.get_xdata(), line.get_ydata()]), np.asarray(path))
        final = 0.5 * (path[-1][0] ** 2 + 50 * path[-1][1] ** 2)
        assert ax.get_title().startswith(name) and f"f after {len(path) - 1} steps: {float(final):.3g}" in ax.get_title()
    plt.close(fig)


def test_optimizer_paths_figure_is_wide_readable_and_hides_spare_panels():
    fig = plot_optimizer_paths({str(i): torch.zeros(2, 2) for i in range(4)})  # two rows, two spare axes
    width, height = fig.get_size_inches()
    assert (width, height) == OPTIMIZER_PATHS_FIGSIZE and width / height >= 1280 / 560  # full width on a slide
    assert sum(ax.axison for ax in fig.axes) == 4
    texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label)] + [fig._suptitle]
    assert min(t.get_fontsize() for t in texts if t.get_text()) >= 12
    plt.close(fig)


def test_descend_returns_the_start_then_every_step_as_sgd_does_in_closed_form():
    # descend (notebook 07 runs its optimizers with it) on the valley f = (x^2 + 50 y^2) / 2: plain
    # SGD multiplies x by (1 - lr) and y by (1 - 50 lr) at every step.
    start = [-8.0, 1.5]
    path = optim.descend(torch.optim.SGD, lambda p: torch.tensor([1.0, 50.0], dtype=torch.float64) * p, start, 60,
                         lr=0.035)
    assert path.shape == (61, 2) and path.dtype == torch.float64 and start == [-8.0, 1.5]
    expected = torch.tensor([[-8.0 * 0.965**t, 1.5 * (-0.75) ** t] for t in range(61)], dtype=torch.float64)
    torch.testing.assert_close(path, expected, rtol=1e-12, atol=0)
    assert optim.descend(optim.SGD, lambda p: torch.ones_like(p), [0.0], 0, lr=1.0).tolist() == [[0.0]]
