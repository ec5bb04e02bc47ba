import math
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.flops import (
    count_flops,
    matmul_flops,
    mfu,
    training_days,
    training_flops,
    training_time_table,
    transformer_flops,
    transformer_flops_breakdown,
)
from lecture_utils.models import GPT, get_config
from lecture_utils.widgets import training_time_calculator


def _counter_flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


@pytest.mark.parametrize(("b", "d", "k"), [(1, 1, 1), (3, 5, 7), (64, 128, 32), (1000, 17, 3)])
def test_matmul_flops_matches_flop_counter(b, d, k):
    x, w = torch.randn(b, d), torch.randn(d, k)
    assert matmul_flops(b, d, k) == 2 * b * d * k == _counter_flops(torch.matmul, x, w)


def test_training_flops_6nd_split():
    f = training_flops(70e9, 15e12)
    assert (f.forward, f.backward, f.total) == (2.1e24, 4.2e24, 6.3e24)


def test_training_days_from_the_lecture():
    total = training_flops(70e9, 15e12).total
    assert training_days(total, "H100", 1024, 0.5) == pytest.approx(143.93, abs=0.01)
    assert training_days(total, "H100", 1024, 1.0) == pytest.approx(71.96, abs=0.01)
    assert training_days(total, "H100", 1024, 0.4) == pytest.approx(179.91, abs=0.01)  # self-test Q4
    # Independent arithmetic, as the notes write it.
    assert training_days(total, "H100", 1024, 0.5) == pytest.approx(
        6 * 70e9 * 15e12 / (1979e12 / 2 * 0.5 * 1024 * 60 * 60 * 24), rel=1e-12)


def test_training_days_uses_the_dtype_peak():
    total = 1e21
    assert training_days(total, "A100", 1, 1.0, "fp32") / training_days(total, "A100", 1, 1.0, "bf16") == 16


@pytest.mark.parametrize(("kw", "error", "message"), [  # the message a user reads, from its start
    ({"mfu": 0}, ValueError, "mfu (a fraction of peak) must be in (0, 1], got 0"),
    ({"mfu": 1.2}, ValueError, "mfu (a fraction of peak) must be in (0, 1], got 1.2"),
    ({"n_gpus": 0}, ValueError, "n_gpus must be in [1, inf), got 0"),
    ({"n_gpus": 2.5}, TypeError, "n_gpus must be an int, got float 2.5"),
    ({"gpu": "TPU"}, ValueError, "unknown accelerator 'TPU'"), ({"dtype": "int4"}, ValueError, "unknown dtype 'int4'"),
    ({"flops": -1}, ValueError, "flops must be in (0, inf), got -1"),
])
def test_training_days_rejects_bad_input(kw, error, message):
    args = {"flops": 1e24, "gpu": "H100", "n_gpus": 8, "mfu": 0.5} | kw
    with pytest.raises(error, match="^" + re.escape(message)):
        training_days(**args)


def test_mfu():
    assert mfu(989.5e12, 2.0, 989.5e12) == 0.5
    with pytest.raises(ValueError, match="MFU 2.00 > 1"):
        mfu(2e12, 1.0, 1e12)
    assert mfu(1e12, 4.0, 1e12) == 0.25
    assert mfu(1.05, 1.0, 1.0) == 1.05  # up to 5% over a measured peak is noise, not an error


# --- transformer_flops against FlopCounterMode on the project's model

MODEL_CASES = [
    ("tiny", {}, 2, 64),
    ("tiny", {"tie_embeddings": False}, 1, 128),
    ("tiny", {"d_ff": 200, "n_heads": 8, "n_layers": 3}, 2, 17),
    ("gpu", {"n_layers": 1, "d_model": 96, "n_heads": 3, "vocab_size": 1000, "seq_len": 64, "attention": "math"}, 1, 64),
]


@pytest.mark.parametrize(("name", "overrides", "batch", "seq"), MODEL_CASES)
def test_transformer_flops_equals_flop_counter_on_the_model(name, overrides, batch, seq):
    torch.manual_seed(0)
    cfg = get_config(name, **overrides)
    model = GPT(cfg)
    idx = torch.randint(0, cfg.vocab_size, (batch, seq))
    counted = count_flops(model, idx)
    assert counted.uncounted_ops == ()
    assert counted.forward == batch * transformer_flops(**cfg.flops_kwargs(seq))
    assert counted.backward == 2 * counted.forward  # every matmul's input needs a gradient here


