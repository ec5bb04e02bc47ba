"""Check the built site and slide decks as a reader would see them: in headless Chromium, offline.

Usage: python scripts/check_pages.py [--site build/site] [--slides build/slides]
(`make site-check`). Every HTML page under --site (folders starting with `_` hold
assets and are skipped) and under --slides is opened from a file:// URL by Playwright
in the system Chromium. Every request that is not a local file is blocked and is a
failure (the pages must work with the network off), and so is a local file that is
missing. After MathJax has finished, each page must have:
- no math left unrendered in its visible text (`$...$`, `$$`, `\\(`, `\\[`) outside code;
- no output of an exercise solution (a cell tagged `solution`) visible before a click;
- every image decoded and with alt text; every local link and #anchor resolving.
Each deck (`*.slides.html`) must also initialise reveal.js (`Reveal.isReady()`), and
every slide, visited with `Reveal.slide(h, v)`, must fit 1280x720 with its math rendered,
and no box on it may scroll or clip its content (the decks wrap long lines instead).
Screenshots of one page and one deck slide go to build/screenshots/.
Prints `ok` per page or one `FAIL` line per problem; exit 0 if all pass, 1 on any
failure, 2 if Chromium or Playwright is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import matplotlib.image
import numpy as np

REVEAL_READY = "() => window.Reveal && Reveal.isReady && Reveal.isReady()"
WIDTH, HEIGHT = 1280, 720
CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = ("chromium not found: install it with "
                "`apt-get update && apt-get install -y chromium` (Debian/Ubuntu), then rerun")
# nbconvert's stand-in when a figure has no description: not alt text.
PLACEHOLDER_ALT = "No description has been provided for this image"
ID = re.compile(r"""\b(?:id|name)=["']([^"']*)["']""")

# In-page helpers shared by the checks below (plain DOM, no page library assumed).
JS_HELPERS = r"""
const SKIP = 'pre, code, script, style, textarea, kbd, samp, aside.notes, '
           + '.MathJax, .MathJax_Display, .MathJax_Preview, .MathJax_CHTML, mjx-container, '
           + '.highlight';
