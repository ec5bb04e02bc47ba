"""scripts/check_pages.py in a real (headless, offline) Chromium: each failure it exists to
catch is fed to it on purpose, in a small page or deck written here, and it must report
exactly that; a small correct deck built by scripts/build_slides.py must pass."""

import base64
import io
import re
import subprocess
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
import vendor  # noqa: E402

pytestmark = [pytest.mark.site, pytest.mark.skipif(not Path(check_pages.CHROMIUM).is_file(),
                                reason=f"needs Chromium at {check_pages.CHROMIUM} "
                                       "(apt-get install chromium)")]


def png_b64() -> str:
    fig = plt.figure(figsize=(3, 2), dpi=80)
    plt.plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


PNG = png_b64()


@pytest.fixture(scope="module")
def checker():
    with check_pages.Checker(timeout_s=3) as c:  # one browser for the module
        yield c


def small_notebook(extra_cells=()) -> nbformat.NotebookNode:
    """A title slide, a section with inline and display math, a figure, a deliberate
    subslide, and a solution whose output must not reach the deck."""
    fig = new_code_cell("plt.plot(x); plt.show()", metadata={"mystnb": {"image": {"alt": "A line"}}})
    fig.outputs = [new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]
    solution = new_code_cell("answer = 42", metadata={"jupyter": {"source_hidden": True},
                                                      "tags": ["solution"]})
    solution.outputs = [new_output("stream", name="stdout", text="SPOILER 42\n")]
    return new_notebook(cells=[
        new_markdown_cell("# 09 · A small deck"),
        new_markdown_cell("## §1 Math\n\nEnergy is $E = mc^2$ and\n\n$$\\sum_i x_i^2$$"),
        fig,
        new_markdown_cell("More on it", metadata={"slideshow": {"slide_type": "subslide"}}),
        new_markdown_cell("Say this aloud", metadata={"slideshow": {"slide_type": "notes"}}),
        *extra_cells,
        solution,
    ])


def build_deck(folder: Path, nb: nbformat.NotebookNode) -> Path:
    try:
        for package in (build_slides.REVEAL, build_slides.MATHJAX, build_slides.REQUIREJS,
                        build_slides.JQUERY):
            vendor.fetch(*package)
    except vendor.VendorError as e:
        pytest.skip(f"reveal.js/MathJax not in build/vendor and not downloadable: {e}")
    path = folder / "09_small.ipynb"
    nbformat.write(nb, path)
    [deck] = build_slides.build_slides([path], folder / "slides")
    return deck


@pytest.fixture(scope="module")
def good_deck(tmp_path_factory):
    return build_deck(tmp_path_factory.mktemp("good"), small_notebook())


def page(tmp_path: Path, body: str, name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head>"
                    f"<body><h1>A page</h1>{body}</body></html>", encoding="utf-8")
    return path


def test_a_small_correct_deck_passes(checker, good_deck, tmp_path):
    shot = tmp_path / "deck.png"
    report = checker.check(good_deck, screenshot=shot)
    assert report.problems == []
    assert "3 slides" in report.detail  # title, §1, the subslide; the solution is skipped
    assert check_pages.screen_problem(shot) is None
    html = good_deck.read_text(encoding="utf-8")
    assert "SPOILER" not in html and 'alt="A line"' in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)  # nothing from a CDN


def test_the_deck_index_links_every_deck(checker, good_deck):
    index = good_deck.parent / "index.html"
    assert '<a href="09_small.slides.html">09 · A small deck</a>' in index.read_text(encoding="utf-8")
    assert checker.check(index).problems == []


def test_reveal_not_initialised_fails(checker, good_deck, tmp_path):
    html = good_deck.read_text(encoding="utf-8")
    assert html.count("Reveal.initialize(") == 1
    broken = good_deck.parent / "no-init.slides.html"  # same folder: the vendor paths hold
    broken.write_text(html.replace("Reveal.initialize(", "void ("), encoding="utf-8")
    assert checker.check(broken).problems == [
        "Reveal not initialised (reveal.js missing or failed)"]


