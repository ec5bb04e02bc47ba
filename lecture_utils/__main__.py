"""``python -m lecture_utils estimate|memory|gpus`` (see lecture_utils/cli.py)."""

import sys

from lecture_utils.console import leave_on_signals

with leave_on_signals("python -m lecture_utils"):
    from lecture_utils.cli import main  # torch loads here

sys.exit(main())
