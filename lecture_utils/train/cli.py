"""The command line, generated from ``TrainConfig``: one ``--flag`` per field, plus where to write.

    python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny [--ckpt-every 50] [--resume]
    python -m lecture_utils.train ... --out runs/tiny --overwrite   # start over; the old run -> runs/tiny/previous-1/
    torchrun --nproc_per_node=2 -m lecture_utils.train --config tiny --steps 200 --out runs/ddp [--zero1]
    python -m lecture_utils.train plot runs/tiny   # runs/tiny/curves.png from runs/tiny/log.jsonl

Exit codes: 0 done; 2 a usage error (bad value, --out held by another trainer or holding a run
without --resume/--overwrite, a corrupt checkpoint, a resume with another config); 1 a fault
while writing (disk full, no permission: the last checkpoint is intact); 130/143 stopped by
SIGINT/SIGTERM and 129 SIGHUP (a closed terminal), within a batch (validation included), after saving
a checkpoint at the last step trained (resume it with --resume), or saying that no step was.
``plot`` is recognised as the first argument only, so the training command line is unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import typing
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist

from lecture_utils.console import describe, guarded_output
from lecture_utils.train.config import TrainConfig
from lecture_utils.train.resolve import launched_by_torchrun
from lecture_utils.train.run import CHECKPOINT, CURVES, LOG, RunError, odd_file, read_log
from lecture_utils.train.trainer import Trainer

_PLOTTED = ("step", "loss", "lr", "tokens_per_s")  # what every record must hold to be drawn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse would print the usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _out(text: str) -> Path:
    if not text.strip():  # Path("") would quietly mean the current directory
        raise argparse.ArgumentTypeError("empty: name a folder for the run, e.g. --out runs/tiny")
    return Path(text)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m lecture_utils.train",
                description="Train the lecture's GPT (§8): seeds, warm-up + cosine LR, clipping, "
                            "accumulation, autocast, validation, atomic checkpoints, OOM recovery.",
                epilog="python -m lecture_utils.train plot OUT  draws OUT/log.jsonl (loss, learning rate, "
                       "tokens/s) into OUT/curves.png")
    p.add_argument("--out", type=_out, required=True, help="folder for checkpoint.pt and log.jsonl")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--overwrite", action="store_true",
                   help="start over in an OUT that holds a run: moves it to OUT/previous-N/ (deletes nothing)")
    p.add_argument("--allow-config-change", action="store_true",
                   help="--resume with other optimisation settings (lr, batch size, ...): warn and log, not refuse")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    hints = typing.get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        flag, kind, help_ = "--" + f.name.replace("_", "-"), hints[f.name], f.metadata["help"]
        if kind is bool:
            p.add_argument(flag, action="store_true", help=help_)
            continue
        base = next(t for t in typing.get_args(kind) or (kind,) if t is not type(None))  # int | None -> int
        if f.default is not None and not f.metadata.get("required"):
            help_ += f" (default: {f.default})"
        p.add_argument(flag, type=base, default=f.default, required=f.metadata.get("required", False),
                       help=help_)
    return p


def plot(argv: list[str]) -> int:
    """``plot OUT``: OUT/curves.png from OUT/log.jsonl. A missing folder or log, or a log that is
    empty, torn or lacks a plotted field, is one line and exit 2; an existing PNG is then untouched."""
    parser = _Parser(prog="python -m lecture_utils.train plot",
                     description="Draw a run's train/validation loss, learning rate and tokens/s "
                                 f"from OUT/{LOG} into OUT/{CURVES}.")
    parser.add_argument("out", type=Path, metavar="OUT", help="a run folder (the trainer's --out)")
    out = parser.parse_args(argv).out
    log = out / LOG
    if not out.is_dir():
        parser.error(f"{out} is not a folder (pass a run's --out)")
    odd = odd_file(log, "log") or odd_file(out / CURVES, "figure")  # a folder, or a link the figure would replace
    if odd:
        parser.error(odd)
    if not log.is_file():
        parser.error(f"{log} does not exist: no run has logged a step in {out}")
    try:
        records, torn = read_log(log)
    except ValueError as err:  # a bad line before the last
        parser.error(str(err))
    except OSError as err:
        parser.error(f"cannot read {log}: {err.strerror or err}")
    if torn:
        parser.error(torn.replace(": dropped it", "; --resume repairs it"))
    if not records:
        parser.error(f"{log} is empty: no step has been logged yet")
    for number, record in enumerate(records, 1):
        missing = [k for k in _PLOTTED if not isinstance(record.get(k), (int, float))]
        if missing:
            parser.error(f"{log} line {number} has no number for {', '.join(missing)} "
                         f"(each line needs {', '.join(_PLOTTED)})")
    import matplotlib

    matplotlib.use("Agg")  # a file, no window: works without a display
    from lecture_utils.plots import plot_training_curves

    try:
        plot_training_curves(records, out / CURVES)
    except OSError as err:
        parser.exit(1, f"{parser.prog}: error: cannot write {out / CURVES}: {err.strerror or err}\n")
    print(f"wrote {out / CURVES}")
    return 0


class _Stopped(Exception):
    """SIGTERM or SIGHUP before training started (SIGINT raises KeyboardInterrupt): nothing to save yet."""


# SIGHUP: the terminal closed or the ssh connection dropped; the same as SIGTERM (not on Windows).
BEFORE_TRAINING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _stop_before_training(signum, frame):
    raise _Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["plot"]:
        return plot(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in --out, --overwrite moves it aside: pass one of them")
    try:
        torchrun = launched_by_torchrun()  # WORLD_SIZE/RANK: garbage, or set without torchrun, is one line
    except ValueError as err:
        parser.error(str(err))
    quiet = torchrun and int(os.environ["RANK"]) != 0  # under torchrun rank 0 says it, once for all

    def fail(code: int, message) -> NoReturn:
        if torchrun:  # torchrun sends SIGTERM to the ranks still running once one exits: leave with `code`
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if not quiet:
            print(f"{parser.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(code)

    # A closed or full stdout/stderr (| head, > /dev/full) stops the printing, never the training.
    with guarded_output():
        previous = {s: signal.signal(s, _stop_before_training) for s in BEFORE_TRAINING}
        try:
            return _train(args, fail)
        except (KeyboardInterrupt, _Stopped) as stop:
            signum = stop.args[0] if isinstance(stop, _Stopped) else signal.SIGINT
            fail(128 + signum, f"stopped by {signal.Signals(signum).name} before the first step: no step "
                                      "was trained, no checkpoint written")
        finally:
            for s, handler in previous.items():
                if signal.getsignal(s) is _stop_before_training:
                    signal.signal(s, handler)
            if dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()


def _train(args, fail) -> int:
    """Build the Trainer and run it; every refusal and fault is one line (``fail``) and an exit code."""
    try:  # (a signal from here on: run() stops at a step boundary with a checkpoint saved)
        cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
        trainer = Trainer(cfg, args.out, resume=args.resume, progress=not args.no_progress,
                          overwrite=args.overwrite, allow_config_change=args.allow_config_change)
    except (ValueError, TypeError) as err:
        fail(2, err)
    except RunError as err:  # the folder could not be written (disk full, no permission)
        fail(1, err)
    except OSError as err:  # --out is a file, under one, or not writable
        fail(2, f"cannot use --out {args.out}: {describe(err)}")
    try:
        records = trainer.run()
    except RunError as err:  # disk full, no permission, a loss gone NaN: the last checkpoint is intact
        fail(1, err)
    except RuntimeError as err:
        if not _out_of_memory(err):
            raise
        kept = trainer.folder.kept() if trainer.folder else "the last checkpoint is kept"
        fail(1, f"out of memory at step {trainer.step + 1} ({str(err).strip().splitlines()[0][:120]}); "
                       f"{kept}; lower --batch-size or raise --accum")
    finally:
        trainer.close()
    if trainer.interrupted is not None:  # SIGINT/SIGTERM: a checkpoint was saved, one line said so
        return 128 + trainer.interrupted
    if records:
        last = records[-1]
        trainer.say(f"step {last['step']}: loss {last['loss']:.4f}"
                    + (f", val {last['val_loss']:.4f}" if "val_loss" in last else "")
                    + f"; checkpoint {trainer.out / CHECKPOINT}")
    return 0


def _out_of_memory(err: RuntimeError) -> bool:
    """torch's out-of-memory errors: CUDA's OutOfMemoryError, the CPU allocator's RuntimeError."""
    return isinstance(err, torch.OutOfMemoryError) or "can't allocate memory" in str(err)
