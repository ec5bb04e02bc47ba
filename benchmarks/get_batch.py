"""get_batch throughput: the vectorised sampler against the lecture's list-based one.

Target (issue 5): at least 5x at batch 64 x seq 1024 on the CPU, measured in one run.
On CUDA it also reports pinned versus pageable host-to-device copies (target on
H100/H200: pinned >= 45 GB/s).

    python benchmarks/get_batch.py
"""

from __future__ import annotations

import sys

import torch

from lecture_utils import get_device
from lecture_utils.bench import time_fn
from lecture_utils.data import data_dir, get_batch, get_batch_lecture, load_tokens

TARGET = 5.0


def main() -> int:
    data = load_tokens(data_dir() / "tokens" / "train.bin")
    torch.set_num_threads(1)  # a sampler is one thread's work; a busy second core would add noise
    ok = True
    t_vec = time_fn(get_batch, data, 64, 1024, "cpu", min_run_time=1.0)
    t_list = time_fn(get_batch_lecture, data, 64, 1024, "cpu", min_run_time=1.0)
    ratio = t_list / t_vec
    print(f"get_batch 64 x 1024 on cpu: vectorised {t_vec * 1e3:.3f} ms, lecture's list-based "
          f"{t_list * 1e3:.3f} ms: {ratio:.1f}x (target >= {TARGET:g}x)")
    ok &= ratio >= TARGET
    device = get_device()
    if device.type == "cuda":
        host = torch.randint(0, 8192, (64, 1024 * 64), dtype=torch.int64)
        pinned = host.pin_memory()
        for name, src in (("pageable", host), ("pinned", pinned)):
            seconds = time_fn(lambda s: s.to(device, non_blocking=True), src, min_run_time=1.0)
            gbps = src.numel() * src.element_size() / seconds / 1e9
            print(f"host-to-device copy, {name}: {gbps:.1f} GB/s")
            if name == "pinned":
                ok &= gbps >= 45
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
