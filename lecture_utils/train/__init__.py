"""The training loop (§8) and what production training adds to it.

    python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny [--ckpt-every 50] [--resume]
    torchrun --nproc_per_node=2 -m lecture_utils.train --config tiny --steps 200 --out runs/ddp [--zero1]

Modules: ``config`` (TrainConfig, checked at the edge), ``checkpoint`` (RNG states,
atomic checkpoints, safe loading), ``loop`` (the lesson's cosine_lr, clip_grad_norm,
evaluate and train_step from notebook 08, and the Trainer built from them), ``cli``
(the command line, generated from TrainConfig), ``run`` (RunFolder: the lock, the log,
safe saves and their checksum). The package imports lecture_utils,
never the reverse.
"""

from lecture_utils.device import seed_all as seed_everything  # one seeding function, two names
from lecture_utils.train.checkpoint import (
    load_checkpoint,
    read_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from lecture_utils.train.cli import build_parser, main
from lecture_utils.train.config import OPTIMIZERS, PRECISIONS, TrainConfig
from lecture_utils.train.loop import Trainer, clip_grad_norm, cosine_lr, evaluate, train_step
from lecture_utils.train.run import CHECKPOINT, LOG

__all__ = ["CHECKPOINT", "LOG", "OPTIMIZERS", "PRECISIONS", "TrainConfig", "Trainer", "build_parser",
           "clip_grad_norm", "cosine_lr", "evaluate", "load_checkpoint", "main", "read_checkpoint",
           "rng_state", "save_checkpoint", "seed_everything", "set_rng_state", "train_step"]
