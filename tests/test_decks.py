"""The static decks as the README states them (issue 28, §4, §3 and §5): each deck's number of
slides in the README's notebook table, against scripts/build_slides.py's slide_count (no build, so
in `make test`); at most 18 slides, no lead-in alone, no subslide. The decks `make site-check` built
are walked, counted (reveal.js's own total) and printed in Chromium by tests/test_built_pages.py,
the Chinese ones too. `python scripts/build_slides.py --count` prints the counts for the README."""

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402

ROW = re.compile(r"^\| \[\d\d [^\]]+\]\(notebooks/(\d\d_\w+)\.ipynb\) \| [^|]+ \| \d+ \| (\d+) \|$", re.M)
STATED = {stem: int(slides) for stem, slides in ROW.findall((ROOT / "README.md").read_text(encoding="utf-8"))}


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
