"""Which device the lecture runs on, and the one-call notebook setup.

Every notebook starts with ``from lecture_utils import setup; device = setup()``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from lecture_utils import language, validate
from lecture_utils.checks import measured
from lecture_utils.language import _, translate

# Set LECTURE_DEVICE=cpu to make a GPU machine reproduce the CPU golden outputs.
DEVICE_ENV_VAR = "LECTURE_DEVICE"
DEVICE_TYPES = ("cuda", "mps", "cpu")
# Where a reader without a GPU finds published figures for every GPU-only cell.
GPU_REFERENCE = "docs/gpu/reference.md"


class DeviceError(RuntimeError, ValueError):
    """A device that does not exist here (``"cuda:99"``, ``"cuda"`` without a GPU, ``"tpu"``).

    A ``RuntimeError``, as in PyTorch (``torch.empty(1, device="cuda:99")`` raises one), so code
    written against torch catches it; also a ``ValueError``, so callers that caught the bad
    value as a ``ValueError`` (the CLIs' one-line errors) keep working.
    """


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def get_device(name: str | torch.device | None = None) -> torch.device:
    """Return the device to compute on: the one device policy of the lecture.

    With no ``name``: the ``LECTURE_DEVICE`` environment variable if set, else the
    best available of cuda, then mps, then cpu. A CUDA device always carries its index:
    ``cuda`` becomes ``cuda:$LOCAL_RANK`` under torchrun (one GPU per process), else the
    current device (``torch.cuda.set_device`` refuses a device without one). A requested device that does not
    exist here (``"cuda"`` without a GPU, ``"cuda:99"`` on a one-GPU box) raises
    instead of silently falling back to the CPU: a :class:`DeviceError` (a ``RuntimeError``,
    like torch's, and a ``ValueError``). A ``name`` that is not a string or device is a
    ``TypeError``.
    """
    if name is None:
        name = os.environ.get(DEVICE_ENV_VAR) or None
    if name is None:
        if torch.cuda.is_available():
            return _with_index(torch.device("cuda"))
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    validate.instance(name, (str, torch.device), "device")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in DEVICE_TYPES:
        raise DeviceError(f"unknown device {name!r}; valid types: {', '.join(DEVICE_TYPES)}")
    count = {"cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0,
             "mps": int(_mps_available()), "cpu": 1}[device.type]
    if count == 0:
        raise DeviceError(f"device {name!r} requested but {device.type.upper()} is not available here")
    if device.index is not None and not 0 <= device.index < count:
        valid = f"cuda:0 .. cuda:{count - 1}" if device.type == "cuda" else repr(device.type)
        raise DeviceError(f"device {name!r} does not exist; valid: {valid}")
    return _with_index(device)



def as_device(device: str | torch.device | None) -> torch.device:
    """``device`` itself when it is a ``torch.device`` (resolved once by the caller, then passed
    on); a name, or None, goes through :func:`get_device`. For code called per batch or per
    timing: a name is checked once, not on every call."""
    return device if isinstance(device, torch.device) else get_device(device)

def _with_index(device: torch.device) -> torch.device:
    """``cuda`` -> ``cuda:N``: N is ``$LOCAL_RANK`` under torchrun, else the current device."""
    if device.type != "cuda" or device.index is not None:
        return device
    local = os.environ.get("LOCAL_RANK")
    if local is None:
        return torch.device("cuda", torch.cuda.current_device())
    count = torch.cuda.device_count()
    if not (local.isdigit() and int(local) < count):
        raise DeviceError(f"LOCAL_RANK={local!r} names no GPU here; valid: 0 .. {count - 1} "
                          "(torchrun --nproc_per_node at most the number of GPUs)")
    return torch.device("cuda", int(local))


def describe_device(device: torch.device) -> str:
    """One human line, e.g. ``cuda:0 (NVIDIA H200)`` or ``cpu (2 threads)``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "cpu":
        return "cpu (" + _("{n} threads").format(n=torch.get_num_threads()) + ")"
    return device.type


def cuda_only(device: torch.device, what: str) -> bool:
    """Gate a GPU-only cell: True on a CUDA device; elsewhere print one line and return False.

    The skip line is a ``[per-device]`` line, and so is every line the GPU-only block prints
    (``measured(..., per_device=True)``), so the CPU and CUDA goldens sanitize to the same text.
    """
    if device.type == "cuda":
        return True
    measured(_("skipped on {device}").format(device=device.type),
             _("{what} needs a CUDA GPU; published figures: {reference}").format(what=translate(what),
                                                                               reference=GPU_REFERENCE),
             per_device=True)
    return False


def seed_all(seed: int, deterministic: bool = False) -> None:
    """Seed python, numpy and torch (CPU and every CUDA device). ``deterministic`` also makes
    torch refuse (or replace) kernels whose results can differ from run to run (§8.1)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic or torch.are_deterministic_algorithms_enabled():  # (the call imports inductor: 2 s)
        torch.use_deterministic_algorithms(deterministic)
    if deterministic:  # cuBLAS needs a fixed workspace to be deterministic
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def setup(seed: int = 0, device: str | torch.device | None = None) -> torch.device:
    """Seed everything, set print and plot defaults, choose the language (``lecture_utils.language``:
    Chinese in notebooks/zh/), print one ``device:`` line.

    Returns the device from :func:`get_device`.
    """
    seed_all(seed)
    chosen = get_device(device)
    # Short, fixed-width tensor prints keep golden outputs readable and stable.
    torch.set_printoptions(precision=4, sci_mode=False, linewidth=100)
    np.set_printoptions(precision=4, suppress=True, linewidth=100)
    _plot_defaults()
    language.install()  # after the plot defaults: it adds the Chinese font to them
    print(_("device: {device}").format(device=describe_device(chosen)))
    return chosen


def _plot_defaults() -> None:
    import matplotlib as mpl

    mpl.rcParams.update(
        {
            # One style for every figure, sized for a projector: text >= 12 pt at display size.
            "figure.figsize": (8.0, 4.0),
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 12,
            "axes.titlesize": 14,
            "axes.labelsize": 13,
            "legend.fontsize": 12,
            "xtick.labelsize": 12,
            "ytick.labelsize": 12,
        }
    )
    try:  # in Jupyter: twice the pixels at the same size, sharp on projectors and HiDPI screens
        from IPython import get_ipython
    except ImportError:  # a plain python3 (the GPU lane) has no inline backend
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
