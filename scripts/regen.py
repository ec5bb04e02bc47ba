"""Refresh golden outputs: sync each notebook pair, re-execute it, write both files.

Usage: python scripts/regen.py py_src/01_tensors_and_strides.py [...]
(`make regen` runs it on every notebook). The .py twin is the source of truth;
if the .ipynb was edited more recently (in Jupyter without jupytext), its inputs
are taken first via ``jupytext --sync``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jupytext

sys.path.insert(0, str(Path(__file__).parent))
from nbtools import count_checks, execute  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def regen(py: Path) -> None:
    # The pair (jupytext.toml): py_src/NN_topic.py <-> notebooks/NN_topic.ipynb.
    ipynb = ROOT / "notebooks" / py.with_suffix(".ipynb").name
    if ipynb.exists():
        subprocess.run([sys.executable, "-m", "jupytext", "--sync", "--quiet", str(ipynb)],
                       check=True)
    # After the sync the .ipynb holds the twin's inputs plus stable cell ids (reading the
    # .py alone would give every cell a new random id and a noisy diff).
    nb = jupytext.read(ipynb if ipynb.exists() else py)
    # Pairing lives in jupytext.toml; a copy in the metadata would only drift.
    nb.metadata.get("jupytext", {}).pop("formats", None)
    seconds = execute(nb, ipynb.parent)  # run from notebooks/, as Jupyter does
    # Widget state holds random model ids: dropping it keeps regen diffs to real changes.
    nb.metadata.pop("widgets", None)
    jupytext.write(nb, ipynb)
    jupytext.write(nb, py, fmt="py:percent")
    print(f"{ipynb}: {count_checks(nb)} checks, {seconds:.1f} s")


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths or any(p.suffix != ".py" for p in paths):
        sys.exit("usage: regen.py py_src/NN_topic.py [...]")
    for path in paths:
        regen(path)
