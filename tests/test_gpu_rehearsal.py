"""`make gpu-rehearsal`: scripts/gpu_check.py run whole on the CPU as a process of its own (docs/gpu/README.md):
with a short deadline, killed mid-run, stopped by SIGTERM and by a stage limit; the report checked each
time. Each runs notebooks for seconds: `make test-slow` (and CI) runs them; the check's parts, in-process,
are tests/test_gpu_check.py's."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
SCRIPT = ROOT / "scripts" / "gpu_check.py"


def rehearse(out, *args, **popen):
    return [sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out), *args]


def git_status():
    if not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout


def report_of(out):
    return json.loads((out / "report.json").read_text())


def wait_for_status(out, stage, status, proc, timeout=60):
    """Poll report.json (rewritten atomically) until ``stage`` has ``status``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the check ended (exit {proc.returncode}) before {stage} was {status}")
        with_report = (out / "report.json").exists()
        if with_report and report_of(out)["stages"][stage]["status"] == status:
            return report_of(out)
        time.sleep(0.05)
    raise AssertionError(f"{stage} never became {status}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.multiprocess
class TestRehearsalStopsAtTheDeadline:
    def test_it_writes_four_files_only_there_and_stops_starting_stages_past_the_deadline(self, tmp_path):
        before = git_status()
        out = tmp_path / "gpu"
        proc = subprocess.run(rehearse(out, "--deadline", "1"), capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)
        assert proc.returncode == 3, proc.stdout + proc.stderr  # 3: stopped by the deadline, what ran passed
        assert proc.stderr == ""
        assert sorted(p.name for p in out.iterdir()) == ["logs.txt", "reference.md", "report.json", "summary.md"]
        report = report_of(out)
        stages = list(report["stages"].values())
        assert stages[0]["status"] == "passed" and stages[-1] == {
            "kind": "benchmark", "status": "not started", "reason": "past the --deadline of 1 s"}
        ran = [name for name, r in report["stages"].items() if r["status"] != "not started"]
        lines = proc.stdout.splitlines()
        assert [line.split()[0] for line in lines[:-1]] == ran  # one line per stage that ran
        assert lines[-1].startswith(f"gpu-check: stopped at the deadline: {len(stages) - len(ran)} of "
                                    f"{len(stages)} stages not started (") and lines[-1].endswith(f"report in {out}")
        # the rehearsal hides what the lent machine lacks: notebook 01's beartype cells are skipped
        first = report["stages"]["01_tensors_and_strides"]["detail"]
        assert "needs beartype" in " ".join(first["skipped"])
        assert "stopped at the deadline" in (out / "summary.md").read_text()
        assert "===== 01_tensors_and_strides: passed in" in (out / "logs.txt").read_text()
        assert "not measured this run" in (out / "reference.md").read_text()
        assert git_status() == before  # nothing outside --out changed


@pytest.mark.multiprocess
class TestRehearsalSurvivesAKill:
    def test_a_report_written_before_a_kill_is_valid_and_names_the_running_stage(self, tmp_path):
        out = tmp_path / "gpu"
        proc = subprocess.Popen(rehearse(out, "--only", "01_tensors_and_strides", "08_training_loop"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        report = wait_for_status(out, "08_training_loop", "running", proc)
        proc.kill()  # SIGKILL: no handler runs; only what was on disk remains
        proc.wait()
        child = report["stages"]["08_training_loop"]["pid"]
        os.killpg(child, signal.SIGKILL)  # the stage's own process group (the check would have stopped it)
        report = report_of(out)
        assert report["stages"]["01_tensors_and_strides"]["status"] == "passed"
        assert report["stages"]["08_training_loop"]["status"] == "running"
        summary = (out / "summary.md").read_text()
        assert "**08_training_loop was running when this report was written**" in summary
        assert "===== 01_tensors_and_strides: passed in" in (out / "logs.txt").read_text()


@pytest.mark.multiprocess
class TestRehearsalStopsOnSignalAndTimeout:
    def test_sigterm_stops_the_stage_and_its_processes_and_says_so(self, tmp_path):
        out = tmp_path / "gpu"
        proc = subprocess.Popen(rehearse(out, "--only", "08_training_loop"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        child = wait_for_status(out, "08_training_loop", "running", proc)["stages"]["08_training_loop"]["pid"]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 143 and stderr == ""
        assert stdout.splitlines()[-1].startswith("gpu-check: stopped by SIGTERM: 0 stage(s) not started")
        row = report_of(out)["stages"]["08_training_loop"]
        assert (row["status"], row["reason"]) == ("stopped", "the check was stopped by SIGTERM")
        time.sleep(0.2)
        assert not alive(child)

    def test_a_stage_past_its_limit_is_timed_out_and_the_next_one_still_runs(self, tmp_path):
        out = tmp_path / "gpu"
        proc = subprocess.run(rehearse(out, "--only", "08_training_loop", "matmul_mfu", "--stage-limit", "1.5"),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and proc.stderr == ""
        stages = report_of(out)["stages"]
        assert stages["08_training_loop"]["status"] == "timed out"
        assert stages["08_training_loop"]["reason"].startswith("stopped after 2 s")
        assert stages["matmul_mfu"]["status"] in ("passed", "timed out")  # it ran, within its own limit
        assert proc.stdout.splitlines()[-1].startswith("gpu-check: FAILED: 08_training_loop")
