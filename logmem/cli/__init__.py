"""The command line: ``main.py`` holds the `logmem` group, ``options.py`` the shared
options, and one module per subcommand parses its options, calls one function of
``logmem.api`` and hands the result to a reporter."""