def test_raw_math_fails(checker, tmp_path):
    report = checker.check(page(tmp_path, "<p>The cost is $x^2$ bytes.</p><pre>echo $HOME$</pre>"))
    assert report.problems == ["unrendered math: 'The cost is $x^2$ bytes.'"]
    # MyST-NB marks the whole page tex2jax_ignore and its math spans for processing:
    # what a reader sees counts, not what MathJax was told to skip.
    body = (r'<div class="tex2jax_ignore"><p>Display: $$a$$</p>'
            r'<p>inline <span class="math notranslate nohighlight">\(b\)</span></p></div>')
    report = checker.check(page(tmp_path, body))
    assert report.problems == ["unrendered math: 'Display: $$a$$'", r"unrendered math: 'inline \(b\)'"]


def test_raw_math_in_a_deck_without_mathjax_fails(checker, good_deck):
    html = good_deck.read_text(encoding="utf-8")
    broken = good_deck.parent / "no-mathjax.slides.html"
    broken.write_text(html.replace("MathJax.js?config", "MathJax-gone.js?config"), encoding="utf-8")
    assert checker.check(broken).problems == [  # found on its slide: hidden on the first
        f"missing file {vendor.VENDOR / 'mathjax-2.7.7' / 'MathJax-gone.js'}",
        "slide 2.1 '§1 Math': unrendered math: 'Energy is $E = mc^2$ and'",
        r"slide 2.1 '§1 Math': unrendered math: '$$\sum_i x_i^2$$'"]


def test_overflowing_slide_fails(checker, tmp_path):
    long = new_markdown_cell("## Too much\n\n" + "\n\n".join(f"Point {i}." for i in range(40)))
    deck = build_deck(tmp_path, small_notebook([long]))
    [problem] = checker.check(deck).problems
    assert problem.startswith("slide 3.1 'Too much' overflows: 1280x")
    height = int(problem.split("x")[1].split()[0])
    assert height > 1500  # 40 paragraphs: far past 720


def test_a_long_output_is_shown_whole_and_a_slide_it_overflows_fails(checker, tmp_path):
    """Nothing scrolls: 200 output lines are all on the slide, so the slide is far too tall."""
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text="".join(f"{i}\n" for i in range(200)))]
    deck = build_deck(tmp_path, small_notebook([new_markdown_cell("## Long output"), cell]))
    [problem] = checker.check(deck).problems
    assert problem.startswith("slide 3.1 'Long output' overflows: 1280x")
    assert "199\n" in deck.read_text(encoding="utf-8")  # shown whole, not cut


def test_a_box_that_scrolls_or_clips_fails(checker, tmp_path):
    """A slide whose content fits, but in a box that scrolls: what the audience cannot see."""
    box = new_markdown_cell('## A scroll box\n\n<div style="height: 80px; overflow: auto">'
                            + "<br>".join(f"line {i}" for i in range(30)) + "</div>")
    deck = build_deck(tmp_path, small_notebook([box]))
    [problem] = checker.check(deck).problems
    assert problem.startswith("slide 3.1 'A scroll box': 1 box(es) scroll or clip their content (div.")


def test_a_long_code_line_wraps_instead_of_running_off_the_slide(checker, tmp_path):
    wide = new_code_cell("x = " + " + ".join(f"value_{i}" for i in range(60)))
    deck = build_deck(tmp_path, small_notebook([new_markdown_cell("## Wide code"), wide]))
    assert checker.check(deck).problems == []


def test_visible_solution_output_fails(checker, tmp_path):
    cell = ('<div class="jp-Cell celltag_solution"><div class="jp-OutputArea-output">'
            '<pre>answer: 42</pre></div></div>')
    assert checker.check(page(tmp_path, cell)).problems == [
        "solution output visible without a click: 'answer: 42'"]
    hidden = f"<details><summary>Show solution</summary>{cell}</details>"
    assert checker.check(page(tmp_path, hidden)).problems == []


def test_network_request_fails(checker, tmp_path):
    body = '<p>ok</p><script src="https://cdn.example.org/lib.js"></script>'
    assert checker.check(page(tmp_path, body)).problems == [
        "network request to https://cdn.example.org/lib.js"]


