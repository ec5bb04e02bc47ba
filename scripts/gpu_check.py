"""The GPU check: every notebook's .py twin, a memory check and the benchmarks, on a lent GPU machine.

    python3 scripts/gpu_check.py --out DIR                  # on a CUDA machine (make gpu-check)
    python3 scripts/gpu_check.py --out DIR --device cpu     # the same stages, rehearsed on the CPU

It needs a python3 with torch, numpy, einops, matplotlib, jaxtyping and tqdm, and nothing
else: no make, no venv, no Jupyter. Each stage runs in a fresh process of its own:

- a notebook: its jupytext twin, cell by cell, in one namespace, with MPLBACKEND=Agg. A cell
  tagged ``raises-exception`` may raise; a cell that needs a package this python lacks
  (beartype, ipywidgets, tokenizers), or a name such a cell would have defined, is skipped;
  a failed cell fails the stage but not the notebook: later cells that use what it bound
  are skipped. Every ``if cuda_only(device, "<what>"):`` block is reported by its ``what``
  (passed, failed with the failing statement, or skipped and why), with its checks and
  the ``[measured]``/``[per-device]`` lines it printed;
- ``memory``: one AdamW step of notebook 04's MLP, its peak against ``mlp_peak_bytes``;
- a benchmark (``benchmarks/*.py``): its figures and targets (met / missed).

It writes four files into DIR and nothing anywhere else: ``report.json`` (everything),
``summary.md`` (for people), ``reference.md`` (a copy of docs/gpu/reference.md with its
"Measured here" column filled) and ``logs.txt`` (every stage's output). All four are
rewritten, atomically, before the first stage and after every stage, so a run stopped at
any point leaves a valid report of what finished. No stage starts after ``--deadline``
seconds; a stage still running at the deadline plus ``--grace``, or after
``--stage-limit``, is stopped and reported as timed out.

``--device cpu`` rehearses the run here: the same stages on the CPU (the GPU-only blocks
reported as skipped), with Jupyter, beartype, ipywidgets and tokenizers hidden as they are
on the lent machine, and the benchmarks in their ``--quick`` form.

Exit codes: 0 every stage ran and passed; 1 a stage failed, or no CUDA device with
``--device cuda``; 2 bad arguments; 3 the deadline left stages not started (what ran passed);
128 + N stopped by signal N (the report says where).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import importlib.abc
import io
import json
import os
import platform
import re
import runpy
import signal
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?P<meta>.*)$")
CHECK_CALLS = {"check", "check_raises"}
# What the lent GPU machine lacks: a notebook cell that imports one of these is skipped there,
# and the CPU rehearsal hides them too, so that it meets the same skips.
NOT_ON_THE_GPU_MACHINE = ("IPython", "ipykernel", "ipywidgets", "jupyter", "jupyter_client", "jupyter_core",
                          "jupyterlab", "jupytext", "matplotlib_inline", "nbclient", "nbconvert", "nbformat",
                          "nbval", "beartype", "tokenizers", "pytest")
HIDE_ENV = "GPU_CHECK_HIDE"
RESULT = "@@gpu-check-result@@ "  # a stage's last stdout line: this, then its result as JSON
FILES = ("report.json", "summary.md", "reference.md", "logs.txt")
NOT_STARTED = "not started"
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
    """The prefixes of machine-dependent lines (lines inside cuda_only blocks print PER_DEVICE_PREFIX)."""
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


class _Tee(io.StringIO):
    """Keeps what a notebook prints (to find each block's lines) and passes it on to the log as it comes,
    so a stage stopped half-way still leaves its output."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.stream.flush()


def run_notebook(py: Path, stream=None) -> dict:
    """Execute one notebook twin cell by cell; return its status, cuda_only blocks and measured lines.
    What the cells print goes to ``stream`` (default: stdout) as well."""
    import matplotlib.pyplot as plt

    import lecture_utils
    import lecture_utils.device
    from lecture_utils.checks import CHECK_MARK

    prefixes = line_prefixes()
    cells = parse_cells(py)
    # A real module: dataclasses, pickle and typing look a class's module up in sys.modules.
    module = types.ModuleType("__notebook__")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    unavailable: dict[str, str] = {}  # name -> where it came from ("a skipped cell", "failed cell 3")
    result = {"cells": len(cells), "ran": 0, "expected_errors": 0, "skipped": [], "failed": [],
              "blocks": [], "status": "ok"}
    output = _Tee(stream or sys.stdout)
    # Record what every cuda_only() call returned, by its `what`.
    entered: dict[str, bool] = {}
    original = lecture_utils.device.cuda_only

    def recording_cuda_only(device, what):
        entered[what] = original(device, what)
        return entered[what]

    patched = [m for m in (lecture_utils, lecture_utils.device) if getattr(m, "cuda_only", None) is original]
    for mod in patched:
        mod.cuda_only = recording_cuda_only
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
                if isinstance(err, ModuleNotFoundError) and missing and missing.split(".")[0] in NOT_ON_THE_GPU_MACHINE:
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
        for mod in patched:
            mod.cuda_only = original
        sys.modules.pop(module.__name__, None)
    result["seconds"] = round(time.perf_counter() - start, 1)
    text = output.getvalue()
    result["checks"] = sum(line.startswith(CHECK_MARK) for line in text.splitlines())
    result["measured"] = [line for line in text.splitlines() if line.startswith(prefixes)]
    return result


def memory_check(device_name: str) -> dict:
    """Predicted versus measured peak of one steady-state AdamW step of notebook 04's MLP.

    On CUDA, in this fresh process: first one matmul forward and backward, so that cuBLAS has
    allocated its workspaces (one per thread and stream: the forward's, and autograd's
    backward thread's, 32 MiB each on Hopper), then ``memory_allocated()`` as the baseline;
    the step's ``max_memory_allocated()`` minus that baseline is compared with
    ``mlp_peak_bytes``. On the CPU (the rehearsal) the peak of live tensor bytes
    (``lecture_utils.trace.LiveBytes``) stands in for the allocator's. Within 5% passes.
    """
    import torch

    from lecture_utils.device import get_device
    from lecture_utils.models import Cruncher
    from lecture_utils.trace import LiveBytes
    from lecture_utils.training_memory import mlp_peak_bytes

    device = get_device(device_name)
    cuda = device.type == "cuda"
    layers, width, batch = (8, 2048, 8192) if cuda else (4, 256, 1024)  # batch > width: see mlp_peak_bytes

    def step(model, x, optimizer):
        optimizer.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        optimizer.step()

    baseline = 0
    if cuda:
        warm = torch.randn(256, 256, device=device, requires_grad=True)
        (warm @ warm).sum().backward()  # cuBLAS workspaces for this thread and autograd's
        del warm
        torch.cuda.synchronize()
        baseline = torch.cuda.memory_allocated()
    model = Cruncher(width, layers, device=device)
    x = torch.randn(batch, width, device=device)
    optimizer = torch.optim.AdamW(model.parameters())
    step(model, x, optimizer)  # warm-up: creates AdamW's state
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        step(model, x, optimizer)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - baseline
        how = "max_memory_allocated() minus the baseline after a warm-up matmul (cuBLAS workspaces)"
    else:
        tracker = LiveBytes([x, *model.parameters(), *(p.grad for p in model.parameters()),
                             *(t for s in optimizer.state.values() for t in s.values())])
        with tracker:
            step(model, x, optimizer)
        peak = tracker.peak
        how = "peak live tensor bytes (LiveBytes): the CPU rehearsal"
    predicted = mlp_peak_bytes(n_layers=layers, width=width, batch=batch, optimizer="adamw")
    ratio = peak / predicted
    print(f"Cruncher(width={width}, n_layers={layers}), batch {batch}, AdamW, fp32 on {device}: "
          f"predicted {predicted:,} B, measured {peak:,} B ({how}), ratio {ratio:.4f}, baseline {baseline:,} B")
    return {"status": "passed" if abs(ratio - 1) < 0.05 else "failed",
            "model": f"Cruncher(width={width}, n_layers={layers}), batch {batch}, AdamW, fp32",
            "predicted_peak_bytes": predicted, "measured_peak_bytes": peak, "baseline_bytes": baseline,
            "how": how, "ratio": round(ratio, 4)}


def run_benchmark(path: Path, quick: bool) -> dict:
    """Run one benchmark script in this process, as ``python3 benchmarks/X.py [--quick]`` would."""
    sys.path.insert(0, str(path.parent))  # its _targets.py sits beside it
    sys.argv = [str(path)] + (["--quick"] if quick else [])
    try:
        runpy.run_path(str(path), run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return {"status": "passed" if code == 0 else "failed", "returncode": code}


class _Hidden(importlib.abc.MetaPathFinder):
    """Makes packages look uninstalled (the rehearsal of the lent machine)."""

    def __init__(self, names: set[str]):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (hidden, as on the lent GPU machine)",
                                      name=fullname)
        return None


def stage(name: str, device: str, quick: bool) -> int:
    """The child process: run one stage, print its output, then one RESULT line."""
    hidden = {n for n in os.environ.get(HIDE_ENV, "").split(",") if n}
    if hidden:
        sys.meta_path.insert(0, _Hidden(hidden))
    sys.path.insert(0, str(ROOT))
    kind, target = STAGES[name]
    if kind == "notebook":
        detail = run_notebook(target)
        detail["status"] = "passed" if detail["status"] == "ok" else "failed"
    elif kind == "memory":
        detail = memory_check(device)
    else:
        detail = run_benchmark(target, quick)
    from lecture_utils.device import describe_device, get_device

    detail["device"] = describe_device(get_device(device))
    sys.stdout.flush()
    sys.stderr.flush()
    print("\n" + RESULT + json.dumps(detail), flush=True)
    return 0


def _stages() -> dict[str, tuple[str, Path | None]]:
    notebooks = {p.stem: ("notebook", p) for p in sorted((ROOT / "py_src").glob("[0-9][0-9]_*.py"))}
    benchmarks = {p.stem: ("benchmark", p) for p in sorted((ROOT / "benchmarks").glob("[a-z]*.py"))}
    return {**notebooks, "memory": ("memory", None), **benchmarks}


STAGES = _stages()


# --- the parent: one fresh process per stage, the report rewritten after each ----------------


def _nvidia_smi(field: str) -> str:
    """One field of the first GPU from nvidia-smi (the parent never initialises CUDA itself)."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else "unknown"


TARGET_LINE = re.compile(r"^target (?P<key>[\w-]+): (?P<text>.*)$")


class Check:
    """The stages of one run, its report, and DIR's four files."""

    def __init__(self, args, names: list[str], torch_version: str, cuda_version: str | None):
        self.args, self.names = args, names
        self.began = time.monotonic()
        self.logs: dict[str, str] = {}
        self.child: subprocess.Popen | None = None  # the running stage's process
        self.stopped: int | None = None  # the signal that stopped the check
        self.reference = args.reference.read_text(encoding="utf-8")
        cuda = args.device == "cuda"
        self.report = {
            "gpu": _nvidia_smi("name") if cuda else "no GPU: a CPU rehearsal",
            "device": args.device, "driver": _nvidia_smi("driver_version") if cuda else "-",
            "torch": torch_version, "cuda": cuda_version or "-", "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python3", "scripts/gpu_check.py", *sys.argv[1:]]),
            "deadline_s": args.deadline, "seconds": 0.0, "verdict": "running",
            "stages": {n: {"kind": STAGES[n][0], "status": NOT_STARTED} for n in names},
        }

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def run(self) -> int:
        self.write()  # a valid report before the first stage, should the run die at once
        for name in self.names:
            if self.stopped is not None:
                break
            if self.elapsed() >= self.args.deadline:
                for later in self.names[self.names.index(name):]:
                    self.report["stages"][later]["reason"] = f"past the --deadline of {self.args.deadline:g} s"
                break
            self.run_stage(name)
        if self.stopped is not None:
            self.finish(f"stopped by {signal.Signals(self.stopped).name}")
            return 128 + self.stopped
        return self.finish()

    def stop(self, signum: int) -> None:
        """SIGINT/SIGTERM (a signal handler): stop the running stage's processes; start no other."""
        if self.stopped is None:
            self.stopped = signum
        if self.child is not None:
            self._kill(self.child)

    def run_stage(self, name: str) -> None:
        row = self.report["stages"][name]
        limit = max(1.0, min(self.args.stage_limit, self.args.deadline + self.args.grace - self.elapsed()))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
               "LECTURE_DEVICE": self.args.device, "PYTHONUNBUFFERED": "1"}
        if self.args.device == "cpu":  # rehearse the lent machine: what it lacks is hidden
            env[HIDE_ENV] = ",".join(NOT_ON_THE_GPU_MACHINE)
        command = [sys.executable, str(Path(__file__).resolve()), "--stage", name, "--device", self.args.device]
        start = time.monotonic()
        # Its own session: a timeout or a signal stops the stage's whole process tree (spawned workers too).
        self.child = child = subprocess.Popen(command + (["--quick"] if self.args.quick else []), cwd=ROOT,
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                              errors="replace", start_new_session=True)
        if self.stopped is not None:  # a signal came before the handler could see this child
            self._kill(child)
        row.update(status="running", started_at_s=round(start - self.began, 1), pid=child.pid)
        self.write()
        try:
            output, _ = child.communicate(timeout=limit)
            status = None
        except subprocess.TimeoutExpired:
            self._kill(child)
            output, _ = child.communicate()
            status, reason = "timed out", f"stopped after {limit:.0f} s (--stage-limit, or --deadline + --grace)"
        self.child = None
        if self.stopped is not None:
            status, reason = "stopped", f"the check was stopped by {signal.Signals(self.stopped).name}"
        elif status is None:
            status, reason = self._status(child.returncode, output, row)
        self._record(name, row, output, start, status, reason)

    @staticmethod
    def _kill(child: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)

    @staticmethod
    def _status(code: int, output: str, row: dict) -> tuple[str, str]:
        lines = output.rstrip("\n").splitlines()
        if not lines or not lines[-1].startswith(RESULT):
            return "crashed", f"exit {code} before reporting a result"
        row["detail"] = detail = json.loads(lines[-1][len(RESULT):])
        return detail.pop("status"), ""

    def _record(self, name: str, row: dict, output: str, start: float, status: str, reason: str) -> None:
        row.pop("pid", None)
        row.update(status=status, seconds=round(time.monotonic() - start, 1))
        if reason:
            row["reason"] = reason
        text = "\n".join(x for x in output.splitlines() if not x.startswith(RESULT)).rstrip()
        row["targets"] = [m.group(0) for m in map(TARGET_LINE.match, text.splitlines()) if m]
        if not row["targets"]:
            del row["targets"]
        device = row.get("detail", {}).get("device", "")
        if "(" in device and self.report["device"] == "cuda" and self.report["gpu"] == "unknown":
            self.report["gpu"] = device[device.index("(") + 1:-1]
        self.logs[name] = f"===== {name}: {status} in {row['seconds']} s =====\n{text}\n"
        self.write()
        print(f"{name:<24} {status:<10} {row['seconds']:6.1f} s  {brief(row)}", flush=True)

    def finish(self, stopped: str = "") -> int:
        stages = self.report["stages"].values()
        bad = [n for n, r in self.report["stages"].items() if r["status"] not in ("passed", NOT_STARTED)]
        waiting = [n for n, r in self.report["stages"].items() if r["status"] == NOT_STARTED]
        if stopped:
            verdict, code = f"{stopped}: {len(waiting)} stage(s) not started", None
        elif bad:
            verdict, code = f"FAILED: {', '.join(bad)}", 1
        elif waiting:
            verdict, code = f"stopped at the deadline: {len(waiting)} of {len(self.names)} stages not started", 3
        else:
            verdict, code = f"all {len(self.names)} stages passed", 0
        if stopped and bad:
            verdict += f"; failed: {', '.join(bad)}"
        self.report["verdict"] = verdict
        self.write()
        passed = sum(r["status"] == "passed" for r in stages)
        print(f"gpu-check: {verdict} ({passed} passed) in {self.elapsed():.0f} s; report in {self.args.out}",
              flush=True)
        return code if code is not None else 1

    def write(self) -> None:
        from lecture_utils.files import (
            write_text,  # each one atomic: the old file or the new, never half
        )

        self.report["seconds"] = round(self.elapsed(), 1)
        out = self.args.out
        write_text(out / "summary.md", summary_markdown(self.report))
        write_text(out / "reference.md", fill_reference(self.reference, self.report))
        write_text(out / "logs.txt", "".join(self.logs[n] for n in self.names if n in self.logs))
        # last: once report.json says a stage ran, the other three already say so too
        write_text(out / "report.json", json.dumps(self.report, indent=2) + "\n")


