"""The Trainer: resolve (lecture_utils/train/resolve.py) -> build (build.py) -> loop, around the
lesson's pieces from notebook 08 (loop.py: cosine_lr, train_step, evaluate).

``_loop`` is the notebook's loop with production's additions around it, not inside it: the
learning-rate schedule, timing and MFU, validation, the log, checkpoints, and the stop points
where a signal or a failure is agreed by every process.
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

from lecture_utils.language import _
from lecture_utils.train import loop
from lecture_utils.train.build import Interrupted, build, data_digests
from lecture_utils.train.checkpoint import (
    DIGEST,
    payload_digest,
    resume_from,
    rng_state,
    save_checkpoint,
)
from lecture_utils.train.config import TrainConfig
from lecture_utils.train.resolve import Process, check_settings, resolve, resolve_peak
from lecture_utils.train.run import (
    CHECKPOINT,
    SUMMARY,
    RunError,
    RunFolder,
    check_out,
    resume_payload,
)


class LossNotFinite(RunError):
    """The loss became inf or NaN: the run stops (exit 1) and keeps its last finite checkpoint."""


class Trainer:
    """One training run: its Plan, its Parts, and ``run()``, which does the steps."""

    def __init__(self, cfg: TrainConfig, out: str | Path, *, resume: bool = False, progress: bool = True,
                 model_overrides: dict | None = None, train_data=None, val_data=None, echo=print,
                 overwrite: bool = False, allow_config_change: bool = False):
        self.cfg, self.out, self.progress, self.echo = cfg, check_out(out), progress, echo
        payload = resume_payload(self.out) if resume else None  # a live run, another model, fewer steps: refused
        self.plan = resolve(cfg, model_overrides=model_overrides, saved=payload, data=data_digests(train_data, val_data))
        self.config_change = check_settings(payload, cfg, self.plan, self.out / CHECKPOINT, allow_config_change,
                                            self.say) if resume else None  # logged with the next step
        self.parts = build(self.plan, cfg, train_data=train_data, val_data=val_data)
        self.parts.batches.stop_requested = self._sync_flags  # asked between batches (build.Batches)
        self.step, self.saved_step, self.logged = 0, None, []  # logged: the log's records kept on resume
        self.peak, self.peak_source = cfg.peak_flops, "given by --peak-flops" if cfg.peak_flops else None
        self.requested = self.interrupted = self.log_error = None  # signals; rank 0's failed log append
        self.folder = RunFolder(self.out, echo=self.say) if self.plan.process.rank == 0 else None
        try:  # rank 0 owns --out (lock, log, checkpoints); every rank hears if it could not take it
            agree(self.plan.process, self.folder and self.folder.open(resume=resume, overwrite=overwrite,
                                                                      say=self.say))
            if resume:
                self._load()
        except BaseException:
            self.close()
            raise

    def say(self, message: str) -> None:
        if self.plan.process.rank == 0:
            self.echo(message)

    def close(self) -> None:
        """Release --out's lock (also released when the process exits)."""
        if self.folder:
            self.folder.release()

    def _load(self) -> None:
        """Weights, optimizer, step and every RNG from the checkpoint (nothing was written before)."""
        parts = self.parts
        self.step = self.saved_step = resume_from(self.out / CHECKPOINT, parts.raw_model, parts.optimizer,
                                                  parts.batches.generator, f"{self.cfg.config} model")
        if self.folder:
            self.folder.saved = self.step
            self.logged = self.folder.clean_log(self.step)  # torn last line dropped, atomic

    def _step_with_oom_recovery(self, lr: float) -> tuple[float, float]:
        """The lesson's train_step; on CUDA out of memory, the same global batch again in half-size
        micro-batches (the effective batch is unchanged)."""
        parts, batches = self.parts, self.parts.batches
        state = batches.generator.get_state()
        while True:
            try:
                loss, norm = loop.train_step(parts.step_model, parts.optimizer, batches, lr, self.cfg.clip,
                                             parts.scaler)
                return mean(self.plan.process, loss), norm
            except torch.OutOfMemoryError:
                parts.optimizer.zero_grad(set_to_none=True)
                if not batches.halve():
                    raise
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                batches.generator.set_state(state)  # redo the same global batch
                self.say(_("out of memory at step {step}: micro-batch halved to {micro} sequences, accumulating "
                           "{accum} (effective batch unchanged)").format(step=self.step + 1, micro=batches.micro,
                                                                       accum=batches.accum))

    def _peak_flops(self) -> float | None:
        """What MFU divides by (resolve.resolve_peak), resolved once, on the first run(); None: no MFU."""
        if self.peak is None and self.peak_source is None:
            self.peak, self.peak_source = resolve_peak(self.plan)
        self.peak_source = self.peak_source or "set by the caller"
        return self.peak

    def run(self) -> list[dict]:
        """Train from ``self.step`` to ``cfg.steps``; return the log records of this call.
        SIGINT/SIGTERM/SIGHUP stop it at the next batch, with a checkpoint saved at the last step trained."""
        cfg, records = self.cfg, []
        with StopSignals(self):
            if self.step < cfg.steps:
                peak = self._peak_flops()
                self.say(first_line(self, peak))
                self._sync_flags()  # a signal that came before the first step
                with progress_bar(self) as bar, contextlib.suppress(Interrupted):  # (a step cut short: dropped)
                    self._loop(records, peak, bar)
            else:
                self.say(f"{self.out} is already at step {self.step} of --steps {cfg.steps}: nothing to train "
                         "(pass a larger --steps to continue it)")
            if self.interrupted is not None:
                if self.step != self.saved_step and self.step > 0:
                    self.save()
                self.say(f"stopped by {signal.Signals(self.interrupted).name} at step {self.step} of {cfg.steps}: "
                         + (f"checkpoint {self.out / CHECKPOINT} is at step {self.step}; continue with --resume"
                            if self.step else "no step done, nothing saved"))
            write_summary(self, records)
        return records

    def _loop(self, records: list[dict], peak: float, bar) -> None:
        """Notebook 08's loop, a step at a time, with the log, validation and checkpoints after it."""
        cfg, plan = self.cfg, self.plan
        while self.step < cfg.steps and self.interrupted is None:
            lr = loop.cosine_lr(self.step, cfg.lr, cfg.min_lr, plan.warmup, cfg.steps)
            seconds, (loss, norm) = timed(plan.device, self._step_with_oom_recovery, lr)
            if not math.isfinite(loss):  # the mean over the processes: every rank stops here
                raise LossNotFinite(not_finite(self, loss))
            self.step += 1
            record = step_record(self.step, loss, lr, norm, seconds, plan, cfg, peak)
            if cfg.val_every and (self.step % cfg.val_every == 0 or self.step == cfg.steps):
                record_val_loss(self, record)
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

    def _sync_flags(self) -> bool:
        """At a step boundary (or between batches): every rank's stop request and rank 0's log failure,
        agreed by all (the largest signal wins), so that every rank stops, or fails, at the same place.
        Returns whether to stop."""
        flags = [self.requested or 0, int(self.log_error is not None)]
        if self.plan.process.distributed:
            t = torch.tensor(flags, device=self.plan.device if self.plan.device.type == "cuda" else "cpu")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            flags = [int(x) for x in t.tolist()]
        if flags[1]:
            raise self.log_error or RunError("stopped: rank 0 could not append to the log")
        self.interrupted = flags[0] or None
        return self.interrupted is not None

    def save(self) -> None:
        """Rank 0 writes the checkpoint (ZeRO-1 first gathers the optimizer's shards there); every
        rank learns whether it could (a full disk ends them all)."""
        parts, error = self.parts, None
        if self.cfg.zero1:
            parts.optimizer.consolidate_state_dict(to=0)
        if self.folder:
            try:
                self.folder.save(save_checkpoint, self.step, parts.raw_model, parts.optimizer, self.step,
                                 generator=parts.batches.generator, **checkpoint_extra(self))
            except RunError as err:
                error = err
        agree(self.plan.process, error)
        self.saved_step = self.step


