"""The training-memory predictor against the measurer (to the byte, on the CPU), against what autograd
saves, and gpt_step_memory against a real Trainer step: its peak RSS growth on the CPU, and
max_memory_allocated on CUDA."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from lecture_utils.models import GPT, Cruncher, get_config
from lecture_utils.training_memory import (
    OPTIMIZER_STATE_COPIES,
    TrainingMemory,
    gpt_step_memory,
    measure_training_memory,
    mlp_activation_bytes,
    mlp_peak_bytes,
    predict_training_memory,
    saved_tensor_bytes,
)

ROOT = Path(__file__).resolve().parents[1]
OPTIMIZERS_UNDER_TEST = {
    "sgd": (torch.optim.SGD, {}),
    "momentum": (torch.optim.SGD, {"momentum": 0.9}),
    "adagrad": (torch.optim.Adagrad, {}),
    "rmsprop": (torch.optim.RMSprop, {}),
    "adam": (torch.optim.Adam, {}),
    "adamw": (torch.optim.AdamW, {}),
}


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS_UNDER_TEST))
@pytest.mark.parametrize(("n_layers", "width", "batch", "relu"), [(1, 8, 4, False), (4, 64, 32, False),
                                                                   (3, 48, 100, True)])
def test_prediction_equals_measurement_to_the_byte(optimizer, n_layers, width, batch, relu):
    torch.manual_seed(0)
    model = Cruncher(width, n_layers, relu=relu)
    cls, kw = OPTIMIZERS_UNDER_TEST[optimizer]
    measured = measure_training_memory(model, torch.randn(batch, width), cls(model.parameters(), lr=1e-3, **kw))
    predicted = predict_training_memory(
        model, optimizer=optimizer,
        activations=mlp_activation_bytes(n_layers=n_layers, width=width, batch=batch))
    assert measured == predicted


def test_only_activations_grow_with_batch():
    model = Cruncher(32, 3)
    small, big = (measure_training_memory(model, torch.randn(b, 32), torch.optim.AdamW(model.parameters()))
                  for b in (8, 64))
    assert (small.params, small.grads, small.optimizer_state) == (big.params, big.grads, big.optimizer_state)
    assert big.activations == 8 * small.activations


def test_bf16_model_halves_every_part():
    fp32, bf16 = Cruncher(16, 2), Cruncher(16, 2, dtype=torch.bfloat16)
    a = predict_training_memory(fp32, optimizer="sgd")
    b = predict_training_memory(bf16, optimizer="sgd")
    assert (b.params * 2, b.grads * 2) == (a.params, a.grads)
    assert mlp_activation_bytes(n_layers=2, width=16, batch=4, dtype="bf16") * 2 == \
        mlp_activation_bytes(n_layers=2, width=16, batch=4)


def test_saved_tensor_bytes_counts_storages_once_and_skips_parameters():
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    # x @ w saves x and w; (x @ w) * (x @ w) saves the product's output twice (one storage).
    n, saved = saved_tensor_bytes(lambda: (x @ w).pow(2).sum())
    assert n == 4 * 8 * 4 + 8 * 8 * 4 + 4 * 8 * 4  # x, w and the matmul output (for pow)
    n_excluded, _ = saved_tensor_bytes(lambda: (x @ w).pow(2).sum(), exclude=[w])
    assert n_excluded == n - 8 * 8 * 4
    assert ((4, 8), torch.float32) in saved


def test_no_grad_saves_nothing():
    model = Cruncher(16, 2)
    with torch.no_grad():
        n, saved = saved_tensor_bytes(model, torch.randn(4, 16))
    assert (n, saved) == (0, [])


def test_total_and_state_copies():
    m = TrainingMemory(params=4, grads=4, optimizer_state=8, activations=3)
    assert m.total == 19
    copies = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    assert OPTIMIZER_STATE_COPIES == copies and repr(OPTIMIZER_STATE_COPIES) == repr(copies)  # as a notebook shows it
    from lecture_utils.optim import OPTIMIZERS

    assert list(OPTIMIZERS) == list(OPTIMIZER_STATE_COPIES) == list(OPTIMIZERS_UNDER_TEST)


def test_peak_formula_composition():
    L, D, B = 8, 2048, 8192
    params = (L * D * D + D) * 4
    expected = params + 2 * params + 4 * (L + 1) + (L * B * D + 2 * B * D + D * D + D) * 4
    assert mlp_peak_bytes(n_layers=L, width=D, batch=B) == expected
    assert mlp_peak_bytes(n_layers=L, width=D, batch=B, optimizer="sgd") == expected - 2 * params - 4 * (L + 1)


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: predict_training_memory(Cruncher(4, 1), optimizer="lion"), ValueError, "unknown optimizer 'lion'"),
    (lambda: predict_training_memory(Cruncher(4, 1), optimizer=None), TypeError, "optimizer must be a str"),
    (lambda: mlp_peak_bytes(n_layers=1, width=4, batch=4, optimizer="adamax"), ValueError, "unknown optimizer 'adamax'"),
    (lambda: mlp_activation_bytes(n_layers=1, width=4, batch=4, dtype="float9"), ValueError, "unknown dtype 'float9'"),
    (lambda: mlp_activation_bytes(n_layers=-2, width=4, batch=4), AssertionError, "sizes must be >= 0"),
])
def test_bad_names_and_counts_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_optimizer_names_are_case_insensitive():
    model = Cruncher(4, 1)
    assert predict_training_memory(model, optimizer="AdamW") == predict_training_memory(model)


def test_cruncher_shape():
    assert Cruncher(8, 3)(torch.randn(5, 8)).shape == (5,)
    assert len(Cruncher(8, 3).layers) == 3


# --- gpt_step_memory: the Trainer's GPT step, predicted from the config

@pytest.mark.parametrize(("overrides", "batch", "seq_len"), [
    ({"attention": "sdpa"}, 4, 32),
    ({"attention": "math"}, 4, 32),
    ({"attention": "sdpa", "n_layers": 3, "d_ff": 96, "tie_embeddings": True}, 2, 16),
    ({"attention": "math", "vocab_size": 500, "n_heads": 2}, 3, 64),
])
def test_activations_match_what_autograd_saves(overrides, batch, seq_len):
    cfg = get_config("tiny", **overrides)
    torch.manual_seed(0)
    model = GPT(cfg)
    x = torch.randint(0, cfg.vocab_size, (batch, seq_len))
    y = torch.randint(0, cfg.vocab_size, (batch, seq_len))
    measured, _ = saved_tensor_bytes(lambda idx: F.cross_entropy(model(idx).flatten(0, 1), y.flatten()), x,
                                     exclude=list(model.parameters()))
    predicted = gpt_step_memory(cfg, batch, seq_len)
    assert predicted.activations == measured  # to the byte, with either attention


def test_parameters_state_and_logit_buffers_follow_the_model():
    cfg = get_config("tiny", attention="sdpa")
    model = GPT(cfg)
    n = sum(p.numel() for p in model.parameters())
    memory = gpt_step_memory(cfg, 16, 128)
    assert memory.params == memory.grads == 4 * n
    assert memory.optimizer_state == 2 * 4 * n + 4 * len(list(model.parameters()))  # AdamW: m, v, step
    assert memory.logits_buffers == 2 * 16 * 128 * cfg.vocab_size * 4
    with pytest.raises(ValueError, match="optimizer"):
        gpt_step_memory(cfg, 16, 128, optimizer="lion")


# One real training step (the Trainer's own train_step and loss) in a fresh process:
# glibc's mmap threshold is fixed at 64 KiB so that every large tensor is returned to the
# system when freed (otherwise the heap keeps freed memory resident and the peak reflects
# the allocator's history), and the peak resident set is reset just before the step
# (Linux: /proc/self/clear_refs, 5).
_STEP = r"""
import json, re, sys, torch
from lecture_utils.models import GPT, get_config
from lecture_utils.optim import AdamW
from lecture_utils.train.loop import train_step

