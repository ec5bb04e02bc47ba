"""Memory accounting: bytes per tensor, per dtype, per parameter, per GPU.

memory = numel x bytes per element, and a training run pays several bytes per
parameter (weights, gradients, optimizer state) before a single activation.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

# --- dtypes ---------------------------------------------------------------------

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint16": torch.uint16,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
# Short names people actually type.
_ALIASES = {
    "fp64": "float64", "double": "float64",
    "fp32": "float32", "float": "float32",
    "fp16": "float16", "half": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn", "e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2",
    "long": "int64", "int": "int32",
}


def as_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Resolve a dtype given as ``torch.float16``, ``"float16"`` or ``"fp16"``."""
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise ValueError(f"unsupported dtype {dtype}; valid: {', '.join(DTYPES)}")
        return dtype
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a torch.dtype or str, got {type(dtype).__name__} {dtype!r}")
    key = dtype.lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)} (or {', '.join(_ALIASES)})")
    return DTYPES[key]


def dtype_name(dtype: str | torch.dtype) -> str:
    """Canonical short name, e.g. ``"bfloat16"``."""
    return str(as_dtype(dtype)).removeprefix("torch.")


@dataclass(frozen=True)
class DtypeInfo:
    """Bit layout and range of one dtype, all computed from torch.finfo / iinfo."""

    name: str
    bits: int
    bytes: int
    sign_bits: int
    exponent_bits: int  # 0 for integers
    mantissa_bits: int  # stored fraction bits; for integers, the value bits
    max: float | int  # exact int for integer dtypes
    smallest_normal: float | None  # None for integers
    smallest_subnormal: float | None
    eps: float | None  # gap between 1 and the next representable number


def dtype_info(dtype: str | torch.dtype) -> DtypeInfo:
    """Compute a dtype's layout from ``torch.finfo``/``torch.iinfo`` (nothing typed in).

    For floats, ``eps = 2**-mantissa_bits`` gives the mantissa, the rest of the bits
    after the sign are exponent, and the smallest subnormal is one mantissa step above
    zero: ``smallest_normal * eps``.
    """
    dt = as_dtype(dtype)
    name = dtype_name(dt)
    if dt.is_floating_point:
        fi = torch.finfo(dt)
        mantissa = round(-math.log2(fi.eps))
        return DtypeInfo(
            name=name,
            bits=fi.bits,
            bytes=dt.itemsize,
            sign_bits=1,
            exponent_bits=fi.bits - 1 - mantissa,
            mantissa_bits=mantissa,
            max=float(fi.max),
            smallest_normal=float(fi.smallest_normal),
            smallest_subnormal=float(fi.smallest_normal) * float(fi.eps),
            eps=float(fi.eps),
        )
    if dt == torch.bool:
        return DtypeInfo(name, 8, 1, 0, 0, 1, 1, None, None, None)
    ii = torch.iinfo(dt)
    sign = 1 if ii.min < 0 else 0
    return DtypeInfo(
        name=name,
        bits=ii.bits,
        bytes=dt.itemsize,
        sign_bits=sign,
        exponent_bits=0,
        mantissa_bits=ii.bits - sign,
        max=ii.max,
        smallest_normal=None,
        smallest_subnormal=None,
        eps=None,
    )


# --- tensors --------------------------------------------------------------------


def _check_count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return int(value)


def tensor_bytes(x: torch.Tensor | tuple[int, ...] | list[int] | torch.Size,
                 dtype: str | torch.dtype | None = None) -> int:
    """Bytes of a tensor's elements: numel x bytes per element.

    Pass a tensor (its own dtype is used; works for ``meta`` tensors, which own no
    memory) or a shape plus a ``dtype``. Counts the logical elements, not the size
    of the underlying storage (a view of a big tensor reports only its own part).
    """
    if isinstance(x, torch.Tensor):
        if dtype is not None:
            raise ValueError("pass dtype only with a shape; a tensor already has one")
        return x.numel() * x.element_size()
    if not isinstance(x, (tuple, list, torch.Size)):
        raise TypeError(f"expected a tensor or a shape tuple, got {type(x).__name__} {x!r}")
    if dtype is None:
        raise ValueError(f"a shape needs a dtype; valid: {', '.join(DTYPES)}")
    numel = math.prod(_check_count(n, "every dimension") for n in x)
    return numel * as_dtype(dtype).itemsize


