"""Shared helpers for the CS336 Lecture 2 notebooks (PyTorch and resource accounting).

One module per lecture concept:

- ``device``: ``setup``, ``get_device`` (the one device policy: ``LECTURE_DEVICE``, then
  cuda, mps, cpu), ``seed_all``, ``cuda_only``
- ``checks``: ``check``, ``check_raises``, ``measured`` and the output markers ``✓`` / ``[measured]``
- ``validate``: argument checks for the edges (CLIs, configs, calculators, loaders)
- ``dtypes``: the one dtype table (names, spec-sheet names, aliases; tf32), ``dtype_info``
- ``memory``: bytes, re-exporting ``sizes`` (``tensor_bytes``, ``format_bytes``),
  ``recipes`` (bytes per parameter, what fits a GPU) and ``training_memory``
  (a model's training memory, predicted and measured)
- ``hardware`` (spec sheets), ``flops`` (FLOPs, MFU, days), ``bench`` (timing)
- ``nn``, ``models`` (the lecture's Linear, a small GPT), ``optim`` (the six optimizers),
  ``data`` (tokens and batches), ``trace`` (tracers the notebooks use to see what ran)
- ``train`` (the trainer: ``python -m lecture_utils.train``)
- ``plots`` (figures), ``widgets`` (the ipywidgets calculators), ``cli`` (``python -m lecture_utils ...``)
"""

from lecture_utils.checks import check, check_answer, check_raises, measured
from lecture_utils.device import cuda_only, get_device, setup

__all__ = ["check", "check_answer", "check_raises", "cuda_only", "get_device", "measured", "setup"]
__version__ = "0.1.0"
