"""Comparing launches: server_args, per-phase diff, the slope fit and what-if."""
