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
from lecture_utils.data import DATA_ENV_VAR, EOT, data_dir, load_tokens, write_tokens
from lecture_utils.files import FolderLock, is_sealed, move_in_sealed, seal


def _documents(corpus_dir: Path) -> list[str]:
    """Paragraphs (blank-line separated) of every corpus file, in a fixed order."""
    files = sorted(corpus_dir.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no .txt files in {corpus_dir}; see data/README.md")
    docs = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{f}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        docs += [p.strip() for p in text.split("\n\n") if p.strip()]
    return docs


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
    docs = _documents(folder / "corpus")  # no corpus: fails here, before anything is written
    with _exclusive(folder):
        _recover(folder, echo or (lambda line: None))
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=folder))
        try:
            result = _build(folder / "corpus", docs, staging, vocab_size, val_every)
            seal(staging, PREPARED_FILES)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        move_in_sealed(staging, folder, PREPARED_FILES)
    return result


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
        result[split] = write_tokens(out / "tokens" / f"{split}.bin", np.array(ids),
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
    one owns them): finish one that was moving its files in, remove the others."""
    for staging in sorted(folder.glob(STAGING_PREFIX + "*")):
        if not staging.is_dir():
            continue
        if is_sealed(staging):
            move_in_sealed(staging, folder, PREPARED_FILES)
            echo(f"finished moving in the files of an interrupted prepare ({staging.name})")
        else:
            shutil.rmtree(staging)
            echo(f"removed {staging.name}, left by an interrupted prepare; the files in {folder} were untouched")


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
        pids = sorted({d.name[len(STAGING_PREFIX):].split("-")[0] for d in folder.glob(STAGING_PREFIX + "*")})
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
    try:
        result = prepare(args.data_dir, args.vocab_size, echo=lambda line: print(line, file=sys.stderr))
    except (TypeError, ValueError) as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted (the existing files are unchanged)\n")
    except OSError as err:  # no corpus; disk full, read-only, another prepare: nothing replaced
        what = f"{describe(err)}: {err.filename}" if err.strerror and err.filename else str(err)
        parser.exit(2, f"{parser.prog}: error: {what} (the existing files are unchanged)\n")
    for split, meta in result.items():
        print(f"{split}: {meta['n_tokens']:,} tokens, vocab {meta['vocab_size']}, sha256 {meta['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
