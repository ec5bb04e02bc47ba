"""Presenting a notebook live, as README "Presenting" tells a presenter to (issue 28, §3; issue 37):
in JupyterLab (`make lab`), open notebook 03, press Alt+R; Lab opens the RISE slideshow beside it
at once and offers full screen, and behind the title slide the slideshow runs the core cells (the
code cells not tagged deeper: jupyter/labextension) on the notebook's kernel: each once, in order,
and no Going-deeper cell. Then → walks every slide in order, a cell in the middle of the deck
("About 144 days") runs again on that kernel (no NameError: the core cells before it have run),
the fonts are room-sized (notebooks/rise.css) and no Going-deeper content is on a slide.

RISE saves the notebook before it opens the slideshow, so the server runs in a copy of the
checkout (its .venv linked): presenting never writes the checkout's notebooks."""

import contextlib
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_lab import CHROMIUM, SCREENSHOTS, checkout_copy, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "03_flops_and_mfu"
MID_DECK = "total_flops = 6 * 70e9 * 15e12"  # the code cell of the slide "About 144 days"
# The static decks' sizes at 1280x720 (docs/slides/deck.html.j2): text 20 px, code 19 px.
TEXT_PX, CODE_PX = 20, 19

pytestmark = [pytest.mark.site,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no {CHROMIUM} (apt-get install chromium)")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("present")
    checkout = checkout_copy(tmp, [f"notebooks/{NOTEBOOK}.ipynb", f"py_src/{NOTEBOOK}.py", "notebooks/rise.css"])
    with running_lab(checkout, tmp) as port:
        yield port


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    yield context.new_page()
    context.close()


def rise_frame(page):
    for frame in page.frames:
        if "/rise/" in frame.url:
            return frame
    return None


PRESENT = "() => document.querySelector('.reveal .slides section.present[id^=\"slide-\"]')?.id"
# The slideshow's run of the core cells (jupyter/labextension/src/index.js): waiting, running, done, failed.
CORE_STATE = "() => document.body.dataset.lectureCore ?? null"
# Each code cell's prompt in the slideshow, in notebook order (a hidden cell's too: textContent).
PROMPTS = "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(c => c.querySelector('.jp-InputPrompt')?.textContent.trim())"


def expected_prompts(name: str) -> list[str]:
    """After the core run on a fresh kernel: the core code cells numbered 1, 2, ... in order, and
    every Going-deeper cell showing its stored count (it did not run). A cell whose source is
    hidden (an exercise's check) shows no prompt: ''."""
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    prompts, count = [], 0
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        count += "deeper" not in cell.metadata.get("tags", [])
        if cell.metadata.get("jupyter", {}).get("source_hidden"):
            prompts.append("")
        elif "deeper" in cell.metadata.get("tags", []):
            prompts.append(f"[{cell.execution_count or ' '}]:")
        else:
            prompts.append(f"[{count}]:")
    return prompts


def test_alt_r_presents_at_once_runs_the_core_cells_behind_the_title_and_every_slide_in_order(lab, page):
    css = {}
    page.on("response", lambda r: css.__setitem__(r.url.split("?")[0], r.status) if r.url.split("?")[0].endswith(".css")
            and "/files/" in r.url else None)
    open_notebook(page, lab, NOTEBOOK, reset=False)  # README: wait for the status bar's Idle
    page.locator(".jp-NotebookPanel .jp-MarkdownCell").first.click()
    page.keyboard.press("Escape")  # README: click a cell, press Esc (command mode), then Alt+R
    page.keyboard.press("Alt+r")
    # Lab opens the slideshow at once and offers full screen
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=60_000)
    page.wait_for_function("() => [...document.querySelectorAll('iframe')].some(f => f.src.includes('/rise/'))")
    frame = None
    for _ in range(600):
        frame = rise_frame(page)
        if frame is not None and frame.evaluate("() => !!document.querySelector('.reveal.ready')"):
            break
        page.wait_for_timeout(100)
    assert frame is not None, "no RISE slideshow opened"
    frame.wait_for_function(PRESENT, timeout=60_000)
    # behind the title slide, the core cells run, each once and in order; no Going-deeper cell runs
    assert frame.evaluate(CORE_STATE) in ("waiting", "running", "done")
    frame.wait_for_function(f"() => !['waiting', 'running'].includes(({CORE_STATE})())", timeout=300_000)
    assert frame.evaluate(CORE_STATE) == "done"
    assert frame.evaluate(PROMPTS) == expected_prompts(NOTEBOOK)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "rise-live.png")

    # → walks every slide in order (the ids RISE gives them: slide-h-v)
    slides = frame.evaluate("() => [...document.querySelectorAll('.reveal .slides section[id^=\"slide-\"]')].map(s => s.id)")
    frame.locator(".reveal .slides section.present h1").first.click()  # focus the slideshow
    seen, deeper = [frame.evaluate(PRESENT)], []
    for _ in range(len(slides) + 2):  # two presses past the end: nothing more
        page.keyboard.press("ArrowRight")
        # One press, one slide: wait for it to move before the next press (a slide with math
        # and outputs takes a second to lay out on 2 cores, and presses made meanwhile queue up).
        with contextlib.suppress(PlaywrightTimeout):
            frame.wait_for_function(f"(before) => ({PRESENT})() !== before", arg=seen[-1], timeout=5_000)
        now = frame.evaluate(PRESENT)
        if now != seen[-1]:
            seen.append(now)
        deeper += frame.evaluate(r"""() => {
          const slide = document.querySelector('.reveal .slides section.present[id^="slide-"]');
          const shown = e => e.checkVisibility({visibilityProperty: true}) && e.getClientRects().length;
          return [...slide.querySelectorAll('h1, h2, h3, h4, .jp-showHiddenCellsButton')].filter(shown)
            .map(e => e.textContent.trim()).filter(t => /^Going deeper|cells? hidden/.test(t))
            .map(t => slide.id + ': ' + t.slice(0, 60));
        }""")
    assert seen == slides, f"→ visited {len(seen)} of {len(slides)} slides: {seen}"
    assert not deeper, f"Going-deeper content on a live slide: {deeper}"

    # back to "About 144 days", and Shift+Enter on its cell: it runs on the kernel the core ran on
    target = frame.evaluate("(code) => [...document.querySelectorAll('.reveal .slides section[id^=\"slide-\"]')]"
                            ".find(s => s.textContent.includes(code))?.id", MID_DECK)
    assert target, f"no slide holds {MID_DECK!r}"
    while frame.evaluate(PRESENT) != target:
        page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(250)
    cell = frame.locator(".jp-CodeCell", has_text=MID_DECK)
    before = cell.locator(".jp-InputPrompt").inner_text()
    cell.locator(".jp-InputPrompt").click()  # select it in command mode
    page.keyboard.press("Shift+Enter")
    frame.wait_for_function("(before) => { const p = [...document.querySelectorAll('.jp-CodeCell')]"
                            f".find(c => c.textContent.includes({MID_DECK!r})).querySelector('.jp-InputPrompt').textContent;"
                            " return /\\[\\d+\\]/.test(p) && p !== before; }", arg=before, timeout=60_000)
    output = cell.locator(".jp-OutputArea").inner_text()
    page.screenshot(path=SCREENSHOTS / "rise-live-run.png")
    assert "Error" not in output and "Traceback" not in output, output[:500]
    assert "✓" in output, output[:500]

    # room-sized fonts: notebooks/rise.css was found and applied
    assert [status for url, status in css.items() if url.endswith("/notebooks/rise.css")] == [200], css
    sizes = frame.evaluate("""(code) => {
      const slide = document.querySelector('.reveal .slides section.present[id^="slide-"]');
      const px = sel => [...slide.querySelectorAll(sel)].filter(e => e.getClientRects().length)
        .map(e => parseFloat(getComputedStyle(e).fontSize));
      return {text: px('.jp-RenderedMarkdown p'), code: px('.jp-CodeCell .cm-content'), out: px('.jp-OutputArea-output pre')};
    }""", MID_DECK)
    assert sizes["text"] and min(sizes["text"]) >= TEXT_PX, sizes
    assert sizes["code"] and min(sizes["code"]) >= CODE_PX, sizes
    assert sizes["out"] and min(sizes["out"]) >= CODE_PX, sizes