def test_breakdown_parts_and_defaults():
    parts = transformer_flops_breakdown(n_layers=2, d_model=8, n_heads=2, seq_len=4, vocab_size=10)
    assert parts == {"qkv projections": 2 * 1536, "attention scores (QK^T)": 2 * 256, "attention weighted sum (AV)":
                     2 * 256, "output projection": 2 * 512, "MLP up": 2 * 2048, "MLP down": 2 * 2048, "unembedding": 640}
    assert all(type(v) is int for v in parts.values())  # exact counts: d // h, never d / h
    assert parts["MLP up"] == 2 * 2 * 4 * 8 * 32  # d_ff defaults to 4 * d_model
    assert parts["attention scores (QK^T)"] == parts["attention weighted sum (AV)"] == 2 * 2 * 4 * 4 * 8
    assert parts["unembedding"] == 2 * 4 * 8 * 10
    # per layer: qkv 2*4*8*24 = 1536, QK^T 2*2*4*4*4 = 256, AV 256, out 2*4*8*8 = 512,
    # MLP up 2*4*8*32 = 2048, down 2048: 6656; x 2 layers = 13312; + unembedding 2*4*8*10 = 640
    assert transformer_flops(n_layers=2, d_model=8, n_heads=2, seq_len=4, vocab_size=10) == 13952
    assert sum(parts.values()) == 13952


def test_transformer_flops_refuses_heads_that_do_not_divide_the_width():
    # d_model // n_heads would silently undercount the attention matmuls. The other shape
    # checks live at the edge, GPTConfig (tests/test_nn_models.py::test_config_validation).
    with pytest.raises(AssertionError, match="divisible"):
        transformer_flops(n_layers=2, d_model=8, n_heads=3, seq_len=4, vocab_size=10)


def test_count_flops_backward_of_first_layer_is_1x():
    """§4.2: the input needs no gradient, so the first layer's backward is one matmul."""
    net = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.ReLU(), torch.nn.Linear(16, 4, bias=False))
    result = count_flops(net, torch.randn(5, 8))
    first, second = matmul_flops(5, 8, 16), matmul_flops(5, 16, 4)
    assert result.forward == first + second
    assert result.backward == first + 2 * second
    assert result.by_module["Sequential.0"] == first and result.by_module["Sequential.2"] == second
    assert result.total == result.forward + result.backward


def test_count_flops_reports_what_it_cannot_count():
    q = torch.randn(1, 2, 8, 4, requires_grad=True)
    result = count_flops(lambda t: F.scaled_dot_product_attention(t, t, t, is_causal=True), q)
    assert result.forward == 0  # FlopCounterMode has no formula for the CPU kernel ...
    assert any("scaled_dot_product" in op for op in result.uncounted_ops)  # ... and we say so


def test_count_flops_forward_only_and_bad_input():
    result = count_flops(torch.matmul, torch.randn(2, 3), torch.randn(3, 4), backward=False)
    assert (result.forward, result.backward) == (48, 0)
    with pytest.raises(RuntimeError, match="does not require grad"):  # torch's own error
        count_flops(torch.matmul, torch.randn(2, 3), torch.randn(3, 4))
    with pytest.raises(TypeError):
        count_flops("model", torch.randn(2))


