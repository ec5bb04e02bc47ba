"""tests/nbval_sanitize.cfg: what nbval masks, parsed the way nbval parses it."""

import ast
import re
from pathlib import Path

import pytest

CFG = Path(__file__).with_name("nbval_sanitize.cfg")
ROOT = Path(__file__).resolve().parents[1]
TWINS = [ROOT / "py_src" / f"{name}.py" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]


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
    """A GPU-only block prints one skip line on the CPU and several lines on CUDA."""
    cpu = ("✓ predicted: 96\n"
           "[per-device] skipped on cpu: peak memory needs a CUDA GPU; published figures: docs/gpu/reference.md\n"
           "[measured] after: 3 ms\n")
    cuda = ("✓ predicted: 96\n[per-device] peak: 1.21 GB (1.12 GiB)\n"
            "[per-device] allocator overhead: 0 B\n[measured] after: 0.2 ms\n")
    assert sanitize(cpu) == sanitize(cuda) == "✓ predicted: 96\n[per-device] ...\n[measured] after: ...\n"


def test_measured_values_are_masked_but_labels_and_counts_are_compared():
    golden = "[measured] copy: 1.2 GB/s\n[measured] view: 3 µs\n"
    assert sanitize(golden) == sanitize("[measured] copy: 88 GB/s\n[measured] view: 0.1 µs\n")
    assert sanitize(golden) != sanitize("[measured] copy: 1.2 GB/s\n")  # a line went missing
    assert sanitize(golden) != sanitize("[measured] copy: 1.2 GB/s\n[measured] views: 3 µs\n")  # relabelled
    # a label made from a measured number would differ from run to run: it is not masked
    assert sanitize("[measured] 1.2 GB/s copy: x\n") != sanitize("[measured] 1.3 GB/s copy: x\n")


@pytest.mark.parametrize("line", ["device: cpu (2 threads)", "device: cuda:0 (NVIDIA H200)", "device: mps"])
def test_device_lines_are_masked(line):
    assert sanitize(line + "\n") == "device: ...\n"


@pytest.mark.parametrize("text", [
    "✓ bytes: 2415919104\nfp16 max 65504\n",
    "✓ the tensor is on the expected device: cpu\n",  # 'device:' inside a check line stays checked
    "✓ notes (measured) x: 3\n",
])
def test_checked_values_are_not_masked(text):
    assert sanitize(text) == text


def test_addresses_and_cell_paths_are_masked():
    text = "<Figure at 0x7f3a2c> /tmp/ipykernel_123/4567.py:8: UserWarning"
    assert sanitize(text) == "<Figure at 0xADDRESS> CELL:LINE: UserWarning"


def _cuda_only_blocks():
    """(notebook, line, block) for every ``if cuda_only(...):`` block in the .py twins."""
    for twin in TWINS:
        for node in ast.walk(ast.parse(twin.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Call)
                    and getattr(node.test.func, "id", None) == "cuda_only"):
                yield twin.name, node.lineno, node


def _calls(block: ast.If, name: str) -> list[ast.Call]:
    return [n for stmt in block.body for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name]


def test_gpu_only_blocks_print_only_per_device_lines():
    """On CUDA a block's output replaces the CPU's one skip line: it must fold the same way."""
    blocks = list(_cuda_only_blocks())
    assert len(blocks) >= 10
    wrong = []
    for name, _line, block in blocks:
        for call in _calls(block, "measured"):
            if not any(k.arg == "per_device" and getattr(k.value, "value", None) is True for k in call.keywords):
                wrong.append(f"{name}:{call.lineno} measured(...) without per_device=True")
        wrong += [f"{name}:{c.lineno} {f}() prints an unmasked line" for f in ("check", "print", "display")
                  for c in _calls(block, f)]
    assert wrong == []


def test_the_skip_line_points_to_the_published_gpu_figures(capsys):
    import torch

    from lecture_utils.device import GPU_REFERENCE, cuda_only

    assert cuda_only(torch.device("cpu"), "a GPU thing") is False
    out = capsys.readouterr().out
    assert out.startswith("[per-device] skipped on cpu: a GPU thing needs a CUDA GPU") and GPU_REFERENCE in out
    assert (Path(__file__).resolve().parents[1] / GPU_REFERENCE).is_file()


def test_the_trainers_peak_is_masked_with_where_it_came_from():
    """A CPU's nominal peak counts the cores the run uses (one under make test, every one in make regen)."""
    line = ("training tiny (1,155,712 params) on cpu x1, fp32, optimizer: lecture_utils.optim.AdamW; MFU against "
            "{} TFLOP/s per device (nominal: {} x 2.6 GHz x 64 FLOP/cycle (AVX512 fp32, 2 FMA pipes, assumed))\n")
    assert sanitize(line.format("0.3323", "2 cores")) == sanitize(line.format("0.1661", "1 core"))
    assert sanitize(line.format("0.3323", "2 cores")) != sanitize(line.replace("fp32,", "bf16,").format("1", "1 core"))
    zh = "训练 tiny（1,155,712 个参数），设备 cpu x1，fp32；MFU 的分母：每个设备 {} TFLOP/s（名义峰值：{}）\n"
    assert sanitize(zh.format("0.3323", "2 个核心")) == sanitize(zh.format("0.1661", "1 个核心"))


# Draws that make the model, the input or the data: on a GPU they would come from the CUDA generator
# and on a CPU from the CPU one, so every later draw (and the outputs printed from it) would differ.
DRAWS = {"randn", "rand", "randint", "randperm", "randn_like", "rand_like", "normal", "Cruncher", "Linear",
         "init_weight", "GPT"}


def _name(func) -> str | None:
    return getattr(func, "id", None) or getattr(func, "attr", None)


def _parameters(tree) -> dict[int, set[str]]:
    """Line -> the parameter names of the functions around it (``device`` there is a caller's choice)."""
    names: dict[int, set[str]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.Lambda)):
            args = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            for line in range(fn.lineno, fn.end_lineno + 1):
                names.setdefault(line, set()).update(args)
    return names


def test_outside_gpu_only_blocks_random_draws_come_from_the_cpu_generator():
    inside = {(name, line) for name, _, block in _cuda_only_blocks()
              for line in range(block.lineno, block.end_lineno + 1)}
    wrong = []
    for twin in TWINS:
        tree = ast.parse(twin.read_text(encoding="utf-8"))
        parameters = _parameters(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _name(node.func) in DRAWS) or (twin.name, node.lineno) in inside:
                continue
            device = next((k.value for k in node.keywords if k.arg == "device"), None)
            name = getattr(device, "id", None)
            on_cpu = (device is None or getattr(device, "value", None) == "cpu" or name == "CPU"
                      or name in parameters.get(node.lineno, ()))
            if not on_cpu:
                wrong.append(f"{twin.name}:{node.lineno} {_name(node.func)}(device=...)")
    assert wrong == [], "draw on the CPU, then .to(device): " + ", ".join(wrong)
