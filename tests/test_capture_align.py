"""The sizes SGLang's decode runner drops from its capture list (logmem.sglang.capture_align):
two-batch overlap and the attention-TP / CP alignment, each checked on a server_args combination
SGLang's docs and issues launch (DeepSeek-V3/R1 with DeepEP, DP attention, TBO, EAGLE), against
``get_batch_sizes_to_capture`` of the release named."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from logmem.sglang.capture_lists import GpuFacts, ListContext, largest_at_max_bs, largest_from_count

H200 = GpuFacts(capacity_mib=143_771)  # over 90 GiB: the old list's 168-256 part
H100 = GpuFacts(capacity_mib=81_559)


def _ctx(month: tuple[int, int], pool: int | None, **args: Any) -> ListContext:
    base: dict[str, Any] = {
        "tp_size": 8,
        "dp_size": 1,
        "enable_dp_attention": False,
        "moe_a2a_backend": "none",
        "moe_dense_tp_size": None,
        "enable_dp_lm_head": False,
        "enable_two_batch_overlap": False,
        "speculative_algorithm": None,
        "disable_cuda_graph_padding": False,
        "cuda_graph_max_bs": None,
        "cuda_graph_bs": None,
    }
    base.update(args)
    return replace(ListContext.from_args(base, pool), month=month)


def test_deepep_without_dp_attention_keeps_multiples_of_tp() -> None:
    """DeepSeek-V3 on 8 x H200, sglang 0.5.2 (Sep 2025), ``--tp 8 --moe-a2a-backend deepep``:
    the attention input is scattered (require_attn_tp_gather), so ``mul_base = attn_tp_size = 8``
    and the runner keeps bs 8, 16, ..., 256 of [1, 2, 4, 8, 16, ..., 256]."""
    ctx = _ctx((2025, 9), 2048, moe_a2a_backend="deepep")
    # 20 buckets: the 20th multiple of 8 (the unfiltered list's 20th entry is 136).
    assert largest_from_count(20, "bs", ctx) == (160, "SGLang's Jun-Sep 2025 list")
    top = largest_at_max_bs(100, ctx, H200)
    assert top is not None and top.sizes == (96,)
    assert top.lists == (tuple(range(8, 97, 8)),)  # the extension in steps of 16 adds none
    assert [f.step for f in top.filters] == [8]
    # Without DeepEP (plain TP 8) nothing is dropped.
    plain = largest_at_max_bs(100, _ctx((2025, 9), 2048), H200)
    assert plain is not None and plain.lists[0][:4] == (1, 2, 4, 8) and not plain.filters


def test_two_batch_overlap_keeps_even_sizes() -> None:
    """DeepSeek-V3, ``--tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend deepep
    --enable-two-batch-overlap --cuda-graph-max-bs 128`` on sglang 0.5.1 (Aug 2025): attention
    TP is 1, so TBO's factor 2 alone: [2, 4, 8, 16, ..., 128], 18 buckets."""
    ctx = _ctx(
        (2025, 8),
        2048,
        dp_size=8,
        enable_dp_attention=True,
        moe_a2a_backend="deepep",
        enable_two_batch_overlap=True,
        cuda_graph_max_bs=128,
    )
    assert largest_from_count(18, "bs", ctx) == (128, "SGLang's Jun-Sep 2025 list")
    assert largest_from_count(19, "bs", ctx) is None  # 19 would need bs 1
    # 0.4.7 - 0.4.8 (Jun 2025) kept bs >= 2 instead (0.4.9 on: even): at max bs 7 the list
    # [2, 4] is extended from 4 in steps of 16, so both give 4.
    jun = replace(ctx, month=(2025, 6), max_bs=7)
    top = largest_at_max_bs(7, jun, H100)
    assert top is not None and top.sizes == (4,)


