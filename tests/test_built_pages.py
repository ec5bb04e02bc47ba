"""Every real page of build/site and every deck of build/slides, as a reader sees them: in
headless Chromium, offline (tests/pagecheck.py says what is checked). `make site-check`
builds both first; one test per page, so a failure names the page (and the slide).
Screenshots of the site's index and of a deck's first content slide go to build/screenshots/."""

from pathlib import Path

import pagecheck
import pytest

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
