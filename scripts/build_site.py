"""Build the course site with Sphinx + MyST-NB from the notebooks' stored (golden) outputs.

Usage: python scripts/build_site.py [--out build/site] [notebooks...]          (`make site`)

Nothing is executed and notebooks/ is never modified: docs/site/ is copied to a temporary
folder with display copies of the notebooks, tagged for MyST-NB by each cell's role
(VIEWS): speaker notes and the setup cell removed, solutions collapsed behind
"Show solution", exercise checks' and Going-deeper code collapsed, Going-deeper text in a
shaded box, every figure with its cell's ``caption`` as alt text and caption. The index
lists the lectures (page, deck, .ipynb download: the notebook as in notebooks/) and links
the README's map to the notebook headings. MathJax 3 comes from npm (scripts/vendor.py):
every page works from file:// with no network.

Two editions (EDITIONS): the English site in OUT from the notebooks given, and the Chinese
one in OUT/zh/ (Sphinx ``language = "zh_CN"``) from notebooks/zh/ (each notebook's ``zh/``
twin, written by `make zh`) and README.zh-CN.md; the Chinese index's own text is translated by
docs/site/locale/zh_CN/LC_MESSAGES/index.po (Sphinx's gettext). Every page links to the same
page of the other edition (relative, so it works from file://), and each edition's search
finds its own words (Chinese through jieba, which Sphinx's zh search splits words with; the
Chinese edition hands jieba the glossary's words, SEARCH_DICTIONARY, so that 优化器 and 算术强度
stay whole in the index and a reader who types them finds their pages).

What both builders share lives here: the setup cell, each cell's role and its view on
the site and in a deck (VIEWS), a notebook's title and a figure's alt text.
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from myst_parser.slugs import github_slugify
from sphinx.cmd.build import build_main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import i18n_glossary  # noqa: E402
import vendor  # noqa: E402

SITE_PROJECT = ROOT / "docs" / "site"
# What the pages load from the MathJax 3 package: the TeX->CHTML bundle and what it
# loads on demand (extensions, fonts, menu, a11y); not its other bundles or Node code.
MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y", "sre"]
MAP_HEADING = "## Map: lecture notes to notebooks"
# A README's link to a notebook: notebooks/NN_topic.ipynb, or its edition's notebooks/zh/NN_topic.ipynb.
NOTEBOOK_LINK = re.compile(r"\[([^\]]*)\]\(notebooks/(?:zh/)?([^)/]+\.ipynb)\)")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
GLOSSARY = ROOT / "locale" / "zh_CN" / "glossary.md"
# jieba's user dictionary in the Chinese edition's source folder: conf.py hands it to Sphinx's zh
# search (html_search_options = {"dict": ...}); not a source suffix, so Sphinx builds no page of it.
SEARCH_DICTIONARY = "jieba_dict.txt"
# A static page has no kernel to drive a widget (and its JS would come from a CDN).
WIDGET_NOTE = ("*An interactive widget appears here when the notebook runs: download the "
               "notebook, or `make lab`.*")


@dataclass(frozen=True)
class Edition:
    """One language of the site (and of the decks, scripts/build_slides.py)."""

    language: str  # Sphinx's ``language``
    folder: str  # where it is built, under the site's (and the decks') folder: "" or "zh"
    html_lang: str  # the lang attribute of its pages, and of the link to them
    name: str  # what the language switch that leads here says
    readme: str  # the README whose map table the index shows
    map_heading: str  # that table's heading
    title: str  # the site's title (the sidebar's, the tab's)
    show_solution: str
    hide_solution: str
    show_code: str  # MyST-NB's button over a collapsed cell ({type}: source, outputs, content)
    hide_code: str
    widget_note: str
    slides: str  # the index's link to a lecture's deck

    def notebook(self, english: Path) -> Path:
        """This edition's copy of an English notebook: itself, or zh/ beside it (`make zh`)."""
        return english.parent / self.folder / english.name if self.folder else english


EDITIONS = {
    "en": Edition("en", "", "en", "English", "README.md", MAP_HEADING, "PyTorch and resource accounting",
                  "Show solution", "Hide solution", "Show code cell {type}", "Hide code cell {type}",
                  WIDGET_NOTE, "slides"),
    # The Chinese words are README.zh-CN.md's and the glossary's (locale/zh_CN/glossary.md).
    "zh_CN": Edition("zh_CN", "zh", "zh-CN", "中文", "README.zh-CN.md", "## 对照表：讲义到 notebook",
                     "PyTorch 与资源核算", "显示参考解答", "隐藏参考解答", "显示代码", "隐藏代码",
                     "*notebook 运行时，这里会出现一个交互式 widget：下载 notebook，或运行 `make lab`。*",
                     "幻灯片"),
}


