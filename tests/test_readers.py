"""What a reader of the built site expects (issue 28, §5), in headless Chromium and offline:
Going-deeper text readable in light and in dark mode, a copy button that copies a cell's code,
← and → between pages, no stray setup output at the top of a page, and no text that calls
something collapsed which the site shows open. `make site-check` builds the site first; the
checks every page gets (no console error, such as the theme's "Got invalid theme mode") are
tests/pagecheck.py's, run by tests/test_built_pages.py."""

import re
from pathlib import Path

import pagecheck
import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"
LECTURES = sorted(SITE.glob("[0-9][0-9]_*.html"))
NEEDS_SITE = pytest.mark.skipif(not LECTURES, reason="no build/site: run `make site-check` (it builds it first)")
# WCAG 2's level AA for body text.
MIN_CONTRAST = 4.5

pytestmark = [pytest.mark.site, NEEDS_SITE, *pagecheck.MARKS]

# The contrast of every piece of text in a Going-deeper box against what is behind it: the
# first ancestor with a background, composited over white or the page's own background.
JS_CONTRAST = r"""
() => {
  const rgba = s => { const m = s.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3])).concat([1]);
  const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]);
  }
  const found = [];
  for (const box of document.querySelectorAll('article div.deeper')) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.data.trim() || !el.getClientRects().length || el.closest('mjx-assistive-mml')) continue;
      const fg = rgba(getComputedStyle(el).color), bg = background(el);
      const [a, b] = [lum(over(fg, bg)), lum(bg)].sort((x, y) => y - x);
      found.push({text: n.data.trim().slice(0, 40), ratio: (a + 0.05) / (b + 0.05)});
    }
  }
  return {mode: document.documentElement.dataset.theme, texts: found};
}
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_going_deeper_text_is_readable_in_light_and_dark_mode(browser, path, scheme):
    """The theme follows the reader's setting; the Going-deeper box takes the theme's colours
    (a fixed #f5f7f9 under the dark theme's light text left 1.3:1)."""
    context = browser.new_context(offline=True, color_scheme=scheme, viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        found = page.evaluate(JS_CONTRAST)
    finally:
        context.close()
    assert found["mode"] == scheme, "the page does not follow the reader's light/dark setting"
    assert found["texts"], f"{path.name}: no Going-deeper text found"
    low = [f"{t['ratio']:.2f}:1 '{t['text']}'" for t in found["texts"] if t["ratio"] < MIN_CONTRAST]
    assert not low, f"{path.name}, {scheme}: {len(low)} texts under {MIN_CONTRAST}:1, e.g. {low[:3]}"


def test_a_code_cell_has_a_copy_button_that_copies_its_code(context):
    page = context.new_page()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(LECTURES[0].as_uri())
    cell = page.locator("div.cell_input").first
    button = cell.locator("button.copybtn")
    button.wait_for(state="attached")
    code = cell.locator("pre").inner_text()
    cell.hover()
    button.click()
    assert page.evaluate("() => navigator.clipboard.readText()") == code.rstrip("\n")
    assert button.get_attribute("data-tooltip") == "Copied!"
    # on every cell's code, on no output
    assert page.locator("div.cell_input button.copybtn").count() == page.locator("div.cell_input pre").count()
    assert page.locator("div.cell_output button.copybtn").count() == 0


def test_left_and_right_arrow_keys_go_to_the_previous_and_the_next_page(page):
    middle = LECTURES[len(LECTURES) // 2]
    after = LECTURES[len(LECTURES) // 2 + 1]
    page.goto(middle.as_uri())
    page.keyboard.press("ArrowRight")
    page.wait_for_url(after.as_uri(), timeout=5000)
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(middle.as_uri(), timeout=5000)


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_a_page_starts_with_its_title_not_the_setup_cells_output(path):
    """The setup cell's one line (device: cpu (2 threads)) stood alone in a box above the text."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    outputs = [div.get_text(" ", strip=True) for div in soup.select("article div.cell_output")]
    assert not [text for text in outputs if re.match(r"device: ", text)], path.name


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_text_calls_the_going_deeper_sections_collapsed(path):
    """On the site they are open, set apart in a box (collapsed is what JupyterLab does)."""
    text = " ".join(BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").select_one("article").get_text(" ").split())
    said = re.findall(r"[^.]*\bcollapsed\s+[\"“]?Going deeper[^.]*", text)
    assert not said, f"{path.name}: {said[0].strip()[:120]!r}"
