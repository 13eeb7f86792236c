"""Reading: bytes -> records (read, lines) -> typed events (patterns, events)."""