const RAW_MATH = /\$\$|\\\(|\\\[|\$[^$\s][^$]*\$/;
// Rendered for the reader: not display:none, not visibility:hidden, not in a closed <details>.
function shown(el) {
  // In a deck only the present slide is on screen; reveal.js keeps its neighbours laid out.
  const slide = el.closest('.reveal .slides section');
  if (slide && !slide.classList.contains('present')) return false;
  return el.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true})
    && el.getClientRects().length > 0;
}
// Text blocks under root that still show TeX delimiters.
function rawMath(root) {
  const byBlock = new Map();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(SKIP) || !shown(p)) continue;
    const block = p.closest('p, li, td, th, h1, h2, h3, h4, h5, h6, dd, dt, figcaption, blockquote') || p;
    byBlock.set(block, (byBlock.get(block) || '') + n.data);
  }
  const found = [];
  for (const text of byBlock.values()) {
    const m = text.match(RAW_MATH);
    if (m) {
      const at = Math.max(0, m.index - 20);
      found.push(text.slice(at, m.index + m[0].length + 20).replace(/\s+/g, ' ').trim());
    }
  }
  return found;
}
async function mathDone() {
  const mj = window.MathJax;
  if (!mj) return;
  if (mj.Hub && mj.Hub.Queue) {                       // MathJax 2
    await new Promise(resolve => mj.Hub.Queue(resolve));
  } else if (mj.startup && mj.startup.promise) {      // MathJax 3
    await mj.startup.promise;
    if (mj.typesetPromise) await mj.typesetPromise();
  }
}
function label(el) {
  const h = el.querySelector('h1, h2, h3, h4, h5, h6');
  return ((h || el).textContent || '').replace(/¶/g, '').replace(/\s+/g, ' ').trim().slice(0, 50);
}
"""

JS_PAGE = JS_HELPERS + r"""
async () => {
  // A MathJax 3 config object is in place before the library itself has loaded.
  for (let i = 0; i < 50 && window.MathJax && !MathJax.Hub && !MathJax.startup; i++) {
    await new Promise(r => setTimeout(r, 100));
  }
  await mathDone();
  const images = [];
  for (const img of document.images) {
    img.loading = 'eager';
    const ok = await img.decode().then(() => img.naturalWidth > 0, () => false);
    images.push({src: img.getAttribute('src') || '', alt: img.getAttribute('alt'), ok});
  }
  const solutions = [];
  for (const cell of document.querySelectorAll('[class*="tag_solution"]')) {
    const outs = cell.querySelectorAll('.jp-OutputArea-output, .cell_output, .output_area, .output');
    const seen = [...outs].find(o => shown(o) && o.getBoundingClientRect().height > 0);
    if (seen) solutions.push((seen.innerText || '').replace(/\s+/g, ' ').trim().slice(0, 50));
  }
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href)
    .filter(h => h.startsWith('file:'));
  const ids = [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name);
  return {raw: rawMath(document.body), images, solutions, links, ids,
          isDeck: !!document.querySelector('.reveal .slides')};
}
"""

JS_SLIDES = JS_HELPERS + r"""
async ([width, height]) => {
  Reveal.configure({transition: 'none', backgroundTransition: 'none'});
  const slides = [];
  const stacks = Reveal.getHorizontalSlides();
  for (let h = 0; h < stacks.length; h++) {
    const count = Math.max(1, stacks[h].querySelectorAll(':scope > section').length);
    for (let v = 0; v < count; v++) {
      Reveal.slide(h, v);
      await mathDone();
      const s = Reveal.getCurrentSlide();
      // scrollHeight/Width: the laid-out content, unscaled. A box inside the slide that
      // scrolls or clips its content hides what the audience should see: count those too.
      const boxes = [...s.querySelectorAll('*')].filter(e => {
        // MathJax's copy for screen readers is clipped on purpose, never seen
        if (!shown(e) || e.closest('.MJX_Assistive_MathML, mjx-assistive-mml')) return false;
        const cs = getComputedStyle(e);
        return (e.scrollHeight > e.clientHeight + 1 && cs.overflowY !== 'visible') ||
               (e.scrollWidth > e.clientWidth + 1 && cs.overflowX !== 'visible');
      }).map(e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`.slice(0, 60));
      slides.push({h, v, title: label(s), w: s.scrollWidth, h_px: s.scrollHeight,
                   raw: rawMath(s), boxes});
    }
  }
  Reveal.slide(0, 0);
  return slides;
}
"""


@dataclass
class Report:
    """What one page or deck showed: ``problems`` empty means it passed."""
    label: str
    problems: list[str] = field(default_factory=list)
    detail: str = ""


def anchors_in(path: Path) -> set[str]:
    """Every id (and a name=) in an HTML file, raw and percent-decoded."""
    ids = {html.unescape(i) for i in ID.findall(path.read_text(encoding="utf-8", errors="replace"))}
    return ids | {unquote(i) for i in ids}


def link_problems(links: list[str], page: Path, page_ids: list[str]) -> list[str]:
    """Local links from ``page`` (absolute file: URLs) whose file or #anchor is missing."""
    problems = []
    here = set(page_ids) | {unquote(i) for i in page_ids}
    for url in dict.fromkeys(links):
        parts = urlsplit(url)
        target = Path(url2pathname(parts.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"broken link to {unquote(parts.path)}")
            continue
        anchor = parts.fragment
        # "#/2/1" is a reveal.js route to a slide, not an element id.
        if not anchor or anchor.startswith("/") or target.suffix.lower() not in (".html", ".htm"):
            continue
        ids = here if target.resolve() == page.resolve() else anchors_in(target)
        if anchor not in ids and unquote(anchor) not in ids:
            problems.append(f"link to {target.name}#{anchor}: no such anchor")
    return problems


def image_problems(images: list[dict]) -> list[str]:
    problems = []
    for i, img in enumerate(images, 1):
        src = img["src"] if not img["src"].startswith("data:") else img["src"][:30] + "..."
        if not img["ok"]:
            problems.append(f"image {i} ({src}) does not load or decode")
        alt = (img["alt"] or "").strip()
        if not alt or alt == PLACEHOLDER_ALT:
            problems.append(f"image {i} ({src}) has no alt text")
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


class Checker:
    """One headless Chromium (Playwright), offline, reused for every page."""

    def __init__(self, chromium: str = CHROMIUM, timeout_s: float = 15) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=chromium)
        self.timeout_ms = timeout_s * 1000

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check(self, path: Path, label: str | None = None, screenshot: Path | None = None) -> Report:
        """Open ``path`` offline and report what is wrong with it. A deck is walked
        slide by slide; ``screenshot`` (a deck's second slide, or the page) is saved."""
        report = Report(label or path.name)
        context = self.browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        network: list[str] = []
        missing: list[str] = []
        errors: list[str] = []

        def route(r):  # only local files: anything else is what a CDN would serve
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                network.append(r.request.url)
                r.abort("internetdisconnected")

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(self.timeout_ms)
        page.on("requestfailed", lambda r: missing.append(r.url) if r.url.startswith("file:") else None)
        page.on("pageerror", lambda e: errors.append(str(e).splitlines()[0][:120]))
        try:
            page.goto(path.resolve().as_uri(), wait_until="load")
            if page.locator(".reveal").count():  # a deck: look at it as laid out by reveal.js,
                with contextlib.suppress(Exception):  # not before (_check_deck reports a failure)
                    page.wait_for_function(REVEAL_READY, timeout=self.timeout_ms)
            found = page.evaluate(JS_PAGE)
            problems = report.problems
            problems += [f"network request to {u}" for u in dict.fromkeys(network)]
            problems += [f"missing file {unquote(urlsplit(u).path)}" for u in dict.fromkeys(missing)]
            problems += [f"JavaScript error: {e}" for e in dict.fromkeys(errors)]
            problems += [f"unrendered math: '{t}'" for t in found["raw"]]
            problems += [f"solution output visible without a click: '{s}'" for s in found["solutions"]]
            problems += image_problems(found["images"])
            problems += link_problems(found["links"], path, found["ids"])
            report.detail = f"{len(found['images'])} images, {len(found['links'])} local links"
            if found["isDeck"]:
                self._check_deck(page, report)
            if screenshot is not None:
                if found["isDeck"]:  # the first slide after the title
                    page.evaluate("() => window.Reveal && Reveal.isReady() && Reveal.slide(1, 0)")
                    page.wait_for_timeout(300)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot))
                why = screen_problem(screenshot)
                if why:
                    report.problems.append(why)
        except Exception as err:  # a page that hangs or crashes is one failure, not a traceback
            report.problems.append(f"{type(err).__name__}: {str(err).splitlines()[0][:200]}")
        finally:
            context.close()
        return report

    def _check_deck(self, page, report: Report) -> None:
        try:
            page.wait_for_function(REVEAL_READY, timeout=self.timeout_ms)
        except Exception:
            report.problems.append("Reveal not initialised (reveal.js missing or failed)")
            return
        slides = page.evaluate(JS_SLIDES, [WIDTH, HEIGHT])
        for s in slides:
            where = f"slide {s['h'] + 1}.{s['v'] + 1} '{s['title']}'"
            if s["w"] > WIDTH or s["h_px"] > HEIGHT:
                report.problems.append(f"{where} overflows: {s['w']}x{s['h_px']} px > {WIDTH}x{HEIGHT}")
            if s["boxes"]:
                report.problems.append(f"{where}: {len(s['boxes'])} box(es) scroll or clip their content "
                                       f"({s['boxes'][0]})")
            report.problems += [f"{where}: unrendered math: '{t}'" for t in s["raw"]]
        report.detail += f", {len(slides)} slides"


def pages_under(folder: Path) -> list[Path]:
    """HTML pages under ``folder``, skipping asset folders (`_static`, `_sources`, ...)."""
    return sorted(p for p in folder.rglob("*.html")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts[:-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=None, help="default: build/site, unless only --slides is given")
    parser.add_argument("--slides", type=Path, default=None, help="default: build/slides, unless only --site is given")
    parser.add_argument("--shots", type=Path, default=Path("build/screenshots"),
                        help="folder for the screenshots of one page and one deck slide")
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--timeout", type=float, default=15, help="seconds per page")
    args = parser.parse_args(argv)
    folders = [(f, what) for f, what in ((args.site, "site"), (args.slides, "slides")) if f is not None]
    if not folders:  # neither given: both, where `make site slides` puts them
        folders = [(Path("build/site"), "site"), (Path("build/slides"), "slides")]
    chromium = args.chromium if Path(args.chromium).is_file() else shutil.which("chromium")
    if not chromium:
        print(INSTALL_HINT)
        return 2
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("playwright not installed: run `make setup` (it is in the dev extra), then rerun")
        return 2
    start = time.perf_counter()
    jobs: list[tuple[Path, str]] = []
    empty = 0  # folders without pages
    for folder, what in folders:
        found = pages_under(folder) if folder.is_dir() else []
        if not found:
            print(f"FAIL {folder}: no HTML pages (run make {what})")
            empty += 1
        jobs += [(p, f"{what}/{p.relative_to(folder).as_posix()}") for p in found]
    # One screenshot of a page (the site's index) and one of a deck's first content slide.
    pages = [j for j in jobs if not j[0].name.endswith(".slides.html")]
    decks = [j for j in jobs if j[0].name.endswith(".slides.html")]
    shots = {}
    if pages:
        first = next((j for j in pages if j[0].name == "index.html"), pages[0])
        shots[first[0]] = args.shots / "page.png"
    if decks:
        shots[decks[0][0]] = args.shots / "deck-slide.png"
    failed = 0
    with Checker(chromium, args.timeout) as checker:
        for path, label in jobs:
            report = checker.check(path, label, shots.get(path))
            if report.problems:
                failed += 1
                for problem in report.problems:
                    print(f"FAIL {label}: {problem}")
            else:
                print(f"ok   {label}: {report.detail}")
    for png in shots.values():
        print(f"screenshot {png}")
    print(f"{len(jobs) - failed}/{len(jobs)} pages passed in {time.perf_counter() - start:.1f} s")
    return 1 if failed or empty else 0


if __name__ == "__main__":
    sys.exit(main())
