"""Every live slide of every notebook, presented as README "Presenting" says (issue 37): in
JupyterLab, Alt+R opens RISE, which runs the core cells behind its title slide (the Going-deeper
cells stay un-run: jupyter/labextension); once they have run, each slide is looked at, and every
code cell on a slide runs again with Shift+Enter, last slide first (an order no walk-through
takes), at 1280x720 in Chromium. Per notebook:

- no error: the core run ends done, not failed; no code cell's output shows one after it runs
  again, the browser's console shows none (Lab's page and the slideshow's), and no request fails;
- nothing is cut: no code line or output line runs off a slide, and no slide is taller than the
  visible slide area, before and after its cells run again;
- no progress bar is left frozen on a slide (08's loops draw one while they run: text that
  Lab and RISE redraw, lecture_utils.progress);
- presenting and saving change only outputs: after Alt+R, the re-runs and a save (Lab's and the
  slideshow's), each cell's source and metadata in notebooks/ are the stored ones, py_src/ is
  unchanged, and README's restore line brings the checkout back to its last commit.

Lab runs in a git copy of the checkout (tests/test_lab.checkout_copy: its .venv linked), so the
saves never touch this checkout. `make site-check` runs it (marker site); several minutes."""

import contextlib
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_lab import CHROMIUM, SCREENSHOTS, checkout_copy, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
WIDTH, HEIGHT = 1280, 720

pytestmark = [pytest.mark.site,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no {CHROMIUM} (apt-get install chromium)")]


def restore_line() -> str:
    """README's command that brings back what presenting changed (its "Presenting" section)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Presenting", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"`(git [^`]+)` brings back", " ".join(text.split()))
    assert len(found) == 1, f"README's Presenting section names no one restore command: {found}"
    return found[0]


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live")
    paths = [p for name in NOTEBOOKS for p in (f"notebooks/{name}.ipynb", f"py_src/{name}.py", f"notebooks/{name}.css")]
    checkout = checkout_copy(tmp, [*paths, "notebooks/rise.css"])
    (checkout / ".gitignore").write_text((ROOT / ".gitignore").read_text(encoding="utf-8"))  # .venv, checkpoints
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qm", "as stored")
    with running_lab(checkout, tmp) as port:
        yield port, checkout


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    yield context.new_page()
    context.close()


def known_upstream(message) -> bool:
    """RISE 0.43.1's own page: its bundled web components recurse on their design tokens as its
    hidden notebook toolbar's buttons mount (one RangeError each, on opening the slideshow,
    whatever the notebook; jupyterlab-rise's bundle, not this project's code or settings)."""
    return ("Maximum call stack size exceeded" in message.text
            and "/static/rise/" in (message.location or {}).get("url", ""))


PRESENT = "() => document.querySelector('.reveal .slides section.present[id^=\"slide-\"]')?.id"
# The slideshow's run of the core cells (jupyter/labextension/src/index.js): waiting, running, done, failed.
CORE_STATE = "() => document.body.dataset.lectureCore ?? null"
# What does not fit on the present slide: its height against the visible slide area (reveal.js
# clips at the .slides box), code lines and output lines wider than their box.
JS_FIT = r"""
() => {
  const slide = document.querySelector('.reveal .slides section.present[id^="slide-"]');
  const box = document.querySelector('.reveal .slides').getBoundingClientRect();
  const r = slide.getBoundingClientRect();
  const cut = [...slide.querySelectorAll('.jp-CodeCell .cm-scroller, .jp-OutputArea-output pre')]
    .filter(e => e.getClientRects().length && e.scrollWidth > e.clientWidth + 1)
    .map(e => (e.matches('pre') ? 'output: ' : 'code: ') + e.innerText.split('\n').find(l => l.length > 60)?.slice(0, 70));
  return {id: slide.id, height: Math.round(r.height), tall: r.height > Math.min(box.height, innerHeight) + 1 || r.top < box.top - 1
          || r.bottom > Math.min(box.bottom, innerHeight) + 1, cut};
}
"""
# The code cells of the present slide: their index among the slideshow's code cells.
JS_CODE_CELLS = r"""
() => { const all = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
        const slide = document.querySelector('.reveal .slides section.present[id^="slide-"]');
        return [...slide.querySelectorAll('.jp-CodeCell')].filter(c => c.getClientRects().length
                 && !c.classList.contains('jp-mod-noInput') && c.querySelector('.jp-InputPrompt')?.getClientRects().length)
               .map(c => all.indexOf(c)); }
"""


def present(page, port: int, name: str):
    """Open ``name`` in Lab, wait for its kernel, press Esc then Alt+R (README's steps), accept full
    screen; the slideshow's frame once reveal.js is ready and the core cells have run."""
    open_notebook(page, port, name)
    page.locator(".jp-NotebookPanel .jp-MarkdownCell").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+r")
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=60_000)
    for _ in range(600):
        frame = next((f for f in page.frames if "/rise/" in f.url), None)
        if frame is not None and frame.evaluate("() => !!document.querySelector('.reveal.ready')"):
            frame.wait_for_function(PRESENT, timeout=60_000)
            frame.wait_for_function(f"() => !['waiting', 'running'].includes(({CORE_STATE})())", timeout=600_000)
            assert frame.evaluate(CORE_STATE) == "done", f"{name}: a core cell failed in the slideshow's run"
            return frame
        page.wait_for_timeout(100)
    pytest.fail(f"{name}: no RISE slideshow opened")


def go_to(page, frame, target: str, slides: list[str]) -> None:
    """→ or ← until ``target`` is the present slide."""
    for _ in range(2 * len(slides)):
        now = frame.evaluate(PRESENT)
        if now == target:
            return
        page.keyboard.press("ArrowRight" if slides.index(now) < slides.index(target) else "ArrowLeft")
        with contextlib.suppress(PlaywrightTimeout):
            frame.wait_for_function(f"(before) => ({PRESENT})() !== before", arg=now, timeout=5_000)
    assert frame.evaluate(PRESENT) == target


