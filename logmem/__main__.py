"""`python -m logmem` and the `logmem` command: run the command-line interface."""

from __future__ import annotations

import sys


def run() -> int:
    """The console entry point: main()'s exit codes, and 130 for a Ctrl-C while importing.

    The import is here, not at module level, because importing the package is the first
    tenth of a second of every run: a Ctrl-C then must end like one during the run
    ("Interrupted.", exit 130), not with a traceback from the import machinery."""
    import gc

    try:
        from logmem.cli import GC_THRESHOLDS, early

        # Set before the imports too: they make enough objects for ~20 young collections.
        gc.set_threshold(*GC_THRESHOLDS)

        early.start(sys.argv[1:])  # a big input's reader starts before the CLI is imported
        from logmem.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
