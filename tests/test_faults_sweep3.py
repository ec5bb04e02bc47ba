"""Faults of the third hostile sweep (issue 38) in the trainer and the data: flipped bits in a
checkpoint's saved settings, stop signals in the middle of a validation or of a step's micro-batches,
and the low items (temporary-looking files of the user's, a signal before the first step, deep or
huge JSON, devices and FIFOs as corpus files, a folder as a token file, a dangling previous-N link,
an MFU of inf, a weight decay past 1/lr, TORCH_LOGS). Each case checks the exit code, the one line,
and that nothing the user had was changed."""

import json
import os
import pathlib
import signal
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch
from test_faults import _dead_pid, _log, _step
from test_faults_edges import _small_trainer, _tree
from test_faults_run import VOCAB, _prepared

from lecture_utils import prepare as prep_mod
from lecture_utils import train
from lecture_utils.train import build as build_module
from lecture_utils.train import trainer as trainer_module
from lecture_utils.train.run import resume_payload

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
PROG = "python -m lecture_utils.train: error: "
# test_faults' fast flags without --warmup: a resume here relies on the run's own, as a user's does
BASE = ["--batch-size", "4", "--seq-len", "32", "--val-every", "0", "--no-progress", "--peak-flops", "1e12"]


def _run(capsys, *args) -> tuple[int, list[str], list[str]]:
    """train.main in-process: (exit code, stdout lines, stderr lines)."""
    try:
        code = train.main([*BASE, *args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out.strip().splitlines(), err.strip().splitlines()


# --- item 2: the checkpoint's sha256 covers everything --resume relies on


def _pickle_span(path: Path) -> tuple[int, int]:
    """Where archive/data.pkl lies in the checkpoint file (torch.save stores it uncompressed, and its
    zip reader checks no CRC: a flipped bit there is read as it is)."""
    data = path.read_bytes()
    info = next(i for i in zipfile.ZipFile(path).infolist() if i.filename.endswith("/data.pkl"))
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    return start, start + info.file_size


def _flip(path: Path, after: bytes, find: bytes, offset: int, bit: int = 0) -> dict:
    """Flip one bit of the first ``find`` after ``after`` in data.pkl; return what torch.load now reads
    there (no sha256 checked), to show that the flip changed what the test says it changed."""
    start, end = _pickle_span(path)
    data = bytearray(path.read_bytes())
    at = data.index(find, data.index(after, start, end), end)
    data[at + offset] ^= 1 << bit
    path.write_bytes(data)
    return torch.load(path, weights_only=True)


@pytest.mark.parametrize("section", ["resolved", "train"])
def test_a_flipped_bit_in_the_saved_warm_up_is_one_line_on_resume(tmp_path, capsys, section):
    """K01: a warm-up 3 saved as 2 resumed on another LR schedule, exit 0."""
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "5", "--warmup", "3", "--out", str(out))[0] == 0
    path = out / "checkpoint.pt"
    flipped = _flip(path, section.encode(), b"K\x03", 1)  # BININT1 3: the dict's only 3 is its warm-up
    assert flipped["extra"][section]["warmup"] == 2
    before = _tree(out)
    code, lines, err = _run(capsys, "--steps", "7", "--out", str(out), "--resume")
    assert (code, lines, len(err)) == (2, [], 1), err
    assert err[0].startswith(f"{PROG}{path} is corrupt: its contents do not match the sha256 saved with them")
    assert _tree(out) == before


@pytest.mark.parametrize(("what", "after", "find", "offset", "bit"), [
    ("the key 'extra' renamed 'extr`'", b"\x05\x00\x00\x00extra", b"extra", 4, 0),  # K04
    ("the key 'sha256' renamed 'sha257'", b"resolved", b"sha256", 5, 0),
])
def test_a_renamed_settings_or_sha256_key_is_one_line_on_resume(tmp_path, capsys, what, after, find, offset, bit):
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out))[0] == 0
    path = out / "checkpoint.pt"
    flipped = _flip(path, after, find, offset, bit)
    assert "sha256" not in flipped.get("extra", {}), what
    before = _tree(out)
    code, lines, err = _run(capsys, "--steps", "4", "--lr", "1e-3", "--batch-size", "8", "--out", str(out),
                            "--resume")  # other settings: without the check, they would go unnoticed
    assert (code, lines, len(err)) == (2, [], 1), err
    assert err[0].startswith(f"{PROG}{path} holds no sha256 of its contents and settings"), err
    assert _tree(out) == before


