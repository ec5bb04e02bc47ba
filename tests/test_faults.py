"""Fault injection for the trainer (issue 12): reruns, torn logs, two trainers on one folder,
full disks, changed configs, finished runs, signals, flipped bytes. Each case checks the exit
code, the one-line message, and that nothing was lost (the previous checkpoint loads, the log's
lines are unique and valid JSON)."""

import builtins
import errno
import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from lecture_utils import files as files_module
from lecture_utils import train
from lecture_utils.train import run as run_module

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
PROG = "python -m lecture_utils.train: error: "
# a given peak: no CPU matmul benchmark at the start; BASE leaves the warm-up to the run (min(20, --steps))
BASE = ["--batch-size", "4", "--seq-len", "32", "--val-every", "0", "--no-progress", "--peak-flops", "1e12"]
FAST = [*BASE, "--warmup", "1"]


@pytest.fixture(autouse=True)
def _no_peak_measurement(monkeypatch):
    """In-process runs skip the CPU's matmul benchmark (MFU is not what these tests check)."""
    monkeypatch.setattr(train.Trainer, "_peak_flops", lambda self: 1e12)


def _main(capsys, *args, flags=FAST) -> tuple[int, list[str], list[str]]:
    """train.main in-process: (exit code, stdout lines, stderr lines)."""
    try:
        code = train.main([*flags, *args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out.strip().splitlines(), err.strip().splitlines()


def _log(out: Path) -> list[dict]:
    """The log's records; every line valid JSON, steps unique and consecutive from 1."""
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, len(records) + 1))
    return records


def _step(out: Path) -> int:
    return train.read_checkpoint(out / "checkpoint.pt")["step"]


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path, with its sha256: to show that nothing changed."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _no_temporaries(out: Path) -> bool:
    return not [p for p in out.iterdir() if ".tmp-" in p.name]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- 1. a rerun without --resume never destroys the run

def test_rerun_without_resume_is_refused_and_overwrite_moves_the_run_aside(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "3", "--out", str(out))[0] == 0
    before = (out / "log.jsonl").read_bytes()
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--ckpt-every", "1")
    assert code == 2 and len(err) == 1 and "already holds a run (checkpoint.pt, log.jsonl, summary.json)" in err[0]
    assert "--resume" in err[0] and "--overwrite" in err[0]
    assert (out / "log.jsonl").read_bytes() == before and _step(out) == 3  # nothing touched
    code, lines, _ = _main(capsys, "--steps", "2", "--out", str(out), "--overwrite")
    assert code == 0 and lines[0] == f"--overwrite: moved the previous run to {out / 'previous-1'}"
    assert _step(out) == 2 and len(_log(out)) == 2
    assert _step(out / "previous-1") == 3 and (out / "previous-1" / "log.jsonl").read_bytes() == before
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out), "--overwrite", "--resume")
    assert code == 2 and len(err) == 1 and "pass one of them" in err[0]


# --- 2. a torn last log line is dropped and reported; an earlier bad line is an error

def test_torn_last_log_line_is_dropped_and_reported(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "3", "--out", str(out), "--ckpt-every", "1")[0] == 0
    with open(out / "log.jsonl", "a") as f:
        f.write('{"step": 4, "loss": 8.1')  # what a kill or a full disk mid-append leaves
    code, lines, _ = _main(capsys, "--steps", "4", "--out", str(out), "--resume")
    assert code == 0 and lines[0].startswith(f"{out / 'log.jsonl'} line 4 is torn (")
    assert lines[0].endswith("dropped it")
    assert len(_log(out)) == 4 and _step(out) == 4
    assert not [p for p in out.iterdir() if p.name.startswith(".log")]  # the atomic rewrite's temp is gone

    lines_before = (out / "log.jsonl").read_text().splitlines()
    lines_before[1] = "garbage"
    (out / "log.jsonl").write_text("\n".join(lines_before) + "\n")
    damaged = (out / "log.jsonl").read_bytes()
    code, _, err = _main(capsys, "--steps", "5", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1 and f"{out / 'log.jsonl'} line 2 is not a valid log record" in err[0]
    assert (out / "log.jsonl").read_bytes() == damaged and _step(out) == 4  # left for the user to look at


# --- 4. one trainer per folder

def test_a_second_trainer_on_the_same_out_exits_2_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "R"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               f"fd = os.open({str(out / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode())\n"
                               "print('locked', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    in_use = [f"{PROG}--out {out} is in use by another trainer (PID {holder.pid}, lock {out / '.lock'}); wait for it "
              "to finish or use another --out"]
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert _main(capsys, "--steps", "2", "--out", str(out)) == (2, [], in_use)
        assert not (out / "log.jsonl").exists()
        (out / "log.jsonl").write_text('{"step": 1, "loss": 9.0}\n')  # a live run before its first checkpoint:
        assert _main(capsys, "--steps", "4", "--out", str(out), "--resume") == (2, [], in_use)  # not "nothing to resume"
        assert (out / "log.jsonl").read_text() == '{"step": 1, "loss": 9.0}\n'
        (out / "log.jsonl").unlink()
    finally:
        holder.kill()
        holder.wait()
    # the holder is dead: its lock (and its PID in the file) is stale and taken over
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    assert len(_log(out)) == 2
    # in one process too: a Trainer that holds the folder keeps a second one out
    first = train.Trainer(train.TrainConfig(steps=3, batch_size=4, seq_len=32, warmup=1, val_every=0), out,
                          resume=True, progress=False, echo=lambda m: None)
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume")
    assert code == 2 and f"(PID {os.getpid()}," in err[0]
    first.close()
    assert _main(capsys, "--steps", "3", "--out", str(out), "--resume")[0] == 0
    assert len(_log(out)) == 3 and _step(out) == 3


