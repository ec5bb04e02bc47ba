"""The parts of `make slides` and `make site-check` that need no browser: slide structure,
the deck files and the vendored packages (scripts/vendor.py). The site itself:
tests/test_site_build.py; the page checks (tests/pagecheck.py, the test harness of `make
site-check`): tests/test_pages.py and tests/test_built_pages.py."""

import json
import logging
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_site  # noqa: E402
import build_slides  # noqa: E402
import vendor  # noqa: E402


def types(nb):
    return [c.metadata["slideshow"]["slide_type"] for c in build_slides.prepare_for_slides(nb).cells]


def test_headings_give_the_default_structure_and_solutions_are_skipped():
    cells = [new_code_cell("device = setup()"), new_markdown_cell("# 01 · Title"),
             new_markdown_cell("\n## §2 Section"), new_markdown_cell("### Sub"),
             new_markdown_cell("#### Deep"), new_markdown_cell("prose with # inside"),
             new_code_cell("# a comment, not a heading"),
             new_code_cell("answer()", metadata={"jupyter": {"source_hidden": True}}),
             new_code_cell("answer()", metadata={"tags": ["solution"]})]
    nb = new_notebook(cells=cells)
    # the one-line setup cell and the solutions are never on a slide
    assert types(nb) == ["skip", "slide", "slide", "subslide", "-", "-", "-", "skip", "skip"]
    assert all("slideshow" not in c.metadata for c in nb.cells)  # the original is untouched


def test_a_deck_is_the_core_path_and_speaker_notes_stay_notes():
    deeper = {"tags": ["deeper"], "jp-MarkdownHeadingCollapsed": True}
    nb = new_notebook(cells=[new_code_cell("device = setup()"), new_markdown_cell("## §2 Section"),
                             new_code_cell("core()"),
                             new_markdown_cell("### Going deeper: more", metadata=deeper),
                             new_code_cell("more()", metadata={"tags": ["deeper"]}),
                             new_markdown_cell("- say this", metadata={"jupyter": {"source_hidden": True},
                                                                       "slideshow": {"slide_type": "notes"}})])
    assert types(nb) == ["skip", "slide", "-", "skip", "skip", "notes"]


def test_slideshow_metadata_wins_over_the_heading_default():
    def md(text, kind=None):
        return new_markdown_cell(text, metadata={"slideshow": {"slide_type": kind}} if kind else {})
    nb = new_notebook(cells=[md("# Title"), md("## Kept on the title slide", "-"),
                             md("A new slide without a heading", "slide"), md("Bit by bit", "fragment"),
                             md("Say this", "notes"), md("Not shown", "skip"), md("### Sub"),
                             new_code_cell("answer()", metadata={"tags": ["solution"],
                                                                 "slideshow": {"slide_type": "slide"}})])
    assert types(nb) == ["slide", "-", "slide", "fragment", "notes", "skip", "subslide", "skip"]
    with pytest.raises(ValueError, match="'page' is not one of slide, subslide, fragment"):
        types(new_notebook(cells=[md("x", "page")]))


def test_figures_get_alt_text_as_on_the_site():
    def figure(**meta):
        cell = new_code_cell("plot()", metadata=meta)
        cell.outputs = [new_output("display_data", data={"image/png": "AAAA", "text/plain": "f"})]
        return cell
    nb = new_notebook(cells=[new_markdown_cell("# T"), figure(caption="Memory  per\nrecipe"),
                             figure(mystnb={"image": {"alt": "Bars per dtype"}}, caption="not the alt")])
    deck = build_slides.prepare_for_slides(nb)
    assert [c.outputs[0].metadata["alt"] for c in deck.cells[1:]] == ["Memory per recipe", "Bars per dtype"]
    assert "alt" not in nb.cells[1].outputs[0].metadata
    with pytest.raises(ValueError, match="no 'caption'"):
        build_slides.prepare_for_slides(new_notebook(cells=[figure()]))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slides")
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(60)))]
    nb = new_notebook(cells=[new_markdown_cell("# Deck <&>"), new_code_cell("1"),
                             new_markdown_cell("## Two"), new_markdown_cell("### Two b"), cell])
    path = tmp / "09_deck.ipynb"
    nbformat.write(nb, path)
    try:
        [out] = build_slides.build_slides([path], tmp / "slides")
    except vendor.VendorError as e:
        pytest.skip(f"vendored packages missing and not downloadable: {e}")
    return path, out


