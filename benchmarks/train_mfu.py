"""Training throughput and MFU of lecture_utils.train (run by hand or `make bench`).

On a CUDA GPU: the `gpu` config (about GPT-2 small, seq 1024) in bf16 with torch's fused
AdamW (and torch.compile unless --no-compile); target (issue 7) on H100/H200: >= 45% MFU.
Elsewhere: the `tiny` config on the CPU, reported against a measured peak, no target.

    python benchmarks/train_mfu.py [--steps 30] [--batch-size 16] [--no-compile]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile

import torch

from lecture_utils.hardware import detect
from lecture_utils.train import TrainConfig, Trainer

TARGET = {"H100 SXM": 0.45, "H100 PCIe": 0.45, "H200": 0.45}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    try:  # TrainConfig checks the numbers: one line and exit 2 on bad input
        cfg = TrainConfig(config="gpu" if cuda else "tiny", steps=args.steps, warmup=min(1, args.steps),
                          val_every=0, batch_size=args.batch_size or (16 if cuda else 8),
                          seq_len=None if cuda else 64, compile=cuda and not args.no_compile)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    with tempfile.TemporaryDirectory() as out:
        records = Trainer(cfg, out, progress=False).run()
    steady = records[len(records) // 3:]  # skip warm-up and compilation steps
    tokens = statistics.median(r["tokens_per_s"] for r in steady)
    mfu = statistics.median(r["mfu"] for r in steady)
    gpu = detect("cuda") if cuda else None
    peak = f"dense bf16 peak of {gpu.name}" if gpu else "a measured matmul peak"
    print(f"{cfg.config} config: {tokens:,.0f} tokens/s, MFU {mfu:.1%} (against {peak}); "
          f"loss {records[0]['loss']:.3f} -> {records[-1]['loss']:.3f}")
    target = TARGET.get(gpu.name) if gpu else None
    if target is not None and mfu < target:
        print(f"FAIL: MFU {mfu:.1%} < {target:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
