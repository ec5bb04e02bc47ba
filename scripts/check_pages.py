"""Check the built site and slide decks as a reader would: in a headless Chromium.

Usage: python scripts/check_pages.py [--site build/site] [--slides build/slides]
(`make site-check`). Every page is loaded from a file:// URL with the network switched
off (CDN scripts fail fast, as they would offline) and the DOM after JavaScript ran is
checked: the page has its notebook's title, every figure is a real, non-blank PNG (as
many as the notebook stores), tracebacks appear exactly for the notebook's deliberate
errors (cells tagged raises-exception), and every link between pages resolves. Two
screenshots (the index and one deck) go to build/ for a human to look at. One line per
page; exit 1 on any failure, 2 if Chromium is missing.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import html
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import matplotlib.image
import nbformat
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from build_site import notebook_title, parse_readme_map  # noqa: E402
from build_slides import prepare_for_slides  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INSTALL_HINT = ("chromium not found: install it with "
                "`apt-get update && apt-get install -y chromium` (Debian/Ubuntu), then rerun")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
    # Offline by construction: every host name fails at once, so a CDN script is
    # simply missing (as on a plane) and nothing waits on the network.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
]
MIN_SIDE = 100  # a figure smaller than this (pixels) is not a real plot
IMG = re.compile(r"<img\b[^>]*?\bsrc=\"([^\"]*)\"", re.IGNORECASE)
STDERR_OUT = 'data-mime-type="application/vnd.jupyter.stderr"'
TRACEBACK = "Traceback (most recent call last)"
TAG = re.compile(r"<[^>]+>")


@dataclass
class Expected:
    """What a reader should see for one notebook, read off the .ipynb."""

    title: str
    figures: int
    errors: list[str]  # ename of each deliberate error output, in order
    problems: list[str] = field(default_factory=list)  # errors in untagged cells


def expected_from_notebook(nb: nbformat.NotebookNode) -> Expected:
    """Title, number of PNG figures and deliberate errors stored in ``nb``."""
    figures, errors, problems = 0, [], []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                figures += 1
            if out.get("output_type") == "error":
                if "raises-exception" in cell.metadata.get("tags", []):
                    errors.append(out["ename"])
                else:
                    problems.append(f"cell {i} stores an error ({out['ename']}) "
                                    "but is not tagged raises-exception")
    return Expected(notebook_title(nb), figures, errors, problems)


def deck_expected(nb: nbformat.NotebookNode) -> Expected:
    """What the slide deck of ``nb`` should show: its cells minus the skipped ones."""
    deck = prepare_for_slides(nb)
    deck.cells = [c for c in deck.cells if c.metadata["slideshow"]["slide_type"] != "skip"]
    return expected_from_notebook(deck)


def tracebacks(dom: str) -> list[str]:
    """Plain text of every stderr output in ``dom`` that shows a Python traceback."""
    found = []
    for chunk in dom.split(STDERR_OUT)[1:]:
        text = html.unescape(TAG.sub("", chunk.split("</pre>", 1)[0]))
        if TRACEBACK in text:
            found.append(text)
    return found


def image_problem(data: bytes) -> str | None:
    """Why ``data`` is not a real figure (None if it is one): not a PNG, tiny or blank."""
    try:
        pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    except Exception as err:  # any decoder failure means a broken figure
        return f"cannot decode PNG ({type(err).__name__})"
    if pixels.ndim < 2 or min(pixels.shape[:2]) < MIN_SIDE:
        return f"figure too small: {pixels.shape[1]}x{pixels.shape[0]} px"
    if np.ptp(pixels.reshape(-1, *pixels.shape[2:]), axis=0).max() == 0:
        return "figure is one uniform colour (blank)"
    return None


def figure_problems(dom: str) -> tuple[int, list[str]]:
    """Count inline PNG figures in ``dom`` and say what is wrong with any image."""
    count, problems = 0, []
    for src in IMG.findall(dom):
        src = html.unescape(src)
        if not src.startswith("data:"):
            problems.append(f"image not inline (page not self-contained): {src[:80]}")
            continue
        header, _, payload = src.partition(",")
        if not header.startswith("data:image/png;base64"):
            continue  # e.g. an inline SVG icon: not a figure
        count += 1
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"figure {count}: data URI is not valid base64")
            continue
        why = image_problem(data)
        if why:
            problems.append(f"figure {count}: {why}")
    return count, problems


def page_problems(dom: str, want: Expected) -> tuple[int, list[str]]:
    """Everything a reader would find wrong on one rendered notebook page (or deck)."""
    problems = list(want.problems)
    if len(dom) < 1000 or "<body" not in dom:
        return 0, problems + ["page did not load (DOM empty)"]
    if html.escape(want.title, quote=False) not in dom:
        problems.append(f"title {want.title!r} not on the page")
    figures, fig_problems = figure_problems(dom)
    problems += fig_problems
    if figures != want.figures:
        problems.append(f"{figures} figures shown, the notebook stores {want.figures}")
    shown = tracebacks(dom)
    if len(shown) != len(want.errors):
        problems.append(f"{len(shown)} tracebacks shown, expected {len(want.errors)} "
                        f"(deliberate: {', '.join(want.errors) or 'none'})")
    else:
        for text, ename in zip(shown, want.errors, strict=True):
            if ename not in text:
                problems.append(f"traceback does not name the expected {ename}")
    return figures, problems


def link_problems(dom: str, page: Path) -> list[str]:
    """Links from ``page`` to other local pages (and their #anchors) that do not resolve."""
    problems = []
    for href in re.findall(r'<a\b[^>]*?\bhref="([^"#:]+\.html)(#[^"]*)?"', dom):
        target, anchor = href
        path = page.parent / unquote(target)
        if not path.is_file():
            problems.append(f"broken link to {target}")
        elif anchor and f'id="{anchor[1:]}"' not in path.read_text(encoding="utf-8"):
            problems.append(f"link {target}{anchor}: no such anchor")
    return sorted(set(problems))


def nav_problems(dom: str, index: int, total: int) -> list[str]:
    """The prev/next bar: the first page has no previous link, the last no next one."""
    problems = []
    prevs = len(re.findall(r'<a\b[^>]*\brel="prev"', dom))
    nexts = len(re.findall(r'<a\b[^>]*\brel="next"', dom))
    if prevs != (0 if index == 0 else 2):
        problems.append(f"{prevs} 'previous' links (top and bottom bars expected)")
    if nexts != (0 if index == total - 1 else 2):
        problems.append(f"{nexts} 'next' links (top and bottom bars expected)")
    return problems


def screen_problem(png: Path) -> str | None:
    """Why a screenshot is unusable (missing or blank), else None."""
    if not png.is_file():
        return f"no screenshot written to {png}"
    pixels = matplotlib.image.imread(png)[..., :3].reshape(-1, 3)
    _, counts = np.unique((pixels * 255).astype(np.uint8), axis=0, return_counts=True)
    if counts.max() > 0.999 * len(pixels):
        return f"screenshot {png} is blank (one colour)"
    return None


class Chromium:
    """Headless Chromium, a fresh profile per call."""

    def __init__(self, binary: str, timeout: float = 90) -> None:
        self.binary, self.timeout = binary, timeout

    def _run(self, *args: str) -> str:
        with tempfile.TemporaryDirectory(prefix="check-pages-") as profile:
            done = subprocess.run([self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                   *args], capture_output=True, text=True,
                                  timeout=self.timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-300:]}")
        return done.stdout

    def dom(self, path: Path) -> str:
        return self._run("--dump-dom", path.resolve().as_uri())

    def screenshot(self, path: Path, png: Path, size: str = "1280,2000") -> None:
        png.unlink(missing_ok=True)
        self._run(f"--screenshot={png.resolve()}", f"--window-size={size}",
                  path.resolve().as_uri())


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("build/site"))
    parser.add_argument("--slides", type=Path, default=Path("build/slides"))
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--shots", type=Path, default=Path("build"),
                        help="folder for the two screenshots")
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args(argv)
    binary = find_chromium()
    if binary is None:
        print(INSTALL_HINT)
        return 2
    browser = Chromium(binary)
    start = time.perf_counter()

    sources = sorted(args.notebooks.glob("[0-9][0-9]_*.ipynb"))
    nbs = {p.stem: nbformat.read(p, as_version=4) for p in sources}
    # (label, file, expected, kind): kind "page", "deck" or "index"
    jobs: list[tuple[str, Path, Expected | None, str]] = []
    for stem, nb in nbs.items():
        jobs.append((f"{stem}.html", args.site / f"{stem}.html", expected_from_notebook(nb), "page"))
    for stem, nb in nbs.items():
        want = deck_expected(nb)
        jobs.append((f"{stem}.slides.html", args.slides / f"{stem}.slides.html", want, "deck"))
    jobs.append(("index.html", args.site / "index.html", None, "index"))

    def load(job: tuple[str, Path, Expected | None, str]) -> str | Exception:
        path = job[1]
        if not path.is_file():
            return FileNotFoundError(f"{path} missing (run make site slides)")
        try:
            return browser.dom(path)
        except Exception as err:  # report it on the page's line
            return err

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        doms = list(pool.map(load, jobs))

    failed = 0
    pages = [j for j in jobs if j[3] == "page"]
    for (label, path, want, kind), dom in zip(jobs, doms, strict=True):
        if isinstance(dom, Exception):
            problems, detail = [f"{type(dom).__name__}: {dom}"], ""
        elif kind == "index":
            rows = parse_readme_map(args.readme.read_text(encoding="utf-8"))
            problems = link_problems(dom, path)
            listed = re.findall(r'<ol class="lectures">(.*?)</ol>', dom, re.S)
            links = re.findall(r'href="([^"]+\.html)"', listed[0]) if listed else []
            if links != [f"{s}.html" for s in nbs]:
                problems.append(f"lecture list is {links}, expected the {len(nbs)} notebooks in order")
            for stem, nb in nbs.items():
                if html.escape(notebook_title(nb), quote=False) not in dom:
                    problems.append(f"title of {stem} missing")
            shown = dom.count("<tr><td>")
            if shown != len(rows):
                problems.append(f"map shows {shown} rows, README has {len(rows)}")
            detail = f"{len(links)} lectures, {shown} map rows"
        else:
            assert want is not None
            figures, problems = page_problems(dom, want)
            problems += link_problems(dom, path)
            if kind == "page":
                i = [j[0] for j in pages].index(label)
                problems += nav_problems(dom, i, len(pages))
                extra = ""
            else:
                slides = dom.count("<section")
                extra = f", {slides} slides"
                if slides <= 5:
                    problems.append(f"only {slides} <section> slides (need more than 5)")
            errs = len(want.errors)
            detail = (f"{figures} figure{'s' * (figures != 1)}, {errs} expected "
                      f"error{'s' * (errs != 1)}{extra}")
        if problems:
            failed += 1
            print(f"FAIL {label}: " + "; ".join(problems))
        else:
            print(f"ok   {label}: {detail}")

    shots = [(args.site / "index.html", args.shots / "site-index.png")]
    decks = sorted(args.slides.glob("*.slides.html"))
    if decks:
        shots.append((decks[0], args.shots / "slides-first-deck.png"))
    args.shots.mkdir(parents=True, exist_ok=True)
    for page, png in shots:
        try:
            browser.screenshot(page, png)
            why = screen_problem(png)
        except Exception as err:  # report and go on
            why = f"{type(err).__name__}: {err}"
        if why:
            failed += 1
            print(f"FAIL screenshot {png.name}: {why}")
        else:
            print(f"ok   screenshot {png}")

    total = len(jobs) + len(shots)
    print(f"{total - failed}/{total} checks passed in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
