"""A run folder that never loses work: the machinery around the lesson's checkpoint functions.

``RunFolder`` owns ``--out`` for one trainer: a lock file (``fcntl.flock``, released when
the process exits, so a lock left by a killed trainer is simply taken over), stale temporary
files of dead processes removed at start, an existing run refused unless ``--resume`` (or
moved aside with ``--overwrite``, never deleted), an append-only log that tolerates a torn
last line, and checkpoint saves whose failures (full disk, no permission) are one line and
leave the previous checkpoint intact. ``payload_digest`` is the checksum stored in every
checkpoint the Trainer writes; ``read_checkpoint`` checks it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
from pathlib import Path

import torch

LOCK = ".lock"
LOG = "log.jsonl"
SUMMARY = "summary.json"
_TMP = re.compile(r"^\..+\.tmp-(\d+)$")  # .checkpoint.pt.tmp-PID, .log.jsonl.tmp-PID, ...


class RunError(RuntimeError):
    """A fault while the run writes its files (disk full, no permission): one line, exit 1."""


def describe(err: OSError) -> str:
    """``No space left on device [ENOSPC]``: the reason and the errno's name."""
    name = errno.errorcode.get(err.errno or 0)
    return f"{err.strerror or err}" + (f" [{name}]" if name else "")


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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def payload_digest(model_state: dict, optimizer_state: dict, step: int, rng: dict) -> str:
    """sha256 over every tensor's bytes and every plain value of a checkpoint's payload."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(x, dict):
            h.update(b"{")
            for k in sorted(x, key=repr):
                h.update(repr(k).encode())
                feed(x[k])
            h.update(b"}")
        elif isinstance(x, list | tuple):  # a tuple may come back as a list: the same here
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode())

    feed([model_state, optimizer_state, int(step), rng])
    return h.hexdigest()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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
        except ValueError as err:
            reason = str(err).splitlines()[0]
            if number == len(lines):
                note = f"{path} line {number} is torn ({reason}): dropped it"
                break
            raise ValueError(f"{path} line {number} is not a valid log record ({reason}); only the last "
                             "line may be torn: fix or remove that line, then --resume") from None
        records.append(record)
    return records, note


class RunFolder:
    """``--out`` for one trainer process (rank 0): lock, history, log and safe saves."""

    def __init__(self, out: str | Path, *, echo=print):
        self.out, self.echo = Path(out), echo
        self._lock = None

    # -- ownership

    def acquire(self) -> None:
        """Take the folder's lock, or one line naming the trainer that holds it (ValueError)."""
        self.out.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ValueError(f"--out {self.out} is in use by another trainer (PID {holder}, lock "
                             f"{self.out / LOCK}); wait for it to finish or use another --out") from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)  # a lock left by a dead PID is taken over here
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock = fd

    def release(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock, 0)
            os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = None

    def __del__(self):
        self.release()

    def clean_stale_temporaries(self) -> None:
        """Remove ``.NAME.tmp-PID`` files left by processes that no longer exist."""
        for path in self.out.iterdir():
            match = _TMP.match(path.name)
            if match and (int(match[1]) == os.getpid() or not _alive(int(match[1]))):
                with contextlib.suppress(OSError):
                    path.unlink()
                    self.echo(f"removed {path}, left by a dead process (PID {match[1]})")

    # -- history

    def holdings(self, checkpoint: str) -> list[str]:
        """What a previous run left here: its checkpoint, a non-empty log, a summary."""
        held = [n for n in (checkpoint, SUMMARY) if (self.out / n).exists()]
        if (self.out / LOG).exists() and (self.out / LOG).stat().st_size:
            held.insert(1 if checkpoint in held else 0, LOG)
        return held

    def refuse_existing(self, checkpoint: str) -> None:
        held = self.holdings(checkpoint)
        if held:
            raise ValueError(f"--out {self.out} already holds a run ({', '.join(held)}): continue it with "
                             "--resume, or start over with --overwrite (moves it aside, deletes nothing)")

    def move_aside(self) -> Path | None:
        """Move everything but the lock and earlier ``previous-N`` folders into ``previous-N``."""
        items = [p for p in self.out.iterdir() if p.name != LOCK and not re.fullmatch(r"previous-\d+", p.name)]
        if not items:
            return None
        n = 1
        while (self.out / f"previous-{n}").exists():
            n += 1
        target = self.out / f"previous-{n}"
        target.mkdir()
        for p in items:
            os.replace(p, target / p.name)
        return target

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
        self.write(LOG, "".join(json.dumps(r) + "\n" for r in kept), what="rewrite the log")
        return kept

    def append(self, record: dict) -> None:
        """One line per record, appended with one write."""
        try:
            with open(self.out / LOG, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as err:
            raise RunError(f"cannot append step {record.get('step')} to {self.out / LOG}: {describe(err)}; "
                           "the checkpoint is intact: free the space or fix the folder, then --resume") from None

    def write(self, name: str, text: str, *, what: str) -> None:
        try:
            atomic_write_text(self.out / name, text)
        except OSError as err:
            raise RunError(f"cannot {what} ({self.out / name}): {describe(err)}") from None

    # -- checkpoints

    def save(self, save, path: Path, step: int, previous: int | None, *args, **kwargs) -> None:
        """``save(path, *args, **kwargs)`` (the lesson's save_checkpoint), with its temporary file
        removed on every failure path and an OSError turned into one line (RunError)."""
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            save(path, *args, **kwargs)
        except BaseException as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            cause = os_error_in(err)
            if cause is None or isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            kept = (f"the checkpoint at step {previous} is intact" if previous is not None
                    else "no earlier checkpoint existed")
            raise RunError(f"cannot save the step-{step} checkpoint to {path}: {describe(cause)}; {kept}"
                           ) from None
