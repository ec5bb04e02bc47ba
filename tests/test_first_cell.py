"""Every notebook starts with the same cell: setup() here, the one %pip line where the package is missing."""

import re
import subprocess
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _first_code_cell(path: Path) -> str:
    return next(c.source for c in jupytext.read(path).cells if c.cell_type == "code")


def test_every_notebook_starts_with_the_same_setup_cell():
    cells = {p.name: _first_code_cell(p) for p in NOTEBOOKS}
    assert len(cells) == 8
    assert len(set(cells.values())) == 1, cells
    assert next(iter(cells.values())).rstrip().endswith("device = setup()")


def test_without_the_package_the_cell_prints_the_pip_line_not_a_traceback():
    cell = _first_code_cell(NOTEBOOKS[0])
    # Block the import the way a fresh Colab runtime lacks it.
    code = "import sys; sys.modules['lecture_utils'] = None\n" + cell
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    assert "lecture_utils is not installed in this kernel" in proc.stderr
    pip_line = re.search(r'%pip install "[^"]+"', proc.stderr).group(0)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert pip_line in readme, "the notebooks and the README's Colab section give different %pip lines"
