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

from lecture_utils.language import _, translate

# The output markers, spelled here only: device, hardware and scripts/ import them.
CHECK_MARK = "✓"
MEASURED_PREFIX = "[measured]"
PER_DEVICE_PREFIX = "[per-device]"
REF = "[ref {}]"  # after a measured value: the docs/gpu/reference.md row it is measured for


def _close(got, expected, rel: float, abs_: float) -> bool:
    if _masked(got) or _masked(expected):
        return False  # a masked entry is hidden, not a value: np.asarray would compare its stale data
    if isinstance(got, torch.Tensor) or isinstance(expected, torch.Tensor):
        got_t, exp_t = _tensor(got), _tensor(expected)
        if got_t.shape != exp_t.shape or (got_t.dtype == torch.bool) != (exp_t.dtype == torch.bool):
            return False  # another shape; or a flag for a count (torch.tensor(True) is not 12)
        if rel == 0 and abs_ == 0:
            return _exactly(got_t, exp_t)
        return bool(torch.allclose(got_t.double(), exp_t.double(), rtol=rel, atol=abs_, equal_nan=True))
    if isinstance(got, np.ndarray) or isinstance(expected, np.ndarray):
        got_a, exp_a = np.asarray(got), np.asarray(expected)
        if got_a.shape != exp_a.shape or (got_a.dtype == bool) != (exp_a.dtype == bool):
            return False
        if rel == 0 and abs_ == 0:
            return bool(np.array_equal(got_a, exp_a))  # numpy compares in a dtype that holds both
        return bool(np.allclose(got_a, exp_a, rtol=rel, atol=abs_, equal_nan=True))
    if isinstance(got, bool | np.bool_) != isinstance(expected, bool | np.bool_):
        return False  # True == 1 in Python, but a flag is not a count
    both_numbers = isinstance(got, numbers.Number) and isinstance(expected, numbers.Number)
    if both_numbers and not isinstance(got, bool) and not isinstance(expected, bool):
        if rel == 0 and abs_ == 0:
            return got == expected or (got != got and expected != expected)  # nan == nan here
        return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)
    # A tolerance on strings or tuples would be silently ignored: say so instead.
    assert not (rel or abs_), f"rel/abs tolerances need numbers or tensors, got {type(got).__name__}"
    return got == expected


def _tensor(value) -> torch.Tensor:
    """``value`` as a tensor; a Python float as what it is, a float64 (torch.as_tensor rounds it to float32)."""
    t = torch.as_tensor(value)
    if isinstance(value, torch.Tensor | np.ndarray) or not (t.is_floating_point() or t.is_complex()):
        return t
    return torch.as_tensor(value, dtype=torch.complex128 if t.is_complex() else torch.float64)


def _masked(value) -> bool:
    return isinstance(value, np.ma.MaskedArray) and bool(np.ma.is_masked(value))


def _exactly(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """The same values, each as its own dtype holds it. Neither is cast into the other's dtype: bfloat16
    would round a wrong 76,219 and the right 76,293 alike to 76,288, float16 turns 720,896 into inf."""
    if got.dtype == expected.dtype:
        return bool(torch.equal(got, expected))
    got, expected = got.cpu(), expected.cpu()  # where float64 exists (MPS has none)
    wide = (torch.complex128 if got.is_complex() or expected.is_complex() else
            torch.float64 if got.is_floating_point() or expected.is_floating_point() else torch.int64)
    # an int64 beyond 2**53 has no float64 of its own: it is equal to no float
    return bool(torch.equal(got.to(wide), expected.to(wide))
                and all(torch.equal(t.to(wide).to(t.dtype), t) for t in (got, expected)))


def rounded_by(got, expected) -> str | None:
    """The dtype of ``got`` (a tensor or an array) when ``got`` is ``expected`` rounded into that dtype,
    and not ``expected`` itself: bfloat16's 76,288 for 76,293, float16's inf for 720,896, True for 12."""
    try:
        if isinstance(got, torch.Tensor):
            squeezed = _tensor(expected).to(got.dtype)
        elif isinstance(got, np.ndarray):  # a masked got is not close to anything: _close says so below
            with np.errstate(over="ignore", invalid="ignore"):  # an overflow to inf is what is looked for
                squeezed = np.asarray(expected).astype(got.dtype)
        else:
            return None
        return str(got.dtype) if _close(got, squeezed, 0, 0) and not _close(got, expected, 0, 0) else None
    except Exception:  # an expected value no cast takes (a string, a tuple): nothing was rounded
        return None


def _short(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        # 6300000000000000000000000 is unreadable: show 6.3e+24, and say the check was exact
        try:
            return _("{value} (an exact integer)").format(value=f"{value:.6g}")
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

    An exact check compares the values as given: the expected value is never cast into ``got``'s
    dtype (a bfloat16 76,288 is not 76,293, a float16 inf is not 720,896; the failure says when that
    dtype rounded it), a Python float is the float64 it is, and a bool is not a number.
    For arrays compared with a tolerance it prints their shape and dtype instead of digits that
    vary by machine. Works for numbers, strings, tuples, numpy arrays and tensors. A failed
    check raises ``AssertionError`` showing both values.
    """
    if raises is not None:
        return _check_raises(name, raises, got)
    if not _close(got, expected, rel, abs):
        tol = f" (rel={rel}, abs={abs})" if rel or abs else " (exact)"
        rounded = rounded_by(got, expected)
        note = f"\n    note:     {rounded} rounds the expected value to this: compute in a wider dtype" if rounded else ""
        raise AssertionError(
            f"✗ {name}{tol}\n    got:      {_short(got)}\n    expected: {_short(expected)}{note}"
        )
    if (rel or abs) and isinstance(got, (torch.Tensor, np.ndarray)):
        # The last bits of a float array vary with thread count; print what was checked.
        matches = _("{kind} {shape} {dtype} matches (rel={rel}, abs={abs})").format(
            kind=type(got).__name__, shape=tuple(got.shape), dtype=got.dtype, rel=f"{rel:g}", abs=f"{abs:g}")
        print(f"{CHECK_MARK} {translate(name)}: {matches}")
        return None
    print(f"{CHECK_MARK} {translate(name)}: {_short(got)}")
    return None


def _check_raises(name: str, error: type[BaseException], fn) -> BaseException:
    try:
        result = fn()
    except error as err:
        print(f"{CHECK_MARK} {translate(name)}: " + _("raises {error}").format(error=type(err).__name__))
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
        text = translate(str(value))
    if unit:
        text += " " + translate(unit)
    if spread is not None:
        timings = spread if isinstance(spread, tuple) else (spread,)
        threads = timings[0].threads
        text += f" ±{sum(t.spread for t in timings):.0%} (" + (
            _("1 thread") if threads == 1 else _("{n} threads").format(n=threads)) + ")"
    prefix = _("[per-device]") if per_device else _("[measured]")  # PER_DEVICE_PREFIX, MEASURED_PREFIX
    print(f"{prefix} {translate(name)}: {text}" + (f"  {REF.format(ref)}" if ref else ""))

