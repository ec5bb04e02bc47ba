"""How long each notebook's core path takes to read, and whether it keeps the lecture's limits.

    python scripts/reading_time.py [notebooks...]        (default: every notebooks/NN_*.ipynb)

Reading minutes = markdown words / 200 + non-blank, non-comment code lines / 10 (the course's
`lecture_02.py` scores 57, for an 80-minute lecture). The core is every cell not tagged
``deeper``; its ✓ lines are counted in the stored outputs. The limits are the constants below
(and every claim S1-S39 tagged ``claim-Sn`` on a core cell); exit 1 when one is broken.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lecture_utils.checks import CHECK_MARK  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MAX_MINUTES, MAX_TOTAL, MAX_TICKS, MAX_ALL = 18, 120, 25, 490
CLAIMS = [f"claim-S{i}" for i in range(1, 40)]
WORD = re.compile(r"\w+")


@dataclass
class Shape:
    name: str
    core_minutes: float
    all_minutes: float
    ticks: int
    deeper_cells: int
    claims: set[str]


def minutes(cell) -> float:
    """Reading minutes of one cell: words / 200 for markdown, code lines / 10 for code."""
    if cell.cell_type == "markdown":
        return len(WORD.findall(cell.source)) / 200
    if cell.cell_type == "code":
        lines = [line.strip() for line in cell.source.splitlines()]
        return sum(1 for line in lines if line and not line.startswith("#")) / 10
    return 0.0


def ticks(cell) -> int:
    """The number of check lines in a code cell's stored outputs."""
    text = ""
    for out in cell.get("outputs", []):
        value = out.get("text", out.get("data", {}).get("text/plain", ""))
        text += "".join(value) if isinstance(value, list) else value
    return text.count(CHECK_MARK)


def shape(path: Path) -> Shape:
    nb = nbformat.read(path, as_version=4)
    core = [c for c in nb.cells if "deeper" not in c.metadata.get("tags", [])]
    return Shape(path.name, sum(map(minutes, core)), sum(map(minutes, nb.cells)), sum(map(ticks, core)),
                 len(nb.cells) - len(core),
                 {t for c in core for t in c.metadata.get("tags", []) if t.startswith("claim-S")})


def problems(shapes: list[Shape], *, whole_course: bool = True) -> list[str]:
    found = [f"{s.name}: core {s.core_minutes:.1f} min > {MAX_MINUTES}" for s in shapes if s.core_minutes > MAX_MINUTES]
    found += [f"{s.name}: {s.ticks} {CHECK_MARK} lines in the core > {MAX_TICKS}" for s in shapes if s.ticks > MAX_TICKS]
    if whole_course:
        total, every = sum(s.core_minutes for s in shapes), sum(s.all_minutes for s in shapes)
        if total > MAX_TOTAL:
            found.append(f"core total {total:.0f} min > {MAX_TOTAL}")
        if every > MAX_ALL:
            found.append(f"core + deeper {every:.0f} min > {MAX_ALL} (depth may move, not grow)")
        missing = [c for c in CLAIMS if not any(c in s.claims for s in shapes)]
        if missing:
            found.append(f"{len(missing)} claims not tagged on a core cell: {' '.join(missing)}")
    return found


def table(shapes: list[Shape]) -> str:
    rows = [f"| notebook | core minutes | {CHECK_MARK} lines in the core | deeper cells | all minutes |",
            "| --- | --- | --- | --- | --- |"]
    rows += [f"| {s.name} | {s.core_minutes:.1f} | {s.ticks} | {s.deeper_cells} | {s.all_minutes:.1f} |"
             for s in shapes]
    rows.append(f"| all | {sum(s.core_minutes for s in shapes):.0f} | {sum(s.ticks for s in shapes)} | "
                f"{sum(s.deeper_cells for s in shapes)} | {sum(s.all_minutes for s in shapes):.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"reading_time: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    shapes = [shape(p) for p in paths]
    print(table(shapes))
    found = problems(shapes, whole_course=not args.notebooks)
    claims = set().union(*(s.claims for s in shapes))
    print(f"{len(claims)}/39 claims tagged; " + ("limits kept" if not found else f"{len(found)} problems:"))
    for problem in found:
        print(f"  - {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
