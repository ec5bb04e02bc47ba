"""The notebook tooling behind `make run` and `make regen`."""

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import nbtools  # noqa: E402
import run_notebooks  # noqa: E402


def test_count_checks_counts_only_check_lines():
    cell = new_code_cell("check(...)")
    cell.outputs = [new_output("stream", name="stdout", text="✓ a: 1\nnot a check ✓\n✓ b: 2\n"),
                    new_output("stream", name="stderr", text="✓ c: 3\n")]
    assert nbtools.count_checks(new_notebook(cells=[cell, new_code_cell("x = 1")])) == 3


def test_run_notebooks_executes_and_writes_html(tmp_path, capsys):
    nb = new_notebook(cells=[
        new_code_cell("from lecture_utils import check\ncheck('two', 1 + 1, 2)"),
        new_code_cell("raise ValueError('on purpose')", metadata={"tags": ["raises-exception"]}),
    ])
    nb.metadata["kernelspec"] = {"name": nbtools.KERNEL, "display_name": "x", "language": "python"}
    path = tmp_path / "99_probe.ipynb"
    nbformat.write(nb, path)
    assert run_notebooks.main([str(path), "--out", str(tmp_path / "build")]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:3] == ["99_probe.ipynb", "2", "1"]  # cells, checks
    html = (tmp_path / "build" / "99_probe.html").read_text()
    assert "✓ two: 2" in html and "on purpose" in html
    assert nbformat.read(path, as_version=4).cells[0].outputs == []  # source left untouched


def test_run_notebooks_fails_on_an_unexpected_error(tmp_path, capsys):
    nb = new_notebook(cells=[new_code_cell("1 / 0")])
    nb.metadata["kernelspec"] = {"name": nbtools.KERNEL, "display_name": "x", "language": "python"}
    path = tmp_path / "98_broken.ipynb"
    nbformat.write(nb, path)
    assert run_notebooks.main([str(path), "--out", str(tmp_path)]) == 1
    assert "FAILED" in capsys.readouterr().out
