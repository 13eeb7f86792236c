"""A reviewer's four CUDA-graph findings: the flag that shrinks an explicit capture list (B3),
target-verify graphs sized bs x draft tokens (B4), launches with CUDA graphs off (A10), and a
bar reading against the end line read as a per-bucket cost (A7)."""

from __future__ import annotations

import json
from typing import Any

from conftest import corpus_log
from logmem.api import analyze
from logmem.report import jsonout, text


def _text(prefix: str) -> str:
    return text.render(analyze(str(corpus_log(prefix))))


def _json(prefix: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(jsonout.render(analyze(str(corpus_log(prefix)))))
    return doc


def _buckets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b for r in doc["launches"][0]["ranks"] for p in r["phases"] for b in p.get("buckets", [])
    ]


# --- A7: the last bar reading against the end line is not a per-bucket cost -----------------


def test_last_bar_to_end_line_is_not_a_bucket_cost() -> None:
    # 016: bs=[1, 2]; the one bar (bs=1, 72.47) and the end line (72.65, after empty_cache).
    text = _text("016-")
    assert "rose between" not in text  # the cache the end line released is not a bucket rising
    assert "bucket bs 1 to the end line (not a per-bucket cost)" in text
    (b,) = _buckets(_json("016-"))
    assert b["cost_gib"] is None and b["to_end_line_gib"] == -0.18


def test_bar_to_bar_costs_stay() -> None:
    # 019's decode buckets: every bar but the last is costed against the next bar.
    bs = [b for b in _buckets(_json("019-")) if b["line"] in (1002, 1035, 1044)]
    assert [b["cost_gib"] for b in bs] == [8.63, 0.02, None]
    assert bs[-1]["to_end_line_gib"] == 0.01
    assert bs[0]["to_end_line_gib"] is None


# --- A10: CUDA graphs off by server_args ------------------------------------------------------


def test_graphs_off_is_said_plainly() -> None:
    for prefix in ("005-", "006-"):
        text = _text(prefix)
        assert "CUDA graphs are off (disable_cuda_graph=True in server_args, line 8)" in text
        assert "no capture phase and no graph memory" in text
        # Nothing offers smaller graph sizes for a launch that captures none.
        assert "--cuda-graph-max-bs" not in text and "--cuda-graph-bs" not in text
        doc = _json(prefix)
        assert any("CUDA graphs are off" in f for f in doc["launches"][0]["findings"])


def test_graphs_on_says_nothing_of_it() -> None:
    assert "CUDA graphs are off" not in _text("019-")
