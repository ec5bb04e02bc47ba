"""Number formats: the one table of dtypes, their names, spec-sheet names and aliases.

memory (bytes per element), hardware (peak FLOP/s per format), bench (timed matmuls)
and the trainer (autocast precisions) all look a format up here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lecture_utils import validate


@dataclass(frozen=True)
class Format:
    name: str  # torch's name, e.g. "bfloat16"
    dtype: torch.dtype  # what the tensors are stored as
    short: str | None  # the spec sheets' column, e.g. "bf16"; None where GPU tables have none
    aliases: tuple[str, ...] = ()  # other spellings people type
    note: str = ""


TABLE: tuple[Format, ...] = (
    Format("float64", torch.float64, "fp64", ("fp64", "double")),
    Format("float32", torch.float32, "fp32", ("fp32", "float"),
           "on GPUs without TF32: the CUDA cores' (non-tensor-core) rate"),
    Format("tf32", torch.float32, "tf32", ("tensorfloat32",),
           "not a storage format: a math mode of float32. Tensors stay float32 (4 bytes); "
           "matmuls round their inputs to 10 mantissa bits on tensor cores "
           "(torch.set_float32_matmul_precision('high'))"),
    Format("float16", torch.float16, "fp16", ("fp16", "half")),
    Format("bfloat16", torch.bfloat16, "bf16", ("bf16",)),
    Format("float8_e4m3fn", torch.float8_e4m3fn, "fp8", ("fp8", "e4m3", "fp8_e4m3")),
    Format("float8_e5m2", torch.float8_e5m2, "fp8", ("e5m2", "fp8_e5m2")),
    Format("int64", torch.int64, None, ("long",)),
    Format("int32", torch.int32, None, ("int",)),
    Format("int16", torch.int16, None),
    Format("int8", torch.int8, None),
    Format("uint16", torch.uint16, None),
    Format("uint8", torch.uint8, None),
    Format("bool", torch.bool, None),
)
_BY_NAME = {f.name: f for f in TABLE}
_ALIASES = {alias: f.name for f in TABLE for alias in f.aliases}

# Storage dtypes by name (tf32 is a math mode, not one of them).
DTYPES: dict[str, torch.dtype] = {f.name: f.dtype for f in TABLE if f.name != "tf32"}
# The columns of a GPU spec sheet's peak table (hardware.ACCELERATORS).
SPEC_NAMES = ("fp32", "tf32", "bf16", "fp16", "fp8")
# What the trainer can compute in (autocast dtypes; fp32 = no autocast).
PRECISIONS = ("fp32", "bf16", "fp16")


def find_format(dtype: str | torch.dtype) -> Format:
    """The table row for ``torch.bfloat16``, ``"bfloat16"``, ``"bf16"`` or ``"torch.bfloat16"``."""
    if isinstance(dtype, torch.dtype):
        for f in TABLE:  # float32 before tf32: a float32 tensor is float32
            if f.dtype == dtype:
                return f
        raise ValueError(f"unsupported dtype {dtype}; valid: {', '.join(DTYPES)}")
    if isinstance(dtype, str):
        dtype = dtype.removeprefix("torch.")
    return _BY_NAME[validate.choice(dtype, _BY_NAME, "dtype", aliases=_ALIASES)]


def as_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Resolve a dtype given as ``torch.float16``, ``"float16"`` or ``"fp16"`` (``"tf32"``: float32)."""
    return find_format(dtype).dtype


def dtype_name(dtype: str | torch.dtype) -> str:
    """Canonical short name, e.g. ``"bfloat16"``."""
    return str(as_dtype(dtype)).removeprefix("torch.")


def spec_name(dtype: str | torch.dtype) -> str:
    """The spec-sheet column of a format: ``"bf16"`` for ``torch.bfloat16``; ``"tf32"`` stays."""
    short = find_format(dtype).short
    if short not in SPEC_NAMES:
        raise ValueError(f"no spec-sheet peak for dtype {dtype!r}; valid: {', '.join(SPEC_NAMES)}")
    return short


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