# -- shared with scripts/build_slides.py ---------------------------------------------

def notebook_title(nb: nbformat.NotebookNode) -> str:
    """The text of the notebook's first ``# `` heading."""
    for cell in nb.cells:
        for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
            if line.startswith("# "):
                return line[2:].strip()
    raise ValueError("notebook has no '# ' heading")


def setup_cell(nb: nbformat.NotebookNode):
    """The one-line setup cell (the first code cell, when it calls setup()), or None."""
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    return first if first is not None and "setup()" in first.source else None


# One source, two views: each role a cell can have, with the MyST-NB tag the site gives it
# and the slide type a deck gives it (None: the cell's own metadata decides).
VIEWS = {
    "setup": ("remove-cell", "skip"),  # the one-line setup cell: a reader needs neither its code nor its device line
    "notes": ("remove-cell", "notes"),  # speaker notes: the deck's speaker view only
    "solution": ("hide-cell", "skip"),  # code and output behind "Show solution"
    "solution text": (None, "skip"),  # a solution as markdown: its own <details> keeps it shut
    "check": ("hide-input", "skip"),  # an exercise check: its verdict stays visible
    "deeper": ("hide-input", "skip"),  # Going deeper: code collapsed, text set apart (set_apart)
    "deeper exercise": (None, "skip"),  # a fill-in cell in "Going deeper: more exercises": shown
    "core": (None, None),
}


def role(cell, setup) -> str:
    """The cell's key in VIEWS; ``setup`` is the notebook's setup_cell()."""
    tags = cell.metadata.get("tags", [])
    if cell is setup:
        return "setup"
    if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
        return "notes"
    if "solution" in tags:
        return "solution" if cell.cell_type == "code" else "solution text"
    if cell.cell_type == "code" and cell.metadata.get("jupyter", {}).get("source_hidden"):
        return "check"  # CONTRIBUTING, Exercises: a check's code is hidden in Lab
    if "deeper" in tags:  # a fill-in cell shows its code on the site, in "Going deeper: more exercises" too
        return "deeper exercise" if "exercise" in tags else "deeper"
    return "core"


def has_figure(cell) -> bool:
    return any(m.startswith("image/") for out in cell.get("outputs", []) for m in out.get("data", {}))


def alt_text(cell) -> str:
    """A figure's alt text: MyST-NB's image alt if the cell gives one, else its ``caption``
    (CONTRIBUTING, Figures: every figure cell has one)."""
    alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt") or cell.metadata.get("caption")
    if not alt:
        raise ValueError(f"cell {cell.get('id', '?')} draws a figure but has no 'caption' "
                         "metadata to take its alt text from")
    return " ".join(alt.split())


# -- display copies ------------------------------------------------------------------

def set_apart(source: str) -> str:
    """A Going-deeper markdown cell with its text in a ``deeper`` box; its headings stay
    outside the box, so they stay in the table of contents."""
    parts = re.split(r"^(#{1,6} .*)$", source, flags=re.M)
    return "\n".join(part if re.match(r"#{1,6} ", part) else f"`````{{container}} deeper\n{part}\n`````"
                     for part in parts if part.strip())


def display_copy(nb: nbformat.NotebookNode, edition: Edition = EDITIONS["en"]) -> nbformat.NotebookNode:
    """A copy of ``nb`` tagged for MyST-NB as the site shows it (VIEWS), in ``edition``'s
    words; ``nb`` is not changed."""
    nb = copy.deepcopy(nb)
    setup = setup_cell(nb)
    for cell in nb.cells:
        meta = cell.metadata
        kind = role(cell, setup)
        if kind == "deeper" and cell.cell_type == "markdown":
            cell.source = set_apart(cell.source)
        elif VIEWS[kind][0]:
            meta["tags"] = [*meta.get("tags", []), VIEWS[kind][0]]
        if kind == "solution":
            meta["mystnb"] = {"code_prompt_show": edition.show_solution, "code_prompt_hide": edition.hide_solution,
                              **meta.get("mystnb", {})}
        for out in cell.get("outputs", []):
            if WIDGET_MIME in out.get("data", {}):
                out["data"] = {"text/markdown": edition.widget_note}
        if has_figure(cell):
            mystnb = meta.setdefault("mystnb", {})
            mystnb.setdefault("image", {})["alt"] = alt_text(cell)
            if meta.get("caption"):  # shown under the figure, too
                mystnb.setdefault("figure", {}).setdefault("caption", meta["caption"])
    return nb


