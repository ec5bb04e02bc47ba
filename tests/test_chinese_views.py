"""The Chinese edition as a reader meets it (issue 30): the site's Chinese pages (build/site/zh/)
and decks (build/slides/zh/), which `make site-check` builds from notebooks/zh/ beside the English
ones. Every page links to the same page in the other language and back; the Chinese search finds a
Chinese word; the Chinese pages and decks name a CJK font stack, and a CJK font is installed.

tests/test_built_pages.py checks every Chinese page and deck with the English ones' rules
(tests/pagecheck.py: nothing overflows or clips a slide, no character drawn as a box), and
tests/test_built_pages.py walks and prints the Chinese decks."""

import shutil
import subprocess
from pathlib import Path

import pagecheck
import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"
SLIDES = ROOT / "build" / "slides"
NOTEBOOKS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
# The site's pages in both editions: the index and one page a notebook.
PAGES = ["index.html", *(f"{name}.html" for name in NOTEBOOKS)]
CJK_FONT = "Noto Sans CJK SC"  # Debian's fonts-noto-cjk, first in the pages' CJK font stack
SWITCH = "a.lang-switch, .lang-switch > a"  # the site's (a button), the deck index's

pytestmark = [pytest.mark.site, *pagecheck.MARKS,
              pytest.mark.skipif(not (SITE / "zh" / "index.html").is_file(),
                                 reason="no build/site/zh: run `make site-check` (it builds it first)")]


def switch(page) -> None:
    """Follow the page's language switch, which must be on the first screen."""
    link = page.locator(SWITCH)
    assert link.count() == 1, f"{page.url}: {link.count()} language switches"
    box = link.bounding_box()
    assert box and box["y"] + box["height"] <= pagecheck.HEIGHT and box["x"] + box["width"] <= pagecheck.WIDTH, \
        f"{page.url}: the language switch is off the first screen ({box})"
    with page.expect_navigation():
        link.click()


@pytest.mark.parametrize("name", PAGES)
def test_each_page_switches_to_its_chinese_twin_and_back(page, name):
    english, chinese = SITE / name, SITE / "zh" / name
    page.goto(english.as_uri())
    assert page.locator(SWITCH).inner_text() == "中文"
    switch(page)
    assert page.url == chinese.as_uri()
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    assert page.locator(SWITCH).inner_text() == "English"
    switch(page)
    assert page.url == english.as_uri()
    assert page.evaluate("() => document.documentElement.lang") == "en"


def test_the_deck_indexes_link_each_other_and_the_chinese_one_lists_the_chinese_decks(page):
    page.goto((SLIDES / "index.html").as_uri())
    switch(page)
    assert page.url == (SLIDES / "zh" / "index.html").as_uri()
    decks = page.evaluate("() => [...document.querySelectorAll('ol.decks li > a:first-child')].map(a => a.href)")
    assert decks == [(SLIDES / "zh" / f"{name}.slides.html").as_uri() for name in NOTEBOOKS]
    switch(page)
    assert page.url == (SLIDES / "index.html").as_uri()


def search(page, site: Path, words: str) -> list[str]:
    """What Sphinx's search page of ``site`` finds for ``words``: the pages it links, in order."""
    page.goto((site / "search.html").as_uri() + f"?q={words}")
    page.wait_for_function("() => document.querySelector('#search-results .search-summary')?.innerText")
    return page.evaluate("() => [...document.querySelectorAll('#search-results ul.search li a')]"
                         ".map(a => a.getAttribute('href').split('?')[0].split('#')[0])")


def test_the_chinese_search_finds_a_chinese_term(page):
    """步幅 (stride, as the notes gloss it in §2.2) is in the title of the Chinese notebook 01:
    Sphinx's Chinese index holds Chinese words only when jieba splits them (a dev pin), and its
    page runs only with the stemmer conf.py names (Sphinx 9.0.4 names a missing one)."""
    found = search(page, SITE / "zh", "步幅")
    assert found and found[0] == "01_tensors_and_strides.html", found
    assert search(page, SITE, "步幅") == []  # the English pages do not have it: the check can fail


@pytest.mark.parametrize("path", [SITE / "zh" / "index.html", SITE / "zh" / "03_flops_and_mfu.html",
                                  SLIDES / "zh" / "03_flops_and_mfu.slides.html"],
                         ids=lambda p: p.relative_to(ROOT / "build").as_posix())
def test_chinese_pages_and_decks_name_a_cjk_font_stack(page, path):
    page.goto(path.as_uri())
    # a deck's text is in .reveal (its <body> holds none), a page's in <body>
    fonts = page.evaluate("""() => [document.querySelector('.reveal') || document.body,
                                    ...document.querySelectorAll('.reveal p, .bd-article p')]
                                   .slice(0, 5).map(e => getComputedStyle(e).fontFamily)""")
    assert all(f.startswith(f'"{CJK_FONT}"') for f in fonts), fonts


def test_a_cjk_font_is_installed():
    """Without one Chromium draws each Chinese character as a box (the pages' tofu rule fails).
    make site-check's CI (.ci/run, .github/workflows/ci.yml) installs Debian's fonts-noto-cjk."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        pytest.skip("no fc-list (fontconfig) to ask")
    families = subprocess.run([fc_list, ":lang=zh-cn", "family"], capture_output=True, text=True).stdout
    assert CJK_FONT in families, "no Chinese font: apt-get install -y fonts-noto-cjk (Debian/Ubuntu)"
