"""Faults that used to lose work (issue 21): what --overwrite may move, a closed pipe's stream,
unusable checkpoints (fuzzed), batches that cannot fit, a loss gone NaN, and messages that say what
is true. Every case checks the exit code, the one line, and that nothing the user had was changed.
(A second signal, torchrun's SIGTERM and refusals, closed pipes as real processes: test_faults_slow.py.)"""

import errno
import io
import json
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_faults import BASE, ENV, PROG, ROOT, _log, _main, _step, _tree

from lecture_utils import train
from lecture_utils.train import run as run_module
from lecture_utils.train import trainer as trainer_module
from lecture_utils.train.checkpoint import payload_digest
from lecture_utils.train.resolve import check_fits, settings_change
from lecture_utils.train.run import resume_payload

# --- 1. --out names a folder of the run's own; --overwrite moves only the run's files

@pytest.mark.parametrize("out", ["", " "])
def test_an_empty_out_is_refused(capsys, out):
    code, _, err = _main(capsys, "--steps", "2", "--out", out, "--overwrite")
    assert code == 2 and err == ["python -m lecture_utils.train: error: argument --out: empty: name a folder for "
                                 "the run, e.g. --out runs/tiny"]


@pytest.mark.parametrize(("out", "what"), [
    (".", "the current directory"),
    ("/", "the filesystem root"),
    ("~", "the home directory"),
    (str(ROOT), f"a folder that holds the checkout ({ROOT})"),
    (str(ROOT.parent), f"a folder that holds the checkout ({ROOT})"),
])
def test_out_may_not_be_a_folder_that_holds_other_things(capsys, monkeypatch, tmp_path, out, what):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.txt").write_text("a user's file")
    before = _tree(tmp_path)
    code, lines, err = _main(capsys, "--steps", "2", "--out", out, "--overwrite")
    assert code == 2 and lines == [] and err == [
        f"python -m lecture_utils.train: error: --out {out} is {what}: a run needs a folder of its own, e.g. "
        "--out runs/tiny"]
    assert _tree(tmp_path) == before


def test_overwrite_refuses_a_folder_holding_anything_else_and_changes_nothing(tmp_path, capsys):
    out = tmp_path / "w"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    (out / "child").mkdir()  # another trainer's live run, or the user's notes
    (out / "child" / "checkpoint.pt").write_bytes(b"someone else's")
    (out / "notes.md").write_text("mine")
    before = _tree(out)
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out), "--overwrite")
    assert code == 2 and err == [
        f"python -m lecture_utils.train: error: --overwrite moves only a run's own files (checkpoint.pt, "
        f"log.jsonl, summary.json, curves.png), but {out} also holds child, notes.md: nothing was moved; use a "
        "folder of the run's own"]
    assert _tree(out) == before and not (out / "previous-1").exists()


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_overwrite_moves_the_runs_own_files_and_keeps_earlier_ones(tmp_path, capsys):
    out = tmp_path / "w"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    (out / "curves.png").write_bytes(b"\x89PNG a figure")
    first = _tree(out)
    code, lines, _ = _main(capsys, "--steps", "1", "--out", str(out), "--overwrite")
    assert code == 0 and lines[0] == f"--overwrite: moved the previous run to {out / 'previous-1'}"
    moved = _tree(out / "previous-1")
    assert moved == {k: v for k, v in first.items() if k != ".lock"}  # the run's own files, byte for byte
    assert _main(capsys, "--steps", "1", "--out", str(out), "--overwrite")[0] == 0
    assert _tree(out / "previous-1") == moved and (out / "previous-2" / "checkpoint.pt").exists()


def test_overwrite_on_an_empty_folder_says_nothing_about_moving(tmp_path, capsys):
    code, lines, _ = _main(capsys, "--steps", "1", "--out", str(tmp_path / "new"), "--overwrite")
    assert code == 0 and not any("moved" in line for line in lines)


# --- 3. output is never fatal (closed pipes and a full disk as real processes: test_faults_slow.py)

