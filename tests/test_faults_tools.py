"""Faults of the second hostile sweep (issue 29) in the tools around the notebooks: a Lab copy of a
notebook, file names that are shell code, the targets that run the Chinese notebooks (the GPU
check's are in test_gpu_check.py, the exercises' in test_exercises.py, a half-made .venv in
test_faults_slow.py); and of the third (issue 38): a lesson cell that does not compile, `make site`
stopped by a signal."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import export_lessons  # noqa: E402

NAMES = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()


# --- items 4 and 10: the notebooks are named exactly; no file name on disk reaches the shell


def _fake_checkout(tmp_path: Path) -> Path:
    """The Makefile's world in tmp: its inputs, the notebooks (notebooks/zh/ too) and their twins, and a .venv
    whose programs only record each command they are given, one a line."""
    root = tmp_path / "checkout"
    (root / "notebooks" / "zh").mkdir(parents=True)
    (root / "py_src").mkdir()
    for name in ("pyproject.toml", "constraints.txt", "notebooks.txt"):
        shutil.copy2(ROOT / name, root / name)
    for name in NAMES:
        for path in (f"notebooks/{name}.ipynb", f"notebooks/zh/{name}.ipynb", f"py_src/{name}.py"):
            (root / path).write_text("{}")
    bin_ = root / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for program in ("python", "jupyter", "jupytext", "ruff"):
        (bin_ / program).write_text(f'#!/bin/sh\nprintf "%s\\n" "{program} $*" >> "{root}/argv.txt"\n')
        (bin_ / program).chmod(0o755)
    (root / ".venv" / ".installed").touch()  # newer than pyproject.toml and constraints.txt: set up
    return root


EN, ZH = ([f"notebooks/{edition}{name}.ipynb" for name in NAMES] for edition in ("", "zh/"))
I18N = "python scripts/i18n.py"


@pytest.mark.multiprocess
class TestMakeNamesTheNotebooksExactly:  # its own xdist unit (tests/conftest.py): it runs make
    @pytest.mark.parametrize(("target", "commands", "notebooks"), [
        ("slides", ["python scripts/build_slides.py"], EN), ("site", ["python scripts/build_site.py"], EN),
        ("nbval", ["python -m pytest"], EN), ("test", ["python -m pytest"], EN + ZH), ("run", ["jupyter"] * 8, EN),
        ("i18n", [f"{I18N} extract"], []), ("zh", [f"{I18N} build", "jupyter"], ZH),
        ("regen", ["python scripts/export_lessons.py", "jupytext", "jupyter", "python scripts/figure_alt.py",
                   "jupytext", f"{I18N} extract", f"{I18N} build {' '.join(NAMES)}", "jupyter"], EN + EN + ZH),
    ])  # the Chinese notebooks: make test runs them, make zh and make regen build and run them, no other target
    def test_a_target_runs_exactly_its_notebooks_and_no_file_name_runs_as_shell_code(self, tmp_path, target,
                                                                                      commands, notebooks):
        root = _fake_checkout(tmp_path)
        for odd in ("09_$(touch${IFS}PWNED).ipynb", "09 my notes.ipynb", "08_training_loop-Copy1.ipynb"):
            (root / "notebooks" / odd).write_text("{}")
            (root / "py_src" / odd.replace(".ipynb", ".py")).write_text("")
        make = subprocess.run(["make", "-s", "-f", str(ROOT / "Makefile"), "-C", str(root), target],
                              capture_output=True, text=True, timeout=60)
        assert make.returncode == 0 and not (root / "PWNED").exists(), make.stderr
        argv = (root / "argv.txt").read_text()
        assert "Copy1" not in argv and "my notes" not in argv and "PWNED" not in argv, argv
        assert re.findall(r"notebooks/\S+\.ipynb", argv) == notebooks
        lines = argv.splitlines()
        assert len(lines) == len(commands) and all(map(str.startswith, lines, commands)), lines


def _toy(tmp_path: Path, names: list[str]) -> Path:
    (tmp_path / "py_src").mkdir()
    (tmp_path / "lecture_utils").mkdir()
    (tmp_path / "lecture_utils" / "toy.py").write_text('"""Toy."""\n')
    (tmp_path / "notebooks.txt").write_text("01_toy\n" + "".join(f"{n}\n" for n in names))
    cell = "# %%\n# @save lecture_utils/toy.py\ndef cosine(x):\n    return {}\n"
    (tmp_path / "py_src" / "01_toy.py").write_text(cell.format("0.5"))
    (tmp_path / "py_src" / "01_toy-Copy1.py").write_text(cell.format("0.25"))  # Lab's Duplicate, paired
    (tmp_path / "py_src" / "02_toy.py").write_text(cell.format("0.75"))
    return tmp_path


def test_a_lab_copy_of_a_notebook_is_not_a_source_of_lesson_code(tmp_path):
    root = _toy(tmp_path, [])
    assert export_lessons.export(root) == ["lecture_utils/toy.py"]
    text = (root / "lecture_utils" / "toy.py").read_text()
    assert "return 0.5" in text and "0.25" not in text and "Copy1" not in text
    assert export_lessons.stale(root) == []


def test_two_notebooks_exporting_one_lesson_are_refused(tmp_path, capsys):
    root = _toy(tmp_path, ["02_toy"])
    before = (root / "lecture_utils" / "toy.py").read_text()
    with pytest.raises(SystemExit) as exit_:
        export_lessons.export(root)
    assert str(exit_.value) == ("export: lecture_utils/toy.py: cosine is exported by py_src/01_toy.py and "
                                "py_src/02_toy.py: a lesson has one source; keep it in one notebook; nothing was "
                                "exported")
    assert (root / "lecture_utils" / "toy.py").read_text() == before
    assert export_lessons.stale(root)[0].startswith("lecture_utils/toy.py: cosine is exported by ")


def test_notebooks_txt_names_the_eight_notebooks_and_their_twins():
    assert len(NAMES) == 8 == len(set(NAMES))
    assert all(name[:2].isdigit() and name[2] == "_" and name.replace("_", "").isalnum() for name in NAMES)
    assert all((ROOT / "notebooks" / f"{n}.ipynb").is_file() and (ROOT / "py_src" / f"{n}.py").is_file()
               for n in NAMES)
    # nothing else finds the notebooks or their twins by a pattern a copy would match
    sources = [*ROOT.glob("scripts/*.py"), *ROOT.glob("tests/*.py"), ROOT / "Makefile"]
    pattern = re.compile(re.escape("[0-9]" * 2 + "_*.") + r"(ipynb|py)\b")  # (spelled so this file does not match)
    assert [p.name for p in sources if pattern.search(p.read_text(encoding="utf-8"))] == []
    assert pattern.search('sorted((ROOT / "py_src").glob("' + "[0-9]" * 2 + '_*.py"))')  # as it was


# (item 6, a .venv left half-made by a killed `make setup`: test_faults_slow.py)


# --- issue 38: a lesson cell that does not compile is refused; make site cleans up on a signal


def test_a_lesson_cell_that_does_not_compile_is_refused_naming_the_notebook_and_the_line(tmp_path, capsys):
    """X01: the syntax error went into the package (every import failed after it), exit 0."""
    root = _toy(tmp_path, [])
    twin = root / "py_src" / "01_toy.py"
    twin.write_text("# %% [markdown]\n# A lesson.\n\n" + twin.read_text().replace("return 0.5", "return (0.5"))
    (root / "notebooks.txt").write_text("01_toy\n02_late\n")  # a later notebook whose lesson is fine
    (root / "py_src" / "02_late.py").write_text("# %%\n# @save lecture_utils/late.py\ndef late():\n    return 1\n")
    (root / "lecture_utils" / "late.py").write_text('"""Late."""\n')
    before = {p.name: p.read_text() for p in (root / "lecture_utils").iterdir()}
    message = ("export: py_src/01_toy.py, line 7: a `# @save` lesson cell does not compile ('(' was never closed); "
               "nothing was exported")
    for run in (lambda: export_lessons.main(["--root", str(root)]), lambda: export_lessons.stale(root)):
        with pytest.raises(SystemExit) as exit_:
            run()
        assert str(exit_.value) == message
    assert {p.name: p.read_text() for p in (root / "lecture_utils").iterdir()} == before  # nothing written
    assert twin.read_text().splitlines()[6] == "    return (0.5"  # line 7, as named


def test_make_site_stopped_by_a_signal_removes_its_temporary_folder(tmp_path, capsys, monkeypatch):
    """S02: each SIGTERM left a 12 MB site-src-* folder in the temporary directory."""
    import build_site  # (scripts/ is on the path: see export_lessons above)

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where TemporaryDirectory makes site-src-*
    seen = []

    def sphinx(argv):  # Sphinx at work in the temporary folder when the signal comes
        seen.extend(tmp_path.glob("site-src-*/src"))
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs here, at once
        return 0

    monkeypatch.setattr(build_site, "prepare_source", lambda notebooks, src, readme, edition: src.mkdir())
    monkeypatch.setattr(build_site, "build_main", sphinx)

    def unhandled(signum, frame):  # what build_site would leave to the default action: the end, no clean-up
        raise AssertionError("build_site did not handle SIGTERM")

    before = signal.signal(signal.SIGTERM, unhandled)  # (so that a failure here does not end pytest itself)
    started = time.monotonic()
    try:
        assert build_site.main(["--out", str(tmp_path / "site")]) == 143
        assert signal.getsignal(signal.SIGTERM) is unhandled  # its own handler is gone again
    finally:
        signal.signal(signal.SIGTERM, before)
    assert time.monotonic() - started < 4 and len(seen) == 1 and list(tmp_path.glob("site-src-*")) == []
    assert capsys.readouterr().err == "build_site: stopped by SIGTERM; nothing is left in the temporary folder\n"
