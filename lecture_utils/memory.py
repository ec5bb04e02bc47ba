"""Memory accounting: bytes per tensor, per dtype, per parameter, per GPU.

memory = numel x bytes per element, and a training run pays several bytes per
parameter (weights, gradients, optimizer state) before a single activation.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import nn

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


# --- a model's training memory: predicted and measured ------------------------------

# Full-size state tensors per parameter that each torch.optim optimizer keeps.
OPTIMIZER_STATE_COPIES = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
# torch.optim also keeps a scalar float32 `step` tensor per parameter tensor for these.
_STEP_COUNTERS = {"adagrad", "rmsprop", "adam", "adamw"}


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes held during a training step, by kind (activations: what autograd saves)."""

    params: int
    grads: int
    optimizer_state: int
    activations: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer_state + self.activations


def _optimizer_name(optimizer: str) -> str:
    if not isinstance(optimizer, str):
        raise TypeError(f"optimizer must be a str, got {type(optimizer).__name__} {optimizer!r}")
    name = optimizer.lower()
    if name not in OPTIMIZER_STATE_COPIES:
        raise ValueError(f"unknown optimizer {optimizer!r}; valid: {', '.join(OPTIMIZER_STATE_COPIES)}")
    return name


def predict_training_memory(model: nn.Module, *, optimizer: str = "adamw",
                            activations: int = 0) -> TrainingMemory:
    """Predict params, grads and optimizer state from a model's parameters alone.

    Gradients: one same-shape, same-dtype tensor per trainable parameter. Optimizer
    state: ``OPTIMIZER_STATE_COPIES[optimizer]`` copies of the gradients, plus (for the
    adaptive ones) torch's 4-byte ``step`` counter per parameter tensor. ``activations``
    depends on the model's code, so it is passed in (e.g. :func:`mlp_activation_bytes`).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    name = _optimizer_name(optimizer)
    acts = _check_count(activations, "activations")
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    grads = sum(tensor_bytes(p) for p in trainable)
    steps = 4 * len(trainable) if name in _STEP_COUNTERS else 0
    return TrainingMemory(params=sum(tensor_bytes(p) for p in params), grads=grads,
                          optimizer_state=OPTIMIZER_STATE_COPIES[name] * grads + steps,
                          activations=acts)


def mlp_activation_bytes(*, n_layers: int, width: int, batch: int,
                         dtype: str | torch.dtype = "float32") -> int:
    """Bytes autograd saves for ``models.Cruncher`` (L layers of width D, batch B).

    Each of the L + 1 matmuls saves its input (B x D) to compute its weight gradient
    (grad_W = x^T grad_out): (L + 1) * B * D elements. The weights it also saves (for
    grad_x = grad_out W^T) are the parameters themselves, so they cost nothing extra;
    a ReLU saves its output, which is the next matmul's saved input: the same storage.
    The lecture's B*L*D is this without the "+ 1" (the last layer's input).
    """
    layers = _check_count(n_layers, "n_layers")
    d, b = _check_count(width, "width"), _check_count(batch, "batch")
    return (layers + 1) * b * d * as_dtype(dtype).itemsize


def mlp_peak_bytes(*, n_layers: int, width: int, batch: int, optimizer: str = "adamw",
                   dtype: str | torch.dtype = "float32") -> int:
    """Predicted peak of a steady-state training step of ``Cruncher`` (no ReLU, grads set to None).

    The peak comes during backward through the last hidden layer. Alive then:
    parameters, optimizer state, the L saved layer inputs (the head's input was freed as
    soon as the head's backward ran), the gradient flowing in (B x D), the gradient being
    produced for the layer below (B x D), and two weight gradients (D x D and the head's
    D). Valid when the batch is larger than the width (B > D); for B < D the peak moves
    into the end of backward or the optimizer step. On a GPU, allocator rounding and the
    cuBLAS workspace add a few MB on top.
    """
    itemsize = as_dtype(dtype).itemsize
    d, b = _check_count(width, "width"), _check_count(batch, "batch")
    n_layers = _check_count(n_layers, "n_layers")
    name = _optimizer_name(optimizer)
    params = (n_layers * d * d + d) * itemsize
    state = OPTIMIZER_STATE_COPIES[name] * params + (4 * (n_layers + 1) if name in _STEP_COUNTERS else 0)
    live = (n_layers * b * d + 2 * b * d + d * d + d) * itemsize
    return params + state + live


def saved_tensor_bytes(fn, *inputs, exclude: list[torch.Tensor] | tuple = ()) -> tuple[int, list]:
    """Run ``fn(*inputs)`` and measure what autograd saves for backward.

    Uses ``torch.autograd.graph.saved_tensors_hooks``: every tensor saved for backward
    passes through the pack hook. Bytes are counted once per distinct storage, and
    storages of ``exclude`` (e.g. the model's parameters) are skipped: saving a weight
    for backward keeps a reference, not a copy. Returns (bytes, [(shape, dtype), ...]
    of the counted tensors) and keeps the output alive only until it returns.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}
    saved: list[tuple[tuple[int, ...], torch.dtype]] = []

    def pack(t: torch.Tensor):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in skip and ptr not in seen:
            seen[ptr] = storage.nbytes()
            saved.append((tuple(t.shape), t.dtype))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(seen.values()), saved


def measure_training_memory(model: nn.Module, inputs: torch.Tensor, optimizer: torch.optim.Optimizer,
                            loss_fn=None) -> TrainingMemory:
    """Run one real training step and measure the bytes of every kind of tensor.

    Activations: the saved-for-backward bytes during the forward pass (parameters
    excluded); params, grads: the tensors themselves; optimizer state: every tensor
    in ``optimizer.state`` after ``step()``. ``loss_fn(output)`` defaults to ``.sum()``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    if not isinstance(inputs, torch.Tensor):
        raise TypeError(f"inputs must be a tensor, got {type(inputs).__name__}")
    loss_fn = loss_fn or (lambda out: out.sum())
    params = list(model.parameters())
    outputs = []
    activations, _ = saved_tensor_bytes(lambda x: outputs.append(model(x)), inputs, exclude=params)
    optimizer.zero_grad(set_to_none=True)
    loss_fn(outputs.pop()).backward()
    optimizer.step()
    state = sum(tensor_bytes(t) for s in optimizer.state.values() for t in s.values()
                if isinstance(t, torch.Tensor))
    return TrainingMemory(params=sum(tensor_bytes(p) for p in params),
                          grads=sum(tensor_bytes(p.grad) for p in params if p.grad is not None),
                          optimizer_state=state, activations=activations)
