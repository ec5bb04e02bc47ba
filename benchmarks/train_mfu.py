"""Training throughput of lecture_utils.train: the Trainer against a bare loop, and its MFU.

Paired (same process, interleaved rounds, medians), on the device the Trainer picks: the
Trainer's step (batch sampling, the lesson's train_step, its OOM wrapper, the log line)
with the lesson's hand-written cross_entropy and math attention (before issue 15), with
F.cross_entropy, and with F.cross_entropy and SDPA (the Trainer's default now), against a
bare nanoGPT-style loop (sample, forward, F.cross_entropy, backward, clip, step) on the same
model, batch, precision and optimizer. Goal: Trainer overhead <= 5% over the bare loop.
It also prints the Trainer's FLOPs per step against nanoGPT's published formula
(``estimate_mfu``: 6N + 12 L H Q T per token, N without the position table).

Targets (docs/gpu/reference.md, with sources): `trainer-overhead`, the Trainer's step time
over the bare loop's; on a CUDA GPU, `gpt2-small-train-mfu`, from a Trainer run of the `gpu` config
(about GPT-2 small, seq 1024) in bf16 with torch's fused AdamW and torch.compile (unless
--no-compile). Elsewhere the `tiny` config, batch 16 x 128. Each target line says "met" or
"missed"; the exit code is 1 only on a gross regression (worse than half a target).

    python benchmarks/train_mfu.py [--rounds 8] [--steps 3] [--batch-size 16] [--no-compile] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from _targets import machine, report

from lecture_utils.data import sample_windows
from lecture_utils.dtypes import find_format
from lecture_utils.models import GPT, n_params
from lecture_utils.nn import cross_entropy
from lecture_utils.train import TrainConfig, Trainer, loop


def nanogpt_flops_per_step(model: GPT, batch: int, seq_len: int) -> float:
    """nanoGPT's ``estimate_mfu`` (model.py): 6N + 12 L H Q T FLOPs per token, N the
    parameters without the position table (their output layer is tied: counted once)."""
    cfg = model.cfg
    n = n_params(model) - model.pos_emb.weight.numel()
    per_token = 6 * n + 12 * cfg.n_layers * cfg.n_heads * (cfg.d_model // cfg.n_heads) * seq_len
    return per_token * seq_len * batch


class BareLoop:
    """nanoGPT's training loop on the Trainer's model config, batch, precision and optimizer."""

    def __init__(self, trainer: Trainer):
        self.trainer, self.device = trainer, trainer.plan.device
        torch.manual_seed(trainer.cfg.seed)
        self.model = GPT(trainer.plan.model_cfg).to(self.device)
        opt = trainer.parts.optimizer
        self.optimizer = type(opt)(self.model.parameters(), **{k: v for k, v in opt.defaults.items()
                                                                if k in ("lr", "betas", "eps", "weight_decay",
                                                                         "fused")})
        self.generator = torch.Generator().manual_seed(trainer.cfg.seed + 1)
        amp = trainer.plan.precision != "fp32"
        self.autocast = (lambda: torch.autocast(self.device.type, dtype=find_format(trainer.plan.precision).dtype)) \
            if amp else contextlib.nullcontext

    def step(self) -> float:
        t = self.trainer
        windows = sample_windows(t.parts.batches.train, t.cfg.batch_size, t.plan.seq_len, self.generator)
        windows = windows.to(self.device, non_blocking=True)
        x, y = windows[:, :-1], windows[:, 1:]
        with self.autocast():
            logits = self.model(x)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.cfg.clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.item()


def trainer_step(trainer: Trainer) -> None:
    """What Trainer._loop does per step, without validation and checkpoints."""
    loss, norm = trainer._step_with_oom_recovery(trainer.cfg.lr)
    trainer.step += 1
    if trainer.folder:
        trainer.folder.append({"step": trainer.step, "loss": loss, "lr": trainer.cfg.lr, "grad_norm": norm})


def paired(steps: dict, rounds: int, per_round: int, sync) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in steps}
    for fn in steps.values():  # warm-up: lazy init, allocator, first-touch of the data
        fn()
    for _ in range(rounds):
        for name, fn in steps.items():
            sync()
            start = time.perf_counter()
            for _ in range(per_round):
                fn()
            sync()
            times[name].append((time.perf_counter() - start) / per_round)
    return times


def compare(cfg: TrainConfig, rounds: int, per_round: int) -> bool:
    with tempfile.TemporaryDirectory() as out:
        variants = {"hand CE, math": {"attention": "math"}, "F.cross_entropy, math": {"attention": "math"},
                    "F.cross_entropy, SDPA": {}}
        trainers = {name: Trainer(cfg, f"{out}/{i}", progress=False, model_overrides=overrides,
                                  echo=lambda line: None)
                    for i, (name, overrides) in enumerate(variants.items())}
        default = trainers["F.cross_entropy, SDPA"]
        bare = BareLoop(default)
        lesson_loss = loop.lm_loss

        def with_loss(trainer, loss_fn):
            def run():
                loop.lm_loss = loss_fn  # train_step looks the loss up when it runs
                try:
                    trainer_step(trainer)
                finally:
                    loop.lm_loss = lesson_loss
            return run

        steps = {"Trainer, hand CE, math (before)": with_loss(trainers["hand CE, math"], cross_entropy),
                 "Trainer, F.cross_entropy, math": with_loss(trainers["F.cross_entropy, math"], lesson_loss),
                 "Trainer, F.cross_entropy, SDPA (now)": with_loss(default, lesson_loss),
                 "bare nanoGPT loop, same model": bare.step}
        sync = torch.cuda.synchronize if default.plan.device.type == "cuda" else (lambda: None)
        times = paired(steps, rounds, per_round, sync)
        tokens = cfg.batch_size * default.plan.seq_len
        print(f"{cfg.config} config, batch {cfg.batch_size} x {default.plan.seq_len}, {default.plan.precision} on "
              f"{default.plan.device}, {torch.get_num_threads()} threads; median of {rounds} paired rounds of "
              f"{per_round} steps")
        bare_times = times["bare nanoGPT loop, same model"]
        for name, seconds in times.items():
            ratio = statistics.median(a / b for a, b in zip(seconds, bare_times, strict=True))
            print(f"  {name:<38} {statistics.median(seconds) * 1e3:8.1f} ms/step "
                  f"{tokens / statistics.median(seconds):10,.0f} tokens/s  {ratio:.3f}x the bare loop's time")
        before, now = times["Trainer, hand CE, math (before)"], times["Trainer, F.cross_entropy, SDPA (now)"]
        speedup = statistics.median(a / b for a, b in zip(before, now, strict=True))
        overhead = statistics.median(a / b for a, b in zip(now, bare_times, strict=True)) - 1
        print(f"  tokens/s now vs before: {speedup:.2f}x; Trainer overhead over the bare loop: {overhead:+.1%}")
        ours = default.plan.flops_per_step
        theirs = nanogpt_flops_per_step(default.parts.raw_model, cfg.batch_size, default.plan.seq_len)
        print(f"  FLOPs per step: ours (3 x exact forward) {ours:,.0f}; nanoGPT's 6N + 12LHQT {theirs:,.0f} "
              f"({ours / theirs:.3f}x: its N also counts the LayerNorms and biases and, the model being untied, "
              f"the token table, whose lookup is no matmul)")
        for trainer in trainers.values():
            trainer.close()
        return report("trainer-overhead", 1 + overhead, machine(default.plan.device), "x the bare loop's step time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="paired rounds")
    parser.add_argument("--steps", type=int, default=3, help="steps per variant per round")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 steps, a shorter GPU run (a rehearsal)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps = 2, 2
    cuda = torch.cuda.is_available()
    try:  # TrainConfig checks the numbers: one line and exit 2 on bad input
        for name in ("rounds", "steps"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(args, name)}")
        cfg = TrainConfig(config="gpu" if cuda else "tiny", steps=max(args.steps, 2), warmup=1, val_every=0,
                          batch_size=args.batch_size or 16, seq_len=None, compile=False)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    ok = compare(cfg, args.rounds, args.steps)
    if not cuda:
        print("target gpt2-small-train-mfu: not measured here (it needs a CUDA GPU)")
        return 0 if ok else 1
    cfg = dataclasses.replace(cfg, compile=not args.no_compile, steps=12 if args.quick else 30)
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(cfg, out, progress=False)
        records = trainer.run()
        trainer.close()
    steady = records[len(records) // 3:]  # skip warm-up and compilation steps
    tokens = statistics.median(r["tokens_per_s"] for r in steady)
    if trainer.peak is None:  # a GPU missing from the hardware table: no datasheet peak, no MFU
        print(f"{cfg.config} config: {tokens:,.0f} tokens/s; {trainer.peak_source}: no MFU")
        return 0 if ok else 1
    mfu = statistics.median(r["mfu"] for r in steady)
    print(f"{cfg.config} config{' compiled' if cfg.compile else ''}: {tokens:,.0f} tokens/s, MFU {mfu:.1%} against "
          f"{trainer.peak / 1e12:.4g} TFLOP/s ({trainer.peak_source}); loss {records[0]['loss']:.3f} -> "
          f"{records[-1]['loss']:.3f}")
    ok &= report("gpt2-small-train-mfu", mfu, machine(trainer.plan.device),
                 f" ({tokens:,.0f} tokens/s; peak {trainer.peak / 1e12:.4g} TFLOP/s, {trainer.peak_source})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
