"""Every notebook starts with the same one-line setup cell; hosted Jupyter installs the wheel the README names."""

import re
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
SETUP = "from lecture_utils import setup; device = setup()"


def _first_code_cell(path: Path) -> str:
    return next(c.source for c in jupytext.read(path).cells if c.cell_type == "code")


def test_every_notebook_starts_with_the_one_line_setup_cell():
    cells = {p.name: _first_code_cell(p).strip() for p in NOTEBOOKS}
    assert len(cells) == 8 and set(cells.values()) == {SETUP}, cells


def test_the_readme_installs_the_wheel_that_make_wheel_builds():
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    wheel = f"pytorch_resource_accounting-{version}-py3-none-any.whl"
    assert f"%pip install {wheel}" in readme and f"make wheel   # dist/{wheel}" in readme
    assert "OWNER/REPO" not in readme and not re.search(r"OWNER/REPO", "".join(p.read_text() for p in NOTEBOOKS))
    assert "wheel:" in (ROOT / "Makefile").read_text()
