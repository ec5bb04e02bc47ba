"""Turn each notebook into a reveal.js slide deck, from its stored outputs (no execution).

Usage: python scripts/build_slides.py [--out build/slides] [notebooks...]   (`make slides`)
Writes build/slides/NN_topic.slides.html and build/slides/index.html (a list of the
decks). The decks work offline from file://: reveal.js, require.js, jQuery and MathJax
are fetched once from the npm registry into build/vendor/ (scripts/vendor.py) and loaded
by relative URLs. Slides are 1280x720.

Slide structure is notebook metadata, the same that RISE presents live in JupyterLab:
``cell.metadata.slideshow.slide_type`` is one of slide / subslide / fragment / skip /
notes / - (continue). A cell without it gets a default on a copy: `#`/`##` headings start
a slide, `###` a subslide, anything else continues. A deck is the notebook's core path:
the setup cell, the "Going deeper" cells (tag ``deeper``) and the exercise solutions (tag
``solution`` or ``jupyter.source_hidden``) are skipped; speaker notes go to the speaker
view (S). Nothing scrolls: long code lines wrap and figures are scaled to fit, and a slide
whose content is taller than 720 px fails scripts/check_pages.py (split the cell, or start
a subslide). Every figure gets the alt text the site gives it (its caption metadata, else
its plot title, else its section). The notebooks are not modified.
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

import jinja2
import nbformat
from nbconvert import SlidesExporter

sys.path.insert(0, str(Path(__file__).parent))
import vendor  # noqa: E402
from build_site import figure_title, setup_cell  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1280, 720
HEADING = re.compile(r"(#{1,6})\s+(.*)")
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")
# What the decks load, all from build/vendor/ (nbconvert's reveal template expects
# reveal.js 4 and MathJax 2; jQuery 2.0.3, its default, is not on npm: 2.1.0 is).
REVEAL = ("reveal.js", "4.0.2")
MATHJAX = ("mathjax", "2.7.7")
REQUIREJS = ("requirejs", "2.1.10")
JQUERY = ("jquery", "2.1.0")
# The tallest a figure may be drawn, so that a heading and a caption line fit above it.
MAX_FIGURE_PX = 560

TEMPLATE = r"""
{%- extends 'index.html.j2' -%}

{#- The notebooks draw no Mermaid diagrams; its module would be a CDN request. -#}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}

{% block notebook_css %}
{{ super() }}
<style type="text/css">
/* Nothing scrolls and nothing is cut: long lines wrap, figures are scaled to fit. A slide
   whose content is still taller than 720 px fails scripts/check_pages.py. */
.reveal .jp-Cell-outputArea, .reveal .jp-InputArea-editor, .reveal .jp-OutputArea-output {
  overflow: visible;
}
.reveal .jp-InputArea-editor pre, .reveal .jp-OutputArea-output pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  overflow: visible;
}
/* No "In [n]:" / "Out[n]:" prompts on a slide: the code gets the full width. */
.reveal .jp-InputPrompt, .reveal .jp-OutputPrompt { display: none; }
.reveal .jp-InputArea, .reveal .jp-OutputArea-child { display: block; overflow: visible; }
.reveal .jp-InputArea-editor { display: block; width: auto; }
.reveal pre { box-sizing: border-box; max-width: 100%; }
.reveal .jp-OutputArea-output { display: block; width: auto; }  /* not a table cell that shrinks to fit */
.reveal .jp-OutputArea-output pre { width: 100%; margin: 0; }
.reveal .jp-RenderedImage img {
  max-width: 100%; max-height: {{ resources.deck.max_figure }}px; width: auto; height: auto;
}
.reveal .jp-RenderedMarkdown table { font-size: 80%; }
/* The white theme upper-cases headings; `view` and VIEW are not the same name. */
.reveal .slides section h1, .reveal .slides section h2, .reveal .slides section h3,
.reveal .slides section h4 { text-transform: none; }
</style>
{% endblock notebook_css %}

