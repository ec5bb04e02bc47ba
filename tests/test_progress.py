"""lecture_utils.progress: a bar while a long cell runs in a live kernel, nothing in the outputs
that make test, make nbval, make run and make regen compare or store (issue 28, §5)."""

import importlib.util
import os
import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from lecture_utils.progress import PROGRESS_ENV_VAR, progress

ROOT = Path(__file__).resolve().parents[1]


def test_off_it_returns_the_iterable_itself_and_draws_nothing(monkeypatch, capsys):
    monkeypatch.setenv(PROGRESS_ENV_VAR, "0")
    steps = range(5)
    assert progress(steps, desc="training") is steps
    assert capsys.readouterr() == ("", "")


def test_on_it_yields_every_item_and_draws_no_text_bar_into_a_pipe(monkeypatch, capsys):
    monkeypatch.setenv(PROGRESS_ENV_VAR, "1")
    assert list(progress(iter("abc"), total=3, desc="x")) == ["a", "b", "c"]
    assert capsys.readouterr() == ("", "")  # pytest's stderr is no terminal: tqdm stays silent


def test_a_value_other_than_0_or_1_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV_VAR, "off")
    with pytest.raises(ValueError, match=r"LECTURE_PROGRESS 'off'.*valid: 0, 1"):
        progress(range(3))


def test_every_command_that_records_or_compares_outputs_turns_bars_off(monkeypatch):
    """make run and make regen (EXECUTE) say so; make test, make nbval and plain pytest get
    it from the root conftest.py, whose value the kernels nbval starts inherit."""
    execute = re.search(r"^EXECUTE := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert f"{PROGRESS_ENV_VAR}=0" in execute.split()
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    for preset, expected in [(None, "0"), ("1", "1")]:  # a caller's own value wins
        if preset is None:
            monkeypatch.delenv(PROGRESS_ENV_VAR, raising=False)
        else:
            monkeypatch.setenv(PROGRESS_ENV_VAR, preset)
        conftest.pytest_configure(SimpleNamespace(option=SimpleNamespace()))
        assert os.environ[PROGRESS_ENV_VAR] == expected


def test_a_kernel_shows_the_bar_only_when_bars_are_on(monkeypatch):
    """One kernel, started as nbval starts one under this conftest (LECTURE_PROGRESS=0): the
    loop stores no output at all; switched on, the same loop draws tqdm's text bar, a line that
    redraws itself (\\r: Lab and RISE update it in place, no widget needed), and clears it when
    done (leave=False)."""
    monkeypatch.setenv(PROGRESS_ENV_VAR, "0")
    loop = ("from lecture_utils.progress import progress\n"
            "total = sum(step for step in progress(range(50), desc='training'))\n"
            "assert total == 1225")
    nb = new_notebook(cells=[new_code_cell(loop),
                             new_code_cell(f"import os\nos.environ['{PROGRESS_ENV_VAR}'] = '1'"),
                             new_code_cell(loop)])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    off, _, on = (cell.outputs for cell in nb.cells)
    assert off == []
    assert {(out.output_type, out.name) for out in on} == {("stream", "stdout")}
    drawn = "".join(out.text for out in on).split("\r")
    assert any(re.match(r"training: +\d+%\|.*\| \d+/50 ", line) for line in drawn), drawn
    assert drawn[-1].strip() == ""  # cleared when done
    assert nbformat.validate(nb) is None
