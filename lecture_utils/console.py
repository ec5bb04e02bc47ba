"""What the command lines print is never fatal: a closed pipe or a full disk stops the printing only.

``python -m lecture_utils.train ... | head -1`` closes the trainer's stdout after one line;
every later ``print`` would raise ``BrokenPipeError`` and kill the run. Under
:func:`guarded_output` a stream that fails once is pointed at ``/dev/null`` (the file
descriptor itself, so that even the interpreter's last flush goes nowhere) and the program
goes on; the first error is kept in ``lost`` for the caller to report or ignore.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys


class GuardedStream:
    """A text stream whose write errors silence it instead of raising."""

    def __init__(self, stream):
        self.stream = stream
        self.lost: OSError | None = None  # the first write error; the stream prints nothing after it

    def write(self, text: str) -> int:
        if self.lost is None:
            try:
                return self.stream.write(text)
            except OSError as err:
                self._silence(err)
        return len(text)

    def flush(self) -> None:
        if self.lost is None:
            try:
                self.stream.flush()
            except OSError as err:
                self._silence(err)

    def _silence(self, err: OSError) -> None:
        self.lost = err
        with contextlib.suppress(OSError, ValueError, AttributeError):  # not every stream has a descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())  # what is still buffered now goes nowhere, quietly
            os.close(devnull)

    def __getattr__(self, name):  # isatty, fileno, encoding, ...: the wrapped stream's
        return getattr(self.stream, name)


@contextlib.contextmanager
def guarded_output():
    """``sys.stdout`` and ``sys.stderr`` guarded for the block; yields them (see ``.lost``)."""
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(sys.stdout), GuardedStream(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved


def describe(err: OSError) -> str:
    """``No space left on device [ENOSPC]``: the reason and the errno's name."""
    name = errno.errorcode.get(err.errno or 0)
    return f"{err.strerror or err}" + (f" [{name}]" if name else "")


def closed_pipe(err: OSError | None) -> bool:
    """True for the error a reader that went away gives (``| head``): not worth a word."""
    return err is not None and err.errno == errno.EPIPE


@contextlib.contextmanager
def leave_on_signals(prog: str):
    """While a command line starts (torch loading), SIGINT, SIGTERM and SIGHUP end it at once with one line.

    Nothing has been written yet, and a KeyboardInterrupt raised inside an import can leave a
    half-built module behind it (numpy's, say) and a traceback from whatever trips over it next.
    A ``TORCH_LOGS`` that torch refuses on import is one line too (exit 2), not its traceback.
    """

    def leave(signum, frame):
        print(f"{prog}: stopped by {signal.Signals(signum).name} while starting; nothing was changed",
              file=sys.stderr, flush=True)
        os._exit(128 + signum)

    stops = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]  # no SIGHUP on Windows
    handlers = {s: signal.signal(s, leave) for s in stops}
    try:
        yield
    except ValueError as err:
        if "TORCH_LOGS" not in str(err):
            raise
        print(f"{prog}: error: TORCH_LOGS={os.environ.get('TORCH_LOGS', '')!r} is not a setting torch knows "
              '(TORCH_LOGS="help" lists them): fix it, or unset TORCH_LOGS', file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
