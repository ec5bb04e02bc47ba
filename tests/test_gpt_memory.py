"""gpt_step_memory: the Trainer's GPT step, predicted from the config, against what autograd
saves (saved_tensor_bytes), the peak RSS growth of a real step on the CPU, and
max_memory_allocated on CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from lecture_utils.models import GPT, get_config
from lecture_utils.training_memory import gpt_step_memory, saved_tensor_bytes

ROOT = Path(__file__).resolve().parents[1]


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
    assert predicted.activations == pytest.approx(measured, rel=0.10)


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
