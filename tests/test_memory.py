"""dtypes, sizes and recipes against independent oracles: the format specs, torch's own casts, a real
tensor's storage, torch.optim's real state tensors, and the notes' arithmetic. (Notebooks 01 and 02
check the same helpers on the lecture's examples under nbval.)"""

import math
import re

import pytest
import torch

from lecture_utils.dtypes import as_dtype, dtype_info, dtype_name
from lecture_utils.optim import AdamW, state_bytes
from lecture_utils.recipes import (
    RECIPES,
    bytes_per_param,
    max_params_that_fit,
    param_breakdown,
    recipe_name,
    training_state_table,
)
from lecture_utils.sizes import format_bytes, tensor_bytes

FLOATS = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


# --- dtype_info: layouts, checked against the IEEE/OCP formats and against real casts

@pytest.mark.parametrize(
    ("name", "layout", "n_bytes", "max_value"),
    [
        ("float32", (1, 8, 23), 4, 3.4028234663852886e38),
        ("float16", (1, 5, 10), 2, 65504.0),
        ("bfloat16", (1, 8, 7), 2, 3.3895313892515355e38),
        ("float8_e4m3fn", (1, 4, 3), 1, 448.0),
        ("float8_e5m2", (1, 5, 2), 1, 57344.0),
    ],
)
def test_dtype_layout_matches_the_format_specs(name, layout, n_bytes, max_value):
    info = dtype_info(name)
    assert info.name == name and (info.sign_bits, info.exponent_bits, info.mantissa_bits) == layout
    assert info.bits == sum(layout) == 8 * info.bytes
    assert info.bytes == n_bytes
    assert info.max == max_value


@pytest.mark.parametrize("name", FLOATS)
def test_dtype_limits_agree_with_real_casts(name):
    """The oracle is torch's own rounding, not the finfo numbers the code read."""
    info, dt = dtype_info(name), as_dtype(name)

    def cast(v):
        return torch.tensor([v], dtype=torch.float64).to(dt).double().item()

    assert cast(info.max) == info.max
    assert cast(info.smallest_normal) == info.smallest_normal
    assert cast(info.smallest_subnormal) == info.smallest_subnormal
    assert cast(info.smallest_subnormal * 0.49) == 0.0  # below half a step: gone
    assert cast(1 + info.eps) == 1 + info.eps
    assert cast(1 + info.eps / 4) == 1.0  # finer than eps rounds away
    # The smallest normal has the minimum exponent and a zero mantissa.
    assert info.smallest_subnormal == info.smallest_normal * 2.0**-info.mantissa_bits


def test_fp16_facts_from_the_lecture():
    fp16, bf16 = dtype_info(torch.float16), dtype_info("bf16")
    assert fp16.smallest_normal == pytest.approx(6.1e-5, rel=1e-2)  # the notes' "6e-5"
    assert fp16.smallest_subnormal == pytest.approx(5.96e-8, rel=1e-3)
    assert bf16.smallest_normal == dtype_info("float32").smallest_normal  # same range


@pytest.mark.parametrize(("name", "bits", "sign", "value_bits", "max_value"),  # bool: one value bit in a byte
                         [("int64", 64, 1, 63, 2**63 - 1), ("uint16", 16, 0, 16, 65535), ("int8", 8, 1, 7, 127),
                          ("bool", 8, 0, 1, 1)])
def test_integer_dtypes(name, bits, sign, value_bits, max_value):
    info = dtype_info(name)
    assert (info.name, info.bits, info.bytes) == (name, bits, bits // 8)
    assert (info.sign_bits, info.exponent_bits, info.mantissa_bits) == (sign, 0, value_bits)
    assert info.max == max_value and isinstance(info.max, int)  # exact, not a rounded float
    assert info.eps is None and info.smallest_normal is None and info.smallest_subnormal is None


@pytest.mark.parametrize(("alias", "dtype"), [("fp16", torch.float16), ("BF16", torch.bfloat16),
                                              ("torch.float32", torch.float32), ("e4m3", torch.float8_e4m3fn),
                                              (torch.uint16, torch.uint16)])
def test_dtype_aliases(alias, dtype):
    assert as_dtype(alias) == dtype
    assert dtype_name(alias) == str(dtype).removeprefix("torch.")


@pytest.mark.parametrize(("bad", "error"), [("float12", ValueError), ("", ValueError),
                                            (torch.complex64, ValueError), (4, TypeError), (None, TypeError)])
def test_unknown_dtypes_name_the_choices(bad, error):
    with pytest.raises(error) as err:
        dtype_info(bad)
    if error is ValueError:
        assert "valid:" in str(err.value) and "bfloat16" in str(err.value)


# --- tensor_bytes: the oracle is a real tensor's storage

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
                                   torch.float8_e5m2, torch.int64, torch.uint16])
