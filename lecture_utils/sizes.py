"""Bytes of a tensor (numel x bytes per element), and a size said in GB and GiB."""

from __future__ import annotations

import math

import torch

from lecture_utils.dtypes import as_dtype


def tensor_bytes(x: torch.Tensor | tuple[int, ...] | list[int] | torch.Size,
                 dtype: str | torch.dtype | None = None) -> int:
    """Bytes of a tensor's elements: numel x bytes per element.

    Pass a tensor (its own dtype is used; works for ``meta`` tensors, which own no
    memory) or a shape plus a ``dtype``. Counts the logical elements, not the size
    of the underlying storage (a view of a big tensor reports only its own part).
    """
    if isinstance(x, torch.Tensor):
        assert dtype is None, "pass dtype only with a shape; a tensor already has one"
        return x.numel() * x.element_size()
    shape = torch.Size(x)  # refuses anything but a sequence of ints
    assert all(n >= 0 for n in shape), f"negative dimension in shape {tuple(shape)}"
    return math.prod(shape) * as_dtype(dtype).itemsize


def format_bytes(n_bytes: int | float, digits: int = 3) -> str:
    """Say a size in decimal and binary units, e.g. ``"2.42 GB (2.25 GiB)"``.

    GB = 10**9 bytes (what GPU spec sheets and the lecture use), GiB = 2**30 bytes
    (what ``nvidia-smi`` and most allocators report): 7% apart at this scale.
    """
    assert 0 <= n_bytes < math.inf, f"n_bytes must be a finite number >= 0, got {n_bytes!r}"
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
