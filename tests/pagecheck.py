"""What a reader must see on a built page or deck, checked in Chromium through pytest-playwright.

``problems(context, path)`` opens ``path`` from a file:// URL in a context made with
``MARKS`` (network off: only local files load; 1280x720) and lists what is wrong, one
string per problem, in this order: a network request or a missing local file; a JavaScript
error; an error logged to the console (other than a file that failed to load, reported
above); math left unrendered in the visible text (`$...$`, `$$`, `\\(`, `\\[`) outside
code, after MathJax has finished; an exercise solution's output (a cell tagged `solution`)
visible before a click; an image that does not decode or has no alt text; a local link or
#anchor that does not resolve; a character drawn as a box (tofu: no installed font has its glyph,
as Chinese text is without a CJK font such as Debian's fonts-noto-cjk). A deck (`*.slides.html`) must also start reveal.js, and every
slide, visited with `Reveal.slide(h, v)`, must fit 1280x720 with its math rendered and no
box on it that scrolls or clips its content (the decks wrap long lines instead), and no line
of code or output broken inside a word that would fit on a line ('bf1' / '6').
Used by tests/test_built_pages.py (the real site and decks) and tests/test_pages.py (pages
broken on purpose, each of which must fail its rule).
"""

from __future__ import annotations

import contextlib
import html
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import matplotlib.image
import numpy as np
import pytest
from playwright.sync_api import BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

WIDTH, HEIGHT = 1280, 720
# The marks for a module of page checks: pytest-playwright's `context` with the network off
# (the pages must work without it: they are judged as seen offline) and a 1280x720 screen.
# pytest-playwright 0.10's stand-in `base_url` fixture is a method, which pytest 9.2 warns of.
MARKS = [pytest.mark.browser_context_args(offline=True, viewport={"width": WIDTH, "height": HEIGHT}),
         pytest.mark.filterwarnings("ignore:Session-scoped fixtures defined as instance methods")]
REVEAL_READY = "() => window.Reveal && Reveal.isReady && Reveal.isReady()"
# nbconvert's stand-in when a figure has no description: not alt text.
PLACEHOLDER_ALT = "No description has been provided for this image"
ID = re.compile(r"""\b(?:id|name)=["']([^"']*)["']""")

