"""``python -m moe_oracle``: the ``moe-oracle`` command line."""

import sys

from .cli import main

sys.exit(main())
