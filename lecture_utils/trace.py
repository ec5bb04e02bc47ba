"""Tracers the notebooks use to *see* what PyTorch does: kernels, live bytes, saved tensors.

Machinery, not lesson: the notebooks use them to measure and explain the numbers.
``OpLog`` and ``LiveBytes`` are ``TorchDispatchMode``s (the hook ``FlopCounterMode`` is built
on): every aten op that runs passes through them. ``SavedTensors`` uses
``torch.autograd.graph.saved_tensors_hooks``: every tensor saved for backward passes through it.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


class Op(NamedTuple):
    name: str  # "sin", "mul", "zero_", ... (the aten op without "aten.")
    read: int  # bytes of its distinct tensor arguments (x * x reads x once)
    written: int  # bytes of its tensor outputs


class OpLog(TorchDispatchMode):
    """Records one :class:`Op` per aten op that runs (in eager mode: one kernel each)."""

    def __init__(self):
        super().__init__()
        self.ops: list[Op] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.data_ptr(): t.nbytes for t in _tensors((args, kwargs))}
        written = sum(t.nbytes for t in _tensors(out))
        self.ops.append(Op(str(func.overloadpacket).removeprefix("aten."), sum(inputs.values()),
                           written))
        return out

    def names(self) -> list[str]:
        return [op.name for op in self.ops]

    def count(self, name: str) -> tuple[int, int]:
        """(how many ``name`` ops ran, the bytes they read)."""
        matching = [op for op in self.ops if op.name == name]
        return len(matching), sum(op.read for op in matching)


class LiveBytes(TorchDispatchMode):
    """Bytes of live tensor storages while it is active, their ``peak``, and the shapes live
    then (``at_peak``, a Counter). Pass tensors that already exist as ``existing``."""

    def __init__(self, existing=()):
        super().__init__()
        self.live: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.current, self.peak, self.at_peak = 0, 0, Counter()
        for t in existing:
            self._track(t)

    def _track(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        if id(storage) in self.live:  # an in-place op or a view: nothing new
            return
        self.live[id(storage)] = (storage.nbytes(), tuple(t.shape))
        self.current += storage.nbytes()
        if self.current > self.peak:
            self.peak, self.at_peak = self.current, Counter(s for _, s in self.live.values())
        weakref.finalize(storage, self._free, id(storage)).atexit = False  # freed: forget it

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key)[0]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in _tensors(out):
            self._track(t)
        return out


class SavedTensors:
    """``with SavedTensors() as saved: ...`` lists in ``saved.tensors`` every tensor autograd
    saves for backward, in order (a reference each: a saved weight is not a copy)."""

    def __init__(self):
        self.tensors: list[torch.Tensor] = []
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        self.tensors.append(t)
        return t

    def __enter__(self) -> SavedTensors:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)
