"""Faults of the second hostile sweep (issue 29) at the trainer's edges: short token splits, planted
links and folders in --out, a run's own warm-up, `~` and folders that are not a run's, other token
data on --resume, torchrun variables that are not numbers. Each case checks the exit code, the one
line, and that nothing outside the folder named was written. (A live run on --resume: test_faults.py;
a stray torchrun environment, SIGHUP and the `data prepare` command as real processes:
test_faults_slow.py.)"""

import hashlib
import json
import os
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_faults import BASE, PROG, ROOT, _log, _main, _step

from lecture_utils import prepare as prep_mod
from lecture_utils.data import write_tokens

VOCAB = 300  # a tokenizer of 256 bytes, <|endoftext|> and a few merges: prepared in milliseconds


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _corpus(folder: Path, paragraphs: list[str]) -> Path:
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "c.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return folder


def _words(i: int, n: int = 60) -> str:
    return " ".join(f"word{(i * 7 + j) % 97} of the hacker's jargon" for j in range(n))


def _prepared(folder: Path, vocab: int = VOCAB) -> Path:
    _corpus(folder, [_words(i) for i in range(40)])
    prep_mod.prepare(folder, vocab_size=vocab)
    return folder


# --- item 1: a split too short for one window is refused before the run folder is opened


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_a_val_split_shorter_than_a_window_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    """The issue's reproduction: the val split is paragraphs 0, 20, 40...: a short first paragraph."""
    data = _corpus(tmp_path / "D", ["tiny val."] + [_words(i) for i in range(1, 20)])
    assert prep_mod.main(["prepare", "--data-dir", str(data), "--vocab-size", str(VOCAB)]) == 0
    _, err = capsys.readouterr()
    n_val = json.loads((data / "tokens" / "val.json").read_text())["n_tokens"]
    assert n_val < 33 and (f"warning: the val split holds {n_val} tokens, fewer than the 129 that one window of "
                           "the tiny model needs (seq_len 128 + 1): the trainer will refuse it") in err
    monkeypatch.setenv("LECTURE_DATA", str(data))
    out = tmp_path / "R"
    code, lines, err = _main(capsys, "--steps", "6", "--val-every", "3", "--out", str(out))
    assert (code, lines) == (2, []) and err == [
        f"{PROG}the val tokens {data / 'tokens' / 'val.bin'} hold {n_val}, fewer than the 33 that one window of "
        "--seq-len 32 needs (seq_len + 1: the targets are the inputs shifted by one): prepare it from more text, "
        "or lower --seq-len"]
    assert not out.exists()  # refused before the run folder was opened: no --overwrite needed after
    # without validation the val split is never sampled: the run trains
    assert _main(capsys, "--steps", "2", "--val-every", "0", "--out", str(out))[0] == 0


def test_a_train_split_shorter_than_a_window_is_refused_at_once(tmp_path, capsys, monkeypatch):
    data = _corpus(tmp_path / "D", [_words(0), "x."])  # paragraph 0 to val, "x." alone to train
    prep_mod.prepare(data, vocab_size=VOCAB)
    monkeypatch.setenv("LECTURE_DATA", str(data))
    code, _, err = _main(capsys, "--steps", "3", "--out", str(tmp_path / "R"))
    assert code == 2 and len(err) == 1 and err[0].startswith(f"{PROG}the train tokens {data / 'tokens' / 'train.bin'} hold ")
    assert not (tmp_path / "R").exists()


# --- item 2: the lock file never follows a link, never empties another file


