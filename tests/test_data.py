"""The samplers (get_batch, the lesson's get_batch_simple, the notes' get_batch_lecture), the token files
and `make data`, against windows cut one by one in Python, the sidecar JSON and the committed bytes.
(Notebook 06 checks uniformity, the windows view and the Prefetcher on the real data under nbval.)"""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from lecture_utils import data as data_mod
from lecture_utils.data import (
    Prefetcher,
    data_dir,
    get_batch,
    get_batch_lecture,
    get_batch_simple,
    load_tokens,
    sample_windows,
    widened,
    window_rows,
    write_tokens,
)
from lecture_utils.prepare import main, prepare

DATA_DIR = Path(__file__).resolve().parents[1] / "data"  # the files committed to the repository

TOKENS = np.arange(1000, dtype=np.uint16)  # token i sits at position i: shifts are visible
VAL = load_tokens(DATA_DIR / "tokens" / "val.bin")


def _same(a, b):
    return all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_shapes_dtype_and_shift():
    x, y = get_batch(TOKENS, 8, 32, "cpu", generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 32) and x.dtype == y.dtype == torch.int64
    assert torch.equal(y, x + 1)  # y is x shifted by one token
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)  # contiguous windows
    assert x.is_contiguous() and y.is_contiguous()  # the notes' y.view(-1) works
    # one int64 copy: x and y are the two halves of one tensor
    assert x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert x.untyped_storage().nbytes() == 2 * 8 * 32 * 8


def test_every_start_is_reachable_and_none_overruns():
    x, _ = get_batch(TOKENS[:11], 2000, 10, "cpu", generator=torch.Generator().manual_seed(1))
    assert set(x[:, 0].tolist()) == {0}  # only one valid start when len == seq_len + 1
    x, y = get_batch(TOKENS[:20], 5000, 10, "cpu", generator=torch.Generator().manual_seed(2))
    assert set(x[:, 0].tolist()) == set(range(10))  # starts 0..len-seq_len-1, all of them
    assert y.max().item() == 19


@pytest.mark.parametrize(("data", "batch_size", "seq_len"), [
    (VAL, 4, 16), (VAL, 64, 256), (VAL, 1, len(VAL) - 1), (TOKENS, 32, 1),
    (TOKENS[:11], 50, 10),  # exactly one valid window
    (np.random.default_rng(0).integers(0, 65536, 3000).astype(np.uint16), 16, 64),  # ids above 32,767
])
def test_get_batch_returns_what_the_lessons_get_batch_simple_returns(data, batch_size, seq_len):
    """Same generator, same x and y, batch after batch (they draw the same random numbers)."""
    g_simple, g_fast = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(3):
        simple = get_batch_simple(data, batch_size, seq_len, "cpu", generator=g_simple)
        assert _same(simple, get_batch(data, batch_size, seq_len, "cpu", generator=g_fast))
        assert all(t.dtype == torch.int64 and t.is_contiguous() for t in simple)
    assert torch.equal(g_simple.get_state(), g_fast.get_state())
    torch.manual_seed(11)  # the global generator, likewise
    simple = get_batch_simple(VAL, 8, 32, "cpu")
    torch.manual_seed(11)
    assert _same(simple, get_batch(VAL, 8, 32, "cpu"))


def test_the_helpers_behind_get_batch_cut_the_same_windows():
    starts = torch.randint(len(VAL) - 16, (4,), generator=torch.Generator().manual_seed(0)).numpy()
    windows = VAL[starts[:, None] + np.arange(17)]
    rows = window_rows(VAL, 4, 16, torch.Generator().manual_seed(0))
    assert rows.dtype == np.uint16 and np.array_equal(rows, windows)
    assert np.array_equal(sample_windows(VAL, 4, 16, torch.Generator().manual_seed(0)).numpy(), windows)


def test_the_notes_version_misses_the_last_window():
    toy = np.arange(10, dtype=np.uint16)
    torch.manual_seed(0)
    x_notes, y_notes = get_batch_lecture(toy, 1000, 4, "cpu")
    x, y = get_batch(toy, 1000, 4, "cpu", generator=torch.Generator().manual_seed(0))
    assert sorted(set(x_notes[:, 0].tolist())) == [0, 1, 2, 3, 4]
    assert sorted(set(x[:, 0].tolist())) == [0, 1, 2, 3, 4, 5]
    assert (int(y_notes.max()), int(y.max())) == (8, 9)  # only get_batch ever predicts the last token
    assert x_notes.dtype == y_notes.dtype == torch.int64  # token ids, as F.cross_entropy and nn.Embedding take
    both = (*get_batch_lecture(toy, 2, 4, "meta"), *get_batch_simple(toy, 2, 4, "meta"))
    assert {t.device.type for t in both} == {"meta"}  # x and y alike, on the device asked for
    with pytest.raises(RuntimeError):  # randint(0): one valid window, and the notes' range is empty
        get_batch_lecture(toy[:5], 1, 4, "cpu")
    assert get_batch(toy[:5], 1, 4, "cpu")[0].tolist() == [[0, 1, 2, 3]]
    assert get_batch_simple(toy[:5], 1, 4, "cpu")[0].tolist() == [[0, 1, 2, 3]]


