"""Issue 12, items 3, 7 and 10: the data pipeline and device lookups at their edges.

Each case asserts the exit code, the one-line message, and that nothing was lost: the
files a folder held before (tokenizer.json, tokens/*) are byte-identical afterwards. The
committed data/ files are never prepared into: `prepare` runs on copies in tmp, with a
tiny corpus and a small vocabulary (well under a second each).
"""

import errno
import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from lecture_utils import bench, files, get_device, hardware
from lecture_utils import data as data_mod
from lecture_utils import prepare as prep_mod
from lecture_utils.allocator import Allocated
from lecture_utils.data import Prefetcher, get_batch, load_tokens, write_tokens
from lecture_utils.device import DeviceError, setup
from lecture_utils.prepare import PREPARED_FILES, STAGING_PREFIX
from lecture_utils.train import cli as train_cli

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO / "data"  # the committed files: hashed before and after this module, never written
VOCAB = 300  # 256 byte symbols, <|endoftext|> and a few merges (tests/conftest.py prepares `prepared` so)


def hashes(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in PREPARED_FILES}


@pytest.fixture(scope="module", autouse=True)
def committed_data_is_untouched():
    before = hashes(DATA_DIR)
    yield
    assert hashes(DATA_DIR) == before


def staging_folders(folder: Path) -> list[Path]:
    return sorted(folder.glob(STAGING_PREFIX + "*"))


def env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


# --- item 3: `data prepare` never half-replaces the files


def test_prepare_without_a_corpus_fails_before_touching_anything(tmp_path, monkeypatch, capsys):
    """The issue's reproduction: data/ without corpus/ (here a copy of it, through LECTURE_DATA).
    Run in this process (a subprocess would add a Python start and a torch import): the
    module's `python -m` entry is `sys.exit(main())`."""
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder, ignore=shutil.ignore_patterns("corpus"))
    before = hashes(folder)
    monkeypatch.setenv("LECTURE_DATA", str(folder))
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert one_line(err) == (f"python -m lecture_utils.data: error: no .txt files in {folder / 'corpus'}; "
                                     "see data/README.md (the existing files are unchanged)")
    assert hashes(folder) == before and staging_folders(folder) == []
    assert load_tokens(folder / "tokens" / "train.bin", vocab_size=8192)[:3].tolist() == \
        load_tokens(DATA_DIR / "tokens" / "train.bin")[:3].tolist()


@pytest.mark.parametrize("fail_at", ["tokenizer", "train", "val", "fsync"])
def test_a_full_disk_midway_leaves_the_old_files(prepared, monkeypatch, capsys, fail_at):
    """ENOSPC while writing the tokenizer, either token file, or flushing them before the commit."""
    before = hashes(prepared)
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if fail_at == "tokenizer":
        def failing(corpus_dir, vocab_size, out):
            full.filename = str(out)
            raise full
        monkeypatch.setattr(prep_mod, "train_tokenizer", failing)
    elif fail_at == "fsync":
        def failing(path):  # flushing the built files, before the COMMITTING marker
            full.filename = str(path)
            raise full
        monkeypatch.setattr(files, "fsync", failing)  # files.seal flushes through it
    else:
        real = prep_mod.write_tokens

        def failing(path, *args, **kwargs):
            if Path(path).stem == fail_at:
                real(path, *args, **kwargs)  # a half-written file in the staging folder
                full.filename = str(path)
                raise full
            return real(path, *args, **kwargs)
        monkeypatch.setattr(prep_mod, "write_tokens", failing)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", "400"])
    line = one_line(capsys.readouterr().err)
    assert exit_.value.code == 2
    assert line.startswith("python -m lecture_utils.data: error: No space left on device [ENOSPC]: ")
    assert line.endswith("(the existing files are unchanged)") and str(prepared / STAGING_PREFIX) in line
    assert hashes(prepared) == before and staging_folders(prepared) == []


def test_a_full_disk_inside_a_token_write_names_the_file_and_the_errno(prepared, monkeypatch, capsys):
    """The write itself fails (numpy's tofile said only '455403 requested and 178176 written')."""
    before = hashes(prepared)

    class Full:
        def __init__(self, path, mode):
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(data_mod, "open", Full, raising=False)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", "400"])
    line = one_line(capsys.readouterr().err)
    assert exit_.value.code == 2 and line.startswith("python -m lecture_utils.data: error: No space left on device "
                                                     "[ENOSPC]: ")
    assert line.endswith("tokens/train.bin (the existing files are unchanged)")
    assert hashes(prepared) == before and staging_folders(prepared) == []


