"""`make lab` end to end, headless: the real target starts, its server lists the
project kernel, exactly the eight notebooks (and zh/, their Chinese edition) and jupyterlab-rise;
in Chromium, Lab opens without the "official Jupyter news?" prompt and RISE shows a notebook's
first slide.
(That this kernel runs the notebooks is tested in test_scripts.py; that --allow-root is passed as
root and only then, in test_make_setup.py.)

One server for the module. `make lab` runs in its own process group, which the fixture kills
at the end after shutting down the kernels (they run in sessions of their own)."""

import json
import re
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from lab_server import KERNEL_READY, TOKEN, api, checkout_copy, open_notebook, running_lab  # noqa: E402, F401  (other Lab tests import them from here)

pytestmark = pytest.mark.site  # a real `make lab` server: make site-check (CI) runs these
ROOT = Path(__file__).resolve().parents[1]
KERNEL = re.search(r"^KERNEL := (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
NOTEBOOKS = sorted(f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split())
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "screenshots"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason=f"no {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with running_lab(ROOT, tmp_path_factory.mktemp("lab")) as port:
        yield port


def test_lab_lists_the_project_kernel_and_exactly_the_notebooks(lab):
    assert KERNEL in api(lab, "api/kernelspecs")["kernelspecs"]
    assert len(NOTEBOOKS) == 8
    # Lab opens in notebooks/ (the redirect from / is checked in the browser test): the eight
    # notebooks and zh/, their Chinese edition (make zh), which holds the same eight.
    listing = api(lab, "api/contents/notebooks")["content"]
    assert sorted((c["name"], c["type"]) for c in listing) == sorted(
        [(name, "notebook") for name in NOTEBOOKS] + [("zh", "directory")])
    chinese = api(lab, "api/contents/notebooks/zh")["content"]
    assert sorted((c["name"], c["type"]) for c in chinese) == [(name, "notebook") for name in NOTEBOOKS]


def test_lab_loads_jupyterlab_rise(lab):
    # The page config Lab's frontend boots from: the extensions it loads, and those disabled
    # (ours: the news prompt). The extension manager's API would ask PyPI for versions.
    request = urllib.request.Request(f"http://127.0.0.1:{lab}/lab",
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        html = response.read().decode()
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">'
                                  r"(.*?)</script>", html, re.S).group(1))
    assert "jupyterlab-rise" in {e["name"] for e in config["federated_extensions"]}
    assert not [d for d in config["disabledExtensions"] if d.startswith("jupyterlab-rise")]
    assert "@jupyterlab/apputils-extension:announcements" in config["disabledExtensions"]


@pytest.fixture(scope="module")
def chromium(browser):
    # pytest-playwright's browser (tests/conftest.py): the page checks share it, and a second
    # Playwright in the same process would refuse to start.
    # One context: the RISE page reuses the Lab page's cached scripts.
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    yield context
    context.close()


@needs_chromium
def test_lab_opens_in_the_notebooks_without_the_news_prompt(lab, chromium):
    page = chromium.new_page()
    page.goto(f"http://127.0.0.1:{lab}/?token={TOKEN}")
    page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
    assert page.url.endswith("/lab/tree/notebooks")
    # Without the project's page_config the prompt shows up within a second of the file
    # listing (a toast, and a count of 1 on the bell in the status bar); allow it three.
    page.wait_for_timeout(3000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "lab.png")
    assert sorted(page.locator(".jp-DirListing-itemText").all_inner_texts()) == sorted(NOTEBOOKS + ["zh"])
    assert page.locator(".Toastify__toast").all_inner_texts() == []
    page.close()


@needs_chromium
def test_rise_presents_a_notebook_with_the_project_kernel(lab, chromium):
    notebook = NOTEBOOKS[0]
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    title = next(line for cell in cells if cell["cell_type"] == "markdown"
                 for line in "".join(cell["source"]).splitlines() if line.startswith("# "))[2:]
    page = chromium.new_page()
    page.goto(f"http://127.0.0.1:{lab}/rise/notebooks/{notebook}?token={TOKEN}")
    slide = page.locator(".reveal.ready .slides section.present").first
    slide.wait_for(timeout=60_000)
    assert title in slide.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "rise.png")
    # Live slides: RISE started the notebook's own kernel, ready to execute cells. Lab creates a
    # session under a temporary name (notebooks/<uuid>) and renames it to the notebook a moment
    # later, so wait for the rename rather than read the list once.
    expected, deadline = [(f"notebooks/{notebook}", KERNEL)], time.monotonic() + 30
    while (found := [(s["path"], s["kernel"]["name"]) for s in api(lab, "api/sessions")]) != expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    page.close()
    assert found == expected
