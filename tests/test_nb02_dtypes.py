"""Notebook 02 (dtypes and memory): the package checks that left its core path.

What the notebook takes from ``lecture_utils`` (``dtype_info``'s table, ``tensor_bytes``,
the recipes' bytes per parameter, ``max_params_that_fit``, ``training_state_table``, the
H100 peaks it used to quote, and the exercises' expected answers) is checked here against
independent oracles: every bit pattern of a dtype decoded by torch, the IEEE rule applied
by hand, real allocations, real optimizer state, and plain arithmetic.
"""

import math

import pytest
import torch

from lecture_utils.dtypes import dtype_info
from lecture_utils.exercises import ANSWERS
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.recipes import (
    bytes_per_param,
    max_params_that_fit,
    param_breakdown,
    training_state_table,
)
from lecture_utils.sizes import tensor_bytes

FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
SMALL = ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]  # few enough patterns to decode all


def cast(value, dtype):
    return torch.tensor(value, dtype=dtype).item()


def every_value(name):
    """Every value dtype ``name`` can hold: all its bit patterns, decoded by torch."""
    if dtype_info(name).bits == 16:
        patterns = torch.arange(-2**15, 2**15, dtype=torch.int16)
    else:
        patterns = torch.arange(256, dtype=torch.int16).to(torch.uint8)
    return patterns.view(getattr(torch, name)).double()


# --- dtype_info, against every bit pattern and the IEEE rule ---------------------------


@pytest.mark.parametrize("name", SMALL)
def test_dtype_table_matches_every_bit_pattern(name):
    values, info = every_value(name), dtype_info(name)
    assert values[values.isfinite()].max().item() == info.max
    assert values[values > 0].min().item() == info.smallest_subnormal
    normals = values[(values > 0) & values.isfinite()]
    # the smallest normal is one of its values, 2**mantissa_bits subnormal steps above zero
    assert info.smallest_normal in normals.tolist()
    assert info.smallest_normal == info.smallest_subnormal * 2**info.mantissa_bits


def test_float8_e4m3fn_has_no_infinity_and_saturates_on_overflow():
    values = every_value("float8_e4m3fn")
    assert int(values.isinf().sum()) == 0 and int(values.isnan().sum()) == 2  # S.1111.111 only
    e4m3 = torch.float8_e4m3fn
    assert [cast(v, e4m3) for v in (480.0, 1e6, math.inf, -math.inf)] == [448.0, 448.0, 448.0, -448.0]
    assert math.isnan(cast(math.nan, e4m3))


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float8_e5m2"])
def test_one_step_above_max_overflows_to_inf(name):
    info = dtype_info(name)
    spacing = 2.0 ** (math.frexp(info.max)[1] - 1 - info.mantissa_bits)
    assert cast(info.max + spacing, getattr(torch, name)) == math.inf


def _decode(bits: str, exponent_bits: int) -> float:
    """IEEE-style value of a bit string: (-1)^s 1.m 2^(e - bias), subnormals 0.m 2^(1 - bias)."""
    sign, exponent, mantissa = bits[0], bits[1:1 + exponent_bits], bits[1 + exponent_bits:]
    bias = 2 ** (exponent_bits - 1) - 1
    e, m = int(exponent, 2), int(mantissa, 2) / 2 ** len(mantissa)
    value = (1 + m) * 2.0 ** (e - bias) if e else m * 2.0 ** (1 - bias)
    return -value if sign == "1" else value


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("value", [-1.5, 0.1, 1e-6, 3.0e-8, 300.0])
def test_field_widths_decode_to_the_stored_value(name, value):
    info = dtype_info(name)
    int_view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[info.bytes]
    stored = torch.tensor([value], dtype=getattr(torch, name))
    assert math.isfinite(stored.item())  # tiny values round to 0, whose bits decode to 0 too
    raw = stored.view(int_view).item() & (2**info.bits - 1)
    assert _decode(format(raw, f"0{info.bits}b"), info.exponent_bits) == stored.item()
    assert info.sign_bits + info.exponent_bits + info.mantissa_bits == info.bits == 8 * info.bytes


def test_bf16_range_is_fp32_range_to_napkin_precision():
    bf16, fp32 = dtype_info("bfloat16"), dtype_info("float32")
    assert bf16.smallest_normal == fp32.smallest_normal
    assert round(bf16.max / fp32.max, 3) == 0.996
    assert math.floor(math.log10(bf16.max)) == math.floor(math.log10(fp32.max)) == 38  # the notes' ~10^38


# --- bytes: tensor_bytes against real allocations ---------------------------------------


@pytest.mark.parametrize("name", FLOATS)
def test_tensor_bytes_of_a_shape_is_what_torch_allocates(name):
    dt = getattr(torch, name)
    assert tensor_bytes((4, 8, 16), dt) == torch.empty(4, 8, 16, dtype=dt).untyped_storage().nbytes()


