"""A progress bar for a long cell: drawn in a live kernel, never stored in a golden output.

``for step in progress(range(steps), desc="training"):`` shows tqdm's text bar while the loop
runs and removes it when the loop ends. The bar is one line that redraws itself (``\\r``): in a
terminal, in JupyterLab and on a live slide (RISE) alike. Not tqdm's widget: the slideshow has
no widget manager, and a widget bar froze there as its first text ("training: 0%| | 0/5").
Where the notebooks are executed to record or compare their outputs (``make test``,
``make nbval``, ``make run``, ``make regen`` and any pytest run from the checkout, through the
root ``conftest.py``), ``LECTURE_PROGRESS=0`` is set and ``progress`` returns the iterable
itself: no bar, so no output to compare.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from lecture_utils.validate import choice

PROGRESS_ENV_VAR = "LECTURE_PROGRESS"  # "0": no bars (set by the Makefile and the root conftest.py)


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (Lab, RISE, nbclient), whose output area redraws a
    ``\\r`` line though its streams are no terminal."""
    ipython = sys.modules.get("IPython")
    return getattr(ipython and ipython.get_ipython(), "kernel", None) is not None


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None) -> Iterable:
    """``iterable`` with a progress bar while it is consumed, or ``iterable`` itself under
    ``LECTURE_PROGRESS=0``. ``total``: the number of items, where ``len(iterable)`` does not
    say it (a generator); ``desc``: the bar's label."""
    if choice(os.environ.get(PROGRESS_ENV_VAR, "1"), ("0", "1"), PROGRESS_ENV_VAR) == "0":
        return iterable
    from tqdm import tqdm

    from lecture_utils.language import translate

    kernel = in_kernel()
    # In a kernel: on stdout (a plain line in Lab, where stderr is red), always drawn, redrawn at
    # most twice a second (each redraw is a message to the browser). Elsewhere on stderr, and only
    # on a terminal (disable=None): no bar in a log file or a pipe.
    return tqdm(iterable, total=total, desc=translate(desc), leave=False,
                file=sys.stdout if kernel else None,
                disable=False if kernel else None, mininterval=0.5 if kernel else 0.1)