def status(key):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+) kB", f.read()).group(1)) * 1024

batch, seq_len = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(1)
torch.manual_seed(0)
cfg = get_config("tiny", attention="sdpa")
model = GPT(cfg)
optimizer = AdamW(model.parameters(), lr=1e-3)
x = torch.randint(0, cfg.vocab_size, (batch, seq_len))
y = torch.randint(0, cfg.vocab_size, (batch, seq_len))
train_step(model, optimizer, [(x, y)], 1e-3, 1.0)  # optimizer state and gradients now exist
growth = []
for _ in range(2):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    train_step(model, optimizer, [(x, y)], 1e-3, 1.0)
    growth.append(status("VmHWM") - base)
print(json.dumps(growth))
"""


@pytest.mark.slow  # a fresh process and a real step: seconds
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS reset needs Linux /proc")
def test_peak_rss_growth_of_a_trainer_step_on_cpu():
    batch, seq_len = 16, 128  # the peak (~205 MiB, mostly the loss's N x V buffers) dwarfs RSS noise
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run([sys.executable, "-c", _STEP, str(batch), str(seq_len)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    growth = json.loads(result.stdout.strip().splitlines()[-1])
    predicted = gpt_step_memory(get_config("tiny", attention="sdpa"), batch, seq_len).step_growth
    assert min(growth) == pytest.approx(predicted, rel=0.10)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="max_memory_allocated needs a CUDA GPU")
def test_peak_cuda_memory_of_a_trainer_step():
    from lecture_utils.optim import AdamW
    from lecture_utils.train.loop import train_step

    batch, seq_len, device = 16, 128, torch.device("cuda")
    cfg = get_config("tiny", attention="sdpa")
    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, cfg.vocab_size, (batch, seq_len), device=device)
    y = torch.randint(0, cfg.vocab_size, (batch, seq_len), device=device)
    train_step(model, optimizer, [(x, y)], 1e-3, 1.0)  # fp32: the prediction's dtype
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()  # also holds what is not the model's: cuBLAS workspace, x, y
    train_step(model, optimizer, [(x, y)], 1e-3, 1.0)
    torch.cuda.synchronize()
    growth = torch.cuda.max_memory_allocated() - base
    assert growth == pytest.approx(gpt_step_memory(cfg, batch, seq_len).step_growth, rel=0.05)


def test_the_defaults_and_the_edges_of_the_predictions():
    layer = torch.nn.Linear(4, 2, bias=False)  # 8 fp32 weights: 32 bytes
    # AdamW by default (2 states and a 4-byte step), no activations unless given
    assert predict_training_memory(layer) == TrainingMemory(params=32, grads=32, optimizer_state=68, activations=0)
    assert mlp_activation_bytes(n_layers=0, width=0, batch=0) == 0  # an empty model saves nothing
    for bad in ({"n_layers": -1}, {"width": -1}, {"batch": -1}):
        with pytest.raises(AssertionError, match="^sizes must be >= 0$"):
            mlp_activation_bytes(**({"n_layers": 1, "width": 4, "batch": 2} | bad))
    tiny = get_config("tiny")
    for args, message in [((0,), r"^batch must be in \[1, inf\), got 0$"), ((2, 0), r"^seq_len must be in \[1, inf\), got 0$")]:
        with pytest.raises(ValueError, match=message):
            gpt_step_memory(tiny, *args)
    assert gpt_step_memory(tiny, 2) == gpt_step_memory(tiny, 2, tiny.seq_len)  # seq_len defaults to the config's