def test_dp_attention_below_tp_keeps_multiples_of_attention_tp_and_pads_the_pool() -> None:
    """DeepSeek-R1 on 2 x 8 H100, ``--tp 16 --dp 4 --enable-dp-attention --max-running-requests
    30``: attention TP 4, the MLP input all-gathered (moe_dense_tp_size unset), mul_base 4. Up to
    0.5.9 the pool size 30 is added and then dropped (not a multiple of 4): top 24; from 0.5.10
    the pool is padded up to 32 first, so 32 is captured, above max_running_requests."""
    dumped = [1, 2, 4, 8, 12, *range(16, 161, 8)]
    args = {
        "tp_size": 16,
        "dp_size": 4,
        "enable_dp_attention": True,
        "cuda_graph_max_bs": 160,
        "cuda_graph_bs": dumped,
    }
    nov = _ctx((2025, 11), 30, **args)  # 0.5.5
    assert largest_from_count(5, "bs", nov) == (24, "the dump's cuda_graph_bs")
    may = _ctx((2026, 5), 30, **args)  # 0.5.10 - 0.5.13
    assert largest_from_count(6, "bs", may) == (32, "the dump's cuda_graph_bs")
    top = largest_at_max_bs(160, may, H100)
    assert top is not None and top.sizes == (32,) and top.lists == ((4, 8, 12, 16, 24, 32),)


def test_a_verify_graph_counts_its_draft_tokens_from_0_5_8() -> None:
    """EAGLE with 4 draft tokens on ``--tp 8 --dp 2 --enable-dp-attention`` (attention TP 4):
    from 0.5.8 the target-verify graph keeps bs with ``bs x 4 % 4 == 0`` (all of them); 0.5.6
    (Dec 2025) keeps multiples of 4. The draft graphs never count draft tokens."""
    args = {
        "dp_size": 2,
        "enable_dp_attention": True,
        "speculative_algorithm": "EAGLE",
        "speculative_num_draft_tokens": 4,
        "cuda_graph_max_bs": 16,
    }
    spec = [*range(1, 9), *range(10, 17, 2)]  # the speculative list up to 16: 12 sizes
    new = replace(_ctx((2026, 3), 2048, **args), verify_graph=True)
    assert largest_from_count(len(spec), "bs", new) == (
        16,
        "SGLang's speculative list since Oct 2025",
    )
    old = replace(_ctx((2025, 12), 2048, **args), verify_graph=True)
    assert largest_from_count(len(spec), "bs", old) is None  # 0.5.6 keeps only 4, 8, 12, 16
    assert largest_from_count(4, "bs", old) == (16, "SGLang's speculative list since Oct 2025")
    draft = replace(new, verify_graph=False)
    assert largest_from_count(4, "bs", draft) == (16, "SGLang's speculative list since Oct 2025")


def test_a_logged_list_the_filter_contradicts_wins() -> None:
    """A launch that logged bs 1, 2, 4 under DeepEP with TP 8 ran a build without the filter
    (or the dump is not what ran): the filter is not applied to its whatif. sglang 0.5.2 at max
    bs 100: [1, 2, 4, 8, 16, ..., 96], extended from 96 in steps of 16 (none added)."""
    ctx = replace(_ctx((2025, 9), 2048, moe_a2a_backend="deepep"), logged=(1, 2, 4, 8, 16))
    top = largest_at_max_bs(100, ctx, H200)
    assert top is not None and top.sizes == (96,) and not top.filters
    assert top.lists[0][:3] == (1, 2, 4)


def test_a_dump_that_cannot_tell_the_filter_applies_none() -> None:
    """DP attention printed without tp_size (a trimmed dump): the alignment is unknown, and the
    list is read unfiltered, as with no dump at all."""
    ctx = replace(
        ListContext.from_args({"enable_dp_attention": True, "dp_size": 4}, 2048), month=(2025, 9)
    )
    assert ctx.align is None
    assert largest_from_count(20, "bs", ctx) == (136, "SGLang's Jun-Sep 2025 list")


