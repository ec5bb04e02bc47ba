"""Checking input where people type it: CLIs, configs, calculators, file loaders, device names.

Each function returns the value (cleaned up) or raises one error whose message names
the value and what would be valid: ``TypeError`` for the wrong kind of thing,
``ValueError`` for the wrong value. The CLIs print that message as one line and exit 2.
Lesson code (what a notebook teaches) does not validate: it stays short, with at most an
``assert`` where a wrong value would otherwise give a silently wrong number.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable


def integer(value, what: str, *, low: int | None = 1, high: int | None = None) -> int:
    """An int (not a bool) in ``[low, high]``; ``70e9`` is accepted where it is whole."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    _bounds(value, what, low, high)
    return int(value)


def number(value, what: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number (not a bool) in the given range (closed unless ``*_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    _bounds(value, what, low, high, low_open, high_open)
    return float(value)


def positive(value, what: str) -> float:
    """A finite number > 0."""
    return number(value, what, low=0, low_open=True)


def _bounds(value, what, low, high, low_open=False, high_open=False) -> None:
    too_low = low is not None and (value < low or (low_open and value == low))
    too_high = high is not None and (value > high or (high_open and value == high))
    if too_low or too_high:
        left = "-inf" if low is None else _show(low)
        right = "inf" if high is None else _show(high)
        interval = f"{'(' if low_open or low is None else '['}{left}, {right}{')' if high_open or high is None else ']'}"
        raise ValueError(f"{what} must be in {interval}, got {value!r}")


def _show(bound) -> str:
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def choice(value, choices: Iterable[str], what: str, *, aliases: dict[str, str] | None = None) -> str:
    """One of ``choices``, matched case-insensitively (``aliases`` maps other spellings).

    An unknown value gets the valid choices and, where one is close, a suggestion.
    """
    choices = list(choices)
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__} {value!r}; "
                        f"valid: {', '.join(choices)}")
    by_lower = {c.lower(): c for c in choices} | {a.lower(): c for a, c in (aliases or {}).items()}
    if value.lower() in by_lower:
        return by_lower[value.lower()]
    close = difflib.get_close_matches(value.lower(), list(by_lower), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(sorted({by_lower[c] for c in close}))}?" if close else ""
    raise ValueError(f"unknown {what} {value!r}{hint} (valid: {', '.join(choices)})")


def instance(value, types: type | tuple[type, ...], what: str):
    """``value`` itself, if it is an instance of ``types``."""
    if not isinstance(value, types):
        names = " or ".join(t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
                            for t in (types if isinstance(types, tuple) else (types,)))
        raise TypeError(f"{what} must be a {names}, got {type(value).__name__}")
    return value
