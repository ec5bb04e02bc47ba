"""What a training run is asked to do: ``TrainConfig``, checked once, where it is made (an edge).

Each field is written once, with its default and its help (``metadata={"help": ...}``);
the command line (``lecture_utils/train/cli.py``) is generated from these fields. The config
is frozen: what a field leaves open (``None``: the device, the precision, the warm-up...) is
decided by ``lecture_utils/train/resolve.py``, never written back here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lecture_utils import validate
from lecture_utils.dtypes import PRECISIONS  # the one dtype table
from lecture_utils.models import CONFIGS

ADAMW_VERSIONS = ("lecture", "fused")
DEFAULT_WARMUP = 20


def _help(text: str, **more) -> dict:
    return {"help": text, **more}


@dataclass(frozen=True)
class TrainConfig:
    config: str = field(default="tiny", metadata=_help(f"model size: {', '.join(CONFIGS)}"))
    steps: int = field(default=200, metadata=_help("optimizer steps in all", required=True))
    batch_size: int = field(default=16, metadata=_help("sequences per optimizer step (the effective batch)"))
    seq_len: int | None = field(default=None, metadata=_help("tokens per sequence (default: the model's)"))
    accum: int = field(default=1, metadata=_help("micro-batches per step (gradient accumulation)"))
    lr: float = field(default=3e-3, metadata=_help("peak learning rate"))
    min_lr: float = field(default=3e-4, metadata=_help("learning rate at the end of the cosine decay"))
    warmup: int | None = field(default=None, metadata=_help(
        f"linear warm-up steps (default: min({DEFAULT_WARMUP}, steps))"))
    weight_decay: float = field(default=0.1, metadata=_help("AdamW's decoupled weight decay"))
    clip: float = field(default=1.0, metadata=_help("clip the global gradient norm to this"))
    precision: str | None = field(default=None, metadata=_help(
        f"autocast dtype: {', '.join(PRECISIONS)} (default: bf16 on CUDA, fp32 elsewhere)"))
    seed: int = field(default=0, metadata=_help("seeds the model, the data order and every RNG"))
    deterministic: bool = field(default=False, metadata=_help("torch.use_deterministic_algorithms(True)"))
    val_every: int = field(default=50, metadata=_help("validation loss every K steps (0: never)"))
    val_batches: int = field(default=4, metadata=_help("batches per validation loss"))
    ckpt_every: int = field(default=0, metadata=_help("checkpoint every K steps (0: only at the end)"))
    device: str | None = field(default=None, metadata=_help(
        "cpu, cuda, cuda:1, mps (default: $LECTURE_DEVICE, else cuda, mps, cpu)"))
    optimizer: str | None = field(default=None, metadata=_help(
        "lecture (lecture_utils.optim.AdamW) or fused (torch's, CUDA only; the default there)"))
    zero1: bool = field(default=False, metadata=_help("shard AdamW state (ZeroRedundancyOptimizer; torchrun)"))
    compile: bool = field(default=False, metadata=_help("torch.compile the model"))
    peak_flops: float | None = field(default=None, metadata=_help(
        "FLOP/s that the logged MFU divides by (default: the GPU's dense spec, or a matmul measured "
        "at the start on a CPU/MPS; give it to skip that measurement)"))

    def __post_init__(self) -> None:
        """Check every field (and normalise it); one error naming the value and what is valid."""
        def put(name, value):  # frozen: the checked, normalised value replaces the given one here only
            object.__setattr__(self, name, value)

        put("config", validate.choice(self.config, CONFIGS, "config"))
        for name in ("steps", "batch_size", "accum", "val_batches"):
            put(name, validate.integer(getattr(self, name), name, low=1))
        for name in ("val_every", "ckpt_every"):
            put(name, validate.integer(getattr(self, name), name, low=0))
        put("seed", validate.integer(self.seed, "seed", low=0, high=2**32 - 1))  # numpy's seed range
        if self.warmup is not None:  # at most --steps for a new run: resolve.py checks it, knowing a resumed run's own
            put("warmup", validate.integer(self.warmup, "warmup", low=0))
        if self.seq_len is not None:
            put("seq_len", validate.integer(self.seq_len, "seq_len", low=2))
        if self.batch_size % self.accum:
            raise ValueError(f"batch_size ({self.batch_size}) must be divisible by accum ({self.accum})")
        put("lr", validate.positive(self.lr, "lr"))
        put("min_lr", validate.number(self.min_lr, "min_lr", low=0, high=self.lr))
        # decoupled decay scales the weights by 1 - lr * weight_decay each step: past 1/lr, a sign flip, then inf
        put("weight_decay", validate.number(self.weight_decay, f"weight_decay (at most 1/lr = 1/{self.lr:g}: each step "
                                            "scales the weights by 1 - lr * weight_decay)", low=0, high=1 / self.lr))
        put("clip", validate.positive(self.clip, "clip"))
        if self.precision is not None:
            put("precision", validate.choice(self.precision, PRECISIONS, "precision"))
        if self.optimizer is not None:
            put("optimizer", validate.choice(self.optimizer, ADAMW_VERSIONS, "optimizer"))
        for name in ("deterministic", "zero1", "compile"):
            validate.instance(getattr(self, name), bool, name)
        if self.device is not None:
            validate.instance(self.device, str, "device")  # get_device checks that it exists
        if self.peak_flops is not None:
            put("peak_flops", validate.positive(self.peak_flops, "peak_flops"))