def test_a_guarded_stream_swallows_its_first_error_and_everything_after(tmp_path):
    from lecture_utils.console import GuardedStream, closed_pipe

    class Broken(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    stream = GuardedStream(Broken())
    assert stream.write("one") == 3 and stream.write("two") == 3
    stream.flush()
    assert closed_pipe(stream.lost) and not closed_pipe(OSError(errno.ENOSPC, "full"))


# --- 4. every checkpoint the trainer cannot use is one line, exit 2, nothing changed

SMALL = {"d_model": 16, "n_layers": 1, "n_heads": 2, "vocab_size": 64}


def _small_trainer(out: Path, **kw) -> train.Trainer:
    tokens = np.random.default_rng(0).integers(0, 64, 2048, dtype=np.uint16)
    cfg = train.TrainConfig(steps=kw.pop("steps", 2), batch_size=2, seq_len=8, warmup=0, val_every=0,
                            peak_flops=1e12)
    return train.Trainer(cfg, out, progress=False, echo=lambda line: None, train_data=tokens, val_data=tokens,
                         model_overrides=kw.pop("overrides", SMALL), **kw)


def _mutations(good: bytes, other_model: bytes, rng: random.Random):
    """Byte flips, truncations, foreign pickles and other models' checkpoints (name, bytes)."""
    for i in range(150):
        data = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        yield f"flip {i}", bytes(data)
    for i in range(60):
        yield f"truncated {i}", good[:rng.randrange(len(good))]
    buffer = io.BytesIO()
    torch.save({"model": {"w": torch.zeros(2)}, "optimizer": {}, "step": 1, "rng": {}}, buffer)
    yield from [("empty", b""), ("text", b"just some text\n" * 20), ("zeros", bytes(4096)),
                ("pickled object", pickle.dumps(Path("x"))), ("pickled list", pickle.dumps([1, 2, 3])),
                ("pickled dict", pickle.dumps({"model": 1, "optimizer": 2, "step": 3, "rng": 4})),
                ("torch tensor", _saved(torch.zeros(3))), ("half a layout", buffer.getvalue()),
                ("another model (notebook 08's save_checkpoint)", other_model)]


def _saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def test_fuzz_every_unusable_checkpoint_is_one_value_error_naming_the_file(tmp_path):
    good_run = _small_trainer(tmp_path / "good")
    good_run.run()
    good_run.close()
    good = (tmp_path / "good" / "checkpoint.pt").read_bytes()
    from lecture_utils.models import GPT, get_config

    wide = GPT(get_config("tiny", **{**SMALL, "d_model": 32}))  # notebook 08's checkpoint of a wider model
    train.save_checkpoint(tmp_path / "wide.pt", wide, torch.optim.AdamW(wide.parameters()), 1)
    trainer = _small_trainer(tmp_path / "victim", steps=5)
    path = tmp_path / "victim" / "checkpoint.pt"
    outcomes = {"loaded": 0, "refused": 0}
    for name, data in _mutations(good, (tmp_path / "wide.pt").read_bytes(), random.Random(0)):
        path.write_bytes(data)
        try:
            settings_change(resume_payload(path.parent), trainer.cfg, trainer.plan, path)
            trainer._load()
            outcomes["loaded"] += 1  # a flip in an unused byte of the zip: the run is intact
        except ValueError as err:
            assert str(path) in str(err) and "\n" not in str(err), (name, err)
            outcomes["refused"] += 1
        assert path.read_bytes() == data, name  # never rewritten
    trainer.close()
    assert outcomes["refused"] >= 200, outcomes


def test_an_unusable_checkpoint_at_the_command_line_is_one_line_and_changes_nothing(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    good = (out / "checkpoint.pt").read_bytes()
    for data in (b"a text file, not a checkpoint\n", good[: len(good) // 3], pickle.dumps({"step": 1})):
        (out / "checkpoint.pt").write_bytes(data)
        before = _tree(out)
        code, lines, err = _main(capsys, "--steps", "4", "--out", str(out), "--resume")
        assert code == 2 and lines == [] and len(err) == 1 and str(out / "checkpoint.pt") in err[0], err
        assert _tree(out) == before


def test_a_checkpoint_of_another_model_size_from_notebook_08_is_one_line(tmp_path, capsys):
    from lecture_utils.models import GPT, get_config

    out = tmp_path / "R"
    assert _main(capsys, "--steps", "1", "--out", str(out))[0] == 0
    wide = GPT(get_config("tiny", d_model=128))
    train.save_checkpoint(out / "checkpoint.pt", wide, torch.optim.AdamW(wide.parameters()), 1)
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"python -m lecture_utils.train: error: {out / 'checkpoint.pt'} holds no sha256 of its "
                             "contents and settings")  # issue 38: --resume continues only the trainer's checkpoints
    payload = torch.load(out / "checkpoint.pt", weights_only=True)  # the same, with an intact sha256
    payload["extra"] = {"sha256": payload_digest(payload["model"], payload["optimizer"], 1, payload["rng"], {})}
    torch.save(payload, out / "checkpoint.pt")
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"python -m lecture_utils.train: error: {out / 'checkpoint.pt'} cannot be loaded into "
                             "this run's tiny model and optimizer: Error(s) in loading state_dict for GPT")


# --- 5. numbers that pass the types but not the machine or the run

def test_a_batch_that_cannot_fit_is_one_line_before_anything_is_allocated(tmp_path, capsys):
    out = tmp_path / "R"
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out), "--batch-size", "1000000000000")
    assert code == 2 and len(err) == 1, err
    assert "error: --batch-size 1000000000000 does not fit: one step of 1,000,000,000,000 sequence(s) x 32 tokens " \
           "needs about" in err[0] and err[0].endswith("lower --batch-size, or raise --accum (now 1) to split each step")
    assert not out.exists()


