"""``python -m cns_core.cli`` is the ``cns`` command (how ``cns run`` starts its children)."""

import sys

from cns_core.cli import main

sys.exit(main())
