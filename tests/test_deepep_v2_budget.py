"""DeepEP v2's decode-graph token budget (logmem.sglang.deepep_v2_budget): sglang 0.5.20 - 0.5.23
refuse to start when the largest decode graph's tokens per rank exceed
SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK (128 by default). A refusal, not a filter."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli
from logmem.sglang.deepep_v2_budget import v2_refusal


def test_the_budget_counts_requests_per_dp_rank_and_draft_tokens() -> None:
    # DeepSeek-V4 (EPv2's validated model), --tp 8 --moe-a2a-backend deepep_v2: 256 > 128.
    tp8 = {"moe_a2a_backend": "deepep_v2", "tp_size": 8, "max_running_requests": None}
    r = v2_refusal(tp8, 256)
    assert r is not None and (r.requests, r.tokens, r.max_bs_that_fits) == (256, 256, 128)
    assert v2_refusal(tp8, 128) is None
    # --dp 8 --enable-dp-attention --max-running-requests 1024: 128 requests per DP rank.
    dpa = {**tp8, "dp_size": 8, "enable_dp_attention": True, "max_running_requests": 1024}
    assert v2_refusal(dpa, 256) is None
    # EAGLE with 4 draft tokens: 64 requests x 4 = 256 tokens.
    spec = {**tp8, "speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4}
    r = v2_refusal(spec, 64)
    assert r is not None and r.tokens == 256 and r.max_bs_that_fits == 32
    assert v2_refusal({**tp8, "moe_a2a_backend": "deepep"}, 256) is None  # v1: no such check
    assert v2_refusal({**tp8, "disaggregation_mode": "prefill"}, 256) is None
    assert v2_refusal(tp8, 256, capacity=512) is None


def test_whatif_says_start_up_would_stop(tmp_path: Path) -> None:
    """The DeepEP TP 8 fixture run with --moe-a2a-backend deepep_v2: whatif at max bs 256 names
    the refusal and the two ways out; at 128 it says nothing of it."""
    text = (FIXTURES / "deepep-ll-decode-explicit-mfs-constructed.log").read_text()
    log = tmp_path / "v2.log"
    log.write_text(text.replace("moe_a2a_backend='deepep'", "moe_a2a_backend='deepep_v2'"))
    for bs, said in (("256", True), ("128", False)):
        r = CliRunner().invoke(cli, ["whatif", str(log), "--cuda-graph-max-bs", bs, "-f", "json"])
        assert r.exit_code == 0, r.output
        notes = " ".join(json.loads(r.output)["notes"])
        assert ("refuses to start (validate_deepep_v2_dispatch_token_budget)" in notes) is said
        if said:
            assert "256 tokens (one per request) per rank" in notes
            assert "Raise it to 256 or more, or keep max bs at 128 or less" in notes
