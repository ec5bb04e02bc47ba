"""Give every figure of a notebook its alt text: each image output of a code cell gets the
cell's one-sentence ``caption`` (cell metadata) as ``metadata["image/png"]["alt"]``, the field
IPython's ``Image(alt=...)`` writes and viewers read (nbconvert's classic template, so nbviewer;
JupyterLab through jupyter/labextension). A figure whose cell has no caption is an error: say
what it shows. `make regen` runs it after executing the notebooks, whose figures are new then.

Usage: python scripts/figure_alt.py NOTEBOOK.ipynb...   (rewrites each notebook that changes)
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

IMAGES = ("image/png", "image/jpeg", "image/svg+xml")


def add_alt_text(nb: nbformat.NotebookNode) -> list[str]:
    """Put each code cell's caption on its image outputs, in place; the problems found (a
    figure without a caption), one line each."""
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            for mime in IMAGES:
                if mime not in output.get("data", {}):
                    continue
                caption = cell.metadata.get("caption")
                if not caption:
                    problems.append(f"cell {index} ({cell.get('id', '?')}): a figure without a caption "
                                    "in its cell metadata")
                    continue
                output.setdefault("metadata", nbformat.NotebookNode()).setdefault(mime, nbformat.NotebookNode())
                output.metadata[mime]["alt"] = caption
    return problems


def main(paths: list[str]) -> int:
    failed = False
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        for problem in add_alt_text(nb):
            print(f"{path}: {problem}", file=sys.stderr)
            failed = True
        if nbformat.writes(nb) != before:
            nbformat.write(nb, path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
