"""Bytes per parameter: what a training recipe keeps for every weight, and what fits a GPU.

A training run pays several bytes per parameter (weights, gradients, optimizer state)
before a single activation. ``max_params_that_fit`` and ``training_state_table`` are the
calculators people type numbers into, so they check their input.
"""

from __future__ import annotations

import math

import torch

from lecture_utils import validate

# Each recipe lists what training keeps per parameter, as (part, dtype). The bytes
# come from the dtype, so the table cannot disagree with torch.
RECIPES: dict[str, tuple[tuple[str, torch.dtype], ...]] = {
    # §1.2: naive fp32 training with AdamW.
    "fp32_adamw": (
        ("weights", torch.float32),
        ("gradients", torch.float32),
        ("adam m", torch.float32),
        ("adam v", torch.float32),
    ),
    # §1.2 note: bf16 compute copy + fp32 master weights: the notes' 16 bytes, the ZeRO paper's
    # accounting (2 + 2 + 12). Megatron-LM keeps an fp32 main-gradient buffer instead of the bf16
    # gradients: 2 + 4 + 4 + 4 + 4 = 18 bytes (20 with a bf16 gradient kept as well; notebook 02).
    "mixed_bf16_adamw": (
        ("weights (bf16)", torch.bfloat16),
        ("gradients (bf16)", torch.bfloat16),
        ("master weights", torch.float32),
        ("adam m", torch.float32),
        ("adam v", torch.float32),
    ),
    # torch.autocast keeps fp32 weights and fp32 gradients. Its bf16 casts of the weights
    # are cached for the whole autocast region (cache_enabled=True) and the ones saved for
    # backward live until backward: about 2 B/param more at the peak, but transient, so
    # not per-parameter state.
    "autocast_bf16_adamw": (
        ("weights", torch.float32),
        ("gradients", torch.float32),
        ("adam m", torch.float32),
        ("adam v", torch.float32),
    ),
    "fp32_sgd": (
        ("weights", torch.float32),
        ("gradients", torch.float32),
    ),
    "fp32_sgd_momentum": (
        ("weights", torch.float32),
        ("gradients", torch.float32),
        ("momentum", torch.float32),
    ),
    "fp32_adagrad": (
        ("weights", torch.float32),
        ("gradients", torch.float32),
        ("sum of squared grads", torch.float32),
    ),
}


def recipe_name(recipe: str) -> str:
    """The canonical recipe name; ``"fp32-adamw"`` (as typed on a command line) is accepted."""
    return validate.choice(recipe, RECIPES, "recipe", aliases={r.replace("_", "-"): r for r in RECIPES})


def param_breakdown(recipe: str) -> dict[str, int]:
    """Bytes per parameter for each part of a training recipe, e.g. ``{"weights": 4, ...}``."""
    return {part: dt.itemsize for part, dt in RECIPES[recipe_name(recipe)]}


def bytes_per_param(recipe: str = "fp32_adamw") -> int:
    """Total training bytes per parameter (activations not included)."""
    return sum(param_breakdown(recipe).values())


def _shards(n_gpus: int, sharded: bool) -> int:
    """How many ways the training state is split: n_gpus if sharded, else 1."""
    n = validate.integer(n_gpus, "n_gpus")
    return n if validate.instance(sharded, bool, "sharded") else 1


def max_params_that_fit(memory_bytes: int | float, *, n_gpus: int = 1,
                        recipe: str = "fp32_adamw", sharded: bool = False) -> int:
    """Largest parameter count whose training state fits, ignoring activations.

    ``memory_bytes`` is one GPU's memory. Replicated (plain data parallel), every GPU
    holds everything, so more GPUs do not help; perfectly ``sharded`` (ZeRO-3 / FSDP)
    the state is split ``n_gpus`` ways.
    """
    total = validate.positive(memory_bytes, "memory_bytes") * _shards(n_gpus, sharded)
    return int(total // bytes_per_param(recipe))


def training_state_table(n_params: int, *, n_gpus: int = 1, sharded: bool = False,
                         recipe: str = "fp32_adamw") -> list[tuple[str, int]]:
    """Rows of (part, bytes per GPU) for ``n_params`` parameters, plus a ``total`` row.

    The static twin of the notebook's calculator widget.
    """
    n = validate.integer(n_params, "n_params", low=0)
    split = _shards(n_gpus, sharded)
    rows = [(part, math.ceil(n * b / split)) for part, b in param_breakdown(recipe).items()]
    rows.append(("total", sum(b for _, b in rows)))
    return rows
