"""The trainer's and `data prepare`'s faults as real processes (issues 12, 21, 29, 38): real signals
(SIGINT, SIGTERM and SIGHUP twice in 10 ms, and during a long validation; SIGKILL then a bit-exact
--resume; SIGKILL while prepare writes or moves its files), torchrun (SIGTERM to both ranks, a
refused start, a stray environment, a rank that never joins, two gloo processes against one),
closed pipes and a full /dev/full, a TORCH_LOGS torch refuses, a half-made .venv, and every bit of a
checkpoint's settings flipped. Seconds to a minute each: `make test-slow` (and CI) runs them, not
`make test`; the in-process cases of the same behaviour are in the test_faults*.py files."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch
from test_faults import BASE, ENV, FAST, PROG, ROOT, _log, _main, _no_temporaries, _step, _tree
from test_faults_data import VOCAB as PREPARE_VOCAB
from test_faults_data import env, hashes, one_line, staging_folders
from test_faults_edges import _small_trainer
from test_faults_run import VOCAB, _corpus, _words
from test_faults_sweep3 import _pickle_span

from lecture_utils import files, train
from lecture_utils import prepare as prep_mod
from lecture_utils.train.run import resume_payload

pytestmark = pytest.mark.slow


def _start(out: Path, *args, steps: int = 200, flags=FAST, **popen) -> subprocess.Popen:
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    return subprocess.Popen([sys.executable, "-m", "lecture_utils.train", "--steps", str(steps), *flags, "--out",
                             str(out), *args], cwd=ROOT, env=ENV, **popen)


def _wait_for_steps(out: Path, proc: subprocess.Popen, n: int) -> None:
    """Polls the log itself: the real CLI says nothing else mid-run."""
    log, deadline = out / "log.jsonl", time.monotonic() + 60
    while not (log.exists() and len(log.read_text().splitlines()) >= n):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stopped_line(sig, stopped: int, steps: int, out: Path) -> str:
    return (f"stopped by {sig.name} at step {stopped} of {steps}: checkpoint {out / 'checkpoint.pt'} is at step "
            f"{stopped}; continue with --resume")


# --- stop signals: a second one is held until the checkpoint is saved; SIGKILL, then a bit-exact resume


@pytest.mark.multiprocess
class TestTwoQuickSignals:  # its own xdist unit (tests/conftest.py)
    @pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
    def test_a_second_signal_10_ms_later_is_held_until_the_checkpoint_is_saved(self, tmp_path, sig, code):
        """Ctrl-C, a kill, a closed terminal or ssh connection (SIGHUP): the step is saved, exit 128 + N."""
        out = tmp_path / "R"
        proc = _start(out)
        _wait_for_steps(out, proc, 10)
        proc.send_signal(sig)
        time.sleep(0.01)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code and stderr == "", stderr  # no traceback
        stopped = _step(out)
        assert stopped >= 10 and len(_log(out)) == stopped and _no_temporaries(out)
        assert stdout.splitlines()[-1] == _stopped_line(sig, stopped, 200, out)


@pytest.mark.multiprocess
class TestSignalsDuringALongValidation:  # its own xdist unit (tests/conftest.py)
    @pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
    def test_a_signal_during_a_long_validation_is_honoured_within_seconds(self, tmp_path, sig, code):
        """G10 as the sweep ran it: --val-batches 100000 kept the trainer alive 56 s after both signals."""
        out = tmp_path / "R"
        proc = _start(out, "--warmup", "1", "--val-every", "2", "--val-batches", "100000", steps=4, flags=BASE)
        _wait_for_steps(out, proc, 1)
        time.sleep(1)  # step 2 took milliseconds: its validation has begun
        proc.send_signal(sig)
        sent = time.monotonic()
        try:
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()  # (a no-op once it has exited)
        assert time.monotonic() - sent < 5 and proc.returncode == code and stderr == "", (stderr, proc.returncode)
        assert stdout.splitlines()[-1] == _stopped_line(sig, 2, 4, out)
        assert _step(out) == 2 and len(_log(out)) == 2


def _losses(out: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in map(json.loads, (out / "log.jsonl").read_text().splitlines())}


@pytest.fixture
def in_process_cli(monkeypatch):
    """``train.main`` in this process, as the reference runs beside a real subprocess: one
    thread (a bitwise comparison with a ``OMP_NUM_THREADS=1`` process needs the same
    reduction order) and a fixed peak instead of the CPU matmul benchmark (MFU is not
    checked here). Saves a Python start, a torch import and the benchmark per run."""
    monkeypatch.setattr(train.Trainer, "_peak_flops", lambda self: 1e12)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield lambda *args: train.main(list(args))
    torch.set_num_threads(threads)


@pytest.mark.multiprocess
class TestSigkillThenResume:  # its own xdist unit (tests/conftest.py)
    def test_sigkill_then_resume_is_bit_exact(self, tmp_path, in_process_cli):
        """README, Reproducibility: one thread per process, as bitwise reproducibility needs a fixed
        reduction order."""
        common = ["--steps", "8", "--ckpt-every", "2", *FAST]
        victim = subprocess.Popen([sys.executable, "-m", "lecture_utils.train", *common, "--out",
                                   str(tmp_path / "killed")], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        _wait_for_steps(tmp_path / "killed", victim, 5)  # past a checkpoint, mid-interval
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        resume_from = _step(tmp_path / "killed")
        assert 2 <= resume_from < 8
        assert in_process_cli(*common, "--out", str(tmp_path / "killed"), "--resume") == 0
        assert in_process_cli(*common, "--out", str(tmp_path / "full")) == 0  # the uninterrupted reference
        a = train.read_checkpoint(tmp_path / "full" / "checkpoint.pt")
        b = train.read_checkpoint(tmp_path / "killed" / "checkpoint.pt")
        assert a["step"] == b["step"] == 8
        for name, tensor in a["model"].items():
            assert torch.equal(tensor, b["model"][name]), name  # bit-identical weights
        full_losses, resumed_losses = _losses(tmp_path / "full"), _losses(tmp_path / "killed")
        assert list(resumed_losses) == list(range(1, 9))  # no duplicated or missing steps
        assert all(resumed_losses[s] == full_losses[s] for s in range(resume_from + 1, 9))


# --- torchrun: SIGTERM stops every rank at one step; a refused start is exit 2 on every rank

RANK_EXIT = ("import os, sys\n"
             "from lecture_utils.train.cli import main\n"
             "try:\n    code = main()\nexcept SystemExit as stop:\n    code = stop.code\n"
             "print(f\"rank {os.environ['RANK']} exits {code}\", file=sys.stderr, flush=True)\n"
             "sys.exit(code)\n")


def _torchrun(tmp_path: Path, out: Path, *args) -> subprocess.Popen:
    script = tmp_path / "rank_exit.py"  # the trainer's main, saying how each rank exits
    script.write_text(RANK_EXIT)
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                             "--master_addr=127.0.0.1", f"--master_port={_free_port()}", str(script), *FAST,
                             "--device", "cpu", "--out", str(out), *args], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.multiprocess
class TestTorchrun:  # its own xdist unit (tests/conftest.py)
    def test_sigterm_to_torchrun_stops_both_ranks_at_one_step_with_a_checkpoint(self, tmp_path):
        out = tmp_path / "d"
        proc = _torchrun(tmp_path, out, "--steps", "300", "--zero1")
        _wait_for_steps(out, proc, 10)
        proc.send_signal(signal.SIGTERM)  # torchrun forwards it to every rank
        stdout, stderr = proc.communicate(timeout=90)
        stopped = _step(out)
        assert stopped >= 10 and len(_log(out)) == stopped
        assert stdout.count("stopped by SIGTERM") == 1 and _stopped_line(signal.SIGTERM, stopped, 300, out) in stdout
        assert "rank 0 exits 143" in stderr and "rank 1 exits 143" in stderr, stderr
        assert "lecture_utils" not in "".join(line for line in stderr.splitlines() if line.startswith("  File"))

    def test_a_refused_start_exits_2_on_every_rank_with_the_reason_printed_once(self, tmp_path, capsys):
        out = tmp_path / "d"
        assert _main(capsys, "--steps", "1", "--out", str(out))[0] == 0
        before = _tree(out)
        proc = _torchrun(tmp_path, out, "--steps", "5")
        _, stderr = proc.communicate(timeout=90)
        assert stderr.count("already holds a run") == 1
        assert "rank 0 exits 2" in stderr and "rank 1 exits 2" in stderr, stderr
        assert _tree(out) == before


@pytest.mark.multiprocess
class TestTwoGlooProcesses:  # its own xdist unit (tests/conftest.py)
    def test_two_gloo_processes_match_one_process_and_shard_adamw(self, tmp_path, in_process_cli):
        """torchrun with 2 CPU processes (DDP, gloo, --zero1) against 1 process, same global batch."""
        common = ["--batch-size", "4", "--seq-len", "32", "--warmup", "1", "--val-every", "0", "--no-progress",
                  "--device", "cpu"]
        ddp = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                                "--master_addr=127.0.0.1", f"--master_port={_free_port()}", "-m",
                                "lecture_utils.train", "--steps", "4", *common, "--zero1", "--peak-flops", "1e12",
                                "--out", str(tmp_path / "ddp")], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            # the one-process reference runs here while the two ranks run
            assert in_process_cli("--steps", "4", *common, "--out", str(tmp_path / "one")) == 0
            out, err = ddp.communicate(timeout=180)
        finally:
            ddp.kill()
        assert ddp.returncode == 0, err
        ddp_losses, one_losses = _losses(tmp_path / "ddp"), _losses(tmp_path / "one")
        assert list(ddp_losses) == [1, 2, 3, 4]
        for step, loss in one_losses.items():
            assert ddp_losses[step] == pytest.approx(loss, rel=1e-5)
        summary = json.loads((tmp_path / "ddp" / "summary.json").read_text())
        full = json.loads((tmp_path / "one" / "summary.json").read_text())["optimizer_state_bytes_per_rank"][0]
        per_rank = summary["optimizer_state_bytes_per_rank"]
        assert summary["world_size"] == 2 and len(per_rank) == 2 and sum(per_rank) == full
        assert all(abs(b / full - 0.5) < 0.2 for b in per_rank)  # whole tensors per rank: about half each
        # The distributed checkpoint resumes in a single process, on the same trajectory.
        for folder in ("ddp", "one"):
            assert in_process_cli("--steps", "6", *common, "--out", str(tmp_path / folder), "--resume") == 0
        ddp_losses, one_losses = _losses(tmp_path / "ddp"), _losses(tmp_path / "one")
        assert list(ddp_losses) == list(range(1, 7))
        assert ddp_losses[6] == pytest.approx(one_losses[6], rel=1e-5)


RENDEZVOUS = """
import datetime, sys
from lecture_utils.train import Trainer, resolve
from lecture_utils.train.cli import main
Trainer._peak_flops = lambda self: 1e12  # no CPU matmul benchmark
resolve.RENDEZVOUS_TIMEOUT = datetime.timedelta(seconds=float(sys.argv[1]))
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.multiprocess
class TestStrayTorchrun:  # its own xdist unit (tests/conftest.py)
    def test_a_stray_torchrun_environment_is_refused_at_once_not_waited_on(self, tmp_path):
        """Issue 29, item 7, as a real process: before, it waited in rendezvous for 30 minutes."""
        env = {**ENV, "WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
        for name in ("LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
            env.pop(name, None)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "lecture_utils.train", "--steps", "2", *FAST, "--device", "cpu",
                               "--out", str(tmp_path / "R")], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and proc.stderr == (
            f"{PROG}WORLD_SIZE=2 is set, but not by torchrun (no LOCAL_RANK, TORCHELASTIC_RUN_ID): launch with "
            "torchrun --nproc_per_node=N -m lecture_utils.train ..., or unset WORLD_SIZE and RANK to train in one "
            "process\n")
        assert time.monotonic() - start < 60 and not (tmp_path / "R").exists()

    def test_a_rank_that_never_joins_ends_the_wait_with_one_line(self, tmp_path):
        """torchrun's own variables, but the other process never comes: one line after the timeout."""
        port = _free_port()
        env = {**ENV, "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "TORCHELASTIC_RUN_ID": "test",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        proc = subprocess.run([sys.executable, "-c", RENDEZVOUS, "3", "--steps", "2", *FAST, "--device", "cpu",
                               "--out", str(tmp_path / "R")], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"{PROG}could not join the other 1 process(es) at 127.0.0.1:{port} within 3 s (")
        assert not (tmp_path / "R").exists()


