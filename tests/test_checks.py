import math
import numbers
import warnings

import numpy as np
import pytest
import torch

from lecture_utils.checks import check, measured
from lecture_utils.exercises import ANSWERS, check_answer


def test_check_prints_one_line_on_success(capsys):
    check("sum", 1 + 1, 2)
    assert capsys.readouterr().out == "✓ sum: 2\n"
    check("array", np.arange(3), np.arange(3))  # as numpy writes it; a repr of 200 characters whole, of 201 cut
    check("s", "a" * 198, "a" * 198)
    check("s", "a" * 199, "a" * 199)
    assert capsys.readouterr().out == f"✓ array: [0 1 2]\n✓ s: '{'a' * 198}'\n✓ s: '{'a' * 196}...\n"


def test_a_huge_integer_prints_as_a_person_reads_it_and_is_still_compared_exactly(capsys):
    check("6ND (FLOPs)", 6 * 70 * 10**9 * 15 * 10**12, 6_300_000_000_000_000_000_000_000)
    assert capsys.readouterr().out == "✓ 6ND (FLOPs): 6.3e+24 (an exact integer)\n"
    check("below 1e15 it is written out", 10**15 - 1, 10**15 - 1)
    assert capsys.readouterr().out == "✓ below 1e15 it is written out: 999999999999999\n"
    for n, shown in [(10**15, "1e+15 (an exact integer)"), (2**2000, "about 10**602 (an exact integer of 2,001 bits)"),
                     (-2**2003, "about -10**602 (an exact integer of 2,004 bits)")]:  # both 603 digits long
        check("n", n, n)
        assert capsys.readouterr().out == f"✓ n: {shown}\n"
    with pytest.raises(AssertionError):
        check("one more FLOP is a different number", 6 * 10**24 + 1, 6 * 10**24)


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
        (100.0, 101.0, {"rel": 0.02}), (np.ones(2), np.ones(2) + 1e-9, {"rel": 1e-6}),  # rel alone is honoured
        (torch.tensor([math.nan, 1.0]), torch.tensor([math.nan, 1.0]), {"rel": 1e-6}),  # nan is nan, as exactly
        (np.array([math.nan, 1.0]), np.array([math.nan, 1.0]), {"abs": 1e-6}),
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
        (math.nan, 1.0, {}), (np.array([2**53 + 1]), np.array([2**53]), {}),  # exact: no float64 in between
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
    with pytest.raises(AssertionError, match="^rel/abs tolerances need numbers or tensors, got str$"):
        check("x", "3", 3, rel=0.1)
    assert capsys.readouterr().out == ""


def test_measured_prefix_is_what_the_sanitizer_masks(capsys):
    measured("matmul time", 0.0123456, "s")
    measured("device name", "NVIDIA H200")
    measured("copy", 2.5, "GB/s", ref="copy-fp32")
    assert capsys.readouterr().out == ("[measured] matmul time: 0.0123 s\n[measured] device name: NVIDIA H200\n"
                                       "[measured] copy: 2.5 GB/s  [ref copy-fp32]\n")


def test_tolerant_tensor_checks_print_no_machine_dependent_digits(capsys):
    a = torch.randn(2, 3)
    check("matmul", a @ torch.eye(3), a, rel=1e-6)
    check("array", np.ones(2), np.ones(2) + 1e-9, abs=1e-6)
    assert capsys.readouterr().out == (
        "✓ matmul: Tensor (2, 3) torch.float32 matches (rel=1e-06, abs=0)\n"
        "✓ array: ndarray (2,) float64 matches (rel=0, abs=1e-06)\n"
    )


def test_what_measured_and_check_print_is_what_the_sanitizer_masks_and_keeps(capsys):
    """The sanitizer's rules against the real helpers' output: a measured value is masked (its
    label kept), a per-device line folds, a check line is compared as it is."""
    from test_sanitize import sanitize

    measured("copy", 1.23, "GB/s")
    measured("peak", 4.56, "TFLOP/s", per_device=True)
    check("bytes", 96, 96)
    assert sanitize(capsys.readouterr().out) == "[measured] copy: ...\n[per-device] ...\n✓ bytes: 96\n"