def test_a_checkpoint_whose_sha256_was_removed_is_one_line_on_resume(tmp_path, capsys):
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out))[0] == 0
    path = out / "checkpoint.pt"
    payload = torch.load(path, weights_only=True)
    del payload["extra"]["sha256"]
    torch.save(payload, path)
    assert train.read_checkpoint(path)["step"] == 2  # the lesson's loader still reads it (notebook 08's have none)
    code, _, err = _run(capsys, "--steps", "4", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1 and f"{path} holds no sha256" in err[0], err


def test_a_checkpoint_saved_before_issue_38_still_resumes(tmp_path, capsys):
    """Its sha256 covers the tensors, step and RNG only: read as before (its settings as they are)."""
    from lecture_utils.train.checkpoint import payload_digest

    out = tmp_path / "R"
    assert _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out))[0] == 0
    path = out / "checkpoint.pt"
    payload = torch.load(path, weights_only=True)
    payload["extra"]["sha256"] = payload_digest(payload["model"], payload["optimizer"], 2, payload["rng"])
    torch.save(payload, path)
    assert _run(capsys, "--steps", "3", "--warmup", "1", "--out", str(out), "--resume")[0] == 0
    assert _step(out) == 3


@pytest.mark.slow
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


# --- item 5: a stop signal is honoured between batches, in a validation and in a step


def test_a_signal_during_validation_ends_it_within_a_batch_and_saves_the_step(tmp_path, capsys, monkeypatch):
    """G10: the stop flag was read between steps only; a validation of 50 batches ran to its end."""
    out, drawn = tmp_path / "R", []
    real = build_module.Batches.validation

    def validation(self):
        for batch in real(self):
            drawn.append(len(drawn))
            if len(drawn) == 3:  # the third batch of step 2's validation
                os.kill(os.getpid(), signal.SIGTERM)
            yield batch

    monkeypatch.setattr(build_module.Batches, "validation", validation)
    code, lines, err = _run(capsys, "--steps", "4", "--warmup", "1", "--val-every", "2", "--val-batches", "50",
                            "--out", str(out))
    assert (code, err) == (143, []) and len(drawn) == 3, (len(drawn), err)
    assert lines[-1] == (f"stopped by SIGTERM at step 2 of 4: checkpoint {out / 'checkpoint.pt'} is at step 2; "
                         "continue with --resume")
    records = _log(out)
    assert [r["step"] for r in records] == [1, 2] and "val_loss" not in records[1] and _step(out) == 2
    monkeypatch.setattr(build_module.Batches, "validation", real)
    assert _run(capsys, "--steps", "4", "--warmup", "1", "--val-every", "2", "--val-batches", "2", "--out", str(out),
                "--resume")[0] == 0
    assert [("val_loss" in r) for r in _log(out)] == [False, False, False, True]


def test_a_signal_between_micro_batches_drops_the_step_and_the_resume_is_bit_exact(tmp_path, capsys, monkeypatch):
    args = ("--steps", "5", "--warmup", "1", "--accum", "4")
    full, out, draws = tmp_path / "full", tmp_path / "R", []
    assert _run(capsys, *args, "--out", str(full))[0] == 0
    real = build_module.Batches._draw

    def draw(self):
        draws.append(1)
        if len(draws) == 10:  # micro-batch 2 of step 3
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self)

    monkeypatch.setattr(build_module.Batches, "_draw", draw)
    code, lines, err = _run(capsys, *args, "--out", str(out))
    assert (code, err, len(draws)) == (143, [], 10)
    assert lines[-1] == (f"stopped by SIGTERM at step 2 of 5: checkpoint {out / 'checkpoint.pt'} is at step 2; "
                         "continue with --resume")
    assert _step(out) == 2 and len(_log(out)) == 2
    monkeypatch.setattr(build_module.Batches, "_draw", real)
    assert _run(capsys, *args, "--out", str(out), "--resume")[0] == 0
    a, b = (train.read_checkpoint(folder / "checkpoint.pt") for folder in (full, out))
    assert all(torch.equal(t, b["model"][name]) for name, t in a["model"].items())  # bit-identical
    assert [r["loss"] for r in _log(full)] == [r["loss"] for r in _log(out)]


