import numpy as np
import pytest
import torch

from lecture_utils.checks import check, check_raises, measured


def test_check_prints_one_line_on_success(capsys):
    check("sum", 1 + 1, 2)
    assert capsys.readouterr().out == "✓ sum: 2\n"


@pytest.mark.parametrize(
    ("got", "expected", "kw"),
    [
        (0.1 + 0.2, 0.3, {"rel": 1e-12}),
        (100.0, 101.0, {"abs": 1.0}),
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), {}),
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]), {"rel": 1e-6}),
        (np.arange(3), np.arange(3), {}),
        ((4, 1), (4, 1), {}),
        ("abc", "abc", {}),
        (float("nan"), float("nan"), {}),
    ],
)
def test_check_accepts_equal_values(got, expected, kw, capsys):
    check("value", got, expected, **kw)
    assert capsys.readouterr().out.startswith("✓ value: ")


@pytest.mark.parametrize(
    ("got", "expected", "kw"),
    [
        (0.1 + 0.2, 0.3, {}),  # exact by default: floating point is not
        (100.0, 102.0, {"abs": 1.0}),
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), {}),
        (torch.zeros(2, 3), torch.zeros(3, 2), {}),  # same values, wrong shape
        (np.zeros(2), np.zeros(3), {"abs": 1.0}),
        ((4, 1), (1, 4), {}),
        (True, 1, {}),  # a bool is not a number here
    ],
)
def test_check_fails_loudly_with_both_values(got, expected, kw, capsys):
    with pytest.raises(AssertionError) as err:
        check("value", got, expected, **kw)
    message = str(err.value)
    assert "value" in message and "got:" in message and "expected:" in message
    assert capsys.readouterr().out == ""  # nothing claims success


@pytest.mark.parametrize("kw", [{"rel": -1}, {"abs": -0.5}, {"rel": "1e-3"}, {"abs": float("nan")}])
def test_check_rejects_bad_tolerances(kw):
    with pytest.raises(ValueError, match="tolerance"):
        check("x", 1.0, 1.0, **kw)


def test_check_rejects_tolerance_on_non_numbers():
    with pytest.raises(TypeError, match="tolerances need numbers"):
        check("x", "a", "a", rel=0.1)


@pytest.mark.parametrize("name", ["", None, 3])
def test_check_rejects_bad_names(name):
    with pytest.raises(TypeError, match="name"):
        check(name, 1, 1)


def test_measured_prefix_is_what_the_sanitizer_masks(capsys):
    measured("matmul time", 0.0123456, "s")
    measured("device name", "NVIDIA H200")
    assert capsys.readouterr().out == "[measured] matmul time: 0.0123 s\n[measured] device name: NVIDIA H200\n"


@pytest.mark.parametrize(
    ("args", "kw", "error"),
    [(("", 1.0), {}, TypeError), (("t", 1.0, 3), {}, TypeError), (("t", 1.0), {"digits": 0}, ValueError)],
)
def test_measured_rejects_bad_input(args, kw, error):
    with pytest.raises(error):
        measured(*args, **kw)


def test_tolerant_tensor_checks_print_no_machine_dependent_digits(capsys):
    a = torch.randn(2, 3)
    check("matmul", a @ torch.eye(3), a, rel=1e-6)
    check("array", np.ones(2), np.ones(2) + 1e-9, abs=1e-6)
    assert capsys.readouterr().out == (
        "✓ matmul: Tensor (2, 3) torch.float32 matches (rel=1e-06, abs=0)\n"
        "✓ array: ndarray (2,) float64 matches (rel=0, abs=1e-06)\n"
    )


def test_check_raises_returns_the_exception(capsys):
    err = check_raises("bad view", RuntimeError, torch.arange(6).view(2, 3).T.view, 6)
    assert "view size is not compatible" in str(err)
    assert capsys.readouterr().out == "✓ bad view: raises RuntimeError\n"


def test_check_raises_fails_when_nothing_or_something_else_is_raised(capsys):
    with pytest.raises(AssertionError, match="returned: 6"):
        check_raises("no error", ValueError, lambda: 6)
    with pytest.raises(AssertionError, match="raised:   ZeroDivisionError"):
        check_raises("other error", ValueError, lambda: 1 / 0)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("args", "error"), [(("", ValueError, int), TypeError),
                                             (("x", "ValueError", int), TypeError),
                                             (("x", ValueError, 3), TypeError)])
def test_check_raises_rejects_bad_input(args, error):
    with pytest.raises(error):
        check_raises(*args)


def test_positive_int_validates_counts():
    from lecture_utils.checks import positive_int

    assert positive_int(3, "batch_size") == 3
    with pytest.raises(ValueError, match="batch_size must be > 0, got 0"):
        positive_int(0, "batch_size")
    for bad in (2.0, "2", True, None):
        with pytest.raises(TypeError, match="batch_size must be an int"):
            positive_int(bad, "batch_size")
