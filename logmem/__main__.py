"""`python -m logmem` runs the command-line interface."""

import sys

from logmem.cli.main import main

sys.exit(main())
