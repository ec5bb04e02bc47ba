"""Shared helpers for the CS336 Lecture 2 notebooks (PyTorch and resource accounting).

One module per lecture concept: ``device`` (setup, seeding), ``checks`` (assert and
label), ``memory`` (bytes), ``hardware`` (spec sheets), ``flops`` (FLOPs, MFU, days),
``bench`` (timing), ``nn`` and ``models`` (the lecture's Linear, a small GPT),
``plots`` (figures) and ``cli`` (``python -m lecture_utils ...``).
"""

from lecture_utils.checks import check, check_raises, measured
from lecture_utils.device import cuda_only, get_device, setup

__all__ = ["check", "check_raises", "cuda_only", "get_device", "measured", "setup"]
__version__ = "0.1.0"
