"""The training loop (§8) and what production training adds to it.

    python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny [--ckpt-every 50] [--resume]
    torchrun --nproc_per_node=2 -m lecture_utils.train --config tiny --steps 200 --out runs/ddp [--zero1]

Seeds and a deterministic switch, atomic checkpoints with every RNG state (bit-exact
resume on CPU), warm-up + cosine LR, gradient clipping, gradient accumulation, autocast
(bf16 on CUDA; fp16 with a GradScaler as an option), periodic validation, a tqdm bar,
one JSON line per step in ``log.jsonl``, and on CUDA out-of-memory: halve the
micro-batch (keeping the effective batch through accumulation) and go on.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import numbers
import os
import pickle
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from lecture_utils.data import DATA_DIR, load_tokens, sample_windows
from lecture_utils.device import get_device, seed_all
from lecture_utils.flops import transformer_flops
from lecture_utils.models import CONFIGS, GPT, GPTConfig, get_config
from lecture_utils.nn import cross_entropy
from lecture_utils.optim import AdamW

CHECKPOINT = "checkpoint.pt"
LOG = "log.jsonl"
PRECISIONS = ("fp32", "bf16", "fp16")


# --- the pieces -------------------------------------------------------------------


def seed_everything(seed: int, deterministic: bool = False) -> None:
    """Seed python, numpy, torch and CUDA; ``deterministic`` also makes torch refuse
    (or replace) kernels whose results can differ from run to run (§8.1)."""
    seed_all(seed)
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be True or False, got {deterministic!r}")
    if deterministic or torch.are_deterministic_algorithms_enabled():  # (the call imports inductor: 2 s)
        torch.use_deterministic_algorithms(deterministic)
    if deterministic:  # cuBLAS needs a fixed workspace to be deterministic
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """Scale all gradients in place so their global L2 norm is at most ``max_norm``.

    Same semantics as ``torch.nn.utils.clip_grad_norm_``: parameters without a gradient
    are skipped, the coefficient is ``max_norm / (norm + 1e-6)`` clamped to 1, and the
    norm *before* clipping is returned.
    """
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not max_norm > 0:
        raise ValueError(f"max_norm must be a number > 0, got {max_norm!r}")
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.to(g.device, g.dtype))
    return total


def cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Linear warm-up from 0 to ``max_lr`` over ``warmup_steps``, cosine decay to
    ``min_lr`` at ``total_steps``, ``min_lr`` after."""
    for name, value in (("step", step), ("warmup_steps", warmup_steps), ("total_steps", total_steps)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    for name, value in (("max_lr", max_lr), ("min_lr", min_lr)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if min_lr > max_lr:
        raise ValueError(f"min_lr ({min_lr}) must be <= max_lr ({max_lr})")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) must be <= total_steps ({total_steps})")
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


# --- checkpoints ------------------------------------------------------------------


def rng_state(generator: torch.Generator | None = None) -> dict:
    """Every RNG state, in types that ``torch.load(weights_only=True)`` accepts."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"python": random.getstate(), "numpy": (kind, torch.from_numpy(keys.copy()), pos, has_gauss, gauss),
             "torch": torch.get_rng_state(),
             "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
    if generator is not None:
        state["generator"] = generator.get_state()
    return state


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy(), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None:
        if "generator" not in state:
            raise ValueError("checkpoint holds no data-sampler generator state")
        generator.set_state(state["generator"])


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if hasattr(model, "module") else model


def save_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    step: int, *, generator: torch.Generator | None = None, **extra) -> Path:
    """Save model, optimizer, step, every RNG state and ``extra`` (e.g. the config), atomically.

    Written to a temporary file in the same folder, flushed and fsync'ed, then renamed
    over the old checkpoint: a crash at any moment leaves either the old file or the new
    one, never half of one. ``extra`` must hold plain data (dicts, lists, numbers,
    strings, tensors) so that loading never needs to unpickle arbitrary objects.
    """
    path = Path(path)
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    optim_state = optimizer.state_dict() if not hasattr(optimizer, "consolidate_state_dict") else None
    if optim_state is None:  # ZeroRedundancyOptimizer: gather the shards first
        optimizer.consolidate_state_dict(to=0)
        if dist.get_rank() != 0:
            return path
        optim_state = optimizer.state_dict()
    payload = {"model": _unwrap(model).state_dict(), "optimizer": optim_state, "step": int(step),
               "rng": rng_state(generator), "extra": extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
    return path


def read_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint's contents safely (``weights_only=True``) with clear errors."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if "GLOBAL" in str(err):  # it names a Python object (a function, a class) to rebuild
            raise ValueError(f"refusing to load {path}: it holds arbitrary pickled objects, which "
                             "weights_only loading does not execute") from err
        raise ValueError(f"{path} is not a readable checkpoint (truncated or corrupt)") from err
    except (RuntimeError, EOFError, OSError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path} is not a readable checkpoint (truncated or corrupt): {reason}") from err
    missing = {"model", "optimizer", "step", "rng"} - set(payload if isinstance(payload, dict) else ())
    if missing:
        raise ValueError(f"{path} is not a lecture_utils checkpoint (missing {sorted(missing)})")
    return payload


def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, *,
                    generator: torch.Generator | None = None) -> int:
    """Restore model, optimizer and every RNG state from ``path``; return the step."""
    payload = read_checkpoint(path)
    _unwrap(model).load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    set_rng_state(payload["rng"], generator)
    return payload["step"]


# --- the loop -----------------------------------------------------------------------


@dataclass
class TrainConfig:
    config: str = "tiny"
    steps: int = 200
    batch_size: int = 16  # sequences per optimizer step (the effective batch)
    seq_len: int | None = None  # default: the model's
    accum: int = 1  # micro-batches per step
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 20
    weight_decay: float = 0.1
    clip: float = 1.0
    precision: str | None = None  # default: bf16 on CUDA, fp32 elsewhere
    seed: int = 0
    deterministic: bool = False
    val_every: int = 50
    val_batches: int = 4
    ckpt_every: int = 0  # 0: only at the end
    device: str | None = None
    optimizer: str | None = None  # "lecture" (lecture_utils.optim.AdamW) or "fused" (torch, CUDA)
    zero1: bool = False
    compile: bool = False

    def validate(self) -> None:
        for name in ("steps", "batch_size", "accum", "val_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("warmup", "val_every", "ckpt_every", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if self.config not in CONFIGS:
            raise ValueError(f"unknown config {self.config!r}; valid: {', '.join(CONFIGS)}")
        if self.batch_size % self.accum:
            raise ValueError(f"batch_size ({self.batch_size}) must be divisible by accum ({self.accum})")
        if self.warmup > self.steps:
            raise ValueError(f"warmup ({self.warmup}) must be <= steps ({self.steps})")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; valid: {', '.join(PRECISIONS)}")
        if self.optimizer not in (None, "lecture", "fused"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; valid: lecture, fused")
        if not (self.lr > 0 and 0 <= self.min_lr <= self.lr and self.clip > 0 and self.weight_decay >= 0):
            raise ValueError("need lr > 0, 0 <= min_lr <= lr, clip > 0 and weight_decay >= 0")


def _autocast(device: torch.device, precision: str):
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def _evaluate(model, data, cfg: TrainConfig, seq_len: int, device, precision: str) -> float:
    """Mean loss over a fixed set of validation windows (the same ones every time)."""
    generator = torch.Generator().manual_seed(10_000 + cfg.seed)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(cfg.val_batches):
            windows = sample_windows(data, cfg.batch_size // cfg.accum, seq_len, generator).to(device)
            with _autocast(device, precision):
                total += cross_entropy(model(windows[:, :-1]), windows[:, 1:]).item()
    model.train()
    return total / cfg.val_batches


class Trainer:
    """One training run: model, optimizer, data, and the loop. ``run()`` does the steps."""

    def __init__(self, cfg: TrainConfig, out: str | Path, *, resume: bool = False, progress: bool = True,
                 model_overrides: dict | None = None, train_data=None, val_data=None, echo=print):
        cfg.validate()
        self.cfg, self.out, self.progress, self.echo = cfg, Path(out), progress, echo
        self.distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
        if self.distributed and not dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() and cfg.device != "cpu" else "gloo"
            dist.init_process_group(backend)
        self.rank = dist.get_rank() if self.distributed else 0
        self.world = dist.get_world_size() if self.distributed else 1
        if cfg.zero1 and not self.distributed:
            raise ValueError("--zero1 shards optimizer state across processes: launch with torchrun")
        device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.distributed and torch.device(device).type == "cuda":
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        self.device = get_device(device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.precision = cfg.precision or ("bf16" if self.device.type == "cuda" else "fp32")

        seed_everything(cfg.seed, cfg.deterministic)
        self.model_cfg: GPTConfig = get_config(cfg.config, **(model_overrides or {}))
        self.seq_len = cfg.seq_len or self.model_cfg.seq_len
        if self.seq_len > self.model_cfg.seq_len:
            raise ValueError(f"seq_len {self.seq_len} > the {cfg.config} model's {self.model_cfg.seq_len}")
        micro_global = cfg.batch_size // cfg.accum
        if micro_global % self.world:
            raise ValueError(f"micro-batch {micro_global} is not divisible by {self.world} processes")
        self.micro = micro_global  # sequences per micro-step, summed over processes
        self.accum = cfg.accum
        self.train_data = train_data if train_data is not None else load_tokens(DATA_DIR / "tokens" / "train.bin")
        self.val_data = val_data if val_data is not None else load_tokens(DATA_DIR / "tokens" / "val.bin")

        model = GPT(self.model_cfg).to(self.device)
        self.raw_model = model
        if self.distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.model = torch.compile(model) if cfg.compile else model
        self.optimizer_name = cfg.optimizer or ("fused" if self.device.type == "cuda" else "lecture")
        kw = {"lr": cfg.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": cfg.weight_decay}
        if self.optimizer_name == "fused" and self.device.type != "cuda":
            raise ValueError("the fused AdamW runs on CUDA only; use --optimizer lecture")
        opt_cls = AdamW if self.optimizer_name == "lecture" else torch.optim.AdamW
        if self.optimizer_name == "fused":
            kw["fused"] = True
        if cfg.zero1:
            from torch.distributed.optim import ZeroRedundancyOptimizer

            self.optimizer = ZeroRedundancyOptimizer(self.raw_model.parameters(), optimizer_class=opt_cls, **kw)
        else:
            self.optimizer = opt_cls(self.raw_model.parameters(), **kw)
        self.scaler = torch.amp.GradScaler(self.device.type) if self.precision == "fp16" else None
        self.generator = torch.Generator().manual_seed(cfg.seed + 1)  # data order, checkpointed
        self.step = 0
        self.flops_per_step = 3 * transformer_flops(**self.model_cfg.flops_kwargs(self.seq_len)) * cfg.batch_size
        self.peak = None
        if resume:
            self.step = load_checkpoint(self.out / CHECKPOINT, self.raw_model, self.optimizer,
                                        generator=self.generator)
            if self.step > cfg.steps:
                raise ValueError(f"checkpoint is at step {self.step}, beyond --steps {cfg.steps}")
            self._truncate_log()
        elif self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / LOG).write_text("")

    # -- helpers

    def say(self, message: str) -> None:
        if self.rank == 0:
            self.echo(message)

    def _truncate_log(self) -> None:
        """Drop log lines past the checkpoint: those steps are about to be redone."""
        if self.rank != 0 or not (self.out / LOG).exists():
            return
        kept = [ln for ln in (self.out / LOG).read_text().splitlines()
                if ln.strip() and json.loads(ln)["step"] <= self.step]
        (self.out / LOG).write_text("".join(ln + "\n" for ln in kept))

    def _mean(self, value: float) -> float:
        if not self.distributed:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(t)
        return t.item() / self.world

    def _micro_batch(self):
        """The next micro-batch of the *global* batch; each process keeps its own rows."""
        windows = sample_windows(self.train_data, self.micro, self.seq_len, self.generator)
        per_rank = self.micro // self.world
        windows = windows[self.rank * per_rank:(self.rank + 1) * per_rank]
        windows = windows.pin_memory().to(self.device, non_blocking=True) if self.device.type == "cuda" \
            else windows
        return windows[:, :-1], windows[:, 1:]

    def _train_step(self, lr: float) -> tuple[float, float]:
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for i in range(self.accum):
            x, y = self._micro_batch()
            sync = contextlib.nullcontext()
            if self.distributed and i < self.accum - 1:
                sync = self.model.no_sync()  # all-reduce gradients once, on the last micro-step
            with sync:
                with _autocast(self.device, self.precision):
                    loss = cross_entropy(self.model(x), y) / self.accum
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            total += loss.item()
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        norm = clip_grad_norm(self.raw_model.parameters(), self.cfg.clip).item()
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        return self._mean(total), norm

    def _step_with_oom_recovery(self, lr: float) -> tuple[float, float]:
        state = self.generator.get_state()
        while True:
            try:
                return self._train_step(lr)
            except torch.cuda.OutOfMemoryError:
                if self.micro // self.world <= 1:
                    raise
                self.optimizer.zero_grad(set_to_none=True)
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                self.generator.set_state(state)  # redo the same global batch
                self.micro //= 2
                self.accum *= 2
                self.say(f"out of memory at step {self.step + 1}: micro-batch halved to {self.micro} "
                         f"sequences, accumulating {self.accum} (effective batch unchanged)")

    def _peak_flops(self) -> float:
        if self.peak is None:
            from lecture_utils.bench import peak_flops

            dtype = "fp32" if self.precision == "fp32" else self.precision
            self.peak = peak_flops(self.device, dtype, n=1024 if self.device.type == "cpu" else 8192,
                                   min_run_time=0.05).flops_per_s
        return self.peak

    def run(self) -> list[dict]:
        """Train from ``self.step`` to ``cfg.steps``; return the log records of this call."""
        cfg, records = self.cfg, []
        self.say(f"training {cfg.config} ({sum(p.numel() for p in self.raw_model.parameters()):,} params) "
                 f"on {self.device} x{self.world}, {self.precision}, optimizer: "
                 + ("lecture_utils.optim.AdamW" if self.optimizer_name == "lecture" else "torch.optim.AdamW(fused=True)")
                 + (" sharded by ZeroRedundancyOptimizer" if cfg.zero1 else "")
                 + (f", resumed at step {self.step}" if self.step else ""))
        peak = self._peak_flops()
        bar = None
        if self.progress and self.rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.steps, initial=self.step, desc="train", unit="step")
        while self.step < cfg.steps:
            lr = cosine_lr(self.step, cfg.lr, cfg.min_lr, cfg.warmup, cfg.steps)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            loss, norm = self._step_with_oom_recovery(lr)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            self.step += 1
            record = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm,
                      "tokens_per_s": cfg.batch_size * self.seq_len / seconds,
                      "mfu": self.flops_per_step / seconds / (peak * self.world)}
            if cfg.val_every and (self.step % cfg.val_every == 0 or self.step == cfg.steps):
                record["val_loss"] = self._mean(_evaluate(self.model, self.val_data, cfg, self.seq_len,
                                                          self.device, self.precision))
            records.append(record)
            if self.rank == 0:
                with open(self.out / LOG, "a") as f:
                    f.write(json.dumps(record) + "\n")
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}")
            if (cfg.ckpt_every and self.step % cfg.ckpt_every == 0) or self.step == cfg.steps:
                self.save()
        if bar is not None:
            bar.close()
        self._write_summary(records)
        return records

    def _write_summary(self, records: list[dict]) -> None:
        """``summary.json``: where the run ended and each process's optimizer-state bytes."""
        from lecture_utils.optim import state_bytes

        local = state_bytes(self.optimizer.optim if self.cfg.zero1 else self.optimizer)
        per_rank = [local]
        if self.distributed:
            per_rank = [None] * self.world
            dist.all_gather_object(per_rank, local)
        if self.rank == 0:
            summary = {"step": self.step, "world_size": self.world, "zero1": self.cfg.zero1,
                       "optimizer_state_bytes_per_rank": per_rank,
                       "params": sum(p.numel() for p in self.raw_model.parameters()),
                       "final_loss": records[-1]["loss"] if records else None}
            (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    def save(self) -> None:
        save_checkpoint(self.out / CHECKPOINT, self.raw_model, self.optimizer, self.step,
                        generator=self.generator, config=dataclasses.asdict(self.model_cfg),
                        train=dataclasses.asdict(self.cfg))
        if self.distributed:
            dist.barrier()


# --- command line -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from lecture_utils.cli import _Parser

    p = _Parser(prog="python -m lecture_utils.train", description=__doc__.splitlines()[0])
    d = TrainConfig()
    p.add_argument("--config", choices=list(CONFIGS), default=d.config, help="model size (default tiny)")
    p.add_argument("--steps", type=int, required=True, help="optimizer steps in all")
    p.add_argument("--out", type=Path, required=True, help="folder for checkpoint.pt and log.jsonl")
    p.add_argument("--ckpt-every", type=int, default=d.ckpt_every, help="checkpoint every K steps (and at the end)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="sequences per optimizer step")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default: the model's)")
    p.add_argument("--accum", type=int, default=d.accum, help="micro-batches per step")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--min-lr", type=float, default=d.min_lr)
    p.add_argument("--warmup", type=int, default=d.warmup)
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--clip", type=float, default=d.clip)
    p.add_argument("--precision", choices=PRECISIONS, default=None, help="autocast dtype (default bf16 on CUDA)")
    p.add_argument("--optimizer", choices=("lecture", "fused"), default=None,
                   help="lecture_utils.optim.AdamW, or torch's fused AdamW (CUDA; the default there)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms(True)")
    p.add_argument("--val-every", type=int, default=d.val_every)
    p.add_argument("--zero1", action="store_true", help="shard AdamW state (ZeroRedundancyOptimizer; torchrun)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cfg = TrainConfig(config=args.config, steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len,
                      accum=args.accum, lr=args.lr, min_lr=args.min_lr, warmup=args.warmup,
                      weight_decay=args.weight_decay, clip=args.clip, precision=args.precision, seed=args.seed,
                      deterministic=args.deterministic, val_every=args.val_every, ckpt_every=args.ckpt_every,
                      device=args.device, optimizer=args.optimizer, zero1=args.zero1, compile=args.compile)
    try:
        cfg.validate()
        trainer = Trainer(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    except FileNotFoundError as err:
        parser.error(f"{err} (nothing to resume)")
    records = trainer.run()
    if records:
        last = records[-1]
        trainer.say(f"step {last['step']}: loss {last['loss']:.4f}"
                    + (f", val {last['val_loss']:.4f}" if "val_loss" in last else "")
                    + f"; checkpoint {args.out / CHECKPOINT}")
    if trainer.distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
