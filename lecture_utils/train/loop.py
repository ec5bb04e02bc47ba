"""The training loop (§8): the lesson's pieces, and the ``Trainer`` that runs them in production.

``cosine_lr``, ``clip_grad_norm``, ``lm_loss`` (F.cross_entropy), ``evaluate`` and
``train_step`` are lesson code from notebook 08 (exported below). ``Trainer`` is machinery
built from them: DDP and ZeRO-1, autocast, recovery from CUDA out-of-memory,
``torch.compile``, MFU, logging and checkpoints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import signal
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from lecture_utils.console import describe
from lecture_utils.data import data_dir, load_tokens, sample_windows
from lecture_utils.device import seed_all
from lecture_utils.dtypes import lookup
from lecture_utils.flops import transformer_flops
from lecture_utils.models import GPT, GPTConfig, get_config
from lecture_utils.optim import AdamW
from lecture_utils.train.checkpoint import (
    load_checkpoint,
    read_checkpoint,
    rng_state,
    save_checkpoint,
)
from lecture_utils.train.config import TrainConfig
from lecture_utils.train.resolve import check_fits, launched_by_torchrun, start_process
from lecture_utils.train.run import (
    CHECKPOINT,
    LOG,
    SUMMARY,
    RunError,
    RunFolder,
    check_out,
    payload_digest,
)

# What --resume compares with the checkpoint's run (besides the model's shape): a change is
# refused unless allow_config_change (then warned about and logged). --steps may grow.
OPTIMISATION_FIELDS = ("lr", "min_lr", "warmup", "weight_decay", "clip", "batch_size", "accum", "seed",
                       "deterministic")


# >>> lesson code from py_src/08_training_loop.py: edit it there, then `make export`
def cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Linear warm-up from 0 to max_lr over warmup_steps, cosine decay to min_lr at
    total_steps, min_lr after. (TrainConfig checks the arguments.)"""
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)  # 0 -> 1 over the decay
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """Scale all gradients in place so their global L2 norm is at most max_norm; return the
    norm before clipping. Parameters without a gradient are skipped."""
    assert max_norm > 0, "max_norm <= 0 would zero or flip every gradient"
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # shrink, never grow
    for g in grads:
        g.mul_(coef.to(g.device, g.dtype))
    return total


def lm_loss(logits, targets):
    """Our cross_entropy's value, by F.cross_entropy (fp32, over every position)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def evaluate(model, batches) -> float:
    """Mean loss over (x, y) batches, in eval mode and without building a graph."""
    model.eval()
    with torch.no_grad():
        losses = [lm_loss(model(x), y).item() for x, y in batches]
    model.train()
    return sum(losses) / len(losses)


def train_step(model, optimizer, batches, lr: float, clip: float, scaler=None) -> tuple[float, float]:
    """One optimizer step over the micro-batches ``batches`` (a list of (x, y)).
    Returns (mean loss, gradient norm before clipping)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for x, y in batches:
        loss = lm_loss(model(x), y) / len(batches)
        (scaler.scale(loss) if scaler else loss).backward()  # gradients add up over the micro-batches
        total += loss.item()
    if scaler:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
    norm = clip_grad_norm(model.parameters(), clip)
    if scaler:
        scaler.step(optimizer)  # skipped if a gradient overflowed to inf
        scaler.update()
    else:
        optimizer.step()
    return total, norm.item()
# <<< lesson code from py_src/08_training_loop.py


# --- the machinery ------------------------------------------------------------------


class LossNotFinite(RunError):
    """The loss became inf or NaN: the run stops (exit 1) and keeps its last finite checkpoint."""


class _Autocast(torch.nn.Module):
    """Runs the model's forward under ``torch.autocast`` (the backward follows its dtypes)."""

    def __init__(self, model: torch.nn.Module, device_type: str, precision: str):
        super().__init__()
        self.model, self.device_type = model, device_type
        self.dtype = lookup(precision).dtype

    def forward(self, x):
        with torch.autocast(device_type=self.device_type, dtype=self.dtype):
            return self.model(x)


