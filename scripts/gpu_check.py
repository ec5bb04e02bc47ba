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
import contextlib
import datetime
import json
import os
import platform
import re
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

# The stage that runs a notebook, and the report's text, each in a module of its own beside this one.
from gpu_cells import NOT_ON_THE_GPU_MACHINE, run_notebook
from gpu_report import NOT_STARTED, brief, fill_reference, summary_markdown

ROOT = Path(__file__).resolve().parents[1]
HIDE_ENV = "GPU_CHECK_HIDE"
RESULT = "@@gpu-check-result@@ "  # a stage's last stdout line: this, then its result as JSON
FILES = ("report.json", "summary.md", "reference.md", "logs.txt")
TARGET = re.compile(r"^target (?P<key>[\w-]+): (?P<text>.*)$")  # benchmarks/_targets.py's lines


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


# The classroom's benchmarks time the student's laptop and need Jupyter, make and Chromium, which the
# lent GPU machine lacks: they are not stages.
CLASSROOM = {"run_all", "make_test", "alt_r"}
STAGES = {**{p.stem: ("notebook", p) for p in (ROOT / "py_src" / f"{name}.py" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split())},
          **{p.stem: ("benchmark", p) for p in sorted((ROOT / "benchmarks").glob("[a-z]*.py")) if p.stem not in CLASSROOM}}


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
