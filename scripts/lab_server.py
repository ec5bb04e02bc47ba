"""`make lab` as a headless server, for the browser tests (tests/test_lab.py and the tests that
import it) and benchmarks/alt_r.py: a copy of the checkout to run it in (presenting and Run All
save notebooks), the server in its own process group with Lab's per-user state in a temporary
folder, and a call to its REST API. Not a command: imported with ``scripts/`` on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "lecture-test-token"
# A notebook open in Lab with its kernel started and idle (the status bar's Idle). The execution
# indicator alone says idle before there is a kernel ("No Kernel"): an Alt+R then runs nothing,
# and a slide's cell meets a fresh kernel (NameError).
KERNEL_READY = """() => document.querySelector('.jp-NotebookPanel .jp-Toolbar-kernelName')
    ?.innerText.includes('pytorch-resource-accounting')
    && document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle'"""


def checkout_copy(tmp: Path, paths: list[str]) -> Path:
    """A copy of the checkout under ``tmp`` that `make lab` runs in: the Makefile and its inputs,
    jupyter/, the files ``paths`` names (from the checkout root), and .venv linked."""
    checkout = tmp / "checkout"
    for name in ["Makefile", "pyproject.toml", "constraints.txt", "notebooks.txt", "jupytext.toml", *paths]:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, checkout / name)  # copy2: the .venv stamp stays newer than its inputs
    shutil.copytree(ROOT / "jupyter", checkout / "jupyter")
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    return checkout


def api(port: int, path: str, method: str = "GET"):
    """The server's answer to ``method path``, as JSON (None for an empty one)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def open_notebook(page, port: int, name: str, reset: bool = True) -> None:
    """Open notebooks/``name``.ipynb in Lab in a Playwright ``page`` (``reset``: in Lab's default
    layout) and wait until its kernel is idle."""
    page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{name}.ipynb?{'reset&' if reset else ''}token={TOKEN}")
    page.wait_for_function(KERNEL_READY, timeout=120_000)


@contextlib.contextmanager
def running_lab(checkout: Path, tmp: Path):
    """`make lab` run in ``checkout``, its state and log in ``tmp``; yields the server's port.
    On leaving: its kernels shut down, then its process group ended (RuntimeError if it lingers)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    # Lab's per-user state goes to a temporary folder: a user who once answered the news
    # prompt must not change what a test sees, and nothing is written into ~/.jupyter.
    env.update(JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    with (tmp / "lab.log").open("w") as log:
        proc = subprocess.Popen(["make", "lab", f"LAB_ARGS=--no-browser --port {port} --ip=127.0.0.1 "
                                                f"--IdentityProvider.token={TOKEN}"],
                                cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 300  # generous: a stale .venv stamp makes `make lab` reinstall first
            while True:
                try:
                    api(port, "api/status")
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("`make lab` did not start a server:\n"
                                           + (tmp / "lab.log").read_text()[-3000:]) from None
                    time.sleep(0.3)
            yield port
        finally:
            with contextlib.suppress(OSError):  # kernels run in sessions of their own: end them first
                for kernel in api(port, "api/kernels"):
                    api(port, f"api/kernels/{kernel['id']}", method="DELETE")
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            deadline = time.monotonic() + 10  # the group's last members exit just after make
            while True:
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                if time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL)
                    raise RuntimeError("`make lab` left processes running after SIGTERM")
                time.sleep(0.2)
