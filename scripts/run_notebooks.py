"""Execute notebooks headless, write executed HTML, print one row per notebook.

Usage: python scripts/run_notebooks.py --out build notebooks/*.ipynb   (`make run`)
The notebooks in notebooks/ are not modified.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).parent))
from nbtools import count_checks, execute  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    print(f"{'notebook':<32} {'cells':>5} {'checks':>6} {'seconds':>8}  html")
    failed = 0
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        cells = sum(c.cell_type == "code" for c in nb.cells)
        try:
            seconds = execute(nb, path.parent)
        except Exception as err:  # report every notebook, then fail
            failed += 1
            print(f"{path.name:<32} {cells:>5} FAILED: {type(err).__name__}: {str(err)[-300:]}")
            continue
        html, _ = exporter.from_notebook_node(nb)
        target = args.out / path.with_suffix(".html").name
        target.write_text(html, encoding="utf-8")
        print(f"{path.name:<32} {cells:>5} {count_checks(nb):>6} {seconds:>8.1f}  {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
