"""`make lab` end to end, headless: the server starts and lists the project kernel and the
notebooks. (That this kernel runs the notebooks is tested in test_scripts.py.)"""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL = re.search(r"^KERNEL := (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
TOKEN = "lecture-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(port: int, path: str, method: str = "GET", body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/{path}", data=data, method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture
def lab_server():
    port = _free_port()
    # The same command `make lab` runs, plus headless flags.
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--notebook-dir=notebooks", f"--IdentityProvider.token={TOKEN}", "--allow-root"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _api(port, "status")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start within 60 s")
                time.sleep(0.3)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_lab_lists_the_project_kernel_and_the_notebooks(lab_server):
    specs = _api(lab_server, "kernelspecs")["kernelspecs"]
    assert KERNEL in specs
    names = {c["name"] for c in _api(lab_server, "contents")["content"]}
    assert {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")} <= names