# --- 5. failed saves: one line, no temporary file, the previous checkpoint intact

def _failing_open(error_no: int, after_bytes: int, only: str = ""):
    """``open`` for files whose path holds ``only``: fails at once, or after ``after_bytes``."""
    real_open = builtins.open

    class Failing:
        def __init__(self, f):
            self.f, self.written = f, 0

        def write(self, data):
            self.written += len(data)
            if self.written > after_bytes:
                raise OSError(error_no, os.strerror(error_no))
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def fake_open(path, mode="r", *args, **kwargs):
        if only not in str(path):
            return real_open(path, mode, *args, **kwargs)
        if after_bytes < 0:
            raise OSError(error_no, os.strerror(error_no), str(path))
        return Failing(real_open(path, mode, *args, **kwargs))

    return fake_open


@pytest.mark.parametrize(("error_no", "after_bytes", "reason"), [
    (errno.ENOSPC, 5000, "No space left on device [ENOSPC]"),  # the disk fills mid-save
    (errno.EACCES, -1, "Permission denied [EACCES]"),  # the folder became read-only
])
@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_a_failed_save_is_one_line_and_keeps_the_previous_checkpoint(tmp_path, capsys, monkeypatch, error_no,
                                                                      after_bytes, reason):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out), "--ckpt-every", "1")[0] == 0
    # the checkpoint's temporary file (lecture_utils/files.py writes it), not the log or the summary
    monkeypatch.setattr(files_module, "open", _failing_open(error_no, after_bytes, only="checkpoint.pt"),
                        raising=False)
    code, _, err = _main(capsys, "--steps", "4", "--out", str(out), "--ckpt-every", "1", "--resume")
    assert code == 1 and len(err) == 1, err
    assert (f"cannot save the step-3 checkpoint to {out / 'checkpoint.pt'}: {reason}; the checkpoint at step 2 "
            "is intact") in err[0]
    assert _no_temporaries(out) and _step(out) == 2 and len(_log(out)) == 3
    monkeypatch.undo()
    code, _, _ = _main(capsys, "--steps", "4", "--out", str(out), "--ckpt-every", "1", "--resume")
    assert code == 0 and _step(out) == 4 and len(_log(out)) == 4


def test_a_full_disk_during_the_log_append_is_one_line_and_claims_only_the_checkpoint_there_is(tmp_path, capsys,
                                                                                                 monkeypatch):
    out = tmp_path / "R"
    real_open = builtins.open

    def open_(path, mode="r", *a, **k):
        if mode == "a":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, mode, *a, **k)

    monkeypatch.setattr(run_module, "open", open_, raising=False)
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out))
    assert code == 1 and len(err) == 1 and not (out / "checkpoint.pt").exists()
    assert err[0].endswith(f"cannot append step 1 to {out / 'log.jsonl'}: No space left on device [ENOSPC]; no "
                           "checkpoint has been saved yet: free the space or fix the folder, then start over with "
                           "--overwrite")
    monkeypatch.undo()
    assert _main(capsys, "--steps", "1", "--out", str(out), "--overwrite")[0] == 0
    monkeypatch.setattr(run_module, "open", open_, raising=False)
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out), "--resume")
    assert code == 1 and len(err) == 1 and "cannot append step 2 to" in err[0] and "[ENOSPC]" in err[0]
    assert _step(out) == 1 and len(_log(out)) == 1


