"""Preparing the data (``make data``, ``python -m lecture_utils.data prepare``): a byte-level BPE
tokenizer trained on ``corpus/`` and the uint16 train/val token files, reproducibly (the same
bytes each time).

What it writes replaces the files already there only once everything is built and read back:
the files go into a staging folder beside their places, a COMMITTING marker is written, and they
are renamed in (``lecture_utils/files.py``). A failure or a kill before the marker leaves the
old files as they were; a kill during the renames is finished by the next ``prepare``. One
``prepare`` per folder at a time (a lock on the folder). Reading the files is
``lecture_utils/data.py``'s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from lecture_utils import validate
from lecture_utils.console import describe
from lecture_utils.data import (
    DATA_ENV_VAR,
    EOT,
    data_dir,
    load_tokens,
    read_sidecar,
    scan_tokens,
    write_tokens,
)
from lecture_utils.files import FolderLock, is_sealed, move_in_sealed, seal

# BPE training time grows with the square of a word's length (a run of letters, digits or
# punctuation with nothing to split it at): 50,000 characters take 2 s, a 1 MB line many minutes.
# The committed corpus's longest word is 226 characters.
MAX_WORD = 10_000
_LONG_RUN = re.compile(rf"\S{{{MAX_WORD + 1},}}|\s{{{MAX_WORD + 1},}}")


def _documents(corpus_dir: Path, val_every: int) -> list[str]:
    """Paragraphs (blank-line separated) of every corpus file, in a fixed order. A corpus with too
    few paragraphs for both splits, or with a word too long to train on, is one ValueError."""
    files = sorted(corpus_dir.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no .txt files in {corpus_dir}; see data/README.md")
    docs = []
    for f in files:
        if not f.is_file():  # /dev/zero would be read until memory runs out, a FIFO waited on for ever
            raise ValueError(f"{f} is {'a folder' if f.is_dir() else 'not a plain file (a device, a FIFO)'}: the "
                             f"corpus is plain .txt files; move it out of {corpus_dir}")
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{f}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
        for number, paragraph in enumerate(paragraphs, 1):
            _refuse_a_long_word(f, number, paragraph)
        docs += paragraphs
    train = len(docs) - len(range(0, len(docs), val_every))
    if not docs or not train:
        raise ValueError(f"{corpus_dir} holds {len(docs)} paragraph(s) (text separated by blank lines): the val split "
                         f"takes paragraphs 0, {val_every}, {2 * val_every}, ... and train the rest, so both need "
                         "2 paragraphs at least; add text to it")
    return docs


def _refuse_a_long_word(path: Path, number: int, paragraph: str) -> None:
    """One ValueError for a word of more than MAX_WORD characters (as the tokenizer splits words)."""
    for run in _LONG_RUN.finditer(paragraph):
        from tokenizers import pre_tokenizers

        pieces = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(run.group())
        longest = max((len(piece) for piece, _ in pieces), default=0)  # in bytes (byte-level pieces)
        if longest > MAX_WORD:
            raise ValueError(f"{path}: paragraph {number} holds a word of {longest:,} bytes with nothing to split it "
                             f"at (a space, a digit or punctuation): training the tokenizer on it would take minutes "
                             f"to hours (the time grows with the square of a word's length); split it, or remove "
                             f"it (at most {MAX_WORD:,} bytes a word)")


def train_tokenizer(corpus_dir: Path, vocab_size: int, out: Path):
    """Byte-level BPE (the GPT-2 scheme) trained on the corpus; saved as JSON."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([str(f) for f in sorted(corpus_dir.glob("*.txt"))], trainer)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        tok.save(str(out))
    except Exception as err:  # tokenizers reports a failed write as its own Exception, "... (os error 28)"
        found = re.search(r"os error (\d+)", str(err))
        code = int(found[1]) if found else 0
        raise OSError(code, os.strerror(code) if code else str(err), str(out)) from None
    return tok


# What `prepare` writes, relative to the data folder. They are built in a staging folder
# beside them (``.prepare-<pid>-*``, same file system), checked, and only then renamed into
# place, one atomic rename each (files.move_in_sealed), after a COMMITTING marker is written in the staging folder.
# A failure or kill before the marker leaves the old files untouched (the next `prepare`
# removes the stale staging folder); a kill during the renames (a few microseconds) is
# finished by the next `prepare`, which moves the rest of the verified files in first.
MIN_VOCAB = 256 + 1  # every byte, and the one special token (EOT)
PREPARED_FILES = ("tokens/train.bin", "tokens/train.json", "tokens/val.bin", "tokens/val.json", "tokenizer.json")
STAGING_PREFIX = ".prepare-"
# Exactly what tempfile.mkdtemp names a staging folder: anything else (a user's .prepare-notes/) is not ours.
STAGING = re.compile(r"\.prepare-(\d+)-[a-z0-9_]+")
FINISHED = "finished moving in the files of an interrupted prepare"


