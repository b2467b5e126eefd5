"""``python -m moe_oracle.cli``: the same command line as ``moe-oracle``."""

import sys

from . import main

sys.exit(main())
