"""`make site` (scripts/build_site.py): the Sphinx site built from the stored outputs.

The site is built once per module into a temporary folder; each test then reads the
HTML with BeautifulSoup and checks it against the notebooks and the README themselves.
"""

import functools
import re
import shutil
import sys
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from sphinx.deprecation import RemovedInSphinx11Warning

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_site  # noqa: E402

pytestmark = pytest.mark.site  # `make site-check` runs these, not `make test`

IMAGE_MIMES = {"image/png", "image/jpeg", "image/svg+xml", "image/gif"}


def page_name(notebook: Path) -> str:
    return notebook.with_suffix(".html").name


def plain(text: str) -> str:
    """Text with Sphinx's typographic quotes back to ASCII ones, spaces collapsed."""
    return " ".join(text.translate(str.maketrans("‘’“”", "''\"\"")).split())


@functools.cache
def soup(path: Path) -> BeautifulSoup:
    """The parsed page (parsed once: the tests only read it)."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def is_solution(cell) -> bool:
    return "solution" in cell.metadata.get("tags", [])


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A copy of the notebooks and README (others may regenerate notebooks/ meanwhile):
    the build reads these, and the tests compare the pages with these."""
    tmp = tmp_path_factory.mktemp("inputs")
    shutil.copy2(ROOT / "README.md", tmp / "README.md")
    (tmp / "notebooks").mkdir()
    for path in [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]:
        shutil.copy2(path, tmp / "notebooks" / path.name)
    return tmp


