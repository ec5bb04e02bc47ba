#!/usr/bin/env bash
# Rewrite constraints.txt from the current .venv (after an upgrade), then run
# `make regen` and `make test`, and update environment.yml's pins to match
# (tests/test_environment.py fails until they agree).
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Exact versions that recorded the golden notebook outputs (Python 3.11, CPU)."
  echo "# Install with: pip install -c constraints.txt -e \".[dev]\"   (make setup does this)."
  echo "# Regenerate after an upgrade with: scripts/freeze_constraints.sh, then make regen."
  # Local version labels (+cpu) are dropped so the same pin works on Mac, Linux and CUDA.
  .venv/bin/pip freeze --exclude-editable | sed 's/+[a-z0-9.]*$//' | grep -v '^pytorch-resource-accounting'
} > constraints.txt
