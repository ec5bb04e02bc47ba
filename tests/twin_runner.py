"""Run a notebook's `.py` twin cell by cell, as a kernel would, and report on it as JSON.

    python tests/twin_runner.py py_src/NN_topic.py [claim-S15 claim-S17 ...]

The notebook runs twice in one namespace (a student's Run All, then Run All again): the
second run must not fail either. During the first run:

- **Solutions** (markdown cells tagged ``solution``: a collapsed ``<details>`` block holding a
  ```` ```python ```` block, which no kernel runs) are executed where they stand, each in a copy
  of the namespace, so a solution never overwrites what the cells after it see; what their
  ``check_answer`` lines print is reported.
- Under each cell (code, or a solution's code) tagged with one of the given **claims**, a
  wrong value is planted under each check, which must then fail:
  ``check(name, got, expected, ...)`` is recorded as the cell runs, then called again with a
  wrong expected value (a number moved, a flag flipped, a string or collection changed in its
  first item) or, for ``raises=Error``, an error nothing raises; an ``assert`` is negated and
  the cell rerun in a copy of the namespace. A tagged cell with nothing that can fail
  (``check_answer`` never raises) shows up with an empty list.

Prints one line ``TWIN <json>`` with ``claims`` (per tagged cell, whether each planted check
failed) and ``solutions`` (per solution, the lines its check_answer calls printed).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import os
import re
import sys
from fractions import Fraction
from pathlib import Path

import jupytext
import numpy as np
import torch

SOLUTION_CODE = re.compile(r"```python\n(.*?)\n```", re.S)


def solution_code(source: str) -> str | None:
    """The code of a solution cell: the ```python block inside its <details>; None if there is none."""
    found = SOLUTION_CODE.search(source) if source.lstrip().startswith("<details>") else None
    return found.group(1) if found else None


def plant(value):
    """A value that a correct check must not accept in place of ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        return value * 1.5 + 1
    if isinstance(value, str):
        return value + " (planted)"
    if isinstance(value, torch.Tensor):
        return ~value if value.dtype == torch.bool else value + 1
    if isinstance(value, np.ndarray):
        return value + 1
    if isinstance(value, (tuple, list)) and value:
        return type(value)([plant(value[0]), *value[1:]])
    if isinstance(value, set) and value:
        return {plant(next(iter(value)))}
    if isinstance(value, dict) and value:
        first = next(iter(value))
        return {**value, first: plant(value[first])}
    return 0 if value is None else ("planted", value)


class PlantedError(Exception):
    """An error no notebook raises: a check told to expect it must fail."""


class _NegateAssert(ast.NodeTransformer):
    """Negates the ``target``-th assert statement of a cell, and counts them."""

    def __init__(self, target: int):
        self.target, self.seen = target, -1

    def visit_Assert(self, node):
        self.generic_visit(node)
        self.seen += 1
        if self.seen == self.target:
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node


def asserts_in(source: str) -> int:
    counter = _NegateAssert(target=-1)
    counter.visit(ast.parse(source))
    return counter.seen + 1


def with_assert_negated(source: str, target: int) -> str:
    return ast.unparse(ast.fix_missing_locations(_NegateAssert(target).visit(ast.parse(source))))


def fails(fn, *args, **kwargs) -> bool:
    """Whether fn(*args, **kwargs) raises AssertionError (a check or an assert failing)."""
    try:
        fn(*args, **kwargs)
    except AssertionError:
        return True
    return False


def trusted(*timings, **kwargs) -> bool:
    return True


def planted_asserts(source: str, namespace: dict) -> list[bool]:
    """Each assert of the cell negated in turn, the cell rerun in a copy of the namespace. The rerun
    trusts its clock (``conditions`` says True): a timing assert a busy machine skips is still reached."""
    import lecture_utils.bench as bench

    outcomes, real = [], bench.conditions
    bench.conditions = trusted
    try:
        for target in range(asserts_in(source)):
            rerun = {**namespace, **({"conditions": trusted} if "conditions" in namespace else {})}
            outcomes.append(fails(exec, with_assert_negated(source, target), rerun))
    finally:
        bench.conditions = real
    return outcomes


def run_recording_checks(code, namespace: dict) -> list[tuple]:
    """Run the cell once, for real, and return the (args, kwargs) of every check() it called."""
    real_check, calls = namespace["check"], []  # the notebook's first cells import check

    def recording_check(*args, **kwargs):
        calls.append((args, kwargs))
        return real_check(*args, **kwargs)

    namespace["check"] = recording_check
    try:
        exec(code, namespace)
    finally:
        namespace["check"] = real_check
    return calls


def planted_checks(calls: list[tuple], check) -> list[bool]:
    """Each recorded check called again with a wrong expected value (or an error nothing raises)."""
    outcomes = []
    for args, kwargs in calls:
        if "raises" in kwargs:
            outcomes.append(fails(check, *args, **{**kwargs, "raises": PlantedError}))
        else:
            name, got, expected, *rest = args
            outcomes.append(fails(check, name, got, plant(expected), *rest, **kwargs))
    return outcomes


def run(twin: Path, claims: set[str], namespace: dict, report: dict | None = None) -> None:
    """Run every code cell of ``twin`` in ``namespace``; with a ``report``, also its solutions
    (each in a copy of the namespace), planting under ``claims``, and fill the report in."""
    for index, cell in enumerate(jupytext.read(twin).cells):
        source = cell.source if cell.cell_type == "code" else solution_code(cell.source)
        if source is None or (cell.cell_type != "code" and report is None):
            continue
        where = f"<{twin.name} cell {index}>"
        tagged = sorted(claims & set(cell.metadata.get("tags", []))) if report is not None else []
        target = namespace if cell.cell_type == "code" else copy.copy(namespace)  # a solution's own copy
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed) if cell.cell_type != "code" else contextlib.nullcontext():
            if tagged:
                outcomes = planted_asserts(source, target)  # before the real run, which moves the state on
                calls = run_recording_checks(compile(source, where, "exec"), target)
                outcomes += planted_checks(calls, target["check"])
                report["claims"].append({"cell": index, "claims": tagged, "first_line": source.splitlines()[0][:70],
                                         "planted_checks_failed": outcomes})
            else:
                exec(compile(source, where, "exec"), target)
        if cell.cell_type != "code":
            sys.stdout.write(printed.getvalue())
            answers = [line for line in printed.getvalue().splitlines() if "is right" in line or "not right" in line
                       or "not answered" in line]
            report["solutions"].append({"cell": index, "check_answer_lines": answers,
                                        "calls": source.count("check_answer(")})


def main(argv: list[str]) -> int:
    twin, claims = Path(argv[0]).resolve(), set(argv[1:])
    os.chdir(twin.parents[1] / "notebooks")  # where a kernel runs the notebook
    namespace, report = {"__name__": "__main__"}, {"claims": [], "solutions": []}
    run(twin, claims, namespace, report)
    run(twin, set(), namespace)  # Run All again, in the same kernel
    sys.stdout.flush()
    print("TWIN " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
