"""Bytes measured where they are handed out: the device's allocator, on every device.

``with Allocated(device) as grown: ...`` runs a block and sets ``grown.bytes`` to what the
allocator handed out in it, net of what it took back: ``torch.cuda.memory_allocated()`` on
CUDA, ``torch.mps.current_allocated_memory()`` on MPS, and on a CPU, where torch keeps no
such counter, the allocation events of ``torch.profiler`` (``profile_memory=True``), which
its CPU allocator reports one by one. A measurement, not a sum of ``numel * element_size``:
it sees the copies, temporaries and rounding that a prediction may miss.

On a CPU only what the block allocated is counted: the blocks it allocated and still holds at its
end. A tensor made before the block and freed inside it is not subtracted (before any profile, torch
warns on stderr that it cannot size it), so a notebook cell run again, whose names rebound inside the
block free the tensors of its previous run, measures the same bytes each time. CUDA's and MPS's
counters subtract such a free: there, measure blocks that free nothing older.
"""

from __future__ import annotations

import os

import torch
from torch._C._profiler import _EventType
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
        self.bytes = sum(_held(self._profile).values())


def _held(prof) -> dict[int, int]:
    """The CPU blocks allocated inside ``prof`` and not freed inside it: address -> bytes. Each
    allocation is an event with its address and a positive size, each free one with a negative size;
    a free of a block allocated before (which the profiler may still size) is not the block's."""
    events, todo = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while todo:
        event = todo.pop()
        todo.extend(event.children)
        if event.tag == _EventType.Allocation and event.extra_fields.device.type == "cpu":
            events.append(event)
    held: dict[int, int] = {}
    for event in sorted(events, key=lambda e: e.start_time_ns):
        fields = event.extra_fields
        if fields.alloc_size > 0:
            held[fields.ptr] = fields.alloc_size
        else:
            held.pop(fields.ptr, None)
    return held
