"""Turn each notebook into a reveal.js slide deck, from its stored outputs (no execution).

Usage: python scripts/build_slides.py [--out build/slides] [notebooks...]   (`make slides`)

Writes NN_topic.slides.html per notebook and index.html (a list of the decks), 1280x720,
with nbconvert's reveal exporter and the templates in docs/slides/. The decks work
offline from file://: reveal.js, require.js, jQuery and MathJax come from build/vendor/
(scripts/vendor.py) by relative URLs. The Chinese decks, from each notebook's zh/ twin
(notebooks/zh/, `make zh`), go to OUT/zh/ with their own index (docs/slides/index.zh_CN.html);
each index links the other (build_site.EDITIONS).

Slide structure is each cell's ``slideshow.slide_type``, as RISE presents it live in
JupyterLab; a cell without one gets a default on a copy: `#`/`##` headings start a slide,
`###` a subslide, anything else continues. A deck is the notebook's core path: the setup
cell, Going-deeper cells (tag ``deeper``), solutions (tag ``solution``) and exercise
checks (code hidden in Lab) are skipped; speaker notes go to the speaker view (S). Every
figure gets its cell's caption as alt text, as on the site (build_site.alt_text).
"""

from __future__ import annotations

import argparse
import copy
import html
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

sys.path.insert(0, str(Path(__file__).parent))
import vendor  # noqa: E402
from build_site import (  # noqa: E402
    EDITIONS,
    VIEWS,
    Edition,
    alt_text,
    missing_editions,
    notebook_title,
    role,
    setup_cell,
    switch_to,
)

ROOT = Path(__file__).resolve().parents[1]
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
HEADING = re.compile(r"\s*(#{1,3}) ")  # a markdown cell that starts with a #, ## or ### heading


def slide_type(cell: nbformat.NotebookNode, setup) -> str:
    """The reveal.js slide type of one cell: "skip" off the core path (build_site.VIEWS), else
    its slideshow metadata, else a new slide at a `#`/`##` heading, a subslide at `###`."""
    given = cell.metadata.get("slideshow", {}).get("slide_type")
    if given is not None and given not in SLIDE_TYPES:
        raise ValueError(f"slide_type {given!r} is not one of {', '.join(SLIDE_TYPES)}")
    chosen = VIEWS[role(cell, setup)][1] or given
    if chosen:
        return chosen
    heading = HEADING.match(cell.source) if cell.cell_type == "markdown" else None
    if heading:
        return "subslide" if len(heading[1]) == 3 else "slide"
    return "-"