# In-page helpers shared by the checks below (plain DOM, no page library assumed).
JS_HELPERS = r"""
const SKIP = 'pre, code, script, style, textarea, kbd, samp, aside.notes, '
           + '.MathJax, .MathJax_Display, .MathJax_Preview, .MathJax_CHTML, mjx-container, '
           + '.highlight';
const RAW_MATH = /\$\$|\\\(|\\\[|\$[^$\s][^$]*\$/;
// Rendered for the reader: not display:none, not visibility:hidden, not in a closed <details>.
function shown(el) {
  // In a deck only the present slide is on screen; reveal.js keeps its neighbours laid out.
  const slide = el.closest('.reveal .slides section');
  if (slide && !slide.classList.contains('present')) return false;
  return el.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true})
    && el.getClientRects().length > 0;
}
// Text blocks under root that still show TeX delimiters.
function rawMath(root) {
  const byBlock = new Map();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(SKIP) || !shown(p)) continue;
    const block = p.closest('p, li, td, th, h1, h2, h3, h4, h5, h6, dd, dt, figcaption, blockquote') || p;
    byBlock.set(block, (byBlock.get(block) || '') + n.data);
  }
  const found = [];
  for (const text of byBlock.values()) {
    const m = text.match(RAW_MATH);
    if (m) {
      const at = Math.max(0, m.index - 20);
      found.push(text.slice(at, m.index + m[0].length + 20).replace(/\s+/g, ' ').trim());
    }
  }
  return found;
}
async function mathDone() {
  const mj = window.MathJax;
  if (!mj) return;
  if (mj.Hub && mj.Hub.Queue) {                       // MathJax 2
    await new Promise(resolve => mj.Hub.Queue(resolve));
  } else if (mj.startup && mj.startup.promise) {      // MathJax 3
    await mj.startup.promise;
    if (mj.typesetPromise) await mj.typesetPromise();
  }
}
// Words of a <pre> under root that a soft line break cuts in two ('bf1' / '6') although the word
// would fit on a line of its own: a break between two letters, digits, '_' or '.'; one at
// punctuation ('spread=' / '(t', ')' / '['), after a hyphen or in Chinese is a line's own.
function brokenWords(root) {
  const found = [];
  const space = c => /\s/.test(c);
  const cjk = c => /[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]/.test(c);
  for (const pre of root.querySelectorAll('pre')) {
    if (!shown(pre)) continue;
    const chars = [];  // [character, top of its box] in text order
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.data.length; i++) {
        const range = document.createRange();
        range.setStart(n, i);
        range.setEnd(n, i + 1);
        const box = [...range.getClientRects()].find(r => r.width > 0);
        chars.push([n.data[i], box ? box.top : null]);
      }
    }
    const wraps = i => i > 0 && chars[i][0] !== '\n' && chars[i - 1][0] !== '\n'
      && chars[i][1] !== null && chars[i - 1][1] !== null && chars[i][1] > chars[i - 1][1] + 2;
    let width = 0;  // the most characters one line of this <pre> holds
    for (let i = 0, run = 0; i < chars.length; i++) {
      run = chars[i][0] === '\n' ? 0 : wraps(i) ? 1 : run + 1;
      width = Math.max(width, run);
    }
    for (let i = 1; i < chars.length; i++) {
      const before = chars[i - 1][0];
      if (!wraps(i) || space(chars[i][0]) || space(before) || before === '-') continue;
      if (cjk(chars[i][0]) || cjk(before)) continue;  // Chinese breaks between any two characters
      if (!/[\w.]/.test(chars[i][0]) || !/[\w.]/.test(before)) continue;  // between tokens: '=' / '(', ')' / '['
      let a = i - 1, b = i;
      while (a > 0 && !space(chars[a - 1][0])) a--;
      while (b + 1 < chars.length && !space(chars[b + 1][0])) b++;
      if (b - a + 1 < width) {
        const word = chars.slice(a, b + 1).map(c => c[0]).join('');
        found.push(`${word.slice(0, i - a)} / ${word.slice(i - a)}`.slice(0, 60));
      }
    }
  }
  return found;
}
// Characters of the text under root that no font of their element draws: each is drawn on a
// canvas in its element's font and compared with a code point no font has (U+10FFFD, drawn as
// the font's .notdef box); a visible character that draws nothing is one too (a blank .notdef).
function tofu(root) {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 48;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const drawn = (ch, font) => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.font = font;
    ctx.textBaseline = 'middle';
    ctx.fillText(ch, 4, 24);
    return ctx.getImageData(0, 0, 48, 48).data.join(',');
  };
  const invisible = /[\s\p{M}\p{Cf}\u00ad]/u;  // spaces, combining marks, format characters
  const byFont = new Map();  // font -> set of non-ASCII characters shown in it
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('script, style, .MathJax, mjx-container, .MJX_Assistive_MathML')) continue;
    const cs = getComputedStyle(p);
    const font = `${cs.fontStyle} ${cs.fontWeight} 32px ${cs.fontFamily}`;
    for (const ch of n.data) {
      if (ch.codePointAt(0) < 0x80 || invisible.test(ch)) continue;
      if (!byFont.has(font)) byFont.set(font, new Set());
      byFont.get(font).add(ch);
    }
  }
  const found = new Set();
  for (const [font, chars] of byFont) {
    const box = drawn('\u{10FFFD}', font), blank = drawn('', font);
    for (const ch of chars) {
      const px = drawn(ch, font);
      if (px === box || px === blank) found.add(ch);
    }
  }
  return [...found];
}
function label(el) {
  const h = el.querySelector('h1, h2, h3, h4, h5, h6');
  return ((h || el).textContent || '').replace(/¶/g, '').replace(/\s+/g, ' ').trim().slice(0, 50);
}
"""

