"""Reporters of ``logmem snapshot``: the JSON view model, text, Markdown and HTML with figures."""