def prepare_for_slides(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a slide type on every cell and alt text on every figure."""
    deck = copy.deepcopy(nb)
    setup = setup_cell(deck)
    for cell in deck.cells:
        cell.metadata["slideshow"] = {"slide_type": slide_type(cell, setup)}
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):  # docs/slides/deck.html.j2 writes it into <img alt>
                out.metadata["alt"] = alt_text(cell)
    return deck


def slide_count(nb: nbformat.NotebookNode) -> int:
    """How many slides the deck of ``nb`` has, subslides included (reveal.js's total, the t of
    "c/t"), counted as nbconvert cuts it: its first visible cell starts a slide, then each cell
    of type slide or subslide."""
    types = [cell.metadata["slideshow"]["slide_type"] for cell in prepare_for_slides(nb).cells]
    first = next((i for i, t in enumerate(types) if t not in ("notes", "skip")), None)
    if first is None:
        raise ValueError("every cell is skipped: no slide")
    return 1 + sum(t in ("slide", "subslide") for t in types[first + 1:])


def exporter_for(out: Path, modules: Path, edition: Edition = EDITIONS["en"]) -> SlidesExporter:
    """A reveal exporter whose decks in ``out`` load everything from ``modules`` (build/vendor),
    in ``edition``'s language (<html lang>: docs/slides/deck.html.j2 picks the fonts by it)."""
    def url(*parts: str) -> str:  # relative to the deck: it opens from file:// and any web server
        return Path(os.path.relpath(modules, out.resolve()), *parts).as_posix()

    exporter = SlidesExporter(extra_template_paths=[str(ROOT / "docs" / "slides")],
                              template_file="deck.html.j2")
    exporter.reveal_url_prefix = url("reveal.js")
    exporter.mathjax_url = url("mathjax2", "MathJax.js") + "?config=TeX-AMS_CHTML-full,Safe"
    exporter.require_js_url = url("requirejs", "require.js")
    exporter.jquery_url = url("jquery", "dist", "jquery.min.js")
    exporter.reveal_width, exporter.reveal_height = "1280", "720"
    exporter.reveal_theme = "white"  # "simple" and others @import Google Fonts: a CDN
    exporter.language_code = edition.html_lang.split("-")[0]  # nbconvert takes ISO 639-1 only: zh
    return exporter


def index_template(edition: Edition) -> Path:
    """The deck index page of ``edition``: docs/slides/index.html, or index.<language>.html."""
    return ROOT / "docs" / "slides" / ("index.html" if edition.language == "en" else f"index.{edition.language}.html")


def switch_link(edition: Edition) -> str:
    """The index's link to the other edition's index (build_site.switch_to)."""
    other, prefix = switch_to(edition)
    return (f'<p class="lang-switch"><a href="{prefix}index.html" hreflang="{other.html_lang}" '
            f'lang="{other.html_lang}">{html.escape(other.name)}</a></p>')


def build_slides(notebooks: list[Path], out: Path, edition: Edition = EDITIONS["en"],
                 switch: bool = False) -> list[Path]:
    """Write ``NN_topic.slides.html`` per notebook and ``index.html`` into ``out``; the decks.
    ``switch``: the index links the other edition's index (main builds both)."""
    out.mkdir(parents=True, exist_ok=True)
    exporter = exporter_for(out, vendor.install(), edition)
    decks, items = [], []
    for path in sorted(notebooks, key=lambda p: p.name):
        nb = nbformat.read(path, as_version=4)
        try:
            body, _ = exporter.from_notebook_node(prepare_for_slides(nb), {"metadata": {"name": path.stem}})
            title = notebook_title(nb)
        except ValueError as e:  # a wrong slide_type, a figure without a caption: say where
            raise ValueError(f"{path}: {e}") from None
        deck = out / f"{path.stem}.slides.html"
        deck.write_text(body, encoding="utf-8")
        decks.append(deck)
        items.append(f'<li><a href="{html.escape(deck.name)}">{html.escape(title)}</a> '
                     f'(<a class="pdf-link" href="{html.escape(deck.name)}?print-pdf">PDF</a>)</li>')
    index = index_template(edition).read_text(encoding="utf-8")
    index = index.replace("<!-- build_slides: decks -->", "\n".join(items))
    index = index.replace("<!-- build_slides: switch -->", switch_link(edition) if switch else "")
    (out / "index.html").write_text(index, encoding="utf-8")
    return decks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides")
    parser.add_argument("--count", action="store_true",
                        help="print each deck's number of slides (the README's slides column); build nothing")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
    bad = [str(p) for p in notebooks if p.suffix != ".ipynb" or not p.is_file()]
    if bad:
        print(f"build_slides: not a notebook file: {', '.join(bad)}", file=sys.stderr)
        return 2
    if args.count:
        try:
            counts = {p.stem: slide_count(nbformat.read(p, as_version=4)) for p in sorted(notebooks, key=lambda p: p.name)}
        except ValueError as e:
            print(f"build_slides: {e}", file=sys.stderr)
            return 1
        for stem, count in counts.items():
            print(f"{stem}: {count} slides")
        print(f"total: {sum(counts.values())} slides")
        return 0
    if (missing := missing_editions(notebooks, "build_slides")) is not None:
        print(missing, file=sys.stderr)
        return 2
    for edition in EDITIONS.values():
        start = time.perf_counter()
        where = args.out / edition.folder
        try:
            decks = build_slides([edition.notebook(p) for p in notebooks], where, edition, switch=True)
        except (ValueError, vendor.VendorError) as e:
            print(f"build_slides: {e}", file=sys.stderr)
            return getattr(e, "status", 1)
        print(f"slides ({edition.language}): {len(decks)} decks and index.html in {where} "
              f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
