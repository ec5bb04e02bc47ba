"""lecture_utils/files.py: what a user has is never half-written, and is replaced only in one step."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from lecture_utils import files


def test_replace_atomically_writes_syncs_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "a.txt"
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1])
    files.write_text(target, "new")
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert synced == [target.stat().st_ino, tmp_path.stat().st_ino]  # the file, then its folder


def test_a_failed_write_keeps_the_old_file_whole(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")

    def half_then_full_disk(f):
        f.write(b"ne")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        files.replace_atomically(target, half_then_full_disk)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_sealed_staging_folder_moves_in_and_an_unsealed_one_does_not_count(tmp_path):
    folder, staging = tmp_path / "data", tmp_path / "data" / ".stage"
    (staging / "tokens").mkdir(parents=True)
    names = ("tokens/a.bin", "b.json")
    for name in names:
        (staging / name).write_text(name)
    assert not files.is_sealed(staging)
    files.seal(staging, names)
    assert files.is_sealed(staging)
    files.move_in_sealed(staging, folder, names)
    assert [(folder / n).read_text() for n in names] == list(names) and not staging.exists()


def test_moving_in_finishes_what_an_interrupted_move_left(tmp_path):
    folder, staging = tmp_path / "data", tmp_path / "data" / ".stage"
    staging.mkdir(parents=True)
    (staging / "b.json").write_text("b")
    (folder / "a.bin").write_text("a, moved in before the kill")
    files.seal(staging, ("b.json",))
    files.move_in_sealed(staging, folder, ("a.bin", "b.json"))  # a.bin is gone from staging: skipped
    assert (folder / "a.bin").read_text() == "a, moved in before the kill" and (folder / "b.json").read_text() == "b"


def test_a_held_lock_refuses_a_second_holder_and_keeps_its_note(tmp_path):
    first, second = files.FolderLock(tmp_path / "lock"), files.FolderLock(tmp_path / "lock")
    assert first.acquire(note="PID 1")
    try:
        assert not second.acquire()
        assert second.holder() == "PID 1"
    finally:
        first.release()
    assert second.acquire()
    second.release()


def test_held_waits_for_the_holder_to_finish(tmp_path):
    first = files.FolderLock(tmp_path / "lock")
    assert first.acquire()
    entered = threading.Event()

    def wait_then_hold():
        with files.FolderLock(tmp_path / "lock").held():
            entered.set()

    waiter = threading.Thread(target=wait_then_hold)
    waiter.start()
    time.sleep(0.2)
    assert not entered.is_set()  # still waiting: the first holder has it
    first.release()
    waiter.join(timeout=10)
    assert entered.is_set()


# --- issue 29, item 2: a lock file never follows a link, never empties another file

@pytest.mark.parametrize("kind", ["symlink", "hardlink", "folder"])
def test_folder_lock_refuses_a_lock_file_that_is_not_its_own(tmp_path, kind):
    victim, lock = tmp_path / "victim.txt", tmp_path / ".lock"
    victim.write_text("a user's file")
    {"symlink": lambda: lock.symlink_to(victim), "hardlink": lambda: os.link(victim, lock),
     "folder": lock.mkdir}[kind]()
    for attempt in (lambda: files.FolderLock(lock).acquire(note="123\n"), lambda: files.FolderLock(lock).held().__enter__()):
        with pytest.raises(files.LockFileError) as err:
            attempt()
        assert str(lock) in err.value.strerror and "\n" not in err.value.strerror
    assert victim.read_text() == "a user's file"


def test_the_vendor_lock_of_make_site_never_empties_a_planted_target(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import vendor

    victim, dest = tmp_path / "victim.txt", tmp_path / "vendor"
    victim.write_text("a user's file")
    dest.mkdir()
    (dest / ".lock").symlink_to(victim)
    with pytest.raises(vendor.VendorError) as err:
        vendor.install(dest)
    assert str(err.value).startswith(f"{dest / '.lock'} is a symbolic link (to {victim})")
    assert victim.read_text() == "a user's file"
