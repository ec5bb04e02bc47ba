"""nbval from this checkout as its documentation shows it: `pytest --nbval notebooks/`.

Any pytest run from the checkout (the rootdir is the one of pyproject.toml, so this file is
loaded for `notebooks/`, one notebook or `tests/`) gets what `make test` passes by hand, where
the caller chose nothing else:

- ``--nbval-sanitize-with tests/nbval_sanitize.cfg``: the project's sanitizer, so that a
  ``[measured]`` value, a run of ``[per-device]`` lines and the ``device:`` line are masked
  (a ``✓`` line is still compared exactly). A caller's own ``--nbval-sanitize-with`` wins.
- ``--nbval-current-env``: the notebooks run on a kernel of the Python that runs pytest, not
  on the kernel named in the notebook (which only ``make setup`` registers). A caller's
  ``--nbval-current-env`` or ``--nbval-kernel-name`` wins.
- ``--dist loadscope`` under ``-n``: one worker per notebook, whose cells share one kernel
  and run in order. xdist's own default (``load``) spreads a notebook's cells over kernels
  that never ran the cells before them. A caller's ``--dist`` wins.
- ``OMP_NUM_THREADS=1`` in each xdist worker, and so in its kernels, as the Makefile sets it:
  two workers and their kernels with a thread per core each oversubscribe the cores. A value
  the caller set wins (a serial run keeps torch's default).
- ``LECTURE_PROGRESS=0`` in every pytest process, and so in the kernels nbval starts, as the
  Makefile's ``make run``/``make regen`` set it: ``lecture_utils.progress`` draws no bar, so
  a long cell's bar is never part of an output nbval compares. A value the caller set wins.

tests/test_nbval_plain.py runs the plain form on a notebook and fails if this stops applying.
"""

import os
from pathlib import Path

import pytest

SANITIZE = Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"


@pytest.hookimpl(tryfirst=True)  # before xdist's, which turns "no --dist" into "load"
def pytest_cmdline_main(config):
    option = config.option
    if getattr(option, "numprocesses", None) and option.dist == "no" and not option.distload:
        option.dist = "loadscope"


@pytest.hookimpl(trylast=True)  # after nbval's, which maps its deprecated aliases first
def pytest_configure(config):
    option = config.option
    os.environ.setdefault("LECTURE_PROGRESS", "0")  # inherited by the kernels nbval starts
    if hasattr(config, "workerinput"):  # an xdist worker: torch is not imported here yet
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not hasattr(option, "nbval_sanitize_with"):  # nbval not installed (or -p no:nbval)
        return
    if option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE)  # absolute: nbval opens it from pytest's cwd
    if not option.nbval_current_env and not option.nbval_kernel_name:
        option.nbval_current_env = True


ZH = Path(__file__).resolve().parent / "notebooks" / "zh"


def pytest_ignore_collect(collection_path, config):
    """notebooks/zh/ holds the Chinese notebooks, generated from the English ones (scripts/i18n.py):
    the same code and outputs, which tests/test_i18n.py checks without a kernel. `pytest --nbval
    notebooks/` runs the eight once, not twice; a Chinese notebook named on the command line runs."""
    if collection_path == ZH and not any(Path(a).resolve() == ZH for a in config.args if "::" not in a):
        return True
    return None
