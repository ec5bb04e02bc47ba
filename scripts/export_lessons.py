"""Lesson code has one source: the notebook cell. ``make export`` copies it into the package.

A code cell whose first line is ``# @save lecture_utils/<module>.py`` is lesson code (the
d2l ``#@save`` idea; CONTRIBUTING.md, "Lesson code"). Its copy sits in that module between
two marker lines, one region per notebook:

    # >>> lesson code from py_src/07_optimizers.py: edit it there, then `make export`
    ...the marked cells, in notebook order, without their `# @save` line...
    # <<< lesson code from py_src/07_optimizers.py

    python scripts/export_lessons.py           # rewrite the regions from the notebooks
    python scripts/export_lessons.py --check   # exit 1 and show a diff if any region is stale

tests/test_lessons.py runs the check. The ``.py`` twins are read: they are what reviewers
see, and ``make regen`` keeps them in step with the ``.ipynb``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
SAVE = re.compile(r"# @save (lecture_utils/[\w/]+\.py)[ \t]*")
BEGIN = "# >>> lesson code from {nb}: edit it there, then `make export`"
END = "# <<< lesson code from {nb}"


def exports(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """``{module path: {notebook path: region text}}`` over the notebooks ``root/notebooks.txt`` names."""
    result: dict[str, dict[str, str]] = {}
    for name in (root / "notebooks.txt").read_text(encoding="utf-8").split():  # the eight, named exactly
        twin = root / "py_src" / f"{name}.py"  # (a Lab copy, py_src/08_...-Copy1.py, is not one of them)
        nb = twin.relative_to(root).as_posix()
        for cell in jupytext.read(twin).cells:
            first, _, code = cell.source.partition("\n")
            save = SAVE.fullmatch(first)
            if cell.cell_type == "code" and save:
                refuse_broken(twin, nb, cell.source)
                code = code.strip("\n")
                regions = result.setdefault(save.group(1), {})
                regions[nb] = regions[nb] + "\n\n\n" + code if nb in regions else code
    return result


def refuse_broken(twin: Path, nb: str, source: str) -> None:
    """A lesson cell that does not compile would break every import of its module (the trainer, the
    notebooks, make test): one line naming the notebook and the line, and nothing is exported."""
    try:
        compile(source, nb, "exec")
    except (SyntaxError, ValueError) as err:  # ValueError: a NUL byte
        text, line = twin.read_text(encoding="utf-8"), getattr(err, "lineno", None) or 1
        where = (f"line {text[:text.index(source)].count(chr(10)) + line}" if source in text  # the twin's line
                 else f"line {line} of its cell {source.splitlines()[0]!r}")
        sys.exit(f"export: {nb}, {where}: a `# @save` lesson cell does not compile ({getattr(err, 'msg', err)}); "
                 "nothing was exported")


def defined(code: str) -> list[str]:
    """The names a lesson region defines at its top level (functions, classes, constants)."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return []
    names = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return names + [t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]


def two_sources(wanted: dict[str, dict[str, str]]) -> list[str]:
    """One line per name that two cells export into one module: the second would silently replace
    the first in the package (a Lab copy of a notebook, or a lesson written twice)."""
    problems = []
    for module, regions in sorted(wanted.items()):
        homes: dict[str, list[str]] = {}
        for nb, code in regions.items():
            for name in defined(code):
                homes.setdefault(name, []).append(nb)
        problems += [f"{module}: {name} is exported by {' and '.join(nbs)}: a lesson has one source; keep it in "
                     "one notebook" for name, nbs in sorted(homes.items()) if len(nbs) > 1]
    return problems


def render(text: str, regions: dict[str, str]) -> str:
    """``text`` with each notebook's region replaced (or appended if it has none yet)."""
    for nb, code in regions.items():
        region = f"{BEGIN.format(nb=nb)}\n{code}\n{END.format(nb=nb)}"
        pattern = re.escape(BEGIN.format(nb=nb)) + r"\n.*?\n?" + re.escape(END.format(nb=nb))
        text, found = re.subn(pattern, lambda _match, region=region: region, text, flags=re.S)
        if not found:
            text = text.rstrip("\n") + "\n\n\n" + region + "\n"
    return text


def stale(root: Path = ROOT) -> list[str]:
    """A problem (a unified diff, or a missing module or notebook) per stale module; [] if in sync."""
    wanted = exports(root)
    problems = two_sources(wanted)
    marked = {p.relative_to(root).as_posix() for p in (root / "lecture_utils").rglob("*.py")
              if "# >>> lesson code from" in p.read_text(encoding="utf-8")}
    for module in sorted(set(wanted) | marked):
        if not (root / module).exists():
            problems.append(f"{module}: named by a `# @save` cell but does not exist")
            continue
        text, regions = (root / module).read_text(encoding="utf-8"), wanted.get(module, {})
        problems += [f"{module}: has a region from {nb}, which exports nothing to it"
                     for nb in re.findall(r"^# >>> lesson code from (\S+?):", text, re.M)
                     if nb not in regions]
        new = render(text, regions)
        if new != text:
            problems.append("\n".join(difflib.unified_diff(
                text.splitlines(), new.splitlines(), f"{module} (package)",
                f"{module} (from the notebooks)", lineterm="", n=1)))
    return problems


def export(root: Path = ROOT) -> list[str]:
    """Rewrite every module's regions from the notebooks; return the modules changed."""
    changed, wanted = [], exports(root)
    doubled = two_sources(wanted)
    if doubled:  # refused before any module is written
        sys.exit(f"export: {doubled[0]}; nothing was exported")
    for module, regions in sorted(wanted.items()):
        if not (root / module).exists():
            sys.exit(f"export: {module} (named by a `# @save` cell) does not exist; create it")
        text = (root / module).read_text(encoding="utf-8")
        new = render(text, regions)
        if new != text:
            (root / module).write_text(new, encoding="utf-8")
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
