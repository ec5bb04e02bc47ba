"""The benchmarks' targets: the "Benchmark targets" table of docs/gpu/reference.md, with their sources.

A benchmark prints its figure beside its target with "met" or "missed", and exits nonzero
only on an error or a gross regression (worse than half its target), never on a figure
inside a published range. ``report`` prints that line and says whether it was gross.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "gpu" / "reference.md"
HEADING = "## Benchmark targets"
_COMPARE = {">=": operator.ge, "<=": operator.le}


@dataclass(frozen=True)
class Target:
    key: str
    benchmark: str
    figure: str
    op: str  # ">=" or "<="
    value: float
    applies: tuple[str, ...]  # hardware-table names, or ("any",)
    source: str

    def applies_to(self, machine: str) -> bool:
        return "any" in self.applies or machine in self.applies

    def met(self, figure: float) -> bool:
        return _COMPARE[self.op](figure, self.value)

    def gross(self, figure: float) -> bool:
        """Worse than half the target: below half a ">=" target, above twice a "<=" one."""
        return figure < self.value / 2 if self.op == ">=" else figure > self.value * 2


def load(path: Path = REFERENCE) -> dict[str, Target]:
    """The rows of the targets table, by key. A malformed row is an error naming it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADING)
    targets = {}
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `") else None
        if cells is None:
            continue
        key, benchmark, figure, target, applies, source = cells
        match = re.fullmatch(r"(>=|<=) ([\d.]+)", target)
        if not match:
            raise ValueError(f"{path}: target {key} is {target!r}; write '>= N' or '<= N'")
        targets[key.strip("`")] = Target(key.strip("`"), benchmark.strip("`"), figure, match[1], float(match[2]),
                                         tuple(a.strip() for a in applies.split(",")), source)
    return targets


def report(key: str, figure: float, machine: str, detail: str = "") -> bool:
    """Print ``target KEY: FIGURE DETAIL; target OP VALUE: met|missed``; return False on a gross
    regression (the benchmark then exits 1). ``machine`` is a hardware-table name or ``cpu``."""
    target = load()[key]
    shown = f"{figure:#.3g}{detail}"
    if not target.applies_to(machine):
        print(f"target {key}: {shown}; no target on {machine} (it applies to {', '.join(target.applies)})")
        return True
    verdict = "met" if target.met(figure) else "missed"
    if target.gross(figure):
        verdict = "missed: a gross regression (worse than half the target)"
    print(f"target {key}: {shown}; target {target.op} {target.value:g} (docs/gpu/reference.md): {verdict}")
    return not target.gross(figure)


def machine(device) -> str:
    """What a target's "applies to" is matched against: the hardware-table name of a known GPU,
    the name the driver gives an unknown one, else the device type (cpu, mps)."""
    import torch

    from lecture_utils.hardware import detect

    if device.type != "cuda":
        return device.type
    known = detect(device)
    return known.name if known else torch.cuda.get_device_name(device)
