"""A run folder that never loses work: the machinery around the lesson's checkpoint functions.

``RunFolder`` owns ``--out`` for one trainer: a lock file (``files.FolderLock``, released when
the process exits, so a lock left by a killed trainer is simply taken over), stale temporary
files of dead processes removed at start, an existing run refused unless ``--resume`` (or
moved aside with ``--overwrite``, never deleted), an append-only log that tolerates a torn
last line, and checkpoint saves whose failures (full disk, no permission) are one line and
leave the previous checkpoint intact (the checksum it stores is ``checkpoint.payload_digest``).
A run writes only inside ``--out``: a run file that is a symbolic link or a folder is refused
before anything is written, and ``--out`` may not be (or sit inside) the package, the data
folder or a source folder of the checkout.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from pathlib import Path

from lecture_utils.console import describe
from lecture_utils.files import FolderLock, move_in, temporary, write_text
from lecture_utils.train.checkpoint import digest_of, read_checkpoint

# A run's own files in --out: what --overwrite moves aside (the lock stays: this trainer holds it).
CHECKPOINT = "checkpoint.pt"
LOG = "log.jsonl"
SUMMARY = "summary.json"
CURVES = "curves.png"
LOCK = ".lock"
RUN_FILES = (CHECKPOINT, LOG, SUMMARY, CURVES, LOCK)
_WHAT = {CHECKPOINT: "checkpoint", LOG: "log", SUMMARY: "summary", CURVES: "figure", LOCK: "lock file"}
_PREVIOUS = re.compile(r"previous-\d+")
# What a run's own writes leave for a moment (files.temporary: .checkpoint.pt.tmp-PID, ...): the only
# temporaries a run ever removes from --out. A user's .notes.tmp-999999 is not one of them.
_OWN_TEMPORARY = re.compile(r"\.(?:" + "|".join(map(re.escape, RUN_FILES)) + r")\.tmp-(\d+)")
# The checkout's own folders: a run inside one would mix its files with the sources (or ship them).
SOURCE_FOLDERS = (".git", ".github", ".ci", ".venv", "benchmarks", "data", "docs", "jupyter", "lecture_utils",
                  "notebooks", "py_src", "scripts", "tests")


class RunError(RuntimeError):
    """A fault while the run writes its files (disk full, no permission): one line, exit 1."""


def os_error_in(err: BaseException) -> OSError | None:
    """The OSError behind ``err``: torch.save reports a failed write as its own RuntimeError
    ('enforce fail ... unexpected pos') with the OSError as its context."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` may still run: a number no process can have (OverflowError) counts as alive, so
    what it names is kept, never removed."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # someone else's process; or beyond any PID
        return True
    return True


def log_line(record: dict) -> str:
    """A record as one line of strict JSON: a number that is not finite (an MFU over a --peak-flops of
    5e-324, a gradient norm gone inf) is written null, never Infinity or NaN, which strict parsers refuse."""
    finite = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in record.items()}
    return json.dumps(finite) + "\n"


def read_log(path: Path) -> tuple[list[dict], str | None]:
    """The log's records and, if its last line is torn (a kill or a full disk mid-append),
    a note saying so; that line is dropped. An unparsable earlier line is a ValueError."""
    if not path.exists():
        return [], None
    lines = path.read_text(errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records, note = [], None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("step"), int):
                raise ValueError("not a record with an integer 'step'")
        except (ValueError, RecursionError) as err:  # RecursionError: brackets nested thousands deep
            reason = str(err).splitlines()[0]
            if number == len(lines):
                note = f"{path} line {number} is torn ({reason}): dropped it"
                break
            raise ValueError(f"{path} line {number} is not a valid log record ({reason}); only the last "
                             "line may be torn: fix or remove that line, then --resume") from None
        records.append(record)
    return records, note


def _checkout() -> Path | None:
    """The source checkout this package runs from, if any (a wheel install has none)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "lecture_utils").is_dir() else None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _holds_sources(path: Path, checkout: Path | None) -> str | None:
    """What ``path`` (resolved) sits inside that is not a run's place, in words; None if nothing."""
    from lecture_utils.data import data_dir

    package = Path(__file__).resolve().parents[1]
    if _within(path, package):
        return f"inside the package ({package})"
    data = data_dir().resolve()
    if _within(path, data):
        return f"inside the data folder ({data})"
    if checkout is not None and checkout in path.parents:
        top = path.relative_to(checkout).parts[0]
        if top in SOURCE_FOLDERS:
            return f"inside the checkout's {top}/ folder"
    return None


