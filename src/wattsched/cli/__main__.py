import sys

from wattsched.cli import main

sys.exit(main())
