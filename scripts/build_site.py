"""Build the course site with Sphinx + MyST-NB from the notebooks' stored (golden) outputs.

Usage: python scripts/build_site.py [--out build/site] [--src build/site-src]
       [--readme README.md] [-j N] [notebooks...]                      (`make site`)

Nothing is executed and notebooks/ is never modified: the Sphinx project in docs/site/
is copied to --src together with display copies of the notebooks, in which
- speaker notes are left out, the one-line setup cell shows its output only, and the
  "Going deeper" cells (tag ``deeper``) are set apart: their text in a shaded box, their
  code collapsed behind a toggle;
- solution cells (tag ``solution``) get MyST-NB's ``hide-cell`` tag, so code *and* output
  are collapsed behind a "Show solution" toggle; other cells collapse what Lab hides
  (``jupyter.source_hidden`` / ``outputs_hidden``); ``hide-*`` tags pass through as they are;
- every cell with a figure gets alt text: the cell's caption (``metadata.caption`` or
  ``mystnb.figure.caption``), else the figure's title in the cell source, else the
  heading above it;
plus an index page (lectures in order with their slide decks and .ipynb downloads, and
the README's map from the lecture notes to notebook headings) and MathJax 3 from the
npm package (scripts/vendor.py). The download links serve the notebooks as they are in
notebooks/, not the display copies. Every page then works from file:// with no network.
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from myst_parser.slugs import github_slugify
from sphinx.cmd.build import build_main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import vendor  # noqa: E402

SITE_PROJECT = ROOT / "docs" / "site"
MATHJAX = ("mathjax", "3.2.2")
# What the pages load from the MathJax package (the rest is other bundles and Node code):
# the TeX→CHTML bundle and what it loads on demand (extensions, fonts, menu, a11y).
MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2",
                 "ui", "a11y", "sre"]
MAP_HEADING = "## Map: lecture notes to notebooks"
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*\.ipynb)\)")
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# A static page has no kernel to drive a widget (and its JS would come from a CDN):
# say so instead of showing the widget's Python repr.
WIDGET_NOTE = ("*An interactive widget appears here when the notebook runs: download the "
               "notebook, or `make lab`.*")
TITLE_CALLS = ("suptitle", "set_title", "title")  # figure.suptitle first: it names the whole figure


@dataclass(frozen=True)
class MapRow:
    """One row of the README's map: a section of the notes and where it lives."""

    notes: str
    topic: str
    notebook: str  # file name, e.g. "03_flops_and_mfu.ipynb"
    extra: str  # text in the notebook column besides the link, e.g. "(backward in detail: 04)"
    heading: str


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


# -- display copies of the notebooks -------------------------------------------------

def figure_title(source: str) -> str:
    """The literal title a plotting cell gives its figure, or "" if it has none.

    ``suptitle`` names the whole figure, so when a cell calls it only its text counts (a
    panel's ``set_title`` would describe one panel); otherwise the first literal
    ``set_title(...)``/``title=...``. f-strings have no fixed text and are skipped."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: no title to find
        return ""
    titles: dict[str, list[object]] = {"suptitle": [], "title": []}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            kind = "suptitle" if name == "suptitle" else "title"
            if name in TITLE_CALLS and node.args:
                titles[kind].append(node.args[0])
            titles[kind] += [k.value for k in node.keywords if k.arg == "title"]
    texts = sorted((a.lineno, a.col_offset, a.value) for a in titles["suptitle"] or titles["title"]
                   if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.strip())
    return " ".join(texts[0][2].split()) if texts else ""  # the first in the source


def _plain(markdown: str) -> str:
    """A markdown heading's text as rendered: no leading ``#``s, no backticks."""
    return " ".join(markdown.lstrip("#").replace("`", "").split())


def headings(nb: nbformat.NotebookNode) -> list[str]:
    """The text of every markdown heading of ``nb``, in order."""
    return [_plain(line) for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if re.match(r"#{1,6} ", line)]


def retarget_links(source: str, anchors: dict[str, str]) -> str:
    """Rewrite JupyterLab heading links (``](#Heading-text)``, spaces as dashes) to the
    slugs MyST gives the same headings; other links are left alone."""
    return re.sub(r"\]\(#([^)\s]+)\)",
                  lambda m: f"](#{anchors.get(m.group(1), m.group(1))})", source)


