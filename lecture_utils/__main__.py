import sys

from lecture_utils.cli import main

sys.exit(main())