def check_out(out: str | Path) -> Path:
    """``--out`` must name a folder of the run's own: not empty, not the current directory, the
    filesystem root, the home directory, a folder that holds the checkout, the package, the data
    folder or a source folder of the checkout, nor a link to a folder that does not exist (one
    line, ValueError). ``~`` is expanded: the folder returned is the one every message names."""
    if not str(out).strip():
        raise ValueError("--out is empty: name a folder for the run, e.g. --out runs/tiny")
    given = Path(out).expanduser()  # '~/x' (quoted, so the shell left it): the home's x, never a folder named ~
    if given.is_symlink() and not given.exists():
        raise ValueError(f"--out {out} is a symbolic link to {os.readlink(given)}, which does not exist: "
                         "create that folder, or use another --out")
    path = given.resolve()
    named = {Path.cwd().resolve(): "the current directory", Path(path.anchor): "the filesystem root",
             Path.home().resolve(): "the home directory"}
    what = named.get(path)
    checkout = _checkout()
    if what is None and checkout is not None and (path == checkout or path in checkout.parents):
        what = f"a folder that holds the checkout ({checkout})"
    if what:
        raise ValueError(f"--out {out} is {what}: a run needs a folder of its own, e.g. --out runs/tiny")
    inside = _holds_sources(path, checkout)
    if inside:
        raise ValueError(f"--out {out} is {inside}: a run's files would mix with what is there; use a "
                         "folder of its own, e.g. --out runs/tiny")
    return given