# --- output is never fatal; a TORCH_LOGS torch refuses; Ctrl-C while torch loads


@pytest.mark.multiprocess
class TestClosedPipes:  # its own xdist unit (tests/conftest.py)
    def test_a_reader_that_goes_away_stops_the_printing_not_the_training(self, tmp_path):
        out = tmp_path / "R"
        proc = _start(out, steps=30, flags=[a for a in FAST if a != "--no-progress"], stderr=subprocess.STDOUT, text=False)
        proc.stdout.read(200)  # | head -c 200: then the reader is gone
        proc.stdout.close()
        assert proc.wait(timeout=120) == 0
        assert _step(out) == 30 and len(_log(out)) == 30

    def test_the_napkin_cli_is_quiet_on_a_closed_pipe_and_one_line_on_a_full_disk(self):
        gpus = subprocess.Popen([sys.executable, "-m", "lecture_utils", "gpus"], cwd=ROOT, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        gpus.stdout.close()  # | true
        assert gpus.wait(timeout=60) == 0 and gpus.stderr.read() == b""
        with open("/dev/full", "w") as full:
            estimate = subprocess.run([sys.executable, "-m", "lecture_utils", "estimate", "--params", "70e9",
                                       "--tokens", "15e12", "--gpus", "1024", "--mfu", "0.4"], cwd=ROOT, env=ENV,
                                      stdout=full, stderr=subprocess.PIPE, text=True)
        assert estimate.returncode == 1 and estimate.stderr == (
            "python -m lecture_utils: error: cannot write the output: No space left on device [ENOSPC]\n")

    def test_ctrl_c_while_torch_loads_is_one_line(self, tmp_path):
        proc = subprocess.Popen([sys.executable, "-m", "lecture_utils.train", "--steps", "3", "--out",
                                 str(tmp_path / "R")], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # inside `import torch`, or just after: either way one line
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130 and stderr.count("\n") == 1, stderr
        assert stderr.startswith(("python -m lecture_utils.train: stopped by SIGINT while starting; nothing was changed",
                                  "python -m lecture_utils.train: error: stopped by SIGINT before the first step"))


@pytest.mark.multiprocess
class TestTorchLogs:  # its own xdist unit (tests/conftest.py)
    @pytest.mark.parametrize("cli", ["lecture_utils.train", "lecture_utils", "lecture_utils.data prepare"])
    def test_a_torch_logs_that_torch_refuses_is_one_line(self, tmp_path, cli):
        """H06: torch's own import traceback."""
        args = {"lecture_utils.train": ["--steps", "1", "--out", str(tmp_path / "R")], "lecture_utils": ["estimate"],
                "lecture_utils.data prepare": ["--data-dir", str(tmp_path / "R")]}[cli]
        proc = subprocess.run([sys.executable, "-m", *cli.split(), *args], cwd=ROOT,
                              env={**ENV, "TORCH_LOGS": "nonsense"}, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stdout == "" and proc.stderr == (
            f"python -m {cli}: error: TORCH_LOGS='nonsense' is not a setting torch knows (TORCH_LOGS=\"help\" lists "
            "them): fix it, or unset TORCH_LOGS\n")
        assert not (tmp_path / "R").exists()


# --- `data prepare`: the command, and a SIGKILL while it writes or moves its files

KILLED_PREPARE = """
import os, sys, time
from lecture_utils import prepare
stage = sys.argv[1]
def paused_here():  # tell the test, then wait for its SIGKILL
    print("paused", flush=True)
    time.sleep(60)
if stage == "writing":  # stop right after the first token file is written into the staging folder
    real = prepare.write_tokens
    def write_tokens(*args, **kwargs):
        meta = real(*args, **kwargs)
        paused_here()
        return meta
    prepare.write_tokens = write_tokens
else:  # "moving": stop after the first of the five renames
    real = os.replace
    def replace(src, dst):
        real(src, dst)
        paused_here()
    os.replace = replace
prepare.main(["prepare", "--data-dir", sys.argv[2], "--vocab-size", sys.argv[3]])
"""


def wait_for_line(proc: subprocess.Popen, expected: str, timeout: float = 60) -> None:
    """Blocks until ``proc`` prints the line ``expected`` on stdout: an event, not a sleep loop. Fails
    if ``proc`` exits first or has not printed it within ``timeout`` seconds (then it is killed)."""
    timer = threading.Timer(timeout, proc.kill)  # the kill ends the read below with EOF
    timer.start()
    seen = []
    try:
        for line in proc.stdout:
            if line.strip() == expected:
                return
            seen.append(line)
    finally:
        timer.cancel()
    raise AssertionError(f"no line {expected!r} (exit {proc.wait()}, killed after {timeout} s if negative); "
                         f"stdout: {seen}; stderr: {proc.stderr.read()}")


def kill_prepare(folder: Path, stage: str, vocab: int) -> None:
    """Run `prepare` on ``folder`` in a subprocess and SIGKILL it at ``stage``."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_PREPARE), stage, str(folder),
                             str(vocab)], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(proc, "paused")  # prepare reached the point to kill it at
        assert len(staging_folders(folder)) == 1  # it was writing: its staging folder is there
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.multiprocess
class TestKillWhileWriting:  # its own xdist unit (tests/conftest.py)
    def test_a_kill_while_writing_leaves_the_old_files_byte_identical(self, prepared, capsys):
        before = hashes(prepared)
        kill_prepare(prepared, "writing", PREPARE_VOCAB + 100)
        assert hashes(prepared) == before  # nothing moved in
        stale = staging_folders(prepared)
        assert len(stale) == 1 and (stale[0] / "tokens" / "train.bin").exists()
        # The next prepare removes the dead run's staging folder, says so, and builds the same bytes.
        assert prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", str(PREPARE_VOCAB)]) == 0
        assert one_line(capsys.readouterr().err) == (f"removed {stale[0].name}, left by an interrupted prepare; "
                                                     f"the files in {prepared} were untouched")
        assert hashes(prepared) == before and staging_folders(prepared) == []


@pytest.mark.multiprocess
class TestKillWhileMoving:  # its own xdist unit (tests/conftest.py)
    def test_a_kill_while_moving_in_is_finished_by_the_next_prepare(self, prepared, tmp_path, capsys):
        """The five renames take microseconds; a kill between them is completed, not left mixed."""
        reference = tmp_path / "reference"
        shutil.copytree(prepared / "corpus", reference / "corpus")
        prep_mod.prepare(reference, vocab_size=PREPARE_VOCAB + 100)
        kill_prepare(prepared, "moving", PREPARE_VOCAB + 100)
        stale = staging_folders(prepared)
        assert len(stale) == 1 and files.is_sealed(stale[0])
        assert prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", str(PREPARE_VOCAB + 100)]) == 0
        assert one_line(capsys.readouterr().err) == (f"finished moving in the files of an interrupted prepare "
                                                     f"({stale[0].name})")
        assert hashes(prepared) == hashes(reference) and staging_folders(prepared) == []


@pytest.mark.multiprocess
class TestDataPrepareCommand:  # its own xdist unit (tests/conftest.py)
    def test_python_m_lecture_utils_data_prepare_still_prepares(self, tmp_path):
        """The command stays; data.py hands it to prepare.py in a process of its own (no import circle)."""
        data = _corpus(tmp_path / "D", [_words(i) for i in range(40)])
        proc = subprocess.run([sys.executable, "-m", "lecture_utils.data", "prepare", "--data-dir", str(data),
                               "--vocab-size", str(VOCAB)], cwd=ROOT, env=ENV, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["train", "val"]
        assert json.loads((data / "tokens" / "val.json").read_text())["vocab_size"] == VOCAB


# --- a .venv left half-made by a killed `make setup` is made again (issue 29, item 6)


@pytest.mark.multiprocess
class TestHalfMadeVenv:  # its own xdist unit (tests/conftest.py)
    def test_a_venv_without_pip_is_made_again(self, tmp_path):
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # killed mid-way
        env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # offline: install fails
        make = subprocess.run(["make", "-C", str(ROOT), "setup", f"VENV={venv}"], capture_output=True, text=True,
                              env=env, timeout=300)
        output = make.stdout + make.stderr
        assert "No module named pip" not in output, output
        assert f"{venv} is incomplete (an interrupted make setup?): making it again" in output
        assert subprocess.run([venv / "bin" / "python", "-m", "pip", "--version"], capture_output=True).returncode == 0
        assert not (venv / ".installed").exists()  # offline, the install itself failed: the next make retries


# --- every bit of a checkpoint's settings (issue 38, item 2)


def _identical(a, b) -> bool:
    """The same types, keys in the same order, and bit-identical tensors and values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and \
            a.reshape(-1).view(torch.uint8).tolist() == b.reshape(-1).view(torch.uint8).tolist()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_identical, a, b))
    return a == b or (a != a and b != b)


@pytest.mark.multiprocess
class TestEveryBitOfTheSettings:  # its own xdist unit (tests/conftest.py); about a minute on one core
    def test_each_single_bit_flip_in_the_metadata_is_refused_or_changes_nothing(self, tmp_path):
        """Every bit of data.pkl's metadata region (the key 'extra' to the pickle's end: the run's
        settings and the sha256), flipped one at a time: each is one ValueError naming the file, or loads
        a payload identical to the original (a memo index no one reads back). The sweep found 406 of
        11,373 loaded with changed settings."""
        trainer = _small_trainer(tmp_path / "good", steps=2)
        trainer.run()
        trainer.close()
        good_path = tmp_path / "good" / "checkpoint.pt"
        good, original = good_path.read_bytes(), resume_payload(good_path.parent)
        start, end = _pickle_span(good_path)
        region = good.index(b"\x05\x00\x00\x00extra", start, end) - 1  # from its BINUNICODE opcode
        victim = tmp_path / "victim"
        victim.mkdir()
        path = victim / "checkpoint.pt"
        refused, same, changed = 0, 0, []
        for at in range(region, end):
            for bit in range(8):
                data = bytearray(good)
                data[at] ^= 1 << bit
                path.write_bytes(data)
                try:
                    payload = resume_payload(victim)
                except ValueError as err:
                    assert str(path) in str(err) and "\n" not in str(err), (at, bit, err)
                    refused += 1
                    continue
                if _identical(payload, original):
                    same += 1
                else:
                    changed.append((at - start, bit))
        assert changed == [] and refused + same == 8 * (end - region) and refused > same, (changed, refused, same)