class _MicroBatches:
    """One step's micro-batches, drawn as the loop asks for them. Under DDP every one but the
    last runs inside ``no_sync()``: gradients are all-reduced once per step, not per micro-batch."""

    def __init__(self, trainer: Trainer):
        self.trainer = trainer

    def __len__(self) -> int:
        return self.trainer.accum

    def __iter__(self):
        t = self.trainer
        for i in range(t.accum):
            local = t.distributed and i < t.accum - 1
            with t.model.no_sync() if local else contextlib.nullcontext():
                yield t._micro_batch()


class Trainer:
    """One training run: model, optimizer, data, and the loop. ``run()`` does the steps."""

    def __init__(self, cfg: TrainConfig, out: str | Path, *, resume: bool = False, progress: bool = True,
                 model_overrides: dict | None = None, train_data=None, val_data=None, echo=print,
                 overwrite: bool = False, allow_config_change: bool = False):
        cfg.validate()
        self.cfg, self.out, self.progress, self.echo = cfg, check_out(out), progress, echo
        if cfg.zero1 and not launched_by_torchrun():
            raise ValueError("--zero1 shards optimizer state across processes: launch with torchrun")
        process = start_process(cfg.device)  # cuda:N made current, then NCCL under torchrun
        device = self.device = process.device
        self.rank, self.world, self.distributed = process.rank, process.world, process.distributed
        self.precision = cfg.precision or ("bf16" if device.type == "cuda" else "fp32")

        seed_all(cfg.seed, cfg.deterministic)
        # SDPA attention: the Trainer's FLOPs come from the analytic count (transformer_flops), not from
        # FlopCounterMode, so the fused kernel costs no accounting; the notebooks that count keep "math".
        self.model_cfg: GPTConfig = get_config(cfg.config, **{"attention": "sdpa", **(model_overrides or {})})
        self.seq_len = cfg.seq_len or self.model_cfg.seq_len
        if self.seq_len > self.model_cfg.seq_len:
            raise ValueError(f"seq_len {self.seq_len} > the {cfg.config} model's {self.model_cfg.seq_len}")
        self.micro = cfg.batch_size // cfg.accum  # sequences per micro-step, summed over processes
        if self.micro % self.world:
            raise ValueError(f"micro-batch {self.micro} is not divisible by {self.world} processes")
        self.accum = cfg.accum
        check_fits(self.model_cfg, self.micro // self.world, self.seq_len, device, batch_size=cfg.batch_size,
                   accum=cfg.accum)  # before anything is allocated
        self.train_data = train_data if train_data is not None else self._tokens("train")
        self.val_data = val_data if val_data is not None else self._tokens("val")

        self.optimizer_name = cfg.optimizer or ("fused" if device.type == "cuda" else "lecture")
        if self.optimizer_name == "fused" and device.type != "cuda":
            raise ValueError("the fused AdamW runs on CUDA only; use --optimizer lecture")
        self.config_change: dict | None = None  # --allow-config-change: goes into the next log record
        if resume:  # another model or other settings are refused before anything is built
            self._check_resume(self._resume_payload(), allow_config_change)

        model = GPT(self.model_cfg).to(device)
        self.raw_model = model
        if self.distributed:
            ids = [device.index] if device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.model = torch.compile(model) if cfg.compile else model
        # what train_step and evaluate call: the model, under autocast unless fp32
        self.step_model = self.model if self.precision == "fp32" else _Autocast(self.model, device.type,
                                                                              self.precision)
        kw = {"lr": cfg.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": cfg.weight_decay}
        opt_cls = AdamW if self.optimizer_name == "lecture" else torch.optim.AdamW
        if self.optimizer_name == "fused":
            kw["fused"] = True
        if cfg.zero1:
            from torch.distributed.optim import ZeroRedundancyOptimizer

            self.optimizer = ZeroRedundancyOptimizer(self.raw_model.parameters(), optimizer_class=opt_cls, **kw)
        else:
            self.optimizer = opt_cls(self.raw_model.parameters(), **kw)
        self.scaler = torch.amp.GradScaler(device.type) if self.precision == "fp16" else None
        self.generator = torch.Generator().manual_seed(cfg.seed + 1)  # data order, checkpointed
        self.step = 0
        self.flops_per_step = 3 * transformer_flops(**self.model_cfg.flops_kwargs(self.seq_len)) * cfg.batch_size
        self.peak = cfg.peak_flops  # None: measured (CPU, MPS) or from the spec sheet (CUDA) on first use
        self.peak_source = "given by --peak-flops" if cfg.peak_flops else None  # what MFU divides by
        self.saved_step: int | None = None  # the step of the checkpoint on disk
        self.logged: list[dict] = []  # the log's records kept on resume
        self.requested: int | None = None  # the first SIGINT/SIGTERM this process received
        self.interrupted: int | None = None  # the signal that stopped run(), agreed by every rank
        self.log_error: RunError | None = None  # rank 0's failed append, raised once every rank knows
        # rank 0 owns --out: the lock, the log, the checkpoints (lecture_utils/train/run.py)
        self.folder = RunFolder(self.out, echo=self.say) if self.rank == 0 else None
        try:
            self._agree(self._open_folder(resume, overwrite))
            if resume:
                self._load(self.out / CHECKPOINT)
        except BaseException:
            self.close()
            raise

    def _tokens(self, split: str):
        """The split's token file, checked against the model's vocabulary; errors name the file."""
        path = data_dir() / "tokens" / f"{split}.bin"  # read now, so that a LECTURE_DATA set after import counts
        try:
            return load_tokens(path, vocab_size=self.model_cfg.vocab_size)  # a larger vocabulary: refused
        except OSError as err:  # missing (its message says what to run), unreadable: names the file
            reason = f"{describe(err)}: {err.filename or path}" if err.strerror else str(err)
            raise ValueError(f"cannot read the {split} tokens: {reason}") from None

    def _resume_payload(self) -> dict:
        path = self.out / CHECKPOINT
        if not path.is_file():
            raise ValueError(RunFolder(self.out).nothing_to_resume())
        return read_checkpoint(path)  # a file it cannot use: one ValueError naming it and why

    def _open_folder(self, resume: bool, overwrite: bool) -> BaseException | None:
        """Rank 0 takes --out: its lock, stale temporaries, the previous run (moved aside with
        --overwrite, refused without --resume) and a fresh log. Returns what refused it, if anything."""
        if self.folder is None:
            return None
        try:
            if overwrite:
                self.folder.refuse_foreign()  # before the lock: a folder holding anything else stays as it is
            self.folder.acquire()
            self.folder.clean_stale_temporaries()
            if resume:
                return None
            if overwrite:
                moved = self.folder.move_aside()
                if moved:
                    self.say(f"--overwrite: moved the previous run to {moved}")
            else:
                self.folder.refuse_existing()
            self.folder.write(LOG, "", what="start the log")
        except (ValueError, RunError, OSError) as err:
            return err
        return None

    def _agree(self, error: BaseException | None) -> None:
        """What only rank 0 did (opening --out, writing a checkpoint), told to every rank: a failure
        ends them all with the same error (its one line printed by rank 0 only, see cli.py)."""
        if self.distributed:
            outcome = [None if error is None else (isinstance(error, RunError), str(error))]
            dist.broadcast_object_list(outcome, src=0)
            if error is None and outcome[0] is not None:
                error = (RunError if outcome[0][0] else ValueError)(outcome[0][1])
        if error is not None:
            raise error

    def _load(self, path: Path) -> None:
        """Resume: weights, optimizer, step and every RNG from ``path``; a checkpoint that does not fit
        this model and optimizer is one ValueError naming the file (nothing is written before this)."""
        try:
            self.step = load_checkpoint(path, self.raw_model, self.optimizer, generator=self.generator)
        except ValueError as err:
            if str(path) in str(err):  # read_checkpoint's: it names the file already
                raise
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"{path} cannot be loaded into this run: {reason[:300]}") from None
        except (RuntimeError, KeyError, IndexError, TypeError, AttributeError) as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"{path} cannot be loaded into this run's {self.cfg.config} model and optimizer: "
                             f"{reason[:300]}") from None
        self.saved_step = self.step
        if self.folder:
            self.folder.saved = self.step
            self.logged = self.folder.clean_log(self.step)  # torn last line dropped, atomic

    # -- helpers

    def say(self, message: str) -> None:
        if self.rank == 0:
            self.echo(message)

    def close(self) -> None:
        """Release --out's lock (also released when the process exits)."""
        if self.folder:
            self.folder.release()

    def _resolved(self) -> dict:
        return {"seq_len": self.seq_len, "precision": self.precision, "optimizer": self.optimizer_name}

    def _check_resume(self, payload: dict, allow_change: bool) -> None:
        """The checkpoint's run against this one: another model is refused; changed optimisation
        settings are refused unless ``allow_change`` (then one warning, and logged)."""
        extra = payload.get("extra") if isinstance(payload.get("extra"), dict) else {}
        path = self.out / CHECKPOINT
        if payload["step"] > self.cfg.steps:  # --steps is the run's total: fewer than done is no setting change
            raise ValueError(f"{path} is at step {payload['step']}, beyond --steps {self.cfg.steps} (the run's total "
                             f"number of steps): pass --steps {payload['step']} or more to continue it")
        saved_model, model = extra.get("config"), json.loads(json.dumps(dataclasses.asdict(self.model_cfg)))
        if isinstance(saved_model, dict):  # math and SDPA attention compute the same model: either resumes
            saved_model = {k: v for k, v in saved_model.items() if k != "attention"}
            model.pop("attention")
        if isinstance(saved_model, dict) and json.loads(json.dumps(saved_model)) != model:
            diff = ", ".join(f"{k} {saved_model.get(k)} vs {v}" for k, v in model.items() if saved_model.get(k) != v)
            was = (extra.get("train") or {}).get("config", "?")
            raise ValueError(f"{path} holds another model than --config {self.cfg.config} ({diff}): resume "
                             f"with the run's own --config {was}")
        saved = {**{k: v for k, v in (extra.get("train") or {}).items() if k in OPTIMISATION_FIELDS},
                 **(extra.get("resolved") or {})}
        if getattr(self.cfg, "default_warmup", False) and "warmup" in saved:  # --warmup not given: the
            self.cfg.warmup = min(saved["warmup"], self.cfg.steps)  # run's own, not min(20, the new --steps)
        now = {**{k: getattr(self.cfg, k) for k in OPTIMISATION_FIELDS}, **self._resolved()}
        changed = {k: [saved[k], now[k]] for k in now if k in saved and saved[k] != now[k]}
        if not changed:
            return
        text = ", ".join(f"{k.replace('_', '-')} {a} -> {b}" for k, (a, b) in changed.items())
        if not allow_change:
            raise ValueError(f"--resume with settings that differ from {path}'s run ({text}): rerun with the "
                             "run's own values, or pass --allow-config-change to continue with the new ones")
        self.say(f"warning: resuming with changed settings: {text} (recorded in {LOG})")
        self.config_change = changed

    @contextlib.contextmanager
    def _stop_on_signals(self):
        """SIGINT/SIGTERM ask the loop to stop after the current step, where run() saves a checkpoint;
        further signals are held (ignored) until then, so a second Ctrl-C cannot lose the save.
        Under torchrun, which forwards SIGTERM to every process, the ranks agree on the step
        (``_sync_flags``). Handlers are installed in the main thread only (Python's rule)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum, frame):
            if self.requested is None:
                self.requested = signum

        old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)

    def _sync_flags(self) -> None:
        """At a step boundary: every rank's stop request and rank 0's log failure, agreed by all
        (the largest signal wins), so that every rank stops, or fails, at the same step."""
        flags = [self.requested or 0, int(self.log_error is not None)]
        if self.distributed:
            t = torch.tensor(flags, device=self.device if self.device.type == "cuda" else "cpu")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            flags = [int(x) for x in t.tolist()]
        if flags[1]:
            raise self.log_error or RunError("stopped: rank 0 could not append to the log")
        self.interrupted = flags[0] or None

    def _mean(self, value: float) -> float:
        if not self.distributed:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(t)
        return t.item() / self.world

    def _micro_batch(self):
        """The next micro-batch of the *global* batch; each process keeps its own rows."""
        windows = sample_windows(self.train_data, self.micro, self.seq_len, self.generator,
                                 pin_memory=self.device.type == "cuda")  # one int64 copy, pinned for the GPU
        per_rank = self.micro // self.world
        windows = windows[self.rank * per_rank:(self.rank + 1) * per_rank].to(self.device, non_blocking=True)
        return windows[:, :-1], windows[:, 1:]

    def _val_batches(self):
        """The same validation windows every time (their own fixed generator)."""
        generator = torch.Generator().manual_seed(10_000 + self.cfg.seed)
        for _ in range(self.cfg.val_batches):
            windows = sample_windows(self.val_data, self.cfg.batch_size // self.cfg.accum, self.seq_len,
                                     generator).to(self.device)
            yield windows[:, :-1], windows[:, 1:]

    def _step_with_oom_recovery(self, lr: float) -> tuple[float, float]:
        state = self.generator.get_state()
        while True:
            try:
                loss, norm = train_step(self.step_model, self.optimizer, _MicroBatches(self), lr, self.cfg.clip,
                                        self.scaler)
                return self._mean(loss), norm
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
        """The FLOP/s that MFU divides by: given, a GPU's dense spec-sheet peak, or (CPU, MPS, a GPU
        missing from the table) the best matmul measured here, which makes MFU a fraction of *that*."""
        if self.peak is None:
            from lecture_utils.bench import peak_flops

            peak = peak_flops(self.device, self.precision, n=1024 if self.device.type == "cpu" else 8192,
                              min_run_time=0.05)
            self.peak = peak.flops_per_s
            self.peak_source = (f"{peak.source}; MFU is relative to that matmul, not a datasheet peak"
                                if peak.is_measured else peak.source)
        self.peak_source = self.peak_source or "set by the caller"
        return self.peak

    def run(self) -> list[dict]:
        """Train from ``self.step`` to ``cfg.steps``; return the log records of this call.
        SIGINT/SIGTERM stop it after the current step, with a checkpoint saved there."""
        with self._stop_on_signals():
            return self._run()

    def _run(self) -> list[dict]:
        cfg, records = self.cfg, []
        if self.step >= cfg.steps:
            self.say(f"{self.out} is already at step {self.step} of --steps {cfg.steps}: nothing to train "
                     "(pass a larger --steps to continue it)")
            self._write_summary(records)
            return records
        peak = self._peak_flops()
        self.say(f"training {cfg.config} ({sum(p.numel() for p in self.raw_model.parameters()):,} params) "
                 f"on {self.device} x{self.world}, {self.precision}, optimizer: "
                 + ("lecture_utils.optim.AdamW" if self.optimizer_name == "lecture" else "torch.optim.AdamW(fused=True)")
                 + (" sharded by ZeroRedundancyOptimizer" if cfg.zero1 else "")
                 + (f", resumed at step {self.step}" if self.step else "")
                 + f"; MFU against {peak / 1e12:.4g} TFLOP/s per device ({self.peak_source})")
        bar = None
        if self.progress and self.rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.steps, initial=self.step, desc="train", unit="step")
        try:
            self._sync_flags()  # a signal that came before the first step
            self._loop(records, peak, bar)
        finally:
            if bar is not None:
                bar.close()
        if self.interrupted is not None:
            if self.step != self.saved_step and self.step > 0:
                self.save()
            name = signal.Signals(self.interrupted).name
            self.say(f"stopped by {name} at step {self.step} of {cfg.steps}: " +
                     (f"checkpoint {self.out / CHECKPOINT} is at step {self.step}; continue with --resume"
                      if self.step else "no step done, nothing saved"))
        self._write_summary(records)
        return records

    def _loop(self, records: list[dict], peak: float, bar) -> None:
        cfg = self.cfg
        while self.step < cfg.steps and self.interrupted is None:
            lr = cosine_lr(self.step, cfg.lr, cfg.min_lr, cfg.warmup, cfg.steps)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            loss, norm = self._step_with_oom_recovery(lr)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            if not math.isfinite(loss):  # the mean over the processes: every rank stops here
                raise LossNotFinite(self._not_finite(loss))
            self.step += 1
            record = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm,
                      "tokens_per_s": cfg.batch_size * self.seq_len / seconds,
                      "mfu": self.flops_per_step / seconds / (peak * self.world)}
            if cfg.val_every and (self.step % cfg.val_every == 0 or self.step == cfg.steps):
                record["val_loss"] = self._mean(evaluate(self.step_model, self._val_batches()))
            if self.config_change:  # --allow-config-change: the first resumed step records it
                record["config_change"], self.config_change = self.config_change, None
            records.append(record)
            if self.folder:
                try:
                    self.folder.append(record)
                except RunError as err:
                    self.log_error = err
            self._sync_flags()  # the signals and a failed append, agreed before anything is saved
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}")
            if (cfg.ckpt_every and self.step % cfg.ckpt_every == 0) or self.step == cfg.steps:
                self.save()

    def _not_finite(self, loss: float) -> str:
        lower = f"lower --lr (now {self.cfg.lr:g})"
        then = (f"{lower} and start over with --overwrite" if self.saved_step is None else
                f"{lower} and resume it with --allow-config-change, or start over with --overwrite")
        return (f"step {self.step + 1}: the loss is {loss} (not finite), so training stopped there and saved "
                f"nothing of it; " + (self.folder.kept() if self.folder else "the last checkpoint is kept")
                + f": {then}")

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
                       "peak_flops_per_device": self.peak, "peak_source": self.peak_source,
                       "final_loss": self._final_loss(records)}
            self.folder.write(SUMMARY, json.dumps(summary, indent=2) + "\n", what="write the summary")

    def _final_loss(self, records: list[dict]) -> float | None:
        """This call's last loss; for a run resumed at its end, the log's record of that step."""
        if records:
            return records[-1]["loss"]
        return next((r.get("loss") for r in reversed(self.logged) if r["step"] == self.step), None)

    def save(self) -> None:
        """Rank 0 writes the checkpoint (ZeRO-1 first gathers the optimizer's shards there); every
        rank learns whether it could (a full disk ends them all)."""
        if self.cfg.zero1:
            self.optimizer.consolidate_state_dict(to=0)
        error = None
        if self.rank == 0:
            model_state, optimizer_state = self.raw_model.state_dict(), self.optimizer.state_dict()
            digest = payload_digest(model_state, optimizer_state, self.step, rng_state(self.generator))
            try:
                self.folder.save(save_checkpoint, self.step, self.raw_model, self.optimizer, self.step,
                                 generator=self.generator, config=dataclasses.asdict(self.model_cfg),
                                 train=dataclasses.asdict(self.cfg), resolved=self._resolved(), sha256=digest)
            except RunError as err:
                error = err
        self._agree(error)
        self.saved_step = self.step
