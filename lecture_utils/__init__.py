"""Shared helpers for the CS336 Lecture 2 notebooks (PyTorch and resource accounting).

One module per lecture concept: ``device`` (setup, seeding), ``checks`` (assert and
label), ``memory`` (bytes), ``plots`` (figures).
"""

from lecture_utils.checks import check, check_raises, measured
from lecture_utils.device import cuda_only, get_device, setup

__all__ = ["check", "check_raises", "cuda_only", "get_device", "measured", "setup"]
__version__ = "0.1.0"