def test_a_signal_before_the_first_step_leaves_nothing_that_blocks_a_plain_start(tmp_path, capsys, monkeypatch):
    """C02b: it left a summary.json, so the next plain start demanded --overwrite."""
    out = tmp_path / "R"
    real = trainer_module.first_line

    def first_line(trainer, peak):  # said after the stop signals are the Trainer's, before the first step
        os.kill(os.getpid(), signal.SIGTERM)
        return real(trainer, peak)

    monkeypatch.setattr(trainer_module, "first_line", first_line)
    code, lines, err = _run(capsys, "--steps", "3", "--warmup", "1", "--out", str(out))
    assert (code, err) == (143, []) and lines[-1] == "stopped by SIGTERM at step 0 of 3: no step done, nothing saved"
    assert sorted(p.name for p in out.iterdir() if p.name != ".lock") == ["log.jsonl"]
    assert (out / "log.jsonl").read_text() == ""
    monkeypatch.setattr(trainer_module, "first_line", real)
    assert _run(capsys, "--steps", "3", "--warmup", "1", "--out", str(out))[0] == 0  # no --overwrite asked for
    assert _step(out) == 3


@pytest.mark.slow
@pytest.mark.multiprocess
class TestSignalsDuringALongValidation:  # its own xdist unit (tests/conftest.py)
    @pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
    def test_a_signal_during_a_long_validation_is_honoured_within_seconds(self, tmp_path, sig, code):
        """G10 as the sweep ran it: --val-batches 100000 kept the trainer alive 56 s after both signals."""
        out = tmp_path / "R"
        proc = subprocess.Popen([sys.executable, "-m", "lecture_utils.train", *BASE, "--warmup", "1", "--steps", "4",
                                 "--val-every", "2", "--val-batches", "100000", "--out", str(out)], cwd=ROOT, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        log, deadline = out / "log.jsonl", time.monotonic() + 60
        while not (log.exists() and log.read_text().count("\n") >= 1):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        time.sleep(1)  # step 2 took milliseconds: its validation has begun
        proc.send_signal(sig)
        sent = time.monotonic()
        try:
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()  # (a no-op once it has exited)
        assert time.monotonic() - sent < 5 and proc.returncode == code and stderr == "", (stderr, proc.returncode)
        assert stdout.splitlines()[-1] == (f"stopped by {sig.name} at step 2 of 4: checkpoint {out / 'checkpoint.pt'} "
                                           "is at step 2; continue with --resume")
        assert _step(out) == 2 and [r["step"] for r in _log(out)] == [1, 2]


# --- item 6: the low ones


def test_temporary_looking_files_of_the_users_are_kept_and_never_a_traceback(tmp_path, capsys):
    """B02 (an OverflowError from os.kill) and B03 (a user's .notes.tmp-999999 deleted)."""
    out = tmp_path / "R"
    out.mkdir()
    dead = _dead_pid()
    mine = [f".x.tmp-{'9' * 20}", f".notes.tmp-{dead}", f".checkpoint.pt.tmp-{'9' * 20}"]
    for name in mine:
        (out / name).write_text("the user's own notes\n")
    stale = out / f".log.jsonl.tmp-{dead}"  # what a killed run's log rewrite leaves: the run's own
    stale.write_text("half a log\n")
    code, lines, err = _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out))
    assert (code, err) == (0, []) and lines[0] == f"removed {stale}, left by a dead process (PID {dead})"
    assert all((out / name).read_text() == "the user's own notes\n" for name in mine) and not stale.exists()


def test_overwrite_steps_over_a_dangling_previous_link(tmp_path, capsys):
    """B04: --overwrite with a dangling previous-1 link failed with 'File exists [EEXIST]'."""
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "1", "--warmup", "1", "--out", str(out))[0] == 0
    (out / "previous-1").symlink_to(tmp_path / "gone")
    code, lines, err = _run(capsys, "--steps", "1", "--warmup", "1", "--out", str(out), "--overwrite")
    assert (code, err) == (0, []) and lines[0] == f"--overwrite: moved the previous run to {out / 'previous-2'}"
    assert os.readlink(out / "previous-1") == str(tmp_path / "gone") and _step(out / "previous-2") == 1


def test_the_log_stays_strict_json_when_the_mfu_is_inf(tmp_path, capsys):
    """A05: --peak-flops 5e-324 wrote "mfu": Infinity, which strict JSON parsers refuse."""
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out), "--peak-flops", "5e-324")[0] == 0

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    records = [json.loads(line, parse_constant=refuse) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["mfu"] for r in records] == [None, None] and all(r["loss"] > 0 for r in records)
    assert _run(capsys, "--steps", "3", "--warmup", "1", "--out", str(out), "--resume")[0] == 0  # read back, kept
    assert [json.loads(line, parse_constant=refuse)["step"] for line in (out / "log.jsonl").read_text().splitlines()] \
        == [1, 2, 3]