def test_check_answer_says_not_answered_right_or_not_right_and_never_raises(capsys, monkeypatch):
    from lecture_utils import exercises

    monkeypatch.setitem(exercises.ANSWERS, "Q3", exercises.Answer(5_000_000_000, rel=0.01))
    monkeypatch.setitem(exercises.ANSWERS, "shape", exercises.Answer(torch.zeros(3)))
    monkeypatch.setitem(exercises.ANSWERS, "pick", exercises.Answer("acf", hints={"af": "saved is more than trained"}))
    assert exercises.check_answer("Q3", ...) is None
    assert capsys.readouterr().out.startswith("Q3: not answered yet")
    exercises.check_answer("Q3", 5e9)
    assert capsys.readouterr().out == "✓ Q3: 5000000000.0 is right\n"
    exercises.check_answer("Q3", 4e9)
    wrong = capsys.readouterr().out
    assert wrong == "✗ Q3: 4000000000.0 is not right yet (the hidden solution below explains it)\n"
    exercises.check_answer("Q3", "five billion")  # no TypeError
    exercises.check_answer("shape", torch.zeros(2))  # no RuntimeError
    assert capsys.readouterr().out.count("is not right yet") == 2


@pytest.mark.parametrize(("answer", "hint"), [
    (10e9, "off by a factor of 2"), (2.5e9, "off by a factor of 2"), (40e9, "off by a factor of 8"),
    (5e6, "off by a factor of 1000"), (5e9 * 2**30 / 1e9, "GiB versus GB"), (5e18, "a billion"),
    (10.04e9, "off by a factor of 2"), (0, " (the hidden solution below explains it)\n"),  # within rel=0.01; 0 is no factor
])
def test_a_classic_mistake_gets_a_hint_never_the_answer(capsys, monkeypatch, answer, hint):
    from lecture_utils import exercises

    monkeypatch.setitem(exercises.ANSWERS, "Q3", exercises.Answer(5_000_000_000, rel=0.01, factors=True))
    exercises.check_answer("Q3", answer)
    out = capsys.readouterr().out
    assert out.startswith("✗ Q3: ") and hint in out and "5000000000" not in out.split("not right yet")[1]


def test_a_generic_factor_hint_fires_only_where_the_answer_opts_in(capsys, monkeypatch):
    """A stride of 3 where 12 is right is a factor of 4 off, but not 'float32's 4 bytes' (issue 28)."""
    from lecture_utils import exercises

    monkeypatch.setitem(exercises.ANSWERS, "stride", exercises.Answer(12))
    exercises.check_answer("stride", 3)
    assert capsys.readouterr().out == "✗ stride: 3 is not right yet (the hidden solution below explains it)\n"
    monkeypatch.setitem(exercises.ANSWERS, "bytes", exercises.Answer(12, factors=True))
    exercises.check_answer("bytes", 3)
    assert "float32's 4 bytes" in capsys.readouterr().out
    exercises.check_answer("bytes", torch.tensor([3]))  # a tensor, not a number: no factor names its mistake
    assert capsys.readouterr().out == "✗ bytes: tensor([3]) is not right yet (the hidden solution below explains it)\n"
    exercises.check_answer("Q5, stride[0] that view(-1) needs", 3)  # the real one: its own hint
    assert "x.T's stride[1] is 4" in capsys.readouterr().out


@pytest.mark.parametrize("name", [n for n, spec in ANSWERS.items() if spec.hints])
def test_every_hint_of_every_exercise_is_for_a_wrong_answer_and_shows_it(capsys, name):
    from lecture_utils.exercises import ANSWERS, check_answer

    for value, hint in ANSWERS[name].hints.items():
        check_answer(name, value)
        out = capsys.readouterr().out
        assert out.startswith(f"✗ {name}: ") and out.endswith(f"; hint: {hint}\n"), (name, value, out)