def test_tensor_bytes_matches_real_storage(dtype):
    x = torch.zeros(3, 5, 7, dtype=dtype)
    assert tensor_bytes(x) == x.untyped_storage().nbytes()
    assert tensor_bytes((3, 5, 7), dtype) == x.untyped_storage().nbytes()
    assert tensor_bytes(torch.Size([3, 5, 7]), str(dtype).removeprefix("torch.")) == 3 * 5 * 7 * x.element_size()


def test_tensor_bytes_of_meta_tensor_costs_nothing():
    big = torch.empty(12288, 49152, dtype=torch.float32, device="meta")
    assert tensor_bytes(big) == 12288 * 49152 * 4 == 2_415_919_104
    assert tensor_bytes((12288, 49152), "bf16") == 1_207_959_552


def test_tensor_bytes_counts_a_view_logically_not_its_storage():
    x = torch.zeros(10, 10)
    assert tensor_bytes(x[:, 0]) == 40
    assert tensor_bytes((), "float32") == 4  # a 0-d tensor still holds one element
    e = torch.arange(4).expand(3, 4)  # one row held, three counted
    assert (e.stride(), e.untyped_storage().nbytes()) == ((0, 1), 32)
    assert tensor_bytes(e) == 96 == e.contiguous().untyped_storage().nbytes()


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (((3, -1), "float32"), AssertionError, "negative"),  # would be a negative byte count
        (((3, 2.5), "float32"), TypeError, "int"),
        (((3, 4), None), TypeError, "dtype"),
        (((3, 4), "float9"), ValueError, "valid:"),
        (("3x4", "float32"), TypeError, "int"),
        ((torch.zeros(2), "float32"), AssertionError, "already has one"),  # would be ignored
    ],
)
def test_tensor_bytes_refuses_what_would_give_a_wrong_number(args, error, match):
    with pytest.raises(error, match=match):
        tensor_bytes(*args)


# --- format_bytes

@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1 kB (1000 B)"),
        (1023, "1.02 kB (1023 B)"),
        (1024, "1.02 kB (1 KiB)"),
        (2_415_919_104, "2.42 GB (2.25 GiB)"),
        (1_207_959_552, "1.21 GB (1.12 GiB)"),
        (80e9, "80 GB (74.5 GiB)"),
        (80 * 2**30, "85.9 GB (80 GiB)"),
        (70e9 * 16, "1.12 TB (1.02 TiB)"),
        (1e18, "1 EB (888 PiB)"),
        (5e6, "5 MB (4.77 MiB)"), (2e15, "2 PB (1.78 PiB)"), (2**61, "2.31 EB (2 EiB)"),
    ],
)
def test_format_bytes_says_both_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize(("bad", "error"), [(-1, AssertionError), (float("inf"), AssertionError),
                                            ("1GB", TypeError), (None, TypeError)])
def test_format_bytes_refuses_sizes_that_are_not_sizes(bad, error):
    with pytest.raises(error):
        format_bytes(bad)


# --- bytes per parameter: the oracle is torch.optim's real state tensors

