"""PyTorch memory snapshots: safe loading, per-device summary, trace replay, join with a log.

load -> model -> summary / trace -> join -> analysis; reports live in logmem.report.snapshot.render.
"""
