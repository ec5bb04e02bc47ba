"""Resolve: what a ``TrainConfig`` leaves open, decided once per process, before anything is built.

The device (and this process's rank under torchrun), the precision and its autocast
context, the optimizer, the sequence length and micro-batch, the warm-up, the FLOPs of a
step: a frozen ``Plan``. The order matters on CUDA: the device carries its index
(``cuda:$LOCAL_RANK`` under torchrun, the current device otherwise), ``torch.cuda.set_device``
makes it current, and only then does NCCL start, told its device (``device_id``) so that its
communicator binds to that GPU at once. A batch that cannot fit is refused here, before
anything is allocated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from lecture_utils.device import get_device, seed_all
from lecture_utils.dtypes import find_format
from lecture_utils.flops import transformer_flops
from lecture_utils.models import GPTConfig, get_config
from lecture_utils.train.config import DEFAULT_WARMUP, TrainConfig

# What --resume compares with the checkpoint's run (besides the model's shape): a change is
# refused unless allow_config_change (then warned about and logged). --steps may grow.
OPTIMISATION_FIELDS = ("lr", "min_lr", "warmup", "weight_decay", "clip", "batch_size", "accum", "seed",
                       "deterministic")


@dataclass(frozen=True)
class Process:
    device: torch.device
    rank: int = 0
    world: int = 1

    @property
    def distributed(self) -> bool:
        return self.world > 1


# What torchrun (torch.distributed.run) sets in each process it starts, besides WORLD_SIZE and RANK:
# a WORLD_SIZE left in a shell by an earlier job, without these, is not a launch.
TORCHRUN_VARIABLES = ("LOCAL_RANK", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT")
# How long joining the other processes, and then any one collective, may wait: long enough for a
# checkpoint save on rank 0 while the others wait, short enough that a rank that never came is
# reported instead of waited for (torch's defaults: 10 minutes with NCCL, 30 with gloo).
RENDEZVOUS_TIMEOUT = datetime.timedelta(minutes=5)


def _env_int(name: str, default: int, low: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low:
        raise ValueError(f"the environment variable {name}={text!r} is not a whole number >= {low}; torchrun "
                         f"sets it for the processes it starts: unset it (unset {name}) to train in one process")
    return value


def launched_by_torchrun() -> bool:
    """True under torchrun with more than one process. A WORLD_SIZE above 1 without torchrun's own
    variables (a shell's leftover), or a WORLD_SIZE or RANK that is not a number, is one ValueError."""
    world = _env_int("WORLD_SIZE", 1, low=1)
    rank = _env_int("RANK", 0, low=0)
    if world == 1:
        return False
    missing = [name for name in TORCHRUN_VARIABLES if not os.environ.get(name)]
    if missing:
        raise ValueError(f"WORLD_SIZE={world} is set, but not by torchrun (no {', '.join(missing)}): launch "
                         "with torchrun --nproc_per_node=N -m lecture_utils.train ..., or unset WORLD_SIZE and "
                         "RANK to train in one process")
    if rank >= world:
        raise ValueError(f"RANK={rank} is not below WORLD_SIZE={world}; launch with torchrun, which sets both")
    return True


def start_process(device: str | None = None) -> Process:
    """Pick the device (``None``: ``$LECTURE_DEVICE``, else cuda, mps, cpu), make it current, and
    join torchrun's process group when launched by it (NCCL on CUDA, gloo elsewhere), waiting at
    most ``RENDEZVOUS_TIMEOUT`` for the others (then one ValueError)."""
    torchrun = launched_by_torchrun()  # a stray or garbled environment: refused before the device is touched
    chosen = get_device(device)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)  # needs an index: get_device always gives one
    if not torchrun:
        return Process(chosen)
    if not dist.is_initialized():
        try:
            if chosen.type == "cuda":
                dist.init_process_group("nccl", device_id=chosen, timeout=RENDEZVOUS_TIMEOUT)
            else:
                dist.init_process_group("gloo", timeout=RENDEZVOUS_TIMEOUT)
        except (RuntimeError, ValueError) as err:  # DistStoreError and friends: a rank that never joined
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
            raise ValueError(f"could not join the other {int(os.environ['WORLD_SIZE']) - 1} process(es) at "
                             f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} within "
                             f"{RENDEZVOUS_TIMEOUT.total_seconds():.0f} s ({first})") from None
    return Process(chosen, dist.get_rank(), dist.get_world_size())


