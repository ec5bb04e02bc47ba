import re
from pathlib import Path

import numpy as np
import pytest
import torch

from lecture_utils.checks import CHECK_MARK, MEASURED_PREFIX, check, check_raises, measured


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
        # passing counterparts of the tolerance must-fail cases below
        (torch.tensor([1.0], dtype=torch.float64), torch.tensor([1.0 + 1e-6], dtype=torch.float64), {"rel": 1e-5}),
        (np.array([1.0, 2.0]), np.array([1.0, 2.0]), {}),
        (np.ones(2), np.ones(2) + 1e-6, {"abs": 1e-5}),
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
        # tolerances are honoured, not replaced by allclose's defaults (rtol=1e-5):
        (torch.tensor([1.0], dtype=torch.float64), torch.tensor([1.0 + 1e-6], dtype=torch.float64), {"rel": 1e-9}),
        (torch.tensor([1.0]), torch.tensor([1.0 + 1e-6]), {"rel": 1e-9}),  # in float32 1 + 1e-6 is 1 + 8 ulp, still not 1
        (np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]), {}),  # exact for numpy means exact
        (np.ones(2), np.ones(2) + 1e-6, {"abs": 1e-9}),
    ],
)
def test_check_fails_loudly_with_both_values(got, expected, kw, capsys):
    with pytest.raises(AssertionError) as err:
        check("value", got, expected, **kw)
    message = str(err.value)
    assert "value" in message and "got:" in message and "expected:" in message
    assert capsys.readouterr().out == ""  # nothing claims success


def test_check_refuses_a_tolerance_it_would_silently_ignore(capsys):
    with pytest.raises(AssertionError, match="tolerances need numbers"):
        check("x", "a", "a", rel=0.1)
    assert capsys.readouterr().out == ""


def test_measured_prefix_is_what_the_sanitizer_masks(capsys):
    measured("matmul time", 0.0123456, "s")
    measured("device name", "NVIDIA H200")
    assert capsys.readouterr().out == "[measured] matmul time: 0.0123 s\n[measured] device name: NVIDIA H200\n"


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



def test_the_output_markers_are_spelled_once():
    """Every other module and script prints ✓ / [measured] through checks' constants."""
    root = Path(__file__).resolve().parents[1]
    literal = re.compile(r"""f?["'](✓|\[measured\])""")  # a string literal that starts with a marker
    offenders = [str(path.relative_to(root)) for folder in ("lecture_utils", "scripts", "benchmarks")
                 for path in sorted((root / folder).rglob("*.py"))
                 if path.name != "checks.py" and literal.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
    assert (CHECK_MARK, MEASURED_PREFIX) == ("✓", "[measured]")


def test_check_answer_says_not_answered_right_or_not_right_and_never_raises(capsys):
    from lecture_utils.checks import check_answer

    assert check_answer("Q3", ..., 5_000_000_000) is False
    assert "Q3: not answered yet" in capsys.readouterr().out
    assert check_answer("Q3", 5e9, 5_000_000_000, rel=0.01) is True
    assert capsys.readouterr().out == "✓ Q3: 5000000000.0 is right\n"
    assert check_answer("Q3", 4e9, 5_000_000_000, rel=0.01) is False
    wrong = capsys.readouterr().out
    assert wrong.startswith("✗ Q3: 4000000000.0 is not right yet") and "5000000000" not in wrong
    assert check_answer("Q3", "five billion", 5_000_000_000, rel=0.01) is False  # no TypeError
    assert check_answer("shape", torch.zeros(2), torch.zeros(3)) is False
    assert check_answer("exact", 5_000_000_001, 5_000_000_000) is False