# -- the index page ------------------------------------------------------------------

def lectures_markdown(names: list[str], titles: dict[str, str], decks: str = "../slides",
                      slides: str = "slides") -> str:
    """The numbered list of lectures (page, slide deck in ``decks``, notebook download), then the toctree."""
    items = [f"{i}. [{titles[name]}]({name}) · "
             f'<a class="deck-link" href="{decks}/{Path(name).stem}.slides.html">{slides}</a> · '
             f'<a class="ipynb-link" href="_sources/{name}" download>{name}</a>'
             for i, name in enumerate(names, 1)]
    toctree = ["```{toctree}", ":hidden:", ":maxdepth: 2", "", *(Path(n).stem for n in names), "```"]
    return "\n".join(items) + "\n\n" + "\n".join(toctree)


def map_markdown(readme: str, names: list[str], heading: str = MAP_HEADING) -> str:
    """The README's map table (under ``heading``), its notebook and heading cells linked into the pages."""
    if heading not in readme:
        raise ValueError(f"README has no {heading!r} section")
    section = readme.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    for i, row in enumerate(rows[2:], 2):  # after the header and its |---| line
        *cells, heading = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        link = NOTEBOOK_LINK.search(cells[-1])
        if link is None:
            raise ValueError(f"README map row has no notebook link: {row!r}")
        if link[2] in names:  # a page of this build: link the notebook and the heading
            cells[-1] = cells[-1].replace(link[0], f"[{link[1]}]({link[2]})")
            heading = f"[{heading}]({link[2]}#{github_slugify(heading)})"
        else:  # a notebook left out of this build: plain text, not a broken link
            cells[-1] = cells[-1].replace(link[0], link[1])
        rows[i] = f"| {' | '.join(cells)} | {heading} |"
    return "\n".join(rows)


# -- the build -----------------------------------------------------------------------

def search_words(glossary: Path = GLOSSARY) -> list[str]:
    """The Chinese words of the glossary's forms (张量, 步幅, 算术强度, 内存分配器 ...), for jieba's user
    dictionary: without them jieba cuts 优化器 into 优化 + 器 and 算术强度 into 算术 + 强度, so the
    index never holds what a reader types (issue 36). jieba gives each word the frequency that keeps
    it whole, and Sphinx's cut_for_search still indexes its parts (优化, 算术)."""
    words = []
    for term in i18n_glossary.read_glossary(glossary):
        for part in re.split(r"[\s（）()、，/]+", term.chinese):
            if re.search(r"[\u4e00-\u9fff]", part) and part not in words:
                words.append(part)
    return words


def prepare_source(notebooks: list[Path], src: Path, readme: Path, edition: Edition = EDITIONS["en"]) -> None:
    """Fill ``src`` with the Sphinx project of ``edition``: docs/site, display copies, index, MathJax."""
    shutil.copytree(SITE_PROJECT, src, ignore=shutil.ignore_patterns("__pycache__"))
    titles = {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        try:
            titles[path.name] = notebook_title(nb)
            nbformat.write(display_copy(nb, edition), src / path.name)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    names = list(titles)
    # this edition's decks: build/slides/<folder>, seen from build/site/<folder>
    decks = "/".join([".."] * (1 + bool(edition.folder)) + ["slides"] + [edition.folder] * bool(edition.folder))
    index = (src / "index.md").read_text(encoding="utf-8")
    for marker, text in [("lectures", lectures_markdown(names, titles, decks, edition.slides)),
                         ("map", map_markdown(readme.read_text(encoding="utf-8"), names, edition.map_heading))]:
        tag = f"<!-- build_site: {marker} -->"
        if index.count(tag) != 1:
            raise ValueError(f"docs/site/index.md must hold {tag!r} exactly once")
        index = index.replace(tag, text)
    (src / "index.md").write_text(index, encoding="utf-8")
    if edition.language == "zh_CN":
        (src / SEARCH_DICTIONARY).write_text("".join(f"{word}\n" for word in search_words()), encoding="utf-8")
    es5, mathjax = vendor.install() / "mathjax" / "es5", src / "_static" / "mathjax"  # conf.py: mathjax_path
    for part in MATHJAX_PARTS:
        (mathjax / part).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (es5 / part).is_dir() else shutil.copy2)(es5 / part, mathjax / part)


