"""The GPU check: every notebook's .py twin and the benchmarks, on a lent GPU machine.

    python3 scripts/gpu_check.py --out DIR                  # on a CUDA machine (make gpu-check)
    python3 scripts/gpu_check.py --out DIR --device cpu     # the same stages, rehearsed on the CPU

It needs a python3 with torch, numpy, einops, matplotlib, jaxtyping and tqdm: no make, venv
or Jupyter (so it reads the percent-format twins itself). Each stage runs in a fresh process:
a notebook, cell by cell in one namespace (a cell needing a package this python lacks, or a
name such a cell or a failed one would have bound, is skipped; every ``if cuda_only(device,
"<what>"):`` block is reported by its ``what``: passed, failed with the failing statement, or
skipped, with its asserts and measured lines), or a benchmark (its targets: met or missed).

It writes four files into DIR, atomically, before the first stage and after each one
(report.json last), so a run stopped at any point leaves a valid report: ``report.json``,
``summary.md``, ``reference.md`` (docs/gpu/reference.md with "Measured here" filled from each
``measured(..., ref=KEY)``) and ``logs.txt``. No stage starts after ``--deadline``; a stage past
the deadline plus ``--grace``, or past ``--stage-limit``, is stopped. ``--device cpu`` hides
what the lent machine lacks and runs the benchmarks' ``--quick`` form.

Exit codes: 0 every stage passed; 1 a stage failed, no CUDA device, or DIR stopped taking the
report (a full or read-only disk: the check stops, its files keep their last whole write); 2 bad
arguments, or DIR cannot take a report at all; 3 the deadline left stages not started; 128 + N
stopped by signal N (SIGINT, SIGTERM, SIGHUP).
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
import runpy
import signal
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?")
# What the lent GPU machine lacks: cells importing these are skipped there, and the CPU rehearsal hides them.
NOT_ON_THE_GPU_MACHINE = ("IPython", "ipykernel", "ipywidgets", "jupyter", "jupyter_client", "jupyter_core",
                          "jupyterlab", "jupytext", "matplotlib_inline", "nbclient", "nbconvert", "nbformat",
                          "nbval", "beartype", "tokenizers", "pytest")
HIDE_ENV = "GPU_CHECK_HIDE"
RESULT = "@@gpu-check-result@@ "  # a stage's last stdout line: this, then its result as JSON
FILES = ("report.json", "summary.md", "reference.md", "logs.txt")
NOT_STARTED = "not started"
REF = re.compile(r"^(?P<line>.*?)\s+\[ref (?P<key>[\w-]+)\]$")  # lecture_utils.checks.REF, at a line's end
TARGET = re.compile(r"^target (?P<key>[\w-]+): (?P<text>.*)$")  # benchmarks/_targets.py's lines


# --- a notebook, in the child process --------------------------------------------------------


def parse_cells(path: Path) -> list[str]:
    """The code cells of a jupytext percent file (a raising cell is a failure: notebooks show an
    error with ``check(..., raises=)``, which does not raise)."""
    cells, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if match := CELL.match(line):
            if current is not None:
                cells.append(current)
            current = None if match["markdown"] else ""
        elif current is not None:
            current += line
    return cells + ([current] if current is not None else [])


def names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds, names it reads without binding them)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read - bound


def cuda_blocks(source: str) -> list[dict]:
    """The ``if cuda_only(device, "<what>"):`` blocks of a cell, in order, with their asserts."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    blocks = []
    for node in ast.walk(tree):
        test = getattr(node, "test", None) if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Call) and getattr(test.func, "id", None) == "cuda_only" and len(test.args) == 2
                and isinstance(test.args[1], ast.Constant)):
            checks = sorted((n for n in ast.walk(node) if isinstance(n, ast.Assert)), key=lambda n: n.lineno)
            blocks.append({"what": test.args[1].value, "lines": (node.lineno, node.end_lineno),
                           "checks": [(n.lineno, n.end_lineno, ast.get_source_segment(source, n)) for n in checks]})
    return sorted(blocks, key=lambda b: b["lines"])