def test_same_distribution_as_the_lecture_version():
    """The lecture's list-based sampler and ours, same RNG stream: the same windows."""
    data = np.random.default_rng(0).integers(0, 8192, 5000).astype(np.uint16)
    torch.manual_seed(7)
    x_lecture, y_lecture = get_batch_lecture(data, 16, 64, "cpu")
    torch.manual_seed(7)
    # The lecture draws from randint(len - seq_len - 1): one start fewer than ours.
    starts = torch.randint(len(data) - 64 - 1, (16,))
    expected = torch.from_numpy(data[starts.numpy()[:, None] + np.arange(65)].astype(np.int64))
    assert torch.equal(x_lecture, expected[:, :-1]) and torch.equal(y_lecture, expected[:, 1:])
    # get_batch, same global RNG stream, against windows cut one by one from the starts
    # it must draw: randint(len - seq_len) = randint(4936), every start 0..4935 allowed.
    torch.manual_seed(7)
    starts = torch.randint(len(data) - 64, (16,)).tolist()
    x_expected = torch.tensor(np.stack([data[s:s + 64] for s in starts]).astype(np.int64))
    y_expected = torch.tensor(np.stack([data[s + 1:s + 65] for s in starts]).astype(np.int64))
    torch.manual_seed(7)
    x, y = get_batch(data, 16, 64, "cpu")
    assert (x.dtype, x.shape, x.device.type) == (torch.int64, (16, 64), "cpu")
    assert torch.equal(x, x_expected) and torch.equal(y, y_expected)


def test_generator_makes_sampling_reproducible_and_checkpointable():
    g = torch.Generator().manual_seed(42)
    get_batch(TOKENS, 4, 8, "cpu", generator=g)
    state = g.get_state()
    after = get_batch(TOKENS, 4, 8, "cpu", generator=g)
    g.set_state(state)
    resumed = get_batch(TOKENS, 4, 8, "cpu", generator=g)
    assert all(torch.equal(a, b) for a, b in zip(after, resumed, strict=True))


# get_batch is lesson code: it checks only what would otherwise give a silently wrong batch
# (an empty window, or no valid start). Batch sizes are checked where people type them
# (TrainConfig, the CLI), token files by load_tokens and write_tokens.
@pytest.mark.parametrize("seq_len", [1000, 5000, 0])
def test_a_window_that_cannot_fit_is_refused(seq_len):
    with pytest.raises(AssertionError, match="seq_len"):
        get_batch(TOKENS, 4, seq_len, "cpu")


@pytest.mark.parametrize("device", ["cuda:99", "gpu", "tpu"])
def test_devices_that_do_not_exist_raise(device):
    with pytest.raises(ValueError):
        get_batch(TOKENS, 2, 8, device)


def test_prefetcher_fails_at_construction_and_stops():
    with pytest.raises(AssertionError, match="seq_len"):  # here, not later in its thread
        Prefetcher(TOKENS, 4, 5000, "cpu")
    with pytest.raises(ValueError):
        Prefetcher(TOKENS, 4, 8, "cuda:99")
    with pytest.raises(ValueError, match="depth"):  # 0 would make the queue unbounded
        Prefetcher(TOKENS, 4, 8, "cpu", depth=0)
    p = Prefetcher(TOKENS, 2, 8, "cpu", depth=1)
    next(p)
    p.close()
    with pytest.raises(StopIteration):
        next(p)


# --- token files

def test_write_and_load_round_trip(tmp_path):
    tokens = np.array([0, 1, 65535, 42], dtype=np.int64)
    meta = write_tokens(tmp_path / "t.bin", tokens, 65536)
    assert (tmp_path / "t.bin").read_bytes() == b"\x00\x00\x01\x00\xff\xff\x2a\x00"  # little-endian
    loaded = load_tokens(tmp_path / "t.bin")
    assert isinstance(loaded, np.memmap) and loaded.dtype == np.uint16 and not loaded.flags.writeable
    assert loaded.tolist() == tokens.tolist()
    assert json.loads((tmp_path / "t.json").read_text()) == meta


@pytest.mark.parametrize(("tokens", "vocab"), [(np.array([70000]), 65536), (np.array([5]), 5), (np.array([-1]), 10),
                                               (np.array([1]), 70000), (np.zeros((2, 2), dtype=int), 10)])
def test_write_rejects_what_uint16_cannot_hold_before_writing(tmp_path, tokens, vocab):
    with pytest.raises(ValueError):
        write_tokens(tmp_path / "t.bin", tokens, vocab)
    assert list(tmp_path.iterdir()) == []


