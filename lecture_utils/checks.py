"""Every claim a notebook makes is checked, and every measurement is labelled.

``check`` asserts (a value, or that a call raises) and prints one ``✓`` line; ``measured`` prints a ``[measured]``
line whose value nbval masks (tests/nbval_sanitize.cfg) because timings vary by machine; its label
and the number of such lines are still compared. Lines that exist only on some devices, or whose
label depends on the device, print as ``[per-device]``; nbval folds a run of them into one, so the
CPU golden also holds on a GPU.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

# The output markers, spelled here only: device, hardware and scripts/ import them.
CHECK_MARK = "✓"
MEASURED_PREFIX = "[measured]"
PER_DEVICE_PREFIX = "[per-device]"
REF = "[ref {}]"  # after a measured value: the docs/gpu/reference.md row it is measured for


def _close(got, expected, rel: float, abs_: float) -> bool:
    if isinstance(got, torch.Tensor) or isinstance(expected, torch.Tensor):
        got_t, exp_t = torch.as_tensor(got), torch.as_tensor(expected)
        if got_t.shape != exp_t.shape:
            return False
        if rel == 0 and abs_ == 0:
            return bool(torch.equal(got_t, exp_t.to(got_t.dtype)))
        return bool(torch.allclose(got_t.double(), exp_t.double(), rtol=rel, atol=abs_, equal_nan=True))
    if isinstance(got, np.ndarray) or isinstance(expected, np.ndarray):
        got_a, exp_a = np.asarray(got), np.asarray(expected)
        if got_a.shape != exp_a.shape:
            return False
        if rel == 0 and abs_ == 0:
            return bool(np.array_equal(got_a, exp_a))
        return bool(np.allclose(got_a, exp_a, rtol=rel, atol=abs_, equal_nan=True))
    if isinstance(got, bool) != isinstance(expected, bool):
        return False  # True == 1 in Python, but a flag is not a count
    both_numbers = isinstance(got, numbers.Number) and isinstance(expected, numbers.Number)
    if both_numbers and not isinstance(got, bool) and not isinstance(expected, bool):
        if rel == 0 and abs_ == 0:
            return got == expected or (got != got and expected != expected)  # nan == nan here
        return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)
    # A tolerance on strings or tuples would be silently ignored: say so instead.
    assert not (rel or abs_), f"rel/abs tolerances need numbers or tensors, got {type(got).__name__}"
    return got == expected


def _short(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        # 6300000000000000000000000 is unreadable: show 6.3e+24, and say the check was exact
        try:
            return f"{value:.6g} (an exact integer)"
        except OverflowError:  # beyond any float (10**400): its size, and never its 4,300+ digits
            sign, digits = "-" if value < 0 else "", int((value.bit_length() - 1) * 0.30103)  # log10(2)
            return f"about {sign}10**{digits} (an exact integer of {value.bit_length():,} bits)"
    text = repr(value) if not isinstance(value, (torch.Tensor, np.ndarray)) else str(value)
    return text if len(text) <= 200 else text[:197] + "..."


def check(name: str, got, expected=None, rel: float = 0, abs: float = 0, *,  # noqa: A002
          raises: type[BaseException] | None = None):
    """Assert ``got`` equals ``expected`` (exactly, or within ``rel``/``abs``), and print one
    ``✓ name: got`` line; or, with ``raises=``, that calling ``got`` raises that error
    (``✓ name: raises Error``), returning the exception so its message can be shown.

    For arrays compared with a tolerance it prints their shape and dtype instead of digits that
    vary by machine. Works for numbers, strings, tuples, numpy arrays and tensors. A failed
    check raises ``AssertionError`` showing both values.
    """
    if raises is not None:
        return _check_raises(name, raises, got)
    if not _close(got, expected, rel, abs):
        tol = f" (rel={rel}, abs={abs})" if rel or abs else " (exact)"
        raise AssertionError(
            f"✗ {name}{tol}\n    got:      {_short(got)}\n    expected: {_short(expected)}"
        )
    if (rel or abs) and isinstance(got, (torch.Tensor, np.ndarray)):
        # The last bits of a float array vary with thread count; print what was checked.
        shape = tuple(got.shape)
        print(f"{CHECK_MARK} {name}: {type(got).__name__} {shape} {got.dtype} "
              f"matches (rel={rel:g}, abs={abs:g})")
        return None
    print(f"{CHECK_MARK} {name}: {_short(got)}")
    return None


def _check_raises(name: str, error: type[BaseException], fn) -> BaseException:
    try:
        result = fn()
    except error as err:
        print(f"{CHECK_MARK} {name}: raises {type(err).__name__}")
        return err
    except Exception as other:
        raise AssertionError(f"✗ {name}\n    expected: {error.__name__}\n"
                             f"    raised:   {type(other).__name__}: {other}") from other
    raise AssertionError(f"✗ {name}\n    expected: {error.__name__}\n"
                         f"    returned: {_short(result)}")


def measured(name: str, value, unit: str = "", digits: int = 3, *, per_device: bool = False,
             ref: str | None = None, spread=None) -> None:
    """Print a machine-dependent value as ``[measured] name: value unit``.

    Use it for anything timed or read off this machine, never for computed numbers
    (those go through :func:`check` so nbval compares them exactly). nbval masks the
    value but compares ``name``, so a name must not contain a measured number.
    ``per_device=True`` (inside a GPU-only block, or when ``name`` depends on the device)
    prints ``[per-device] name: value unit`` instead. ``ref`` names the row of
    docs/gpu/reference.md this value is measured for (``  [ref KEY]`` after it): the GPU check
    puts the value in that row's "Measured here" column. ``spread``: the
    :class:`lecture_utils.bench.Timing` the value comes from, or a tuple of them for a ratio
    (relative spreads add up), printed as ``±4% (1 thread)`` after the value.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        text = f"{value:.{digits}g}"
    else:
        text = str(value)
    if unit:
        text += " " + unit
    if spread is not None:
        timings = spread if isinstance(spread, tuple) else (spread,)
        threads = timings[0].threads
        text += f" ±{sum(t.spread for t in timings):.0%} ({threads} thread{'' if threads == 1 else 's'})"
    prefix = PER_DEVICE_PREFIX if per_device else MEASURED_PREFIX
    print(f"{prefix} {name}: {text}" + (f"  {REF.format(ref)}" if ref else ""))