@pytest.fixture(scope="module")
def notebooks(snapshot):
    return sorted((snapshot / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def site(snapshot, notebooks, tmp_path_factory):
    before = {p: p.read_bytes() for p in notebooks}
    tmp = tmp_path_factory.mktemp("site")
    out = tmp / "site"
    with warnings.catch_warnings():  # the theme and MyST use Sphinx APIs Sphinx 11 drops
        warnings.simplefilter("ignore", RemovedInSphinx11Warning)
        assert build_site.build_site(notebooks, out, snapshot / "README.md", jobs="1") == 0
    assert {p: p.read_bytes() for p in notebooks} == before  # the build never writes its inputs
    return out


@pytest.fixture(scope="module")
def pages(site, notebooks):
    return {nb: soup(site / page_name(nb)) for nb in notebooks}


def test_one_page_per_notebook_plus_index_search_and_index_links(site, notebooks):
    assert len(notebooks) == 8
    for nb in notebooks:
        assert (site / page_name(nb)).is_file()
    assert (site / "index.html").is_file()
    # Sphinx's search: the page, the index it loads by a <script> (works from file://)
    search = soup(site / "search.html")
    assert any(s.get("src") == "searchindex.js" for s in search.find_all("script"))
    index_js = (site / "searchindex.js").read_text(encoding="utf-8")
    for nb in notebooks:
        assert f'"{nb.stem}"' in index_js  # every page is indexed
    assert '"contigu' in index_js  # and its words: contiguous() is taught in 01


def test_every_page_has_sidebar_toc_in_page_toc_and_prev_next(site, pages, notebooks):
    names = [page_name(nb) for nb in notebooks]
    for i, nb in enumerate(notebooks):
        page = pages[nb]
        sidebar = {a["href"].split("#")[0] for a in page.select("nav.bd-docs-nav a[href]")}
        assert set(names) - {names[i]} <= sidebar
        # the in-page toc names every `## ` heading of the notebook
        h2 = [line for cell in nbformat.read(nb, as_version=4).cells if cell.cell_type == "markdown"
              for line in cell.source.splitlines() if line.startswith("## ")]
        toc = page.select("nav.page-toc a[href^='#']")
        assert len(toc) >= len(h2) > 3
        ids = {el["id"] for el in page.find_all(id=True)}
        for a in toc:  # and each entry points at an element of the page
            assert unquote(a["href"][1:]) in ids, a["href"]
        prev_ = [a["href"] for a in page.select("a.left-prev")]
        next_ = [a["href"] for a in page.select("a.right-next")]
        assert prev_ == [names[i - 1] if i else "index.html"]
        assert next_ == ([names[i + 1]] if i + 1 < len(names) else [])


def test_every_page_downloads_its_notebook_unchanged(site, pages):
    for nb, page in pages.items():
        links = [a["href"] for a in page.find_all("a", href=True)
                 if a["href"].endswith(f"_sources/{nb.name}")]
        assert links, f"no .ipynb download on {page_name(nb)}"
        for href in links:
            assert (site / href).read_bytes() == nb.read_bytes()


def local_refs(page: BeautifulSoup) -> list[tuple[str, str]]:
    """(tag, url) of everything a page loads: scripts, styles, icons, fonts, images."""
    refs = [("script", s["src"]) for s in page.find_all("script", src=True)]
    refs += [("link", link["href"]) for link in page.find_all("link", href=True)
             if set(link.get("rel", [])) & {"stylesheet", "preload", "icon", "shortcut", "modulepreload"}]
    refs += [(t.name, t["src"]) for t in page.find_all(["img", "source", "iframe", "embed"], src=True)]
    return refs


def test_nothing_is_loaded_from_the_network(site):
    for path in sorted(site.glob("*.html")):
        page = soup(path)
        refs = local_refs(page)
        if re.match(r"\d\d_", path.name):  # the lectures load MathJax, from the site
            assert any(url.startswith("_static/mathjax/tex-chtml.js") for _, url in refs), path.name
        for tag, url in refs:
            parts = urlsplit(url)
            assert not parts.scheme and not parts.netloc, f"{path.name}: <{tag}> {url}"
            assert (path.parent / unquote(parts.path)).is_file(), f"{path.name}: missing {url}"
    for css in site.glob("_static/**/*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        assert not re.search(r"(url\(\s*['\"]?|@import\s+['\"]?)(https?:)?//", text), css
    fonts = site / "_static/mathjax/output/chtml/fonts/woff-v2"
    assert len(list(fonts.glob("*.woff"))) > 10  # MathJax's fonts, loaded relative to its script


def test_every_figure_has_alt_text_and_every_output_figure_is_shown(pages):
    for nb, page in pages.items():
        expected = sum(1 for cell in nbformat.read(nb, as_version=4).cells if cell.cell_type == "code"
                       for out in cell.outputs if IMAGE_MIMES & set(out.get("data", {})))
        imgs = page.select("article img")
        assert len(imgs) == expected, page_name(nb)
        for img in page.find_all("img"):
            assert img.get("alt", "").strip(), f"{page_name(nb)}: {img}"


def closed_details(element) -> bool:
    """Whether ``element`` sits inside a <details> that starts closed."""
    details = element.find_parent("details")
    return details is not None and details.get("open") is None


def test_solutions_are_collapsed_code_and_output(pages):
    total = 0
    for nb, page in pages.items():
        cells = nbformat.read(nb, as_version=4).cells
        solutions = [c for c in cells if is_solution(c)]
        assert all(c.cell_type == "markdown" for c in solutions), page_name(nb)  # issue 28: never run
        shown = [d for d in page.select("article details") if "solution" in d.summary.get_text().lower()]
        assert len(shown) == len(solutions), page_name(nb)
        for details in shown:  # shut until a reader opens it, and holding the worked code
            assert details.get("open") is None and details.select_one("pre"), page_name(nb)
        total += len(solutions)
        # other cells hide what Lab hides: an exercise check's code, not its verdict
        hidden_src = [c for c in cells if c.cell_type == "code" and not is_solution(c)
                      and (c.metadata.get("jupyter", {}).get("source_hidden")
                           or ("deeper" in c.metadata.get("tags", [])  # Going-deeper code: collapsed,
                               and "exercise" not in c.metadata.get("tags", [])))  # a fill-in cell: shown
                      and not c.metadata.get("jupyter", {}).get("outputs_hidden")]
        inputs = [div.select_one(".cell_input") for div in page.select("article div.cell")
                  if "tag_solution" not in div["class"]]
        assert sum(closed_details(i) for i in inputs if i is not None) == len(hidden_src)
        for div in page.select("article div.cell"):
            if "tag_solution" not in div["class"] and div.select_one(".cell_output"):
                assert not closed_details(div.select_one(".cell_output"))
    assert total > 8  # every notebook ends with exercises


def test_a_reader_sees_the_core_with_depth_set_apart_and_no_speaker_notes(pages):
    """Speaker notes are for the presenter's view: not on the site, and neither is the setup
    cell (code or device line). Going-deeper text sits in a shaded box, its code collapsed."""
    for nb, page in pages.items():
        cells = nbformat.read(nb, as_version=4).cells
        article = plain(page.select_one("article").get_text(" "))
        notes = [c for c in cells if c.metadata.get("slideshow", {}).get("slide_type") == "notes"]
        assert notes, page_name(nb)
        for cell in notes:
            first = plain(re.sub(r"[*_`#>-]", " ", cell.source)).split(". ")[0][:60].strip()
            assert first not in article, (page_name(nb), first)
        assert "setup()" not in page.select_one("article div.cell").get_text(), page_name(nb)
        deeper_text = [c for c in cells if c.cell_type == "markdown" and "deeper" in c.metadata.get("tags", [])
                       and not is_solution(c)  # a solution keeps its own <details>, set apart or not
                       and any(line.strip() and not line.startswith("#") for line in c.source.splitlines())]
        assert len(page.select("article div.deeper")) >= len(deeper_text) > 0, page_name(nb)
        assert page.select("article div.cell.tag_deeper"), page_name(nb)


def test_no_code_line_is_cut_off(site):
    css = (site / "_static" / "lecture.css").read_text(encoding="utf-8")
    assert re.search(r"div\.highlight pre[^{]*\{[^}]*white-space: pre-wrap", css)
    page = soup(site / "index.html")
    assert any("lecture.css" in link.get("href", "") for link in page.select("link[rel=stylesheet]"))


def test_math_is_wrapped_for_mathjax_and_no_dollar_is_left(pages):
    for nb, page in pages.items():
        article = page.select_one("article")
        for text in article.find_all(string=True):
            if "$" in text and text.find_parent(class_="math") is None \
                    and text.find_parent(["pre", "code", "script", "style"]) is None:
                raise AssertionError(f"{page_name(nb)}: raw $ in {text.strip()[:80]!r}")
        spans = sum(len(re.findall(r"\$[^$\n]+\$", c.source.replace("$$", "")))
                    for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "markdown")
        math = article.select(".math")
        assert len(math) >= spans
        for el in math:
            assert re.fullmatch(r"\\\(.*\\\)|\\\[.*\\\]", el.get_text().strip(), re.S), el


def test_a_checked_error_shows_its_message(pages):
    """A deliberate error is a check(..., raises=) that prints the exception: the page shows the
    ✓ line and the message, as the notebook stored them."""
    seen = 0
    for nb, page in pages.items():
        for cell in nbformat.read(nb, as_version=4).cells:
            if cell.cell_type != "code" or "raises=" not in cell.source or "print(" not in cell.source:
                continue
            stored = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            lines = [line for line in stored.splitlines() if line.strip()]
            if not any(" raises " in line for line in lines):
                continue
            text = " ".join(page.get_text().split())
            for line in lines:
                assert " ".join(line.split()) in text, f"{nb.name}: {line!r} not on the page"
            seen += 1
    assert seen >= 1


def test_index_lists_lectures_decks_downloads_and_the_readme_map(site, notebooks, snapshot):
    index = soup(site / "index.html")
    article = index.select_one("article")
    assert "PyTorch and resource accounting" in index.h1.get_text()
    hrefs = [a["href"] for a in article.find_all("a", href=True)]
    for nb in notebooks:
        title = build_site.notebook_title(nbformat.read(nb, as_version=4))
        assert any(a.get_text(" ", strip=True) == title and a["href"] == page_name(nb)
                   for a in article.find_all("a", href=True)), title
        assert f"../slides/{nb.stem}.slides.html" in hrefs
        assert f"_sources/{nb.name}" in hrefs
    readme = (snapshot / "README.md").read_text(encoding="utf-8")
    section = readme.split(build_site.MAP_HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")][2:]
    rows = index.select("article table tbody tr")
    assert len(rows) == len(lines) > 20
    for tr, line in zip(rows, lines, strict=True):
        heading = line.rstrip(" |").rsplit("| ", 1)[1].replace("`", "")
        link = tr.find_all("td")[3].a
        assert plain(link.get_text(" ", strip=True)) == " ".join(heading.split())
        target, _, anchor = link["href"].partition("#")
        assert anchor, link  # a heading, not just the page
        page = soup(site / target)
        element = page.find(id=unquote(anchor))
        assert element is not None, link["href"]
        section_heading = element.find(re.compile("^h[1-6]$")) if element.name == "section" else element
        assert heading in plain(section_heading.get_text(" ", strip=True))


# -- the pure parts ------------------------------------------------------------------

def test_the_map_links_each_row_to_its_page_and_heading():
    text = ("# x\n\n## Map: lecture notes to notebooks\n\nintro\n\n"
            "| notes | topic | notebook | heading |\n| --- | --- | --- | --- |\n"
            "| §1 | a | [01](notebooks/01_a.ipynb) | §1 A `b` |\n"
            "| §3 | c | [03](notebooks/03_c.ipynb) (more: 04) | §3 C |\n\nafter | not a row |\n## Next\n| x |\n")
    assert build_site.map_markdown(text, ["01_a.ipynb"]).splitlines() == [
        "| notes | topic | notebook | heading |", "| --- | --- | --- | --- |",
        "| §1 | a | [01](01_a.ipynb) | [§1 A `b`](01_a.ipynb#1-a-b) |",
        "| §3 | c | 03 (more: 04) | §3 C |"]  # 03 is not in this build: plain text, no broken link
    with pytest.raises(ValueError, match="no notebook link"):
        build_site.map_markdown(text.replace("[01](notebooks/01_a.ipynb)", "01"), ["01_a.ipynb"])
    with pytest.raises(ValueError, match="Map"):
        build_site.map_markdown("# no map here\n", [])


def figure_cell(source="plt.show()", **metadata):
    cell = new_code_cell(source, metadata=metadata)
    cell.outputs = [new_output("display_data", data={"image/png": "AAAA", "text/plain": "<Figure>"})]
    return cell


def test_display_copy_tags_each_cell_for_myst_nb():
    cells = [
        new_code_cell("device = setup()"),
        new_markdown_cell("- say this", metadata={"slideshow": {"slide_type": "notes"}}),
        new_markdown_cell("### Going deeper: x\n\nText.\n#### More\nMore text.", metadata={"tags": ["deeper"]}),
        new_code_cell("deep()", metadata={"tags": ["deeper"]}),
        new_code_cell("answer()", metadata={"jupyter": {"source_hidden": True, "outputs_hidden": True},
                                            "tags": ["solution"]}),
        new_code_cell("check()", metadata={"jupyter": {"source_hidden": True}}),
        new_code_cell("widget()"),
        new_code_cell("raise X", metadata={"tags": ["raises-exception"]}),
        figure_cell(caption="Loss  per\nstep."),
        figure_cell(mystnb={"image": {"alt": "A line"}}, caption="the caption"),
    ]
    cells[6].outputs = [new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "VBox(...)"})]
    nb = new_notebook(cells=cells)
    original = nbformat.writes(nb)
    shown = build_site.display_copy(nb).cells
    assert nbformat.writes(nb) == original  # the notebook itself is untouched
    assert [c.metadata.get("tags") for c in shown] == [
        ["remove-cell"], ["remove-cell"], ["deeper"], ["deeper", "hide-input"], ["solution", "hide-cell"],
        ["hide-input"], None, ["raises-exception"], None, None]
    assert shown[2].source.splitlines() == [  # headings outside the box: they stay in the toc
        "### Going deeper: x", "`````{container} deeper", "", "", "Text.", "", "`````",
        "#### More", "`````{container} deeper", "", "More text.", "`````"]
    assert shown[4].metadata.mystnb == {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
    assert shown[6].outputs[0].data == {"text/markdown": build_site.WIDGET_NOTE}
    assert shown[8].metadata.mystnb == {"image": {"alt": "Loss per step."},
                                        "figure": {"caption": "Loss  per\nstep."}}
    assert shown[9].metadata.mystnb["image"] == {"alt": "A line"}  # an explicit alt wins
    with pytest.raises(ValueError, match="no 'caption'"):
        build_site.display_copy(new_notebook(cells=[figure_cell()]))


def test_cli_rejects_bad_input_in_one_line(tmp_path, capsys):
    readme = ROOT / "README.md"
    assert build_site.main([str(tmp_path / "missing.ipynb"), str(readme)]) == 2
    assert capsys.readouterr().err == f"build_site: not a notebook file: {tmp_path / 'missing.ipynb'}, {readme}\n"
