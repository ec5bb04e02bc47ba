"""How long a presenter waits after Alt+R: from the key to the slideshow's first slide, per notebook.

README "Presenting", step by step, in headless Chromium at 1280x720: `make lab` (in a copy of the
checkout, since presenting saves the notebook), open the notebook, wait until its kernel is idle,
click a cell, Esc, Alt+R. The figure is the seconds from the key to the first slide of the RISE
slideshow (reveal.js ready, a slide present), the median of --repeat presentations (default 3), each
on a fresh kernel; its target is `alt-r-first-slide-seconds` (docs/gpu/reference.md: 10 s on 2
cores). Also printed, with no target: the seconds from the key until every core cell has run (the
slideshow runs the code cells not tagged deeper while its title slide is up: jupyter/labextension).
Exits 1 on a core cell that fails or a gross regression (over twice the target); without Chromium
it says so and measures nothing.

    python benchmarks/alt_r.py [--repeat N] [--quick] [NAME ...]

--quick (the GPU check's rehearsal form) presents the first notebook once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _targets import report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from lab_server import api, checkout_copy, open_notebook, running_lab  # noqa: E402  (shared with tests/test_lab.py)

LESSONS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
KEY = "alt-r-first-slide-seconds"
FIRST_SLIDE = "() => !!document.querySelector('.reveal.ready .slides section.present[id^=\"slide-\"]')"
# the slideshow's core run (jupyter/labextension/src/index.js): waiting, running, done or failed
CORE_STATE = "() => document.body.dataset.lectureCore ?? null"


def shut_down_kernels(port: int) -> None:
    for session in api(port, "api/sessions"):
        api(port, f"api/sessions/{session['id']}", method="DELETE")


def present(browser, port: int, name: str) -> tuple[float, float, str]:
    """Alt+R on ``name`` in a fresh page and kernel: (seconds to the first slide, seconds until the
    core cells have all run, how their run ended: done or failed)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        open_notebook(page, port, name)
        page.locator(".jp-NotebookPanel .jp-MarkdownCell").first.click()
        page.keyboard.press("Escape")
        start = time.perf_counter()
        page.keyboard.press("Alt+r")
        first = None
        while first is None:
            frame = next((f for f in page.frames if "/rise/" in f.url), None)
            with contextlib.suppress(Exception):  # the frame may navigate while it is read
                if frame is not None and frame.evaluate(FIRST_SLIDE):
                    first = time.perf_counter() - start
            if time.perf_counter() - start > 600:
                raise RuntimeError(f"{name}: no slideshow within 10 minutes of Alt+R")
            page.wait_for_timeout(50)  # not time.sleep: playwright learns of the new frame only while it waits
        state = frame.evaluate(CORE_STATE)
        if state is None:
            raise RuntimeError(f"{name}: the slideshow runs no core cells (is jupyter/labextensions/lecture-classroom built?)")
        while state in ("waiting", "running"):
            if time.perf_counter() - start > 900:
                raise RuntimeError(f"{name}: the core cells still run 15 minutes after Alt+R")
            page.wait_for_timeout(200)
            state = frame.evaluate(CORE_STATE)
        return first, time.perf_counter() - start, state
    finally:
        context.close()
        shut_down_kernels(port)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="lines of notebooks.txt (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="presentations per notebook (the median is reported)")
    parser.add_argument("--quick", action="store_true", help="one presentation of the first notebook (a rehearsal)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in LESSONS]
    if unknown:
        parser.error(f"{unknown[0]!r} is not a line of notebooks.txt ({', '.join(LESSONS)})")
    if args.repeat < 1:
        parser.error(f"--repeat is {args.repeat}; give 1 or more")
    names = args.names or LESSONS
    if args.quick:
        names, args.repeat = names[:1], 1
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print(f"target {KEY}: not measured here (it needs Chromium: apt-get install chromium, and playwright)")
        return 0
    ok = True
    with tempfile.TemporaryDirectory(prefix="alt-r-") as tmp_name, sync_playwright() as playwright:
        tmp = Path(tmp_name)
        copy = checkout_copy(tmp, ["notebooks/rise.css", *[p for name in LESSONS for p in (
            f"notebooks/{name}.ipynb", f"notebooks/{name}.css", f"py_src/{name}.py")]])
        browser = playwright.chromium.launch(executable_path=chromium)
        with running_lab(copy, tmp) as port:
            for name in names:
                runs = []
                for _ in range(args.repeat):
                    for suffix in (".ipynb", ".py"):  # the stored notebook each time (presenting saves it)
                        folder = "notebooks" if suffix == ".ipynb" else "py_src"
                        shutil.copy2(ROOT / folder / f"{name}{suffix}", copy / folder / f"{name}{suffix}")
                    runs.append(present(browser, port, name))
                firsts = [first for first, _, _ in runs]
                cores = [core for _, core, _ in runs]
                failed = [state for _, _, state in runs if state != "done"]
                ok &= report(KEY, statistics.median(firsts), "cpu",
                             f" s: {name}, median of {', '.join(f'{s:.1f}' for s in firsts)}; the core cells all run "
                             f"{statistics.median(cores):.1f} s after Alt+R; {os.cpu_count()} CPUs")
                if failed:
                    print(f"{name}: the slideshow's core cells {failed[0]} (a cell raised)")
                    ok = False
        browser.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
