"""`make lab` end to end, headless: the real target starts, its server lists the
project kernel, exactly the eight notebooks (and zh/, their Chinese edition) and jupyterlab-rise;
in Chromium, Lab opens without the "official Jupyter news?" prompt and RISE shows a notebook's
first slide.
(That this kernel runs the notebooks is tested in test_scripts.py; that --allow-root is passed as
root and only then, in test_make_setup.py.)

One server for the module. `make lab` runs in its own process group, which the fixture kills
at the end after shutting down the kernels (they run in sessions of their own)."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.site  # a real `make lab` server: make site-check (CI) runs these
ROOT = Path(__file__).resolve().parents[1]
KERNEL = re.search(r"^KERNEL := (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
NOTEBOOKS = sorted(f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split())
TOKEN = "lecture-test-token"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "screenshots"
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason=f"no {CHROMIUM} (apt-get install chromium)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, method: str = "GET"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with running_lab(ROOT, tmp_path_factory.mktemp("lab")) as port:
        yield port


def checkout_copy(tmp: Path, paths: list[str]) -> Path:
    """A copy of the checkout under ``tmp`` that `make lab` runs in: the Makefile and its inputs,
    jupyter/, the files ``paths`` names (from the checkout root), and .venv linked. For the tests
    that run notebooks in Lab, which saves them (tests/test_presenting.py, test_sealed_answers.py)."""
    checkout = tmp / "checkout"
    for name in ["Makefile", "pyproject.toml", "constraints.txt", "notebooks.txt", "jupytext.toml", *paths]:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, checkout / name)  # copy2: the .venv stamp stays newer
    shutil.copytree(ROOT / "jupyter", checkout / "jupyter")
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    return checkout


@contextlib.contextmanager
def running_lab(checkout: Path, tmp: Path):
    """`make lab` run in ``checkout``, its state in ``tmp``; the server's port. Also used by
    tests/test_presenting.py, on a copy of the checkout."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    # Lab's per-user state goes to a temporary folder: a user who once answered the news
    # prompt must not make this test pass, and the test writes nothing into ~/.jupyter.
    env.update(JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    log = (tmp / "lab.log").open("w")
    proc = subprocess.Popen(
        ["make", "lab", f"LAB_ARGS=--no-browser --port {port} --ip=127.0.0.1 "
                        f"--IdentityProvider.token={TOKEN}"],
        cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Generous: a stale .venv stamp makes `make lab` reinstall first.
        deadline = time.monotonic() + 300
        while True:
            try:
                _get(port, "api/status")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("`make lab` did not start a server:\n"
                                + (tmp / "lab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield port
    finally:
        try:
            for kernel in _get(port, "api/kernels"):
                _get(port, f"api/kernels/{kernel['id']}", method="DELETE")
        except OSError:
            pass
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        deadline = time.monotonic() + 10  # the group's last members exit just after make
        while True:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail("`make lab` left processes running after SIGTERM")
            time.sleep(0.2)


def test_lab_lists_the_project_kernel_and_exactly_the_notebooks(lab):
    assert KERNEL in _get(lab, "api/kernelspecs")["kernelspecs"]
    assert len(NOTEBOOKS) == 8
    # Lab opens in notebooks/ (the redirect from / is checked in the browser test): the eight
    # notebooks and zh/, their Chinese edition (make zh), which holds the same eight.
    listing = _get(lab, "api/contents/notebooks")["content"]
    assert sorted((c["name"], c["type"]) for c in listing) == sorted(
        [(name, "notebook") for name in NOTEBOOKS] + [("zh", "directory")])
    chinese = _get(lab, "api/contents/notebooks/zh")["content"]
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
    while (found := [(s["path"], s["kernel"]["name"]) for s in _get(lab, "api/sessions")]) != expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    page.close()
    assert found == expected
