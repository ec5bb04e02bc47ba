"""benchmarks/_targets.py: targets read from docs/gpu/reference.md; met / missed / gross regression."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _targets  # noqa: E402


def test_every_target_row_parses_names_a_benchmark_that_reports_it_and_has_a_source():
    targets = _targets.load()
    assert set(targets) == {"bf16-gemm-mfu", "h2d-pinned-gbps", "get-batch-vs-notes", "get-batch-vs-bound",
                            "get-batch-vs-plain", "trainer-overhead", "gpt2-small-train-mfu", "run-all-seconds",
                            "make-test-import-times", "alt-r-first-slide-seconds"}
    for key, t in targets.items():
        source = (ROOT / "benchmarks" / t.benchmark).read_text(encoding="utf-8")
        assert f'"{key}"' in source, (key, t.benchmark)
        assert t.op in (">=", "<=") and t.value > 0 and t.source and t.applies, key
    assert targets["bf16-gemm-mfu"].applies == ("H100 SXM", "H100 PCIe", "H200")
    assert (targets["bf16-gemm-mfu"].op, targets["bf16-gemm-mfu"].value) == (">=", 0.75)


@pytest.mark.parametrize(("key", "figure", "machine", "verdict", "ok"), [
    ("bf16-gemm-mfu", 0.78, "H200", "met", True),  # inside the published range: met
    ("bf16-gemm-mfu", 0.70, "H200", "missed", True),  # missed, and still not an error
    ("bf16-gemm-mfu", 0.30, "H200", "missed: a gross regression (worse than half the target)", False),
    ("bf16-gemm-mfu", 0.30, "cpu", "no target on cpu (it applies to H100 SXM, H100 PCIe, H200)", True),
    ("get-batch-vs-bound", 1.4, "cpu", "met", True),  # a "<=" target
    ("get-batch-vs-bound", 2.9, "cpu", "missed", True),
    ("get-batch-vs-bound", 3.1, "cpu", "missed: a gross regression (worse than half the target)", False),
])
def test_report_says_met_or_missed_and_fails_only_a_gross_regression(capsys, key, figure, machine, verdict, ok):
    assert _targets.report(key, figure, machine, " units") is ok
    line = capsys.readouterr().out
    assert line.startswith(f"target {key}: {figure:#.3g} units; ") and line.count("\n") == 1
    assert line.rstrip().endswith(verdict), line


def test_a_malformed_target_is_an_error_naming_it(tmp_path):
    bad = tmp_path / "reference.md"
    bad.write_text("## Benchmark targets\n\n| key | benchmark | figure | target | applies to | source |\n"
                   "| --- | --- | --- | --- | --- | --- |\n| `x` | `b.py` | f | at least 3 | any | s |\n")
    with pytest.raises(ValueError, match=r"target `x` is 'at least 3'; write '>= N' or '<= N'"):
        _targets.load(bad)


@pytest.mark.slow  # a real benchmark in a fresh process: make test-slow (CI)
def test_a_benchmark_prints_its_figure_peak_ratio_and_target_and_exits_0_off_target():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "matmul_mfu.py"), "--quick", "--sizes", "64",
                           "128"], capture_output=True, text=True, env={"LECTURE_DEVICE": "cpu", "PATH": ""},
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].split() == ["dtype", "n", "TFLOP/s", "spread", "MFU"]
    assert lines[2].startswith("fp32 peak: ") and "TFLOP/s, nominal: " in lines[2]  # never a measured peak
    assert lines[-1] == "target bf16-gemm-mfu: not measured here (it needs a GPU with a datasheet peak)"
