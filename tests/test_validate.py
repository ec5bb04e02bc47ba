"""The one shared validator module: each helper returns the cleaned value or raises one
error that names the value and what would be valid."""

import pytest
import torch

from lecture_utils import validate


def test_integer_accepts_whole_numbers_and_names_the_range():
    assert validate.integer(7e9, "params") == 7_000_000_000 and validate.integer(3, "n") == 3
    with pytest.raises(ValueError, match=r"seed must be in \[0, 4294967295\], got 4294967296"):
        validate.integer(2**32, "seed", low=0, high=2**32 - 1)
    for bad in (True, 2.5, "3", None):
        with pytest.raises(TypeError, match="n must be an int"):
            validate.integer(bad, "n")


def test_number_refuses_non_finite_and_out_of_range_values():
    assert validate.number(0.5, "mfu", low=0, high=1, low_open=True) == 0.5
    assert validate.positive(3, "lr") == 3.0
    with pytest.raises(ValueError, match=r"lr must be in \(0, inf\), got 0"):
        validate.positive(0, "lr")
    with pytest.raises(ValueError, match="finite"):
        validate.number(float("nan"), "x")
    with pytest.raises(TypeError, match="must be a number"):
        validate.number(False, "x")


def test_choice_is_case_insensitive_and_suggests_a_close_one():
    assert validate.choice("TINY", ["tiny", "gpu"], "config") == "tiny"
    assert validate.choice("half", ["fp16"], "dtype", aliases={"half": "fp16"}) == "fp16"
    with pytest.raises(ValueError, match=r"unknown config 'tinny'; did you mean tiny\? \(valid: tiny, gpu\)"):
        validate.choice("tinny", ["tiny", "gpu"], "config")
    with pytest.raises(TypeError, match="valid: tiny, gpu"):
        validate.choice(1, ["tiny", "gpu"], "config")


def test_instance_names_the_expected_type():
    device = torch.device("cpu")
    assert validate.instance(device, torch.device, "device") is device
    with pytest.raises(TypeError, match="device must be a torch.device, got str"):
        validate.instance("cpu", torch.device, "device")