def setup_cell(nb: nbformat.NotebookNode):
    """The notebook's one-line setup cell (its first code cell, when it calls setup()), or None."""
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    return first if first is not None and "setup()" in first.source else None


def is_notes(cell) -> bool:
    """Speaker notes: for the presenter's view of a deck, never for a reader."""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes"


def set_apart(source: str) -> str:
    """A "Going deeper" markdown cell for the site: its headings as they are (they stay in the
    table of contents), the rest inside a ``deeper`` container that the theme sets apart."""
    out, text = [], []

    def flush():
        if any(line.strip() for line in text):
            out.extend(["`````{container} deeper", *text, "`````"])
        text.clear()

    for line in source.splitlines():
        if re.match(r"#{1,6} ", line):
            flush()
            out.append(line)
        else:
            text.append(line)
    flush()
    return "\n".join(out)


def display_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` as the site shows it: no speaker notes, the setup cell's code hidden,
    "Going deeper" cells set apart (code collapsed), solutions collapsed, figures with alt
    text; ``nb`` itself is not changed."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if not is_notes(c)]
    setup = setup_cell(nb)
    if setup is not None:
        setup.metadata["tags"] = [*setup.metadata.get("tags", []), "remove-input"]
    anchors = {text.replace(" ", "-"): github_slugify(text) for text in headings(nb)}
    heading = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = retarget_links(cell.source, anchors)
            for line in cell.source.splitlines():
                if re.match(r"#{1,6} ", line):
                    heading = _plain(line)
            if "deeper" in cell.metadata.get("tags", []):
                cell.source = set_apart(cell.source)
            continue
        if cell.cell_type != "code":
            continue
        if "deeper" in cell.metadata.get("tags", []) and "solution" not in cell.metadata.get("tags", []):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), "hide-input"]  # collapsed, output shown
        for out in cell.get("outputs", []):
            if WIDGET_MIME in out.get("data", {}):
                out["data"] = {"text/markdown": WIDGET_NOTE}
        meta = cell.metadata
        tags = list(meta.get("tags", []))
        hidden = meta.get("jupyter", {})
        mystnb = meta.setdefault("mystnb", {})
        if "solution" in tags:  # code and output behind one toggle, whatever Lab shows
            tags.append("hide-cell")
            mystnb.setdefault("code_prompt_show", "Show solution")
            mystnb.setdefault("code_prompt_hide", "Hide solution")
        elif hidden.get("source_hidden") and hidden.get("outputs_hidden"):
            tags.append("hide-cell")
        elif hidden.get("source_hidden"):  # e.g. an exercise's check: its verdict stays visible
            tags.append("hide-input")
        elif hidden.get("outputs_hidden"):
            tags.append("hide-output")
        if tags:
            meta["tags"] = list(dict.fromkeys(tags))
        if any(mime in out.get("data", {}) for out in cell.get("outputs", []) for mime in IMAGE_MIMES):
            figure = mystnb.setdefault("figure", {})
            caption = meta.get("caption") or figure.get("caption")
            if meta.get("caption") and not figure.get("caption"):
                figure["caption"] = meta["caption"]  # shown under the figure, too
            above = re.sub(r"^Figure:\s*", "", heading)  # not "Figure: Figure: ..."
            alt = caption or figure_title(cell.source) or (f"Figure: {above}" if above else "")
            if not alt:
                raise ValueError(f"a figure in cell {cell.get('id', '?')} has no caption, "
                                 "title or heading above it to take alt text from")
            if not figure:
                del mystnb["figure"]
            mystnb.setdefault("image", {}).setdefault("alt", " ".join(str(alt).split()))
        if not mystnb:
            del meta["mystnb"]
    return nb


# -- the index page ------------------------------------------------------------------

def _md_cell(text: str) -> str:
    return text.replace("|", r"\|")


def lectures_markdown(names: list[str], titles: dict[str, str]) -> str:
    """The numbered list of lectures: page, slide deck, notebook download; then the toctree."""
    items = []
    for i, name in enumerate(names, 1):
        stem = Path(name).stem
        items.append(f"{i}. [{titles[name]}]({name}) · "
                     f'<a class="deck-link" href="../slides/{stem}.slides.html">slides</a> · '
                     f'<a class="ipynb-link" href="_sources/{name}" download>{name}</a>')
    toctree = "\n".join(["```{toctree}", ":hidden:", ":maxdepth: 2", ""]
                        + [Path(n).stem for n in names] + ["```"])
    return "\n".join(items) + "\n\n" + toctree


