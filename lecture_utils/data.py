"""Language-model data (§6): tokens on disk as uint16, memory-mapped, sampled in batches.

Files, in the data folder (:func:`data_dir`): ``tokenizer.json`` (byte-level BPE trained
with Hugging Face ``tokenizers`` on ``corpus/``), ``tokens/{train,val}.bin`` (raw
little-endian uint16) and a JSON sidecar beside each (dtype, vocab size, token count,
sha256). The samplers are lesson code from notebook 06; the token files' format (written
and read), and the ``Prefetcher``, are hand-written here. Building the files is
``lecture_utils/prepare.py`` (``python -m lecture_utils.data prepare``, ``make data``).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
from pathlib import Path

if __name__ == "__main__":  # python -m lecture_utils.data prepare (make data): lecture_utils/prepare.py, in a
    # process of its own, so that the reading side (this module) never imports the writing side; torch is
    # loaded here first, so that a TORCH_LOGS it refuses (or a Ctrl-C while it loads) is one line
    import importlib

    from lecture_utils.console import leave_on_signals

    with leave_on_signals("python -m lecture_utils.data prepare"):
        importlib.import_module("torch")
    os.execv(sys.executable, [sys.executable, "-m", "lecture_utils.prepare", *sys.argv[1:]])

import numpy as np
import torch

from lecture_utils import validate
from lecture_utils.device import as_device

# pragma: no mutate start
# (make mutation mutates the lesson's sampler only, get_batch and its pieces below; the loaders
# have their own fault tests)
DATA_ENV_VAR = "LECTURE_DATA"  # a folder holding tokenizer.json and tokens/, to use other data
TOKEN_DTYPE = np.dtype("<u2")  # little-endian uint16: any vocabulary below 65,536
EOT = "<|endoftext|>"


def data_dir() -> Path:
    """Where the tokenizer and token files are: ``$LECTURE_DATA`` if set, else the copy
    installed with the package (``lecture_utils/_data``, from ``pip install .``), else the
    checkout's ``data/`` folder (an editable install)."""
    if os.environ.get(DATA_ENV_VAR):
        return Path(os.environ[DATA_ENV_VAR]).expanduser()
    installed = Path(__file__).resolve().parent / "_data"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "data"


# pragma: no mutate end
# >>> lesson code from py_src/06_data_loading.py: edit it there, then `make export`
def get_batch_simple(data, batch_size, seq_len, device, generator=None):
    """(x, y): int64 (batch_size, seq_len) windows of `data` at random starts; y is x shifted by one."""
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)  # 0 .. len - seq_len - 1
    index = starts.numpy()[:, None] + np.arange(seq_len)  # (batch_size, seq_len) positions
    x = torch.from_numpy(data[index].astype(np.int64))
    y = torch.from_numpy(data[index + 1].astype(np.int64))  # one token further on
    return x.to(device), y.to(device)


def window_rows(data, batch_size, seq_len, generator=None):
    """(batch_size, seq_len + 1) windows of `data` at uniform random starts, in its dtype."""
    assert 0 < seq_len < len(data), f"seq_len must be in 1..{len(data) - 1}, got {seq_len}"
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator).numpy()
    step = data.strides[0]
    every_window = np.lib.stride_tricks.as_strided(  # row i is data[i:i + seq_len + 1]: a view
        data, (len(data) - seq_len, seq_len + 1), (step, step), subok=True, writeable=False)
    return every_window[starts]  # one gather for the whole batch


def widened(array, pin_memory=False):
    """`array` copied once into a new int64 tensor (in pinned memory if `pin_memory`)."""
    out = torch.empty(array.shape, dtype=torch.int64, pin_memory=pin_memory)
    np.copyto(out.numpy(), array)
    return out


def sample_windows(data, batch_size, seq_len, generator=None, pin_memory=False):
    """(batch_size, seq_len + 1) int64 windows of `data` at uniform random starts, on the CPU."""
    return widened(window_rows(data, batch_size, seq_len, generator), pin_memory)


