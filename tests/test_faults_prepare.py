"""Faults of the second hostile sweep (issue 29) in `python -m lecture_utils.data prepare`: planted
staging folders and a user's own `.prepare-notes/`, corpora too small for two splits, a word too
long to train on. Each case checks the exit code, the one line, and what the folder holds after."""

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from lecture_utils import files
from lecture_utils import prepare as prep_mod
from lecture_utils.prepare import PREPARED_FILES

VOCAB = 300
PROG = "python -m lecture_utils.data: error: "


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _main(capsys, *args) -> tuple[int, list[str], list[str]]:
    try:
        code = prep_mod.main(["prepare", *args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out.strip().splitlines(), err.strip().splitlines()


def _fake_prepared_files(folder: Path) -> None:
    """Files named as prepare names its own, holding someone else's bytes, sealed as if ready to move in."""
    for name in PREPARED_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"not prepare's {name}\n")
    files.seal(folder, PREPARED_FILES)


# --- item 9: recover only prepare's own staging folders, checked first


def test_a_planted_staging_link_is_never_followed_and_a_users_folder_is_kept(prepared, tmp_path, capsys):
    other = tmp_path / "other"  # another folder's files, linked in under a staging folder's name
    _fake_prepared_files(other)
    (prepared / ".prepare-999-abcd1234").symlink_to(other)
    notes = prepared / ".prepare-notes"  # a user's own folder
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    before_other = _tree(other)
    code, lines, err = _main(capsys, "--data-dir", str(prepared), "--vocab-size", str(VOCAB))
    assert code == 0 and err == [] and [line.split(":")[0] for line in lines] == ["train", "val"]
    assert _tree(other) == before_other  # nothing moved out of it
    assert (notes / "todo.txt").read_text() == "mine"
    assert "not prepare's" not in (prepared / "tokenizer.json").read_text()
    assert (prepared / ".prepare-999-abcd1234").is_symlink()  # left as it was


def test_a_sealed_staging_folder_whose_files_do_not_match_their_sidecars_is_left_alone(prepared, capsys):
    before = _tree(prepared)
    staging = prepared / ".prepare-4242-zz9_x1yq"
    _fake_prepared_files(staging)
    held = _tree(staging)
    code, _, err = _main(capsys, "--data-dir", str(prepared), "--vocab-size", str(VOCAB))
    assert code == 0 and err == [
        f"left {staging.name} as it is: its train token files cannot be read ({staging / 'tokens' / 'train.json'}: "
        "not a token sidecar (invalid JSON: Expecting value: line 1 column 1 (char 0))), so it is not moved in; "
        f"remove it if it is not a prepare's (the files in {prepared} were untouched)"]
    assert _tree(staging) == held
    after = {k: v for k, v in _tree(prepared).items() if not k.startswith(staging.name)}
    assert after == before  # the same corpus, the same bytes: rebuilt, and nothing of the staging moved in


def test_the_message_after_a_finished_recovery_does_not_claim_the_files_are_unchanged(prepared, capsys,
                                                                                         monkeypatch):
    reference = prepared.parent / "reference"
    (reference / "corpus").mkdir(parents=True)
    (reference / "corpus" / "tiny.txt").write_bytes((prepared / "corpus" / "tiny.txt").read_bytes())
    prep_mod.prepare(reference, vocab_size=VOCAB + 50)
    staging = prepared / f".prepare-{os.getpid() + 100000}-abcdefgh"  # a dead prepare's, sealed, not yet moved in
    for name in PREPARED_FILES:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes((reference / name).read_bytes())
    files.seal(staging, PREPARED_FILES)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", str(prepared / "tokenizer.json"))

    monkeypatch.setattr(prep_mod, "train_tokenizer", full_disk)
    code, _, err = _main(capsys, "--data-dir", str(prepared), "--vocab-size", str(VOCAB))
    assert code == 2 and err == [
        f"finished moving in the files of an interrupted prepare ({staging.name})",
        f"{PROG}No space left on device [ENOSPC]: {prepared / 'tokenizer.json'} (the files are the interrupted "
        "prepare's, moved in first; this one replaced nothing)"]
    assert {n: (prepared / n).read_bytes() for n in PREPARED_FILES} == {n: (reference / n).read_bytes()
                                                                         for n in PREPARED_FILES}


# --- item 1 (prepare's half): what comes out smaller than asked is said


def test_prepare_says_when_the_tokenizer_learned_fewer_tokens_than_asked(tmp_path, capsys):
    data = tmp_path / "D"
    (data / "corpus").mkdir(parents=True)
    (data / "corpus" / "c.txt").write_text("One short paragraph.\n\nAnd another.\n")  # far too little for 8192
    code, _, err = _main(capsys, "--data-dir", str(data), "--vocab-size", "8192")
    learned = json.loads((data / "tokens" / "train.json").read_text())["vocab_size"]
    err = "\n".join(err)
    assert code == 0 and learned < 8192 and (f"warning: the tokenizer learned {learned} tokens, fewer than the --vocab-size 8,192 "
                               f"asked: the corpus holds no more merges to learn; the token files say vocab_size "
                               f"{learned}") in err


# --- item 14: a corpus too small for two splits


@pytest.mark.parametrize(("text", "paragraphs"), [("", 0), ("\n\n  \n", 0), ("One paragraph only.\n", 1)])
def test_a_corpus_too_small_for_two_splits_is_one_line(tmp_path, capsys, text, paragraphs):
    folder = tmp_path / "data"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "c.txt").write_text(text)
    code, lines, err = _main(capsys, "--data-dir", str(folder), "--vocab-size", str(VOCAB))
    assert (code, lines) == (2, []) and err == [
        f"{PROG}{folder / 'corpus'} holds {paragraphs} paragraph(s) (text separated by blank lines): the val split "
        "takes paragraphs 0, 20, 40, ... and train the rest, so both need 2 paragraphs at least; add text to it"]
    assert sorted(p.name for p in folder.iterdir()) == ["corpus"]


# --- item 26: a word too long to train on is refused, at once


def test_a_one_megabyte_word_is_refused_before_the_tokenizer_trains(tmp_path, capsys):
    folder = tmp_path / "data"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "c.txt").write_text("A first paragraph.\n\n" + "x" * 1_000_000 + "\n\nA last one.\n")
    start = time.monotonic()
    code, lines, err = _main(capsys, "--data-dir", str(folder), "--vocab-size", "8192")
    assert time.monotonic() - start < 10  # before: still training after 110 s
    assert (code, lines) == (2, []) and err == [
        f"{PROG}{folder / 'corpus' / 'c.txt'}: paragraph 2 holds a word of 1,000,000 bytes with nothing to split it "
        "at (a space, a digit or punctuation): training the tokenizer on it would take minutes to hours (the time "
        "grows with the square of a word's length); split it, or remove it (at most 10,000 bytes a word)"]
    assert sorted(p.name for p in folder.iterdir()) == ["corpus"]


def test_a_long_line_that_the_tokenizer_splits_is_not_refused(tmp_path):
    """A run of 20,000 characters without spaces, of letters, digits and punctuation in turn (a URL, a
    hash): the tokenizer's pre-tokenizer splits it into short words, so it trains fast."""
    folder = tmp_path / "data"
    (folder / "corpus").mkdir(parents=True)
    run = "abc123/" * 3000
    (folder / "corpus" / "c.txt").write_text("\n\n".join(["A paragraph."] * 10 + [run] + ["Another."] * 10) + "\n")
    start = time.monotonic()
    result = prep_mod.prepare(folder, vocab_size=VOCAB)
    assert result["train"]["n_tokens"] > 0 and time.monotonic() - start < 30