@pytest.mark.parametrize("vocab", ["1", "256", "-3"])
def test_a_vocabulary_too_small_for_the_bytes_is_refused_before_anything_is_touched(prepared, capsys, vocab):
    before = hashes(prepared)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", vocab])
    assert exit_.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        "python -m lecture_utils.data: error: vocab_size (256 bytes + <|endoftext|> at least; uint16 holds 65,536 "
        f"ids) must be in [257, 65536], got {vocab}")
    assert hashes(prepared) == before and staging_folders(prepared) == []


def test_a_folder_without_write_permission_is_one_line(prepared, monkeypatch, capsys):
    """EACCES making the staging folder (patched: the tests may run as root, which ignores modes)."""
    before = hashes(prepared)

    def denied(prefix, dir):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
    monkeypatch.setattr(prep_mod.tempfile, "mkdtemp", denied)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared)])
    assert exit_.value.code == 2
    assert one_line(capsys.readouterr().err) == (f"python -m lecture_utils.data: error: Permission denied [EACCES]: "
                                                 f"{prepared} (the existing files are unchanged)")
    assert hashes(prepared) == before


def test_ctrl_c_midway_leaves_the_old_files(prepared, monkeypatch, capsys):
    before = hashes(prepared)
    real = prep_mod.write_tokens

    def interrupted(path, *args, **kwargs):
        real(path, *args, **kwargs)
        raise KeyboardInterrupt
    monkeypatch.setattr(prep_mod, "write_tokens", interrupted)
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", "400"])
    assert exit_.value.code == 130
    assert one_line(capsys.readouterr().err) == ("python -m lecture_utils.data: interrupted "
                                                 "(the existing files are unchanged)")
    assert hashes(prepared) == before and staging_folders(prepared) == []


def test_prepare_replaces_the_files_only_when_complete(prepared, capsys):
    before = hashes(prepared)
    assert prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", "320"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["train", "val"] and "vocab 320" in out[0]
    after = hashes(prepared)
    assert all(after[name] != before[name] for name in PREPARED_FILES) and staging_folders(prepared) == []
    assert len(load_tokens(prepared / "tokens" / "val.bin", vocab_size=320)) > 0


# (a SIGKILL while prepare writes, or moves its files in: test_faults_slow.py)


def test_a_second_prepare_on_the_same_folder_is_refused(prepared, capsys):
    import fcntl

    before = hashes(prepared)
    fd = os.open(prepared, os.O_RDONLY)  # what a running prepare holds
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(SystemExit) as exit_:
            prep_mod.main(["prepare", "--data-dir", str(prepared), "--vocab-size", "400"])
    finally:
        os.close(fd)
    assert exit_.value.code == 2
    assert one_line(capsys.readouterr().err) == (f"python -m lecture_utils.data: error: another `prepare` is "
                                                 f"writing in {prepared}; wait for it to finish (the existing "
                                                 f"files are unchanged)")
    assert hashes(prepared) == before


