"""Where this process trains: its device, and its rank among torchrun's processes.

Resolved once per process, before anything is built. The order matters on CUDA: the
device carries its index (``cuda:$LOCAL_RANK`` under torchrun, the current device
otherwise), ``torch.cuda.set_device`` makes it current, and only then does NCCL start,
told its device (``device_id``) so that its communicator binds to that GPU at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lecture_utils.device import get_device


@dataclass(frozen=True)
class Process:
    device: torch.device
    rank: int = 0
    world: int = 1

    @property
    def distributed(self) -> bool:
        return self.world > 1


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def start_process(device: str | None = None) -> Process:
    """Pick the device (``None``: ``$LECTURE_DEVICE``, else cuda, mps, cpu), make it current, and
    join torchrun's process group when launched by it (NCCL on CUDA, gloo elsewhere)."""
    chosen = get_device(device)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)  # needs an index: get_device always gives one
    if not launched_by_torchrun():
        return Process(chosen)
    if not dist.is_initialized():
        if chosen.type == "cuda":
            dist.init_process_group("nccl", device_id=chosen)
        else:
            dist.init_process_group("gloo")
    return Process(chosen, dist.get_rank(), dist.get_world_size())
