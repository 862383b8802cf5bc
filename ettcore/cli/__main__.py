"""``python -m ettcore.cli``: the ``ett`` command."""

import sys

from ettcore.cli import main

sys.exit(main())
