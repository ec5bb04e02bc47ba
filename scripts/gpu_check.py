"""The GPU lane: run every notebook's .py twin, the benchmarks and a memory check on CUDA.

    python3 scripts/gpu_check.py [--out docs/gpu]      (or: make gpu-check)

Needs only a python3 with torch (>= 2.4), numpy, einops, matplotlib, jaxtyping and tqdm:
no Jupyter, no pip. Each notebook runs cell by cell from its jupytext twin, in one
namespace, with MPLBACKEND=Agg: a cell tagged ``raises-exception`` may raise; a cell
that needs a package this python lacks (beartype, ipywidgets, tokenizers), or a name
such a cell would have defined, is reported as skipped; any other error fails the run.
A cell that fails does not stop the notebook: the names it bound are dropped, and a later
cell that uses one of them is reported as skipped (a dependency failed).

Every ``if cuda_only(device, "<what>"):`` block is reported by its ``what``: passed,
failed (with the error and the failing statement) or skipped (and why), with the
``assert``/``check`` statements it contains, so a reader sees what was checked.
Writes ``report.json`` (every ``[measured]``/``[per-device]`` line, benchmark output,
memory check) and a short ``README.md`` into --out, and fills the "Measured here" column
of docs/gpu/reference.md (--reference) beside the published figures.
Without CUDA it says so in one line and exits 1.
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
CHECK_CALLS = {"check", "check_raises"}
NOT_YET = "not yet run on a GPU"
# reference.md row key -> (notebook, cuda_only "what", regex of the measured line's label).
# The value printed after "<label>: " goes into the row's "Measured here" cell.
MEASURED_ROWS = {
    "bf16-gemm-8192": ("03_flops_and_mfu", "the MFU of an 8192^3 bf16 matmul", re.escape("8192^3 bf16 matmul")),
    "sdpa-backward-forward": ("03_flops_and_mfu", "counting fused (sdpa) attention on CUDA",
                              re.escape("sdpa on CUDA: backward / forward")),
    "alloc-bf16-ffn": ("02_dtypes_and_memory", "allocating the bf16 FFN matrix for real",
                       re.escape("memory_allocated() grew by")),
    "adamw-step-peak": ("04_autograd", "the peak memory of an AdamW step, against the prediction",
                        re.escape("measured / predicted")),
    "reserved-vs-allocated": ("04_autograd", "reserved versus allocated memory of the caching allocator",
                              re.escape("after del: allocated / reserved")),
    "module-to-device": ("05_parameters_and_init", "moving a module to the GPU with .to(device)",
                         re.escape("same Parameter object after the move")),
    "h2d-pinned": ("06_data_loading", "timing pageable versus pinned host-to-device copies", r"\s*pinned -> GPU, [^:]*"),
    "h2d-pageable": ("06_data_loading", "timing pageable versus pinned host-to-device copies",
                     r"\s*pageable -> GPU, [^:]*"),
    "non-blocking-pinned": ("06_data_loading", "timing when a non_blocking copy returns",
                            r"non_blocking from\s+pinned: the call returns after"),
    "copy-compute-overlap": ("06_data_loading", "overlapping a copy with compute on a second stream",
                             re.escape("copy on a second stream")),
    "adamw-foreach-extra": ("07_optimizers", "the peak memory of torch.optim.AdamW's step(): for-loop, foreach, fused",
                            re.escape("AdamW foreach: extra memory during step()")),
    "adamw-fused-extra": ("07_optimizers", "the peak memory of torch.optim.AdamW's step(): for-loop, foreach, fused",
                          re.escape("AdamW fused: extra memory during step()")),
    "bincount-deterministic": ("08_training_loop",
                               "a CUDA kernel that deterministic mode refuses (bincount with weights)",
                               re.escape("CUDA bincount with weights, deterministic mode")),
    "autocast-dtypes": ("08_training_loop", "the CUDA autocast dtype list", re.escape("CUDA autocast dtypes")),
    "gpt2-small-mfu": ("08_training_loop", "GPT-2 small in bf16 with fused AdamW",
                       re.escape("gpu config: MFU (median of steps 5-10)")),
}


def line_prefixes() -> tuple[str, ...]:
    """The prefixes of machine-dependent lines (lines inside cuda_only blocks print PER_DEVICE_PREFIX).

    main() has put the checkout on sys.path.
    """
    from lecture_utils.checks import MEASURED_PREFIX, PER_DEVICE_PREFIX

    return (MEASURED_PREFIX, PER_DEVICE_PREFIX)


def cuda_blocks(source: str) -> list[dict]:
    """The ``if cuda_only(device, "<what>"):`` blocks of a cell, in source order, with their checks."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    blocks = []
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if not (isinstance(test, ast.Call) and len(test.args) >= 2
                and getattr(test.func, "id", getattr(test.func, "attr", None)) == "cuda_only"
                and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str)):
            continue
        checks = [n for n in ast.walk(node) if isinstance(n, ast.Assert)
                  or (isinstance(n, ast.Call) and getattr(n.func, "id", None) in CHECK_CALLS)]
        checks.sort(key=lambda n: (n.lineno, n.col_offset))
        blocks.append({"what": test.args[1].value, "first": node.lineno, "last": node.end_lineno,
                       "checks": [{"line": n.lineno, "end": n.end_lineno,
                                   "source": ast.get_source_segment(source, n)} for n in checks]})
    return sorted(blocks, key=lambda b: b["first"])


