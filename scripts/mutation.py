"""make mutation: do the checks catch wrong code, not only wrong expected values?

    python scripts/mutation.py [--children 2] [--no-mutmut] [--plants-only]

1. mutmut mutates the lesson's calculators and measurers (`[tool.mutmut]` in pyproject.toml:
   flops, sizes, dtypes, training_memory, optim, bench, data's sampler, checks, exercises) and
   runs make test's unit tests against each mutant (`mutmut run`, in mutants/).
2. Every mutant the unit tests let live meets the notebooks under nbval, as `make test` runs
   them (strict, the same sanitizer): the notebooks whose run calls the mutated function (found
   by running each notebook's twin once under mutmut's call recording), until one fails.
3. The hand plants below (a dropped synchronize, the sparse peak, BDK for 2BDK, a copy for a
   view) go into a copy of the checkout one at a time; each must fail a notebook.

Prints the score, killed / all, and each survivor; writes build/mutation/report.json. It takes
an hour or more on 2 cores: by hand, like make bench, never in make test. docs/mutation.md
records a run and says, for each survivor, why it is equivalent or which test now kills it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
REPORT = ROOT / "build" / "mutation" / "report.json"
LESSONS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
         "--nbval-cell-timeout", "300", "-p", "no:cacheprovider", "-q", "-x"]
KILLED = {"killed", "timeout", "segfault", "caught by type check"}

# (what is planted, file, the text replaced, its replacement, the notebooks that must fail). Text in
# a notebook is replaced in its .ipynb, whose cells nbval runs.
PLANTS = [
    ("drop the synchronize (03's time_op)", "notebooks/03_flops_and_mfu.ipynb",
     "        sync()  # ", "        pass  # ", ["03_flops_and_mfu"]),
    ("use the sparse peak (hardware.Accelerator.peak)", "lecture_utils/hardware.py",
     "        return self.dense_flops[key]", "        return self.sparse_flops.get(key, self.dense_flops[key])",
     ["03_flops_and_mfu"]),
    ("count BDK instead of 2BDK (flops.matmul_flops)", "lecture_utils/flops.py",
     "    return 2 * b * d * k", "    return b * d * k", ["04_autograd"]),
    ("count BDK instead of 2BDK (03's matmul_flops cell)", "notebooks/03_flops_and_mfu.ipynb",
     '    return 2 * b * d * k"', '    return b * d * k"', ["03_flops_and_mfu"]),
    ("copy instead of view (01's z = x.transpose(0, 1))", "notebooks/01_tensors_and_strides.ipynb",
     "z = x.transpose(0, 1)  #", "z = x.transpose(0, 1).contiguous()  #", ["01_tensors_and_strides"]),
]

# Imported at interpreter start in each twin's process (PYTHONPATH): records which mutated
# functions the notebook calls (mutmut's trampolines record them under MUTANT_UNDER_TEST=stats).
HIT_RECORDER = """import atexit, json, os

def _dump():
    from mutmut.state import state
    with open(os.environ["MUTATION_HITS"], "w", encoding="utf-8") as f:
        json.dump(sorted(state()._stats), f)

if os.environ.get("MUTATION_HITS"):
    atexit.register(_dump)
