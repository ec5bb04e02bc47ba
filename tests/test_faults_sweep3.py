"""Faults of the third hostile sweep (issue 38) in the trainer and the data: flipped bits in a
checkpoint's saved settings, stop signals in the middle of a validation or of a step's micro-batches,
and the low items (temporary-looking files of the user's, a signal before the first step, deep or
huge JSON, devices and FIFOs as corpus files, a folder as a token file, a dangling previous-N link,
an MFU of inf, a weight decay past 1/lr). Each case checks the exit code, the one line, and that
nothing the user had was changed. (Every bit of the settings flipped, real signals during a long
validation, TORCH_LOGS: test_faults_slow.py.)"""

import json
import os
import pathlib
import signal
import struct
import zipfile
from pathlib import Path

import pytest
import torch
from test_faults import BASE, PROG, _dead_pid, _log, _main, _step, _tree
from test_faults_run import VOCAB, _prepared

from lecture_utils import prepare as prep_mod
from lecture_utils import train
from lecture_utils.train import build as build_module
from lecture_utils.train import trainer as trainer_module


def _run(capsys, *args) -> tuple[int, list[str], list[str]]:
    """test_faults' in-process CLI without --warmup: a resume here relies on the run's own, as a user's does."""
    return _main(capsys, *args, flags=BASE)


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


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
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


# (every single bit of the settings flipped: test_faults_slow.py)


# --- item 5: a stop signal is honoured between batches, in a validation and in a step


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
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


@pytest.mark.slow  # two trainer runs and a resume: make test-slow (CI)
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


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
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


# (a real SIGTERM and SIGINT during a long validation: test_faults_slow.py)


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


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_overwrite_steps_over_a_dangling_previous_link(tmp_path, capsys):
    """B04: --overwrite with a dangling previous-1 link failed with 'File exists [EEXIST]'."""
    out = tmp_path / "R"
    assert _run(capsys, "--steps", "1", "--warmup", "1", "--out", str(out))[0] == 0
    (out / "previous-1").symlink_to(tmp_path / "gone")
    code, lines, err = _run(capsys, "--steps", "1", "--warmup", "1", "--out", str(out), "--overwrite")
    assert (code, err) == (0, []) and lines[0] == f"--overwrite: moved the previous run to {out / 'previous-2'}"
    assert os.readlink(out / "previous-1") == str(tmp_path / "gone") and _step(out / "previous-2") == 1


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
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
