"""The page checks of tests/pagecheck.py in a real (headless, offline) Chromium: each failure
they exist to catch is fed to them on purpose, in a small page or deck written here, and they
must report exactly that; a small correct deck built by scripts/build_slides.py must pass. Its pure
helpers (links, the pages under a folder) need no browser, but only `make site-check` uses them: here."""

import base64
import functools
import http.server
import io
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pagecheck  # noqa: E402
import pytest  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_slides  # noqa: E402
import vendor  # noqa: E402

pytestmark = [pytest.mark.site, *pagecheck.MARKS]


def problems(context, path: Path, screenshot: Path | None = None) -> list[str]:
    return pagecheck.problems(context, path, screenshot, timeout_ms=3000)  # small pages: quick


def png_b64() -> str:
    fig = plt.figure(figsize=(3, 2), dpi=80)
    plt.plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


PNG = png_b64()


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
    path = folder / "09_small.ipynb"
    nbformat.write(nb, path)
    try:
        [deck] = build_slides.build_slides([path], folder / "slides")
    except vendor.VendorError as e:
        pytest.skip(f"reveal.js/MathJax not in build/vendor and not downloadable: {e}")
    return deck


@pytest.fixture(scope="module")
def good_deck(tmp_path_factory):
    return build_deck(tmp_path_factory.mktemp("good"), small_notebook())


def write_page(folder: Path, body: str, name: str = "page.html") -> Path:
    path = folder / name
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head>"
                    f"<body><h1>A page</h1>{body}</body></html>", encoding="utf-8")
    return path


def test_a_small_correct_deck_passes(context, good_deck, tmp_path):
    shot = tmp_path / "deck.png"
    assert problems(context, good_deck, shot) == []
    assert pagecheck.screen_problem(shot) is None
    html = good_deck.read_text(encoding="utf-8")
    assert "SPOILER" not in html and 'alt="A line"' in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)  # nothing from a CDN


def test_a_blank_screenshot_fails(context, tmp_path):
    blank, shot = tmp_path / "blank.html", tmp_path / "blank.png"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    assert problems(context, blank, shot) == [f"screenshot {shot} is blank (one colour)"]


def test_the_deck_index_links_every_deck(context, good_deck):
    index = good_deck.parent / "index.html"
    assert '<a href="09_small.slides.html">09 · A small deck</a>' in index.read_text(encoding="utf-8")
    assert problems(context, index) == []


def test_reveal_not_initialised_fails(context, good_deck):
    html = good_deck.read_text(encoding="utf-8")
    assert html.count("Reveal.initialize(") == 1
    broken = good_deck.parent / "no-init.slides.html"  # same folder: the vendor paths hold
    broken.write_text(html.replace("Reveal.initialize(", "void ("), encoding="utf-8")
    assert problems(context, broken) == ["Reveal not initialised (reveal.js missing or failed)"]


def test_raw_math_fails(context, tmp_path):
    body = "<p>The cost is $x^2$ bytes.</p><pre>echo $HOME$</pre>"
    assert problems(context, write_page(tmp_path, body)) == ["unrendered math: 'The cost is $x^2$ bytes.'"]
    # MyST-NB marks the whole page tex2jax_ignore and its math spans for processing:
    # what a reader sees counts, not what MathJax was told to skip.
    body = (r'<div class="tex2jax_ignore"><p>Display: $$a$$</p>'
            r'<p>inline <span class="math notranslate nohighlight">\(b\)</span></p></div>')
    assert problems(context, write_page(tmp_path, body)) == [
        "unrendered math: 'Display: $$a$$'", r"unrendered math: 'inline \(b\)'"]