JS_PAGE = JS_HELPERS + r"""
async () => {
  // A MathJax 3 config object is in place before the library itself has loaded.
  for (let i = 0; i < 50 && window.MathJax && !MathJax.Hub && !MathJax.startup; i++) {
    await new Promise(r => setTimeout(r, 100));
  }
  await mathDone();
  const images = [];
  for (const img of document.images) {
    img.loading = 'eager';
    const ok = await img.decode().then(() => img.naturalWidth > 0, () => false);
    images.push({src: img.getAttribute('src') || '', alt: img.getAttribute('alt'), ok});
  }
  const solutions = [];
  for (const cell of document.querySelectorAll('[class*="tag_solution"]')) {
    const outs = cell.querySelectorAll('.jp-OutputArea-output, .cell_output, .output_area, .output');
    const seen = [...outs].find(o => shown(o) && o.getBoundingClientRect().height > 0);
    if (seen) solutions.push((seen.innerText || '').replace(/\s+/g, ' ').trim().slice(0, 50));
  }
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href)
    .filter(h => h.startsWith('file:'));
  const ids = [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name);
  await document.fonts.ready;
  return {raw: rawMath(document.body), images, solutions, links, ids, tofu: tofu(document.body)};
}
"""

JS_SLIDES = JS_HELPERS + r"""
async () => {
  Reveal.configure({transition: 'none', backgroundTransition: 'none'});
  const slides = [];
  const stacks = Reveal.getHorizontalSlides();
  for (let h = 0; h < stacks.length; h++) {
    const count = Math.max(1, stacks[h].querySelectorAll(':scope > section').length);
    for (let v = 0; v < count; v++) {
      Reveal.slide(h, v);
      await mathDone();
      const s = Reveal.getCurrentSlide();
      // scrollHeight/Width: the laid-out content, unscaled. A box inside the slide that
      // scrolls or clips its content hides what the audience should see: count those too.
      const boxes = [...s.querySelectorAll('*')].filter(e => {
        // MathJax's copy for screen readers is clipped on purpose, never seen
        if (!shown(e) || e.closest('.MJX_Assistive_MathML, mjx-assistive-mml')) return false;
        const cs = getComputedStyle(e);
        return (e.scrollHeight > e.clientHeight + 1 && cs.overflowY !== 'visible') ||
               (e.scrollWidth > e.clientWidth + 1 && cs.overflowX !== 'visible');
      }).map(e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`.slice(0, 60));
      slides.push({h, v, title: label(s), w: s.scrollWidth, h_px: s.scrollHeight,
                   raw: rawMath(s), boxes, cut: brokenWords(s)});
    }
  }
  Reveal.slide(0, 0);
  return slides;
}
"""


def problems(context: BrowserContext, path: Path, screenshot: Path | None = None,
             timeout_ms: float = 15_000) -> list[str]:
    """Open ``path`` in a new page of ``context`` (made with ``MARKS``) and list what is
    wrong with it; a deck is walked slide by slide. ``screenshot`` (the page, or a deck's
    first slide after the title) is saved there and must not be blank."""
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    network, missing, errors, logged = [], [], [], []
    local = ("file:", "data:", "blob:")  # anything else is what a CDN would serve (offline, it fails)
    page.on("request", lambda r: None if r.url.startswith(local) else network.append(r.url))
    page.on("requestfailed", lambda r: missing.append(r.url) if r.url.startswith("file:") else None)
    page.on("pageerror", lambda e: errors.append(str(e).splitlines()[0][:120]))
    page.on("console", lambda m: logged.append(m.text.splitlines()[0][:120]) if m.type == "error"
            and not m.text.startswith("Failed to load resource") else None)
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        deck = page.locator(".reveal .slides").count() > 0
        started = False
        if deck:  # look at it as laid out by reveal.js, not before
            with contextlib.suppress(PlaywrightTimeout):
                started = bool(page.wait_for_function(REVEAL_READY))
        found = page.evaluate(JS_PAGE)
        out = [f"network request to {u}" for u in dict.fromkeys(network)]
        out += [f"missing file {unquote(urlsplit(u).path)}" for u in dict.fromkeys(missing)]
        out += [f"JavaScript error: {e}" for e in dict.fromkeys(errors)]
        out += [f"console error: {e}" for e in dict.fromkeys(logged)]
        out += [f"unrendered math: '{t}'" for t in found["raw"]]
        out += [f"solution output visible without a click: '{s}'" for s in found["solutions"]]
        out += image_problems(found["images"])
        out += link_problems(found["links"], path, found["ids"])
        if found["tofu"]:
            chars = "".join(found["tofu"][:20])
            out.append(f"{len(found['tofu'])} character(s) drawn as a box (tofu: no installed font has them): "
                       f"'{chars}'")
        if deck and not started:
            out.append("Reveal not initialised (reveal.js missing or failed)")
        elif deck:
            out += slide_problems(page)
        if screenshot is not None:
            if started:  # the first slide after the title, once the fonts its math needs are in
                page.evaluate("async () => { Reveal.slide(1, 0); await new Promise(requestAnimationFrame);"
                              " await document.fonts.ready; }")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=screenshot)
            out += [why for why in [screen_problem(screenshot)] if why]
    finally:
        page.close()
    return out


