"""fmt and rounded (lecture_utils.checks): stable text for values computed from random data."""

import pytest

from lecture_utils.checks import fmt, rounded


def test_fmt_formats_a_value_far_from_a_rounding_boundary():
    assert fmt(0.98658, ".3f") == format(0.98658, ".3f") == "0.987"
    assert rounded(0.986581, 4) == 0.9866
    assert rounded(123456.0) == 123000.0


@pytest.mark.parametrize(("value", "spec"), [(0.125, ".2f"), (1.0005, ".3f"), (2.25e-5, ".1e")])
def test_fmt_refuses_a_value_on_a_rounding_boundary(value, spec):
    # a last-bit change (another thread count, another CPU) could flip the printed digit
    assert format(value * (1 - 1e-5), spec) != format(value * (1 + 1e-5), spec)
    with pytest.raises(AssertionError, match="rounding boundary"):
        fmt(value, spec)
