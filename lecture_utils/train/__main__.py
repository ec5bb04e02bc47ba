"""``python -m lecture_utils.train ...`` (see lecture_utils/train/cli.py)."""

import sys

from lecture_utils.console import leave_on_signals

with leave_on_signals("python -m lecture_utils.train"):
    from lecture_utils.train.cli import main  # torch loads here

sys.exit(main())