def test_an_exercises_own_hint_for_a_likely_wrong_answer(capsys, monkeypatch):
    from lecture_utils import exercises

    monkeypatch.setitem(exercises.ANSWERS, "pick", exercises.Answer("acf", hints={"af": "saved is more than trained"}))
    exercises.check_answer("pick", "af")
    assert capsys.readouterr().out == "✗ pick: 'af' is not right yet; hint: saved is more than trained\n"


def test_check_with_raises_returns_the_error_and_fails_when_nothing_or_something_else_is_raised(capsys):
    from lecture_utils.checks import check

    err = check("view of a transpose", lambda: torch.zeros(3, 4).T.view(12), raises=RuntimeError)
    assert isinstance(err, RuntimeError) and capsys.readouterr().out == "✓ view of a transpose: raises RuntimeError\n"
    with pytest.raises(AssertionError, match="\n    returned: 1$"):
        check("no error", lambda: 1, raises=ValueError)
    with pytest.raises(AssertionError, match="raised:   KeyError"):
        check("another error", lambda: {}["x"], raises=ValueError)


# --- issue 38, item 1: an exact check compares the values as given, never cast into the answer's dtype

@pytest.mark.parametrize(("got", "expected"), [
    (torch.tensor(True), 12), (torch.tensor(True), 1), (np.array(True), 1), (np.True_, 1),  # a flag is not a count
    (torch.tensor(720_896.0).half(), 720_896),  # float16 overflows to inf: inf is not 720,896
    (torch.tensor(76_219.0, dtype=torch.bfloat16), 76_293),  # both round to bfloat16's 76,288
    (torch.tensor(76_293.0, dtype=torch.bfloat16), 76_293),  # even the right one, once rounded
    (torch.tensor(99_999.0, dtype=torch.float16), 123_456),  # an author's check: inf and inf
    (torch.tensor(2**53 + 1), torch.tensor(2.0**53, dtype=torch.float64)),  # float64 cannot hold 2**53 + 1
    (np.ma.masked_array(12, mask=True), 12), (np.ma.masked_array([12, 3], mask=[True, False]), np.array([12, 3])),
    (np.array([12, 3]), np.ma.masked_array([12, 3], mask=[True, False])),
])
def test_an_exact_check_never_squeezes_the_expected_value_into_the_answers_dtype(got, expected, capsys):
    with pytest.raises(AssertionError):
        check("value", got, expected)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("got", "expected"), [
    (torch.tensor(12), 12), (torch.tensor(12.0), 12), (torch.tensor(76_288.0, dtype=torch.bfloat16), 76_288),
    (torch.tensor(65_536.0).half(), math.inf), (torch.tensor(True), True), (torch.tensor(2**53), 2.0**53),
    (torch.tensor([1, 2], dtype=torch.int8), torch.tensor([1.0, 2.0], dtype=torch.float16)),
    (np.array(np.inf, dtype=np.float16), math.inf), (np.ma.masked_array(12, mask=False), 12),
    (torch.tensor(0.1, dtype=torch.float64), 0.1),  # a Python float is a float64: never rounded to float32
    (torch.tensor(1 + 2j, dtype=torch.complex64), 1 + 2j), (torch.tensor(2**53 + 1, dtype=torch.uint64), 2**53 + 1),
    (torch.tensor(2**53 + 1), torch.tensor(2**53 + 1, dtype=torch.uint64)),  # an int64 is no float64
])
def test_an_exact_check_accepts_the_same_value_in_another_dtype(got, expected, capsys):
    check("value", got, expected)
    assert capsys.readouterr().out.startswith("✓ value: ")


