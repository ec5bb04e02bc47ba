"""Answers stay sealed and speaker notes stay marked in every viewer a student uses (issue 28,
§1 and §2), in Chromium: JupyterLab on a fresh open and after Run All, and nbconvert's lab and
classic HTML (what nbviewer serves; GitHub and VS Code render the same markdown). The site and
the decks are tests/pagecheck.py's ("solution output visible without a click").

A solution is a closed ``<details>`` in a markdown cell: no viewer shows what is inside until
the student opens it, and Run All never runs it (a student's answer stays theirs). A speaker
note shows, where a viewer shows it at all, as a note for the presenter.

Lab runs in a copy of the checkout (its .venv linked): Run All autosaves the notebook."""

import os
from pathlib import Path

import nbformat
import pagecheck
import pytest
from nbconvert import HTMLExporter
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_lab import CHROMIUM, KERNEL_READY, checkout_copy, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
RUN_ALL = "01_tensors_and_strides"  # the notebook Run All is tried on: a self-test and a deeper exercise
NOTE_MARK = "For the presenter"

pytestmark = [pytest.mark.site, *pagecheck.MARKS,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no {CHROMIUM} (apt-get install chromium)")]


def kinds(name: str) -> dict[str, list[int]]:
    """The indices of a notebook's solution cells and of its speaker notes."""
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    out = {"solution": [], "notes": []}
    for i, cell in enumerate(nb.cells):
        if "solution" in cell.metadata.get("tags", []):
            out["solution"].append(i)
        elif cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
            out["notes"].append(i)
    assert out["solution"] and out["notes"], f"{name}: a check that needs solutions and notes to look at"
    return out


# Per cell (the viewer's cells in notebook order, selected by CELLS): whether a <details> is open
# or shows what is inside it, and the cell's visible text.
JS_CELLS = r"""
(selector) => [...document.querySelectorAll(selector)].map(cell => {
  const shown = e => e.checkVisibility({visibilityProperty: true}) && e.getClientRects().length > 0;
  const details = [...cell.querySelectorAll('details')];
  const inside = details.flatMap(d => [...d.children].filter(c => c.tagName !== 'SUMMARY'));
  return {details: details.length, open: details.filter(d => d.open).length,
          seen: inside.filter(shown).map(e => e.innerText.trim().slice(0, 60)),
          text: shown(cell) ? cell.innerText.trim() : '', all: cell.textContent};
})
"""


def sealed(cells: list[dict], name: str) -> list[str]:
    """What a student sees that they should not: an open solution, an unmarked speaker note."""
    k = kinds(name)
    out = []
    for i in k["solution"]:
        c = cells[i]
        if c["details"] == 0:
            out.append(f"cell {i}: a solution that is no <details>: {c['text'][:60]!r}")
        elif c["open"] or c["seen"]:
            out.append(f"cell {i}: a solution shows what it holds: {c['seen'][:1]}")
    for i in k["notes"]:
        text = cells[i]["text"].lstrip("*# ")
        if text and not text.startswith(NOTE_MARK):
            out.append(f"cell {i}: a speaker note a student reads as lesson text: {text[:60]!r}")
    return out


# -- nbconvert's HTML (nbviewer), offline ----------------------------------------------

@pytest.mark.parametrize("template", ["lab", "classic"])
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_nbconvert_html_keeps_solutions_shut_and_notes_marked(context, tmp_path, name, template):
    body, _ = HTMLExporter(template_name=template).from_filename(str(ROOT / "notebooks" / f"{name}.ipynb"))
    path = tmp_path / f"{name}.html"
    path.write_text(body, encoding="utf-8")
    page = context.new_page()
    page.goto(path.as_uri(), wait_until="load")
    cells = page.evaluate(JS_CELLS, ".jp-Cell.jp-Notebook-cell" if template == "lab" else "#notebook-container > .cell")
    assert len(cells) == len(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells)
    problems = sealed(cells, name)
    assert not problems, "\n".join(problems)


def test_an_open_solution_and_an_unmarked_note_fail(context, tmp_path):
    """The same check on notebook 01 with one solution opened (as a code cell's stored output, or
    <details open>, would show it) and one note's presenter line taken away."""
    nb = nbformat.read(ROOT / "notebooks" / f"{RUN_ALL}.ipynb", as_version=4)
    k = kinds(RUN_ALL)
    solution, note = nb.cells[k["solution"][0]], nb.cells[k["notes"][0]]
    solution.source = solution.source.replace("<details>", "<details open>", 1)
    note.source = "\n".join(line for line in note.source.splitlines() if NOTE_MARK not in line)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    path = tmp_path / "planted.html"
    path.write_text(body, encoding="utf-8")
    page = context.new_page()
    page.goto(path.as_uri(), wait_until="load")
    problems = sealed(page.evaluate(JS_CELLS, ".jp-Cell.jp-Notebook-cell"), RUN_ALL)
    assert [p.split(":")[1].strip() for p in problems] == ["a solution shows what it holds",
                                                             "a speaker note a student reads as lesson text"]


# -- JupyterLab ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sealed")
    checkout = checkout_copy(tmp, [path for name in NOTEBOOKS for path in (f"notebooks/{name}.ipynb", f"py_src/{name}.py")])
    with running_lab(checkout, tmp) as port:
        yield port


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    yield context.new_page()
    context.close()


LAB_CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Notebook-cell"


def open_in_lab(page, port: int, name: str) -> None:
    open_notebook(page, port, name)
    # Lab adds a long notebook's cells to the page a few at a time, after it has opened
    count = len(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells)
    page.wait_for_function(f"() => document.querySelectorAll({LAB_CELLS!r}).length === {count}")
    # and skips laying out the cells off screen (content-visibility: auto), whose text then reads
    # as empty: lay them all out, as a student scrolling through sees each
    page.add_style_tag(content=".jp-Notebook .jp-Cell { content-visibility: visible !important; }")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_lab_on_a_fresh_open_keeps_solutions_shut_and_notes_marked(lab, page, name):
    open_in_lab(page, lab, name)
    problems = sealed(page.evaluate(JS_CELLS, LAB_CELLS), name)
    assert not problems, "\n".join(problems)


def test_lab_after_run_all_keeps_solutions_shut_and_the_students_answers_unanswered(lab, page):
    """Run → Run All Cells runs the fill-in cells (None) and the checks, never a solution: the
    checks still say "not answered yet", and no ✓ of an exercise appears."""
    open_in_lab(page, lab, RUN_ALL)
    # the stored outputs cleared first, so that "every code cell has run" can be seen: a prompt
    # [ ] until its cell has run, [n] after
    for menu, item in [("Edit", "Clear Outputs of All Cells"), ("Run", "Run All Cells")]:
        page.locator(".lm-MenuBar-item", has_text=menu).first.click()
        page.locator(".lm-Menu-item:visible", has_text=item).first.click()
    prompts = f"() => [...document.querySelectorAll({LAB_CELLS!r} + '.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent)"
    try:
        # a check cell's code is hidden, and its prompt with it ('')
        page.wait_for_function(f"() => ({prompts})().every(p => p === '' || /\\[\\d+\\]/.test(p))",
                               timeout=int(os.environ.get("LAB_RUN_ALL_TIMEOUT_MS", 300_000)))
    except PlaywrightTimeout:
        pytest.fail(f"Run All did not run every code cell: prompts {page.evaluate(prompts)}")
    page.wait_for_function(KERNEL_READY)
    cells = page.evaluate(JS_CELLS, LAB_CELLS)
    problems = sealed(cells, RUN_ALL)
    assert not problems, "\n".join(problems)
    nb = nbformat.read(ROOT / "notebooks" / f"{RUN_ALL}.ipynb", as_version=4)
    checks = [i for i, cell in enumerate(nb.cells) if "exercise-check" in cell.metadata.get("tags", [])]
    assert checks
    for i in checks:
        # a check's code is hidden, its verdict shown (in "Going deeper: more exercises", under a
        # heading collapsed in Lab: what the cell holds, open or not): the student has not answered
        assert "not answered yet" in cells[i]["all"], (i, cells[i]["all"][-300:])
        assert "✓" not in cells[i]["all"], (i, cells[i]["all"][-300:])
