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

import importlib

# The notebooks' first names, imported when first used: `import lecture_utils` itself loads no torch,
# so a command line (python -m lecture_utils...) can answer a Ctrl-C during its start in one line.
_HOMES = {"check": "checks", "check_answer": "exercises", "measured": "checks",
          "cuda_only": "device", "get_device": "device", "setup": "device"}
__all__ = sorted(_HOMES)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'lecture_utils' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lecture_utils.{_HOMES[name]}"), name)
    globals()[name] = value  # later lookups find it directly
    return value
