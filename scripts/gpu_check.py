"""The GPU lane: run every notebook's .py twin, the benchmarks and a memory check on CUDA.

    python3 scripts/gpu_check.py [--out docs/gpu]      (or: make gpu-check)

Needs only a python3 with torch (>= 2.4), numpy, einops, matplotlib, jaxtyping and tqdm:
no Jupyter, no pip. Each notebook runs cell by cell from its jupytext twin, in one
namespace, with MPLBACKEND=Agg: a cell tagged ``raises-exception`` may raise; a cell
that needs a package this python lacks (beartype, ipywidgets, tokenizers), or a name
such a cell would have defined, is reported as skipped; any other error fails the run.
Writes ``report.json`` (every ``[measured]`` line, benchmark output, memory check) and
a short ``README.md`` into --out. Without CUDA it says so in one line and exits 1.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = {"beartype", "ipywidgets", "tokenizers", "IPython"}
CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?P<meta>.*)$")


def parse_cells(path: Path) -> list[dict]:
    """Code cells of a jupytext percent file: source and tags."""
    cells, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        match = CELL.match(line.rstrip("\n"))
        if match:
            if current and not current["markdown"]:
                cells.append(current)
            tags = re.search(r"tags=(\[[^\]]*\])", match["meta"])
            current = {"markdown": bool(match["markdown"]), "source": "",
                       "tags": json.loads(tags.group(1)) if tags else []}
        elif current is not None:
            current["source"] += line
    if current and not current["markdown"]:
        cells.append(current)
    return cells


def defined_names(source: str) -> set[str]:
    """Names a cell binds at top level (assignments, defs, imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def run_notebook(py: Path, log_dir: Path) -> dict:
    """Execute one notebook twin cell by cell; return its status and measured lines."""
    # main() has put the checkout on sys.path.
    import matplotlib.pyplot as plt

    from lecture_utils.checks import CHECK_MARK, MEASURED_PREFIX

    cells = parse_cells(py)
    namespace = {"__name__": "__notebook__"}
    unavailable: set[str] = set()
    result = {"cells": len(cells), "ran": 0, "expected_errors": 0, "skipped": [], "status": "ok"}
    output = io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT / "notebooks")  # as Jupyter does: the notebook's folder (the twin lives in py_src/)
    start = time.perf_counter()
    try:
        for i, cell in enumerate(cells, 1):
            try:
                with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                    exec(compile(cell["source"], f"{py.name}:cell{i}", "exec"), namespace)
                result["ran"] += 1
            except Exception as err:
                missing = getattr(err, "name", None)
                if "raises-exception" in cell["tags"]:
                    result["expected_errors"] += 1
                elif isinstance(err, ModuleNotFoundError) and missing and missing.split(".")[0] in OPTIONAL:
                    result["skipped"].append(f"cell {i}: needs {missing.split('.')[0]}")
                    unavailable |= defined_names(cell["source"])
                elif isinstance(err, NameError) and missing in unavailable:
                    result["skipped"].append(f"cell {i}: uses {missing} from a skipped cell")
                    unavailable |= defined_names(cell["source"])
                else:
                    result["status"] = "failed"
                    result["error"] = f"cell {i}: " + "".join(
                        traceback.format_exception_only(type(err), err)).strip()
                    output.write(traceback.format_exc())
                    break
            finally:
                plt.close("all")
    finally:
        os.chdir(cwd)
    result["seconds"] = round(time.perf_counter() - start, 1)
    text = output.getvalue()
    (log_dir / f"{py.stem}.log").write_text(text, encoding="utf-8")
    result["checks"] = sum(line.startswith(CHECK_MARK) for line in text.splitlines())
    result["measured"] = [line for line in text.splitlines() if line.startswith(MEASURED_PREFIX)]
    return result


def run_benchmarks() -> dict:
    results = {}
    for bench in sorted((ROOT / "benchmarks").glob("*.py")):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(bench)], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1800)
        results[bench.name] = {"returncode": proc.returncode, "seconds": round(time.perf_counter() - start, 1),
                               "output": (proc.stdout + proc.stderr).strip().splitlines()[-20:]}
    return results