def test_a_weight_decay_past_one_over_lr_is_one_line_before_anything_is_written(tmp_path, capsys):
    """A15: --weight-decay 1e308 was accepted, and the NaN that followed was blamed on --lr."""
    out = tmp_path / "R"
    code, lines, err = _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out), "--weight-decay", "1e308")
    assert (code, lines) == (2, []) and err == [
        f"{PROG}weight_decay (at most 1/lr = 1/0.003: each step scales the weights by 1 - lr * weight_decay) must "
        "be in [0, 333.333], got 1e+308"]
    assert not out.exists()


NESTED = "[" * 100_000 + "]" * 100_000  # deeper than json's recursion limit


def test_deeply_nested_json_in_the_log_is_one_line_naming_it(tmp_path, capsys):
    """G01: a RecursionError traceback, from --resume and from plot."""
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(out), "--ckpt-every", "1")[0] == 0
    lines = (out / "log.jsonl").read_text().splitlines()
    (out / "log.jsonl").write_text(f'{lines[0]}\n{{"step": {NESTED}}}\n{lines[1]}\n')
    before = _tree(out)
    code, _, err = _run(capsys, "--steps", "3", "--warmup", "1", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1 and f"{out / 'log.jsonl'} line 2 is not a valid log record" in err[0], err
    with pytest.raises(SystemExit) as exit_:
        train.main(["plot", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    code = exit_.value.code
    assert code == 2 and len(err) == 1 and f"{out / 'log.jsonl'} line 2 is not a valid log record" in err[0], err
    assert _tree(out) == before


@pytest.mark.parametrize(("sidecar", "reason"), [
    (f'{{"dtype": "uint16", "n_tokens": {NESTED}}}', "maximum recursion depth exceeded"),  # G02
    ('{"dtype": "uint16", "byte_order": "little", "vocab_size": 300, "n_tokens": ' + "9" * 5000 + ', "sha256": "x"}',
     "Exceeds the limit (4300 digits) for integer string conversion"),  # G03: the file was not named
])
def test_a_sidecar_too_deep_or_too_long_is_one_line_naming_it(tmp_path, capsys, monkeypatch, sidecar, reason):
    data = _prepared(tmp_path / "D")
    (data / "tokens" / "train.json").write_text(sidecar)
    monkeypatch.setenv("LECTURE_DATA", str(data))
    code, _, err = _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(tmp_path / "R"))
    assert code == 2 and len(err) == 1 and err[0].startswith(
        f"{PROG}{data / 'tokens' / 'train.json'}: not a token sidecar (invalid JSON: {reason}"), err
    assert not (tmp_path / "R").exists()


def test_a_token_file_that_is_a_folder_is_named_as_one(tmp_path, capsys, monkeypatch):
    """G04: it was reported as a token file of 4096 bytes."""
    data = _prepared(tmp_path / "D")
    (data / "tokens" / "train.bin").unlink()
    (data / "tokens" / "train.bin").mkdir()
    monkeypatch.setenv("LECTURE_DATA", str(data))
    code, _, err = _run(capsys, "--steps", "2", "--warmup", "1", "--out", str(tmp_path / "R"))
    assert code == 2 and err == [f"{PROG}{data / 'tokens' / 'train.bin'} is a folder, not a token file: move it away "
                                 "and prepare the data again (python -m lecture_utils.data prepare)"]


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_a_corpus_file_that_is_a_device_or_a_fifo_is_one_line_and_never_read(tmp_path, capsys, monkeypatch, kind):
    """G08 (a MemoryError traceback after reading /dev/zero) and G09 (prepare waited on a FIFO for ever)."""
    data = _prepared(tmp_path / "D")
    odd = data / "corpus" / "odd.txt"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to(kind)
    before, real = _tree(data / "tokens"), pathlib.Path.read_text

    def read_text(self, *args, **kwargs):  # the guard: reading it would exhaust memory, or never return
        assert self.is_file(), f"read {self}, which is not a plain file"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(data), "--vocab-size", str(VOCAB)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err == (f"python -m lecture_utils.data: error: {odd} is not a plain file (a device, a FIFO): the corpus "
                   f"is plain .txt files; move it out of {data / 'corpus'}\n")
    assert _tree(data / "tokens") == before


@pytest.mark.slow
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
