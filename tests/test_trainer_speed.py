"""The fast Trainer computes what the lesson's slow one did (issue 15): SDPA attention gives the
math attention's logits and gradients, and its FLOPs still come from the exact count; the
Trainer's loss is the lesson's cross_entropy; one Trainer step is the bare nanoGPT loop's step
that benchmarks/train_mfu.py times it against. Correctness only: the timings are in the benchmark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lecture_utils.flops import count_flops, transformer_flops
from lecture_utils.models import GPT, get_config
from lecture_utils.nn import cross_entropy
from lecture_utils.train import TrainConfig, Trainer, loop

ROOT = Path(__file__).resolve().parents[1]
TOKENS = np.random.default_rng(0).integers(0, 8192, 20_000).astype(np.uint16)


def _trainer(tmp_path, name="run", steps=2, **overrides) -> Trainer:
    cfg = TrainConfig(config="tiny", steps=steps, batch_size=4, seq_len=32, warmup=0, val_every=0, device="cpu",
                      precision="fp32", optimizer="lecture", seed=3)
    trainer = Trainer(cfg, tmp_path / name, progress=False, echo=lambda m: None, train_data=TOKENS, val_data=TOKENS,
                      **overrides)
    trainer.peak = 1e12  # FLOP/s: skips the CPU matmul benchmark (not what these tests check)
    return trainer


def test_sdpa_and_math_attention_agree_on_logits_and_gradients():
    torch.manual_seed(0)
    math_model = GPT(get_config("tiny", attention="math"))
    sdpa_model = GPT(get_config("tiny", attention="sdpa"))
    sdpa_model.load_state_dict(math_model.state_dict())
    idx = torch.randint(0, 8192, (3, 48))
    y = torch.randint(0, 8192, (3, 48))
    logits = {name: m(idx) for name, m in (("math", math_model), ("sdpa", sdpa_model))}
    torch.testing.assert_close(logits["sdpa"], logits["math"], rtol=0, atol=1e-5)
    for name in ("math", "sdpa"):
        cross_entropy(logits[name], y).backward()
    for (name, p), q in zip(math_model.named_parameters(), sdpa_model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_the_trainer_runs_sdpa_and_counts_the_math_models_flops(tmp_path):
    trainer = _trainer(tmp_path)
    assert trainer.plan.model_cfg.attention == "sdpa"
    assert all(block.attn.attention == "sdpa" for block in trainer.parts.raw_model.blocks)
    # the FLOPs it divides by: FlopCounterMode on the math model (every matmul visible) of one sequence
    math_model = GPT(get_config("tiny", attention="math"))
    counted = count_flops(math_model, torch.zeros(1, 32, dtype=torch.long), backward=False)
    assert counted.forward == transformer_flops(**get_config("tiny").flops_kwargs(32))
    assert trainer.plan.flops_per_step == 3 * counted.forward * 4
    trainer.close()


def test_the_trainers_loss_is_the_lessons_cross_entropy():
    torch.manual_seed(1)
    logits = (3 * torch.randn(2, 5, 50)).requires_grad_()
    targets = torch.randint(0, 50, (2, 5))
    ours = logits.detach().clone().requires_grad_()
    torch.testing.assert_close(loop.lm_loss(logits, targets), cross_entropy(ours, targets), rtol=1e-6, atol=0)
    loop.lm_loss(logits, targets).backward()
    cross_entropy(ours, targets).backward()
    torch.testing.assert_close(logits.grad, ours.grad, rtol=1e-5, atol=1e-8)
    # non-contiguous targets (y = windows[:, 1:], as the Trainer slices them) are fine
    windows = torch.randint(0, 50, (2, 6))
    torch.testing.assert_close(loop.lm_loss(logits, windows[:, 1:]), cross_entropy(logits, windows[:, 1:]))


def _benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # as when run as a script: its _targets sits beside it
    spec = importlib.util.spec_from_file_location("train_mfu", ROOT / "benchmarks" / "train_mfu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_trainer_step_is_the_bare_loops_step(tmp_path):
    """benchmarks/train_mfu.py's bare loop: same model, batch and optimizer, so the same update."""
    bench = _benchmark()
    trainer = _trainer(tmp_path)
    bare = bench.BareLoop(trainer)  # seeded like the Trainer: the same initial weights
    for p, q in zip(trainer.parts.raw_model.parameters(), bare.model.parameters(), strict=True):
        assert torch.equal(p, q)
    bench.trainer_step(trainer)
    bare.step()  # its generator draws the same windows as the Trainer's
    for (name, p), q in zip(trainer.parts.raw_model.named_parameters(), bare.model.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-7, msg=name)
    trainer.close()


def test_nanogpt_flop_formula_against_the_exact_count():
    """nanoGPT's 6N + 12LHQT is our 3 x exact forward, except that 6N also counts the
    LayerNorm weights and biases' FLOPs as matmuls and 12LHQT is the same attention term."""
    bench = _benchmark()
    model = GPT(get_config("tiny"))
    cfg = model.cfg
    ours = 3 * transformer_flops(**cfg.flops_kwargs(64)) * 2
    biases_and_norms = sum(p.numel() for name, p in model.named_parameters()
                           if p.ndim == 1) + model.tok_emb.weight.numel()  # untied: the table is extra
    assert bench.nanogpt_flops_per_step(model, 2, 64) - ours == 6 * biases_and_norms * 64 * 2


def test_a_math_attention_checkpoint_resumes_under_sdpa(tmp_path):
    before = _trainer(tmp_path, steps=1, model_overrides={"attention": "math"})
    before.run()
    before.close()
    after = _trainer(tmp_path, resume=True)  # the default, SDPA: the same model, so no refusal
    assert after.step == 1 and after.plan.model_cfg.attention == "sdpa"
    after.close()
    with pytest.raises(ValueError, match="another model"):
        _trainer(tmp_path, resume=True, model_overrides={"d_model": 32, "n_heads": 2})