def missing_editions(notebooks: list[Path], tool: str) -> str | None:
    """The one line that says which notebooks lack their Chinese edition (``make zh`` writes
    it), or None; ``tool`` names the script that says it (build_site, build_slides)."""
    missing = [str(p) for p in map(EDITIONS["zh_CN"].notebook, notebooks) if not p.is_file()]
    return f"{tool}: no Chinese edition of a notebook (make zh writes it): {', '.join(missing)}" if missing else None


def switch_to(edition: Edition) -> tuple[Edition, str]:
    """The edition a page of ``edition`` links to, and the way there from ``edition``'s folder."""
    other = EDITIONS["zh_CN" if edition.language == "en" else "en"]
    up = "../" * len(Path(edition.folder).parts)
    return other, up + (f"{other.folder}/" if other.folder else "")


def sphinx_options(edition: Edition) -> list[str]:
    """Sphinx's -D (configuration) and -A (template) options that make ``edition``'s build; conf.py
    puts the language switch on every page from the lang_switch_* values."""
    other, prefix = switch_to(edition)
    config = {"language": edition.language, "html_title": edition.title,
              "nb_code_prompt_show": edition.show_code, "nb_code_prompt_hide": edition.hide_code}
    context = {"lang_switch_prefix": prefix, "lang_switch_name": other.name, "lang_switch_lang": other.html_lang}
    return [*(f"-D{k}={v}" for k, v in config.items()), *(f"-A{k}={v}" for k, v in context.items())]


def build_site(notebooks: list[Path], out: Path, readme: Path = ROOT / "README.md", jobs: str = "auto",
               edition: Edition = EDITIONS["en"]) -> int:
    """Build ``edition`` of the site from ``notebooks`` (that edition's) into ``out``; Sphinx's exit
    status (0: built)."""
    notebooks = sorted(notebooks, key=lambda p: p.name)
    with tempfile.TemporaryDirectory(prefix="site-src-") as tmp:
        src = Path(tmp) / "src"
        prepare_source(notebooks, src, readme, edition)
        # -W: a warning (a map link to a missing heading, a bad cell option) fails the build.
        status = build_main(["-b", "html", "-E", "-q", "-W", "--keep-going", "-j", jobs, *sphinx_options(edition),
                             "-d", str(src / ".doctrees"), str(src), str(out)])
    if status == 0:  # downloads are the notebooks as in notebooks/, not the display copies
        for path in notebooks:
            shutil.copy2(path, out / "_sources" / path.name)
    return status


class Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP: Sphinx catches Exception and KeyboardInterrupt, not this, so it reaches
    the ``with`` of the temporary source folder (site-src-*), which removes the folder."""


def main(argv: list[str] | None = None) -> int:
    me, stops = os.getpid(), [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]

    def stop(signum, frame):
        if os.getpid() != me:  # a Sphinx worker (forked): it just ends; the main process cleans up
            os._exit(128 + signum)
        for s in stops:  # one is enough: a second would cut the clean-up short
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in stops}
    try:
        return _build(argv)
    except Stopped as stopped:
        for worker in multiprocessing.active_children():  # Sphinx's, if any still run
            worker.terminate()
        print(f"build_site: stopped by {signal.Signals(stopped.args[0]).name}; nothing is left in the temporary "
              "folder", file=sys.stderr)
        return 128 + stopped.args[0]
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _build(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
    bad = [str(p) for p in notebooks if p.suffix != ".ipynb" or not p.is_file()]
    if bad:
        print(f"build_site: not a notebook file: {', '.join(bad)}", file=sys.stderr)
        return 2
    if (missing := missing_editions(notebooks, "build_site")) is not None:
        print(missing, file=sys.stderr)
        return 2
    for edition in EDITIONS.values():
        start = time.perf_counter()
        where = args.out / edition.folder
        try:
            status = build_site([edition.notebook(p) for p in notebooks], where, ROOT / edition.readme,
                                edition=edition)
        except (ValueError, vendor.VendorError) as e:
            print(f"build_site: {e}", file=sys.stderr)
            return getattr(e, "status", 1)
        if status:
            print(f"build_site: Sphinx failed (exit {status}) on the {edition.name} site; see the messages above",
                  file=sys.stderr)
            return 1
        print(f"site ({edition.language}): {len(notebooks)} notebook pages + index.html in {where} "
              f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
