"""Shared helpers for the CS336 Lecture 2 notebooks (PyTorch and resource accounting).

One module per lecture concept: the module map is in CONTRIBUTING.md.
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