{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
 alt="{{ output.metadata.get('alt', '') | escape_html }}">
</div>
{%- endblock data_png %}

{% block footer_js %}
<script>
require({waitSeconds: 15},
  ["{{ resources.reveal.url_prefix }}/dist/reveal.js",
   "{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"],
  function (Reveal, RevealNotes) {
    window.Reveal = Reveal;  // reveal.js is an AMD module here; checks and the console want it
    Reveal.initialize({
      controls: true, progress: true, history: true, slideNumber: "c/t",
      transition: "{{ resources.reveal.transition }}", plugins: [RevealNotes],
      width: {{ resources.reveal.width }}, height: {{ resources.reveal.height }},
    });
    // MathJax typesets hidden slides with zero size; typeset again when one is shown.
    Reveal.addEventListener("slidechanged", function () {
      if (window.MathJax && MathJax.Hub) {
        MathJax.Hub.Queue(["Rerender", MathJax.Hub, Reveal.getCurrentSlide()]);
      }
    });
  });
</script>
{% endblock footer_js %}
"""

INDEX = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Slide decks</title>
<style>body {{ font-family: sans-serif; max-width: 48em; margin: 2em auto; }}</style></head>
<body>
<h1>Slide decks</h1>
<p>One reveal.js deck per notebook; arrow keys move, <kbd>S</kbd> opens the speaker notes.</p>
<ol class="decks">
{items}
</ol>
</body>
</html>
"""


def is_solution(cell: nbformat.NotebookNode) -> bool:
    """An exercise's solution or check: code hidden in Lab, never shown on a slide. (A markdown
    cell hidden in Lab is a speaker note: it goes to the speaker view.)"""
    meta = cell.get("metadata", {})
    return "solution" in meta.get("tags", []) or (cell.get("cell_type") == "code"
                                                   and bool(meta.get("jupyter", {}).get("source_hidden")))


def heading(cell: nbformat.NotebookNode) -> tuple[int, str] | None:
    """``(level, text)`` of a markdown cell that starts with a heading, else None."""
    if cell.cell_type != "markdown":
        return None
    m = HEADING.match(cell.source.lstrip())
    return (len(m.group(1)), m.group(2).strip()) if m else None


def slide_type(cell: nbformat.NotebookNode) -> str:
    """reveal.js slide type for one cell: its slideshow metadata, else a heading default.
    Solutions and "Going deeper" cells are never on a slide."""
    if is_solution(cell) or "deeper" in cell.get("metadata", {}).get("tags", []):
        return "skip"
    given = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
    if given is not None:
        if given not in SLIDE_TYPES:
            raise ValueError(f"slide_type {given!r} is not one of {', '.join(SLIDE_TYPES)}")
        return given
    h = heading(cell)
    if h and h[0] <= 2:
        return "slide"
    if h and h[0] == 3:
        return "subslide"
    return "-"


def figure_alt(cell: nbformat.NotebookNode, section: str) -> str:
    """Alt text for a figure in ``cell``, chosen as the site chooses it (build_site.py):
    ``mystnb.image.alt``, else the caption (``caption`` or ``mystnb.figure.caption``),
    else the title the plotting code gives the figure, else the section it sits in."""
    meta = cell.get("metadata", {})
    mystnb = meta.get("mystnb", {})
    above = re.sub(r"^Figure:\s*", "", section.replace("`", ""))  # not "Figure: Figure: ..."
    alt = (mystnb.get("image", {}).get("alt") or meta.get("caption")
           or mystnb.get("figure", {}).get("caption") or figure_title(cell.get("source", ""))
           or f"Figure: {above}")
    return " ".join(str(alt).split())


def prepare_for_slides(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a slide type on every cell and alt text on every figure."""
    deck = copy.deepcopy(nb)
    section = notebook_title(nb)
    setup = setup_cell(deck)
    for cell in deck.cells:
        h = heading(cell)
        if h:
            section = h[1]
        cell.metadata["slideshow"] = {"slide_type": "skip" if cell is setup else slide_type(cell)}
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                out.setdefault("metadata", {})["alt"] = figure_alt(cell, section)
    return deck


def notebook_title(nb: nbformat.NotebookNode) -> str:
    """The text of the notebook's first heading (its title), else "Untitled"."""
    for cell in nb.cells:
        h = heading(cell)
        if h:
            return h[1]
    return "Untitled"


def exporter_for(out: Path) -> SlidesExporter:
    """A reveal exporter whose decks in ``out`` load everything from build/vendor/."""
    def url(package: tuple[str, str], *parts: str) -> str:
        # Relative to the deck, so the deck opens from file:// and from any web server.
        rel = os.path.relpath(vendor.fetch(*package), out.resolve())
        return "/".join([Path(rel).as_posix(), *parts])

    exporter = SlidesExporter(extra_loaders=[jinja2.DictLoader({"lecture_deck.html.j2": TEMPLATE})],
                              template_file="lecture_deck.html.j2")
    exporter.reveal_url_prefix = url(REVEAL)
    exporter.mathjax_url = url(MATHJAX, "MathJax.js?config=TeX-AMS_CHTML-full,Safe")
    exporter.require_js_url = url(REQUIREJS, "require.js")
    exporter.jquery_url = url(JQUERY, "dist", "jquery.min.js")
    exporter.reveal_width, exporter.reveal_height = str(WIDTH), str(HEIGHT)
    exporter.reveal_theme = "white"  # "simple" and others @import Google Fonts: a CDN
    return exporter


def index_page(decks: list[tuple[str, str]]) -> str:
    """``build/slides/index.html``: one link per ``(file name, title)``."""
    items = "\n".join(f'<li><a href="{html.escape(name)}">{html.escape(title)}</a></li>'
                      for name, title in decks)
    return INDEX.format(items=items)


def build_slides(notebooks: list[Path], out: Path) -> list[Path]:
    """Write ``NN_topic.slides.html`` for each notebook and ``index.html`` into ``out``;
    return the deck paths."""
    out.mkdir(parents=True, exist_ok=True)
    exporter = exporter_for(out)
    written, listed = [], []
    for path in sorted(notebooks, key=lambda p: p.name):
        nb = nbformat.read(path, as_version=4)
        resources = {"metadata": {"name": path.stem}, "deck": {"max_figure": MAX_FIGURE_PX}}
        try:
            deck = prepare_for_slides(nb)
        except ValueError as e:  # a wrong slide_type: say which notebook
            raise ValueError(f"{path}: {e}") from None
        body, _ = exporter.from_notebook_node(deck, resources=resources)
        target = out / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
        listed.append((target.name, notebook_title(nb)))
    (out / "index.html").write_text(index_page(listed), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build/slides"))
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        print(f"build_slides: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        written = build_slides(notebooks, args.out)
    except (vendor.VendorError, ValueError) as e:
        print(f"build_slides: {e}", file=sys.stderr)
        return 1
    print(f"slides: {len(written)} decks and index.html in {args.out} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
