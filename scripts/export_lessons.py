"""Lesson code has one source: the notebook cell. ``make export`` copies it into the package.

A code cell whose first line is

    # @save lecture_utils/optim.py

is lesson code (the d2l ``#@save`` idea): students read, edit and re-run it in the
notebook, and the package holds an exported copy for later notebooks and the trainer.
In the target module the copy sits between two marker lines, one region per notebook:

    # >>> lesson code from py_src/07_optimizers.py: edit it there, then `make export`
    ...the marked cells, in notebook order, without their `# @save` line...
    # <<< lesson code from py_src/07_optimizers.py

    python scripts/export_lessons.py           # rewrite the regions from the notebooks
    python scripts/export_lessons.py --check   # exit 1 and show a diff if any region is stale

tests/test_lessons.py runs the check, so a lesson cell and its package copy cannot drift.
The ``.py`` twins are read (they are what reviewers see and what ``make regen`` keeps in
step with the ``.ipynb``).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAVE = re.compile(r"^# @save (lecture_utils/[\w/]+\.py)[ \t]*$")
CELL = re.compile(r"^# %%(.*)$")
BEGIN = "# >>> lesson code from {nb}: edit it there, then `make export`"
END = "# <<< lesson code from {nb}"


def lesson_cells(notebook: Path) -> list[tuple[str, str]]:
    """``(target module, code)`` for every ``# @save`` cell of a percent-format ``.py`` twin."""
    cells, current = [], None
    for line in notebook.read_text(encoding="utf-8").splitlines() + ["# %%"]:
        header = CELL.match(line)
        if header:
            if current is not None and current[1]:
                match = SAVE.match(current[1][0])
                if match:
                    cells.append((match.group(1), "\n".join(current[1][1:]).strip("\n")))
            current = (header.group(1), []) if "[markdown]" not in header.group(1) else None
        elif current is not None:
            current[1].append(line)
    return cells


def exports(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """``{module path: {notebook path: region text}}`` over every notebook under ``root``."""
    result: dict[str, dict[str, str]] = {}
    for notebook in sorted((root / "py_src").glob("[0-9][0-9]_*.py")):
        nb = notebook.relative_to(root).as_posix()
        for module, code in lesson_cells(notebook):
            regions = result.setdefault(module, {})
            regions[nb] = regions[nb] + "\n\n\n" + code if nb in regions else code
    return result


def _region(nb: str, code: str) -> str:
    return f"{BEGIN.format(nb=nb)}\n{code}\n{END.format(nb=nb)}"


def _pattern(nb: str) -> re.Pattern:
    return re.compile(re.escape(BEGIN.format(nb=nb)) + r"\n.*?\n?" + re.escape(END.format(nb=nb)),
                      re.DOTALL)


def render(module_text: str, regions: dict[str, str]) -> str:
    """``module_text`` with each notebook's region replaced (or appended if it has none yet)."""
    for nb, code in regions.items():
        pattern = _pattern(nb)
        if pattern.search(module_text):
            module_text = pattern.sub(lambda _m, nb=nb, code=code: _region(nb, code), module_text)
        else:
            module_text = module_text.rstrip("\n") + "\n\n\n" + _region(nb, code) + "\n"
    return module_text


def orphans(module_text: str, notebooks: set[str]) -> list[str]:
    """Notebooks named by a region in ``module_text`` that no longer export to it."""
    named = re.findall(r"^# >>> lesson code from (\S+?):", module_text, re.MULTILINE)
    return [nb for nb in named if nb not in notebooks]


def stale(root: Path = ROOT) -> list[str]:
    """A unified diff per module whose lesson regions differ from the notebooks (empty: in sync)."""
    problems = []
    wanted = exports(root)
    modules = set(wanted) | {p.relative_to(root).as_posix()
                             for p in (root / "lecture_utils").rglob("*.py")
                             if "# >>> lesson code from" in p.read_text(encoding="utf-8")}
    for module in sorted(modules):
        path = root / module
        if not path.exists():
            problems.append(f"{module}: named by a `# @save` cell but does not exist")
            continue
        text = path.read_text(encoding="utf-8")
        regions = wanted.get(module, {})
        for nb in orphans(text, set(regions)):
            problems.append(f"{module}: has a region from {nb}, which exports nothing to it")
        new = render(text, regions)
        if new != text:
            diff = difflib.unified_diff(text.splitlines(), new.splitlines(), f"{module} (package)",
                                        f"{module} (from the notebooks)", lineterm="", n=1)
            problems.append("\n".join(diff))
    return problems


def export(root: Path = ROOT) -> list[str]:
    """Rewrite every module's regions from the notebooks; return the modules changed."""
    changed = []
    for module, regions in sorted(exports(root).items()):
        path = root / module
        if not path.exists():
            raise SystemExit(f"export: {module} (named by a `# @save` cell) does not exist; create it")
        text = path.read_text(encoding="utf-8")
        new = render(text, regions)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(module)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale regions, change nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        problems = stale(args.root)
        for problem in problems:
            print(problem)
        if problems:
            print("lesson cells and package differ: run `make export` (the notebook is the source)")
        return 1 if problems else 0
    for module in export(args.root):
        print(f"exported lesson code into {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
