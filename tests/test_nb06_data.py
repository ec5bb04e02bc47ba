"""Notebook 06's package checks (issue 22): the lecture's simple sampler and the fast
``get_batch`` give the same batches, the samplers' contracts, and the token files' facts the
notebook used to print.

Oracles: ``get_batch_simple`` (the lesson: one fancy index per batch) for the stride-trick
``get_batch``, ``sample_windows`` and the ``Prefetcher``; windows cut one by one in Python;
the sidecar JSON and a real tensor's bytes for the token files.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lecture_utils.data import (
    Prefetcher,
    data_dir,
    get_batch,
    get_batch_lecture,
    get_batch_simple,
    load_tokens,
    sample_windows,
    window_rows,
    write_tokens,
)
from lecture_utils.sizes import tensor_bytes

TOKENS = np.arange(1000, dtype=np.uint16)  # token i sits at position i: shifts are visible
VAL = load_tokens(data_dir() / "tokens" / "val.bin")


def _same(a, b):
    return all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


@pytest.mark.parametrize(("data", "batch_size", "seq_len"), [
    (VAL, 4, 16), (VAL, 64, 256), (VAL, 1, len(VAL) - 1), (TOKENS, 32, 1),
    (TOKENS[:11], 50, 10),  # exactly one valid window
    (np.random.default_rng(0).integers(0, 65536, 3000).astype(np.uint16), 16, 64),  # ids above 32,767
])
def test_get_batch_returns_what_get_batch_simple_returns(data, batch_size, seq_len):
    """The deeper section's fast get_batch is the core's sampler, sped up: same generator,
    same x and y, for as many batches as one likes (they draw the same random numbers)."""
    g_simple, g_fast = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(3):
        simple = get_batch_simple(data, batch_size, seq_len, "cpu", generator=g_simple)
        fast = get_batch(data, batch_size, seq_len, "cpu", generator=g_fast)
        assert _same(simple, fast)
        assert all(t.dtype == torch.int64 and t.shape == (batch_size, seq_len) for t in (*simple, *fast))
    assert torch.equal(g_simple.get_state(), g_fast.get_state())


def test_get_batch_and_get_batch_simple_agree_on_the_global_generator():
    torch.manual_seed(11)
    simple = get_batch_simple(VAL, 8, 32, "cpu")
    torch.manual_seed(11)
    assert _same(simple, get_batch(VAL, 8, 32, "cpu"))


def test_get_batch_simple_cuts_windows_and_shifts_by_one():
    g = torch.Generator().manual_seed(0)
    x, y = get_batch_simple(TOKENS, 8, 32, "cpu", generator=g)
    assert torch.equal(y, x + 1) and torch.equal(x[:, 1:], x[:, :-1] + 1)
    assert x.is_contiguous() and y.is_contiguous()
    starts = torch.randint(len(TOKENS) - 32, (8,), generator=torch.Generator().manual_seed(0)).tolist()
    assert x[:, 0].tolist() == starts  # the first token of a window is its start here
    x, y = get_batch_simple(TOKENS[:20], 5000, 10, "cpu", generator=torch.Generator().manual_seed(2))
    assert set(x[:, 0].tolist()) == set(range(10)) and y.max().item() == 19  # every start, none past the end


def test_the_notes_version_misses_the_last_window():
    toy = np.arange(10, dtype=np.uint16)
    torch.manual_seed(0)
    x_notes, y_notes = get_batch_lecture(toy, 1000, 4, "cpu")
    x, y = get_batch(toy, 1000, 4, "cpu", generator=torch.Generator().manual_seed(0))
    assert sorted(set(x_notes[:, 0].tolist())) == [0, 1, 2, 3, 4]
    assert sorted(set(x[:, 0].tolist())) == [0, 1, 2, 3, 4, 5]
    assert (int(y_notes.max()), int(y.max())) == (8, 9)  # only get_batch ever predicts the last token
    with pytest.raises(RuntimeError):  # randint(0): one valid window, and the notes' range is empty
        get_batch_lecture(toy[:5], 1, 4, "cpu")
    assert get_batch(toy[:5], 1, 4, "cpu")[0].tolist() == [[0, 1, 2, 3]]
    assert get_batch_simple(toy[:5], 1, 4, "cpu")[0].tolist() == [[0, 1, 2, 3]]


def test_the_notes_version_is_get_batch_on_one_token_less():
    train = load_tokens(data_dir() / "tokens" / "train.bin")
    torch.manual_seed(3)
    notes = get_batch_lecture(train, 8, 64, "cpu")
    assert _same(notes, get_batch(train[:-1], 8, 64, "cpu", generator=torch.Generator().manual_seed(3)))


def test_the_helpers_behind_get_batch():
    g = torch.Generator().manual_seed(0)
    starts = torch.randint(len(VAL) - 16, (4,), generator=torch.Generator().manual_seed(0)).numpy()
    windows = VAL[starts[:, None] + np.arange(17)]
    rows = window_rows(VAL, 4, 16, torch.Generator().manual_seed(0))
    assert rows.dtype == np.uint16 and np.array_equal(rows, windows)
    assert np.array_equal(sample_windows(VAL, 4, 16, g).numpy(), windows)
    x, y = get_batch(VAL, 4, 16, "cpu", generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, torch.from_numpy(windows[:, :-1].astype(np.int64)))
    assert torch.equal(y, torch.from_numpy(windows[:, 1:].astype(np.int64)))
    view = np.lib.stride_tricks.as_strided(VAL, (len(VAL) - 16, 17), (2, 2), writeable=False)
    assert np.array_equal(view, np.lib.stride_tricks.sliding_window_view(VAL, 17))
    assert np.shares_memory(view, VAL)


def test_the_prefetcher_yields_get_batch_simple_batches():
    with Prefetcher(VAL, 4, 64, "cpu", generator=torch.Generator().manual_seed(5)) as batches:
        got = [next(batches) for _ in range(3)]
    g = torch.Generator().manual_seed(5)
    for batch in got:
        assert _same(batch, get_batch_simple(VAL, 4, 64, "cpu", generator=g))


def test_the_token_files_the_notebook_loads():
    tokens = data_dir() / "tokens"
    train, val = load_tokens(tokens / "train.bin"), load_tokens(tokens / "val.bin")
    meta = {s: json.loads((tokens / f"{s}.json").read_text()) for s in ("train", "val")}
    assert (len(train), len(val)) == (455_403, 25_803)
    assert (train.dtype.str, val.dtype.str) == ("<u2", "<u2")
    assert meta["train"]["vocab_size"] == meta["val"]["vocab_size"] == 8192
    assert int(max(train.max(), val.max())) < 8192
    assert type(train).__name__ == "memmap" and not train.flags.writeable
    assert (int((train == 0).sum()), int((val == 0).sum())) == (meta["train"]["documents"], meta["val"]["documents"])


def test_uint16_against_int64_bytes():
    train = load_tokens(data_dir() / "tokens" / "train.bin")
    wide = np.asarray(train).astype(np.int64)
    assert (train.nbytes, wide.nbytes) == (910_806, 3_643_224) and wide.nbytes == 4 * train.nbytes
    assert tensor_bytes(torch.from_numpy(wide)) == wide.nbytes
    assert np.iinfo(np.uint16).max == 65_535
    assert int(np.array([50_256]).astype(np.uint16)[0]) == 50_256  # GPT-2's largest id fits
    assert 128_256 > np.iinfo(np.uint16).max + 1  # Llama 3's vocabulary does not


def test_write_tokens_refuses_before_writing(tmp_path):
    with pytest.raises(ValueError):
        write_tokens(tmp_path / "too_big.bin", np.array([1, 70_000]), 70_001)
    with pytest.raises(ValueError):
        write_tokens(tmp_path / "out_of_range.bin", np.array([1, 9_000]), 8_192)
    assert list(tmp_path.iterdir()) == []


def test_get_batch_simple_on_the_device_it_is_given():
    x, y = get_batch_simple(VAL, 2, 8, torch.device("cpu"))
    assert (x.device.type, y.device.type) == ("cpu", "cpu")
    if torch.cuda.is_available():
        x, y = get_batch_simple(VAL, 2, 8, "cuda")
        assert x.is_cuda and y.is_cuda