def loaded_names(source: str) -> set[str]:
    """Names a cell reads without binding them itself (what it needs from earlier cells)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - defined_names(source)


def error_lines(err: BaseException, filename: str) -> list[int]:
    """Line numbers of the cell's frames in the traceback, innermost first."""
    frames = traceback.extract_tb(err.__traceback__)
    return [f.lineno for f in reversed(frames) if f.filename == filename]


def block_results(blocks: list[dict], entered: dict, cell: int, lines: list[str],
                  err: BaseException | None = None, err_lines: list[int] = (), skipped: str = "") -> list[dict]:
    """passed / failed / skipped for each cuda_only block of one cell, from how the cell ended."""
    failing = next((b for line in err_lines for b in blocks if b["first"] <= line <= b["last"]), None)
    results = []
    for b in blocks:
        row = {"what": b["what"], "cell": cell, "checks": [c["source"] for c in b["checks"]],
               "measured": lines}
        if skipped:
            row.update(status="skipped", reason=skipped)
        elif b is failing:
            message = "".join(traceback.format_exception_only(type(err), err)).strip()
            line = next(x for x in err_lines if b["first"] <= x <= b["last"])
            at = next((c["source"] for c in b["checks"] if c["line"] <= line <= c["end"]), None)
            row.update(status="failed", message=message, **({"statement": at} if at else {}))
        elif b["what"] not in entered:
            reason = f"not reached: the cell failed first ({type(err).__name__})" if err else "not reached"
            row.update(status="skipped", reason=reason)
        elif not entered[b["what"]]:
            row.update(status="skipped", reason="cuda_only() returned False (not on a CUDA device)")
        else:
            row.update(status="passed")
        results.append(row)
    return results


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
    """Execute one notebook twin cell by cell; return its status, cuda_only blocks and measured lines."""
    # main() has put the checkout on sys.path.
    import matplotlib.pyplot as plt

    import lecture_utils
    import lecture_utils.device
    from lecture_utils.checks import CHECK_MARK

    prefixes = line_prefixes()
    cells = parse_cells(py)
    namespace = {"__name__": "__notebook__"}
    unavailable: dict[str, str] = {}  # name -> where it came from ("a skipped cell", "failed cell 3")
    result = {"cells": len(cells), "ran": 0, "expected_errors": 0, "skipped": [], "failed": [],
              "blocks": [], "status": "ok"}
    output = io.StringIO()
    # Record what every cuda_only() call returned, by its `what`.
    entered: dict[str, bool] = {}
    original = lecture_utils.device.cuda_only

    def recording_cuda_only(device, what):
        entered[what] = original(device, what)
        return entered[what]

    patched = [m for m in (lecture_utils, lecture_utils.device) if getattr(m, "cuda_only", None) is original]
    for module in patched:
        module.cuda_only = recording_cuda_only
    cwd = Path.cwd()
    os.chdir(ROOT / "notebooks")  # as Jupyter does: the notebook's folder (the twin lives in py_src/)
    start = time.perf_counter()
    try:
        for i, cell in enumerate(cells, 1):
            source, filename = cell["source"], f"{py.name}:cell{i}"
            blocks = cuda_blocks(source)
            before = output.tell()
            needs = sorted(loaded_names(source) & unavailable.keys())
            if needs:  # a dependency was skipped or failed: do not run on half-defined state
                reason = f"uses {needs[0]} from {unavailable[needs[0]]}"
                result["skipped"].append(f"cell {i}: {reason}")
                unavailable.update(dict.fromkeys(defined_names(source), unavailable[needs[0]]))
                result["blocks"] += block_results(blocks, entered, i, [], skipped=reason)
                continue
            try:
                with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                    exec(compile(source, filename, "exec"), namespace)
                result["ran"] += 1
                for name in defined_names(source):
                    unavailable.pop(name, None)  # bound afresh
                lines = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                result["blocks"] += block_results(blocks, entered, i, lines)
            except Exception as err:
                missing = getattr(err, "name", None)
                lines = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                if "raises-exception" in cell["tags"]:
                    result["expected_errors"] += 1
                    result["blocks"] += block_results(blocks, entered, i, lines)
                    continue
                if isinstance(err, ModuleNotFoundError) and missing and missing.split(".")[0] in OPTIONAL:
                    reason = f"needs {missing.split('.')[0]}"
                    origin = "a skipped cell"
                elif isinstance(err, NameError) and missing in unavailable:
                    reason = f"uses {missing} from {unavailable[missing]}"
                    origin = unavailable[missing]
                else:
                    reason, origin = "", f"failed cell {i}"
                if reason:
                    result["skipped"].append(f"cell {i}: {reason}")
                    result["blocks"] += block_results(blocks, entered, i, lines, skipped=reason)
                else:
                    error = f"cell {i}: " + "".join(traceback.format_exception_only(type(err), err)).strip()
                    result["status"] = "failed"
                    result.setdefault("error", error)  # the first failure; later ones are in "failed"
                    result["failed"].append(error)
                    output.write(traceback.format_exc())
                    result["blocks"] += block_results(blocks, entered, i, lines, err=err,
                                                      err_lines=error_lines(err, filename))
                # Later cells that use what this cell bound are skipped; drop the names so a failed
                # block's tensors do not sit in GPU memory under the blocks that follow.
                for name in defined_names(source):
                    unavailable[name] = origin
                    namespace.pop(name, None)
                del err
            finally:
                plt.close("all")
    finally:
        os.chdir(cwd)
        for module in patched:
            module.cuda_only = original
    result["seconds"] = round(time.perf_counter() - start, 1)
    text = output.getvalue()
    (log_dir / f"{py.stem}.log").write_text(text, encoding="utf-8")
    result["checks"] = sum(line.startswith(CHECK_MARK) for line in text.splitlines())
    result["measured"] = [line for line in text.splitlines() if line.startswith(prefixes)]
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
    lines += ["", "## GPU-only blocks (`if cuda_only(device, ...)`)", "",
              "Each block by its name: passed, failed (with the error) or skipped (and why); "
              "what it checks; what it measured.", ""]
    for name, r in report["notebooks"].items():
        for b in r.get("blocks", []):
            detail = b.get("message") or b.get("reason") or ""
            lines.append(f"- **{b['status']}**: {name}, cell {b['cell']}: {b['what']}"
                         + (f" ({detail})" if detail else ""))
            if b.get("statement"):
                lines.append(f"  - failing statement: `{b['statement']}`")
            checks = b["checks"] or ["(no assert: it only measures)"]
            lines += [f"  - checks: `{c}`" if not c.startswith("(") else f"  - checks: {c}" for c in checks]
            lines += [f"  - `{m}`" for m in b["measured"]]
    lines += ["", "Published reference figures beside these measurements: [reference.md](reference.md).",
              "", "## Benchmarks", ""]
    for name, r in report["benchmarks"].items():
        lines += [f"### {name} (exit {r['returncode']}, {r['seconds']} s)", "", "```", *r["output"], "```", ""]
    m = report["memory"]
    lines += ["## Predicted versus measured memory", "",
              f"{m.get('model', '')}: predicted peak {m.get('predicted_peak_bytes', 0) / 1e6:,.1f} MB, "
              f"measured `max_memory_allocated` {m.get('measured_peak_bytes', 0) / 1e6:,.1f} MB "
              f"(ratio {m.get('ratio')}).", "",
              "Every `[measured]` line of every notebook is in `report.json`."]
    return "\n".join(lines) + "\n"


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def fill_reference(text: str, report: dict) -> str:
    """reference.md with its "Measured here" column filled from this run; every other cell kept as is.

    Rows are found by their first cell (the key in MEASURED_ROWS); a row whose block did not
    pass or fail, or did not print its line, says so instead of a number.
    """
    stamp = f"{report['gpu']}, torch {report['torch']}, CUDA {report['cuda']}, {report['date']}"
    blocks = {(nb, b["what"]): b for nb, r in report["notebooks"].items() for b in r.get("blocks", [])}
    out, column = [], None
    for line in text.splitlines():
        if line.startswith("**Measured here:**"):
            line = f"**Measured here:** {stamp}, by `make gpu-check` (details: [README.md](README.md))."
        elif line.startswith("|"):
            cells = _cells(line)
            if "Measured here" in cells:
                column = cells.index("Measured here")
            elif column is not None and cells[0].strip("`") in MEASURED_ROWS and len(cells) > column:
                notebook, what, label = MEASURED_ROWS[cells[0].strip("`")]
                block = blocks.get((notebook, what))
                if block is None:
                    value = "not measured: the block did not run"
                elif block["status"] == "skipped":
                    value = f"not measured: skipped ({block['reason']})"
                else:
                    prefix = "|".join(map(re.escape, line_prefixes()))
                    pattern = re.compile(rf"^(?:{prefix}) {label}: (?P<value>.*)$")
                    found = next((m["value"] for m in map(pattern.match, block["measured"]) if m), None)
                    value = found.strip() if found else "not measured: no such line"
                    if block["status"] == "failed":
                        value += " (its block failed)"
                cells[column] = f"{value} ({report['gpu']})".replace("|", "/")
                line = "| " + " | ".join(cells) + " |"
        else:
            column = None  # a table ends at the first line that is not a row
        out.append(line)
    return "\n".join(out) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write a sibling temporary file, then os.replace it: readers never see half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gpu")
    parser.add_argument("--notebooks", nargs="*", default=None, help="notebook .py twins (default: all)")
    parser.add_argument("--skip-benchmarks", action="store_true")
    parser.add_argument("--reference", type=Path, default=ROOT / "docs" / "gpu" / "reference.md",
                        help="published figures whose 'Measured here' column this run fills")
    args = parser.parse_args(argv)
    if not args.reference.is_file():
        print(f"gpu-check: --reference {args.reference} is not a file; give docs/gpu/reference.md")
        return 2
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
        for b in result["blocks"]:
            print(f"    {b['status']:<7} {b['what']}"
                  + (f": {b.get('message') or b.get('reason')}" if b["status"] != "passed" else ""), flush=True)
    report["memory"] = memory_check()
    print(f"memory: predicted {report['memory']['predicted_peak_bytes']:,} B, measured "
          f"{report['memory']['measured_peak_bytes']:,} B (ratio {report['memory']['ratio']})", flush=True)
    if not args.skip_benchmarks:
        report["benchmarks"] = run_benchmarks()
        for name, r in report["benchmarks"].items():
            print(f"{name}: exit {r['returncode']}: {r['output'][-1] if r['output'] else ''}", flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "README.md").write_text(summary_markdown(report))
    write_atomically(args.reference, fill_reference(args.reference.read_text(encoding="utf-8"), report))
    failed = [n for n, r in report["notebooks"].items() if r["status"] != "ok"]
    failed += [f"{n}: {b['what']}" for n, r in report["notebooks"].items()
               for b in r["blocks"] if b["status"] == "failed"]
    failed += [n for n, r in report["benchmarks"].items() if r["returncode"] != 0]
    if not report["memory"]["within_5_percent"]:
        failed.append("memory")
    print(f"gpu-check: {'FAILED: ' + ', '.join(failed) if failed else 'all passed'}; report in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