def _measured_bytes_per_param(optimizer_cls, param_dtype=torch.float32, **kw):
    model = torch.nn.Linear(64, 32).to(param_dtype)
    opt = optimizer_cls(model.parameters(), lr=1e-3, **kw)
    model(torch.randn(4, 64, dtype=param_dtype)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    total = sum(tensor_bytes(p) + tensor_bytes(p.grad) for p in model.parameters())
    for state in opt.state.values():
        # Skip the per-parameter scalar `step` counters: O(1), not O(n).
        total += sum(tensor_bytes(t) for t in state.values() if torch.is_tensor(t) and t.numel() > 1)
    return total / n


@pytest.mark.parametrize(
    ("recipe", "optimizer_cls", "kw"),
    [
        ("fp32_adamw", torch.optim.AdamW, {}),
        ("autocast_bf16_adamw", torch.optim.AdamW, {}),
        ("fp32_sgd", torch.optim.SGD, {}),
        ("fp32_sgd_momentum", torch.optim.SGD, {"momentum": 0.9}),
        ("fp32_adagrad", torch.optim.Adagrad, {}),
    ],
)
def test_bytes_per_param_matches_torch_optim_state(recipe, optimizer_cls, kw):
    assert bytes_per_param(recipe) == _measured_bytes_per_param(optimizer_cls, **kw)


def test_mixed_precision_measured_part_by_part_is_the_recipe():
    """bf16 weights and gradients, fp32 master weights and AdamW moments (notebook 08, §1.2)."""
    from lecture_utils.models import GPT, get_config

    torch.manual_seed(0)
    model_bf = GPT(get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8)).to(torch.bfloat16)
    x = torch.randint(0, 64, (2, 8))
    torch.nn.functional.cross_entropy(model_bf(x).flatten(0, 1).float(), x.flatten()).backward()
    master = [p.detach().float() for p in model_bf.parameters()]
    for m, p in zip(master, model_bf.parameters(), strict=True):
        m.grad = p.grad.float()
    opt = AdamW(master)
    opt.step()
    n = sum(m.numel() for m in master)

    def per_param(tensors):
        return sum(t.numel() * t.element_size() for t in tensors) / n

    measured = {"weights (bf16)": per_param(model_bf.parameters()),
                "gradients (bf16)": per_param(p.grad for p in model_bf.parameters()),
                "master weights": per_param(master),
                "adam m": per_param(opt.state[m]["exp_avg"] for m in master),
                "adam v": per_param(opt.state[m]["exp_avg_sq"] for m in master)}
    assert measured == {k: float(v) for k, v in param_breakdown("mixed_bf16_adamw").items()}
    assert state_bytes(opt) / n == 8


# Bytes per parameter, typed from §2 of the notes (4 B per fp32 value, 2 B per bf16 value).
RECIPE_BYTES = {
    "fp32_adamw": ({"weights": 4, "gradients": 4, "adam m": 4, "adam v": 4}, 16),  # 4 + 4 + 4 + 4
    "mixed_bf16_adamw": ({"weights (bf16)": 2, "gradients (bf16)": 2, "master weights": 4, "adam m": 4,
                          "adam v": 4}, 16),  # 2 + 2 + 4 + 4 + 4
    "autocast_bf16_adamw": ({"weights": 4, "gradients": 4, "adam m": 4, "adam v": 4}, 16),  # fp32 params
    "fp32_sgd": ({"weights": 4, "gradients": 4}, 8),  # 4 + 4: plain SGD keeps no state
    "fp32_sgd_momentum": ({"weights": 4, "gradients": 4, "momentum": 4}, 12),  # 4 + 4 + 4
    "fp32_adagrad": ({"weights": 4, "gradients": 4, "sum of squared grads": 4}, 12),  # 4 + 4 + 4
}


def test_every_recipe_has_a_breakdown_that_sums_to_its_total():
    assert set(RECIPES) == set(RECIPE_BYTES)
    for name, (parts, total) in RECIPE_BYTES.items():
        assert dict(param_breakdown(name)) == parts, name
        assert bytes_per_param(name) == total, name
        assert sum(param_breakdown(name).values()) == bytes_per_param(name), name


@pytest.mark.parametrize(("bad", "error"), [("adam", ValueError), ("fp32", ValueError), (16, TypeError)])
def test_unknown_recipes_name_the_choices(bad, error):
    with pytest.raises(error) as err:
        bytes_per_param(bad)
    if error is ValueError:
        assert "fp32_adamw" in str(err.value) and "mixed_bf16_adamw" in str(err.value)


def test_recipes_as_typed_on_a_command_line():
    assert recipe_name("fp32-adamw") == recipe_name("FP32_AdamW") == "fp32_adamw"


# --- how many parameters fit

def test_eight_h100s_from_the_lecture():
    assert max_params_that_fit(80e9) == 5_000_000_000
    assert max_params_that_fit(80e9, n_gpus=8) == 5_000_000_000  # replication does not help
    assert max_params_that_fit(80e9, n_gpus=8, sharded=True) == 40_000_000_000
    assert max_params_that_fit(80e9, recipe="fp32_sgd") == 10_000_000_000
    gib80 = 80 * 2**30  # read as 80 GiB
    assert max_params_that_fit(gib80, n_gpus=8, sharded=True) == 8 * gib80 // 16 == 42_949_672_960