def get_batch(data, batch_size, seq_len, device, generator=None):
    """(x, y): contiguous int64 (batch_size, seq_len) tensors on `device`; y is x shifted by one."""
    device = as_device(device)  # a name is checked ("cuda:99" raises); a torch.device passes as is
    rows = window_rows(data, batch_size, seq_len, generator)
    token, row = rows.strides[1], rows.strides[0]
    # x and y as one (2, batch, seq_len) view of the rows: y starts one token further on
    x_and_y = np.lib.stride_tricks.as_strided(rows, (2, batch_size, seq_len), (token, row, token))
    pin = device.type == "cuda"  # pinned host memory: the copy to the GPU runs asynchronously (§6.1)
    both = widened(x_and_y, pin).to(device, non_blocking=True)  # one int64 copy, one transfer
    return both[0], both[1]


def get_batch_lecture(data, batch_size, seq_len, device):
    """The notes' list-based version (§6), kept verbatim for comparison."""
    starts = torch.randint(len(data) - seq_len - 1, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + seq_len].astype(np.int64)) for i in starts])
    y = torch.stack([torch.from_numpy(data[i + 1:i + seq_len + 1].astype(np.int64)) for i in starts])
    return x.to(device), y.to(device)
# <<< lesson code from py_src/06_data_loading.py


# --- files ------------------------------------------------------------------------


# pragma: no mutate block
def sha256_of(path: str | Path) -> str:
    return scan_tokens(path)[0]


def scan_tokens(path: str | Path) -> tuple[str, int]:
    """(sha256, the largest token id) of a token file, in one pass (-1 for an empty file)."""
    digest, largest = hashlib.sha256(), -1
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):  # an even size: no token is split between blocks
            digest.update(block)
            if len(block) >= 2:
                largest = max(largest, int(np.frombuffer(block, TOKEN_DTYPE, len(block) // 2).max()))
    return digest.hexdigest(), largest


def write_tokens(path: str | Path, tokens: np.ndarray, vocab_size: int, **extra) -> dict:
    """Write ``tokens`` as raw little-endian uint16 plus ``<path>.json`` describing them."""
    path = Path(path)
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be a 1-D integer array, got {tokens.dtype} {tokens.shape}")
    vocab_size = validate.integer(vocab_size, "vocab_size (uint16 holds 65,536 ids)", high=65536)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"token ids must be in [0, {vocab_size}), got [{tokens.min()}, {tokens.max()}]")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "wb") as f:  # (ndarray.tofile's error names neither the file nor the errno)
            f.write(tokens.astype(TOKEN_DTYPE).tobytes())
    except OSError as err:
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None
    meta = {"dtype": "uint16", "byte_order": "little", "vocab_size": vocab_size,
            "n_tokens": int(tokens.size), "sha256": sha256_of(path), **extra}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def load_tokens(path: str | Path, *, verify: bool = True, vocab_size: int | None = None) -> np.memmap:
    """Memory-map a token file read-only, after checking it against its JSON sidecar.

    Only the pages you touch are read from disk. ``verify`` also recomputes the sha256 and
    finds the largest token id (one pass over the file; switch it off for very large files):
    an id at or beyond the sidecar's vocab_size is refused. ``vocab_size``, the model's
    vocabulary: a file whose sidecar declares a larger one is refused, since its ids could
    index past the model's embedding table.
    """
    path = Path(path)
    sidecar = path.with_suffix(".json")
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; run `python -m lecture_utils.data prepare` "
                                f"or set {DATA_ENV_VAR} to a folder holding tokens/")
    if not sidecar.exists():
        raise FileNotFoundError(f"{sidecar} (the sidecar describing {path.name}) does not exist")
    if not path.is_file():  # a folder's or a FIFO's size is no token count
        raise ValueError(f"{path} is {'a folder' if path.is_dir() else 'not a plain file'}, not a token file: move it "
                         "away and prepare the data again (python -m lecture_utils.data prepare)")
    meta = read_sidecar(sidecar)
    if meta.get("dtype") != "uint16" or meta.get("byte_order") != "little":
        raise ValueError(f"{sidecar}: expected little-endian uint16 tokens, got {meta.get('dtype')!r}")
    if vocab_size is not None and meta["vocab_size"] > vocab_size:
        raise ValueError(f"{path}: its sidecar's vocab_size is {meta['vocab_size']}, larger than the model's "
                         f"{vocab_size} (token ids could index past the embedding); use data prepared "
                         f"with --vocab-size {vocab_size} or less, or a model with vocab_size >= "
                         f"{meta['vocab_size']}")
    if path.stat().st_size != 2 * meta["n_tokens"]:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, but the sidecar says "
                         f"{meta['n_tokens']} tokens ({2 * meta['n_tokens']} bytes)")
    if verify:
        digest, largest = scan_tokens(path)
        if digest != meta["sha256"]:
            raise ValueError(f"{path}: sha256 does not match its sidecar (file changed or corrupt)")
        if largest >= meta["vocab_size"]:  # a sidecar rewritten by hand: the ids would index past the embedding
            raise ValueError(f"{path}: holds token id {largest}, beyond the vocab_size {meta['vocab_size']} its "
                             f"sidecar declares (every id must be below it); prepare the data again")
    return np.memmap(path, dtype=TOKEN_DTYPE, mode="r")


