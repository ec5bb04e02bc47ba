"""A student runs a notebook twice in one kernel (Run All again, or a cell again): nothing may
fail the second time (issue 29, item 5: notebook 06's check that torch.from_numpy warns on a
read-only memmap saw no warning the second time, since torch warns once per process). Each
notebook's twin runs twice in one namespace in a subprocess (tests/plant_claims.py --twice):
slow tests, `make test-slow`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMES = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split() if (ROOT / "notebooks.txt").exists() else \
    sorted(p.stem for p in (ROOT / "py_src").glob("[0-9][0-9]_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_notebook_runs_twice_in_one_kernel(name):
    env = {**os.environ, "LECTURE_DEVICE": "cpu", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "plant_claims.py"), "--twice",
                           str(ROOT / "py_src" / f"{name}.py")], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
