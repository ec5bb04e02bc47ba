"""Turn each notebook into a reveal.js slide deck, from its stored outputs (no execution).

Usage: python scripts/build_slides.py [--out build/slides] [notebooks...]   (`make slides`)
Writes build/slides/NN_topic.slides.html. Slide metadata is set on a copy of each
notebook: `#`/`##` headings start a slide, `###` a subslide, everything else continues
the current one; stream outputs longer than 25 lines are cut to their first 20; hidden
solution cells are skipped. reveal.js itself is loaded from nbconvert's default CDN.
The notebooks in notebooks/ are not modified.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import time
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 25  # a stream output longer than this is cut ...
KEEP_LINES = 20  # ... to this many lines plus a "... (N more lines)" line
HEADING = re.compile(r"(#{1,6})\s")


def slide_type(cell: nbformat.NotebookNode) -> str:
    """reveal.js slide type for one cell: "slide", "subslide", "skip" or "-" (continue)."""
    if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
        return "skip"  # a hidden solution: not shown while presenting
    if cell.cell_type == "markdown":
        m = HEADING.match(cell.source.lstrip())
        if m:
            level = len(m.group(1))
            if level <= 2:
                return "slide"
            if level == 3:
                return "subslide"
    return "-"


def truncate_text(text: str, max_lines: int = MAX_LINES, keep: int = KEEP_LINES) -> str:
    """``text`` unchanged if it has at most ``max_lines`` lines, else its first ``keep``
    lines and a ``... (N more lines)`` line."""
    if not 0 < keep <= max_lines:
        raise ValueError(f"need 0 < keep <= max_lines, got keep={keep}, max_lines={max_lines}")
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    return "\n".join(lines[:keep]) + f"\n... ({len(lines) - keep} more lines)\n"


def prepare_for_slides(nb: nbformat.NotebookNode, max_lines: int = MAX_LINES,
                       keep: int = KEEP_LINES) -> nbformat.NotebookNode:
    """A copy of ``nb`` with slide metadata on every cell and long stream outputs cut."""
    deck = copy.deepcopy(nb)
    for cell in deck.cells:
        cell.metadata["slideshow"] = {"slide_type": slide_type(cell)}
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                out["text"] = truncate_text(out["text"], max_lines, keep)
    return deck


def build_slides(notebooks: list[Path], out: Path) -> list[Path]:
    """Write ``NN_topic.slides.html`` for each notebook into ``out``; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    exporter = SlidesExporter()
    written = []
    for path in sorted(notebooks, key=lambda p: p.name):
        deck = prepare_for_slides(nbformat.read(path, as_version=4))
        body, _ = exporter.from_notebook_node(deck, resources={"metadata": {"name": path.stem}})
        target = out / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build/slides"))
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    start = time.perf_counter()
    written = build_slides(notebooks, args.out)
    print(f"slides: {len(written)} decks in {args.out} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
