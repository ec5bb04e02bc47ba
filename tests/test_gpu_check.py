"""scripts/gpu_check.py: its cell runner (on the CPU) and its refusal without CUDA."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_check  # noqa: E402

NOTEBOOK = '''# ---
# jupyter:
#   kernelspec:
#     name: pytorch-resource-accounting
# ---

# %% [markdown]
# # A title

# %%
from lecture_utils import check
x = 2

# %% tags=["raises-exception"]
raise ValueError("deliberate")

# %%
from ipywidgets import IntSlider  # not on the GPU box
slider = IntSlider()

# %%
slider.value = 3

# %%
check("x", x + 1, 3)
print("[measured] time: 1 ms")
'''


def test_parse_cells_keeps_code_and_tags(tmp_path):
    path = tmp_path / "99_probe.py"
    path.write_text(NOTEBOOK)
    cells = gpu_check.parse_cells(path)
    assert len(cells) == 5
    assert cells[1]["tags"] == ["raises-exception"]
    assert cells[0]["source"].startswith("from lecture_utils import check")


def test_run_notebook_allows_deliberate_errors_and_skips_missing_packages(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # as if not installed
    path = tmp_path / "99_probe.py"
    path.write_text(NOTEBOOK)
    result = gpu_check.run_notebook(path, tmp_path)
    assert result["status"] == "ok", result
    assert (result["ran"], result["expected_errors"], result["checks"]) == (2, 1, 1)
    assert result["skipped"] == ["cell 3: needs ipywidgets", "cell 4: uses slider from a skipped cell"]
    assert result["measured"] == ["[measured] time: 1 ms"]
    assert "✓ x: 3" in (tmp_path / "99_probe.log").read_text()


def test_run_notebook_fails_on_a_real_error(tmp_path):
    path = tmp_path / "98_broken.py"
    path.write_text("# %%\nx = 1\n\n# %%\n1 / 0\n\n# %%\nprint('never')\n")
    result = gpu_check.run_notebook(path, tmp_path)
    assert result["status"] == "failed" and "ZeroDivisionError" in result["error"]
    assert result["ran"] == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_refuses_cleanly_without_cuda(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.count("\n") == 1 and "no CUDA device" in proc.stdout
    assert not (tmp_path / "report.json").exists()