def test_load_checks_the_sidecar(tmp_path):
    write_tokens(tmp_path / "t.bin", np.arange(10), 10)
    with open(tmp_path / "t.bin", "r+b") as f:
        f.write(b"\x09")  # same size, different bytes
    with pytest.raises(ValueError, match="sha256"):
        load_tokens(tmp_path / "t.bin")
    assert len(load_tokens(tmp_path / "t.bin", verify=False)) == 10
    with open(tmp_path / "t.bin", "ab") as f:
        f.write(b"\x00\x00")
    with pytest.raises(ValueError, match="sidecar says 10 tokens"):
        load_tokens(tmp_path / "t.bin", verify=False)
    with pytest.raises(FileNotFoundError):
        load_tokens(tmp_path / "missing.bin")
    (tmp_path / "lonely.bin").write_bytes(b"\x00\x00")
    with pytest.raises(FileNotFoundError, match="sidecar"):
        load_tokens(tmp_path / "lonely.bin")


def test_committed_token_files_are_valid():
    for split in ("train", "val"):
        tokens = load_tokens(DATA_DIR / "tokens" / f"{split}.bin")
        meta = json.loads((DATA_DIR / "tokens" / f"{split}.json").read_text())
        assert meta["vocab_size"] == 8192 and len(tokens) == meta["n_tokens"] > 20_000
        assert int(tokens.max()) < 8192 and int((tokens == 0).sum()) == meta["documents"]  # one EOT (id 0) each
        assert type(tokens).__name__ == "memmap" and not tokens.flags.writeable
    assert sum((DATA_DIR / "corpus" / f).stat().st_size for f in ("jargon.txt", "devil.txt")) > 1_000_000


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_prepare_is_reproducible(tmp_path):
    """`make data` gives the same bytes as the committed files, which an earlier `make data`
    wrote: the same bytes twice, across processes and days (one 8192-merge BPE run, not two)."""
    shutil.copytree(DATA_DIR / "corpus", tmp_path / "corpus")
    result = prepare(tmp_path, vocab_size=8192)
    assert (tmp_path / "tokenizer.json").read_bytes() == (DATA_DIR / "tokenizer.json").read_bytes()
    for split in ("train", "val"):
        committed = json.loads((DATA_DIR / "tokens" / f"{split}.json").read_text())
        assert result[split] == {k: committed[k] for k in result[split]}
        assert result[split]["sha256"] == committed["sha256"]
        assert (tmp_path / "tokens" / f"{split}.bin").read_bytes() == (DATA_DIR / "tokens" / f"{split}.bin").read_bytes()


def test_tokenizer_round_trips_text():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(DATA_DIR / "tokenizer.json"))
    text = "The hacker's kludge: a CROCK, per the Jargon File!"
    assert tok.decode(tok.encode(text).ids) == text
    assert tok.get_vocab_size() == 8192 and tok.token_to_id(data_mod.EOT) is not None
    assert math.log2(tok.get_vocab_size()) <= 16  # why uint16 is enough


# --- where the data is, and the `prepare` command (the file-loader edge)

def test_data_dir_is_the_checkout_data_in_an_editable_install(monkeypatch):
    monkeypatch.delenv("LECTURE_DATA", raising=False)
    import lecture_utils

    checkout = Path(lecture_utils.__file__).resolve().parents[1]
    if (checkout / "lecture_utils" / "_data").is_dir():
        pytest.skip("lecture_utils is installed from a wheel here")
    assert data_dir() == checkout / "data"


def test_lecture_data_overrides_the_data_folder(monkeypatch, tmp_path):
    write_tokens(tmp_path / "tokens" / "train.bin", np.arange(7), 10)
    monkeypatch.setenv("LECTURE_DATA", str(tmp_path))
    assert data_dir() == tmp_path
    assert load_tokens(data_dir() / "tokens" / "train.bin").tolist() == list(range(7))


@pytest.mark.parametrize(("argv", "message"), [
    (["--vocab-size", "70000"], "vocab_size (256 bytes + <|endoftext|> at least; uint16 holds 65,536 ids) must be in [257, 65536], got 70000"),
    (["--vocab-size", "0"], "vocab_size (256 bytes + <|endoftext|> at least; uint16 holds 65,536 ids) must be in [257, 65536], got 0"),
    ([], "no .txt files in"),
])
def test_prepare_cli_gives_one_line_errors(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["prepare", "--data-dir", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err and not (tmp_path / "tokenizer.json").exists()


def test_prepare_defaults_to_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("LECTURE_DATA", str(tmp_path))  # an empty folder: no corpus/
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "corpus")):
        prepare()


def test_window_rows_names_the_seq_lens_it_takes():
    with pytest.raises(AssertionError, match=r"^seq_len must be in 1\.\.9, got 10$"):
        window_rows(np.arange(10), 1, 10)


def test_sample_windows_pins_its_batch_only_when_asked():
    batch = sample_windows(np.arange(100, dtype=np.uint16), 2, 4)
    assert batch.dtype == torch.int64 and not batch.is_pinned()
    assert not widened(np.zeros((2, 3), dtype=np.uint16)).is_pinned()  # its default too
    if torch.accelerator.is_available():
        assert sample_windows(np.arange(100, dtype=np.uint16), 2, 4, pin_memory=True).is_pinned()
    else:  # no pinned allocator without an accelerator: the request reaches torch, which refuses it
        with pytest.raises(RuntimeError, match="pin"):
            sample_windows(np.arange(100, dtype=np.uint16), 2, 4, pin_memory=True)