# value, dtype: every pair of the grid, against Python's own exact comparison of int and float (an oracle
# that casts nothing): right exactly when the tensor's value, read back, is the number itself
GRID = [0, 1, 12, 3.5, 0.1, 65_504, 65_536, 76_219, 76_293, 720_896, 2**24 + 1, 2**53 + 1, -3, math.inf, -2**63]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8,
          torch.bool]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_checks_agree_with_pythons_exact_comparison(dtype):
    for value in GRID:
        try:
            got = torch.tensor(value).to(dtype)
        except (RuntimeError, OverflowError):  # inf into an int dtype
            continue
        oracle = got.item() == value and (dtype == torch.bool) == isinstance(value, bool)
        try:
            check("value", got, value)
            passed = True
        except AssertionError:
            passed = False
        assert passed == oracle, (dtype, value, got.item())


def test_a_failed_check_says_when_the_dtype_rounded_the_expected_value():
    with pytest.raises(AssertionError) as err:
        check("fp16 holds it", torch.tensor(99_999.0, dtype=torch.float16), 123_456)
    assert str(err.value).splitlines()[-1] == (
        "    note:     torch.float16 rounds the expected value to this: compute in a wider dtype")
    with pytest.raises(AssertionError) as err:
        check("a plain miss", torch.tensor(3.0), 4)
    assert str(err.value) == "✗ a plain miss (exact)\n    got:      tensor(3.)\n    expected: 4"
    with pytest.raises(AssertionError) as err:
        check("within 1", 100.0, 102.0, abs=1.0)
    assert str(err.value) == "✗ within 1 (rel=0, abs=1.0)\n    got:      100.0\n    expected: 102.0"


def test_rounded_by_names_the_dtype_that_rounded_a_value_and_nothing_else():
    from lecture_utils.checks import rounded_by

    assert rounded_by(torch.tensor(76_293.0, dtype=torch.bfloat16), 76_293) == "torch.bfloat16"
    assert rounded_by(torch.tensor(2049.0, dtype=torch.float16), 2049) == "torch.float16"  # 11 bits: 2048, 1 off
    assert rounded_by(torch.tensor(True), 12) == "torch.bool"
    assert rounded_by(np.array(np.inf, dtype=np.float16), 720_896) == "float16"
    assert rounded_by(torch.tensor(76_293.0), 76_293) is None  # float32 holds it: nothing rounded
    assert rounded_by(torch.tensor(3.0, dtype=torch.bfloat16), 4) is None  # wrong, not rounded
    assert rounded_by(76_288, 76_293) is None and rounded_by(torch.tensor(1.0), "abc") is None


@numbers.Real.register  # it claims to be a number: a hint's arithmetic meets it too
class _Hostile:
    """An answer whose comparison, truth value or text raises, as an object a student hands in may."""

    def __init__(self, fails: str):
        self.fails = fails

    def __eq__(self, other):
        if self.fails == "eq":
            raise ZeroDivisionError("no comparing me")
        return self

    __hash__ = object.__hash__

    def __bool__(self):
        raise ValueError("no truth value")

    def __repr__(self):
        if self.fails == "repr":
            raise RuntimeError("no showing me")
        return "<hostile>"


@pytest.mark.parametrize("fails", ["eq", "bool", "repr"])
@pytest.mark.parametrize("name", ["Q5, stride[0] that view(-1) needs", "E5.3 trained", "E1.1, x.T[1:, ::2]",
                                  "Q3, one GPU with 20% held back"])
def test_check_answer_never_raises_whatever_object_it_gets(capsys, fails, name):
    from lecture_utils.exercises import check_answer

    assert check_answer(name, _Hostile(fails)) is None
    out = capsys.readouterr().out
    shown = "a _Hostile that cannot be shown" if fails == "repr" else "<hostile>"
    assert out == f"✗ {name}: {shown} is not right yet (the hidden solution below explains it)\n"


