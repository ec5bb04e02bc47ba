"""Run a notebook's `.py` twin cell by cell and, in each cell tagged with one of the given
claims, plant a wrong value under each of its checks: every planted check must fail.

    python tests/plant_claims.py py_src/NN_topic.py claim-S15 claim-S17 ...
    python tests/plant_claims.py --twice py_src/NN_topic.py   (Run All twice in one kernel)

- ``check(name, got, expected, ...)``: the cell runs once, for real, with every check call
  recorded; each is then called again with a wrong expected value (a number moved, a flag
  flipped, a string or collection changed in its first item) or, for ``raises=Error``, an error
  nothing raises, and must raise ``AssertionError``. Nothing in the cell runs twice.
- ``assert``: the cell runs again in a copy of the namespace with that one assert negated, and
  must raise ``AssertionError`` (so the assert is reached and its condition held).

A tagged cell with no check at all, or one whose checks only print (``check_answer`` never
raises), has nothing that can fail: it shows up with an empty list. Prints one JSON line: per
tagged cell, its claims and, per planted check, whether it failed.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import sys
from fractions import Fraction
from pathlib import Path

import jupytext
import numpy as np
import torch


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


class PlantedError(Exception):
    """An error no notebook raises: a check told to expect it must fail."""


def fails(fn, *args, **kwargs) -> bool:
    """Whether fn(*args, **kwargs) raises AssertionError (a check or an assert failing)."""
    try:
        fn(*args, **kwargs)
    except AssertionError:
        return True
    return False


def planted_asserts(source: str, namespace: dict) -> list[bool]:
    """Each assert of the cell negated in turn, the cell rerun in a copy of the namespace."""
    return [fails(exec, with_assert_negated(source, target), copy.copy(namespace))
            for target in range(asserts_in(source))]


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


def run(twin: Path, claims: set[str], namespace: dict | None = None) -> list[dict]:
    """Run every code cell of ``twin`` in ``namespace`` (a kernel's, kept between runs: pass the
    same dict twice to run the notebook twice in one kernel), planting under ``claims``."""
    twin = twin.resolve()  # the cells run in notebooks/, as in a kernel
    notebook = jupytext.read(twin)
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    results = []
    os.chdir(twin.resolve().parents[1] / "notebooks")  # where a kernel runs the notebook
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        code = compile(cell.source, f"<{twin.name} cell {index}>", "exec")
        tagged = sorted(claims & set(cell.metadata.get("tags", [])))
        if not tagged:
            exec(code, namespace)
            continue
        outcomes = planted_asserts(cell.source, namespace)  # before the real run, which moves the state on
        calls = run_recording_checks(code, namespace)
        outcomes += planted_checks(calls, namespace["check"])
        results.append({"cell": index, "claims": tagged, "first_line": cell.source.splitlines()[0][:70],
                        "checks": len(calls), "planted_checks_failed": outcomes})
    return results


if __name__ == "__main__":
    if sys.argv[1] == "--twice":  # Run All twice in one kernel: the second run must not fail either
        kernel = {"__name__": "__main__"}
        for _ in range(2):
            run(Path(sys.argv[2]), set(), kernel)
        print("PLANTED []")
        sys.exit(0)
    twin_path, *claim_tags = sys.argv[1:]
    results = run(Path(twin_path), set(claim_tags))
    sys.stdout.flush()
    print("PLANTED " + json.dumps(results))
