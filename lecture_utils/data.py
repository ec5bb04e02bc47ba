"""Language-model data (§6): tokens on disk as uint16, memory-mapped, sampled in batches.

    python -m lecture_utils.data prepare     # (or `make data`) tokenizer + token files

Files (in data/): ``tokenizer.json`` (byte-level BPE trained with Hugging Face
``tokenizers`` on data/corpus/), ``tokens/{train,val}.bin`` (raw little-endian
uint16) and a JSON sidecar beside each (dtype, vocab size, token count, sha256).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import numbers
import os
import queue
import sys
import threading
from pathlib import Path

import numpy as np
import torch

from lecture_utils.checks import positive_int
from lecture_utils.device import get_device

DATA_ENV_VAR = "LECTURE_DATA"  # a folder holding tokenizer.json and tokens/, to use other data


def data_dir() -> Path:
    """Where the tokenizer and token files are: ``$LECTURE_DATA`` if set, else the copy
    installed with the package (``lecture_utils/_data``, from ``pip install .``), else the
    checkout's ``data/`` folder (an editable install)."""
    if os.environ.get(DATA_ENV_VAR):
        return Path(os.environ[DATA_ENV_VAR]).expanduser()
    installed = Path(__file__).resolve().parent / "_data"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "data"


DATA_DIR = data_dir()  # as resolved at import; call data_dir() to honour a later LECTURE_DATA
TOKEN_DTYPE = np.dtype("<u2")  # little-endian uint16: any vocabulary below 65,536
EOT = "<|endoftext|>"


# --- files ------------------------------------------------------------------------


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_tokens(path: str | Path, tokens: np.ndarray, vocab_size: int, **extra) -> dict:
    """Write ``tokens`` as raw little-endian uint16 plus ``<path>.json`` describing them."""
    path = Path(path)
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be a 1-D integer array, got {tokens.dtype} {tokens.shape}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral) or not 0 < vocab_size <= 65536:
        raise ValueError(f"vocab_size must be an int in 1..65536 to fit uint16, got {vocab_size!r}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"token ids must be in [0, {vocab_size}), got [{tokens.min()}, {tokens.max()}]")
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens.astype(TOKEN_DTYPE).tofile(path)
    meta = {"dtype": "uint16", "byte_order": "little", "vocab_size": int(vocab_size),
            "n_tokens": int(tokens.size), "sha256": sha256_of(path), **extra}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def load_tokens(path: str | Path, *, verify: bool = True) -> np.memmap:
    """Memory-map a token file read-only, after checking it against its JSON sidecar.

    Only the pages you touch are read from disk. ``verify`` also recomputes the sha256
    (one pass over the file; switch it off for very large files).
    """
    path = Path(path)
    sidecar = path.with_suffix(".json")
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; run `python -m lecture_utils.data prepare`")
    if not sidecar.exists():
        raise FileNotFoundError(f"{sidecar} (the sidecar describing {path.name}) does not exist")
    meta = json.loads(sidecar.read_text())
    if meta.get("dtype") != "uint16" or meta.get("byte_order") != "little":
        raise ValueError(f"{sidecar}: expected little-endian uint16 tokens, got {meta.get('dtype')!r}")
    if path.stat().st_size != 2 * meta["n_tokens"]:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, but the sidecar says "
                         f"{meta['n_tokens']} tokens ({2 * meta['n_tokens']} bytes)")
    if verify and sha256_of(path) != meta["sha256"]:
        raise ValueError(f"{path}: sha256 does not match its sidecar (file changed or corrupt)")
    return np.memmap(path, dtype=TOKEN_DTYPE, mode="r")


# --- batches ----------------------------------------------------------------------


def _check_data(data) -> None:
    if not isinstance(data, np.ndarray) or data.ndim != 1 or not np.issubdtype(data.dtype, np.integer):
        raise TypeError("data must be a 1-D integer numpy array or memmap of token ids, got "
                        f"{type(data).__name__} {getattr(data, 'dtype', '')} {getattr(data, 'shape', '')}")


def sample_windows(data: np.ndarray, batch_size: int, seq_len: int,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """(batch_size, seq_len + 1) int64 windows of ``data`` at uniform random starts, on the CPU.

    Every start in ``0 .. len(data) - seq_len - 1`` is equally likely (each needs
    ``seq_len + 1`` tokens: inputs plus the one-token-shifted targets). One fancy index
    reads all windows at once: no Python loop over the batch.
    """
    _check_data(data)
    batch_size = positive_int(batch_size, "batch_size")
    seq_len = positive_int(seq_len, "seq_len")
    if seq_len >= len(data):
        raise ValueError(f"seq_len ({seq_len}) must be < len(data) ({len(data)}): a window needs "
                         "seq_len + 1 tokens")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator).numpy()
    index = starts[:, None] + np.arange(seq_len + 1)
    return torch.from_numpy(data[index].astype(np.int64))


