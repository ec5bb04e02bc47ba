"""`make run` and `make regen`: the Makefile's nbconvert and jupytext calls, on toy notebooks."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
# Each starts make, Jupyter kernels and jupytext (seconds apiece): they run in `make test-slow`.
pytestmark = pytest.mark.slow


def make(folder: Path, target: str) -> subprocess.CompletedProcess:
    """The repository's Makefile run in ``folder`` with this Python's tools. ``-o`` skips the
    setup (.venv is here already) and, before `regen`, the export into the real package."""
    env = {k: v for k, v in os.environ.items() if k != "LECTURE_DEVICE"}
    return subprocess.run(["make", "-f", str(ROOT / "Makefile"), "-C", str(folder),
                           f"BIN={Path(sys.executable).parent}", "-o", ".venv/.installed",
                           "-o", "export", target],
                          capture_output=True, text=True, env=env, timeout=300)


def test_run_writes_html_for_each_notebook_then_fails_if_one_failed(tmp_path):
    (tmp_path / "notebooks").mkdir()
    probe = tmp_path / "notebooks" / "99_probe.ipynb"
    nbformat.write(new_notebook(cells=[
        new_code_cell("print('two:', 1 + 1)"),
        new_code_cell("raise ValueError('on purpose')", metadata={"tags": ["raises-exception"]}),
    ]), probe)
    nbformat.write(new_notebook(cells=[new_code_cell("1 / 0")]),
                   tmp_path / "notebooks" / "98_broken.ipynb")  # runs first
    (tmp_path / "notebooks.txt").write_text("98_broken\n99_probe\n")  # the notebooks, named exactly
    result = make(tmp_path, "run")
    assert result.returncode != 0 and "failed: notebooks/98_broken.ipynb" in result.stdout
    html = (tmp_path / "build" / "99_probe.html").read_text()  # the failure did not stop the run
    assert "two: 2" in html and "on purpose" in html
    assert nbformat.read(probe, as_version=4).cells[0].outputs == []  # notebooks/ left untouched


def test_regen_executes_each_pair_in_place_and_stops_at_a_failing_cell(tmp_path):
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    (tmp_path / "py_src").mkdir()
    (tmp_path / "notebooks").mkdir()
    code = ["import os\nprint(os.environ['LECTURE_DEVICE'], os.path.basename(os.getcwd()))",
            "import ipywidgets\nipywidgets.IntSlider()"]
    ipynb = tmp_path / "notebooks" / "98_probe.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("# before an edit", id=f"cell-{i}")
                                       for i in range(2)]), ipynb)
    (tmp_path / "py_src" / "98_probe.py").write_text("# %%\n" + "\n\n# %%\n".join(code) + "\n")
    (tmp_path / "py_src" / "99_broken.py").write_text("# %%\n1 / 0\n")  # a new twin, runs second
    (tmp_path / "notebooks.txt").write_text("98_probe\n99_broken\n")  # the notebooks, named exactly
    result = make(tmp_path, "regen")
    assert result.returncode != 0 and "ZeroDivisionError" in result.stderr
    assert (tmp_path / "notebooks" / "99_broken.ipynb").exists()  # a new twin gets its notebook
    nb = nbformat.read(ipynb, as_version=4)
    assert [cell.source for cell in nb.cells] == code  # the twin is the source...
    assert [cell.id for cell in nb.cells] == ["cell-0", "cell-1"]  # ...the ids stay: no noisy diffs
    assert nb.cells[0].outputs[0].text == "cpu notebooks\n"  # on the CPU, from notebooks/
    assert [cell.execution_count for cell in nb.cells] == [1, 2]
    # Nothing that changes from run to run without a change in the notebook:
    assert "widgets" not in nb.metadata and "formats" not in nb.metadata.get("jupytext", {})
    assert not any("execution" in cell.metadata for cell in nb.cells)  # per-cell timing
