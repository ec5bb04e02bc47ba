"""scripts/gpu_check.py: its cell runner (gpu_cells.py), its report (gpu_report.py), its arguments and a
report on a failing disk, in-process; the whole command rehearsed on the CPU: tests/test_gpu_rehearsal.py."""

import errno
import io
import json
import os
import signal
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_cells  # noqa: E402
import gpu_check  # noqa: E402
import gpu_report  # noqa: E402

from lecture_utils import files  # noqa: E402
from lecture_utils.files import write_text  # noqa: E402

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

# %% tags=["deeper"]
err = check("a deliberate error", lambda: int("x"), raises=ValueError)

# %%
from ipywidgets import IntSlider  # not on the GPU box
slider = IntSlider()

# %%
slider.value = 3

# %%
check("x", x + 1, 3)
print("[measured] time: 1 ms")
'''


def test_parse_cells_keeps_the_code_cells_in_order(tmp_path):
    path = tmp_path / "99_probe.py"
    path.write_text(NOTEBOOK)
    cells = gpu_cells.parse_cells(path)
    assert len(cells) == 5  # the markdown cell and the header are not code
    assert cells[0].startswith("from lecture_utils import check")
    assert cells[1].startswith("err = check(") and cells[4].startswith('check("x"')


def test_run_notebook_runs_checked_errors_and_skips_missing_packages(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # as if not installed
    path = tmp_path / "99_probe.py"
    path.write_text(NOTEBOOK)
    log = io.StringIO()
    result = gpu_cells.run_notebook(path, log)
    assert result["status"] == "passed", result
    assert (result["ran"], result["checks"]) == (3, 2)
    assert result["skipped"] == ["cell 3: needs ipywidgets", "cell 4: uses slider from a skipped cell"]
    assert result["measured"] == ["[measured] time: 1 ms"]
    assert "✓ x: 3" in log.getvalue()


def test_run_notebook_fails_on_a_real_error_and_skips_what_depends_on_it(tmp_path):
    path = tmp_path / "98_broken.py"
    path.write_text("# %%\nx = 1\n\n# %%\ny = 1 / 0\n\n# %%\nprint(y)\n\n# %%\nprint('independent', x)\n")
    log = io.StringIO()
    result = gpu_cells.run_notebook(path, log)
    assert result["status"] == "failed" and "ZeroDivisionError" in result["error"]
    assert result["ran"] == 2  # cells 1 and 4; cell 3 needs y from the failed cell
    assert result["skipped"] == ["cell 3: uses y from failed cell 2"]
    assert "independent 1" in log.getvalue()


def test_a_notebook_may_define_a_dataclass(tmp_path):
    """The cells run in a real module: dataclasses look their class's module up in sys.modules."""
    path = tmp_path / "96_dataclass.py"
    path.write_text("# %%\nfrom dataclasses import dataclass\n\n@dataclass\nclass P:\n    x: int\n\nprint(P(1))\n")
    log = io.StringIO()
    assert gpu_cells.run_notebook(path, log)["status"] == "passed" and "P(x=1)" in log.getvalue()


# A notebook whose GPU-only blocks run on a simulated CUDA device: cuda_only() only looks at
# device.type, so a torch.device("cuda") object passes the gate without touching a GPU.
GPU_NOTEBOOK = '''# %%
import torch
from lecture_utils import check, cuda_only, measured
device = torch.device("cuda")

# %%
if cuda_only(device, "a block that holds"):
    rate = 800.0
    measured("8192^3 bf16 matmul", rate, "TFLOP/s")
    assert rate > 100, rate
    check("two and two", 2 + 2, 4)

# %%
if cuda_only(device, "a block whose assert fails"):
    mfu = 0.5
    print("[per-device] MFU: 0.5")
    assert mfu >= 0.6, f"MFU {mfu:.2f} < 0.6"
    after = 1

# %%
if cuda_only(device, "a block that needs the failed one"):
    assert mfu + after > 0

# %%
if cuda_only(torch.device("cpu"), "a block gated off on this device"):
    assert False, "never runs"