@pytest.mark.parametrize(("name", "answer", "hint"), [
    ("Q5, stride[0] that view(-1) needs", torch.tensor(True), "a bool is True or False, not a number"),
    ("Q1, forward FLOPs", torch.tensor(720_896.0).half(), "torch.float16 holds this answer only rounded (or, past its "
     "range, as inf): compute it in float64 or int64, or give a Python number\n"),
    ("E6.2 3. batches in 80 GB", torch.tensor(76_219.0, dtype=torch.bfloat16), "torch.bfloat16 holds this answer"),
    ("E6.2 3. batches in 80 GB", torch.tensor(76_293.0, dtype=torch.bfloat16), "torch.bfloat16 holds this answer"),
    ("Q1, forward FLOPs", np.array(np.inf, dtype=np.float16), "float16 holds this answer only rounded"),
])
def test_an_answer_its_dtype_rounded_is_not_right_and_the_hint_says_why(capsys, name, answer, hint):
    from lecture_utils.exercises import ANSWERS, check_answer

    check_answer(name, answer)
    out = capsys.readouterr().out
    assert out.startswith(f"✗ {name}: ") and f"hint: {hint}" in out
    assert f"{ANSWERS[name].expected:,}" not in out and str(ANSWERS[name].expected) not in out.split("hint")[1]


@pytest.mark.parametrize(("name", "answer"), [
    ("Q5, stride[0] that view(-1) needs", torch.tensor(12)), ("Q1, forward FLOPs", torch.tensor(720_896.0)),
    ("E6.2 3. batches in 80 GB", torch.tensor(76_293.0, dtype=torch.float64)),
    ("Q2, 1.0 x 2**16 in fp16", torch.tensor(65_536.0).half()),  # here inf is the answer
])
def test_the_right_value_in_a_dtype_that_holds_it_is_right(capsys, name, answer):
    from lecture_utils.exercises import check_answer

    check_answer(name, answer)
    assert capsys.readouterr().out.startswith(f"✓ {name}: ")


def test_a_masked_array_is_not_right(capsys):
    from lecture_utils.exercises import check_answer

    check_answer("Q5, stride[0] that view(-1) needs", np.ma.masked_array(12, mask=True))  # its hidden data is 12
    check_answer("E1.1, values of x.T[1:, ::2]", np.ma.masked_array([[1, 9], [2, 10], [3, 11]], mask=True))
    assert capsys.readouterr().out.count("is not right yet") == 2


def test_a_python_float_is_compared_as_the_float64_it_is_with_a_tolerance_too(capsys):
    check("tight", torch.tensor(0.1, dtype=torch.float64), 0.1, rel=1e-12)  # float32's 0.1 is 1.5e-8 away
    assert capsys.readouterr().out.startswith("✓ tight: ")
    with pytest.raises(AssertionError):
        check("float32 is not", torch.tensor(0.1), 0.1, rel=1e-12)
def test_measured_prints_a_timings_spread_and_threads_beside_the_value(capsys):
    """The spread is half the IQR over the median; a ratio of two timings adds their spreads."""
    from lecture_utils.bench import Timing

    one, two = Timing(0.010, 0.0008, 1), Timing(0.020, 0.0040, 1)
    measured("a copy", 1.25, "GB/s", spread=one)
    measured("their ratio", 2.0, spread=(two, one))
    measured("on every core", 3.0, "ms", spread=Timing(0.003, 0.0, 4))
    assert capsys.readouterr().out.splitlines() == [
        "[measured] a copy: 1.25 GB/s ±4% (1 thread)", "[measured] their ratio: 2 ±14% (1 thread)",
        "[measured] on every core: 3 ms ±0% (4 threads)"]


def test_a_check_casts_and_divides_without_a_warning_of_its_own(capsys):
    torch.set_warn_always(True)  # torch says a cast drops an imaginary part once a process: here, each time
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check("tight", torch.tensor(0.1, dtype=torch.float64), 0.1, rel=1e-12)  # 0.1 is no complex to cast back
        check_answer("Q1, forward FLOPs", np.array(np.inf, dtype=np.float16))  # 720,896 overflows float16
        check_answer("Q2, 1.0 x 2**16 in fp16", np.array(12))  # inf into int64 is an invalid cast
        check_answer("Q2, gradients lost in bf16", np.float64(3.0))  # numpy warns on 3 / 0
    torch.set_warn_always(False)
    assert [str(w.message) for w in caught] == [] and capsys.readouterr().out.count("\n") == 4
