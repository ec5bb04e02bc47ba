"""Bytes measured where they are handed out: the device's allocator, on every device.

``with Allocated(device) as grown: ...`` runs a block and sets ``grown.bytes`` to what the
allocator handed out in it, net of what it took back: ``torch.cuda.memory_allocated()`` on
CUDA, ``torch.mps.current_allocated_memory()`` on MPS, and on a CPU, where torch keeps no
such counter, the allocation events of ``torch.profiler`` (``profile_memory=True``), which
its CPU allocator reports one by one. A measurement, not a sum of ``numel * element_size``:
it sees the copies, temporaries and rounding that a prediction may miss.

On a CPU the profiler knows only the blocks it saw allocated: a tensor made before the block and
freed inside it is not subtracted (torch warns on stderr). Measure blocks that free nothing older.
"""

from __future__ import annotations

import os

import torch
from torch.profiler import ProfilerActivity, profile

from lecture_utils.device import as_device
from lecture_utils.language import _

# Kineto (the profiler's backend) logs a line to stderr each time a profile starts and stops,
# which a notebook would show under the cell; level 6 keeps only what a user must see.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")


class Allocated:
    """Net bytes the allocator of ``device`` handed out inside the ``with`` block (``.bytes``),
    and what counted them (``.counter``)."""

    def __init__(self, device):
        self.device = as_device(device)
        self.bytes: int | None = None
        self.counter = {"cuda": "torch.cuda.memory_allocated()", "mps": "torch.mps.current_allocated_memory()",
                        "cpu": _("the CPU allocator's events (torch.profiler)")}[self.device.type]
        self._profile = None

    def _now(self) -> int:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return torch.cuda.memory_allocated(self.device)
        torch.mps.synchronize()
        return torch.mps.current_allocated_memory()

    def __enter__(self) -> Allocated:
        if self.device.type == "cpu":
            self._profile = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            self._profile.__enter__()
        else:
            self._start = self._now()
        return self

    def __exit__(self, *exc) -> None:
        if self._profile is None:
            self.bytes = self._now() - self._start
            return
        self._profile.__exit__(*exc)
        # each allocation is a positive event and each free a negative one, of its own bytes
        self.bytes = sum(event.self_cpu_memory_usage for event in self._profile.events())
