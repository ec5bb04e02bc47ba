import random

import numpy as np
import pytest
import torch

from lecture_utils import cuda_only, get_device, setup
from lecture_utils.device import describe_device, seed_all


@pytest.mark.parametrize(("cuda", "mps", "expected"), [(True, True, "cuda:0"), (False, True, "mps"),
                                                      (False, False, "cpu")])
def test_the_default_is_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    from lecture_utils import device as device_module

    monkeypatch.delenv("LECTURE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(device_module, "_mps_available", lambda: mps)
    assert get_device() == torch.device(expected)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
@pytest.mark.parametrize("name", ["cuda", "cuda:0"])
def test_missing_cuda_raises_instead_of_falling_back(name):
    with pytest.raises(ValueError, match="CUDA is not available"):
        get_device(name)


@pytest.mark.parametrize("name", ["gpu", "tpu:0", "cpu:1", "nonsense"])
def test_unknown_devices_are_rejected_with_choices(name):
    with pytest.raises(ValueError, match="cpu"):
        get_device(name)


def test_non_string_device_is_a_type_error():
    with pytest.raises(TypeError, match="str or torch.device"):
        get_device(3)


def test_setup_seeds_everything_and_prints_one_device_line(capsys, monkeypatch):
    monkeypatch.setenv("LECTURE_DEVICE", "cpu")
    device = setup(seed=123)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    setup(seed=123)
    second = (random.random(), np.random.rand(), torch.rand(1).item())
    assert device == torch.device("cpu")
    assert first == second
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"device: {describe_device(device)}"] * 2


def test_setup_sets_print_and_plot_defaults(capsys):
    import matplotlib as mpl

    setup(device="cpu")
    capsys.readouterr()
    assert str(torch.tensor([1 / 3])) == "tensor([0.3333])"
    assert mpl.rcParams["axes.grid"] is True
    # projector-sized text: nothing the defaults draw is below 12 pt
    sizes = [mpl.rcParams[k] for k in ("font.size", "axes.titlesize", "axes.labelsize", "legend.fontsize",
                                       "xtick.labelsize", "ytick.labelsize")]
    assert all(isinstance(s, (int, float)) and s >= 12 for s in sizes), sizes


@pytest.fixture
def mode_restored():
    yield
    seed_all(0)  # off again: the flag is global
    assert not torch.are_deterministic_algorithms_enabled()


def notebook_determinism_check():
    """Notebook 08, §8.1, the cell tagged claim-S36, verbatim: put_ (accumulate=False) has no deterministic
    kernel, so it raises in deterministic mode only."""
    from lecture_utils import check

    return check("deterministic mode is on: put_, which has no deterministic kernel, raises",
                 lambda: torch.zeros(4).put_(torch.tensor([0, 0]), torch.ones(2)), raises=RuntimeError)


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_the_notebooks_determinism_check_passes_only_in_deterministic_mode(mode_restored):
    seed_all(5, deterministic=True)
    assert torch.are_deterministic_algorithms_enabled()
    a = torch.rand(3)
    seed_all(5, deterministic=True)
    assert torch.equal(a, torch.rand(3))
    assert "does not have a deterministic implementation" in str(notebook_determinism_check())
    seed_all(0)  # seeding again switches the mode off (the old notebook seeded a run after turning it on)
    assert not torch.are_deterministic_algorithms_enabled()
    with pytest.raises(AssertionError, match="expected: RuntimeError"):
        notebook_determinism_check()
    with pytest.raises(TypeError):
        seed_all(0, deterministic="yes")


def test_losses_match_with_the_mode_off_too_so_they_prove_nothing_about_it(mode_restored):
    """The notebook's old determinism check compared two runs' losses: equal on a CPU either way."""
    from lecture_utils.models import GPT, get_config
    from lecture_utils.optim import AdamW

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


def test_describe_device():
    assert describe_device(torch.device("cpu")) == f"cpu ({torch.get_num_threads()} threads)"


def test_cuda_only_skips_with_one_per_device_line(capsys):
    assert cuda_only(torch.device("cpu"), "peak memory") is False
    assert capsys.readouterr().out == ("[per-device] skipped on cpu: peak memory needs a CUDA GPU; "
                                       "published figures: docs/gpu/reference.md\n")
    assert cuda_only(torch.device("cuda"), "peak memory") is True  # no GPU needed to decide
    assert capsys.readouterr().out == ""


def test_the_environment_variable_is_checked_like_an_argument(monkeypatch):
    monkeypatch.setenv("LECTURE_DEVICE", "tpu")
    with pytest.raises(ValueError, match="unknown device 'tpu'; valid types: cuda, mps, cpu"):
        get_device()


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="checks the no-MPS refusal")
def test_missing_mps_raises():
    with pytest.raises(ValueError, match="MPS is not available"):
        get_device("mps")


def test_device_errors_are_runtime_errors_like_torchs_and_still_value_errors(monkeypatch):
    from lecture_utils.device import DeviceError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for name, message in (("cuda:99", "device 'cuda:99' does not exist; valid: cuda:0 .. cuda:0"),
                          ("tpu", "unknown device 'tpu'; valid types: cuda, mps, cpu")):
        with pytest.raises(DeviceError) as err:
            get_device(name)
        assert isinstance(err.value, RuntimeError) and isinstance(err.value, ValueError)
        assert str(err.value) == message
