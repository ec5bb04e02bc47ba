"""How heavy `make test` is, in import-times: its wall time over the time `import torch, numpy,
matplotlib.pyplot` takes in a fresh Python during the same run (the median of samples taken while it
runs), so that a faster or a busier machine scales both alike. Target: docs/gpu/reference.md,
`make-test-import-times` (35). Run it warm (after one `make test`), by hand: it runs the suite.

    python benchmarks/make_test.py [--samples 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _targets import report

ROOT = Path(__file__).resolve().parents[1]
IMPORT = [sys.executable, "-c", "import torch, numpy, matplotlib.pyplot"]


def import_seconds() -> float:
    start = time.perf_counter()
    subprocess.run(IMPORT, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5, help="import timings taken during the run")
    args = parser.parse_args()
    if args.samples < 1:
        parser.error(f"--samples must be >= 1, got {args.samples}")
    start = time.perf_counter()
    suite = subprocess.Popen(["make", "-s", "test"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    samples = []
    while suite.poll() is None and len(samples) < args.samples:
        samples.append(import_seconds())
        time.sleep(5)
    output = suite.communicate()[0]
    wall = time.perf_counter() - start
    samples = samples or [import_seconds()]
    summary = next((line for line in reversed(output.splitlines()) if " passed" in line or " failed" in line), "")
    print(f"make test: {wall:.0f} s ({summary.strip('= ')}), exit {suite.returncode}; import torch, numpy, "
          f"matplotlib.pyplot during it: {statistics.median(samples):.2f} s (median of {len(samples)})")
    ok = report("make-test-import-times", wall / statistics.median(samples), "cpu",
                f" import-times ({wall:.0f} s / {statistics.median(samples):.2f} s)")
    return 0 if ok and suite.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
