"""A progress bar for a long cell: drawn in a live kernel, never stored in a golden output.

``for step in progress(range(steps), desc="training"):`` shows tqdm's bar while the loop
runs (``tqdm.auto``: a widget in JupyterLab, a text line in a terminal, nothing when stderr
is not a terminal) and removes it when the loop ends. Where the notebooks are executed to
record or compare their outputs (``make test``, ``make nbval``, ``make run``, ``make regen``
and any pytest run from the checkout, through the root ``conftest.py``), ``LECTURE_PROGRESS=0``
is set and ``progress`` returns the iterable itself: no bar, so no output to compare.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from lecture_utils.validate import choice

PROGRESS_ENV_VAR = "LECTURE_PROGRESS"  # "0": no bars (set by the Makefile and the root conftest.py)


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None) -> Iterable:
    """``iterable`` with a progress bar while it is consumed, or ``iterable`` itself under
    ``LECTURE_PROGRESS=0``. ``total``: the number of items, where ``len(iterable)`` does not
    say it (a generator); ``desc``: the bar's label."""
    if choice(os.environ.get(PROGRESS_ENV_VAR, "1"), ("0", "1"), PROGRESS_ENV_VAR) == "0":
        return iterable
    from tqdm.auto import tqdm  # tqdm.notebook in a kernel with ipywidgets, else the text bar

    from lecture_utils.language import translate

    # disable=None: no text bar where stderr is not a terminal (a log file, a pipe)
    return tqdm(iterable, total=total, desc=translate(desc), leave=False, disable=None)
