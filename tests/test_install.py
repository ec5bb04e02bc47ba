"""`pip install .` (not editable) works from any folder: the wheel carries the package, every
subpackage and the committed data, and `python -m lecture_utils.train` runs from it; installed
into a fresh venv outside the checkout (the README's hosted-Jupyter path), it runs notebook 01.

The wheel is built once per module from a copy of the build inputs (so the checkout gets no
build/ folder). The first test unpacks it into a temporary folder, which goes first on
PYTHONPATH: a pure-Python wheel unpacked is what pip installs. The venv's editable finder sits
behind it on the import path, so the test also checks that lecture_utils really came from the
unpacked wheel.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a wheel built and installed, a fresh venv: make test-slow (CI) runs it
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_a_wheel_install_trains_from_any_folder(wheel, tmp_path):
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
                          "--steps", "5", "--out", "runs/x", "--peak-flops", "1e12"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (work / "runs" / "x" / "checkpoint.pt").is_file()


def test_a_fresh_venv_with_the_wheel_runs_notebook_01(wheel, tmp_path):
    # The venv holds the wheel and nothing else. Its dependencies (torch, ipykernel, nbclient)
    # come from this venv's site-packages through a .pth line, appended after the fresh venv's
    # own site-packages: that is offline and instant, and a .pth path line does not run the
    # .pth files in that folder, so the editable install of lecture_utils stays invisible.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --no-index: every dependency must already be there; the wheel itself downloads nothing.
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--no-index", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    subprocess.run([python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "wheel-venv"],
                   check=True, capture_output=True)

    work = tmp_path / "work"  # outside the checkout: no data/ folder, no lecture_utils/ around
    work.mkdir()
    notebook = work / "01_tensors_and_strides.ipynb"
    nb = json.loads((ROOT / "notebooks" / notebook.name).read_text())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": "import sys, lecture_utils\nfrom lecture_utils.data import data_dir\n"
                                  "print(sys.prefix, lecture_utils.__file__, data_dir(), sep='\\n')"})
    notebook.write_text(json.dumps(nb))
    # nbclient runs inside the fresh venv, so the kernel it starts is that venv's; a cell
    # that raises (other than one tagged raises-exception) fails the run.
    env = {k: v for k, v in os.environ.items() if k not in ("LECTURE_DATA", "PYTHONPATH")}
    env.update(LECTURE_DEVICE="cpu", OMP_NUM_THREADS="1")
    script = ("import sys, nbformat, nbclient; nb = nbformat.read(sys.argv[1], 4); "
              "nbclient.NotebookClient(nb, kernel_name='wheel-venv', timeout=120).execute(); "
              "nbformat.write(nb, sys.argv[1])")
    run = subprocess.run([python, "-c", script, str(notebook)], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]

    executed = json.loads(notebook.read_text())["cells"]
    code = [c for c in executed if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code)
    prefix, package, data = "".join(code[-1]["outputs"][0]["text"]).split()
    assert Path(prefix) == venv
    assert Path(package) == site / "lecture_utils" / "__init__.py"
    assert Path(data) == site / "lecture_utils" / "_data"
