"""The pure parts of `make site`, `make slides` and `make site-check` (no browser here)."""

import base64
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402
import check_pages  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_slide_metadata_marks_headings_and_skips_hidden_solutions():
    cells = [new_code_cell("setup()"), new_markdown_cell("# 01 · Title"),
             new_markdown_cell("\n## §2 Section"), new_markdown_cell("### Sub"),
             new_markdown_cell("#### Deep"), new_markdown_cell("prose with # inside"),
             new_code_cell("# a comment, not a heading"),
             new_code_cell("answer()", metadata={"jupyter": {"source_hidden": True}})]
    nb = new_notebook(cells=cells)
    deck = build_slides.prepare_for_slides(nb)
    assert [c.metadata["slideshow"]["slide_type"] for c in deck.cells] == \
        ["-", "slide", "slide", "subslide", "-", "-", "-", "skip"]
    assert all("slideshow" not in c.metadata for c in nb.cells)  # the original is untouched


def test_long_stream_outputs_are_cut_to_fit_a_slide():
    long = "".join(f"line {i}\n" for i in range(40))
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text=long),
                    new_output("stream", name="stdout", text="short\n" * 25)]
    deck = build_slides.prepare_for_slides(new_notebook(cells=[cell]))
    cut, kept = deck.cells[0].outputs
    assert cut.text.splitlines() == [f"line {i}" for i in range(20)] + ["... (20 more lines)"]
    assert kept.text == "short\n" * 25
    assert cell.outputs[0].text == long
    with pytest.raises(ValueError):
        build_slides.truncate_text("x", max_lines=5, keep=6)


def test_build_slides_writes_sections(tmp_path):
    nb = new_notebook(cells=[new_markdown_cell("# Deck"), new_code_cell("1"),
                             new_markdown_cell("## Two"), new_markdown_cell("### Two b")])
    path = tmp_path / "09_deck.ipynb"
    nbformat.write(nb, path)
    [out] = build_slides.build_slides([path], tmp_path / "slides")
    assert out.name == "09_deck.slides.html"
    assert out.read_text(encoding="utf-8").count("<section") >= 3
    assert "slideshow" not in nbformat.read(path, as_version=4).cells[0].metadata


def png(blank=False, size=(3, 2)):
    fig = plt.figure(figsize=size, dpi=80)
    if not blank:
        plt.plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def test_image_problem_tells_real_figures_from_blank_or_tiny_ones():
    assert check_pages.image_problem(png()) is None
    assert "uniform" in check_pages.image_problem(png(blank=True))
    assert "too small" in check_pages.image_problem(png(size=(1, 1)))
    assert "decode" in check_pages.image_problem(b"not a png")


def dom(figures=(), errors=()):
    imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(f).decode()}">'
                   for f in figures)
    errs = "".join(f'<div class="jp-RenderedText" {check_pages.STDERR_OUT}><pre>'
                   f'<span>{e}</span>   Traceback (most recent call last)\n</pre></div>'
                   for e in errors)
    warn = f'<div {check_pages.STDERR_OUT}><pre>a warning, not an error</pre></div>'
    return f"<html><body><h1>My title</h1>{imgs}{errs}{warn}{' ' * 1000}</body></html>"


def test_page_problems_counts_figures_and_deliberate_errors():
    want = check_pages.Expected("My title", figures=1, errors=["RuntimeError"])
    assert check_pages.page_problems(dom([png()], ["RuntimeError"]), want) == (1, [])
    _, problems = check_pages.page_problems(dom([png(), png(blank=True)], []), want)
    assert any("blank" in p for p in problems)
    assert any("2 figures shown" in p for p in problems)
    assert any("0 tracebacks shown, expected 1" in p for p in problems)
    _, problems = check_pages.page_problems(dom([png()], ["ValueError"]), want)
    assert problems == ["traceback does not name the expected RuntimeError"]
    _, problems = check_pages.page_problems("", want)
    assert problems == ["page did not load (DOM empty)"]
    _, problems = check_pages.page_problems(
        dom([png()], ["RuntimeError"]).replace("My title", "Other"), want)
    assert problems == ["title 'My title' not on the page"]


def test_expected_from_notebook_flags_errors_outside_tagged_cells():
    ok = new_code_cell("raise", metadata={"tags": ["raises-exception"]})
    ok.outputs = [new_output("error", ename="RuntimeError", evalue="x", traceback=[])]
    bad = new_code_cell("1/0")
    bad.outputs = [new_output("error", ename="ZeroDivisionError", evalue="x", traceback=[])]
    fig = new_code_cell("plot()")
    fig.outputs = [new_output("display_data", data={"image/png": "AAAA", "text/plain": "f"})]
    want = check_pages.expected_from_notebook(
        new_notebook(cells=[new_markdown_cell("# T"), ok, bad, fig]))
    assert (want.title, want.figures, want.errors) == ("T", 1, ["RuntimeError"])
    assert len(want.problems) == 1 and "ZeroDivisionError" in want.problems[0]
