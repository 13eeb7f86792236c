"""Reporters of ``logmem diff``, ``fit`` and ``whatif``: view models, one layout, and text, Markdown, HTML and JSON."""
