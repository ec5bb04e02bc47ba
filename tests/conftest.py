"""Scheduling for `make test` / `make unit` under pytest-xdist's ``--dist loadscope``, the
browsers of the site tests, and a prepared data folder for the data pipeline's fault tests.

loadscope gives each notebook (its cells share one kernel and run in order, nbval) and each
test module or class to one worker as a unit, so a module's fixtures are built once. A test
that starts Python processes (torchrun, SIGKILL, spawn) is marked ``multiprocess`` and sits
in a class of its own: its own unit, so two of them can run on two workers. On the workers
these units are queued first, then the notebooks, then the modules (with
``--no-loadscope-reorder`` xdist keeps this order, instead of largest-count first), so the
longest work starts first and the short modules fill in at the end.

(``--dist loadgroup`` with ``xdist_group`` marks would say the same more directly, but
pytest-xdist 3.8 renames ``item._nodeid``, which pytest 9.2 no longer reads: the groups
are silently ignored and a notebook's cells would be split across workers.)
"""

import os
import shutil

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "multiprocess: starts Python processes; in a class of its own "
                                       "(its own xdist loadscope unit), scheduled first under xdist")
    config.addinivalue_line("markers", "site: builds the site or the decks, or drives Chromium; run by "
                                       "`make site-check` (and CI), not by `make test`")
    config.addinivalue_line("markers", "slow: a slow multi-process fault test (torchrun, real signals, closed "
                                       "pipes); run by `make test-slow` (and CI), not by `make test`")


def _rank(item) -> int:
    if item.get_closest_marker("multiprocess") is not None:
        assert isinstance(item.parent, pytest.Class), f"{item.nodeid}: put a multiprocess test in a class of its own"
        return 0
    return 1 if item.path.suffix == ".ipynb" else 2


def pytest_collection_modifyitems(config, items):
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")  # make mutation: mutmut runs one mutant's tests, with -x
    if mutant.startswith("lecture_utils."):  # the mutated module's own tests first: a killed mutant stops sooner
        module = f"test_{mutant.split('.')[1]}"
        items.sort(key=lambda item: not item.path.stem.startswith(module))
    if not hasattr(config, "workerinput"):  # a serial run keeps the collection order
        return
    items.sort(key=_rank)  # stable: each module's and notebook's own order is kept


CHROMIUM_HINT = "needs Chromium: apt-get update && apt-get install -y chromium (Debian/Ubuntu)"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's browsers are the system Chromium (Playwright's own download is not
    installed); without one, a browser test is skipped with one line, not a traceback."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip(CHROMIUM_HINT)
    return {**browser_type_launch_args, "executable_path": chromium}


@pytest.fixture
def prepared(tmp_path):
    """A data folder with a tiny corpus, prepared with a vocabulary of 300 (milliseconds): the 'old'
    files a user already has (tests/test_faults_data.py, test_faults_prepare.py, test_faults_slow.py)."""
    from lecture_utils import prepare

    folder = tmp_path / "data"
    (folder / "corpus").mkdir(parents=True)
    paragraphs = [f"Paragraph {i}: the hacker's kludge is a crock, per the Jargon File, entry {i * 7}."
                  for i in range(200)]
    (folder / "corpus" / "tiny.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    prepare.prepare(folder, vocab_size=300)
    return folder
