"""Every real page of build/site and every deck of build/slides, as a reader sees them: in
headless Chromium, offline (tests/pagecheck.py says what is checked). `make site-check`
builds both first; one test per page, so a failure names the page (and the slide).
Screenshots of the site's index and of a deck's first content slide go to build/screenshots/."""

from pathlib import Path

import pagecheck
import pytest
from test_decks import STATED

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
SHOTS = BUILD / "screenshots"
FOLDERS = {"site": BUILD / "site", "slides": BUILD / "slides"}
# The Chinese edition (issue 30) is built into zh/ of each: its pages are among PAGES, and must be there.
EDITIONS = [*FOLDERS, "site/zh", "slides/zh"]
PAGES = {f"{name}/{p.relative_to(folder).as_posix()}": p
         for name, folder in FOLDERS.items() for p in pagecheck.pages_under(folder)}
FIRST_DECK = next((name for name in PAGES if name.endswith(".slides.html")), None)
SCREENSHOTS = {"site/index.html": SHOTS / "page.png", FIRST_DECK: SHOTS / "deck-slide.png"}

pytestmark = [pytest.mark.site, *pagecheck.MARKS]


@pytest.mark.parametrize("name", EDITIONS)
def test_the_site_and_the_decks_are_built(name):
    assert any(page.startswith(f"{name}/") for page in PAGES), \
        f"no HTML pages in build/{name}: run `make site-check` (it builds them first)"


@pytest.mark.parametrize("name", PAGES)
def test_page_reads_offline(context, name):
    problems = pagecheck.problems(context, PAGES[name], SCREENSHOTS.get(name))
    assert not problems, f"{name}:\n" + "\n".join(problems)  # every problem, one a line


# --- each deck as the README states it: its number of slides, walked in order, printed (issue 28; the counts
# without a build: tests/test_decks.py)

DECKS = FOLDERS["slides"]
# the English decks and the Chinese ones (build/slides/zh/): the same cells, so the same slides
BUILT = sorted(DECKS.glob("[0-9][0-9]_*.slides.html")) + sorted(DECKS.glob("zh/[0-9][0-9]_*.slides.html"))


def open_deck(page, path: Path, query: str = ""):
    page.goto(path.as_uri() + query)
    page.wait_for_function(pagecheck.REVEAL_READY)
    page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")


@pytest.mark.parametrize("path", BUILT, ids=lambda p: p.relative_to(DECKS).as_posix().split(".")[0])
@pytest.mark.skipif(not BUILT, reason="no build/slides: run `make site-check` (it builds them first)")
class TestBuiltDeck:
    def test_it_has_the_readmes_number_of_slides(self, page, path):
        open_deck(page, path)
        assert page.evaluate("() => Reveal.getTotalSlides()") == STATED[path.name.split(".")[0]]

    def test_right_arrow_walks_every_slide_in_order(self, page, path):
        """reveal.js's default → jumps to the next section and skips its subslides (8 of deck
        03's 19 slides before issue 28); linear navigation visits them all."""
        open_deck(page, path)
        order = page.evaluate("() => Reveal.getSlides().map(s => { const i = Reveal.getIndices(s); return [i.h, i.v]; })")
        seen = [page.evaluate("() => [Reveal.getIndices().h, Reveal.getIndices().v]")]
        for _ in range(len(order) - 1):
            page.keyboard.press("ArrowRight")
            seen.append(page.evaluate("() => [Reveal.getIndices().h, Reveal.getIndices().v]"))
        assert seen == order

    def test_it_prints_to_a_pdf_of_one_page_a_slide(self, page, path):
        """README, Presenting: open the deck with ?print-pdf and print it."""
        open_deck(page, path, "?print-pdf")
        page.evaluate("() => document.fonts.ready")
        pdf = page.pdf(prefer_css_page_size=True, print_background=True)
        assert pagecheck.pdf_pages(pdf) == page.evaluate("() => Reveal.getTotalSlides()")