def test_a_lock_file_planted_as_a_link_is_refused_and_its_target_is_untouched(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("a user's file")
    out = tmp_path / "R"
    out.mkdir()
    (out / ".lock").symlink_to(victim)
    code, lines, err = _main(capsys, "--steps", "2", "--out", str(out))
    assert (code, lines) == (2, []) and err == [
        f"{PROG}{out / '.lock'} is a symbolic link (to {victim}), not the run's lock file: a run writes only files "
        "of its own in --out, never through a link; remove the link, or use another --out"]
    assert victim.read_text() == "a user's file" and sorted(p.name for p in out.iterdir()) == [".lock"]


# --- items 3, 15, 16: links and folders where a run's files go


def _a_run(tmp_path: Path, capsys) -> Path:
    out = tmp_path / "R"
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    return out


@pytest.mark.slow  # a trainer run or two: make test-slow (CI)
def test_resume_never_appends_the_log_through_a_dangling_link(tmp_path, capsys):
    out = _a_run(tmp_path, capsys)
    outside = tmp_path / "elsewhere" / "log.jsonl"
    (out / "log.jsonl").unlink()
    (out / "log.jsonl").symlink_to(outside)
    before = _sha(out / "checkpoint.pt")
    code, _, err = _main(capsys, "--steps", "4", "--out", str(out), "--resume")
    assert code == 2 and err == [
        f"{PROG}{out / 'log.jsonl'} is a symbolic link (to {outside}), not the run's log: a run writes only files "
        "of its own in --out, never through a link; remove the link, or use another --out"]
    assert not outside.exists() and not outside.parent.exists() and _sha(out / "checkpoint.pt") == before


def test_the_log_append_itself_never_follows_a_link(tmp_path):
    from lecture_utils.train.run import RunError, RunFolder

    outside = tmp_path / "outside.jsonl"
    (tmp_path / "R").mkdir()
    (tmp_path / "R" / "log.jsonl").symlink_to(outside)  # planted after the folder was opened
    with pytest.raises(RunError, match=r"cannot append step 1 to .*log\.jsonl: .*\[ELOOP\]"):
        RunFolder(tmp_path / "R").append({"step": 1})
    assert not outside.exists()


def test_a_checkpoint_that_is_a_folder_is_named_as_one(tmp_path, capsys):
    out = _a_run(tmp_path, capsys)
    (out / "checkpoint.pt").unlink()
    (out / "checkpoint.pt").mkdir()
    code, _, err = _main(capsys, "--steps", "4", "--out", str(out), "--resume")
    assert code == 2 and err == [f"{PROG}{out / 'checkpoint.pt'} is a folder, not the run's checkpoint: move it "
                                 "away, or use another --out"]


def test_a_log_that_is_a_folder_is_named_as_one_by_the_trainer_and_by_plot(tmp_path, capsys):
    out = tmp_path / "R"
    (out / "log.jsonl").mkdir(parents=True)
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out))
    assert code == 2 and err == [f"{PROG}{out / 'log.jsonl'} is a folder, not the run's log: move it away, or "
                                 "use another --out"]
    from lecture_utils import train

    with pytest.raises(SystemExit) as exit_:
        train.main(["plot", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and err == [f"python -m lecture_utils.train plot: error: {out / 'log.jsonl'} is a folder, "
                                 "not the run's log: move it away, or use another --out"]


# (item 17, --resume on a live run names the live trainer: test_faults.py, one trainer per folder)


# --- item 18: a resumed run keeps its own warm-up, even above a shorter --steps


@pytest.mark.slow  # two trainer runs and a resume: make test-slow (CI)
def test_resume_with_fewer_steps_than_the_runs_warmup_keeps_the_runs_own_schedule(tmp_path, capsys, monkeypatch):
    from lecture_utils import train

    args = BASE  # the default warm-up: min(20, --steps)
    full, out = tmp_path / "full", tmp_path / "R"
    assert train.main(["--steps", "30", "--out", str(full), *args]) == 0
    step = train.Trainer._step_with_oom_recovery

    def stop_after_four(self, lr):
        result = step(self, lr)
        if self.step == 3:  # this step is the fourth
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(train.Trainer, "_step_with_oom_recovery", stop_after_four)
    assert train.main(["--steps", "30", "--out", str(out), *args]) == 143
    monkeypatch.setattr(train.Trainer, "_step_with_oom_recovery", step)
    capsys.readouterr()
    assert _step(out) == 4
    assert train.main(["--steps", "8", "--out", str(out), "--resume", *args]) == 0  # --warmup never passed
    assert train.main(["--steps", "10", "--out", str(out), "--resume", "--warmup", "20", *args]) == 0  # its own
    capsys.readouterr()
    lrs = [r["lr"] for r in _log(out)]
    assert lrs == pytest.approx([3e-3 * s / 20 for s in range(10)]) == [r["lr"] for r in _log(full)][:10]
    code, _, err = _main(capsys, "--steps", "12", "--out", str(out), "--resume", "--warmup", "25")
    assert code == 2 and err == [f"{PROG}warmup must be in [0, 12], got 25 (this run's own warm-up is 20)"]


# --- items 19, 20, 21: --out is the folder named, and a folder of the run's own


def test_a_quoted_tilde_is_the_home_folder_as_every_message_says(tmp_path, capsys, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    code, lines, _ = _main(capsys, "--steps", "2", "--out", "~/x")  # --out='~/x': the shell left the ~
    assert code == 0 and lines[-1].endswith(f"; checkpoint {home / 'x' / 'checkpoint.pt'}")
    assert _step(home / "x") == 2 and not (cwd / "~").exists()


@pytest.mark.parametrize("where", ["package", "data", "notebooks"])
def test_out_inside_the_package_the_data_or_a_source_folder_is_refused(tmp_path, capsys, monkeypatch, where):
    data = tmp_path / "D"
    if where == "data":  # a data folder of its own, that the run could train on (else the committed one)
        _prepared(data)
        monkeypatch.setenv("LECTURE_DATA", str(data))
    out, what = {"package": (ROOT / "lecture_utils" / "runs-x", f"inside the package ({ROOT / 'lecture_utils'})"),
                 "data": (data / "tokens", f"inside the data folder ({data})"),  # the issue's --out data/tokens
                 "notebooks": (ROOT / "notebooks" / "runs-x", "inside the checkout's notebooks/ folder")}[where]
    before = sorted(out.iterdir()) if out.exists() else None
    code, lines, err = _main(capsys, "--steps", "2", "--out", str(out))
    assert (code, lines) == (2, []) and err == [f"{PROG}--out {out} is {what}: a run's files would mix with what "
                                                "is there; use a folder of its own, e.g. --out runs/tiny"]
    assert (sorted(out.iterdir()) if out.exists() else None) == before


def test_runs_under_the_checkout_are_ignored_by_git():
    check = subprocess.run(["git", "check-ignore", "-q", "runs/tiny/summary.json"], cwd=ROOT)
    assert check.returncode == 0  # `--out runs/tiny` as the help suggests: never committed by accident


def test_a_dangling_out_link_is_named_as_one(tmp_path, capsys):
    out, missing = tmp_path / "R", tmp_path / "gone" / "R"
    out.symlink_to(missing)
    code, _, err = _main(capsys, "--steps", "2", "--out", str(out))
    assert code == 2 and err == [f"{PROG}--out {out} is a symbolic link to {missing}, which does not exist: create "
                                 "that folder, or use another --out"]
    assert not missing.parent.exists()


# --- item 11: token ids beyond the vocabulary; item 12: other token data on --resume


def test_token_ids_beyond_the_declared_vocabulary_are_one_line_not_an_index_error(tmp_path, capsys, monkeypatch):
    data = _prepared(tmp_path / "D")
    ids = np.arange(20_000) % 9_000  # ids up to 8,999, past the tiny model's 8,192
    write_tokens(data / "tokens" / "train.bin", ids, vocab_size=10_000)
    sidecar = data / "tokens" / "train.json"
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**meta, "vocab_size": 8192}))  # a sidecar rewritten by hand; sha256 still true
    monkeypatch.setenv("LECTURE_DATA", str(data))
    code, _, err = _main(capsys, "--steps", "2", "--out", str(tmp_path / "R"))
    assert code == 2 and err == [f"{PROG}{data / 'tokens' / 'train.bin'}: holds token id 8999, beyond the vocab_size "
                                 "8192 its sidecar declares (every id must be below it); prepare the data again"]
    assert not (tmp_path / "R").exists()