def map_markdown(rows: list[MapRow], names: list[str]) -> str:
    """The README's map as a table whose notebook and heading cells link into the pages."""
    out = ["| notes | topic | notebook | heading |", "| --- | --- | --- | --- |"]
    for row in rows:
        where, heading = row.notebook[:2], _md_cell(row.heading)
        if row.notebook in names:  # a notebook left out of this build keeps plain text
            where = f"[{where}]({row.notebook})"
            heading = f"[{heading}]({row.notebook}#{github_slugify(row.heading)})"
        if row.extra:
            where += " " + _md_cell(row.extra)
        out.append(f"| {_md_cell(row.notes)} | {_md_cell(row.topic)} | {where} | {heading} |")
    return "\n".join(out)


def fill(template: str, marker: str, text: str) -> str:
    tag = f"<!-- build_site: {marker} -->"
    if template.count(tag) != 1:
        raise ValueError(f"docs/site/index.md must hold {tag!r} exactly once")
    return template.replace(tag, text)


# -- the build -----------------------------------------------------------------------

def vendor_mathjax(static: Path) -> None:
    """Copy the parts of the MathJax npm package the pages load into ``static/mathjax``."""
    es5 = vendor.fetch(*MATHJAX) / "es5"
    for part in MATHJAX_PARTS:
        src, dst = es5 / part, static / "mathjax" / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)


def prepare_source(notebooks: list[Path], src: Path, readme: Path) -> None:
    """Fill ``src`` with the Sphinx project: docs/site, display copies, index, MathJax."""
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(SITE_PROJECT, src, ignore=shutil.ignore_patterns("__pycache__"))
    titles = {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        titles[path.name] = notebook_title(nb)
        nbformat.write(display_copy(nb), src / path.name)
    names = [p.name for p in notebooks]
    index = (src / "index.md").read_text(encoding="utf-8")
    index = fill(index, "lectures", lectures_markdown(names, titles))
    index = fill(index, "map", map_markdown(parse_readme_map(readme.read_text(encoding="utf-8")), names))
    (src / "index.md").write_text(index, encoding="utf-8")
    vendor_mathjax(src / "_static")


def build_site(notebooks: list[Path], out: Path, src: Path, readme: Path, jobs: str = "auto") -> int:
    """Generate ``src`` and build the site into ``out``; Sphinx's exit status (0: built)."""
    notebooks = sorted(notebooks, key=lambda p: p.name)
    prepare_source(notebooks, src, readme)
    # -W: a warning (a map link to a missing heading, a bad cell option) fails the build.
    status = build_main(["-b", "html", "-E", "-q", "-W", "--keep-going", "-j", jobs,
                         "-d", str(src / ".doctrees"), str(src), str(out)])
    if status == 0:  # downloads are the notebooks as in notebooks/, not the display copies
        for path in notebooks:
            shutil.copy2(path, out / "_sources" / path.name)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="default: every notebooks/NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--src", type=Path, default=ROOT / "build" / "site-src",
                        help="where the generated Sphinx source goes (replaced on each build)")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("-j", "--jobs", default="auto", help="Sphinx parallel jobs (default: auto)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            print(f"build_site: {str(path)!r} is not a notebook file; give .ipynb files, "
                  "e.g. notebooks/01_tensors_and_strides.ipynb", file=sys.stderr)
            return 2
    if not args.readme.is_file():
        print(f"build_site: README {str(args.readme)!r} not found", file=sys.stderr)
        return 2
    if not (args.jobs == "auto" or (args.jobs.isdigit() and int(args.jobs) > 0)):
        print(f"build_site: -j {args.jobs!r} must be 'auto' or a positive integer", file=sys.stderr)
        return 2
    if args.src.resolve() in (ROOT, SITE_PROJECT, ROOT / "notebooks", args.out.resolve()):
        print(f"build_site: --src {str(args.src)!r} is replaced on every build; "
              "give a folder of its own, e.g. build/site-src", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        status = build_site(notebooks, args.out, args.src, args.readme, args.jobs)
    except (ValueError, vendor.VendorError) as e:
        print(f"build_site: {e}", file=sys.stderr)
        return 1
    if status:
        print(f"build_site: Sphinx failed (exit {status}); see the messages above", file=sys.stderr)
        return 1
    print(f"site: {len(notebooks)} notebook pages + index.html in {args.out} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