def test_image_without_alt_or_data_fails(checker, tmp_path):
    src = f"data:image/png;base64,{PNG}"
    assert checker.check(page(tmp_path, f'<img src="{src}" alt="A line">')).problems == []
    assert checker.check(page(tmp_path, f'<img src="{src}">')).problems == [
        "image 1 (data:image/png;base64,iVBORw0K...) has no alt text"]
    placeholder = f'<img src="{src}" alt="{check_pages.PLACEHOLDER_ALT}">'
    assert checker.check(page(tmp_path, placeholder)).problems == [
        "image 1 (data:image/png;base64,iVBORw0K...) has no alt text"]
    problems = checker.check(page(tmp_path, '<img src="gone.png" alt="x">')).problems
    assert problems == [f"missing file {tmp_path / 'gone.png'}",
                        "image 1 (gone.png) does not load or decode"]


def test_broken_links_fail(checker, tmp_path):
    page(tmp_path, '<h2 id="there">There</h2>', "other.html")
    ok = '<a href="other.html#there">a</a> <a href="#here">b</a><p id="here"></p>'
    assert checker.check(page(tmp_path, ok)).problems == []
    bad = '<a href="nowhere.html">a</a> <a href="other.html#elsewhere">b</a>'
    assert checker.check(page(tmp_path, bad)).problems == [
        f"broken link to {tmp_path / 'nowhere.html'}", "link to other.html#elsewhere: no such anchor"]


def check_pages_cli(*args: str) -> subprocess.CompletedProcess:
    # Its own process: Playwright's sync API runs one instance per thread, and the
    # module's browser is still open.
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "check_pages.py"), *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_cli_exit_codes(tmp_path):
    deck = build_deck(tmp_path, small_notebook())
    site = tmp_path / "site"
    site.mkdir()
    page(site, f'<p>fine</p><a href="index.html">self</a><img src="data:image/png;base64,{PNG}" '
         'alt="A line">', "index.html")
    (site / "_static").mkdir()
    page(site / "_static", "<p>$not a page$</p>")  # assets are not pages
    shots = tmp_path / "shots"
    args = ["--site", str(site), "--slides", str(deck.parent), "--shots", str(shots),
            "--timeout", "3"]
    done = check_pages_cli(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   site/index.html" in done.stdout and "ok   slides/09_small.slides.html" in done.stdout
    assert "3/3 pages passed" in done.stdout  # index.html, the deck and the deck index
    assert sorted(p.name for p in shots.iterdir()) == ["deck-slide.png", "page.png"]

    page(site, "<p>$x$</p><img src='gone.png'>", "bad.html")
    plain = tmp_path / "plain"  # no deck this time: one walk through it was enough
    plain.mkdir()
    page(plain, "<p>no deck</p>", "index.html")
    done = check_pages_cli(*args[:2], "--slides", str(plain), *args[4:])
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        f"FAIL site/bad.html: missing file {site / 'gone.png'}",
        "FAIL site/bad.html: unrendered math: '$x$'",
        "FAIL site/bad.html: image 1 (gone.png) does not load or decode",
        "FAIL site/bad.html: image 1 (gone.png) has no alt text"]


def test_missing_chromium_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(check_pages.shutil, "which", lambda name: None)
    assert check_pages.main(["--chromium", str(tmp_path / "no-chromium"), "--site", str(tmp_path)]) == 2
    assert capsys.readouterr().out == check_pages.INSTALL_HINT + "\n"


def test_deck_headings_keep_their_case(checker, good_deck):
    """The white theme upper-cases headings, and `view` is not VIEW: our CSS must win."""
    page = checker.browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(good_deck.resolve().as_uri())
        page.wait_for_function(check_pages.REVEAL_READY)
        page.evaluate("() => Reveal.slide(1, 0)")
        transform = page.evaluate("() => getComputedStyle(document.querySelector("
                                  "'.reveal .slides section.present h2')).textTransform")
    finally:
        page.close()
    assert transform == "none"