def memory_check() -> dict:
    """Predicted versus measured peak of a training step (notebook 04's toy MLP)."""
    import torch

    from lecture_utils.memory import mlp_peak_bytes
    from lecture_utils.models import Cruncher

    layers, width, batch = 8, 2048, 8192
    torch.cuda.empty_cache()
    model = Cruncher(width, layers, device="cuda")
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randn(batch, width, device="cuda")
    for step in range(2):
        if step == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        optimizer.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        optimizer.step()
    torch.cuda.synchronize()
    measured = torch.cuda.max_memory_allocated()
    predicted = mlp_peak_bytes(n_layers=layers, width=width, batch=batch, optimizer="adamw")
    del model, optimizer, x
    torch.cuda.empty_cache()
    return {"model": f"Cruncher(width={width}, n_layers={layers}), batch {batch}, AdamW, fp32",
            "predicted_peak_bytes": predicted, "measured_peak_bytes": measured,
            "ratio": round(measured / predicted, 4), "within_5_percent": abs(measured / predicted - 1) < 0.05}


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def summary_markdown(report: dict) -> str:
    lines = [f"# GPU lane report: {report['gpu']}", "",
             f"- date: {report['date']}", f"- driver: {report['driver']}, CUDA {report['cuda']}",
             f"- torch {report['torch']}, Python {report['python']}", "", "## Notebooks (.py twins)", "",
             "| notebook | status | cells run | checks | skipped | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for name, r in report["notebooks"].items():
        lines.append(f"| {name} | {r['status']} | {r['ran']}/{r['cells']} | {r['checks']} | "
                     f"{len(r['skipped'])} | {r['seconds']} |")
    lines += ["", "## Benchmarks", ""]
    for name, r in report["benchmarks"].items():
        lines += [f"### {name} (exit {r['returncode']}, {r['seconds']} s)", "", "```", *r["output"], "```", ""]
    m = report["memory"]
    lines += ["## Predicted versus measured memory", "",
              f"{m.get('model', '')}: predicted peak {m.get('predicted_peak_bytes', 0) / 1e6:,.1f} MB, "
              f"measured `max_memory_allocated` {m.get('measured_peak_bytes', 0) / 1e6:,.1f} MB "
              f"(ratio {m.get('ratio')}).", "",
              "Every `[measured]` line of every notebook is in `report.json`."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gpu")
    parser.add_argument("--notebooks", nargs="*", default=None, help="notebook .py twins (default: all)")
    parser.add_argument("--skip-benchmarks", action="store_true")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print(f"gpu-check: torch is not importable with {sys.executable}; nothing to check")
        return 2
    if not torch.cuda.is_available():
        print(f"gpu-check: no CUDA device on this machine (torch {torch.__version__}); the GPU lane needs one")
        return 1
    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, str(ROOT))
    args.out.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    twins = [Path(p) for p in args.notebooks] if args.notebooks else sorted((ROOT / "py_src").glob("[0-9][0-9]_*.py"))
    report = {"gpu": torch.cuda.get_device_name(), "driver": driver_version(), "cuda": torch.version.cuda,
              "torch": torch.__version__, "python": platform.python_version(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "notebooks": {}, "benchmarks": {}, "memory": {}}
    for py in twins:
        report["notebooks"][py.stem] = result = run_notebook(py.resolve(), logs)
        print(f"{py.stem:<28} {result['status']:<7} {result['ran']}/{result['cells']} cells, "
              f"{result['checks']} checks, {len(result['skipped'])} skipped, {result['seconds']} s"
              + (f"  {result['error']}" if "error" in result else ""), flush=True)
    report["memory"] = memory_check()
    print(f"memory: predicted {report['memory']['predicted_peak_bytes']:,} B, measured "
          f"{report['memory']['measured_peak_bytes']:,} B (ratio {report['memory']['ratio']})", flush=True)
    if not args.skip_benchmarks:
        report["benchmarks"] = run_benchmarks()
        for name, r in report["benchmarks"].items():
            print(f"{name}: exit {r['returncode']}: {r['output'][-1] if r['output'] else ''}", flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "README.md").write_text(summary_markdown(report))
    failed = [n for n, r in report["notebooks"].items() if r["status"] != "ok"]
    failed += [n for n, r in report["benchmarks"].items() if r["returncode"] != 0]
    if not report["memory"]["within_5_percent"]:
        failed.append("memory")
    print(f"gpu-check: {'FAILED: ' + ', '.join(failed) if failed else 'all passed'}; report in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