def block_rows(blocks: list[dict], cell: int, entered: dict, printed: list[str], err=None, filename="",
               skipped: str = "") -> list[dict]:
    """passed / failed / skipped for each cuda_only block of one cell, from how the cell ended."""
    lines = [f.lineno for f in reversed(traceback.extract_tb(err.__traceback__)) if f.filename == filename] if err else []
    rows = []
    for b in blocks:
        row = {"what": b["what"], "cell": cell, "checks": [c[2] for c in b["checks"]], "measured": printed}
        first, last = b["lines"]
        at = next((x for x in lines if first <= x <= last), None)
        if skipped:
            row.update(status="skipped", reason=skipped)
        elif at is not None:
            statement = next((c[2] for c in b["checks"] if c[0] <= at <= c[1]), None)
            row.update(status="failed", message="".join(traceback.format_exception_only(type(err), err)).strip(),
                       **({"statement": statement} if statement else {}))
        elif b["what"] not in entered:
            row.update(status="skipped", reason=f"not reached: the cell failed first ({type(err).__name__})"
                       if err else "not reached")
        elif not entered[b["what"]]:
            row.update(status="skipped", reason="cuda_only() returned False (not on a CUDA device)")
        else:
            row.update(status="passed")
        rows.append(row)
    return rows


class _Tee(io.StringIO):
    """Keeps what the cells print (each block's lines are found in it) and passes it on as it comes,
    so a stage stopped half-way still leaves its output in the log."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)


def run_notebook(py: Path, stream=None) -> dict:
    """Execute one notebook twin cell by cell; its status, cuda_only blocks and machine-dependent lines."""
    import matplotlib.pyplot as plt

    import lecture_utils
    import lecture_utils.device
    from lecture_utils.checks import CHECK_MARK, MEASURED_PREFIX, PER_DEVICE_PREFIX

    prefixes = (MEASURED_PREFIX, PER_DEVICE_PREFIX)
    module = sys.modules["__notebook__"] = types.ModuleType("__notebook__")  # dataclasses look classes up here
    unavailable: dict[str, str] = {}  # name -> where it came from ("a skipped cell", "failed cell 3")
    result = {"ran": 0, "skipped": [], "failed": [], "blocks": [], "status": "passed"}
    output, entered, original = _Tee(stream or sys.stdout), {}, lecture_utils.device.cuda_only

    def recording_cuda_only(device, what):
        entered[what] = original(device, what)
        return entered[what]

    # both homes: lecture_utils keeps a name once looked up there (its lazy exports)
    lecture_utils.cuda_only = lecture_utils.device.cuda_only = recording_cuda_only
    cwd, start = Path.cwd(), time.perf_counter()
    os.chdir(ROOT / "notebooks")  # as Jupyter does: the notebook's folder
    cells = parse_cells(py)
    try:
        for i, source in enumerate(cells, 1):
            filename, before = f"{py.name}:cell{i}", output.tell()
            blocks, (bound, read) = cuda_blocks(source), names(source)
            needs = sorted(read & unavailable.keys())
            if needs:  # a name from a skipped or failed cell: do not run on half-defined state
                reason = f"uses {needs[0]} from {unavailable[needs[0]]}"
                result["skipped"].append(f"cell {i}: {reason}")
                unavailable.update(dict.fromkeys(bound, unavailable[needs[0]]))
                result["blocks"] += block_rows(blocks, i, entered, [], skipped=reason)
                continue
            try:
                with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                    exec(compile(source, filename, "exec"), module.__dict__)
                result["ran"] += 1
                for name in bound:
                    unavailable.pop(name, None)
                printed = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                result["blocks"] += block_rows(blocks, i, entered, printed)
            except Exception as err:
                printed = [x for x in output.getvalue()[before:].splitlines() if x.startswith(prefixes)]
                missing = (getattr(err, "name", None) or "").split(".")[0]
                if isinstance(err, ModuleNotFoundError) and missing in NOT_ON_THE_GPU_MACHINE:
                    reason, origin = f"needs {missing}", "a skipped cell"
                else:
                    reason, origin = "", f"failed cell {i}"
                    error = f"cell {i}: " + "".join(traceback.format_exception_only(type(err), err)).strip()
                    result.update(status="failed", error=result.get("error", error))
                    result["failed"].append(error)
                    output.write(traceback.format_exc())
                if reason:
                    result["skipped"].append(f"cell {i}: {reason}")
                result["blocks"] += block_rows(blocks, i, entered, printed, err, filename, skipped=reason)
                for name in bound:  # dropped, so a failed block's tensors leave GPU memory
                    unavailable[name] = origin
                    module.__dict__.pop(name, None)
            finally:
                plt.close("all")
    finally:
        os.chdir(cwd)
        lecture_utils.device.cuda_only = original
        del lecture_utils.cuda_only  # looked up afresh, from lecture_utils.device, next time
    text = output.getvalue()
    result.update(cells=len(cells), seconds=round(time.perf_counter() - start, 1),
                  checks=sum(line.startswith(CHECK_MARK) for line in text.splitlines()),
                  measured=[line for line in text.splitlines() if line.startswith(prefixes)])
    return result


# --- the other stages, in the child process -----------------------------------------------------


def run_benchmark(path: Path, quick: bool) -> dict:
    """One benchmark script, in this process, as ``python3 benchmarks/X.py [--quick]`` would run."""
    sys.path.insert(0, str(path.parent))  # its _targets.py sits beside it
    sys.argv = [str(path)] + (["--quick"] if quick else [])
    try:
        runpy.run_path(str(path), run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return {"status": "passed" if code == 0 else "failed", "returncode": code}


def stage(name: str, device: str, quick: bool) -> int:
    """The child process: one stage, its output, then one RESULT line."""
    for hidden in filter(None, os.environ.get(HIDE_ENV, "").split(",")):
        sys.modules[hidden] = None  # `import hidden` now raises ModuleNotFoundError, as on the lent machine
    sys.path.insert(0, str(ROOT))
    kind, target = STAGES[name]
    detail = run_notebook(target) if kind == "notebook" else run_benchmark(target, quick)
    from lecture_utils.device import describe_device, get_device

    detail["device"] = describe_device(get_device(device))
    sys.stdout.flush()
    print("\n" + RESULT + json.dumps(detail), flush=True)
    return 0


STAGES = {**{p.stem: ("notebook", p) for p in (ROOT / "py_src" / f"{name}.py" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split())},
          **{p.stem: ("benchmark", p) for p in sorted((ROOT / "benchmarks").glob("[a-z]*.py"))}}


# --- the parent: one fresh process per stage, the report rewritten after each ---------------------


def _nvidia_smi(field: str) -> str:
    """One field of the first GPU from nvidia-smi (the parent never initialises CUDA itself)."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else "unknown"