def test_build_slides_writes_a_deck_and_leaves_the_notebook_alone(built):
    path, out = built
    assert out.name == "09_deck.slides.html"
    text = out.read_text(encoding="utf-8")
    assert text.count("<section") >= 3
    assert "line 59\n" in text  # long outputs wrap, they are not cut
    assert "slideshow" not in nbformat.read(path, as_version=4).cells[0].metadata


def test_decks_load_everything_from_build_vendor_by_relative_urls(built):
    _, out = built
    text = out.read_text(encoding="utf-8")
    refs = re.findall(r"""(?:src|href)=["']([^"'#][^"']*)["']""", text)  # not #anchors
    refs += re.findall(r'"([^"]+/(?:reveal|notes)\.js)"', text)  # loaded by require.js
    assert refs and not [r for r in refs if "//" in r]  # nothing absolute, no CDN
    for ref in refs:
        target = (out.parent / ref.split("?")[0]).resolve()
        assert target.is_file(), ref
        assert target.is_relative_to(vendor.VENDOR.resolve())
    assert "width: 1280, height: 720" in text


def test_deck_index_lists_each_deck_with_its_title(built):
    _, out = built
    index = (out.parent / "index.html").read_text(encoding="utf-8")
    # the title escaped, then the deck's printable form (one PDF page a slide)
    assert ('<li><a href="09_deck.slides.html">Deck &lt;&amp;&gt;</a> '
            '(<a class="pdf-link" href="09_deck.slides.html?print-pdf">PDF</a>)</li>') in index


def test_build_slides_cli_rejects_a_missing_notebook(tmp_path, capsys):
    assert build_slides.main(["--out", str(tmp_path), str(tmp_path / "nope.ipynb")]) == 2
    assert capsys.readouterr().err == f"build_slides: not a notebook file: {tmp_path / 'nope.ipynb'}\n"


# vendor.py

def test_the_lock_pins_every_package_the_pages_load_by_sha512():
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    packages = {k.removeprefix("node_modules/"): v for k, v in lock["packages"].items() if k}
    assert {name: p["version"] for name, p in packages.items()} == {  # nothing else: no dependencies
        "jquery": "2.1.0", "mathjax": "3.2.2", "mathjax2": "2.7.7", "requirejs": "2.1.10", "reveal.js": "4.0.2"}
    assert all(re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", p["integrity"]) for p in packages.values())


def test_an_install_is_done_once_then_needs_no_npm(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no npm
    assert vendor.main(["--dest", str(tmp_path / "v")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vendor: npm not found: install Node.js and npm (apt-get install npm); "
        "it fetches the JavaScript the pages load"]
    shutil.copy2(ROOT / "package-lock.json", tmp_path / "v" / "installed-package-lock.json")  # as after npm ci
    assert vendor.install(tmp_path / "v") == tmp_path / "v" / "node_modules"


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_offline_and_not_cached_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("npm_config_offline", "true")  # as with no network: npm's cache only...
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "empty-cache"))  # ...and nothing in it
    assert vendor.main(["--dest", str(tmp_path / "v")]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("vendor: npm ci failed (code ENOTCACHED; ") and "registry reachable" in line
    assert not (tmp_path / "v" / "installed-package-lock.json").exists()  # not marked installed


# the Chinese site's search (issue 36, item 7; the built index: tests/test_chinese_search.py)

def test_the_search_dictionary_keeps_every_glossary_word_whole(tmp_path):
    import jieba

    jieba.setLogLevel(logging.WARNING)
    words = build_site.search_words()
    assert {"张量", "优化器", "优化器状态", "算术强度", "步幅", "锁页", "脊点"} <= set(words)
    assert all(re.search(r"[\u4e00-\u9fff]", w) and " " not in w for w in words), words
    dictionary = tmp_path / build_site.SEARCH_DICTIONARY
    dictionary.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    plain, told = jieba.Tokenizer(), jieba.Tokenizer()  # of their own: jieba's global one would reach other tests
    told.load_userdict(str(dictionary))
    assert "优化器" not in plain.cut_for_search("每个优化器一个 update")  # what made it unfindable
    split = [w for w in words if w not in told.cut_for_search(f"这一节讲{w}的代价")]
    assert not split, f"jieba still cuts these: {split}"
    assert {"优化", "优化器", "状态"} <= set(told.cut_for_search("优化器状态"))  # its parts stay findable
