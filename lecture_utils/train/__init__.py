"""The training loop (§8) and what production training adds to it.

    python -m lecture_utils.train --config tiny --steps 200 --out runs/tiny [--ckpt-every 50] [--resume]
    torchrun --nproc_per_node=2 -m lecture_utils.train --config tiny --steps 200 --out runs/ddp [--zero1]

Modules (one line each in CONTRIBUTING.md's module map): ``config`` (TrainConfig), ``resolve``
(a Plan, decided once per process), ``build`` (model, optimizer, batches), ``loop`` (the lesson's
pieces from notebook 08), ``trainer`` (the Trainer), ``checkpoint`` and ``run`` (a run folder that
never loses work), ``cli``. The package imports lecture_utils, never the reverse.
"""

import importlib

# Imported when first used: `python -m lecture_utils.train` loads torch only in its __main__, where a
# Ctrl-C during the start is one line.
_HOMES = {"build_parser": "cli", "main": "cli",
          "ADAMW_VERSIONS": "config", "PRECISIONS": "config", "TrainConfig": "config",
          "Trainer": "trainer", "clip_grad_norm": "loop", "cosine_lr": "loop", "evaluate": "loop",
          "train_step": "loop", "CHECKPOINT": "run", "LOG": "run", "load_checkpoint": "checkpoint",
          "read_checkpoint": "checkpoint", "rng_state": "checkpoint", "save_checkpoint": "checkpoint",
          "set_rng_state": "checkpoint"}
__all__ = sorted(_HOMES)


_MODULES = ("build", "checkpoint", "cli", "config", "loop", "resolve", "run", "trainer")


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"lecture_utils.train.{name}")
    if name not in _HOMES:
        raise AttributeError(f"module 'lecture_utils.train' has no attribute {name!r}")
    home = _HOMES[name]
    module, attr = home if isinstance(home, tuple) else (f"lecture_utils.train.{home}", name)
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