def test_a_slice_counts_its_own_bytes_but_keeps_the_storage():
    x = torch.zeros(4, 8, 16)
    assert tensor_bytes(x[0]) == 512 and x[0].untyped_storage().nbytes() == 2048


def test_gpt3_ffn_matrix_from_the_notes():
    w = torch.empty(12288, 49152, dtype=torch.float32, device="meta")
    assert tensor_bytes(w) == 12288 * 49152 * 4 == 2_415_919_104
    assert tensor_bytes(w.shape, "bf16") == 1_207_959_552
    assert (w.is_meta, w.untyped_storage().data_ptr()) == (True, 0)  # no data behind it


# --- bytes per parameter: recipes, and the mixed-precision accounting ---------------------


def test_mixed_precision_variants_count_from_dtypes():
    b16, b32 = torch.bfloat16.itemsize, torch.float32.itemsize
    zero = bytes_per_param("mixed_bf16_adamw")  # ZeRO §3.1: 2 + 2 + 12
    assert zero == 2 * b16 + 3 * b32 == 16
    megatron = b16 + 4 * b32  # bf16 params, fp32 main grads, fp32 master, m, v
    assert megatron == zero - b16 + b32 == 18
    assert megatron + b16 == 20
    # the recipe has no fp32 gradient: swapping its bf16 gradient for an fp32 one gives 18
    parts = param_breakdown("mixed_bf16_adamw")
    assert parts["gradients (bf16)"] == b16 and "master weights" in parts


def test_eight_h100s_read_as_80_gib():
    gib80 = 80 * 2**30
    assert max_params_that_fit(gib80, n_gpus=8) == gib80 // 16 == 5_368_709_120
    assert max_params_that_fit(gib80, n_gpus=8, sharded=True) == 8 * gib80 // 16 == 42_949_672_960
    assert max_params_that_fit(80e9, n_gpus=8, recipe="mixed_bf16_adamw", sharded=True) == 40_000_000_000


def test_seven_billion_parameters_per_gpu():
    n = 7_000_000_000
    one = dict(training_state_table(n, recipe="fp32_adamw"))
    sharded = dict(training_state_table(n, n_gpus=8, sharded=True, recipe="fp32_adamw"))
    assert one["total"] == 16 * n == 112e9 and sharded["total"] == 2 * n == 14e9
    assert [r for r in ("fp32_adamw", "fp32_sgd", "fp32_adagrad") if bytes_per_param(r) * n <= 80e9] == ["fp32_sgd"]


def test_h100_peak_ratios_the_notebook_used_to_quote():
    peaks = ACCELERATORS["H100 SXM"].dense_flops
    assert peaks["bf16"] / peaks["tf32"] == pytest.approx(2.0, rel=2e-3)
    assert round(peaks["bf16"] / peaks["fp32"], 1) == 14.8


# --- the exercises' expected answers, recomputed ----------------------------------------


def test_q2_answers_agree_with_torch():
    grads = [10.0**k for k in range(-10, 1)]
    lost_fp16 = [g for g in grads if cast(g, torch.float16) == 0]
    assert ANSWERS["Q2, gradients lost in fp16"].expected == len(lost_fp16) == 3
    assert ANSWERS["Q2, gradients lost in bf16"].expected == sum(cast(g, torch.bfloat16) == 0 for g in grads)
    rescued = sum(0 < cast(g * 2**16, torch.float16) < math.inf for g in lost_fp16)
    assert ANSWERS["Q2, gradients loss scaling rescues"].expected == rescued
    assert ANSWERS["Q2, 1.0 x 2**16 in fp16"].expected == cast(2.0**16, torch.float16) == math.inf


def test_q3_answers_agree_with_max_params_that_fit():
    assert max_params_that_fit(80e9) == 5e9 and max_params_that_fit(80e9, n_gpus=8, sharded=True) == 40e9  # §1.2
    assert ANSWERS["Q3, one GPU with 20% held back"].expected == max_params_that_fit(0.8 * 80e9)
    assert ANSWERS["Q3, eight GPUs sharded with 20% held back"].expected == max_params_that_fit(0.8 * 80e9, n_gpus=8,
                                                                                    sharded=True)
    # Megatron's bf16 layout, counted from its parts' dtypes (not the recipe table, which has no 18)
    megatron = sum(dt.itemsize for dt in (torch.bfloat16,) + (torch.float32,) * 4)
    assert megatron == 18
    assert ANSWERS["Q3, eight sharded in Megatron's mixed precision with 20% held back"].expected == pytest.approx(
        0.8 * 8 * 80e9 / megatron)


def test_exercise_hints_name_wrong_answers_only():
    for name in ("Q2, gradients lost in fp16", "Q2, 1.0 x 2**16 in fp16", "Q3, one GPU with 20% held back",
                 "Q3, eight GPUs sharded with 20% held back"):
        spec = ANSWERS[name]
        assert spec.hints and all(not math.isclose(v, spec.expected, rel_tol=max(spec.rel, 1e-9))
                                  for v in spec.hints)
