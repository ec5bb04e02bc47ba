"""Scheduling for `make test` / `make unit` under pytest-xdist's ``--dist loadscope``, and
a fixture for tests that wait on a subprocess.

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

import shutil
import subprocess
import threading

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
def wait_for_line():
    """``wait_for_line(proc, text)`` blocks until the subprocess ``proc`` prints the line
    ``text`` on stdout: an event, not a sleep loop. Fails if ``proc`` exits first or has
    not printed it within ``timeout`` seconds (then it is killed)."""

    def wait(proc: subprocess.Popen, expected: str, timeout: float = 60) -> None:
        timer = threading.Timer(timeout, proc.kill)  # the kill ends the read below with EOF
        timer.start()
        seen = []
        try:
            for line in proc.stdout:
                line = line.decode() if isinstance(line, bytes) else line
                if line.strip() == expected:
                    return
                seen.append(line)
        finally:
            timer.cancel()
        raise AssertionError(f"no line {expected!r} (exit {proc.wait()}, killed after {timeout} s if "
                             f"negative); stdout: {seen}; stderr: {proc.stderr.read() if proc.stderr else ''}")

    return wait
