"""Build: from a Plan, the model (DDP, torch.compile and autocast around it), the optimizer,
the gradient scaler, the token data and the batches the loop draws."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lecture_utils.console import describe
from lecture_utils.data import data_dir, load_tokens, read_sidecar, sample_windows
from lecture_utils.models import GPT
from lecture_utils.optim import AdamW
from lecture_utils.train.config import TrainConfig
from lecture_utils.train.resolve import Plan


class Autocast(torch.nn.Module):
    """The model, its forward run under the plan's autocast context (``nullcontext()`` in fp32);
    the backward follows the forward's dtypes, outside it, as torch's AMP docs advise."""

    def __init__(self, model: torch.nn.Module, plan: Plan):
        super().__init__()
        self.model, self.plan = model, plan

    def forward(self, x):
        with self.plan.autocast():
            return self.model(x)


@dataclass
class Parts:
    raw_model: torch.nn.Module  # what the checkpoint saves
    model: torch.nn.Module  # wrapped in DDP (torchrun) and torch.compile (--compile)
    step_model: Autocast  # what train_step and evaluate call
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler  # enabled for fp16 only: elsewhere each of its calls does nothing
    batches: Batches


def build(plan: Plan, cfg: TrainConfig, *, train_data=None, val_data=None) -> Parts:
    device = plan.device
    raw = GPT(plan.model_cfg).to(device)
    ddp = None
    if plan.process.distributed:
        ddp = torch.nn.parallel.DistributedDataParallel(raw, device_ids=[device.index] if device.type == "cuda"
                                                         else None)
    model = ddp or raw
    if cfg.compile:
        model = torch.compile(model)
    kw = {"lr": cfg.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": cfg.weight_decay}
    opt_cls = AdamW if plan.optimizer == "lecture" else torch.optim.AdamW
    if plan.optimizer == "fused":
        kw["fused"] = True
    if cfg.zero1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        optimizer = ZeroRedundancyOptimizer(raw.parameters(), optimizer_class=opt_cls, **kw)
    else:
        optimizer = opt_cls(raw.parameters(), **kw)
    vocab = plan.model_cfg.vocab_size
    train = long_enough(train_data if train_data is not None else tokens("train", vocab), plan.seq_len, "train")
    val = val_data if val_data is not None else tokens("val", vocab)
    if cfg.val_every:  # validation draws windows too; with --val-every 0 it never does
        long_enough(val, plan.seq_len, "val")
    return Parts(raw, model, Autocast(model, plan), optimizer,
                 torch.amp.GradScaler(device.type, enabled=plan.precision == "fp16"),
                 Batches(plan, cfg, ddp, train, val))


def token_file(split: str) -> Path:
    return data_dir() / "tokens" / f"{split}.bin"  # read now, so that a LECTURE_DATA set after import counts


def data_digests(train_data=None, val_data=None) -> dict[str, str | None]:
    """What identifies the token data a run trains on (its sidecars' sha256, which ``load_tokens``
    checks against the files), for the checkpoint; None for data given as arrays, or unreadable
    (``tokens`` then says why)."""
    digests = {}
    for split, given in (("train", train_data), ("val", val_data)):
        digest = None
        if given is None:
            try:
                digest = read_sidecar(token_file(split).with_suffix(".json"))["sha256"]
            except (OSError, ValueError):
                pass
        digests[f"{split}_tokens"] = digest
    return digests


def long_enough(data, seq_len: int, split: str):
    """``data``, if one window of ``seq_len`` + 1 tokens fits in it; else one line naming it (ValueError)."""
    if len(data) < seq_len + 1:
        where = f"{data.filename} " if isinstance(data, np.memmap) and data.filename else ""
        raise ValueError(f"the {split} tokens {where}hold {len(data):,}, fewer than the {seq_len + 1:,} that one "
                         f"window of --seq-len {seq_len} needs (seq_len + 1: the targets are the inputs shifted by "
                         "one): prepare it from more text, or lower --seq-len")
    return data


def tokens(split: str, vocab_size: int) -> np.memmap:
    """The split's token file, checked against the model's vocabulary; errors name the file."""
    path = token_file(split)
    try:
        return load_tokens(path, vocab_size=vocab_size)  # a larger vocabulary: refused
    except OSError as err:  # missing (its message says what to run), unreadable: names the file
        reason = f"{describe(err)}: {err.filename or path}" if err.strerror else str(err)
        raise ValueError(f"cannot read the {split} tokens: {reason}") from None


class Interrupted(Exception):
    """A stop signal came between two batches of a step or of a validation: leave them at once."""


class Batches:
    """The token windows a step draws: ``accum`` micro-batches of the global batch, each process
    keeping its own rows. The data order is one generator, saved in every checkpoint.

    ``stop_requested`` (the Trainer's: a stop signal, agreed by every process) is asked before each
    batch but a step's first (the step boundary has just asked): a signal ends a long validation or
    a step of many micro-batches within one batch, with ``Interrupted``."""

    def __init__(self, plan: Plan, cfg: TrainConfig, ddp, train, val):
        self.plan, self.cfg, self.ddp, self.train, self.val = plan, cfg, ddp, train, val
        self.micro, self.accum = plan.micro, cfg.accum  # halved / doubled by the OOM recovery
        self.generator = torch.Generator().manual_seed(cfg.seed + 1)
        self.stop_requested = lambda: False

    def __len__(self) -> int:
        return self.accum

    def __iter__(self):
        """One step's micro-batches. Under DDP all but the last skip the gradient all-reduce
        (``require_backward_grad_sync``): gradients are reduced once per step."""
        state = self.generator.get_state()
        for i in range(self.accum):
            if i and self.stop_requested():  # the step is dropped, as if never begun (its gradients are unused)
                self.generator.set_state(state)  # so that a resume draws its batches again
                raise Interrupted
            if self.ddp is not None:
                self.ddp.require_backward_grad_sync = i == self.accum - 1
            yield self._draw()

    def _draw(self):
        process, pin = self.plan.process, self.plan.device.type == "cuda"  # pinned: the copy runs async
        windows = sample_windows(self.train, self.micro, self.plan.seq_len, self.generator, pin_memory=pin)
        per_rank = self.micro // process.world
        windows = windows[process.rank * per_rank:(process.rank + 1) * per_rank]
        windows = windows.to(self.plan.device, non_blocking=True)
        return windows[:, :-1], windows[:, 1:]

    def validation(self):
        """The same validation windows every time (their own fixed generator)."""
        generator = torch.Generator().manual_seed(10_000 + self.cfg.seed)
        for _ in range(self.cfg.val_batches):
            if self.stop_requested():
                raise Interrupted
            windows = sample_windows(self.val, self.cfg.batch_size // self.cfg.accum, self.plan.seq_len, generator)
            windows = windows.to(self.plan.device)
            yield windows[:, :-1], windows[:, 1:]

    def halve(self) -> bool:
        """Out of memory: the same global batch in twice as many, half-size micro-batches.
        False when a micro-batch is one sequence per process already."""
        if self.micro // self.plan.process.world <= 1:
            return False
        self.micro //= 2
        self.accum *= 2
        return True