'''


def gpu_run(tmp_path):
    path = tmp_path / "97_gpu.py"
    path.write_text(GPU_NOTEBOOK)
    return gpu_cells.run_notebook(path, io.StringIO())


def test_each_cuda_only_block_is_reported_by_name_with_its_checks(tmp_path):
    result = gpu_run(tmp_path)
    blocks = {b["what"]: b for b in result["blocks"]}
    assert list(blocks) == ["a block that holds", "a block whose assert fails",
                            "a block that needs the failed one", "a block gated off on this device"]
    held = blocks["a block that holds"]
    assert held["status"] == "passed"
    assert held["checks"] == ["assert rate > 100, rate"]  # a GPU block states its claims with assert
    assert held["measured"] == ["[measured] 8192^3 bf16 matmul: 800 TFLOP/s"]
    failed = blocks["a block whose assert fails"]
    assert failed["status"] == "failed"
    assert failed["message"] == "AssertionError: MFU 0.50 < 0.6"
    assert failed["statement"] == 'assert mfu >= 0.6, f"MFU {mfu:.2f} < 0.6"'
    assert failed["measured"] == ["[per-device] MFU: 0.5"]  # both prefixes are collected
    dependent = blocks["a block that needs the failed one"]
    assert (dependent["status"], dependent["reason"]) == ("skipped", "uses after from failed cell 3")
    gated = blocks["a block gated off on this device"]
    assert gated["status"] == "skipped" and "returned False" in gated["reason"]
    assert result["status"] == "failed" and result["error"].startswith("cell 3: AssertionError")
    assert "[per-device] MFU: 0.5" in result["measured"]


def fake_report(result):
    return {"gpu": "NVIDIA H200", "driver": "570.0", "cuda": "12.8", "torch": "2.7.0", "python": "3.12",
            "date": "2025-01-01 00:00 UTC", "command": "python3 scripts/gpu_check.py --out x", "verdict": "x",
            "seconds": 1.0, "deadline_s": 420.0,
            "stages": {"97_gpu": {"kind": "notebook", "status": "failed", "seconds": 1.0, "detail": result}}}


def test_the_summary_lists_every_block_with_its_status_and_failing_statement(tmp_path):
    text = gpu_report.summary_markdown(fake_report(gpu_run(tmp_path)))
    assert "- **passed**: 97_gpu, cell 2: a block that holds" in text
    assert "- **failed**: 97_gpu, cell 3: a block whose assert fails (AssertionError: MFU 0.50 < 0.6)" in text
    assert "  - failing statement: `assert mfu >= 0.6, f\"MFU {mfu:.2f} < 0.6\"`" in text
    assert "- **skipped**: 97_gpu, cell 4: a block that needs the failed one (uses after from failed cell 3)" in text
    assert "  - checks: `assert rate > 100, rate`" in text


def table_cells(text):
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| `")]


def test_the_reference_gets_its_measured_column_filled_and_keeps_the_published_ones(tmp_path):
    """A value printed with measured(..., ref=KEY) fills row KEY; a skipped block's rows say why."""
    result = gpu_run(tmp_path)
    result["blocks"][0]["measured"].append("[per-device] 8192^3 bf16 matmul: 800 TFLOP/s  [ref bf16-gemm-8192]")
    result["blocks"][1]["measured"].append("[per-device] MFU: 0.5  [ref gpt2-small-mfu]")
    result["blocks"].append({"what": "the CUDA autocast dtype list", "cell": 9, "checks": [], "measured": [],
                             "status": "skipped", "reason": "uses after from failed cell 3"})
    before = (ROOT / "docs" / "gpu" / "reference.md").read_text(encoding="utf-8")
    reference = tmp_path / "reference.md"
    reference.write_text(before)
    write_text(reference, gpu_report.fill_reference(before, fake_report(result)))
    after = reference.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".reference")] == []  # no temp left
    old, new = table_cells(before), table_cells(after)
    assert [r[:-1] for r in old] == [r[:-1] for r in new]  # every published cell unchanged
    measured = {r[0].strip("`"): r[-1] for r in new}
    assert measured["bf16-gemm-8192"] == "800 TFLOP/s (NVIDIA H200)"
    assert measured["gpt2-small-mfu"] == "0.5 (its block failed) (NVIDIA H200)"
    assert measured["autocast-dtypes"] == "not measured: skipped (uses after from failed cell 3) (NVIDIA H200)"
    assert measured["module-to-device"] == "not measured this run (NVIDIA H200)"
    assert measured["h100-sxm-bf16"] == {r[0].strip("`"): r[-1] for r in old}["h100-sxm-bf16"]  # a datasheet row
    assert "**Measured here:** NVIDIA H200, torch 2.7.0, CUDA 12.8, 2025-01-01 00:00 UTC" in after
    assert "not yet run on a GPU" in before and "**Measured here:** not yet run" not in after


# --- issue 29, item 13: the GPU check's report on a disk that fails


@pytest.fixture
def restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def _failing_writes(monkeypatch, after: int) -> list:
    calls, real = [], files.write_text

    def write_text(path, text):
        calls.append(path)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, text)

    monkeypatch.setattr(files, "write_text", write_text)
    return calls


def test_a_report_that_cannot_be_written_at_all_is_one_line_and_runs_nothing(tmp_path, capsys, monkeypatch,
                                                                               restore_signals):
    _failing_writes(monkeypatch, after=0)
    out = tmp_path / "gpu"
    code = gpu_check.main(["--device", "cpu", "--out", str(out), "--only", "01_tensors_and_strides"])
    printed = capsys.readouterr()
    assert code == 2 and printed.err == "" and printed.out == (
        f"gpu-check: cannot write the report in {out}: No space left on device [ENOSPC]; no stage was run\n")


def test_a_report_that_fails_after_a_stage_started_stops_the_check_in_one_line(tmp_path, capsys, monkeypatch,
                                                                                  restore_signals):
    calls = _failing_writes(monkeypatch, after=4)  # the first report is written; "running" is not
    out = tmp_path / "gpu"
    code = gpu_check.main(["--device", "cpu", "--out", str(out), "--only", "01_tensors_and_strides", "02_dtypes_and_memory"])
    printed = capsys.readouterr()
    assert code == 1 and printed.err == "" and len(calls) == 5
    lines = printed.out.splitlines()
    assert lines[0].split()[:2] == ["01_tensors_and_strides", "stopped"] and len(lines) == 2
    assert lines[-1].startswith("gpu-check: stopped: the report could not be written (No space left on device "
                                "[ENOSPC]): 1 stage(s) not started")
    assert lines[-1].endswith(f"the files in {out} are the report as last written whole (each file is replaced "
                              "in one step), not this verdict")
    report = json.loads((out / "report.json").read_text())  # the first report, whole
    assert {r["status"] for r in report["stages"].values()} == {"not started"}


# --- the arguments, refused in one line, before --out is made (issue 29, item 22); the whole command,
# rehearsed on the CPU as a process of its own: tests/test_gpu_rehearsal.py


@pytest.mark.parametrize(("args", "message"), [
    (["--deadline", "1e9"], "--deadline must be a number of seconds below 1e+06 (11.6 days), got 1e+09"),
    (["--grace", "nan"], "--grace must be a number of seconds, got nan"),
    (["--stage-limit", "-5"], "--stage-limit must be a number of seconds above 0, got -5"),
    (["--deadline", "0"], "--deadline must be a number of seconds above 0, got 0"),
    (["--only", "09_nope"], "no stage '09_nope'; valid: 01_tensors_and_strides, "),
    (["--reference", "{tmp}/nope.md"], "--reference {tmp}/nope.md is not a file; give docs/gpu/reference.md"),
    (["--out", "{tmp}"], "--out {tmp} holds notes.txt, which this check did not write; give a new or empty folder"),
])
def test_bad_arguments_are_one_line_and_exit_2_and_leave_everything_alone(tmp_path, capsys, args, message):
    (tmp_path / "notes.txt").write_text("mine")
    args = [arg.format(tmp=tmp_path) for arg in args]
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path / "gpu"), *args]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith(f"gpu-check: {message.format(tmp=tmp_path)}") and printed.count("\n") == 1, printed
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_refuses_cleanly_without_cuda(tmp_path, capsys, restore_signals):
    assert gpu_check.main(["--out", str(tmp_path / "r")]) == 1
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "no CUDA device" in printed and "--device cpu" in printed
    assert not (tmp_path / "r").exists()


def test_a_binary_reference_is_one_line_and_leaves_no_out_behind(tmp_path, capsys):
    reference = tmp_path / "reference.md"
    reference.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path / "gpu"), "--reference", str(reference)]) == 2
    assert capsys.readouterr().out == (f"gpu-check: --reference {reference} is not UTF-8 text (invalid start byte "
                                       "at byte 0); give docs/gpu/reference.md\n")
    assert not (tmp_path / "gpu").exists()


def test_the_classroom_benchmarks_are_not_gpu_stages():
    """run_all, make_test and alt_r need Jupyter, make and Chromium: the lent machine has none."""
    benchmarks = {name for name, (kind, _) in gpu_check.STAGES.items() if kind == "benchmark"}
    assert benchmarks == {"get_batch", "matmul_mfu", "train_mfu"}
