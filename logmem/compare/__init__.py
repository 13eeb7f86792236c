"""Comparison stage: launches -> Diff (what changed), Fit (graph memory per row) and WhatIf.

load (which launch of which input), args (server_args across launches), points (what one
capture measured), slope (straight lines over max bs, and ``logmem fit``), diff, replay
(SGLang's KV rule on one launch's readings) and whatif. Reports live in logmem/report.
"""
