"""Durable files: what a user has is never half-written, and is replaced only in one step.

The one home of ``os.replace``, ``fsync`` and ``flock`` in the package: checkpoints and logs
(``lecture_utils/train``), the prepared token files (``lecture_utils/prepare.py``), figures
(``lecture_utils/plots.py``) and the GPU check's report all write through these.

- :func:`replace_atomically`: write into a sibling ``.NAME.tmp-PID`` file, flush it to disk,
  ``os.replace`` it over the target, then flush the folder (so the rename survives a power
  cut): a reader sees the old file or the new one, never half of one. On any failure the
  temporary file is removed and the old file is untouched.
- :func:`move_in`: rename finished files into their places (one ``os.replace`` each), then
  flush the folders that changed.
- :func:`seal` and :func:`move_in_sealed`: a staging folder committed at the end. Files are
  built in a staging folder beside their places; ``seal`` flushes them and writes a
  COMMITTING marker; ``move_in_sealed`` renames them in and removes the folder. A kill before
  the marker leaves the old files as they were; one during the renames leaves a sealed folder
  that the next run finishes moving in.
- :class:`FolderLock`: an advisory lock (``fcntl.flock``) on a lock file or on a folder
  itself, released when the process ends, however it ends, so a dead owner's lock is simply
  taken over. A lock file is never followed through a symbolic link, and one that is not a
  plain file of its own (a link, a folder, a hard link to another name) is refused: the
  lock writes its holder's note into it, and must never empty someone else's file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
from pathlib import Path


def temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def fsync(path: Path) -> None:
    """Flush a file's or a folder's entries to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: str | Path, write, mode: str = "wb") -> Path:
    """``write(f)`` into a temporary file beside ``path``, then put it in ``path``'s place.

    The temporary file is created afresh (``x`` mode: never through a link planted under its
    name), and ``os.replace`` swaps a link at ``path`` itself, not what it points to."""
    path = Path(path)
    tmp = temporary(path)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()  # this process's own, left by a failed earlier attempt (or a planted link)
    try:
        with open(tmp, mode.replace("w", "x")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the rename
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one, never half
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync(path.parent)  # and the rename itself survives a power cut
    return path


def write_text(path: str | Path, text: str) -> Path:
    return replace_atomically(path, lambda f: f.write(text), mode="w")


def move_in(pairs: list[tuple[Path, Path]]) -> None:
    """Rename each finished ``(source, target)`` into place, then flush the folders that changed."""
    for source, target in pairs:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
    for folder in sorted({target.parent for _, target in pairs}):
        fsync(folder)


COMMIT_MARKER = "COMMITTING"  # in a staging folder: every file here is built and checked


def seal(staging: Path, names: tuple[str, ...]) -> None:
    """Flush the built files ``names`` in ``staging`` and their folders to disk, then write the
    COMMITTING marker: from here on they may be moved in, by this run or, after a kill, the next."""
    for name in names:
        fsync(staging / name)
    for folder in sorted({(staging / name).parent for name in names}, reverse=True):
        fsync(folder)
    (staging / COMMIT_MARKER).write_text("every file here is built and checked; moving them in\n")
    fsync(staging / COMMIT_MARKER)
    fsync(staging)


def is_sealed(staging: Path) -> bool:
    return (staging / COMMIT_MARKER).exists()


def move_in_sealed(staging: Path, folder: Path, names: tuple[str, ...]) -> None:
    """Rename each of ``names`` from a sealed ``staging`` over its place in ``folder``, then drop
    ``staging``. Ctrl-C and SIGTERM wait until the renames are done (SIGKILL cannot: the next run
    finishes the move); a Ctrl-C that came meanwhile is dropped, since the work is complete."""
    block = getattr(signal, "pthread_sigmask", None)  # not on Windows
    previous = block(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if block else None
    try:
        # a name absent from staging was moved in already, by an interrupted run
        move_in([(staging / name, folder / name) for name in names if (staging / name).exists()])
        shutil.rmtree(staging)
    finally:
        if block:
            try:
                block(signal.SIG_SETMASK, previous)
            except KeyboardInterrupt:
                pass


class LockFileError(OSError):
    """A lock file that is not a plain file of its own (a link, a folder, a hard link): refused."""


class FolderLock:
    """``fcntl.flock`` on ``path`` (a lock file, created if missing, or a folder), without waiting.

    ``acquire()`` returns False when another process holds it; with ``note`` the lock file keeps
    that text (e.g. the holder's PID) for the next one to read with ``holder()``. A lock file that
    is a symbolic link, a folder or a hard link is refused with :class:`LockFileError` (one line
    naming it), before anything is written into it.
    """

    def __init__(self, path: str | Path, *, folder: bool = False):
        self.path, self.folder, self.fd = Path(path), folder, None

    def _open(self, *, create: bool) -> int:
        if self.folder:
            return os.open(self.path, os.O_RDONLY)
        flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | (os.O_CREAT if create else 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as err:
            if self.path.is_symlink():  # ELOOP (Linux) or EMLINK (some BSDs): a link, never followed
                raise LockFileError(err.errno, f"{self.path} is a symbolic link (to {os.readlink(self.path)}), "
                                    "not a lock file: a lock is never taken through a link; remove it",
                                    str(self.path)) from None
            if self.path.is_dir():
                raise LockFileError(err.errno, f"{self.path} is a folder, not a lock file; move it away",
                                    str(self.path)) from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            what = "not a plain file" if not stat.S_ISREG(info.st_mode) else \
                f"a hard link ({info.st_nlink} names share its contents)"
            raise LockFileError(0, f"{self.path} is {what}: a lock file must be a file of its own; remove it",
                                str(self.path))
        return fd

    def acquire(self, note: str = "", *, wait: bool = False) -> bool:
        import fcntl  # POSIX only: the CLIs that lock run on Linux and macOS

        fd = self._open(create=True)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        if note and not self.folder:
            os.ftruncate(fd, 0)  # a lock left by a dead process is taken over here
            os.pwrite(fd, note.encode(), 0)
        self.fd = fd
        return True

    def busy(self) -> str | None:
        """Whether another process holds the lock now, without taking it and without creating
        the lock file: its note (or "unknown") when held, None when free or absent."""
        import fcntl

        if not self.folder and not self.path.is_file():
            return None
        try:
            fd = self._open(create=False)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: two peeks never block each other
        except BlockingIOError:
            return self.holder() or "unknown"
        finally:
            os.close(fd)  # (closing releases the shared lock, if it was taken)
        return None

    def holder(self) -> str:
        """What the holder wrote into the lock file ("" for a folder, or when unreadable)."""
        if self.folder or self.path.is_symlink():
            return ""
        try:
            return self.path.read_text(errors="replace").strip()
        except OSError:
            return ""

    @contextlib.contextmanager
    def held(self):
        """Inside the ``with``, this process holds the lock (it waits for another holder to finish)."""
        self.acquire(wait=True)
        try:
            yield self
        finally:
            self.release()

    def release(self) -> None:
        if self.fd is not None:
            if not self.folder:
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, 0)  # the descriptor of the file this process created or checked
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None