def read_sidecar(sidecar: Path) -> dict:
    """The sidecar's JSON, checked to hold what :func:`load_tokens` reads (one-line errors)."""
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, a 5,000-digit number, brackets nested too deep
        raise ValueError(f"{sidecar}: not a token sidecar (invalid JSON: {str(err).split(';')[0]})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{sidecar}: not a token sidecar (expected a JSON object)")
    for key, kind in (("vocab_size", int), ("n_tokens", int), ("sha256", str)):
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise ValueError(f"{sidecar}: not a token sidecar ({key!r} must be {kind.__name__}, "
                             f"got {meta.get(key)!r})")
    return meta


# --- overlap: batches prepared in the background ------------------------------------


class Prefetcher:
    """Prepare the next batches in a background thread while the current step computes.

    Iterating yields ``(x, y)`` like :func:`get_batch`. The thread calls ``get_batch``
    and, on CUDA, does so on a side stream, so the host-to-device copy overlaps with
    compute. Batches come out in the order the generator produces them, so a seeded
    generator gives the same sequence as ``get_batch``.

        with Prefetcher(data, 32, 256, device, generator=g) as batches:
            for step, (x, y) in zip(range(steps), batches): ...
    """

    def __init__(self, data, batch_size: int, seq_len: int, device, *, generator=None, depth: int = 2):
        self.data, self.batch_size, self.seq_len = data, batch_size, seq_len
        self.device = as_device(device)
        if generator is None:  # the worker thread must not share the global RNG with the caller
            generator = torch.Generator().manual_seed(int(torch.randint(2**62, (1,)).item()))
        self.generator = generator
        sample_windows(data, batch_size, seq_len, torch.Generator())  # bad sizes fail here, not in the thread
        self.depth = validate.integer(depth, "depth")  # 0 would make the queue unbounded
        self._queue: queue.Queue = queue.Queue(maxsize=self.depth)
        self._stop = threading.Event()
        self._stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def _work(self):
        try:
            while not self._stop.is_set():
                event = None
                with torch.cuda.stream(self._stream):  # on the CPU (stream None): no-op
                    x, y = get_batch(self.data, self.batch_size, self.seq_len, self.device, self.generator)
                    if self._stream is not None:  # marks when the copy is done
                        event = torch.cuda.Event()
                        event.record(self._stream)
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
