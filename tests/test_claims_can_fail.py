"""The claim checks that an expert reading found weak or void (issue 27: S5, S6, S15, S17, S30,
S35, S39) can fail: under every cell tagged with one of them, each check is planted with a wrong
value and must raise (tests/plant_claims.py). The notebooks run in a subprocess, so these are
slow tests (`make test-slow`); the runner itself is checked on a toy twin in `make test`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "plant_claims.py"
WEAK = {  # notebook -> the weak or void claims tagged there
    "01_tensors_and_strides": ["S39"],
    "02_dtypes_and_memory": ["S5", "S6", "S39"],
    "03_flops_and_mfu": ["S15", "S17", "S39"],
    "04_autograd": ["S39"],
    "06_data_loading": ["S30"],  # its checks run on a CUDA GPU only
    "08_training_loop": ["S6", "S35"],
}


def planted(twin: Path, claims: list[str], device: str = "cpu") -> list[dict]:
    env = {**os.environ, "LECTURE_DEVICE": device, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(RUNNER), str(twin), *[f"claim-{c}" for c in claims]],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("PLANTED "))
    return json.loads(line.removeprefix("PLANTED "))


def test_the_runner_tells_a_check_that_can_fail_from_one_that_cannot(tmp_path):
    (tmp_path / "py_src").mkdir()
    (tmp_path / "notebooks").mkdir()
    twin = tmp_path / "py_src" / "99_toy.py"
    twin.write_text(
        "# %%\nfrom lecture_utils import check\n\n"
        '# %% tags=["claim-S1"]\ncheck("sum", 1 + 1, 2)\ncheck("raises", lambda: 1 / 0, raises=ZeroDivisionError)\n\n'
        '# %% tags=["claim-S2"]\nprint("not answered yet")  # like check_answer: it never raises\n\n'
        '# %% tags=["claim-S3"]\nx = 3\nassert x == 3\n\n'
        '# %% tags=["claim-S4"]\nassert True or x == 4  # holds whatever x is\n')
    results = {r["claims"][0]: r["planted_checks_failed"] for r in planted(twin, ["S1", "S2", "S3", "S4"])}
    assert results["claim-S1"] == [True, True]  # a wrong expected value, another error: both fail
    assert results["claim-S2"] == []            # nothing that can fail
    assert results["claim-S3"] == [True]        # the assert is reached and holds
    assert results["claim-S4"] == [True]        # negated, `not (True or ...)` fails: reached, at least


@pytest.mark.slow
@pytest.mark.parametrize("notebook", sorted(WEAK))
def test_every_check_under_a_weak_claim_fails_when_a_wrong_value_is_planted(notebook):
    claims = WEAK[notebook]
    device = "cpu"
    if claims == ["S30"]:
        if not torch.cuda.is_available():
            pytest.skip("S30's checks (pinned and pageable copies, a second stream) run on a CUDA GPU only")
        device = "cuda"
    results = planted(ROOT / "py_src" / f"{notebook}.py", claims, device)
    found = {c for r in results for c in r["claims"]}
    assert found == {f"claim-{c}" for c in claims}, f"claims without a tagged cell: {claims} vs {found}"
    for r in results:
        where = f"{notebook} cell {r['cell']} ({', '.join(r['claims'])}): {r['first_line']!r}"
        assert r["planted_checks_failed"], f"{where}: no check that could fail"
        assert all(r["planted_checks_failed"]), f"{where}: a planted wrong value passed {r['planted_checks_failed']}"
