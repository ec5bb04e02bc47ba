"""The parts of `make slides` and `make site-check` that need no browser: slide structure,
the deck files, the vendored packages (scripts/vendor.py) and the checker's pure helpers.
The site itself: tests/test_site_build.py; the checker in Chromium: tests/test_pages.py."""

import base64
import hashlib
import io
import re
import sys
import tarfile
import urllib.error
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402
import check_pages  # noqa: E402
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
    def figure(source="plot()", **meta):
        cell = new_code_cell(source, metadata=meta)
        cell.outputs = [new_output("display_data", data={"image/png": "AAAA", "text/plain": "f"})]
        return cell
    nb = new_notebook(cells=[new_markdown_cell("# T"), new_markdown_cell("## §1 `int8` costs"), figure(),
                             figure(mystnb={"image": {"alt": "Bars per dtype"}}, caption="ignored"),
                             figure(mystnb={"figure": {"caption": "Loss curve"}}),
                             figure(caption="Memory  per\nrecipe"),
                             figure('fig.suptitle("Roofline")\nax.set_title("left panel")'),
                             new_markdown_cell("### Figure: timeline"), figure()])
    deck = build_slides.prepare_for_slides(nb)
    alts = [o.metadata["alt"] for c in deck.cells for o in c.get("outputs", [])]
    assert alts == ["Figure: §1 int8 costs", "Bars per dtype", "Loss curve", "Memory per recipe",
                    "Roofline", "Figure: timeline"]
    assert "alt" not in nb.cells[2].outputs[0].metadata


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    try:
        for package in (build_slides.REVEAL, build_slides.MATHJAX, build_slides.REQUIREJS,
                        build_slides.JQUERY):
            vendor.fetch(*package)
    except vendor.VendorError as e:
        pytest.skip(f"vendored packages missing and not downloadable: {e}")
    tmp = tmp_path_factory.mktemp("slides")
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(60)))]
    nb = new_notebook(cells=[new_markdown_cell("# Deck <&>"), new_code_cell("1"),
                             new_markdown_cell("## Two"), new_markdown_cell("### Two b"), cell])
    path = tmp / "09_deck.ipynb"
    nbformat.write(nb, path)
    [out] = build_slides.build_slides([path], tmp / "slides")
    return path, out


def test_build_slides_writes_a_deck_and_leaves_the_notebook_alone(built):
    path, out = built
    assert out.name == "09_deck.slides.html"
    text = out.read_text(encoding="utf-8")
    assert text.count("<section") >= 3
    assert "line 59\n" in text  # long outputs scroll, they are not cut
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
    assert '<li><a href="09_deck.slides.html">Deck &lt;&amp;&gt;</a></li>' in index


def test_build_slides_cli_rejects_a_missing_notebook(tmp_path, capsys):
    assert build_slides.main(["--out", str(tmp_path), str(tmp_path / "nope.ipynb")]) == 2
    assert capsys.readouterr().err == f"build_slides: no such notebook: {tmp_path / 'nope.ipynb'}\n"


# vendor.py

def test_integrity_is_npm_sri_sha512():
    # Subresource Integrity of the empty string (a published constant).
    assert vendor.integrity(b"") == ("sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8"
                                     "XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==")


def tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def fake_registry(monkeypatch):
    """A pinned fake package ``demo@1.0.0`` served from memory; records every download."""
    data = tarball({"dist/demo.js": b"demo()", "package.json": b"{}"})
    pin = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    monkeypatch.setitem(vendor.PINS, ("demo", "1.0.0"), pin)
    served = {"data": data, "urls": []}

    def urlopen(url, timeout):
        served["urls"].append(url)
        if served["data"] is None:
            raise urllib.error.URLError("Temporary failure in name resolution")
        return FakeResponse(served["data"])

    monkeypatch.setattr(vendor.urllib.request, "urlopen", urlopen)
    return served


def test_fetch_extracts_the_package_once(fake_registry, tmp_path):
    target = vendor.fetch("demo", "1.0.0", tmp_path)
    assert target == tmp_path / "demo-1.0.0"
    assert (target / "dist" / "demo.js").read_bytes() == b"demo()"
    assert fake_registry["urls"] == ["https://registry.npmjs.org/demo/-/demo-1.0.0.tgz"]
    fake_registry["data"] = None  # offline now: the cached copy is enough
    assert vendor.fetch("demo", "1.0.0", tmp_path) == target
    assert len(fake_registry["urls"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo-1.0.0"]  # no temp left


def test_fetch_refuses_a_tampered_download_and_writes_nothing(fake_registry, tmp_path):
    fake_registry["data"] = tarball({"dist/demo.js": b"evil()"})
    with pytest.raises(vendor.VendorError, match="has integrity sha512-.*expected the pinned"):
        vendor.fetch("demo", "1.0.0", tmp_path / "v")
    assert not (tmp_path / "v").exists()


def test_cli_offline_and_bad_input(fake_registry, tmp_path, capsys):
    fake_registry["data"] = None
    assert vendor.main(["--dest", str(tmp_path), "demo@1.0.0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot download demo@1.0.0" in err and "registry" in err
    assert vendor.main(["--dest", str(tmp_path), "demo@9"]) == 2
    assert "no pin for demo@9; pinned packages: reveal.js@4.0.2" in capsys.readouterr().err
    assert vendor.main(["reveal.js"]) == 2
    assert "is not name@version" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# check_pages.py, the parts without a browser

def test_link_problems_find_missing_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<h2 id="x">x</h2><a name="y"></a>', encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("", encoding="utf-8")
    page = tmp_path / "p.html"
    page.write_text('<p id="here"></p>', encoding="utf-8")
    url = (tmp_path / "a.html").as_uri()
    ok = [url, url + "#x", url + "#y", (tmp_path / "sub").as_uri(), page.as_uri() + "#here",
          page.as_uri() + "#/3/1"]  # the last: a reveal.js slide route
    assert check_pages.link_problems(ok, page, ["here"]) == []
    bad = [url + "#z", (tmp_path / "b.html").as_uri(), page.as_uri() + "#gone"]
    assert check_pages.link_problems(bad, page, ["here"]) == [
        "link to a.html#z: no such anchor", f"broken link to {tmp_path / 'b.html'}",
        "link to p.html#gone: no such anchor"]


def test_pages_under_skips_asset_folders(tmp_path):
    for name in ["index.html", "01.html", "_static/x.html", "_sources/y.html", "deep/z.html"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in check_pages.pages_under(tmp_path)] == \
        ["01.html", "deep/z.html", "index.html"]
