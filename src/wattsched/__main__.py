"""``python -m wattsched`` runs the ``wattsched`` command."""

import sys

from wattsched.cli import main

sys.exit(main())