"""


def run(cmd: list[str], *, cwd: Path, env: dict | None = None, timeout: int = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)


def mutmut_results() -> dict[str, str]:
    """mutant name -> status, as `mutmut results --all true` prints them."""
    out = run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=ROOT).stdout
    return dict(re.findall(r"^\s+(\S+): (.+)$", out, re.MULTILINE))


def function_of(mutant: str) -> str:
    return mutant.partition("__mutmut_")[0]


def notebook_hits() -> dict[str, set[str]]:
    """mutated function -> the notebooks whose run calls it (each twin run once, as a script)."""
    hits: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(HIT_RECORDER, encoding="utf-8")
        for name in LESSONS:
            out = Path(tmp) / f"{name}.json"
            proc = run([sys.executable, str(MUTANTS / "py_src" / f"{name}.py")], cwd=MUTANTS / "notebooks",
                       env={"PYTHONPATH": f"{tmp}{os.pathsep}{MUTANTS}", "MUTANT_UNDER_TEST": "stats",
                            "MUTATION_HITS": str(out), "LECTURE_PROGRESS": "0", "LECTURE_DEVICE": "cpu"})
            if proc.returncode != 0 or not out.exists():
                raise SystemExit(f"mutation: the twin of {name} failed unmutated:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            for function in json.loads(out.read_text(encoding="utf-8")):
                hits.setdefault(function, set()).add(name)
    return hits


def notebooks_fail(notebooks: list[str], *, tree: Path, env: dict) -> str | None:
    """The first of ``notebooks`` whose nbval run fails in ``tree`` (None: all pass)."""
    for name in notebooks:
        proc = run([sys.executable, "-m", "pytest", f"notebooks/{name}.ipynb", *NBVAL], cwd=tree,
                   env={"PYTHONPATH": str(tree), "LECTURE_PROGRESS": "0", "LECTURE_DEVICE": "cpu", **env})
        if proc.returncode != 0:
            return name
    return None


def try_plant(plant: tuple | None) -> str | None:
    """Plant one wrong line in a copy of the checkout; the notebook that caught it, or None.
    ``None`` plants nothing: the control, whose notebooks must all pass."""
    what, path, old, new, notebooks = plant or ("", None, "", "", sorted({p[-1][0] for p in PLANTS}))
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".venv", "mutants", "build", ".git", "node_modules",
                                                                   "__pycache__", ".pytest_cache"))
        if path:
            target = tree / path
            text = target.read_text(encoding="utf-8")
            if old not in text:
                raise SystemExit(f"mutation: plant {what!r}: {old!r} is not in {path} (update PLANTS)")
            target.write_text(text.replace(old, new), encoding="utf-8")
        return notebooks_fail(notebooks, tree=tree, env={})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument("--no-mutmut", action="store_true", help="reuse mutants/ from an earlier run")
    parser.add_argument("--plants-only", action="store_true", help="only the hand plants")
    args = parser.parse_args(argv)
    report: dict = {"plants": {}}
    unplanted = try_plant(None)
    if unplanted:  # else every plant would look caught
        raise SystemExit(f"mutation: notebook {unplanted} fails with nothing planted: fix it (make test) first")
    for plant in PLANTS:
        caught = try_plant(plant)
        report["plants"][plant[0]] = caught
        print(f"plant: {plant[0]}: " + (f"caught by {caught}" if caught else "NOT CAUGHT"))
    if not args.plants_only:
        if not args.no_mutmut:
            proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.children)],
                                  cwd=ROOT, stdout=subprocess.DEVNULL)
            if proc.returncode not in (0, 1):  # 1: some mutants survived
                raise SystemExit(f"mutation: mutmut run failed (exit {proc.returncode}); run it by hand to see why")
        status = mutmut_results()
        hits = notebook_hits()
        for mutant, state in sorted(status.items()):
            if state in KILLED:
                continue
            notebooks = sorted(hits.get(function_of(mutant), ()))
            caught = notebooks and notebooks_fail(notebooks, tree=MUTANTS, env={"MUTANT_UNDER_TEST": mutant})
            status[mutant] = f"killed by notebook {caught}" if caught else state
            print(f"{mutant}: {status[mutant]}", flush=True)
        survivors = sorted(m for m, s in status.items() if s not in KILLED and not s.startswith("killed by"))
        report |= {"mutants": len(status), "survivors": survivors, "status": status,
                   "score": 1 - len(survivors) / max(len(status), 1)}
        print(f"mutation score: {report['score']:.1%} ({len(status) - len(survivors)} of {len(status)} mutants "
              f"killed); {len(survivors)} survived:")
        print("\n".join(f"  {m}" for m in survivors))
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    missed = [what for what, caught in report["plants"].items() if not caught]
    return 1 if missed or report.get("score", 1) < 0.9 else 0


if __name__ == "__main__":
    sys.exit(main())