def test_readme_presenting_steps_are_the_ones_this_test_takes():
    """The steps above, in README's order, in both READMEs."""
    for readme, heading in [("README.md", "## Presenting"), ("README.zh-CN.md", "## 讲授")]:
        text = (ROOT / readme).read_text(encoding="utf-8").split(heading, 1)[1].split("\n## ", 1)[0]
        text = " ".join(text.split())  # README's line breaks
        steps = ["make lab", "03_flops_and_mfu.ipynb", "Idle", "Esc", "Alt+R", "Ok", "→", "Shift+Enter", "notebooks/rise.css"]
        if readme == "README.md":
            steps[5:6] = ["full screen", "Ok", "runs the core cells"]
        at = [text.find(step) for step in steps]
        assert -1 not in at, f"{readme}: no {steps[at.index(-1)]!r} in its presenting steps"
        assert at == sorted(at), f"{readme}: the presenting steps are out of order: {steps}"


def test_the_key_overrides_replace_real_lab_shortcuts_and_keep_them_outside_the_slideshow():
    """jupyter/labconfig/default_setting_overrides.json: each shortcut it disables is one Lab or
    RISE really binds (keys and selector, as their schemas state: else it disables nothing after
    an upgrade), Alt+R presents at once (in command mode, with full screen offered: the slideshow
    runs the core cells itself), and the heading keys ← and → (Lab's "move to
    the heading above/below") stay bound everywhere but in the slideshow, where reveal.js needs
    them: in RISE they moved the selection, and RISE the slide, two sections at a time."""
    import json
    import sys

    share = Path(sys.prefix) / "share" / "jupyter"  # Lab's schemas, and each extension's
    bound = [s for path in [*share.glob("lab/schemas/**/*.json"), *share.glob("labextensions/*/schemas/**/*.json")]
             for s in json.loads(path.read_text(encoding="utf-8")).get("jupyter.lab.shortcuts", [])]
    overrides = json.loads((ROOT / "jupyter" / "labconfig" / "default_setting_overrides.json").read_text())
    shortcuts = overrides["@jupyterlab/shortcuts-extension:shortcuts"]["shortcuts"]
    disabled = [s for s in shortcuts if s.get("disabled")]
    assert {s["command"] for s in disabled} == {"RISE:preview", "notebook:move-cursor-heading-below-or-expand",
                                                "notebook:move-cursor-heading-above-or-collapse", "RISE:smart-exec"}
    for off in disabled:
        real = {k: off[k] for k in ("command", "keys", "selector")}
        assert real in [{k: s.get(k) for k in real} for s in bound], f"Lab binds no {real}"
        if off["command"].startswith("notebook:"):
            assert {**real, "selector": real["selector"] + ":not(.reveal *)"} in shortcuts
    # RISE's Shift+Enter ran the cell and selected the next one, which opened a collapsed section:
    # on a slide it runs the cell in place
    assert {"command": "notebook:run-cell", "keys": ["Shift Enter"], "selector": ".lm-Widget.reveal .jp-Notebook:focus"} in shortcuts
    [alt_r] = [s for s in shortcuts if s["keys"] == ["Alt R"] and not s.get("disabled")]
    assert (alt_r["command"], alt_r["args"]) == ("RISE:preview", {"fullscreen": True})  # no Run All first