def prepare(folder: str | Path | None = None, vocab_size: int = 8192, val_every: int = 20, *,
            echo=None) -> dict:
    """Train the tokenizer and write train/val token files in ``folder`` (default:
    :func:`data_dir`), from its ``corpus/``. Deterministic: same bytes twice.

    Paragraph ``i`` goes to validation when ``i % val_every == 0``, so both splits
    cover both books. Documents are joined with the ``<|endoftext|>`` token.

    The files already there are replaced only when every step succeeded (see
    ``PREPARED_FILES``); one ``prepare`` per folder at a time. ``echo``: called with a
    line when an interrupted earlier ``prepare`` is cleaned up or finished.
    """
    folder = Path(folder) if folder is not None else data_dir()
    # byte-level BPE: its 256 byte tokens and <|endoftext|> come first; uint16 holds 65,536 ids
    vocab_size = validate.integer(vocab_size, "vocab_size (256 bytes + <|endoftext|> at least; uint16 holds "
                                  "65,536 ids)", low=MIN_VOCAB, high=65536)
    val_every = validate.integer(val_every, "val_every")
    echo = echo or (lambda line: None)
    docs = _documents(folder / "corpus", val_every)  # no corpus, too little, a huge word: before anything is written
    with _exclusive(folder):
        _recover(folder, echo)
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=folder))
        try:
            result = _build(folder / "corpus", docs, staging, vocab_size, val_every)
            seal(staging, PREPARED_FILES)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        move_in_sealed(staging, folder, PREPARED_FILES)
    _warn_if_small(result, vocab_size, echo)
    return result


def _warn_if_small(result: dict, vocab_size: int, echo) -> None:
    """What the trainer would refuse, or what came out smaller than asked, said once, here."""
    from lecture_utils.models import CONFIGS

    smallest = min(CONFIGS.values(), key=lambda c: c.seq_len)
    name = next(n for n, c in CONFIGS.items() if c is smallest)
    for split, meta in result.items():
        if meta["n_tokens"] < smallest.seq_len + 1:
            echo(f"warning: the {split} split holds {meta['n_tokens']:,} tokens, fewer than the {smallest.seq_len + 1} "
                 f"that one window of the {name} model needs (seq_len {smallest.seq_len} + 1): the trainer will refuse "
                 "it; add text to corpus/ (val takes every 20th paragraph)")
    learned = result["train"]["vocab_size"]
    if learned < vocab_size:
        echo(f"warning: the tokenizer learned {learned:,} tokens, fewer than the --vocab-size {vocab_size:,} asked: "
             f"the corpus holds no more merges to learn; the token files say vocab_size {learned:,}")


def _build(corpus_dir: Path, docs: list[str], out: Path, vocab_size: int, val_every: int) -> dict:
    """Tokenizer and token files in ``out`` (the staging folder), each checked by reading it back."""
    from tokenizers import Tokenizer

    tok = train_tokenizer(corpus_dir, vocab_size, out / "tokenizer.json")
    eot = tok.token_to_id(EOT)
    splits = {"train": [], "val": []}
    for i, doc in enumerate(docs):
        splits["val" if i % val_every == 0 else "train"].append(doc)
    result = {}
    for split, texts in splits.items():
        ids: list[int] = []
        for enc in tok.encode_batch(texts):
            ids += enc.ids + [eot]
        result[split] = write_tokens(out / "tokens" / f"{split}.bin", np.array(ids, dtype=np.int64),
                                     tok.get_vocab_size(), tokenizer="data/tokenizer.json",
                                     documents=len(texts),
                                     # the text's size, so bytes per token needs no corpus (a wheel has none)
                                     text_bytes=sum(len(text.encode("utf-8")) for text in texts))
        load_tokens(out / "tokens" / f"{split}.bin", vocab_size=tok.get_vocab_size())  # as written?
    if Tokenizer.from_file(str(out / "tokenizer.json")).get_vocab_size() != tok.get_vocab_size():
        raise ValueError(f"{out / 'tokenizer.json'}: does not read back as written")
    return result