def _no_follow(path, flags: int) -> int:
    """``open``'s opener: never through a symbolic link put in the file's place."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)


def odd_file(path: Path, what: str) -> str | None:
    """Why ``path`` cannot be a run's ``what`` (a log, a checkpoint...): a symbolic link, which a
    run never writes through, or something that is not a plain file; None if it is fine or absent."""
    if path.is_symlink():
        return (f"{path} is a symbolic link (to {os.readlink(path)}), not the run's {what}: a run writes "
                "only files of its own in --out, never through a link; remove the link, or use another --out")
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a plain file"
        return f"{path} is {kind}, not the run's {what}: move it away, or use another --out"
    return None


class RunFolder:
    """``--out`` for one trainer process (rank 0): lock, history, log and safe saves."""

    def __init__(self, out: str | Path, *, echo=print):
        self.out, self.echo = Path(out), echo
        self._lock = None
        self.saved: int | None = None  # the step of the checkpoint on disk, for messages that say so

    # -- ownership

    def acquire(self) -> None:
        """Take the folder's lock, or one line naming the trainer that holds it (ValueError)."""
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = FolderLock(self.out / LOCK)
        if not self._lock.acquire(note=f"{os.getpid()}\n"):
            holder, self._lock = self._lock.holder() or "unknown", None
            raise ValueError(f"--out {self.out} is in use by another trainer (PID {holder}, lock "
                             f"{self.out / LOCK}); wait for it to finish or use another --out")

    def refuse_busy(self) -> None:
        """Before anything of the folder is read: one line naming the live trainer that holds it."""
        holder = FolderLock(self.out / LOCK).busy() if self.out.is_dir() else None
        if holder is not None and holder != str(os.getpid()):  # (this process's own Trainer: not another)
            raise ValueError(f"--out {self.out} is in use by another trainer (PID {holder}, lock "
                             f"{self.out / LOCK}); wait for it to finish or use another --out")

    def refuse_odd(self) -> None:
        """A run file that is a link or a folder: refused before anything is read or written."""
        for name in RUN_FILES:
            problem = odd_file(self.out / name, _WHAT[name])
            if problem:
                raise ValueError(problem)

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __del__(self):
        self.release()

    def clean_stale_temporaries(self) -> None:
        """Remove the run files' ``.NAME.tmp-PID`` left by processes that no longer exist."""
        for path in self.out.iterdir():
            match = _OWN_TEMPORARY.fullmatch(path.name)
            if match and (int(match[1]) == os.getpid() or not _alive(int(match[1]))):
                with contextlib.suppress(OSError):
                    path.unlink()
                    self.echo(f"removed {path}, left by a dead process (PID {match[1]})")

    # -- history

    def holdings(self) -> list[str]:
        """What a previous run left here: its checkpoint, a non-empty log, a summary."""
        held = [n for n in (CHECKPOINT, SUMMARY) if (self.out / n).exists()]
        if (self.out / LOG).exists() and (self.out / LOG).stat().st_size:
            held.insert(1 if CHECKPOINT in held else 0, LOG)
        return held

    def refuse_existing(self) -> None:
        held = self.holdings()
        if CHECKPOINT in held:
            raise ValueError(f"--out {self.out} already holds a run ({', '.join(held)}): continue it with "
                             "--resume, or start over with --overwrite (moves it aside, deletes nothing)")
        if held:
            raise ValueError(f"--out {self.out} holds a run that stopped before its first checkpoint "
                             f"({', '.join(held)}): there is nothing to resume; start over with --overwrite "
                             "(moves it aside, deletes nothing)")

    def nothing_to_resume(self) -> str:
        """Why --resume finds no checkpoint here, and what to do instead."""
        held = self.holdings()
        if held:
            return (f"nothing to resume: {self.out} has no {CHECKPOINT}, only {', '.join(held)} of a run that "
                    "stopped before its first checkpoint; start over with --overwrite (moves it aside)")
        return f"nothing to resume: no {self.out / CHECKPOINT}; start a new run without --resume"

    def foreign(self) -> list[str]:
        """What is here besides a run's own files, their temporaries and earlier previous-N folders."""
        if not self.out.is_dir():
            return []
        return sorted(p.name for p in self.out.iterdir()
                      if p.name not in RUN_FILES and not _OWN_TEMPORARY.fullmatch(p.name) and not _PREVIOUS.fullmatch(p.name))

    def refuse_foreign(self) -> None:
        """--overwrite moves a run's own files only: a folder holding anything else is refused as it is."""
        other = self.foreign()
        if other:
            shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
            raise ValueError(f"--overwrite moves only a run's own files ({', '.join(RUN_FILES[:4])}), but "
                             f"{self.out} also holds {shown}: nothing was moved; use a folder of the run's own")

    def move_aside(self) -> Path | None:
        """Move the previous run's own files into ``previous-N`` (nothing else is touched)."""
        self.refuse_foreign()  # again, under the lock
        items = [self.out / n for n in RUN_FILES if n != LOCK and (self.out / n).exists()]
        if not items:
            return None
        n = 1
        while os.path.lexists(self.out / f"previous-{n}"):  # a link to nowhere takes its name too
            n += 1
        target = self.out / f"previous-{n}"
        target.mkdir()
        move_in([(p, target / p.name) for p in items])
        return target

    def open(self, *, resume: bool, overwrite: bool, say) -> BaseException | None:
        """Take --out for a run: its lock, stale temporaries, the previous run (moved aside with
        --overwrite, refused without --resume) and a fresh log. Returns what refused it, if anything
        (under torchrun every rank must hear of it before anyone raises)."""
        try:
            self.refuse_odd()  # a planted link or a folder where a run file goes: nothing is touched
            if overwrite:
                self.refuse_foreign()  # before the lock: a folder holding anything else stays as it is
            self.acquire()
            self.refuse_odd()  # again, under the lock
            self.clean_stale_temporaries()
            if resume:
                return None
            if overwrite:
                moved = self.move_aside()
                if moved:
                    say(f"--overwrite: moved the previous run to {moved}")
            else:
                self.refuse_existing()
            self.write(LOG, "", what="start the log")
        except (ValueError, RunError, OSError) as err:
            return err
        return None

    # -- the log

    def clean_log(self, up_to_step: int) -> list[dict]:
        """On resume: keep the log's records up to the checkpoint's step (the rest is redone),
        drop a torn last line (reported), rewrite the log atomically. Returns what is kept."""
        path = self.out / LOG
        if not path.exists():
            return []
        records, note = read_log(path)
        if note:
            self.echo(note)
        kept = [r for r in records if r["step"] <= up_to_step]
        self.write(LOG, "".join(log_line(r) for r in kept), what="rewrite the log")
        return kept

    def kept(self) -> str:
        """What a failure leaves, in words that are true: the last checkpoint, or that there is none."""
        if self.saved is None:
            return "no checkpoint has been saved yet"
        return f"the checkpoint at step {self.saved} is intact"

    def append(self, record: dict) -> None:
        """One line per record, appended with one write (never through a link put in the log's place)."""
        try:
            with open(self.out / LOG, "a", opener=_no_follow) as f:
                f.write(log_line(record))
        except OSError as err:
            then = ("free the space or fix the folder, then --resume" if self.saved is not None
                    else "free the space or fix the folder, then start over with --overwrite")
            raise RunError(f"cannot append step {record.get('step')} to {self.out / LOG}: {describe(err)}; "
                           f"{self.kept()}: {then}") from None

    def write(self, name: str, text: str, *, what: str) -> None:
        try:
            write_text(self.out / name, text)
        except OSError as err:
            raise RunError(f"cannot {what} ({self.out / name}): {describe(err)}") from None

    # -- checkpoints

    def save(self, save, step: int, *args, **kwargs) -> None:
        """``save(OUT/checkpoint.pt, *args, **kwargs)`` (the lesson's save_checkpoint), with its
        temporary file removed on every failure path and an OSError turned into one line (RunError)."""
        path = self.out / CHECKPOINT
        tmp = temporary(path)
        try:
            save(path, *args, **kwargs)
        except BaseException as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            cause = os_error_in(err)
            if cause is None or isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            raise RunError(f"cannot save the step-{step} checkpoint to {path}: {describe(cause)}; "
                           f"{self.kept()}") from None
        self.saved = step


def resume_payload(out: Path) -> dict:
    """The checkpoint --resume continues: one ValueError naming the file and why, if there is none
    or it cannot be used (read_checkpoint: truncated, flipped bytes, another program's pickle), or if
    it carries no sha256 to check its settings with (a renamed or missing ``extra`` or sha256)."""
    folder = RunFolder(out)
    folder.refuse_odd()  # a link or a folder in a run file's place (the lock's too): named as such
    folder.refuse_busy()  # a live run is named as one, not read as "nothing to resume"
    path = Path(out) / CHECKPOINT
    if not path.is_file():
        raise ValueError(folder.nothing_to_resume())
    payload = read_checkpoint(path)
    if digest_of(payload) is None:  # its settings, which --resume relies on, could not be checked
        raise ValueError(f"{path} holds no sha256 of its contents and settings (the trainer saves one with each "
                         "checkpoint; save_checkpoint alone does not, and a damaged file may have lost it): "
                         "--resume continues only an intact checkpoint of the trainer's; start over with --overwrite")
    return payload