class Check:
    """The stages of one run, its report, and DIR's four files."""

    def __init__(self, args, names_: list[str], torch_version: str, cuda_version: str | None):
        self.args, self.names = args, names_
        self.began, self.logs, self.child, self.stopped = time.monotonic(), {}, None, None
        self.unwritable = None  # why DIR could not take the report (a full or read-only disk): the check stops
        self.reference = args.reference_text
        cuda = args.device == "cuda"
        self.report = {
            "gpu": _nvidia_smi("name") if cuda else "no GPU: a CPU rehearsal", "device": args.device,
            "driver": _nvidia_smi("driver_version") if cuda else "-", "torch": torch_version,
            "cuda": cuda_version or "-", "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python3", "scripts/gpu_check.py", *sys.argv[1:]]),
            "deadline_s": args.deadline, "seconds": 0.0, "verdict": "running",
            "stages": {n: {"kind": STAGES[n][0], "status": NOT_STARTED} for n in names_}}

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def run(self) -> int:
        self.write()  # a valid report before the first stage, should the run die at once
        if self.unwritable:
            print(f"gpu-check: cannot write the report in {self.args.out}: {self.unwritable}; no stage was run")
            return 2
        for name in self.names:
            if self.stopped is not None or self.unwritable:
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
        self.stopped = self.stopped or signum
        self.kill()

    def kill(self) -> None:
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signal.SIGKILL)

    def run_stage(self, name: str) -> None:
        row, start = self.report["stages"][name], time.monotonic()
        limit = max(1.0, min(self.args.stage_limit, self.args.deadline + self.args.grace - self.elapsed()))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
               "LECTURE_DEVICE": self.args.device, "PYTHONUNBUFFERED": "1"}
        if self.args.device == "cpu":  # rehearse the lent machine: what it lacks is hidden
            env[HIDE_ENV] = ",".join(NOT_ON_THE_GPU_MACHINE)
        command = [sys.executable, str(Path(__file__).resolve()), "--stage", name, "--device", self.args.device]
        # Its own session: a timeout or a signal stops the stage's whole process tree (spawned workers too).
        self.child = child = subprocess.Popen(command + ["--quick"] * self.args.quick, cwd=ROOT, env=env, text=True,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, errors="replace",
                                              start_new_session=True)
        if self.stopped is not None or self.unwritable:  # a signal came before the handler could see this child
            self.kill()
        row.update(status="running", started_at_s=round(start - self.began, 1), pid=child.pid)
        self.write()
        try:
            output, reason = child.communicate(timeout=limit)[0], ""
        except subprocess.TimeoutExpired:
            self.kill()
            output, reason = child.communicate()[0], f"stopped after {limit:.0f} s (--stage-limit, or --deadline + --grace)"
        self.child = None
        lines = output.rstrip("\n").splitlines()
        if self.stopped:
            status, reason = "stopped", f"the check was stopped by {signal.Signals(self.stopped).name}"
        elif self.unwritable and child.returncode and child.returncode < 0:
            status, reason = "stopped", f"the report could not be written ({self.unwritable})"
        elif reason:
            status = "timed out"
        elif lines and lines[-1].startswith(RESULT):
            row["detail"] = json.loads(lines[-1][len(RESULT):])
            status = row["detail"].pop("status")
        else:
            status, reason = "crashed", f"exit {child.returncode} before reporting a result"
        text = "\n".join(x for x in lines if not x.startswith(RESULT))
        row.pop("pid", None)
        row.update(status=status, seconds=round(time.monotonic() - start, 1), **({"reason": reason} if reason else {}))
        targets = [m.group(0) for m in map(TARGET.match, text.splitlines()) if m]
        row.update({"targets": targets} if targets else {})
        device = row.get("detail", {}).get("device", "")
        if "(" in device and self.report["gpu"] == "unknown":
            self.report["gpu"] = device[device.index("(") + 1:-1]
        self.logs[name] = f"===== {name}: {status} in {row['seconds']} s =====\n{text}\n"
        self.write()
        print(f"{name:<24} {status:<10} {row['seconds']:6.1f} s  {brief(row)}", flush=True)

    def finish(self, stopped: str = "") -> int:
        if self.unwritable:
            stopped = stopped or f"stopped: the report could not be written ({self.unwritable})"
        stages = self.report["stages"]
        bad = [n for n, r in stages.items() if r["status"] not in ("passed", NOT_STARTED)]
        waiting = [n for n, r in stages.items() if r["status"] == NOT_STARTED]
        if stopped:
            verdict, code = f"{stopped}: {len(waiting)} stage(s) not started", 1
        elif bad:
            verdict, code = f"FAILED: {', '.join(bad)}", 1
        elif waiting:
            verdict, code = f"stopped at the deadline: {len(waiting)} of {len(self.names)} stages not started", 3
        else:
            verdict, code = f"all {len(self.names)} stages passed", 0
        self.report["verdict"] = verdict + (f"; failed: {', '.join(bad)}" if stopped and bad else "")
        self.write()
        passed = sum(r["status"] == "passed" for r in stages.values())
        where = (f"the files in {self.args.out} are the report as last written whole (each file is replaced in one "
                 "step), not this verdict") if self.unwritable else f"report in {self.args.out}"
        print(f"gpu-check: {self.report['verdict']} ({passed} passed) in {self.elapsed():.0f} s; {where}", flush=True)
        return code

    def write(self) -> None:
        """DIR's four files, each replaced whole. A write that fails (full or read-only disk) stops the
        check: the running stage is stopped, no other starts, and the files keep their last whole write."""
        from lecture_utils.console import describe
        from lecture_utils.files import write_text  # atomic: the old file or the new, never half

        if self.unwritable:
            return
        self.report["seconds"] = round(self.elapsed(), 1)
        out = self.args.out
        try:
            write_text(out / "summary.md", summary_markdown(self.report))
            write_text(out / "reference.md", fill_reference(self.reference, self.report))
            write_text(out / "logs.txt", "".join(self.logs[n] for n in self.names if n in self.logs))
            # last: once report.json says a stage ran, the other three already say so too
            write_text(out / "report.json", json.dumps(self.report, indent=2) + "\n")
        except OSError as err:
            self.unwritable = describe(err)
            self.kill()


