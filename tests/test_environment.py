"""pyproject.toml, constraints.txt and environment.yml must agree, so they cannot drift."""

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["dev"]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip().lstrip("- ").strip()
        if "==" in line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _constraints() -> dict[str, str]:
    return _pins((ROOT / "constraints.txt").read_text().splitlines())


def _environment_yml() -> tuple[str, dict[str, str], list[str]]:
    text = (ROOT / "environment.yml").read_text()
    python = re.search(r"^\s*-\s*python=(\S+)", text, re.M).group(1)
    pip_lines = text.split("- pip:", 1)[1].splitlines()
    return python, _pins(pip_lines), [ln.strip() for ln in pip_lines]


def test_every_dependency_is_pinned_within_its_declared_range():
    pins = _constraints()
    for name, req in _pyproject_requirements().items():
        assert name in pins, f"{name} is in pyproject.toml but not pinned in constraints.txt"
        assert req.specifier.contains(Version(pins[name])), f"{name}=={pins[name]} violates {req}"


def test_the_installed_torch_is_the_pinned_cpu_wheel():
    """The pin is the CPU wheel the machines have on disk (a newer one would pull a multi-GB CUDA
    build): what this environment imports is that version, and the declared range admits it."""
    import torch

    pin = _constraints()["torch"]
    assert torch.__version__.split("+")[0] == pin, (torch.__version__, pin)
    assert Version(pin) in _pyproject_requirements()["torch"].specifier


def test_environment_yml_pins_exactly_the_constraints():
    python, pins, lines = _environment_yml()
    constraints = _constraints()
    assert set(pins) == set(_pyproject_requirements()), "environment.yml must list every direct dependency"
    for name, version in pins.items():
        assert constraints[name] == version, f"{name}: environment.yml {version} != constraints {constraints[name]}"
    assert "- -e .[dev]" in lines


def test_python_versions_agree():
    python, _, _ = _environment_yml()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert python == "3.11"
    minimum = re.match(r">=(\d+\.\d+)", project["requires-python"]).group(1)
    assert Version(python) >= Version(minimum)
    assert "python3.11" in (ROOT / "Makefile").read_text()


def test_constraints_have_no_local_version_labels():
    # "+cpu" pins only install from one index; the bare version works everywhere.
    assert not [v for v in _constraints().values() if "+" in v]


def test_project_kernel_is_registered_in_this_environment():
    """`make setup` registers the kernel the notebooks name, inside .venv (not globally)."""
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                         check=True, capture_output=True, text=True).stdout
    specs = json.loads(out)["kernelspecs"]
    makefile = (ROOT / "Makefile").read_text()
    kernel = re.search(r"^KERNEL := (\S+)", makefile, re.M).group(1)
    assert kernel in specs, f"kernel {kernel!r} not registered; run make setup"
    assert Path(specs[kernel]["resource_dir"]).is_relative_to(Path(sys.prefix))
    for notebook in [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]:
        assert f'"name": "{kernel}"' in notebook.read_text(), f"{notebook.name} names another kernel"
