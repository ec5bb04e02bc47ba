"""The GPU check's notebook stage (scripts/gpu_check.py): one notebook's percent-format .py twin,
run cell by cell in one namespace, in the stage's own process.

A cell that needs a package the lent machine lacks (NOT_ON_THE_GPU_MACHINE), or a name that such
a cell or a failed one would have bound, is skipped; every ``if cuda_only(device, "<what>"):``
block is reported by its ``what``: passed, failed with the failing statement, or skipped, with
its asserts and the ``[measured]``/``[per-device]`` lines it printed. Standard library only, so
that gpu_check.py runs on a python3 with torch and nothing of Jupyter.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?")
# What the lent GPU machine lacks: cells importing these are skipped there, and the CPU rehearsal hides them.
NOT_ON_THE_GPU_MACHINE = ("IPython", "ipykernel", "ipywidgets", "jupyter", "jupyter_client", "jupyter_core",
                          "jupyterlab", "jupytext", "matplotlib_inline", "nbclient", "nbconvert", "nbformat",
                          "nbval", "beartype", "tokenizers", "pytest")


def parse_cells(path: Path) -> list[str]:
    """The code cells of a jupytext percent file (a raising cell is a failure: notebooks show an
    error with ``check(..., raises=)``, which does not raise)."""
    cells, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if match := CELL.match(line):
            if current is not None:
                cells.append(current)
            current = None if match["markdown"] else ""
        elif current is not None:
            current += line
    return cells + ([current] if current is not None else [])


def names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds, names it reads without binding them)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read - bound


def cuda_blocks(source: str) -> list[dict]:
    """The ``if cuda_only(device, "<what>"):`` blocks of a cell, in order, with their asserts."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    blocks = []
    for node in ast.walk(tree):
        test = getattr(node, "test", None) if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Call) and getattr(test.func, "id", None) == "cuda_only" and len(test.args) == 2
                and isinstance(test.args[1], ast.Constant)):
            checks = sorted((n for n in ast.walk(node) if isinstance(n, ast.Assert)), key=lambda n: n.lineno)
            blocks.append({"what": test.args[1].value, "lines": (node.lineno, node.end_lineno),
                           "checks": [(n.lineno, n.end_lineno, ast.get_source_segment(source, n)) for n in checks]})
    return sorted(blocks, key=lambda b: b["lines"])


def block_rows(blocks: list[dict], cell: int, entered: dict, printed: list[str], err=None, filename="",
               skipped: str = "") -> list[dict]:
    """passed / failed / skipped for each cuda_only block of one cell, from how the cell ended."""
    lines = [f.lineno for f in reversed(traceback.extract_tb(err.__traceback__)) if f.filename == filename] if err else []
    rows = []
    for b in blocks:
        row = {"what": b["what"], "cell": cell, "checks": [c[2] for c in b["checks"]], "measured": printed}
        first, last = b["lines"]
        at = next((x for x in lines if first <= x <= last), None)
        if skipped:
            row.update(status="skipped", reason=skipped)
        elif at is not None:
            statement = next((c[2] for c in b["checks"] if c[0] <= at <= c[1]), None)
            row.update(status="failed", message="".join(traceback.format_exception_only(type(err), err)).strip(),
                       **({"statement": statement} if statement else {}))
        elif b["what"] not in entered:
            row.update(status="skipped", reason=f"not reached: the cell failed first ({type(err).__name__})"
                       if err else "not reached")
        elif not entered[b["what"]]:
            row.update(status="skipped", reason="cuda_only() returned False (not on a CUDA device)")
        else:
            row.update(status="passed")
        rows.append(row)
    return rows


class _Tee(io.StringIO):
    """Keeps what the cells print (each block's lines are found in it) and passes it on as it comes,
    so a stage stopped half-way still leaves its output in the log."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)


def run_notebook(py: Path, stream=None) -> dict:
    """Execute one notebook twin cell by cell; its status, cuda_only blocks and machine-dependent lines."""
    import matplotlib.pyplot as plt

    import lecture_utils
    import lecture_utils.device
    from lecture_utils.checks import CHECK_MARK, MEASURED_PREFIX, PER_DEVICE_PREFIX

    prefixes = (MEASURED_PREFIX, PER_DEVICE_PREFIX)
    module = sys.modules["__notebook__"] = types.ModuleType("__notebook__")  # dataclasses look classes up here
    unavailable: dict[str, str] = {}  # name -> where it came from ("a skipped cell", "failed cell 3")
    result = {"ran": 0, "skipped": [], "failed": [], "blocks": [], "status": "passed"}
    output, entered, original = _Tee(stream or sys.stdout), {}, lecture_utils.device.cuda_only

    def recording_cuda_only(device, what):
        entered[what] = original(device, what)
        return entered[what]

    # both homes: lecture_utils keeps a name once looked up there (its lazy exports)
    lecture_utils.cuda_only = lecture_utils.device.cuda_only = recording_cuda_only
    cwd, start = Path.cwd(), time.perf_counter()
    os.chdir(ROOT / "notebooks")  # as Jupyter does: the notebook's folder
    cells = parse_cells(py)
    try:
        for i, source in enumerate(cells, 1):
            filename, before = f"{py.name}:cell{i}", output.tell()
            blocks, (bound, read) = cuda_blocks(source), names(source)
            needs = sorted(read & unavailable.keys())
            if needs:  # a name from a skipped or failed cell: do not run on half-defined state
                reason = f"uses {needs[0]} from {unavailable[needs[0]]}"
                result["skipped"].append(f"cell {i}: {reason}")
                unavailable.update(dict.fromkeys(bound, unavailable[needs[0]]))
                result["blocks"] += block_rows(blocks, i, entered, [], skipped=reason)
                continue
            try:
                with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                    exec(compile(source, filename, "exec"), module.__dict__)
                result["ran"] += 1
                for name in bound:
                    unavailable.pop(name, None)
                printed = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                result["blocks"] += block_rows(blocks, i, entered, printed)
            except Exception as err:
                printed = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                missing = (getattr(err, "name", None) or "").split(".")[0]
                if isinstance(err, ModuleNotFoundError) and missing in NOT_ON_THE_GPU_MACHINE:
                    reason, origin = f"needs {missing}", "a skipped cell"
                else:
                    reason, origin = "", f"failed cell {i}"
                    error = f"cell {i}: " + "".join(traceback.format_exception_only(type(err), err)).strip()
                    result.update(status="failed", error=result.get("error", error))
                    result["failed"].append(error)
                    output.write(traceback.format_exc())
                if reason:
                    result["skipped"].append(f"cell {i}: {reason}")
                result["blocks"] += block_rows(blocks, i, entered, printed, err, filename, skipped=reason)
                for name in bound:  # dropped, so a failed block's tensors leave GPU memory
                    unavailable[name] = origin
                    module.__dict__.pop(name, None)
            finally:
                plt.close("all")
    finally:
        os.chdir(cwd)
        lecture_utils.device.cuda_only = original
        del lecture_utils.cuda_only  # looked up afresh, from lecture_utils.device, next time
    text = output.getvalue()
    result.update(cells=len(cells), seconds=round(time.perf_counter() - start, 1),
                  checks=sum(line.startswith(CHECK_MARK) for line in text.splitlines()),
                  measured=[line for line in text.splitlines() if line.startswith(prefixes)])
    return result