def brief(row: dict) -> str:
    """A stage's result in a few words, for its line on the console and in summary.md."""
    detail = row.get("detail", {})
    if row["status"] in ("timed out", "crashed", "stopped", NOT_STARTED, "running"):
        return row.get("reason", "")
    if row["kind"] == "notebook":
        blocks = [b["status"] for b in detail.get("blocks", [])]
        counts = ", ".join(f"{blocks.count(s)} {s}" for s in ("passed", "failed", "skipped") if blocks.count(s))
        text = (f"{detail['ran']}/{detail['cells']} cells, {detail['checks']} checks, "
                f"{len(detail['skipped'])} skipped; GPU blocks: {counts or 'none'}")
        return text + (f"; {detail['error']}" if "error" in detail else "")
    if row["kind"] == "memory":
        return (f"measured / predicted peak {detail['ratio']:.4f} ({detail['measured_peak_bytes']:,} / "
                f"{detail['predicted_peak_bytes']:,} B)")
    verdicts = [target_verdict(t) for t in row.get("targets", [])]
    return (f"exit {detail.get('returncode')}; targets: "
            + (", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts)) or "none printed"))


def target_verdict(line: str) -> str:
    """met, missed, gross regression, no target here, or not measured, from a benchmark's target line."""
    for ending, verdict in (("gross regression (worse than half the target)", "gross regression"),
                            (": met", "met"), (": missed", "missed")):
        if line.endswith(ending):
            return verdict
    return "not measured" if "not measured" in line else "no target here"


def summary_markdown(report: dict) -> str:
    stages = report["stages"]
    lines = [f"# GPU check: {report['gpu']}", "",
             f"- {report['date']}; torch {report['torch']}, CUDA {report['cuda']}, driver {report['driver']}, "
             f"Python {report['python']}",
             f"- `{report['command']}`: {report['verdict']}, {report['seconds']} s (deadline {report['deadline_s']:g} s)"]
    running = [n for n, r in stages.items() if r["status"] == "running"]
    if running:
        lines.append(f"- **{running[0]} was running when this report was written**; if the check is no longer "
                     "running, it stopped there.")
    lines += ["", "## Stages", "", "| stage | status | seconds | what it found |", "| --- | --- | --- | --- |"]
    for name, r in stages.items():
        lines.append(f"| {name} | {r['status']} | {r.get('seconds', '')} | {brief(r)} |".replace("\n", " "))
    lines += ["", "## GPU-only blocks (`if cuda_only(device, ...)`)", "",
              "Each block by its name: passed, failed (with the error) or skipped (and why); "
              "what it checks; what it measured.", ""]
    for name, r in stages.items():
        for b in r.get("detail", {}).get("blocks", []):
            detail = b.get("message") or b.get("reason") or ""
            lines.append(f"- **{b['status']}**: {name}, cell {b['cell']}: {b['what']}" + (f" ({detail})" if detail else ""))
            if b.get("statement"):
                lines.append(f"  - failing statement: `{b['statement']}`")
            lines += [f"  - checks: `{c}`" for c in b["checks"]] or ["  - checks: (no assert: it only measures)"]
            lines += [f"  - `{m}`" for m in b["measured"]]
    lines += ["", "## Benchmark targets", "",
              "Targets and their sources: [reference.md](reference.md#benchmark-targets). A missed target is "
              "information; only a gross regression (worse than half the target) fails a benchmark.", ""]
    lines += [f"- {name}: `{t}`" for name, r in stages.items() for t in r.get("targets", [])] or ["- (none ran)"]
    memory = stages.get("memory", {}).get("detail")
    lines += ["", "## Memory: predicted versus measured peak", ""]
    if memory:
        lines.append(f"{memory['model']} on {memory['device']}: predicted {memory['predicted_peak_bytes']:,} B, "
                     f"measured {memory['measured_peak_bytes']:,} B ({memory['how']}): ratio {memory['ratio']:.4f} "
                     f"({'within' if stages['memory']['status'] == 'passed' else 'outside'} 5%).")
    else:
        lines.append("(not run)")
    lines += ["", "Every `[measured]` and `[per-device]` line and every figure: `report.json`; every stage's "
              "output: `logs.txt`; published figures beside these: [reference.md](reference.md)."]
    return "\n".join(lines) + "\n"


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def fill_reference(text: str, report: dict) -> str:
    """reference.md with its "Measured here" column filled from this run; every other cell kept as is.

    Rows are found by their first cell (the key in MEASURED_ROWS); a row whose block did not
    pass or fail, or did not print its line, says so instead of a number.
    """
    stamp = f"{report['gpu']}, torch {report['torch']}, CUDA {report['cuda']}, {report['date']}"
    blocks = {(nb, b["what"]): b for nb, r in report["stages"].items() for b in r.get("detail", {}).get("blocks", [])}
    out, column = [], None
    for line in text.splitlines():
        if line.startswith("**Measured here:**"):
            line = f"**Measured here:** {stamp}, by `scripts/gpu_check.py` (details: summary.md, report.json)."
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


def _out_folder(out: Path) -> str | None:
    """Why ``out`` cannot take the report (None: it can). It must be a folder holding nothing but
    an earlier report of this script, so that nothing else there is ever replaced."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file; give a folder (new, empty, or an earlier gpu_check report)"
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in FILES and not p.name.startswith(
            tuple(f".{f}.tmp-" for f in FILES)))
        if other:
            return (f"--out {out} holds {', '.join(other[:3])}{' ...' if len(other) > 3 else ''}, which this "
                    f"check did not write; give a new or empty folder (it writes only {', '.join(FILES)})")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for the report (new or empty): report.json, summary.md, "
                                                 "reference.md, logs.txt")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cuda (default), or cpu to rehearse the run on this machine")
    parser.add_argument("--deadline", type=float, default=420.0,
                        help="start no stage after this many seconds (default 420)")
    parser.add_argument("--grace", type=float, default=60.0,
                        help="stop a stage still running this long after the deadline (default 60)")
    parser.add_argument("--stage-limit", type=float, default=240.0, help="stop any stage after this long (default 240)")
    parser.add_argument("--only", nargs="+", metavar="STAGE", help=f"run these stages only: {', '.join(STAGES)}")
    parser.add_argument("--quick", action="store_true", help="the benchmarks' --quick form (default with --device cpu)")
    parser.add_argument("--reference", type=Path, default=ROOT / "docs" / "gpu" / "reference.md",
                        help="the published figures whose 'Measured here' column the copy in --out fills")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # the child process of one stage
    args = parser.parse_args(argv)

    def refuse(message: str, code: int = 2) -> int:
        print(f"gpu-check: {message}")
        return code

    if args.stage:
        return stage(args.stage, args.device, args.quick)
    if args.out is None:
        return refuse("give --out DIR, a new or empty folder for the report")
    for name, low in (("deadline", 0), ("grace", 0), ("stage_limit", 0)):
        value = getattr(args, name)
        if not (value > low and value < 1e6) and not (name == "grace" and value == 0):
            return refuse(f"--{name.replace('_', '-')} must be a number of seconds above 0, got {value:g}")
    unknown = [n for n in args.only or () if n not in STAGES]
    if unknown:
        return refuse(f"no stage {unknown[0]!r}; valid: {', '.join(STAGES)}")
    if not args.reference.is_file():
        return refuse(f"--reference {args.reference} is not a file; give docs/gpu/reference.md")
    why = _out_folder(args.out)
    if why:
        return refuse(why)
    try:
        import torch
    except ImportError:
        return refuse(f"torch is not importable with {sys.executable}; nothing to check")
    if args.device == "cuda" and not torch.cuda.is_available():
        return refuse(f"no CUDA device on this machine (torch {torch.__version__}); rehearse with --device cpu", 1)
    args.quick = args.quick or args.device == "cpu"
    sys.path.insert(0, str(ROOT))
    args.out.mkdir(parents=True, exist_ok=True)
    check = Check(args, [n for n in STAGES if not args.only or n in args.only], torch.__version__, torch.version.cuda)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: check.stop(signum))
    return check.run()


if __name__ == "__main__":
    sys.exit(main())
