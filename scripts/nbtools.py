"""Shared by scripts/regen.py and scripts/run_notebooks.py: execute one notebook."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from lecture_utils.checks import CHECK_MARK

KERNEL = "pytorch-resource-accounting"


def execute(nb: nbformat.NotebookNode, folder: Path, timeout: int = 600) -> float:
    """Run every cell in a fresh kernel (cwd = the notebook's folder); return seconds.

    Cells tagged ``raises-exception`` may raise; any other error stops the run.
    Golden outputs are recorded on CPU, so a GPU machine is told to use the CPU.
    """
    os.environ.setdefault("LECTURE_DEVICE", "cpu")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silence debugpy's notice
    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, record_timing=False,
                            resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def count_checks(nb: nbformat.NotebookNode) -> int:
    """Number of ``CHECK_MARK`` lines (lecture_utils.check successes) in a notebook's outputs."""
    total = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                total += sum(line.startswith(CHECK_MARK) for line in out["text"].splitlines())
    return total
