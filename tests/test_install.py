"""`pip install .` (not editable) works from any folder: the wheel carries the package, every
subpackage and the committed data, and `python -m lecture_utils.train` runs from it.

The wheel is built from a copy of the build inputs (so the checkout gets no build/ folder)
and unpacked into a temporary folder, which goes first on PYTHONPATH: a pure-Python wheel
unpacked is what pip installs. The venv's editable finder sits behind it on the import
path, so the test also checks that lecture_utils really came from the unpacked wheel.
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "lecture_utils", "data")
DATA_FILES = ["tokenizer.json", "tokens/train.bin", "tokens/train.json", "tokens/val.bin",
              "tokens/val.json"]


def _build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "corpus"))
        else:
            shutil.copy2(ROOT / name, src / name)
    # The dev extra pins setuptools, so the build runs offline in this venv.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp / "dist"), str(src)],
                   check=True, cwd=tmp, capture_output=True)
    (wheel,) = (tmp / "dist").glob("*.whl")
    return wheel


def test_a_wheel_install_trains_from_any_folder(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(p.parent.relative_to(ROOT).as_posix()
                      for p in (ROOT / "lecture_utils").rglob("__init__.py"))
    for package in packages:  # a subpackage left out of the wheel would fail only when installed
        assert f"{package}/__init__.py" in names, f"{package} is not in the wheel"
    for name in DATA_FILES:
        assert f"lecture_utils/_data/{name}" in names, f"{name} is not in the wheel"
        assert zipfile.ZipFile(wheel).read(f"lecture_utils/_data/{name}") == (ROOT / "data" / name).read_bytes()
    assert not any("corpus" in n for n in names)  # the corpus stays in the repository

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"  # outside the checkout: no data/ folder around
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LECTURE_DATA", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), LECTURE_DEVICE="cpu")

    # Where `-m lecture_utils.train` will import from (find_spec does not run the package).
    # From there data_dir() is lecture_utils/_data: the checkout's data/ is out of reach.
    origin = subprocess.run(
        [sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('lecture_utils').origin)"],
        cwd=work, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert origin == str(site / "lecture_utils" / "__init__.py"), origin

    run = subprocess.run([sys.executable, "-m", "lecture_utils.train", "--config", "tiny",
                          "--steps", "5", "--out", "runs/x"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (work / "runs" / "x" / "checkpoint.pt").is_file()