@dataclass(frozen=True)
class Plan:
    """Every choice a run makes, concrete: the Trainer builds and loops from this alone."""

    process: Process
    model_cfg: GPTConfig
    seq_len: int
    micro: int  # sequences per micro-step, summed over the processes
    precision: str  # fp32, bf16 or fp16 (autocast's dtype)
    optimizer: str  # "lecture" (lecture_utils.optim.AdamW) or "fused" (torch's, CUDA only)
    warmup: int
    flops_per_step: int  # 3 x the exact forward count x the global batch
    data: dict = dataclasses.field(default_factory=dict)  # {"train_tokens": sha256, "val_tokens": ...} or None

    @property
    def device(self) -> torch.device:
        return self.process.device

    def autocast(self):
        """The forward pass's context: ``nullcontext()`` in fp32, ``torch.autocast`` otherwise."""
        if self.precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=find_format(self.precision).dtype)

    def resolved(self) -> dict:
        """What the checkpoint records of these choices (--resume compares them)."""
        return {"seq_len": self.seq_len, "precision": self.precision, "optimizer": self.optimizer,
                "warmup": self.warmup, **self.data}


def resolve(cfg: TrainConfig, *, model_overrides: dict | None = None, saved: dict | None = None,
            data: dict | None = None) -> Plan:
    """The Plan for ``cfg`` in this process. ``saved``: the checkpoint when resuming (a warm-up left
    to its default keeps the run's own, not min(20, the new --steps)). ``data``: the token files'
    sha256 (build.data_digests), recorded in the checkpoint and compared on resume."""
    if cfg.zero1 and not launched_by_torchrun():
        raise ValueError("--zero1 shards optimizer state across processes: launch with torchrun")
    process = start_process(cfg.device)
    seed_all(cfg.seed, cfg.deterministic)
    # SDPA attention: the Trainer's FLOPs come from the analytic count (transformer_flops), not from
    # FlopCounterMode, so the fused kernel costs no accounting; the notebooks that count keep "math".
    model_cfg = get_config(cfg.config, **{"attention": "sdpa", **(model_overrides or {})})
    seq_len = cfg.seq_len or model_cfg.seq_len
    if seq_len > model_cfg.seq_len:
        raise ValueError(f"seq_len {seq_len} > the {cfg.config} model's {model_cfg.seq_len}")
    micro = cfg.batch_size // cfg.accum
    if micro % process.world:
        raise ValueError(f"micro-batch {micro} is not divisible by {process.world} processes")
    optimizer = cfg.optimizer or ("fused" if process.device.type == "cuda" else "lecture")
    if optimizer == "fused" and process.device.type != "cuda":
        raise ValueError("the fused AdamW runs on CUDA only; use --optimizer lecture")
    check_fits(model_cfg, micro // process.world, seq_len, process.device, batch_size=cfg.batch_size,
               accum=cfg.accum)  # before anything is allocated
    return Plan(process, model_cfg, seq_len, micro,
                precision=cfg.precision or ("bf16" if process.device.type == "cuda" else "fp32"),
                optimizer=optimizer, warmup=_warmup(cfg, (saved or {}).get("extra")),
                flops_per_step=3 * transformer_flops(**model_cfg.flops_kwargs(seq_len)) * cfg.batch_size,
                data=dict(data or {}))


def _warmup(cfg: TrainConfig, saved: dict | None) -> int:
    """--warmup if given; a resumed run's own warm-up (kept even above a shorter --steps: the run then
    stops inside it, on the schedule it started with); else min(20, --steps). A warm-up longer than
    --steps is refused for a new run, and on resume unless it is the run's own."""
    saved = saved if isinstance(saved, dict) else {}
    resolved, trained = (saved.get(k) if isinstance(saved.get(k), dict) else {} for k in ("resolved", "train"))
    before = resolved.get("warmup", trained.get("warmup"))
    before = before if isinstance(before, int) and not isinstance(before, bool) else None
    if cfg.warmup is not None:
        if cfg.warmup > cfg.steps and cfg.warmup != before:
            raise ValueError(f"warmup must be in [0, {cfg.steps}], got {cfg.warmup}"
                             + (f" (this run's own warm-up is {before})" if before is not None else ""))
        return cfg.warmup
    if before is not None:
        return before
    return min(DEFAULT_WARMUP, cfg.steps)