# --- the pieces around the class ---------------------------------------------------------


def record_val_loss(trainer: Trainer, record: dict) -> None:
    """The lesson's evaluate into ``record["val_loss"]``; a stop signal cuts it short (the step is then
    logged and saved without it)."""
    parts = trainer.parts
    try:
        record["val_loss"] = mean(trainer.plan.process, loop.evaluate(parts.step_model, parts.batches.validation()))
    except Interrupted:
        parts.step_model.train()  # evaluate, left midway, did not switch back


def checkpoint_extra(trainer: Trainer) -> dict:
    """The run's settings that --resume relies on (model, training settings, resolved choices), and the
    sha256 of them with the rest of the checkpoint's payload, which read_checkpoint checks."""
    parts = trainer.parts
    settings = {"config": dataclasses.asdict(trainer.plan.model_cfg), "train": dataclasses.asdict(trainer.cfg),
                "resolved": trainer.plan.resolved()}
    digest = payload_digest(parts.raw_model.state_dict(), parts.optimizer.state_dict(), trainer.step,
                            rng_state(parts.batches.generator), settings)
    return {**settings, DIGEST: digest}


def not_finite(trainer: Trainer, loss: float) -> str:
    """The one line for a loss gone inf or NaN: which step, what was kept, what to do."""
    lower = f"lower --lr (now {trainer.cfg.lr:g})"
    then = (f"{lower} and start over with --overwrite" if trainer.saved_step is None else
            f"{lower} and resume it with --allow-config-change, or start over with --overwrite")
    kept = trainer.folder.kept() if trainer.folder else "the last checkpoint is kept"
    return (f"step {trainer.step + 1}: the loss is {loss} (not finite), so training stopped there and saved "
            f"nothing of it; {kept}: {then}")


