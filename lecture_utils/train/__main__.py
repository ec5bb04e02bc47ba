"""``python -m lecture_utils.train ...`` (see lecture_utils/train/cli.py)."""

import sys

from lecture_utils.train.cli import main

sys.exit(main())
