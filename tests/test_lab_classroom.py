"""JupyterLab as a student and a presenter use it (issue 37, items 2, 4, 5 and 6), in Chromium at
1280x720, on a copy of the checkout (Lab saves):

- Shift+Enter from the first cell to the last follows the core path: the collapsed "Going
  deeper" sections stay collapsed and none of their cells runs;
- a speaker note stays collapsed when it runs (Run All), and its collapsed label reads as text
  ("For the presenter", not "**For the presenter**");
- every figure has its cell's caption as alt text;
- the file browser, at Lab's default width, shows each notebook's whole name.

The live slides are tests/test_live_slides.py's."""

import re
from pathlib import Path

import nbformat
import pytest
from test_lab import (
    CHROMIUM,
    NOTEBOOKS,
    SCREENSHOTS,
    TOKEN,
    checkout_copy,
    open_notebook,
    running_lab,
)

ROOT = Path(__file__).resolve().parents[1]
NAMES = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
WALKED = "01_tensors_and_strides"  # fast to run, with Going-deeper sections, notes and a figure
NOTE_LABEL = "For the presenter"

pytestmark = [pytest.mark.site,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no {CHROMIUM} (apt-get install chromium)")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("classroom")
    checkout = checkout_copy(tmp, [p for name in NAMES for p in (f"notebooks/{name}.ipynb", f"py_src/{name}.py")])
    with running_lab(checkout, tmp) as port:
        yield port, checkout


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    yield context.new_page()
    context.close()


CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Notebook-cell"


def open_all_cells(page, port: int, name: str) -> None:  # and wait until Lab shows all its cells
    open_notebook(page, port, name)
    count = len(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells)
    page.wait_for_function(f"() => document.querySelectorAll({CELLS!r}).length === {count}")
    page.add_style_tag(content=".jp-Notebook .jp-Cell { content-visibility: visible !important; }")


# Per cell: its prompt ('' for markdown), whether it is shown, its collapsed label if any.
JS_STATE = f"""() => [...document.querySelectorAll({CELLS!r})].map(c => ({{
  prompt: c.querySelector(':scope > .jp-Cell-inputWrapper .jp-InputPrompt')?.textContent.trim() ?? '',
  hidden: c.classList.contains('lm-mod-hidden') || !c.getClientRects().length,
  label: c.querySelector('.jp-InputPlaceholder .jp-PlaceholderText')?.innerText ?? null,
  collapsedHeading: !!c.querySelector('.jp-collapseHeadingButton.jp-mod-collapsed'),
  alts: [...c.querySelectorAll('.jp-OutputArea-output img')].map(i => i.alt)}}))"""


def kinds(name: str) -> dict[str, list[int]]:
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    tags = [cell.metadata.get("tags", []) for cell in nb.cells]
    return {"deeper code": [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "deeper" in tags[i]],
            "core code": [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "deeper" not in tags[i]],
            "notes": [i for i, c in enumerate(nb.cells) if c.metadata.get("slideshow", {}).get("slide_type") == "notes"],
            "collapsed": [i for i, c in enumerate(nb.cells) if c.metadata.get("jp-MarkdownHeadingCollapsed")],
            "captions": {i: c.metadata["caption"] for i, c in enumerate(nb.cells) if c.metadata.get("caption")}}


def test_shift_enter_walks_the_core_path_and_leaves_going_deeper_and_notes_collapsed(lab, page):
    port, checkout = lab
    open_all_cells(page, port, WALKED)
    k = kinds(WALKED)
    # the stored outputs cleared first, so that a cell that ran shows it: [ ] until it runs, [n] after
    page.locator(".lm-MenuBar-item", has_text="Edit").first.click()
    page.locator(".lm-Menu-item:visible", has_text="Clear Outputs of All Cells").first.click()
    before = page.evaluate(JS_STATE)
    assert [i for i, c in enumerate(before) if c["collapsedHeading"]] == k["collapsed"]
    page.locator(CELLS).first.click()
    page.keyboard.press("Escape")
    last_shown = max(i for i, c in enumerate(before) if not c["hidden"])
    for _ in range(len(before)):  # one press per cell at most
        if page.evaluate(f"() => [...document.querySelectorAll({CELLS!r})].findIndex(c => c.classList.contains('jp-mod-active'))") == last_shown:
            break
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle'",
                               timeout=120_000)
    page.wait_for_timeout(500)
    after = page.evaluate(JS_STATE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "lab-walked.png")
    ran = {i for i, c in enumerate(after) if re.fullmatch(r"\[\d+\]:?", c["prompt"])}
    assert not ran & set(k["deeper code"]), f"Going-deeper cells ran: {sorted(ran & set(k['deeper code']))}"
    assert [i for i, c in enumerate(after) if c["collapsedHeading"]] == k["collapsed"], "a Going-deeper section opened"
    shown = {i for i in k["core code"] if before[i]["prompt"]}  # an exercise check's prompt is hidden with its code
    assert shown - ran == set(), f"core cells Shift+Enter did not run: {sorted(shown - ran)}"
    for i in k["notes"]:
        assert after[i]["label"] == NOTE_LABEL, f"cell {i}: a note open, or labelled {after[i]['label']!r}"


def test_run_all_keeps_the_notes_collapsed_and_labelled_as_text(lab, page):
    port, checkout = lab
    name = "02_dtypes_and_memory"
    open_all_cells(page, port, name)
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
    page.wait_for_timeout(1000)
    page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle'",
                           timeout=300_000)
    state = page.evaluate(JS_STATE)
    notes = kinds(name)["notes"]
    assert notes and [state[i]["label"] for i in notes] == [NOTE_LABEL] * len(notes)


@pytest.mark.parametrize("name", ["03_flops_and_mfu", "08_training_loop"])
def test_every_figure_in_lab_has_its_caption_as_alt_text(lab, page, name):
    port, _ = lab
    open_all_cells(page, port, name)
    page.wait_for_timeout(1000)
    state = page.evaluate(JS_STATE)
    captions = kinds(name)["captions"]
    figures = {i: c["alts"] for i, c in enumerate(state) if c["alts"]}
    assert figures, f"{name}: no figure shown"
    assert figures == {i: [captions[i]] * len(alts) for i, alts in figures.items()}


def test_the_file_browser_shows_each_notebooks_whole_name(lab, page):
    port, _ = lab
    page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks?reset&token={TOKEN}")
    page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
    page.wait_for_timeout(500)
    cut = page.evaluate("""() => [...document.querySelectorAll('.jp-DirListing-itemText')]
        .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""")
    width = page.evaluate("() => Math.round(document.querySelector('.jp-FileBrowser').getBoundingClientRect().width)")
    page.screenshot(path=SCREENSHOTS / "lab-files.png")
    assert set(NOTEBOOKS) <= set(page.locator(".jp-DirListing-itemText").all_inner_texts())
    assert not cut, f"at the file browser's default width ({width} px) these names are cut: {cut}"