def settings_change(payload: dict, cfg: TrainConfig, plan: Plan, path: Path) -> dict:
    """The checkpoint's run against this one, before anything is built: fewer --steps than done
    and another model are refused (ValueError); returns the changed optimisation settings
    ({name: [before, now]}), which the caller refuses unless --allow-config-change."""
    extra = payload.get("extra") if isinstance(payload.get("extra"), dict) else {}
    if payload["step"] > cfg.steps:  # --steps is the run's total: fewer than done is no setting change
        raise ValueError(f"{path} is at step {payload['step']}, beyond --steps {cfg.steps} (the run's total "
                         f"number of steps): pass --steps {payload['step']} or more to continue it")
    saved_model, model = extra.get("config"), json.loads(json.dumps(dataclasses.asdict(plan.model_cfg)))
    if isinstance(saved_model, dict):  # math and SDPA attention compute the same model: either resumes
        saved_model = {k: v for k, v in saved_model.items() if k != "attention"}
        model.pop("attention")
    if isinstance(saved_model, dict) and json.loads(json.dumps(saved_model)) != model:
        diff = ", ".join(f"{k} {saved_model.get(k)} vs {v}" for k, v in model.items() if saved_model.get(k) != v)
        was = (extra.get("train") or {}).get("config", "?")
        raise ValueError(f"{path} holds another model than --config {cfg.config} ({diff}): resume "
                         f"with the run's own --config {was}")
    saved = {**{k: v for k, v in (extra.get("train") or {}).items() if k in OPTIMISATION_FIELDS},
             **(extra.get("resolved") or {})}
    now = {**{k: getattr(cfg, k) for k in OPTIMISATION_FIELDS}, **plan.resolved()}
    return {k: [saved[k], now[k]] for k in now if k in saved and saved[k] is not None and saved[k] != now[k]}


def check_settings(payload: dict, cfg: TrainConfig, plan: Plan, path: Path, allow: bool, say) -> dict | None:
    """``settings_change``, refused unless ``allow`` (--allow-config-change: then one warning line,
    and the change is returned for the log)."""
    changed = settings_change(payload, cfg, plan, path)
    if not changed:
        return None
    text = ", ".join(f"{k.replace('_', '-')} {_shown(a)} -> {_shown(b)}" for k, (a, b) in changed.items())
    data = [k for k in changed if k.endswith("_tokens")]
    if not allow:
        own = ("the run's own values" + (" and token data (the sha256 of its sidecars; LECTURE_DATA names "
                                         "the data folder)" if data else ""))
        raise ValueError(f"--resume with settings that differ from {path}'s run ({text}): rerun with {own}, "
                         "or pass --allow-config-change to continue with the new ones")
    say(f"warning: resuming with changed settings: {text} (recorded in log.jsonl)")
    return changed


def _shown(value) -> str:
    """A setting as the refusal shows it: a sha256 by its first 12 digits, anything else as it is."""
    if isinstance(value, str) and len(value) == 64:
        return f"sha256 {value[:12]}..."
    return str(value)


def resolve_peak(plan: Plan) -> tuple[float | None, str]:
    """What MFU divides by, and where it came from: a GPU's dense datasheet peak, a CPU's nominal
    one (cores x clock x FLOP per cycle), or None and why (MPS, a GPU missing from the table, a
    dtype the CPU emulates): then no MFU, never a rate divided by a measured one."""
    from lecture_utils.bench import peak_flops

    peak = peak_flops(plan.device, plan.precision)
    return peak.flops_per_s, peak.source


def available_bytes(device: torch.device) -> int | None:
    """Memory a step can still take: free GPU memory on CUDA, the kernel's MemAvailable on a CPU
    (None where it cannot be read: MPS, a system without /proc)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(model_cfg, micro_per_rank: int, seq_len: int, device: torch.device, *, batch_size: int,
               accum: int) -> None:
    """Refuse, before anything is allocated, a batch whose step cannot fit in this machine's memory
    (one line, ValueError). The step is predicted by ``gpt_step_memory`` (fp32: parameters, AdamW
    state, every saved activation, the loss's buffers) plus the int64 token windows. On CUDA the
    trainer halves the micro-batch when a step runs out of memory, so only a step of one sequence
    per process must fit there; on a CPU the configured micro-batch must."""
    from lecture_utils.sizes import format_bytes
    from lecture_utils.training_memory import gpt_step_memory

    free = available_bytes(device)
    if free is None:
        return
    sequences = 1 if device.type == "cuda" else micro_per_rank
    windows = micro_per_rank * (seq_len + 1) * 8  # the int64 windows, built on the host
    need = gpt_step_memory(model_cfg, sequences, seq_len).peak + (0 if device.type == "cuda" else windows)
    if need > free:
        raise ValueError(f"--batch-size {batch_size} does not fit: one step of {sequences:,} sequence(s) x "
                         f"{seq_len} tokens needs about {format_bytes(need)} (parameters, AdamW state, "
                         f"activations, token windows), and {device} has {format_bytes(free)} available; "
                         f"lower --batch-size, or raise --accum (now {accum}) to split each step")
    host = available_bytes(torch.device("cpu"))
    if device.type == "cuda" and host is not None and windows > host:
        raise ValueError(f"--batch-size {batch_size} does not fit: its token windows alone need "
                         f"{format_bytes(windows)} of host memory, and {format_bytes(host)} is available; "
                         f"lower --batch-size, or raise --accum (now {accum})")