def target_verdict(line: str) -> str:
    """met, missed, gross regression, no target here, or not measured, from a benchmark's target line."""
    for ending, verdict in (("gross regression (worse than half the target)", "gross regression"),
                            (": met", "met"), (": missed", "missed")):
        if line.endswith(ending):
            return verdict
    return "not measured" if "not measured" in line else "no target here"


def brief(row: dict) -> str:
    """A stage's result in a few words, for its line on the console and in summary.md."""
    detail = row.get("detail", {})
    if row["status"] in ("timed out", "crashed", "stopped", NOT_STARTED, "running"):
        return row.get("reason", "")
    if row["kind"] == "notebook":
        blocks = [b["status"] for b in detail.get("blocks", [])]
        counts = ", ".join(f"{blocks.count(s)} {s}" for s in ("passed", "failed", "skipped") if blocks.count(s))
        return (f"{detail['ran']}/{detail['cells']} cells, {detail['checks']} checks, {len(detail['skipped'])} "
                f"skipped; GPU blocks: {counts or 'none'}" + (f"; {detail['error']}" if "error" in detail else ""))
    verdicts = [target_verdict(t) for t in row.get("targets", [])]
    return (f"exit {detail.get('returncode')}; targets: "
            + (", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts)) or "none printed"))


def summary_markdown(report: dict) -> str:
    stages = report["stages"]
    lines = [f"# GPU check: {report['gpu']}", "",
             f"- {report['date']}; torch {report['torch']}, CUDA {report['cuda']}, driver {report['driver']}, "
             f"Python {report['python']}",
             f"- `{report['command']}`: {report['verdict']}, {report['seconds']} s (deadline {report['deadline_s']:g} s)"]
    lines += [f"- **{n} was running when this report was written**; if the check is no longer running, it "
              "stopped there." for n, r in stages.items() if r["status"] == "running"]
    lines += ["", "## Stages", "", "| stage | status | seconds | what it found |", "| --- | --- | --- | --- |"]
    lines += [f"| {n} | {r['status']} | {r.get('seconds', '')} | {brief(r)} |" for n, r in stages.items()]
    lines += ["", "## GPU-only blocks (`if cuda_only(device, ...)`)", "",
              "Each block by its name: passed, failed (with the error) or skipped (and why); what it checks; "
              "what it measured.", ""]
    for name, r in stages.items():
        for b in r.get("detail", {}).get("blocks", []):
            detail = b.get("message") or b.get("reason") or ""
            lines.append(f"- **{b['status']}**: {name}, cell {b['cell']}: {b['what']}" + (f" ({detail})" if detail else ""))
            lines += [f"  - failing statement: `{b['statement']}`"] if b.get("statement") else []
            lines += [f"  - checks: `{c}`" for c in b["checks"]] or ["  - checks: (no assert: it only measures)"]
            lines += [f"  - `{m}`" for m in b["measured"]]
    lines += ["", "## Benchmark targets", "", "Targets and their sources: [reference.md](reference.md#benchmark-targets). "
              "A missed target is information; only a gross regression (worse than half the target) fails a "
              "benchmark.", ""]
    lines += [f"- {n}: `{t}`" for n, r in stages.items() for t in r.get("targets", [])] or ["- (none ran)"]
    lines += ["", "Every `[measured]` and `[per-device]` line and every figure: `report.json`; every stage's output: "
              "`logs.txt`; published figures beside these: [reference.md](reference.md)."]
    return "\n".join(lines) + "\n"


def fill_reference(text: str, report: dict) -> str:
    """reference.md with its "Measured here" column filled; every other cell kept as it is.

    A row's value is what a cell printed with ``measured(..., ref=<the row's key>)``; a row that
    no block measured this run says why (its block was skipped, or nothing printed it).
    """
    stamp = f"{report['gpu']}, torch {report['torch']}, CUDA {report['cuda']}, {report['date']}"
    values, reasons = {}, {}
    for r in report["stages"].values():
        for b in r.get("detail", {}).get("blocks", []):
            for line in b["measured"]:
                if m := REF.match(line):
                    values[m["key"]] = m["line"].split(": ", 1)[-1] + (" (its block failed)" if b["status"] == "failed" else "")
            if b["status"] == "skipped":
                reasons[b["what"]] = f"not measured: skipped ({b['reason']})"
    out, column = [], None
    for line in text.splitlines():
        if line.startswith("**Measured here:**"):
            line = f"**Measured here:** {stamp}, by `scripts/gpu_check.py` (details: summary.md, report.json)."
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if "Measured here" in cells:
                column = cells.index("Measured here")
            elif column is not None and len(cells) > column and not cells[column].startswith("—"):
                key, stands_in = cells[0].strip("`"), cells[column - 1] if column else ""
                reason = next((why for what, why in reasons.items() if what in stands_in), "not measured this run")
                cells[column] = f"{values.get(key, reason)} ({report['gpu']})".replace("|", "/")
                line = "| " + " | ".join(cells) + " |"
        else:
            column = None  # a table ends at the first line that is not a row
        out.append(line)
    return "\n".join(out) + "\n"


def _out_problem(out: Path) -> str | None:
    """Why ``out`` cannot take the report (None: it can): a folder, new, empty, or holding only an
    earlier report of this check, so that nothing else there is ever replaced."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file; give a folder (new, empty, or an earlier gpu_check report)"
    other = sorted(p.name for p in out.iterdir() if p.name not in FILES and not p.name.startswith(
        tuple(f".{f}.tmp-" for f in FILES))) if out.is_dir() else []
    if other:
        return (f"--out {out} holds {', '.join(other[:3])}{' ...' if len(other) > 3 else ''}, which this check "
                f"did not write; give a new or empty folder (it writes only {', '.join(FILES)})")
    return None


def _reference_problem(args) -> str | None:
    """Read --reference now (into ``args.reference_text``), before --out is made: None if it reads."""
    try:
        args.reference_text = args.reference.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        return f"--reference {args.reference} is not UTF-8 text ({err.reason} at byte {err.start}); give docs/gpu/reference.md"
    except OSError as err:
        return f"cannot read --reference {args.reference}: {err.strerror or err}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help=f"a new or empty folder for the report: {', '.join(FILES)}")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cuda (default), or cpu to rehearse the run on this machine")
    parser.add_argument("--deadline", type=float, default=420.0, help="start no stage after this many seconds")
    parser.add_argument("--grace", type=float, default=60.0, help="stop a stage this long after the deadline")
    parser.add_argument("--stage-limit", type=float, default=240.0, help="stop any stage after this long")
    parser.add_argument("--only", nargs="+", metavar="STAGE", help=f"run these stages only: {', '.join(STAGES)}")
    parser.add_argument("--quick", action="store_true", help="the benchmarks' --quick form (default with --device cpu)")
    parser.add_argument("--reference", type=Path, default=ROOT / "docs" / "gpu" / "reference.md",
                        help="the published figures whose 'Measured here' column the copy in --out fills")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # the child process of one stage
    args = parser.parse_args(argv)
    if args.stage:
        return stage(args.stage, args.device, args.quick)
    problem = None
    if args.out is None:
        problem = "give --out DIR, a new or empty folder for the report"
    for name in ("deadline", "grace", "stage_limit"):
        value, flag = getattr(args, name), f"--{name.replace('_', '-')}"
        if value != value:  # nan
            problem = problem or f"{flag} must be a number of seconds, got {value}"
        elif not (value > 0 or (name == "grace" and value == 0)):
            problem = problem or f"{flag} must be a number of seconds above 0, got {value:g}"
        elif value >= 1e6:
            problem = problem or f"{flag} must be a number of seconds below 1e+06 (11.6 days), got {value:g}"
    unknown = [n for n in args.only or () if n not in STAGES]
    problem = problem or (f"no stage {unknown[0]!r}; valid: {', '.join(STAGES)}" if unknown else None)
    if not problem and not args.reference.is_file():
        problem = f"--reference {args.reference} is not a file; give docs/gpu/reference.md"
    problem = problem or _reference_problem(args)
    problem = problem or _out_problem(args.out)
    if problem:
        print(f"gpu-check: {problem}")
        return 2
    try:
        import torch
    except ImportError:
        print(f"gpu-check: torch is not importable with {sys.executable}; nothing to check")
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"gpu-check: no CUDA device on this machine (torch {torch.__version__}); rehearse with --device cpu")
        return 1
    args.quick = args.quick or args.device == "cpu"
    sys.path.insert(0, str(ROOT))
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"gpu-check: cannot create --out {args.out}: {err.strerror or err}; no stage was run")
        return 2
    check = Check(args, [n for n in STAGES if not args.only or n in args.only], torch.__version__, torch.version.cuda)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the ssh connection dropped
        signal.signal(sig, lambda signum, frame: check.stop(signum))
    return check.run()


if __name__ == "__main__":
    sys.exit(main())