def write_summary(trainer: Trainer, records: list[dict]) -> None:
    """``summary.json``: where the run ended, what MFU divided by, each process's optimizer state."""
    from lecture_utils.optim import state_bytes

    if not trainer.step:  # stopped before its first step: no summary, so that the next start is a plain one
        return
    optimizer, process = trainer.parts.optimizer, trainer.plan.process
    per_rank = [state_bytes(optimizer.optim if trainer.cfg.zero1 else optimizer)]
    if process.distributed:
        local, per_rank = per_rank[0], [None] * process.world
        dist.all_gather_object(per_rank, local)
    if trainer.folder:  # the final loss: this call's last, or, resumed at its end, the log's of that step
        final = records[-1]["loss"] if records else next(
            (r.get("loss") for r in reversed(trainer.logged) if r["step"] == trainer.step), None)
        summary = {"step": trainer.step, "world_size": process.world, "zero1": trainer.cfg.zero1,
                   "optimizer_state_bytes_per_rank": per_rank,
                   "params": sum(p.numel() for p in trainer.parts.raw_model.parameters()),
                   "peak_flops_per_device": trainer.peak, "peak_source": trainer.peak_source, "final_loss": final}
        trainer.folder.write(SUMMARY, json.dumps(summary, indent=2) + "\n", what="write the summary")


def agree(process: Process, error: BaseException | None) -> None:
    """What only rank 0 did (opening --out, writing a checkpoint), told to every rank: a failure ends
    them all with the same error (its one line printed by rank 0 only, see cli.py)."""
    if process.distributed:
        outcome = [None if error is None else (isinstance(error, RunError), str(error))]
        dist.broadcast_object_list(outcome, src=0)
        if error is None and outcome[0] is not None:
            error = (RunError if outcome[0][0] else ValueError)(outcome[0][1])
    if error is not None:
        raise error


def mean(process: Process, value: float) -> float:
    """``value`` averaged over the processes (the loss: every rank trained its share of the batch)."""
    if not process.distributed:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=process.device if process.device.type == "cuda" else "cpu")
    dist.all_reduce(t)
    return t.item() / process.world


def timed(device: torch.device, fn, *args):
    """(seconds, fn(*args)), with the GPU's queued work finished at both ends."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def step_record(step: int, loss: float, lr: float, norm: float, seconds: float, plan, cfg: TrainConfig,
                peak: float) -> dict:
    """One line of log.jsonl. MFU divides the step's FLOPs (the global batch) by every process's peak."""
    return {"step": step, "loss": loss, "lr": lr, "grad_norm": norm,
            "tokens_per_s": cfg.batch_size * plan.seq_len / seconds,
            "mfu": None if peak is None else plan.flops_per_step / seconds / (peak * plan.process.world)}


def first_line(trainer: Trainer, peak: float) -> str:
    cfg, plan = trainer.cfg, trainer.plan
    params = sum(p.numel() for p in trainer.parts.raw_model.parameters())
    optimizer = "lecture_utils.optim.AdamW" if plan.optimizer == "lecture" else "torch.optim.AdamW(fused=True)"
    return (_("training {config} ({params} params) on {device} x{world}, {precision}, optimizer: {optimizer}").format(
                config=cfg.config, params=f"{params:,}", device=plan.device, world=plan.process.world,
                precision=plan.precision, optimizer=optimizer)
            + (_(" sharded by ZeroRedundancyOptimizer") if cfg.zero1 else "")
            + (_(", resumed at step {step}").format(step=trainer.step) if trainer.step else "")
            + (_("; {why}: no MFU").format(why=trainer.peak_source) if peak is None
               else _("; MFU against {peak} TFLOP/s per device ({source})").format(
                   peak=f"{peak / 1e12:.4g}", source=trainer.peak_source)))


@contextlib.contextmanager
def progress_bar(trainer: Trainer):
    """tqdm's bar on rank 0 when asked for, else None."""
    if not (trainer.progress and trainer.folder):
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=trainer.cfg.steps, initial=trainer.step, desc="train", unit="step")
    try:
        yield bar
    finally:
        bar.close()


# SIGHUP: the terminal closed or the ssh connection dropped, which ends a run like SIGTERM does.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class StopSignals:
    """SIGINT/SIGTERM/SIGHUP ask the loop to stop at the next batch (build.Batches asks between a
    step's micro-batches and a validation's batches), where run() saves a checkpoint; further
    signals are held (ignored) until then, so a second Ctrl-C cannot lose the save. Under torchrun,
    which forwards SIGTERM to every process, the ranks agree on where (``Trainer._sync_flags``).
    Installed in the main thread only (Python's rule)."""

    def __init__(self, trainer: Trainer):
        self.trainer, self.old = trainer, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = {s: signal.signal(s, self._stop) for s in STOP_SIGNALS}
        return self

    def _stop(self, signum, frame):
        if self.trainer.requested is None:
            self.trainer.requested = signum

    def __exit__(self, *exc):
        for s, handler in self.old.items():
            signal.signal(s, handler)