def test_resume_on_other_token_data_is_a_settings_change(tmp_path, capsys, monkeypatch):
    a = _prepared(tmp_path / "A")
    b = _prepared(tmp_path / "B", vocab=VOCAB + 20)  # the same corpus, another vocabulary
    out = tmp_path / "R"
    monkeypatch.setenv("LECTURE_DATA", str(a))
    assert _main(capsys, "--steps", "2", "--out", str(out))[0] == 0
    before = _sha(out / "checkpoint.pt")
    shas = {f"{split}_{name}": json.loads((folder / "tokens" / f"{split}.json").read_text())["sha256"]
            for split in ("train", "val") for name, folder in (("a", a), ("b", b))}
    monkeypatch.setenv("LECTURE_DATA", str(b))
    code, _, err = _main(capsys, "--steps", "3", "--out", str(out), "--resume")
    assert code == 2 and len(err) == 1
    assert (f"(train-tokens sha256 {shas['train_a'][:12]}... -> sha256 {shas['train_b'][:12]}..., val-tokens sha256 "
            f"{shas['val_a'][:12]}... -> sha256 {shas['val_b'][:12]}...)") in err[0]
    assert "the run's own values and token data" in err[0] and _sha(out / "checkpoint.pt") == before
    code, lines, _ = _main(capsys, "--steps", "3", "--out", str(out), "--resume", "--allow-config-change")
    assert code == 0 and lines[0].startswith("warning: resuming with changed settings: train-tokens sha256 ")
    assert _log(out)[2]["config_change"]["train_tokens"] == [shas["train_a"], shas["train_b"]]
    monkeypatch.setenv("LECTURE_DATA", str(a))  # the run's own data again: no change, the checkpoint says b now
    code, _, err = _main(capsys, "--steps", "4", "--out", str(out), "--resume")
    assert code == 2 and "train-tokens sha256 " in err[0]


# --- item 7: WORLD_SIZE and RANK are torchrun's, or they are refused


@pytest.mark.parametrize(("env", "message"), [
    ({"WORLD_SIZE": "two"}, "the environment variable WORLD_SIZE='two' is not a whole number >= 1; torchrun sets it "
                            "for the processes it starts: unset it (unset WORLD_SIZE) to train in one process"),
    ({"WORLD_SIZE": "1", "RANK": "-1"}, "the environment variable RANK='-1' is not a whole number >= 0; torchrun "
                                        "sets it for the processes it starts: unset it (unset RANK) to train in one "
                                        "process"),
    ({"RANK": "one"}, "the environment variable RANK='one' is not a whole number >= 0; torchrun sets it for the "
                      "processes it starts: unset it (unset RANK) to train in one process"),
])  # (a stray WORLD_SIZE=2 would wait in rendezvous if it were not refused: test_faults_slow.py)
def test_garbage_in_the_torchrun_environment_is_one_line(tmp_path, capsys, monkeypatch, env, message):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, lines, err = _main(capsys, "--steps", "2", "--out", str(tmp_path / "R"))
    assert (code, lines, err) == (2, [], [f"{PROG}{message}"])
    assert not (tmp_path / "R").exists()
