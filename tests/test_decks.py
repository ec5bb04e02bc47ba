"""The static decks as the README states them (issue 28, §4, §3 and §5): each deck's number of
slides in the README's notebook table, → walking every slide of a deck in order, and a deck
printing to a PDF of one page per slide; the Chinese decks (build/slides/zh/) too.

The counts are checked twice: against scripts/build_slides.py's slide_count (no build, so in
`make test`), and against the decks `make site-check` built, in Chromium (reveal.js's own total).
`python scripts/build_slides.py --count` prints them for the README."""

import re
import sys
from pathlib import Path

import nbformat
import pagecheck
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402

ROW = re.compile(r"^\| \[\d\d [^\]]+\]\(notebooks/(\d\d_\w+)\.ipynb\) \| [^|]+ \| \d+ \| (\d+) \|$", re.M)
STATED = {stem: int(slides) for stem, slides in ROW.findall((ROOT / "README.md").read_text(encoding="utf-8"))}
DECKS = ROOT / "build" / "slides"


def test_the_readme_states_each_decks_slides():
    assert len(STATED) == 8, "the README's notebook table needs a slides column (one number a row)"
    counted = {stem: build_slides.slide_count(nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4))
               for stem in STATED}
    assert STATED == counted, "update the README's slides column from `python scripts/build_slides.py --count`"


MOST_SLIDES = 18  # about 15 minutes a deck (issue 28, §4)


def slides_of(nb: nbformat.NotebookNode) -> list[list[nbformat.NotebookNode]]:
    """The cells of each slide of ``nb``'s deck (as build_slides cuts it; notes and skipped cells
    are on no slide)."""
    deck = build_slides.prepare_for_slides(nb)
    slides = []
    for cell in deck.cells:
        kind = cell.metadata["slideshow"]["slide_type"]
        if kind in ("slide", "subslide") or (not slides and kind not in ("skip", "notes")):
            slides.append([cell])
        elif kind in ("-", "fragment") and slides:
            slides[-1].append(cell)
    return slides


@pytest.mark.parametrize("stem", sorted(STATED))
def test_a_deck_holds_at_most_18_slides_and_no_lead_in_is_a_slide_of_its_own(stem):
    """A slide that is one sentence ending in ":" leaves its code to the next slide (16 did before
    issue 28); a deck longer than 18 slides does not fit its 15 minutes."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    slides = slides_of(nb)
    assert len(slides) == build_slides.slide_count(nb) <= MOST_SLIDES
    lead_ins = [cells[0].source.strip()[-60:] for cells in slides
                if len(cells) == 1 and cells[0].cell_type == "markdown" and cells[0].source.strip().endswith(":")]
    assert not lead_ins, f"{stem}: a lead-in alone on its slide: {lead_ins}"


@pytest.mark.parametrize("stem", sorted(STATED))
def test_no_slide_of_a_lesson_is_a_subslide(stem):
    """RISE hands reveal.js no navigationMode, and reveal.js's → goes to the next section,
    skipping its subslides (8 of deck 03's 19 before issue 28): live, → must reach every slide,
    so each is a slide of its own (the static decks walk them linearly either way)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    subslides = [i for i, cell in enumerate(nb.cells)
                 if cell.metadata.get("slideshow", {}).get("slide_type") == "subslide"]
    assert not subslides, f"{stem}: cells {subslides} are subslides; make them slides"


def test_slide_count_counts_as_nbconvert_cuts_a_deck():
    def md(text, slide_type=None, **meta):
        metadata = {"slideshow": {"slide_type": slide_type}} if slide_type else {}
        return new_markdown_cell(text, metadata={**metadata, **meta})

    nb = new_notebook(cells=[
        md("- said before anything", "notes"),  # notes and skipped cells start nothing
        md("# 09 · Title"),  # the first shown cell starts slide 1 whatever its type
        new_code_cell("from lecture_utils import setup; device = setup()"),  # the setup cell: skipped
        md("## §1 A", "slide"), md("### More", "subslide"), md("a fragment", "fragment"),
        md("### Going deeper: x", tags=["deeper"]),  # off the deck
        md("## §2 B"),  # a ## heading without a type starts a slide (build_slides.slide_type)
    ])
    assert build_slides.slide_count(nb) == 4


def test_count_prints_every_deck_and_the_total(capsys):
    notebooks = [ROOT / "notebooks" / f"{stem}.ipynb" for stem in STATED]
    assert build_slides.main(["--count", *map(str, notebooks)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{stem}: {n} slides" for stem, n in sorted(STATED.items())] + \
        [f"total: {sum(STATED.values())} slides"]


# -- the built decks, in Chromium -----------------------------------------------------

# the English decks and the Chinese ones (build/slides/zh/): the same cells, so the same slides
BUILT = sorted(DECKS.glob("[0-9][0-9]_*.slides.html")) + sorted(DECKS.glob("zh/[0-9][0-9]_*.slides.html"))
in_chromium = [pytest.mark.site, *pagecheck.MARKS,
               pytest.mark.skipif(not BUILT, reason="no build/slides: run `make site-check` (it builds them first)")]


def open_deck(page, path: Path, query: str = ""):
    page.goto(path.as_uri() + query)
    page.wait_for_function(pagecheck.REVEAL_READY)
    page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")


@pytest.mark.parametrize("path", BUILT, ids=lambda p: p.relative_to(DECKS).as_posix().split(".")[0])
class TestBuiltDeck:
    pytestmark = in_chromium

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
