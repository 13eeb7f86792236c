"""Reporters of ``logmem estimate`` and of ``analyze --model-config``'s cross-check."""
