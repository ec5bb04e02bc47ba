"""Where this process trains: its device, and its rank among torchrun's processes.

Resolved once per process, before anything is built. The order matters on CUDA: the
device carries its index (``cuda:$LOCAL_RANK`` under torchrun, the current device
otherwise), ``torch.cuda.set_device`` makes it current, and only then does NCCL start,
told its device (``device_id``) so that its communicator binds to that GPU at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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


def available_bytes(device: torch.device) -> int | None:
    """Memory a step can still take: free GPU memory on CUDA, the kernel's MemAvailable on a CPU
    (None where it cannot be read: MPS, a system without /proc)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(model_cfg, micro_per_rank: int, seq_len: int, device: torch.device, *, batch_size: int,
               accum: int) -> None:
    """Refuse, before anything is allocated, a batch whose step cannot fit in this machine's memory
    (one line, ValueError). The step is predicted by ``gpt_step_memory`` (fp32: parameters, AdamW
    state, every saved activation, the loss's buffers) plus the int64 token windows. On CUDA the
    trainer halves the micro-batch when a step runs out of memory, so only a step of one sequence
    per process must fit there; on a CPU the configured micro-batch must."""
    from lecture_utils.sizes import format_bytes
    from lecture_utils.training_memory import gpt_step_memory

    free = available_bytes(device)
    if free is None:
        return
    sequences = 1 if device.type == "cuda" else micro_per_rank
    windows = micro_per_rank * (seq_len + 1) * 8  # the int64 windows, built on the host
    need = gpt_step_memory(model_cfg, sequences, seq_len).peak + (0 if device.type == "cuda" else windows)
    if need > free:
        raise ValueError(f"--batch-size {batch_size} does not fit: one step of {sequences:,} sequence(s) x "
                         f"{seq_len} tokens needs about {format_bytes(need)} (parameters, AdamW state, "
                         f"activations, token windows), and {device} has {format_bytes(free)} available; "
                         f"lower --batch-size, or raise --accum (now {accum}) to split each step")
    host = available_bytes(torch.device("cpu"))
    if device.type == "cuda" and host is not None and windows > host:
        raise ValueError(f"--batch-size {batch_size} does not fit: its token windows alone need "
                         f"{format_bytes(windows)} of host memory, and {format_bytes(host)} is available; "
                         f"lower --batch-size, or raise --accum (now {accum})")