def _recover(folder: Path, echo) -> None:
    """Staging folders left by a ``prepare`` that died (we hold the folder's lock, so no live
    one owns them): finish one that was moving its files in, once its files are checked against
    their sidecars, and remove the others. Only real folders named as ``prepare`` names its own
    are touched: a link, or a user's ``.prepare-notes/``, is left as it is."""
    for staging in sorted(folder.glob(STAGING_PREFIX + "*")):
        if not STAGING.fullmatch(staging.name) or staging.is_symlink() or not staging.is_dir():
            continue
        if not is_sealed(staging):
            shutil.rmtree(staging)
            echo(f"removed {staging.name}, left by an interrupted prepare; the files in {folder} were untouched")
            continue
        problem = _unverified(staging, folder)
        if problem:
            echo(f"left {staging.name} as it is: {problem}, so it is not moved in; remove it if it is not a "
                 f"prepare's (the files in {folder} were untouched)")
            continue
        move_in_sealed(staging, folder, PREPARED_FILES)
        echo(f"{FINISHED} ({staging.name})")


def _unverified(staging: Path, folder: Path) -> str | None:
    """Why a sealed staging folder's files may not be moved in (None: they may). Each name is
    taken from the staging folder or, where an interrupted move took it in already, from
    ``folder``; each must be a plain file, and each token file must match its sidecar."""
    from tokenizers import Tokenizer

    place = {name: staging / name if (staging / name).exists() or (staging / name).is_symlink() else folder / name
             for name in PREPARED_FILES}
    for path in place.values():
        if path.is_symlink() or not path.is_file() or (staging / "tokens").is_symlink():
            return f"{path} is not a plain file"
    vocab = set()
    for split in ("train", "val"):
        try:
            meta = read_sidecar(place[f"tokens/{split}.json"])
            digest, largest = scan_tokens(place[f"tokens/{split}.bin"])
        except (OSError, ValueError) as err:
            return f"its {split} token files cannot be read ({err})"
        if digest != meta["sha256"] or largest >= meta["vocab_size"]:
            return f"its {split} token file does not match its sidecar"
        vocab.add(meta["vocab_size"])
    try:
        learned = Tokenizer.from_file(str(place["tokenizer.json"])).get_vocab_size()
    except Exception:  # tokenizers raises its own Exception for a file it cannot parse
        return "its tokenizer.json does not load"
    return None if vocab == {learned} else "its tokenizer and token files disagree on the vocabulary"


@contextlib.contextmanager
def _exclusive(folder: Path):
    """Hold an advisory lock on ``folder`` itself (no lock file left behind; released when the
    process ends, however it ends)."""
    lock = FolderLock(folder, folder=True)
    try:
        held = lock.acquire()
    except OSError:  # a file system without file locks (some network mounts): go on unlocked
        held = True
    if not held:
        pids = sorted({m[1] for d in folder.glob(STAGING_PREFIX + "*") if (m := STAGING.fullmatch(d.name))})
        holder = f" (PID {', '.join(pids)})" if pids else ""
        raise OSError(f"another `prepare`{holder} is writing in {folder}; wait for it to finish")
    try:
        yield
    finally:
        lock.release()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lecture_utils.data",
                                     description="Build the tokenizer and uint16 token files.")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="train the tokenizer, write tokens/{train,val}.bin")
    prep.add_argument("--vocab-size", type=int, default=8192)
    prep.add_argument("--data-dir", type=Path, default=None,
                      help=f"folder with corpus/ (default: ${DATA_ENV_VAR}, else the package's data: "
                           f"{data_dir()})")
    args = parser.parse_args(argv)
    said: list[str] = []

    def echo(line: str) -> None:
        said.append(line)
        print(line, file=sys.stderr)

    def kept() -> str:  # true either way: an interrupted prepare finished first, or nothing was moved in
        if any(line.startswith(FINISHED) for line in said):
            return "(the files are the interrupted prepare's, moved in first; this one replaced nothing)"
        return "(the existing files are unchanged)"

    try:
        result = prepare(args.data_dir, args.vocab_size, echo=echo)
    except (TypeError, ValueError) as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted {kept()}\n")
    except OSError as err:  # no corpus; disk full, read-only, another prepare: nothing replaced
        what = f"{describe(err)}: {err.filename}" if err.strerror and err.filename else str(err)
        parser.exit(2, f"{parser.prog}: error: {what} {kept()}\n")
    for split, meta in result.items():
        print(f"{split}: {meta['n_tokens']:,} tokens, vocab {meta['vocab_size']}, sha256 {meta['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
