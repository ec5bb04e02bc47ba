"""tests/nbval_sanitize.cfg: what nbval masks, parsed the way nbval parses it."""

import re
from pathlib import Path

import pytest

CFG = Path(__file__).with_name("nbval_sanitize.cfg")


def _rules() -> list[tuple[str, str]]:
    # nbval's format: [section] then "regex: ..." and "replace: ..." on adjacent lines.
    rules = re.findall(r"^regex: (.+)\nreplace: (.*)$", CFG.read_text(), re.M)
    assert len(rules) == CFG.read_text().count("regex:"), "a rule nbval would silently drop"
    return rules


def sanitize(text: str) -> str:
    for pattern, replacement in _rules():
        text = re.sub(pattern, replacement, text)
    return text


def test_gpu_cell_goldens_match_between_cpu_and_cuda():
    cpu = "✓ predicted: 96\n[measured] skipped on cpu: peak memory needs a CUDA GPU\n"
    cuda = ("✓ predicted: 96\n[measured] peak: 1.21 GB (1.12 GiB)\n"
            "[measured] allocator overhead: 0 B\n")
    assert sanitize(cpu) == sanitize(cuda) == "✓ predicted: 96\n[measured] ...\n"


@pytest.mark.parametrize("line", ["device: cpu (2 threads)", "device: cuda:0 (NVIDIA H200)", "device: mps"])
def test_device_lines_are_masked(line):
    assert sanitize(line + "\n") == "device: ...\n"


def test_checked_values_are_not_masked():
    text = "✓ bytes: 2415919104\nfp16 max 65504\n"
    assert sanitize(text) == text


def test_addresses_and_cell_paths_are_masked():
    text = "<Figure at 0x7f3a2c> /tmp/ipykernel_123/4567.py:8: UserWarning"
    assert sanitize(text) == "<Figure at 0xADDRESS> CELL:LINE: UserWarning"