def test_raw_math_in_a_deck_without_mathjax_fails(context, good_deck):
    html = good_deck.read_text(encoding="utf-8")
    mathjax = re.search(r'src="([^"]*)/MathJax\.js\?config', html).group(1)
    broken = good_deck.parent / "no-mathjax.slides.html"
    broken.write_text(html.replace("MathJax.js?config", "MathJax-gone.js?config"), encoding="utf-8")
    assert problems(context, broken) == [  # found on its slide: hidden on the first
        f"missing file {os.path.normpath(good_deck.parent / mathjax / 'MathJax-gone.js')}",
        "slide 2.1 '§1 Math': unrendered math: 'Energy is $E = mc^2$ and'",
        r"slide 2.1 '§1 Math': unrendered math: '$$\sum_i x_i^2$$'"]


def test_overflowing_slide_fails(context, tmp_path):
    long = new_markdown_cell("## Too much\n\n" + "\n\n".join(f"Point {i}." for i in range(40)))
    deck = build_deck(tmp_path, small_notebook([long]))
    [problem] = problems(context, deck)
    assert problem.startswith("slide 3.1 'Too much' overflows: 1280x")
    height = int(problem.split("x")[1].split()[0])
    assert height > 1500  # 40 paragraphs: far past 720


def test_a_long_output_is_shown_whole_and_a_slide_it_overflows_fails(context, tmp_path):
    """Nothing scrolls: 200 output lines are all on the slide, so the slide is far too tall."""
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text="".join(f"{i}\n" for i in range(200)))]
    deck = build_deck(tmp_path, small_notebook([new_markdown_cell("## Long output"), cell]))
    [problem] = problems(context, deck)
    assert problem.startswith("slide 3.1 'Long output' overflows: 1280x")
    assert "199\n" in deck.read_text(encoding="utf-8")  # shown whole, not cut


def test_a_box_that_scrolls_or_clips_fails(context, tmp_path):
    """A slide whose content fits, but in a box that scrolls: what the audience cannot see."""
    box = new_markdown_cell('## A scroll box\n\n<div style="height: 80px; overflow: auto">'
                            + "<br>".join(f"line {i}" for i in range(30)) + "</div>")
    deck = build_deck(tmp_path, small_notebook([box]))
    [problem] = problems(context, deck)
    assert problem.startswith("slide 3.1 'A scroll box': 1 box(es) scroll or clip their content (div.")


def test_a_long_code_line_wraps_instead_of_running_off_the_slide(context, tmp_path):
    wide = new_code_cell("x = " + " + ".join(f"value_{i}" for i in range(60)))
    deck = build_deck(tmp_path, small_notebook([new_markdown_cell("## Wide code"), wide]))
    assert problems(context, deck) == []


def test_an_output_line_wraps_between_words_and_a_word_cut_in_two_fails(context, tmp_path):
    """JupyterLab's output style (word-break: break-all) with overflow-wrap: anywhere broke lines
    inside words ('bf1' / '6', 'm' / 'atches'); the decks break them at spaces."""
    line = "✓ Momentum takes torch.optim.SGD's 100 steps (momentum 0.9): Tensor (101, 16) torch.float64 matches (rel=1e-09, abs=0)\n"
    cell = new_code_cell("print(...)")
    cell.outputs = [new_output("stream", name="stdout", text=line * 3)]
    deck = build_deck(tmp_path, small_notebook([new_markdown_cell("## Checks"), cell]))
    assert problems(context, deck) == []
    html = deck.read_text(encoding="utf-8")
    cut = deck.with_name("cut.slides.html")  # the decks' CSS before issue 28
    cut.write_text(html.replace("</head>", "<style>.reveal pre { overflow-wrap: anywhere !important; "
                                           "word-break: break-all !important; }</style></head>"), encoding="utf-8")
    problem = problems(context, cut)
    assert problem and all(p.startswith("slide 3.1 'Checks': a line breaks inside a word: '") for p in problem), problem