def rerun(page, frame, index: int) -> dict:
    """Select the slideshow's code cell ``index``, press Shift+Enter, wait until it has run again;
    its output's text and the errors it shows."""
    cell = frame.locator(".jp-Notebook .jp-CodeCell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    prompt.click()
    page.keyboard.press("Shift+Enter")
    done = False
    for _ in range(1200):  # 10 minutes at most, a look every half second
        text = prompt.inner_text()
        if re.search(r"\[\d+\]", text) and text != before:
            done = True
            break
        page.wait_for_timeout(500)
    assert done, f"code cell {index} did not run again (prompt {prompt.inner_text()!r})"
    errors = cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    return {"output": cell.locator(".jp-OutputArea").inner_text(),
            "errors": [e for e in errors if re.search(r"Traceback|Error\b|error:", e)]}


def changed_beyond_outputs(checkout: Path, name: str) -> list[str]:
    """Each cell whose source or metadata differs from the committed notebook (outputs and
    execution counts may differ: they are this machine's)."""
    stored = nbformat.reads(git(checkout, "show", f"HEAD:notebooks/{name}.ipynb"), as_version=4)
    saved = nbformat.read(checkout / "notebooks" / f"{name}.ipynb", as_version=4)
    if len(saved.cells) != len(stored.cells):
        return [f"{len(stored.cells)} cells stored, {len(saved.cells)} saved"]
    return [f"cell {i} ({a.get('id')}): {key}" for i, (a, b) in enumerate(zip(stored.cells, saved.cells, strict=True))
            for key in ("cell_type", "source", "metadata") if a.get(key) != b.get(key)]


def save(page, frame, path: Path) -> None:
    """Ctrl+S in the slideshow (Lab saved the notebook before it presented), and wait for the file."""
    before = path.stat().st_mtime_ns
    frame.evaluate("() => document.querySelector('.jp-Notebook').focus()")
    page.keyboard.press("Control+s")
    for _ in range(60):
        if path.stat().st_mtime_ns != before:
            break
        page.wait_for_timeout(500)
    else:
        pytest.fail(f"Ctrl+S in the slideshow did not save {path.name}")
    page.wait_for_timeout(1000)  # jupytext writes the .py twin, if it writes one, just after


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_live_slide_reruns_fits_and_leaves_the_lesson_as_stored(lab, page, name):
    port, checkout = lab
    try:
        check_presenting(page, port, checkout, name)
    finally:  # the next notebook starts from the stored checkout, whatever this one left
        subprocess.run(restore_line(), shell=True, cwd=checkout, check=True)


def check_presenting(page, port: int, checkout: Path, name: str) -> None:
    console, failed = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text[:200]}")
            if m.type == "error" and not known_upstream(m) else None)
    page.on("requestfailed", lambda r: failed.append(f"{r.url[:120]}: {r.failure}")
            if "/api/" not in r.url and "rise/notebooks" not in r.url else None)
    frame = present(page, port, name)
    slides = frame.evaluate("() => [...document.querySelectorAll('.reveal .slides section[id^=\"slide-\"]')].map(s => s.id)")
    frame.locator(".reveal .slides section.present h1").first.click()  # focus the slideshow (its title slide)

    unfit, errors, ran = [], [], 0
    for target in reversed(slides):
        go_to(page, frame, target, slides)
        page.wait_for_timeout(300)
        fit = frame.evaluate(JS_FIT)
        unfit += [f"{target}: {'taller than the slide area: ' + str(fit['height']) + ' px' if fit['tall'] else ''} {fit['cut']}"
                  for _ in [0] if fit["tall"] or fit["cut"]]
        for index in frame.evaluate(JS_CODE_CELLS):
            result = rerun(page, frame, index)
            ran += 1
            errors += [f"{target}, code cell {index}: {e[:300]}" for e in result["errors"]]
            fit = frame.evaluate(JS_FIT)
            unfit += [f"{target} after its cell ran: {fit['height']} px {fit['cut']}" for _ in [0] if fit["tall"] or fit["cut"]]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"rise-{name}.png")
    save(page, frame, checkout / "notebooks" / f"{name}.ipynb")

    assert ran, f"{name}: no code cell on any slide"
    assert not errors, f"{name}: {len(errors)} cells failed when run again:\n" + "\n".join(errors)
    assert not unfit, f"{name}: {len(unfit)} slides do not fit at {WIDTH}x{HEIGHT}:\n" + "\n".join(unfit)
    assert not console, f"{name}: {len(console)} console errors, e.g. {console[:3]}"
    assert not failed, f"{name}: failed requests: {failed}"
    # a progress bar (08's training loops) is a text line redrawn while its cell runs, then cleared:
    # no bar is left frozen on a slide (tqdm's widget stayed as "training: 0%| | 0/5" in RISE)
    frozen = frame.evaluate(r"() => [...document.querySelectorAll('.jp-OutputArea')].map(o => o.innerText)"
                            r".filter(t => /\d+%\|/.test(t) || /Loading widget|Error displaying widget/.test(t))")
    assert not frozen, f"{name}: progress bars left on a slide: {frozen}"

    status = git(checkout, "status", "--porcelain").splitlines()
    assert status == [f" M notebooks/{name}.ipynb"], status  # nothing in py_src/, no new file
    assert changed_beyond_outputs(checkout, name) == []
    subprocess.run(restore_line(), shell=True, cwd=checkout, check=True)
    assert git(checkout, "status", "--porcelain") == ""

