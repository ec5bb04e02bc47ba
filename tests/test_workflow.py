"""The CI workflow a fork runs (.github/workflows/ci.yml): what .ci/run runs, on the CPU build
of the pinned torch, with pip and npm caches; actionlint passes on it in `make lint`, and a
mistake planted in a copy fails `make lint` (issue 31)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
BIN = Path(sys.executable).parent  # this environment's actionlint and shellcheck

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(*args: str) -> subprocess.CompletedProcess:
    """A make target with this environment's tools; -o: never (re)install .venv from a test."""
    assert (BIN / "actionlint").exists(), f"no actionlint in {BIN}: run make setup"
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", f"BIN={BIN}", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _steps() -> list[dict]:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return [step for job in jobs.values() for step in job["steps"]]


def test_make_lint_runs_actionlint_over_the_workflow_first():
    dry = _make("-n", "lint")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    actionlint = next(i for i, line in enumerate(lines) if "/actionlint " in line)
    assert str(WORKFLOW.relative_to(ROOT)) in lines[actionlint]
    assert f"-shellcheck={BIN}/shellcheck" in lines[actionlint]  # the pinned one, not PATH's
    assert actionlint < next(i for i, line in enumerate(lines) if "ruff check" in line)


def test_the_workflow_passes_actionlint():
    run = _make("lint-workflows")
    assert run.returncode == 0, run.stdout + run.stderr


PLANTED = [  # (what a person might type, what actionlint says)
    (("python-version:", "python_version:"), 'input "python_version" is not defined'),
    (("runs-on: ubuntu-latest", "runs-on: ubuntu-lastest"), 'label "ubuntu-lastest" is unknown'),
    (("run: make test-slow", "run: make test-slow $(dirname $0)"), "SC2046"),  # shellcheck
]


@pytest.mark.parametrize("edit, message", PLANTED, ids=["action-input", "runner-label", "shellcheck"])
def test_a_planted_error_fails_make_lint(tmp_path, edit, message):
    text = WORKFLOW.read_text()
    assert edit[0] in text
    planted = tmp_path / "ci.yml"
    planted.write_text(text.replace(edit[0], edit[1], 1))
    clean = tmp_path / "clean.yml"
    clean.write_text(text)
    assert _make("lint-workflows", f"WORKFLOWS={clean}").returncode == 0  # the copy itself lints
    run = _make("lint", f"WORKFLOWS={planted}")
    assert run.returncode != 0 and message in run.stdout, run.stdout + run.stderr
    assert "ruff check" not in run.stdout  # make lint stopped at actionlint


def test_the_workflow_runs_what_ci_runs():
    ci_run = re.findall(r"^make ([a-z-]+)", (ROOT / ".ci" / "run").read_text(), re.M)
    assert {"lint", "test", "test-slow", "site-check"} <= set(ci_run)
    in_workflow = {target for step in _steps() for target in re.findall(r"\bmake ([a-z-]+)", step.get("run", ""))}
    assert set(ci_run) <= in_workflow, f".ci/run runs make {set(ci_run) - in_workflow}; the workflow does not"


def test_the_workflow_installs_the_cpu_torch_with_caches():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["env"]["PIP_EXTRA_INDEX_URL"].rstrip("/").endswith("/whl/cpu")
    jobs = workflow["jobs"]
    assert {job["runs-on"] for job in jobs.values()} == {"ubuntu-latest"}
    uses = {step["uses"].split("@")[0]: step.get("with", {}) for step in _steps() if "uses" in step}
    assert uses["actions/setup-python"] == {**uses["actions/setup-python"], "python-version": "3.11", "cache": "pip"}
    assert "constraints.txt" in uses["actions/setup-python"]["cache-dependency-path"]
    assert uses["actions/setup-node"]["cache"] == "npm"
    # the browser job runs on Debian (apt's chromium is a real browser there) with Python 3.11
    assert re.fullmatch(r"python:3\.11-bookworm", jobs["site-check"]["container"])
    assert "~/.cache/pip" in uses["actions/cache"]["path"]
