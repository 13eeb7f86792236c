"""SGLang's default mem_fraction_static by release, as read in the released wheels
(docs/sglang-sources.md): each test builds server_args for one release's window and asserts what
that release's ``server_args.py`` computes."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from logmem.sglang import rules
from logmem.sglang.default_mfs import MfsEra, NoPrediction, Rule, default_mfs
from logmem.sglang.mfs_versions import FORMULA_FORMS, TABLE_FORMS, forms_for
from logmem.sglang.reserve import ReserveTerm
from logmem.units import MIB

H100 = 81559.0  # MiB, an 80 GB H100 (corpus 011)
H200 = 143771.0
B200 = 183359.0


def _args(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "tp_size": 1,
        "pp_size": 1,
        "chunked_prefill_size": 8192,
        "cuda_graph_max_bs": 256,
        "disable_cuda_graph": False,
        "enable_dp_attention": False,
        "speculative_algorithm": None,
    }
    base.update(kw)
    return base


def _reserve(args: dict[str, Any], on: date, cap: float = H100) -> float | None:
    return default_mfs(args, on, None, cap, mla=False).reserved_mib


def test_the_tp_term_is_a_float_in_every_release() -> None:
    """sglang 0.5.3 - 0.5.23 add ``tp_size * pp_size / 8 * 1024`` (server_args.py; memory_hook.py
    from 0.5.20): 128 MiB at tp 1, not 0 (reference 12.3 c inferred integer division from an
    H100 whose capacity it took as 81,080 MiB; at 81,559 MiB the float gives the dump's 0.83)."""
    e7 = _args(
        cuda_graph_max_bs=None,
        cuda_graph_config={
            "decode": {"backend": "full", "max_bs": 256, "bs": [1, 2]},
            "prefill": {"backend": "breakable", "max_bs": 8192, "bs": list(range(58))},
        },
        mem_fraction_static=0.83,
    )
    d = default_mfs(e7, date(2026, 8, 27), None, H100, mla=False)
    assert d.reserved_mib == 512 + 12288 + 128 + 512 + 464
    assert d.predicted == 0.83 and d.matches is True and d.era is MfsEra.C
    for on in (date(2025, 10, 20), date(2026, 2, 1), date(2026, 5, 1), date(2026, 10, 31)):
        r = _reserve(_args(tp_size=4), on)
        assert r is not None and r == 512 + 12288 + 512 + 512, on  # 4 / 8 x 1024


@pytest.mark.parametrize(
    "on,extra",
    [
        (date(2025, 10, 20), 2048),  # 0.5.3 - 0.5.9: EAGLE 2 GiB
        (date(2026, 2, 25), 2048),  # 0.5.9 is still the current release
        (date(2026, 5, 1), 4096),  # 0.5.10 - 0.5.13: 4 GiB
        (date(2026, 6, 30), 0),  # 0.5.14 on: none
        (date(2026, 10, 31), 0),
    ],
)
def test_speculative_extra_by_release(on: date, extra: int) -> None:
    plain = _reserve(_args(), on)
    spec = _reserve(_args(speculative_algorithm="EAGLE"), on)
    ngram = _reserve(_args(speculative_algorithm="NGRAM"), on)
    assert plain is not None and spec is not None
    assert spec - plain == extra and ngram == plain
    standalone = _reserve(_args(speculative_algorithm="STANDALONE"), on)
    assert standalone is not None and standalone - plain == (6144 if extra else 0)


def test_the_decode_term_is_counted_with_the_graph_disabled_until_0_5_14() -> None:
    """0.5.3 - 0.5.13 add ``cuda_graph_max_bs * 2`` unconditionally; 0.5.14 on only when the
    decode graph's backend is not DISABLED."""
    off = _args(disable_cuda_graph=True, cuda_graph_max_bs=512)
    # 512 x 2 = 1024 MiB on a 40 GB GPU (no floor): counted in Nov 2025, not in Aug 2026.
    assert _reserve(off, date(2025, 11, 1), 40000.0) == 512 + 12288 + 128 + 1024
    assert _reserve(off, date(2026, 8, 1), 40000.0) == 512 + 12288 + 128


def test_dp_attention_terms_do_not_need_the_decode_graph() -> None:
    """DP attention's ``max_bs x dp x 3`` is inside ``if enable_dp_attention`` only (0.5.3 -
    0.5.14), and in reserve_for_graph_mb gated on PD mode, not on the decode graph (0.5.16 on)."""
    args = _args(disable_cuda_graph=True, enable_dp_attention=True, dp_size=2, tp_size=8)
    terms = rules.graph_reserve(args, form=FORMULA_FORMS[-1])
    assert terms is not None
    assert [t.term for t in terms] == [ReserveTerm.DP_ATTENTION]
    assert terms[0].bytes == 256 * 2 * 3 * MIB


@pytest.mark.parametrize(
    "on,term,after_floor",
    [
        (date(2025, 11, 1), None, False),  # 0.5.3 - 0.5.5: no piecewise term
        (date(2025, 12, 10), 8192 // 4, True),  # 0.5.6: max tokens // 4, after the floor
        (date(2026, 1, 10), 8192 // 8, True),  # 0.5.7: // 8
        (date(2026, 2, 1), 3 * 8, False),  # 0.5.8 - 0.5.9: 3 sizes x 8, before the floor
    ],
)
def test_piecewise_term_by_release(on: date, term: int | None, after_floor: bool) -> None:
    pw = {
        "enable_piecewise_cuda_graph": True,
        "piecewise_cuda_graph_max_tokens": 8192,
        "piecewise_cuda_graph_tokens": [4, 8, 16],
    }
    base = _reserve(_args(), on)
    with_pw = _reserve(_args(**pw), on)
    assert base is not None and with_pw is not None
    # On an H100 the 10 GiB floor binds nothing here (13,184 MiB): a before-floor term adds too.
    assert with_pw - base == (term or 0)
    # Where the floor binds (a small chunk), only an after-floor term still adds its size.
    small = _args(chunked_prefill_size=2048, cuda_graph_max_bs=8)
    b2, p2 = _reserve(small, on), _reserve({**small, **pw}, on)
    assert b2 == 10240 and p2 is not None
    assert p2 - b2 == ((term or 0) if after_floor else 0)


def test_forms_for_a_date_put_the_current_release_first() -> None:
    got = forms_for(FORMULA_FORMS, date(2026, 3, 15))
    assert got[0].form.versions == "0.5.8-0.5.9"  # 0.5.10 is not released until 2026-04-05
    assert "0.5.10-0.5.13" in [f.form.versions for f in got]  # but a dev build may have it
    assert forms_for(FORMULA_FORMS, date(2025, 9, 1)) == ()
    assert forms_for(TABLE_FORMS, date(2024, 11, 25))[0].form.versions == "up to 0.3.6"


def test_0_3_6_gives_0_82_at_tp8() -> None:
    d = default_mfs({"tp_size": 8, "mem_fraction_static": 0.82}, date(2024, 11, 25), None, None)
    assert d.rule is Rule.TP_TABLE and d.predicted == 0.82 and d.matches is True
    assert d.form == "up to 0.3.6"
    later = default_mfs({"tp_size": 8, "mem_fraction_static": 0.81}, date(2025, 1, 5), None, None)
    assert later.predicted == 0.81 and later.form == "0.4.0-0.4.5"


def test_era_a_large_gpus_leave_the_table() -> None:
    """0.4.6: above 81,920 MiB ``(gpu_mem - 13 x 1024) / gpu_mem`` (unrounded); 0.4.6.post5:
    0.88 then min(m + 48 GiB (1 - m) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem) over 96 GiB;
    0.4.7: 0.79 on CUDA GPUs over 180,000 MiB (srt/server_args.py, __post_init__)."""
    v046 = (H200 - 13312) / H200
    d = default_mfs({"tp_size": 8, "mem_fraction_static": v046}, date(2025, 5, 1), None, H200)
    assert d.rule is Rule.LARGE_GPU and d.matches is True and d.form == "0.4.6"
    v_post5 = (H200 - 18432) / H200
    d = default_mfs({"tp_size": 8, "mem_fraction_static": v_post5}, date(2025, 6, 1), None, H200)
    assert d.rule is Rule.LARGE_GPU and d.matches is True and d.form == "0.4.6.post5"
    d = default_mfs({"tp_size": 8, "mem_fraction_static": 0.79}, date(2025, 6, 5), None, B200)
    assert d.matches is True and d.form == "0.4.7"
    # Over 180,000 MiB on ROCm (MI300X) 0.4.7 keeps the 96 GiB rule: the log does not say which.
    mi300 = 196592.0
    v = min(0.88 + 48 * 1024 * 0.12 / mi300, (mi300 - 18432) / mi300)
    d = default_mfs({"tp_size": 8, "mem_fraction_static": v}, date(2025, 6, 10), None, mi300)
    assert d.rule is Rule.LARGE_GPU and d.matches is True and d.form == "0.4.7"
    # The table's own value on an H200 in May 2025 is not the rule: 0.81 is contradicted.
    d = default_mfs({"tp_size": 8, "mem_fraction_static": 0.81}, date(2025, 5, 30), None, H200)
    assert d.matches is True and d.form == "0.4.0-0.4.5"  # an older image's table gives it
    d = default_mfs({"tp_size": 8, "mem_fraction_static": 0.86}, date(2025, 5, 30), None, H200)
    assert d.matches is False and d.rule is Rule.LARGE_GPU


def test_era_a_without_capacity_on_a_large_gpu_claims_no_table() -> None:
    """Free memory before loading above 81,920 MiB: the GPU is larger, so from 0.4.6 the table
    is not the rule and an unprinted capacity leaves the value unknown, not 'passed'."""
    args = {"tp_size": 8, "mem_fraction_static": 0.8718}
    d = default_mfs(args, date(2025, 6, 1), None, None, free_mib=139000.0)
    assert d.predicted is None and d.no_prediction is NoPrediction.NO_CAPACITY
    assert d.matches is None
    # Before 0.4.6 the table held on every GPU: there a different value was passed.
    old = default_mfs(args, date(2025, 3, 1), None, None, free_mib=139000.0)
    assert old.rule is Rule.TP_TABLE and old.predicted == 0.81 and old.matches is False


def test_the_tier_rule_is_tried_from_0_4_8() -> None:
    """0.4.8 (2025-06-24) replaced the table by the GPU-tier reserve: a log printed after 0.4.7
    (2025-06-10) may run it. 011's TP8 H100 arithmetic on a log of 2025-06-26."""
    args = {"tp_size": 8, "pp_size": 1, "mem_fraction_static": 0.831}
    d = default_mfs(args, date(2025, 6, 26), None, H100)
    assert d.rule is Rule.GPU_TIER and d.matches is True and d.form == "0.4.8-0.5.2"
    assert default_mfs(args, date(2025, 6, 5), None, H100).rule is Rule.TP_TABLE


def test_the_printed_request_count_and_the_padding_row_by_release() -> None:
    """0.3.6 - 0.4.6.post5 build ReqToTokenPool(size=max_num_reqs + 1) and print that size
    (snippet 18.1, 0.4.3.post4: max_running_requests=2049 is 2048 + 1 rows); 0.4.7 - 0.5.10 have
    no padding row; 0.5.13 on allocate size + 1 (srt/mem_cache/memory_pool.py)."""
    assert rules.req_to_token_padding_row(date(2025, 3, 8), passed=False) is False
    assert rules.req_to_token_padding_row(date(2025, 3, 8), passed=True) is True
    assert rules.req_to_token_padding_row(date(2025, 9, 11), passed=False) is False
    assert rules.req_to_token_padding_row(date(2026, 4, 14), passed=False) is False
    assert rules.req_to_token_padding_row(date(2026, 8, 27), passed=False) is True
    assert rules.req_to_token_padding_row(None, passed=False) is True
    assert rules.req_to_token_bytes(2049, 131072, padding_row=False) == 2049 * (131072 + 4) * 4


def test_corpus_001_table_is_the_printed_2049_rows() -> None:
    from conftest import corpus_log
    from logmem import api
    from logmem.analysis.sizing import req_to_token

    launch = api.read_log(str(corpus_log("001-")), require_startup=False).launches[0]
    assert req_to_token(launch) == (2049, 131072, 2049 * (131072 + 4) * 4)


def test_the_formula_is_not_tried_before_any_build_had_it() -> None:
    """The reserve formula is first in 0.5.3 (2025-10-06); no build before 0.5.2 (2025-09-11) has
    it, so a log of 2025-08 whose dump the formula would fit is not claimed as derived by it."""
    args = _args(mem_fraction_static=0.835)  # 512 + 12288 + 512 + 128 = 13,440 MiB on an H100
    late = default_mfs(args, date(2025, 9, 20), None, H100, mla=False)
    assert late.rule is Rule.RESERVE and late.matches is True and late.form == "0.5.3-0.5.5"
    early = default_mfs(args, date(2025, 8, 1), None, H100, mla=False)
    assert early.rule is Rule.UNKNOWN and early.predicted is None