def test_a_corpus_that_is_not_utf8_is_one_line(prepared, capsys):
    before = hashes(prepared)
    (prepared / "corpus" / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(SystemExit) as exit_:
        prep_mod.main(["prepare", "--data-dir", str(prepared)])
    assert exit_.value.code == 2
    assert one_line(capsys.readouterr().err) == (f"python -m lecture_utils.data: error: "
                                                 f"{prepared / 'corpus' / 'latin1.txt'}: not UTF-8 text "
                                                 f"(invalid continuation byte at byte 3)")
    assert hashes(prepared) == before and staging_folders(prepared) == []


# --- item 7: a data set with a larger vocabulary than the model's


def test_training_on_a_larger_vocabulary_is_one_line_not_an_index_error(tmp_path, monkeypatch, capsys):
    """`data prepare --vocab-size 16384`, then `train` (tiny model: 8192): ids up to 16383.
    The trainer's CLI in this process (an IndexError would surface here as one); other tests
    run `python -m lecture_utils.train` as a process."""
    folder = tmp_path / "data16k"
    ids = np.random.default_rng(0).integers(0, 16384, 4000)
    for split in ("train", "val"):
        write_tokens(folder / "tokens" / f"{split}.bin", ids, 16384, tokenizer="data/tokenizer.json")
    before = {p.name: p.read_bytes() for p in (folder / "tokens").iterdir()}
    run = tmp_path / "run"
    monkeypatch.setenv("LECTURE_DATA", str(folder))
    monkeypatch.setenv("LECTURE_DEVICE", "cpu")
    with pytest.raises(SystemExit) as exit_:
        train_cli.main(["--config", "tiny", "--steps", "3", "--warmup", "0", "--batch-size", "4", "--seq-len", "32",
                        "--val-every", "0", "--no-progress", "--out", str(run)])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and "IndexError" not in err
    train_bin = folder / "tokens" / "train.bin"
    assert one_line(err) == (
        f"python -m lecture_utils.train: error: {train_bin}: its sidecar's vocab_size is 16384, larger than "
        "the model's 8192 (token ids could index past the embedding); use data prepared with --vocab-size 8192 "
        "or less, or a model with vocab_size >= 16384")
    assert not (run / "checkpoint.pt").exists()
    assert {p.name: p.read_bytes() for p in (folder / "tokens").iterdir()} == before


def test_load_tokens_checks_the_vocabulary(prepared):
    train_bin = prepared / "tokens" / "train.bin"
    assert len(load_tokens(train_bin, vocab_size=VOCAB)) == len(load_tokens(train_bin, vocab_size=8192)) > 0
    with pytest.raises(ValueError) as err:
        load_tokens(train_bin, vocab_size=VOCAB - 1)
    assert str(err.value).startswith(f"{train_bin}: its sidecar's vocab_size is {VOCAB}, larger than the "
                                     f"model's {VOCAB - 1}")


@pytest.mark.parametrize(("sidecar", "reason"), [
    ('{"dtype": "uint16", "byte_order": "little", "vocab_size": 10, "n_tok', "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"dtype": "uint16", "byte_order": "little", "vocab_size": "10", "n_tokens": 1, "sha256": ""}',
     "'vocab_size' must be int, got '10'"),
])
def test_a_broken_sidecar_names_the_file(tmp_path, sidecar, reason):
    write_tokens(tmp_path / "t.bin", np.arange(5), 10)
    (tmp_path / "t.json").write_text(sidecar)
    with pytest.raises(ValueError) as err:
        load_tokens(tmp_path / "t.bin", vocab_size=10)
    assert str(err.value).startswith(f"{tmp_path / 't.json'}: not a token sidecar") and reason in str(err.value)


# --- item 10: device errors are RuntimeErrors (as torch's are) and still ValueErrors


MISSING = "cuda:99"


def test_a_missing_device_is_a_runtime_error_with_the_same_message():
    expected = (f"device {MISSING!r} does not exist; valid: cuda:0 .. cuda:{torch.cuda.device_count() - 1}"
                if torch.cuda.is_available() else f"device {MISSING!r} requested but CUDA is not available here")
    for catch in (RuntimeError, ValueError, DeviceError):
        with pytest.raises(catch) as err:
            get_device(MISSING)
        assert str(err.value) == expected
    assert issubclass(DeviceError, RuntimeError) and issubclass(DeviceError, ValueError)


@pytest.mark.parametrize("call", [
    lambda d: get_device(d),
    lambda d: get_batch(np.arange(100, dtype=np.uint16), 2, 8, d),
    lambda d: Prefetcher(np.arange(100, dtype=np.uint16), 2, 8, d),
    lambda d: setup(device=d),
    lambda d: bench.time_matmul(8, "fp32", d),
    lambda d: bench.peak_flops(d),
    lambda d: hardware.detect(d),
    lambda d: Allocated(d),
], ids=["get_device", "get_batch", "Prefetcher", "setup", "time_matmul", "peak_flops", "detect", "Allocated"])
@pytest.mark.parametrize("device", [MISSING, "tpu", "mps:3"])
def test_every_function_that_takes_a_device_raises_a_runtime_error(call, device):
    with pytest.raises(RuntimeError) as err:
        call(device)
    assert isinstance(err.value, ValueError) and repr(device) in str(err.value)