def test_arrow_keys_walk_every_slide_in_order(page, good_deck):
    """→ from the title visits the subslide too (reveal.js's linear navigation), ← walks back."""
    page.goto(good_deck.resolve().as_uri())
    page.wait_for_function(pagecheck.REVEAL_READY)
    where = "() => [Reveal.getIndices().h, Reveal.getIndices().v]"
    seen = [page.evaluate(where)]
    for key in ["ArrowRight"] * 3 + ["ArrowLeft"] * 3:
        page.keyboard.press(key)
        seen.append(page.evaluate(where))
    assert seen == [[0, 0], [1, 0], [1, 1], [1, 1], [1, 0], [0, 0], [0, 0]]


def test_a_deck_prints_to_a_pdf_one_page_a_slide(page, good_deck, tmp_path):
    """README, Presenting: a deck opened with ?print-pdf prints one page per slide."""
    page.goto(good_deck.resolve().as_uri() + "?print-pdf")
    page.wait_for_function(pagecheck.REVEAL_READY)
    page.evaluate("() => document.fonts.ready")
    pdf = page.pdf(prefer_css_page_size=True, print_background=True)
    assert pdf.startswith(b"%PDF") and pagecheck.pdf_pages(pdf) == 3  # title, §1, the subslide


def test_visible_solution_output_fails(context, tmp_path):
    cell = ('<div class="jp-Cell celltag_solution"><div class="jp-OutputArea-output">'
            '<pre>answer: 42</pre></div></div>')
    assert problems(context, write_page(tmp_path, cell)) == [
        "solution output visible without a click: 'answer: 42'"]
    hidden = f"<details><summary>Show solution</summary>{cell}</details>"
    assert problems(context, write_page(tmp_path, hidden)) == []


