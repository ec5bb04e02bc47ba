"""Build a static site from the notebooks' stored (golden) outputs: nothing is re-executed.

Usage: python scripts/build_site.py [--out build/site] [--readme README.md] [notebooks...]
(`make site`). Writes one self-contained HTML page per notebook (figures inline as data
URIs), each with previous/next links at top and bottom, and an index.html that lists
the lectures in order and carries the README's map from lecture notes to notebooks.
The notebooks in notebooks/ are not modified.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
MAP_HEADING = "## Map: lecture notes to notebooks"
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*\.ipynb)\)")
NAV_STYLE = (
    "<style>.lecture-nav{display:flex;justify-content:space-between;gap:1em;"
    "padding:.6em 1em;margin:0;background:#f3f4f6;border:1px solid #d1d5db;"
    "font:14px/1.4 system-ui,sans-serif}.lecture-nav a{color:#1d4ed8;text-decoration:none}"
    ".lecture-nav span{color:#9ca3af}</style>"
)


@dataclass(frozen=True)
class MapRow:
    """One row of the README's map: a section of the notes and where it lives."""

    notes: str
    topic: str
    notebook: str  # file name, e.g. "03_flops_and_mfu.ipynb"
    extra: str  # text in the notebook column besides the link, e.g. "(backward in detail: 04)"
    heading: str

    @property
    def page(self) -> str:
        return Path(self.notebook).with_suffix(".html").name


@dataclass(frozen=True)
class Page:
    """One notebook page of the site."""

    name: str  # "01_tensors_and_strides.html"
    title: str  # the notebook's first `# ` heading, without the `# `


def notebook_title(nb: nbformat.NotebookNode) -> str:
    """The text of the first level-1 markdown heading (``# Title``) of a notebook."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise ValueError("notebook has no '# ' heading")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_readme_map(text: str) -> list[MapRow]:
    """The rows of the README table under ``## Map: lecture notes to notebooks``."""
    lines = text.splitlines()
    try:
        start = lines.index(MAP_HEADING)
    except ValueError:
        raise ValueError(f"README has no {MAP_HEADING!r} section") from None
    rows: list[MapRow] = []
    header_seen = False
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows:  # the table has ended
                break
            continue
        cells = _cells(line)
        if not header_seen:  # the header row, then the |---| separator
            header_seen = True
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if len(cells) != 4:
            raise ValueError(f"map row does not have 4 columns: {line!r}")
        notes, topic, where, heading = cells
        link = LINK.search(where)
        if link is None:
            raise ValueError(f"map row has no notebook link: {line!r}")
        extra = (where[:link.start()] + where[link.end():]).strip()
        rows.append(MapRow(notes, topic, Path(link.group(2)).name, extra, heading))
    if not rows:
        raise ValueError("the README map table is empty")
    return rows


def nav_bar(pages: list[Page], index: int, where: str) -> str:
    """Previous / index / next links for ``pages[index]`` (``where``: "top" or "bottom")."""
    if where not in ("top", "bottom"):
        raise ValueError(f"where must be 'top' or 'bottom', got {where!r}")
    parts = []
    if index > 0:
        prev = pages[index - 1]
        parts.append(f'<a rel="prev" href="{prev.name}">&larr; {html.escape(prev.title)}</a>')
    else:
        parts.append("<span>first lecture</span>")
    parts.append('<a rel="index" href="index.html">all lectures</a>')
    if index < len(pages) - 1:
        nxt = pages[index + 1]
        parts.append(f'<a rel="next" href="{nxt.name}">{html.escape(nxt.title)} &rarr;</a>')
    else:
        parts.append("<span>last lecture</span>")
    return f'<nav class="lecture-nav lecture-nav-{where}">{"".join(parts)}</nav>'


def inject_nav(page_html: str, top: str, bottom: str) -> str:
    """Put ``top`` right after ``<body ...>`` and ``bottom`` right before ``</body>``."""
    body = re.search(r"<body[^>]*>", page_html)
    end = page_html.rfind("</body>")
    if body is None or end < body.end():
        raise ValueError("page has no <body>...</body>")
    head_end = page_html.find("</head>")
    out = (page_html[:body.end()] + "\n" + top + "\n" + page_html[body.end():end]
           + bottom + "\n" + page_html[end:])
    if 0 <= head_end < body.start():
        out = out[:head_end] + NAV_STYLE + "\n" + out[head_end:]
    return out