def test_whatif_says_what_the_runner_drops() -> None:
    """whatif's sentence on the new top names the alignment and its parts, and a pool padded
    up to it (0.5.10 on) as what caps the list."""
    import logmem.report.compare.whatif_words  # noqa: F401  (registers the sentences)
    from logmem.compare import whatif_facts as wf
    from logmem.report.compare.notes import note_text

    ctx = _ctx((2025, 9), 2048, moe_a2a_backend="deepep")
    top = largest_at_max_bs(100, ctx, H200)
    assert top is not None
    text = note_text(wf.ListTopAt(100, top, 64, 70))
    assert "becomes 96" in text
    assert "SGLang's decode runner keeps only the multiples of 8 (attention TP 8) of it" in text
    padded = _ctx(
        (2026, 5), 30, tp_size=16, dp_size=4, enable_dp_attention=True, cuda_graph_max_bs=160
    )
    top = largest_at_max_bs(160, padded, H100)
    assert top is not None and top.sizes == (32,)
    text = note_text(wf.ListTopAt(160, top, 24, 70))
    assert (
        "the request pool (max_running_requests 30, line 70), which the runner pads up to a "
        "multiple of 4 (32), caps it there." in text
    )


def test_a_default_max_bs_lowered_to_max_running_requests_is_said(tmp_path: Any) -> None:
    """sglang 0.5.22 on (srt/arg_groups/memory_hook.py): ``--max-running-requests 256`` with no
    max bs lowers the H100's default decode max bs (512 at TP >= 4; here the dump's 256) to 256.
    pair-e7-maxbs256 moved to Nov 2026 with max_running_requests 256: whatif at max bs 512 says
    so; in Sep 2026 (0.5.20) no clamp existed and nothing is said."""
    import json

    from click.testing import CliRunner

    from conftest import FIXTURES
    from logmem.cli.main import cli
    from logmem.sglang.decode_max_bs import clamped_to_requests

    text = (FIXTURES / "pair-e7-maxbs256-constructed.log").read_text()
    text = text.replace("'max_running_requests': None", "'max_running_requests': 256")
    text = text.replace("max_running_requests=3199", "max_running_requests=256")
    for when, said in (("2026-09-", False), ("2026-11-", True)):
        log = tmp_path / f"{when}log"
        log.write_text(text.replace("2026-09-", when))
        r = CliRunner().invoke(
            cli, ["whatif", str(log), "--cuda-graph-max-bs", "512", "-f", "json"]
        )
        assert r.exit_code == 0, r.output
        notes = " ".join(json.loads(r.output)["notes"])
        assert ("is its --max-running-requests: SGLang 0.5.22 - 0.5.23 lowers" in notes) is said
    args = {"max_running_requests": 256, "cuda_graph_config": {"decode": {"max_bs": 256}}}
    assert clamped_to_requests(args, (2026, 11)) is not None
    assert clamped_to_requests({**args, "cuda_graph_max_bs_decode": 256}, (2026, 11)) is None
    c = clamped_to_requests(args, (2026, 10))  # 0.5.21 (10-01) and 0.5.22 (10-15)
    assert c is not None and not c.certain


def test_a_month_between_forms_gives_both_tops_and_says_why() -> None:
    """Mar 2026 falls between 0.5.9 (no pool padding) and 0.5.10 (padding): at
    max_running_requests 30 and attention TP 4 the top is 24 or 32, and whatif says it is the
    padding the date leaves open. Jul 2025 (0.4.9 / 0.4.10) at max bs 4: the aligned form keeps no
    size (SGLang would fail), so only the unfiltered list is priced and no filter is named."""
    import logmem.report.compare.whatif_words  # noqa: F401  (registers the sentences)
    from logmem.compare import whatif_facts as wf
    from logmem.report.compare.notes import note_text

    mar = _ctx(
        (2026, 3), 30, tp_size=16, dp_size=4, enable_dp_attention=True, cuda_graph_max_bs=160
    )
    top = largest_at_max_bs(160, mar, H100)
    assert top is not None and top.sizes == (24, 32) and top.why == "date"
    text = note_text(wf.ListTopAt(160, top, 24, 70))
    assert "nor whether the decode runner pads the request pool up to a multiple of 4" in text
    jul = largest_at_max_bs(4, _ctx((2025, 7), 2048, moe_a2a_backend="deepep"), H100)
    assert jul is not None and jul.sizes == (4,) and jul.filters == ()