def test_network_request_fails_and_the_page_is_seen_offline(context, tmp_path):
    body = '<p>ok</p><script src="https://cdn.example.org/lib.js"></script>'
    assert problems(context, write_page(tmp_path, body)) == [
        "network request to https://cdn.example.org/lib.js"]
    # A server that answers (here, on this machine): its script would hide the raw math.
    (tmp_path / "render.js").write_text("document.getElementById('m').remove()", encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/render.js"
        body = f'<p id="m">$x$</p><script src="{url}"></script>'
        assert problems(context, write_page(tmp_path, body)) == [
            f"network request to {url}", "unrendered math: '$x$'"]
        server.shutdown()


def test_image_without_alt_or_data_fails(context, tmp_path):
    src = f"data:image/png;base64,{PNG}"
    assert problems(context, write_page(tmp_path, f'<img src="{src}" alt="A line">')) == []
    assert problems(context, write_page(tmp_path, f'<img src="{src}">')) == [
        "image 1 (data:image/png;base64,iVBORw0K...) has no alt text"]
    placeholder = f'<img src="{src}" alt="{pagecheck.PLACEHOLDER_ALT}">'
    assert problems(context, write_page(tmp_path, placeholder)) == [
        "image 1 (data:image/png;base64,iVBORw0K...) has no alt text"]
    assert problems(context, write_page(tmp_path, '<img src="gone.png" alt="x">')) == [
        f"missing file {tmp_path / 'gone.png'}", "image 1 (gone.png) does not load or decode"]


def test_broken_links_fail(context, tmp_path):
    write_page(tmp_path, '<h2 id="there">There</h2>', "other.html")
    ok = '<a href="other.html#there">a</a> <a href="#here">b</a><p id="here"></p>'
    assert problems(context, write_page(tmp_path, ok)) == []
    bad = '<a href="nowhere.html">a</a> <a href="other.html#elsewhere">b</a>'
    assert problems(context, write_page(tmp_path, bad)) == [
        f"broken link to {tmp_path / 'nowhere.html'}", "link to other.html#elsewhere: no such anchor"]


def test_a_javascript_error_fails(context, tmp_path):
    body = "<script>document.title = 'ok'; undefinedFunction()</script>"
    assert problems(context, write_page(tmp_path, body)) == [
        "JavaScript error: undefinedFunction is not defined"]


def test_an_error_logged_to_the_console_fails(context, tmp_path):
    """What a theme logs on every page ("Got invalid theme mode: ."), not an exception."""
    body = "<script>console.error('Got invalid theme mode: . Resetting to auto.'); console.log('fine')</script>"
    assert problems(context, write_page(tmp_path, body)) == [
        "console error: Got invalid theme mode: . Resetting to auto."]


def test_chinese_text_in_an_installed_cjk_font_passes_and_a_glyph_no_font_has_fails(context, tmp_path):
    """Tofu: a character no installed font has is drawn as a box. U+30000 (CJK Extension G) is in
    no font Debian ships (Noto Sans CJK stops short of it); 步幅 and the page's symbols need
    fonts-noto-cjk and DejaVu, which make site-check's CI installs."""
    good = '<p lang="zh-CN">步幅（stride）✓ → ≈ ×</p><pre>形状 (2, 3)</pre>'
    assert problems(context, write_page(tmp_path, good)) == []
    bad = '<p lang="zh-CN">步幅 \U00030000</p>'
    assert problems(context, write_page(tmp_path, bad)) == [
        "1 character(s) drawn as a box (tofu: no installed font has them): '\U00030000'"]


def test_every_problem_on_a_page_is_listed(context, tmp_path):
    assert problems(context, write_page(tmp_path, "<p>$x$</p><img src='gone.png'>")) == [
        f"missing file {tmp_path / 'gone.png'}", "unrendered math: '$x$'",
        "image 1 (gone.png) does not load or decode", "image 1 (gone.png) has no alt text"]


def test_deck_headings_keep_their_case_and_solutions_are_no_slides(page, good_deck):
    """The white theme upper-cases headings, and `view` is not VIEW: our CSS must win."""
    page.goto(good_deck.resolve().as_uri())
    page.wait_for_function(pagecheck.REVEAL_READY)
    assert page.evaluate("() => Reveal.getTotalSlides()") == 3  # title, §1, the subslide
    page.evaluate("() => Reveal.slide(1, 0)")
    assert page.evaluate("() => getComputedStyle(document.querySelector("
                         "'.reveal .slides section.present h2')).textTransform") == "none"


def test_without_chromium_site_check_stops_with_one_line_and_the_tests_skip(tmp_path):
    # No chromium on this PATH; and not the make (if any) that runs these tests.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env["PATH"] = str(tmp_path)
    done = subprocess.run([shutil.which("make"), "-s", "-o", "site", "-o", "slides", "site-check"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "chromium not found: apt-get update && apt-get "
                                                 "install -y chromium (Debian/Ubuntu), then rerun\n")
    test = f"tests/{Path(__file__).name}::test_raw_math_fails"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-rs", test], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "needs Chromium: apt-get" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


# --- the parts without a browser

def test_link_problems_find_missing_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<h2 id="x">x</h2><a name="y"></a>', encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("", encoding="utf-8")
    page = tmp_path / "p.html"
    page.write_text('<p id="here"></p>', encoding="utf-8")
    url = (tmp_path / "a.html").as_uri()
    ok = [url, url + "#x", url + "#y", (tmp_path / "sub").as_uri(), page.as_uri() + "#here",
          page.as_uri() + "#/3/1"]  # the last: a reveal.js slide route
    assert pagecheck.link_problems(ok, page, ["here"]) == []
    bad = [url + "#z", (tmp_path / "b.html").as_uri(), page.as_uri() + "#gone"]
    assert pagecheck.link_problems(bad, page, ["here"]) == [
        "link to a.html#z: no such anchor", f"broken link to {tmp_path / 'b.html'}",
        "link to p.html#gone: no such anchor"]


def test_pages_under_skips_asset_folders(tmp_path):
    for name in ["index.html", "01.html", "_static/x.html", "_sources/y.html", "deep/z.html"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in pagecheck.pages_under(tmp_path)] == \
        ["01.html", "deep/z.html", "index.html"]