def heading_anchor(page_html: str, heading: str) -> str:
    """The element id nbconvert gave ``heading`` in ``page_html``, or "" if none matches."""
    want = "-".join(heading.split())
    for ident in re.findall(r'<h[1-6] id="([^"]+)"', page_html):
        if unquote(html.unescape(ident)) == want:
            return ident
    return ""


def inline_markdown(text: str) -> str:
    """HTML-escape ``text`` and render its `code` spans (all the README table uses)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def render_index(pages: list[Page], rows: list[MapRow], anchors: dict[MapRow, str]) -> str:
    """The index page: the lectures in order, then the map from notes to notebooks."""
    titles = {p.name: p.title for p in pages}
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(p.title)}</a></li>' for p in pages)
    trs = []
    for row in rows:
        if row.page in titles:
            href = row.page + (f"#{anchors[row]}" if anchors.get(row) else "")
            where = f'<a href="{href}">{html.escape(row.notebook[:2])}</a>'
            heading = f'<a href="{href}">{inline_markdown(row.heading)}</a>'
        else:  # a notebook left out of this build
            where, heading = html.escape(row.notebook[:2]), inline_markdown(row.heading)
        if row.extra:
            where += " " + inline_markdown(row.extra)
        trs.append(f"<tr><td>{html.escape(row.notes)}</td><td>{inline_markdown(row.topic)}</td>"
                   f"<td>{where}</td><td>{heading}</td></tr>")
    table = "\n".join(trs)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>PyTorch and resource accounting</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 60em; margin: 2em auto;
       padding: 0 1em; color: #111827; }}
h1 {{ font-size: 1.8em; }}
ol.lectures li {{ margin: .3em 0; font-size: 1.1em; }}
table {{ border-collapse: collapse; width: 100%; font-size: .92em; }}
th, td {{ border: 1px solid #d1d5db; padding: .3em .5em; text-align: left;
          vertical-align: top; }}
th {{ background: #f3f4f6; }}
a {{ color: #1d4ed8; }}
</style>
</head>
<body>
<h1>PyTorch and resource accounting</h1>
<p>Stanford CS336 Lecture 2 as eight executable notebooks. These pages show the
outputs stored in the notebooks (the golden outputs that <code>make test</code> checks);
run the notebooks yourself with <code>make lab</code>.</p>
<h2>Lectures</h2>
<ol class="lectures">
{items}
</ol>
<h2 id="map">Map: lecture notes to notebooks</h2>
<table class="notes-map">
<thead><tr><th>notes</th><th>topic</th><th>notebook</th><th>heading</th></tr></thead>
<tbody>
{table}
</tbody>
</table>
</body>
</html>
"""


def build_site(notebooks: list[Path], out: Path, readme: Path) -> list[Path]:
    """Write one page per notebook plus index.html into ``out``; return the paths written."""
    notebooks = sorted(notebooks, key=lambda p: p.name)
    if not notebooks:
        raise ValueError("no notebooks given")
    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="lab", embed_images=True)
    nbs = [nbformat.read(p, as_version=4) for p in notebooks]
    pages = [Page(p.with_suffix(".html").name, notebook_title(nb)) for p, nb in zip(notebooks, nbs, strict=True)]
    rows = parse_readme_map(readme.read_text(encoding="utf-8"))
    anchors: dict[MapRow, str] = {}
    written = []
    for i, (nb, page) in enumerate(zip(nbs, pages, strict=True)):
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": page.title}})
        for row in rows:
            if row.page == page.name:
                anchors[row] = heading_anchor(body, row.heading)
        body = inject_nav(body, nav_bar(pages, i, "top"), nav_bar(pages, i, "bottom"))
        target = out / page.name
        target.write_text(body, encoding="utf-8")
        written.append(target)
    index = out / "index.html"
    index.write_text(render_index(pages, rows, anchors), encoding="utf-8")
    written.append(index)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build/site"))
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    start = time.perf_counter()
    written = build_site(notebooks, args.out, args.readme)
    print(f"site: {len(written) - 1} notebook pages + index.html in {args.out} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