def _to_device(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cuda":  # pinned host memory lets the copy run asynchronously
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def get_batch(data: np.ndarray, batch_size: int, seq_len: int, device: str | torch.device,
              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``(x, y)``: int64 tensors of shape (batch_size, seq_len) on ``device``,
    ``y`` being ``x`` shifted left by one token.

    Vectorised (one gather for the whole batch); on CUDA the batch is pinned and copied
    with ``non_blocking=True``. Pass a ``torch.Generator`` to make sampling
    reproducible and checkpointable (``generator.get_state()``). A device that does not
    exist (``"cuda:99"``) raises instead of silently falling back.
    """
    device = get_device(device)
    return _split(_to_device(sample_windows(data, batch_size, seq_len, generator), device))


def _split(windows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T + 1) windows -> inputs and targets. The windows cross to the device once;
    x and y overlap in all but one token, so copying them separately would double it."""
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def get_batch_lecture(data, batch_size, seq_len, device):
    """The notes' list-based version (§6), kept verbatim for comparison."""
    starts = torch.randint(len(data) - seq_len - 1, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + seq_len].astype(np.int64)) for i in starts])
    y = torch.stack([torch.from_numpy(data[i + 1:i + seq_len + 1].astype(np.int64)) for i in starts])
    return x.to(device), y.to(device)


class Prefetcher:
    """Prepare the next batches in a background thread while the current step computes.

    Iterating yields ``(x, y)`` like :func:`get_batch`. The thread samples and gathers on
    the CPU and, on CUDA, pins and starts the host-to-device copy on a side stream, so
    data loading overlaps with compute. Batches come out in the order the generator
    produces them, so a seeded generator gives the same sequence as ``get_batch``.

        with Prefetcher(data, 32, 256, device, generator=g) as batches:
            for step, (x, y) in zip(range(steps), batches): ...
    """

    def __init__(self, data, batch_size: int, seq_len: int, device, *, generator=None, depth: int = 2):
        _check_data(data)
        self.data, self.batch_size, self.seq_len = data, batch_size, seq_len
        self.device = get_device(device)
        if generator is None:  # the worker thread must not share the global RNG with the caller
            generator = torch.Generator().manual_seed(int(torch.randint(2**62, (1,)).item()))
        self.generator = generator
        sample_windows(data, batch_size, seq_len, torch.Generator())  # validate sizes now
        self.depth = positive_int(depth, "depth")
        self._queue: queue.Queue = queue.Queue(maxsize=self.depth)
        self._stop = threading.Event()
        self._stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def _work(self):
        try:
            while not self._stop.is_set():
                windows = sample_windows(self.data, self.batch_size, self.seq_len, self.generator)
                event = None
                if self._stream is not None:
                    with torch.cuda.stream(self._stream):
                        x, y = _split(_to_device(windows, self.device))
                        event = torch.cuda.Event()
                        event.record(self._stream)
                else:
                    x, y = _split(windows.to(self.device))
                self._put((x, y, event))
        except Exception as err:  # hand the error to the consumer instead of dying silently
            self._put(err)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._stop.is_set():
            raise StopIteration
        item = self._queue.get()
        if isinstance(item, Exception):
            raise item
        x, y, event = item
        if event is not None:  # the compute stream waits for the copy, not the host
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            x.record_stream(stream)
            y.record_stream(stream)
        return x, y

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- building the data ------------------------------------------------------------


def _documents(corpus_dir: Path) -> list[str]:
    """Paragraphs (blank-line separated) of every corpus file, in a fixed order."""
    files = sorted(corpus_dir.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no .txt files in {corpus_dir}; see data/README.md")
    docs = []
    for f in files:
        docs += [p.strip() for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
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
    tok.save(str(out))
    return tok


def prepare(data_dir: Path = DATA_DIR, vocab_size: int = 8192, val_every: int = 20) -> dict:
    """Train the tokenizer and write train/val token files. Deterministic: same bytes twice.

    Paragraph ``i`` goes to validation when ``i % val_every == 0``, so both splits
    cover both books. Documents are joined with the ``<|endoftext|>`` token.
    """
    vocab_size = positive_int(vocab_size, "vocab_size")
    if vocab_size > 65536:
        raise ValueError(f"vocab_size {vocab_size} does not fit uint16 (max 65,536 ids)")
    val_every = positive_int(val_every, "val_every")
    tok = train_tokenizer(data_dir / "corpus", vocab_size, data_dir / "tokenizer.json")
    eot = tok.token_to_id(EOT)
    docs = _documents(data_dir / "corpus")
    splits = {"train": [], "val": []}
    for i, doc in enumerate(docs):
        splits["val" if i % val_every == 0 else "train"].append(doc)
    result = {}
    for split, texts in splits.items():
        ids: list[int] = []
        for enc in tok.encode_batch(texts):
            ids += enc.ids + [eot]
        result[split] = write_tokens(data_dir / "tokens" / f"{split}.bin", np.array(ids),
                                     tok.get_vocab_size(), tokenizer="data/tokenizer.json",
                                     documents=len(texts))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lecture_utils.data",
                                     description="Build the tokenizer and uint16 token files in data/.")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="train the tokenizer, write data/tokens/{train,val}.bin")
    prep.add_argument("--vocab-size", type=int, default=8192)
    prep.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    try:
        result = prepare(args.data_dir, args.vocab_size)
    except (ValueError, FileNotFoundError) as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    for split, meta in result.items():
        print(f"{split}: {meta['n_tokens']:,} tokens, vocab {meta['vocab_size']}, sha256 {meta['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