def test_stale_temporaries_of_dead_processes_are_removed_at_start(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "1", "--out", str(out))[0] == 0
    stale = out / f".checkpoint.pt.tmp-{_dead_pid()}"
    stale.write_bytes(b"x" * 1000)  # what a kill mid-save leaves
    code, lines, _ = _main(capsys, "--steps", "2", "--out", str(out), "--resume")
    assert code == 0 and f"removed {stale}, left by a dead process" in lines[0]
    assert _no_temporaries(out) and _step(out) == 2


# --- 6. resume against the run's stored config

@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_resume_refuses_another_model_and_changed_settings_unless_allowed(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    checkpoint = (out / "checkpoint.pt").read_bytes()
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume", "--config", "gpu")
    assert code == 2 and len(err) == 1 and "holds another model than --config gpu (" in err[0], err
    assert "resume with the run's own --config tiny" in err[0]
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume", "--lr", "0.01", "--batch-size", "8")
    assert code == 2 and len(err) == 1, err
    assert "(lr 0.003 -> 0.01, batch-size 4 -> 8)" in err[0] and "--allow-config-change" in err[0]
    assert (out / "checkpoint.pt").read_bytes() == checkpoint and len(_log(out)) == 2
    code, lines, _ = _main(capsys, "--steps", "3", "--out", str(out), "--resume", "--lr", "0.01",
                           "--allow-config-change")
    assert code == 0 and lines[0] == "warning: resuming with changed settings: lr 0.003 -> 0.01 (recorded in log.jsonl)"
    log = _log(out)
    assert log[2]["config_change"] == {"lr": [0.003, 0.01]} and "config_change" not in log[1]


def test_resume_with_a_larger_steps_keeps_the_default_warmup(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out), flags=BASE)[0] == 0  # warm-up min(20, 2) = 2
    assert _main(capsys, "--steps", "3", "--out", str(out), "--resume", flags=BASE)[0] == 0  # not refused as 2 -> 3
    assert len(_log(out)) == 3


# --- 9. a finished run, signals, flipped bytes

def test_resuming_a_finished_run_does_nothing_and_keeps_the_final_loss(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    final = json.loads((out / "summary.json").read_text())["final_loss"]
    log = (out / "log.jsonl").read_bytes()
    code, lines, err = _main(capsys, "--steps", "2", "--out", str(out), "--resume")
    assert code == 0 and err == [] and lines == [f"{out} is already at step 2 of --steps 2: nothing to train "
                                                 "(pass a larger --steps to continue it)"]
    assert final is not None and json.loads((out / "summary.json").read_text())["final_loss"] == final
    assert (out / "log.jsonl").read_bytes() == log and _step(out) == 2


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_sigterm_saves_a_checkpoint_at_the_current_step_and_the_resume_is_bit_exact(tmp_path, capsys,
                                                                                       monkeypatch):
    out, full = tmp_path / "R", tmp_path / "full"
    assert _main(capsys, "--steps", "6", "--out", str(full))[0] == 0  # uninterrupted, same process
    step = train.Trainer._step_with_oom_recovery

    def step_then_signal(self, lr):
        result = step(self, lr)
        if self.step == 2:  # this step is the third
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(train.Trainer, "_step_with_oom_recovery", step_then_signal)
    code, lines, err = _main(capsys, "--steps", "6", "--out", str(out))
    assert code == 143 and err == [] and lines[-1] == (f"stopped by SIGTERM at step 3 of 6: checkpoint "
                                                       f"{out / 'checkpoint.pt'} is at step 3; continue with --resume")
    assert _step(out) == 3 and len(_log(out)) == 3 and _no_temporaries(out)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is gone again
    monkeypatch.setattr(train.Trainer, "_step_with_oom_recovery", step)
    assert _main(capsys, "--steps", "6", "--out", str(out), "--resume")[0] == 0
    a, b = (train.read_checkpoint(folder / "checkpoint.pt") for folder in (full, out))
    assert a["step"] == b["step"] == 6
    assert all(torch.equal(t, b["model"][name]) for name, t in a["model"].items())  # bit-identical
    assert [r["loss"] for r in _log(full)] == [r["loss"] for r in _log(out)]


def test_flipped_bytes_in_the_tensor_data_are_detected(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "1", "--out", str(out))[0] == 0
    path = out / "checkpoint.pt"
    data = bytearray(path.read_bytes())
    info = next(i for i in zipfile.ZipFile(path).infolist() if i.filename.endswith("/data/0"))
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + 10] ^= 0x01  # one bit inside a tensor
    path.write_bytes(data)
    with pytest.raises(ValueError, match="is corrupt: its contents do not match the sha256"):
        train.read_checkpoint(path)
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1 and f"{path} is corrupt" in err[0]
    assert path.read_bytes() == data  # not overwritten either
