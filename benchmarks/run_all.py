"""How long a student waits for Run All: each notebook executed top to bottom in a fresh kernel.

Times what Lab's Run All does (nbclient, as `make run`), English and Chinese, on this machine's
CPU, and prints each notebook's seconds beside its target (docs/gpu/reference.md, `run-all-seconds`:
30 s on 2 cores) and its slowest cell. A notebook's time includes the kernel's start and its
first `import torch`. Exits 1 only on a gross regression (over twice the target).

    python benchmarks/run_all.py [--zh] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from _targets import report
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
LESSONS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()


def run_all(path: Path) -> tuple[float, float, int]:
    """(seconds for the whole notebook, seconds of its slowest cell, that cell's index)."""
    nb = nbformat.read(path, as_version=4)
    slowest = [0.0, -1]

    def timed(cell, cell_index, **_):
        slowest[:] = max(slowest, [time.perf_counter() - started[0], cell_index])

    started = [0.0]
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            timeout=600, on_cell_execute=lambda cell, cell_index: started.__setitem__(0, time.perf_counter()),
                            on_cell_executed=timed)
    begin = time.perf_counter()
    client.execute()
    return time.perf_counter() - begin, slowest[0], slowest[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="lines of notebooks.txt (default: all)")
    parser.add_argument("--zh", action="store_true", help="the Chinese notebooks (notebooks/zh/)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in LESSONS]
    if unknown:
        parser.error(f"{unknown[0]!r} is not a line of notebooks.txt ({', '.join(LESSONS)})")
    os.environ.setdefault("LECTURE_PROGRESS", "0")
    os.environ.setdefault("LECTURE_DEVICE", "cpu")
    folder = ROOT / "notebooks" / ("zh" if args.zh else "")
    ok = True
    for name in args.names or LESSONS:
        seconds, slowest, cell = run_all(folder / f"{name}.ipynb")
        ok &= report("run-all-seconds", seconds, "cpu", f" s: {name}{' (zh)' if args.zh else ''}, "
                     f"slowest cell {cell} ({slowest:.1f} s), {os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