def slide_problems(page: Page) -> list[str]:
    """Each slide of the deck open in ``page`` that does not fit 1280x720, holds a box that
    scrolls or clips, shows raw TeX or breaks a line inside a word; named `slide h.v 'its heading'`."""
    out = []
    for s in page.evaluate(JS_SLIDES):
        where = f"slide {s['h'] + 1}.{s['v'] + 1} '{s['title']}'"
        if s["w"] > WIDTH or s["h_px"] > HEIGHT:
            out.append(f"{where} overflows: {s['w']}x{s['h_px']} px > {WIDTH}x{HEIGHT}")
        if s["boxes"]:
            out.append(f"{where}: {len(s['boxes'])} box(es) scroll or clip their content ({s['boxes'][0]})")
        out += [f"{where}: unrendered math: '{t}'" for t in s["raw"]]
        out += [f"{where}: a line breaks inside a word: '{w}'" for w in s["cut"]]
    return out


def anchors_in(path: Path) -> set[str]:
    """Every id (and a name=) in an HTML file, raw and percent-decoded."""
    ids = {html.unescape(i) for i in ID.findall(path.read_text(encoding="utf-8", errors="replace"))}
    return ids | {unquote(i) for i in ids}


def link_problems(links: list[str], page: Path, page_ids: list[str]) -> list[str]:
    """Local links from ``page`` (absolute file: URLs) whose file or #anchor is missing."""
    out = []
    here = set(page_ids) | {unquote(i) for i in page_ids}
    for url in dict.fromkeys(links):
        parts = urlsplit(url)
        target = Path(url2pathname(parts.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            out.append(f"broken link to {unquote(parts.path)}")
            continue
        anchor = parts.fragment
        # "#/2/1" is a reveal.js route to a slide, not an element id.
        if not anchor or anchor.startswith("/") or target.suffix.lower() not in (".html", ".htm"):
            continue
        ids = here if target.resolve() == page.resolve() else anchors_in(target)
        if anchor not in ids and unquote(anchor) not in ids:
            out.append(f"link to {target.name}#{anchor}: no such anchor")
    return out


def image_problems(images: list[dict]) -> list[str]:
    out = []
    for i, img in enumerate(images, 1):
        src = img["src"] if not img["src"].startswith("data:") else img["src"][:30] + "..."
        if not img["ok"]:
            out.append(f"image {i} ({src}) does not load or decode")
        alt = (img["alt"] or "").strip()
        if not alt or alt == PLACEHOLDER_ALT:
            out.append(f"image {i} ({src}) has no alt text")
    return out


def screen_problem(png: Path) -> str | None:
    """Why a screenshot is unusable (missing or blank), else None."""
    if not png.is_file():
        return f"no screenshot written to {png}"
    pixels = matplotlib.image.imread(png)[..., :3].reshape(-1, 3)
    _, counts = np.unique((pixels * 255).astype(np.uint8), axis=0, return_counts=True)
    if counts.max() > 0.999 * len(pixels):
        return f"screenshot {png} is blank (one colour)"
    return None


def pdf_pages(pdf: bytes) -> int:
    """The number of pages of a PDF that Chromium printed (its /Type /Page objects)."""
    return len(re.findall(rb"/Type\s*/Page(?![a-z])", pdf))


def pages_under(folder: Path) -> list[Path]:
    """HTML pages under ``folder``, skipping asset folders (`_static`, `_sources`, ...)."""
    return sorted(p for p in folder.rglob("*.html")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts[:-1]))
