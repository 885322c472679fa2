"""``python -m spt_theory.figures``."""

import sys

from spt_theory.figures.cli import main

sys.exit(main())