def format_bytes(n_bytes: int | float, digits: int = 3) -> str:
    """Say a size in decimal and binary units, e.g. ``"2.42 GB (2.25 GiB)"``.

    GB = 10**9 bytes (what GPU spec sheets and the lecture use), GiB = 2**30 bytes
    (what ``nvidia-smi`` and most allocators report): 7% apart at this scale.
    """
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, numbers.Real):
        raise TypeError(f"n_bytes must be a number, got {type(n_bytes).__name__} {n_bytes!r}")
    if not math.isfinite(n_bytes) or n_bytes < 0:
        raise ValueError(f"n_bytes must be a finite number >= 0, got {n_bytes}")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits must be an int >= 1, got {digits!r}")
    if n_bytes < 1000:
        return f"{n_bytes:g} B"

    def pick(base: int, units: tuple[str, ...]) -> str:
        power = min(int(math.log(n_bytes, base)), len(units))
        if power == 0:  # 1000..1023 bytes: under one KiB
            return f"{n_bytes:g} B"
        return f"{n_bytes / base**power:.{digits}g} {units[power - 1]}"

    si = pick(1000, ("kB", "MB", "GB", "TB", "PB", "EB"))
    iec = pick(1024, ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"))
    return f"{si} ({iec})"


# --- bytes per parameter --------------------------------------------------------

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
    # §1.2 note: bf16 compute copy + fp32 master weights. Same 16 bytes. Assumes the
    # fp32 copy of each gradient is transient (made bucket by bucket for the update);
    # keeping a full fp32 gradient as well would cost 20.
    "mixed_bf16_adamw": (
        ("weights (bf16)", torch.bfloat16),
        ("gradients (bf16)", torch.bfloat16),
        ("master weights", torch.float32),
        ("adam m", torch.float32),
        ("adam v", torch.float32),
    ),
    # torch.autocast keeps fp32 weights and fp32 gradients; the bf16 casts it makes
    # are per-op temporaries (activation memory), not per-parameter state.
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
    if not isinstance(recipe, str):
        raise TypeError(f"recipe must be a str, got {type(recipe).__name__} {recipe!r}")
    name = recipe.replace("-", "_")
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; valid: {', '.join(RECIPES)}")
    return name


def _recipe(recipe: str) -> tuple[tuple[str, torch.dtype], ...]:
    return RECIPES[recipe_name(recipe)]


def param_breakdown(recipe: str) -> dict[str, int]:
    """Bytes per parameter for each part of a training recipe, e.g. ``{"weights": 4, ...}``."""
    return {part: dt.itemsize for part, dt in _recipe(recipe)}


def bytes_per_param(recipe: str = "fp32_adamw") -> int:
    """Total training bytes per parameter (activations not included)."""
    return sum(param_breakdown(recipe).values())


def _shards(n_gpus: int, sharded: bool) -> int:
    """How many ways the training state is split: n_gpus if sharded, else 1."""
    n = _check_count(n_gpus, "n_gpus")
    if n == 0:
        raise ValueError("n_gpus must be >= 1, got 0")
    if not isinstance(sharded, bool):
        raise TypeError(f"sharded must be True or False, got {sharded!r}")
    return n if sharded else 1


def max_params_that_fit(memory_bytes: int | float, *, n_gpus: int = 1,
                        recipe: str = "fp32_adamw", sharded: bool = False) -> int:
    """Largest parameter count whose training state fits, ignoring activations.

    ``memory_bytes`` is one GPU's memory. Replicated (plain data parallel), every GPU
    holds everything, so more GPUs do not help; perfectly ``sharded`` (ZeRO-3 / FSDP)
    the state is split ``n_gpus`` ways.
    """
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, numbers.Real):
        raise TypeError(f"memory_bytes must be a number, got {type(memory_bytes).__name__}")
    if not math.isfinite(memory_bytes) or memory_bytes <= 0:
        raise ValueError(f"memory_bytes must be a finite number > 0, got {memory_bytes}")
    total = memory_bytes * _shards(n_gpus, sharded)
    return int(total // bytes_per_param(recipe))


def training_state_table(n_params: int, *, n_gpus: int = 1, sharded: bool = False,
                         recipe: str = "fp32_adamw") -> list[tuple[str, int]]:
    """Rows of (part, bytes per GPU) for ``n_params`` parameters, plus a ``total`` row.

    The static twin of the notebook's calculator widget.
    """
    n = _check_count(n_params, "n_params")
    split = _shards(n_gpus, sharded)
    rows = [(part, math.ceil(n * b / split)) for part, b in param_breakdown(recipe).items()]
    rows.append(("total", sum(b for _, b in rows)))
    return rows


def memory_calculator():
    """An ipywidgets calculator: parameters, recipe, GPUs, sharded or not.

    Returns the widget. Where widgets cannot render (static HTML, nbval), show
    :func:`training_state_table` instead.
    """
    import ipywidgets as w

    n_params = w.FloatLogSlider(value=7e9, base=10, min=6, max=12, step=0.05,
                                description="params", readout_format=".3g")
    recipe = w.Dropdown(options=list(RECIPES), value="fp32_adamw", description="recipe")
    n_gpus = w.IntSlider(value=8, min=1, max=1024, description="GPUs")
    gpu_gb = w.FloatText(value=80.0, description="GB / GPU")
    sharded = w.Checkbox(value=False, description="sharded (ZeRO-3)")
    out = w.HTML()

    def update(*_):
        rows = training_state_table(int(n_params.value), n_gpus=n_gpus.value,
                                    sharded=sharded.value, recipe=recipe.value)
        budget = gpu_gb.value * 1e9
        cells = "".join(f"<tr><td>{p}</td><td>{format_bytes(b)}</td></tr>" for p, b in rows)
        fits = "fits" if rows[-1][1] <= budget else "does NOT fit"
        limit = max_params_that_fit(budget, n_gpus=n_gpus.value, recipe=recipe.value,
                                    sharded=sharded.value) if budget > 0 else 0
        out.value = (f"<table>{cells}</table><p>per GPU: <b>{fits}</b> in {gpu_gb.value:g} GB; "
                     f"largest that fits: {limit / 1e9:.3g}B parameters</p>")

    for widget in (n_params, recipe, n_gpus, gpu_gb, sharded):
        widget.observe(update, names="value")
    update()
    return w.VBox([n_params, recipe, n_gpus, gpu_gb, sharded, out])
