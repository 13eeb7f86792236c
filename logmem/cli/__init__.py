"""The command line: ``main.py`` holds the `logmem` group, ``options.py`` the shared
options, and one module per subcommand parses its options, calls one function of
``logmem.api`` and hands the result to a reporter."""

# The cycle collector's thresholds while the CLI runs (logmem.__main__ sets them before the
# first import, logmem.cli.main.main around each run). A report holds hundreds of thousands of
# small objects (events, ledgers, the JSON tree) and next to no reference cycles: with the
# default thresholds the collector's full passes took a third of the time of a 8192-rank
# analyze, and its young passes during the imports 3 ms of a small log's 160 ms.
GC_THRESHOLDS = (50_000, 50, 50)