def test_max_params_is_the_largest_that_fits():
    for budget in (1e9, 80e9, 12345.0, 15):
        n = max_params_that_fit(budget)
        assert n * 16 <= budget < (n + 1) * 16


@pytest.mark.parametrize(
    ("args", "kw", "error"),
    [((0,), {}, ValueError), ((-80e9,), {}, ValueError), (("80GB",), {}, TypeError),
     ((float("nan"),), {}, ValueError), ((80e9,), {"n_gpus": 0}, ValueError),
     ((80e9,), {"n_gpus": 2.5}, TypeError), ((80e9,), {"sharded": "yes"}, TypeError),
     ((80e9,), {"recipe": "lion"}, ValueError)],
)
def test_max_params_rejects_bad_input(args, kw, error):
    with pytest.raises(error):
        max_params_that_fit(*args, **kw)


def test_training_state_table():
    rows = dict(training_state_table(7_000_000_000, n_gpus=8, sharded=True))
    assert rows["weights"] == 7_000_000_000 * 4 // 8
    assert rows["total"] == 7_000_000_000 * 16 // 8
    replicated = dict(training_state_table(7_000_000_000, n_gpus=8))
    assert replicated["total"] == 7_000_000_000 * 16
    with pytest.raises(ValueError, match="n_params"):
        training_state_table(-1)
    with pytest.raises(ValueError, match="n_gpus"):
        training_state_table(10, n_gpus=0)


def test_memory_calculator_widget_updates_its_table():
    from lecture_utils.widgets import memory_calculator

    box = memory_calculator()
    n_params, recipe, n_gpus, gpu_gb, sharded, out = box.children
    assert "does NOT fit" in out.value  # 7B with AdamW replicated on 80 GB: 112 GB
    sharded.value = True
    assert "<b>fits</b>" in out.value and "40B parameters" in out.value
    recipe.value = "fp32_sgd"
    assert "80B parameters" in out.value
    assert math.isclose(n_params.value, 7e9)


# --- the one dtype table

def test_one_dtype_table_serves_memory_hardware_bench_and_the_trainer():
    from lecture_utils import bench, dtypes, hardware

    assert dtypes.SPEC_NAMES == ("fp32", "tf32", "bf16", "fp16", "fp8")
    # every spec-sheet column of the hardware table is a name of the one dtype table
    assert {k for acc in hardware.ACCELERATORS.values() for k in acc.dense_flops} <= set(dtypes.SPEC_NAMES)
    assert bench.spec_name is dtypes.spec_name
    assert set(dtypes.PRECISIONS) <= set(dtypes.SPEC_NAMES)
    # Every storage dtype is a real torch dtype of the size torch says.
    for name, dt in dtypes.DTYPES.items():
        assert getattr(torch, name) is dt and dtype_info(name).bytes == torch.empty(0, dtype=dt).element_size()


@pytest.mark.parametrize(("spelling", "spec"), [(torch.float32, "fp32"), ("float", "fp32"), ("half", "fp16"),
                                                 ("bfloat16", "bf16"), (torch.float8_e5m2, "fp8"),
                                                 ("e4m3", "fp8"), ("tensorfloat32", "tf32")])
def test_spec_sheet_names(spelling, spec):
    from lecture_utils.dtypes import spec_name

    assert spec_name(spelling) == spec


def test_tf32_is_a_math_mode_of_float32():
    from lecture_utils.dtypes import find_format

    assert as_dtype("tf32") is torch.float32 and tensor_bytes((3,), "tf32") == 12
    assert "math mode" in find_format("tf32").note
    assert find_format(torch.float32).name == "float32"  # a float32 tensor is float32, not tf32


def test_tensor_bytes_and_find_format_at_their_edges():
    from lecture_utils.dtypes import DTYPES, find_format

    assert tensor_bytes((0, 3), "float32") == 0  # a zero-size dimension is a shape, not an error
    with pytest.raises(AssertionError, match="^pass dtype only with a shape; a tensor already has one$"):
        tensor_bytes(torch.zeros(2), dtype=torch.float16)
    with pytest.raises(ValueError, match=re.escape(f"; valid: {', '.join(DTYPES)}")):
        find_format(torch.complex64)