def test_check_fits_compares_the_predicted_step_with_what_is_free(monkeypatch):
    from lecture_utils.models import get_config
    from lecture_utils.training_memory import gpt_step_memory

    cfg = get_config("tiny")
    need = gpt_step_memory(cfg, 4, 32).peak + 4 * 33 * 8  # the step, and its int64 windows
    cpu = torch.device("cpu")
    monkeypatch.setattr("lecture_utils.train.resolve.available_bytes", lambda device: need)
    check_fits(cfg, 4, 32, cpu, batch_size=4, accum=1)  # exactly enough
    monkeypatch.setattr("lecture_utils.train.resolve.available_bytes", lambda device: need - 1)
    with pytest.raises(ValueError, match=r"--batch-size 4 does not fit: one step of 4 sequence\(s\) x 32 tokens"):
        check_fits(cfg, 4, 32, cpu, batch_size=4, accum=1)


def test_a_loss_gone_nan_stops_the_run_and_keeps_the_last_finite_checkpoint(tmp_path, capsys):
    out = tmp_path / "R"
    code, _, err = _main(capsys, "--steps", "20", "--out", str(out), "--lr", "1e6", "--weight-decay", "0", "--ckpt-every",
                          "1")
    assert code == 1 and len(err) == 1, err
    last = _step(out)
    assert err[0] == (f"python -m lecture_utils.train: error: step {last + 1}: the loss is nan (not finite), so "
                      f"training stopped there and saved nothing of it; the checkpoint at step {last} is intact: "
                      "lower --lr (now 1e+06) and resume it with --allow-config-change, or start over with --overwrite")
    payload = train.read_checkpoint(out / "checkpoint.pt")
    assert all(torch.isfinite(t).all() for t in payload["model"].values())
    assert len(_log(out)) == last


def test_a_nan_before_any_checkpoint_says_there_is_none(tmp_path, capsys):
    out = tmp_path / "R"
    code, _, err = _main(capsys, "--steps", "20", "--out", str(out), "--lr", "1e6", "--weight-decay", "0")
    assert code == 1 and not (out / "checkpoint.pt").exists()
    assert err[0].endswith("saved nothing of it; no checkpoint has been saved yet: lower --lr (now 1e+06) and start "
                           "over with --overwrite")


# --- 6. messages say what is true and what to do

def test_a_log_without_a_checkpoint_points_to_overwrite_from_both_sides(tmp_path, capsys):
    out = tmp_path / "R"
    out.mkdir()
    (out / "log.jsonl").write_text(json.dumps({"step": 1, "loss": 9.0}) + "\n")  # died before its first save
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out))
    assert code == 2 and err[0].endswith(f"--out {out} holds a run that stopped before its first checkpoint "
                                         "(log.jsonl): there is nothing to resume; start over with --overwrite "
                                         "(moves it aside, deletes nothing)")
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume")
    assert code == 2 and err[0].endswith(f"nothing to resume: {out} has no checkpoint.pt, only log.jsonl of a run "
                                         "that stopped before its first checkpoint; start over with --overwrite "
                                         "(moves it aside)")
    assert _main(capsys, "--steps", "2", "--out", str(out), "--overwrite")[0] == 0


def test_missing_token_files_are_named_not_blamed_on_out(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LECTURE_DATA", str(tmp_path / "no-data"))
    code, _, err = _main(capsys, "--steps", "2", "--out", str(tmp_path / "R"))
    assert code == 2 and len(err) == 1 and "--out" not in err[0]
    assert f"cannot read the train tokens: {tmp_path / 'no-data' / 'tokens' / 'train.bin'} does not exist" in err[0]


def test_fewer_steps_on_resume_is_called_a_step_count_change(tmp_path, capsys):
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "5", "--out", str(out), flags=BASE)[0] == 0  # the default warm-up: min(20, 5)
    assert _main(capsys, "--steps", "3", "--out", str(out), "--resume", flags=BASE) == (2, [], [
        f"{PROG}{out / 'checkpoint.pt'} is at step 5, beyond --steps 3 (the run's total number of steps): pass "
        "--steps 5 or more to continue it"])


def test_the_trainer_module_does_not_load_torch_before_its_main():
    """So that a Ctrl-C while torch loads lands in __main__'s handler (one line), not in an import."""
    code = ("import sys, lecture_utils, lecture_utils.train; "
            "print('torch' in sys.modules, 'lecture_utils.train.loop' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=ENV)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_loop_stops_on_a_nonfinite_loss_under_its_own_name():
    assert issubclass(trainer_module.LossNotFinite, run_module.RunError)  # exit 1 at the command line