def test_training_time_table_and_calculator():
    rows = training_time_table(70e9, 15e12, [("H100", 1024), ("A100", 512)], mfus=(0.5, 1.0))
    assert rows[0][0] == "H100 SXM" and rows[0][2][0.5] == pytest.approx(143.93, abs=0.01)
    # 6 * 70e9 * 15e12 = 6.3e24 FLOPs / (512 * 312e12 FLOP/s * 1.0) = 3.944e7 s = 456.46 days
    assert rows[1][0] == "A100 SXM 80GB" and rows[1][2][1.0] == pytest.approx(456.46, abs=0.01)
    assert training_days(6.3e24, "A100", 512, 1.0) == pytest.approx(456.46, abs=0.01)
    fp32 = training_time_table(70e9, 15e12, [("A100", 512)], mfus=(1.0,), dtype="fp32")  # A100 fp32: 19.5 TFLOP/s
    assert fp32[0][2][1.0] == pytest.approx(6.3e24 / (512 * 19.5e12) / 86_400, rel=1e-12)
    days = {name: d for name, _, d in training_time_table(70e9, 15e12, [("H100", 1024), ("H200", 1024), ("B200", 1024)])}
    assert days["H200"] == days["H100 SXM"]  # same compute, more memory: a FLOP count cannot see it
    assert days["B200"][0.5] == pytest.approx(6.3e24 / (2250e12 * 0.5 * 1024) / 86_400, rel=1e-12)  # dense bf16
    box = training_time_calculator()
    assert "143.9 days" in box.children[-1].value
    box.children[4].value = 1.0  # MFU
    assert "72.0 days" in box.children[-1].value
    assert not math.isnan(box.children[0].value)


@pytest.mark.parametrize(("args", "error", "message"), [
    ((70e9, 15e12, []), ValueError, "gpus must be a non-empty list of (name, count) pairs"),
    ((70e9, 15e12, "H100"), TypeError, "gpus must be a list or tuple, got str"),
    ((70e9, 15e12, ["H100"]), TypeError, "each gpus entry (a (name, count) pair) must be a tuple, got str"),
    ((-70e9, 15e12, [("H100", 8)]), ValueError, "n_params must be in (0, inf), got -70000000000.0"),
    ((70e9, 0, [("H100", 8)]), ValueError, "n_tokens must be in (0, inf), got 0"),
    ((70e9, 15e12, [("TPU", 8)]), ValueError, "unknown accelerator 'TPU'"),
])
def test_training_time_table_rejects_bad_input(args, error, message):
    with pytest.raises(error, match="^" + re.escape(message)):
        training_time_table(*args)


def _on_the_step_grid(widget) -> bool:
    """Whether a browser shows the widget's value as it is: a slider snaps it to its step grid."""
    import ipywidgets as w

    if isinstance(widget, w.FloatLogSlider):
        steps = (math.log(widget.value, widget.base) - widget.min) / widget.step
    elif isinstance(widget, (w.FloatSlider, w.IntSlider)):
        steps = (widget.value - widget.min) / widget.step
    else:
        return True  # text boxes, dropdowns and checkboxes keep what they are given
    return math.isclose(steps, round(steps), abs_tol=1e-9)


def test_the_calculators_open_on_the_lectures_numbers_in_a_browser_too():
    """The 03 calculator must open on 70B, 15T and 143.9 days: a log slider with step 0.05
    from 1e8 snapped 70e9 to 7.08e10 and 15e12 to 1.58e13 in the browser (153.8 days)."""
    from lecture_utils.widgets import memory_calculator

    for box in (training_time_calculator(), memory_calculator()):
        off_grid = [c.description for c in box.children if not _on_the_step_grid(c)]
        assert off_grid == [], f"a browser would move these from their opening value: {off_grid}"
    params, tokens = training_time_calculator().children[:2]
    assert (params.value, tokens.value) == (70e9, 15e12)


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_torch_dynamo_is_imported_only_when_flops_are_counted():
    """torch._dynamo takes ~2 s to import: importing the package, its FLOP and timing helpers
    and a notebook's first cell must not pull it in (checked in a fresh process: this one may
    have imported it long ago). Counting FLOPs does import it, under the name checked."""
    code = ("import sys\n"
            "import lecture_utils, lecture_utils.flops, lecture_utils.bench\n"
            "from lecture_utils import setup; device = setup()\n"
            "print('torch' in sys.modules, 'torch._dynamo' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "LECTURE_DEVICE": "cpu"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-2:] == ["True", "False"], proc.stdout  # torch imported, torch._dynamo not
    count_flops(torch.nn.Linear(2, 2), torch.ones(1, 2))
    assert "torch._dynamo" in sys.modules  # the name is right: FLOP counting imports it


def test_count_flops_prints_nothing_and_leaves_out_the_global_total(capsys):
    counted = count_flops(torch.nn.Sequential(torch.nn.Linear(4, 3)), torch.randn(2, 4, requires_grad=True))
    assert capsys.readouterr().out == "" and "Global" not in counted.by_module and counted.backward > 0
