"""The default-mfs rule by era and the rank-coverage labels of the KV-sizing table."""

from __future__ import annotations

from datetime import date

from conftest import corpus_log
from logmem import api
from logmem.analysis.attribution import build_ledger
from logmem.report.mfs_words import coverage_text
from logmem.sglang.default_mfs import MfsEra, Rule, default_mfs


def _led(name: str):  # type: ignore[no-untyped-def]
    a = api.read_log(str(corpus_log(name + "-")), require_startup=False)
    return build_ledger(a.launches[0])


def test_era_a_table_no_reserve() -> None:
    led = _led("001")  # 2025-03, TP4, dump 0.85
    d = led.default_mfs
    assert d is not None and d.rule is Rule.TP_TABLE and d.era is MfsEra.A
    assert d.predicted == 0.85 and d.matches is True
    assert led.reserve is None


def test_explicit_mfs_no_reserve() -> None:
    led = _led("019")  # --mem-fraction-static 0.71 on the command line
    assert led.default_mfs is not None and led.default_mfs.rule is Rule.PASSED
    assert led.reserve is None


def test_tp0_only_label() -> None:
    led = _led("011")  # E3 rank filter: only TP0 prints P, of 8 ranks
    assert led.sizing is not None
    assert coverage_text(led.sizing.pre_load_coverage) == "TP0 only, of 8 ranks"


def test_all_ranks_label() -> None:
    led = _led("001")
    assert led.sizing is not None
    assert coverage_text(led.sizing.pre_load_coverage) == "min over 4 ranks"


def test_partial_ranks_label() -> None:
    from logmem.analysis.sizing import RankCoverage

    assert coverage_text(RankCoverage(3, 4)) == "min over 3 of 4 ranks"
    assert coverage_text(RankCoverage(3, None)) == "min over the 3 ranks that printed it"


def test_era_b_formula_matches_reference_validation() -> None:
    # Reference 12.3 (b): GLM-5-FP8 on MI355X, TP8, 294,891 MiB, chunk 16384, max_bs 512.
    args = {
        "mem_fraction_static": 0.908,
        "tp_size": 8,
        "pp_size": 1,
        "chunked_prefill_size": 16384,
        "cuda_graph_max_bs": 512,
        "disable_cuda_graph": False,
        "enable_dp_attention": False,
        "speculative_algorithm": None,
    }
    d = default_mfs(args, date(2026, 2, 26), None, 294891.0)
    assert d.rule is Rule.RESERVE and d.era is MfsEra.B
    assert d.reserved_mib == 27136 and d.predicted == 0.908 and d.matches is True


def test_era_c_and_unknown() -> None:
    d = default_mfs({"mem_fraction_static": 0.85, "tp_size": 1}, date(2026, 8, 1), None, None)
    assert d.rule is Rule.RESERVE and d.era is MfsEra.C and d.predicted is None
    u = default_mfs({"mem_fraction_static": 0.85, "tp_size": 1}, None, None, None)
    assert u.rule is Rule.UNKNOWN and u.era is MfsEra.UNKNOWN


def test_an_unconfirmed_reserve_formula_claims_no_reserve() -> None:
    """023 (Mar 2026, era c) dumps mfs 0.65 and prints no device capacity: the formula's value
    cannot be computed, so a derived value and a passed one look the same; the report sets no
    graph reserve against the captures (review24 #2)."""
    from click.testing import CliRunner

    from logmem.cli.main import cli

    led = _led("023")
    d = led.default_mfs
    assert d is not None and d.rule is Rule.RESERVE and d.matches is None
    assert not d.reserve_applies and led.reserve is None
    path = corpus_log("023-")
    out = CliRunner().invoke(cli, ["analyze", str(path)], catch_exceptions=False).output
    flat = " ".join(out.split())
    assert "graph reserve" not in flat and "no reserve assumed" in flat
    # A prediction that contradicts the dump is no reserve either.
    args = {
        "mem_fraction_static": 0.85,
        "tp_size": 1,
        "pp_size": 1,
        "chunked_prefill_size": 8192,
        "cuda_graph_max_bs": 8,
    }
    wrong = default_mfs(args, date(2026, 3, 1), None, 124546.0)
    assert wrong.matches is False and not wrong.reserve_applies


# --- review24 #2 (b)-(e) -------------------------------------------------------------------


def _grok_011_args() -> dict[str, object]:
    a = api.read_log(str(corpus_log("011-")), require_startup=False)
    return dict(a.launches[0].args)


def test_gpu_tier_rule_matches_011_arithmetic() -> None:
    """011 (2025-09-11, v0.5.2rc2, TP8) dumps 0.831: the Aug-Oct 2025 GPU-tier rule on an 80 GB
    H100 (81,559 MiB) reserves (9.5 + 8/2) x 1024 = 13,824 MiB and gives 0.8305 -> 0.831."""
    from logmem.sglang.default_mfs import tier_reserved_mib

    args = _grok_011_args()
    assert tier_reserved_mib(args, 81559.0) == 13824
    d = default_mfs(args, date(2025, 9, 11), None, 81559.0)
    assert d.rule is Rule.GPU_TIER and d.era is MfsEra.TIER and d.era_from == "dump"
    assert d.predicted == 0.831 and d.matches is True and not d.reserve_applies
    # Another capacity: no match, so no claim (the era stays unknown).
    other = default_mfs(args, date(2025, 9, 11), None, 97000.0 + 2000)
    assert other.rule is Rule.UNKNOWN and other.tier_mfs is not None
    # The tiers, speculative and DP-attention extras (sglang 0.4.8 - 0.5.2, srt/server_args.py,
    # __post_init__).
    assert tier_reserved_mib({"tp_size": 1}, 16000.0) == (2.8 + 0.1) * 1024
    assert tier_reserved_mib({"tp_size": 2, "pp_size": 2}, 95000.0) == (12 + 2) * 1024
    assert tier_reserved_mib({"tp_size": 8}, 200000.0) == 32 * 1024
    dp = {"tp_size": 8, "enable_dp_attention": True, "speculative_algorithm": "EAGLE"}
    assert tier_reserved_mib(dp, 81559.0) == 13824 + 4096 + 2048
    # Any algorithm adds 2 GiB (`if self.speculative_algorithm is not None`), STANDALONE 6 GiB
    # in 0.5.2: NGRAM is not exempt in this rule (it is in the 0.5.3 formula).
    assert tier_reserved_mib({"tp_size": 1, "speculative_algorithm": "NGRAM"}, 16000.0) == (
        2.9 * 1024 + 2048
    )
    assert tier_reserved_mib({"tp_size": 1, "speculative_algorithm": "STANDALONE"}, 16000.0) == (
        2.9 * 1024 + 6144
    )


def test_without_capacity_the_windows_are_named_but_nothing_claimed() -> None:
    """011's settings with no device capacity: the row stays unknown and says on which GPU
    sizes (above TP0's 77.43 GiB free before loading) the tier rule would give 0.831."""
    from logmem.report.mfs_words import default_mfs_text

    d = default_mfs(_grok_011_args(), date(2025, 9, 11), None, None, free_mib=77.43 * 1024)
    assert d.rule is Rule.UNKNOWN and d.capacity_mib is None
    assert d.tier_windows is not None and (81558, 82041) in d.tier_windows
    assert all(a >= 77.43 * 1024 for a, _ in d.tier_windows)  # none below P
    value, source = default_mfs_text(d)
    assert value == "unknown"
    assert "GPU-tier reserve rule of sglang 0.4.8-0.5.2 (Jun-Oct 2025)" in source
    assert "81,558-82,041" in source and "unconfirmed" in source


def test_011_takes_gpu_mem_from_the_gpu_it_names_and_says_so() -> None:
    """011 prints no device total, but its kernel-config lines name NVIDIA_H100_80GB_HBM3
    (line 137): nvidia-smi's 81,559 MiB for that board gives the dump's 0.831 by the GPU-tier
    rule, and the row says the figure comes from the name, not from a line."""
    from logmem.report.mfs_words import default_mfs_text

    led = _led("011")
    d = led.default_mfs
    assert d is not None and d.rule is Rule.GPU_TIER and d.matches is True
    assert d.capacity_mib == 81559 and d.capacity_named == ("NVIDIA_H100_80GB_HBM3", 137)
    value, source = default_mfs_text(d)
    assert value == "GPU-tier reserve"
    assert "no line prints it: nvidia-smi's total for NVIDIA_H100_80GB_HBM3" in source


def test_a_gpu_name_outside_the_table_gives_no_capacity() -> None:
    from logmem.analysis.default_mfs import named_capacity
    from logmem.sglang.devices import named_capacity_mib

    assert named_capacity_mib("AMD_Instinct_MI355X") is None  # not in the table: no figure
    # 003 names its MI355X: no capacity is taken from that name.
    (L,) = api.read_log(str(corpus_log("003-")), require_startup=False).launches
    assert named_capacity(L) is None
    d = build_ledger(L).default_mfs
    assert d is not None and d.capacity_named is None


def test_no_log_flips_to_the_tier_rule_without_its_arithmetic() -> None:
    """Every corpus log: the GPU-tier rule is reported only where its value is the dump's."""
    from conftest import CORPUS

    for path in sorted(CORPUS.glob("*.log")):
        a = api.read_log(str(path), require_startup=False)
        for launch in a.launches:
            d = build_ledger(launch).default_mfs
            if d is not None and d.rule is Rule.GPU_TIER:
                assert d.capacity_mib is not None and d.matches is True, path.name


def test_021_reads_the_e7_reserve_inputs() -> None:
    """021 (E7, Aug 2026) has no cuda_graph_max_bs but cuda_graph_max_bs_decode=8 and a
    breakable prefill config of 58 sizes: 512 + 12288 + 128 (tp 1 / 8 x 1024, a float) + 16 +
    464 = 13,408 MiB on 124,546 MiB gives 0.892 (sglang 0.5.16, srt/server_args.py,
    _handle_gpu_memory_settings: no speculative extra since 0.5.14, so DFLASH adds nothing);
    the dump's 0.85 was passed."""
    from logmem.report.mfs_words import default_mfs_text

    d = _led("021").default_mfs
    assert d is not None and d.rule is Rule.RESERVE and d.era is MfsEra.C
    assert d.reserved_mib == 13408 and d.predicted == 0.892 and d.matches is False
    assert d.form == "0.5.16"
    assert not d.reserve_applies
    value, source = default_mfs_text(d)
    assert value == "passed (the formula gives 0.892)"
    assert "server_args prints 0.85: not this rule" in source


def test_a_contradicted_tp_table_is_labelled_passed() -> None:
    """fx pair-e2 (2025-03, TP2) dumps 0.85 against the table's 0.87: the label is the verdict,
    not the rule the cell rejects."""
    from conftest import FIXTURES
    from logmem.report.mfs_words import default_mfs_text

    a = api.read_log(str(FIXTURES / "pair-e2-maxbs80-constructed.log"), require_startup=False)
    d = build_ledger(a.launches[0]).default_mfs
    assert d is not None and d.rule is Rule.TP_TABLE and d.matches is False
    assert default_mfs_text(d)[0] == "passed (the tp table gives 0.87)"
    ok = _led("001").default_mfs
    assert ok is not None and default_mfs_text(ok)[0] == "tp table"


def test_040_capacity_is_the_missing_input() -> None:
    """040 (Feb 2026, era b, tp 1, chunk 8192, max bs 4) prints no device capacity: 512 + 12288
    + 8 + 128 = 12,936 MiB gives the dump's 0.841 only on 81,104-81,615 MiB (an 80 GB H100's
    81,559 among them), so the row names that window and stays unconfirmed."""
    d = _led("040").default_mfs
    assert d is not None and d.no_prediction is not None
    assert d.no_prediction.value == "no_device_capacity"
    assert d.formula_windows == ((81104, 81615),) and not d.formula_excluded
    assert d.rule is Rule.RESERVE and d.matches is None and not d.reserve_applies
    # With the capacity given, the same inputs confirm it.
    args = dict(api.read_log(str(corpus_log("040-")), require_startup=False).launches[0].args)
    full = default_mfs(args, date(2026, 2, 4), None, 81559.0)
    assert full.reserved_mib == 12936 and full.predicted == 0.841 and full.reserve_applies


def test_023_no_gpu_size_gives_the_dump() -> None:
    """023 (era c) dumps 0.65 with a reserve of 3,600 MiB: only a GPU of about 10 GiB gives that,
    less than its 18.73 GiB free before loading, so the value was passed (review24 #2a)."""
    from logmem.report.mfs_words import default_mfs_text

    d = _led("023").default_mfs
    assert d is not None and d.formula_windows == () and d.formula_excluded
    value, source = default_mfs_text(d)
    assert value == "passed (no GPU size gives it)" and "18.73 GiB free before loading" in source
    assert not d.reserve_applies


def test_mla_unknown_leaves_the_era_c_reserve_unknown() -> None:
    args = {
        "mem_fraction_static": 0.85,
        "tp_size": 1,
        "chunked_prefill_size": 8192,
        "cuda_graph_max_bs": 8,
        "enable_piecewise_cuda_graph": True,
        "piecewise_cuda_graph_tokens": [4, 8],
    }
    d = default_mfs(args, date(2026, 8, 1), None, 124546.0, mla=None)
    assert d.predicted is None and d.no_prediction is not None
    assert d.no_prediction.value == "mla_unknown"
    assert default_mfs(args, date(2026, 8, 1), None, 124546.0, mla=False).predicted is not None


def test_a_later_log_matching_only_the_tier_rule_is_an_older_image() -> None:
    from logmem.report.mfs_words import default_mfs_text

    args = {**_grok_011_args(), "cuda_graph_max_bs": 256}
    d = default_mfs(args, date(2026, 1, 20), None, 81559.0)  # era b's formula gives 0.824
    assert d.rule is Rule.GPU_TIER and d.predicted == 0.831 and not d.reserve_applies
    value, source = default_mfs_text(d)
    assert value == "GPU-tier reserve" and "an image older than the log" in source
    # Where the era's own formula gives the dump, it wins.
    own = default_mfs({**args, "mem_fraction_static": 0.824}, date(2026, 1, 20), None, 81559.0)
    assert own.rule is Rule.RESERVE and own.reserve_applies


def test_an_excluded_formula_is_not_passed_while_the_tier_rule_could_give_it() -> None:
    """kimi-k3 (era c, P 177.08 GiB) dumps 0.85: no GPU of at least P gives it by the formula,
    but the GPU-tier rule (an older image) would on 258,552-260,280 MiB, so 'passed' is not
    claimed; 023's 0.65 fits neither, so it is."""
    from conftest import FIXTURES
    from logmem.report.mfs_words import default_mfs_text

    log = FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"
    d = build_ledger(api.read_log(str(log), require_startup=False).launches[0]).default_mfs
    assert d is not None and d.formula_excluded and not d.excluded
    assert d.tier_windows == ((258552, 260280),)
    value, source = default_mfs_text(d)
    assert value == "unknown" and "in an image older than the log" in source
    d23 = _led("023").default_mfs
    assert d23 is not None and d23.excluded


def test_the_reserve_rows_name_the_e7_terms() -> None:
    """Where the formula gives the dump (kimi-k3's inputs on a GPU the windows name), the rows
    are the terms the rule used: 6.0 GiB with the MLA and breakable-DeepEP prefill terms (sglang
    0.5.20, srt/arg_groups/memory_hook.py, reserve_for_graph_mb: the form current from
    2026-09-18; 0.5.16's has no breakable-DeepEP term)."""
    from conftest import FIXTURES
    from logmem.analysis.sizing import graph_reserve
    from logmem.report.sentences import reserve_term_text
    from logmem.sglang.default_mfs import capacity_windows, formula_bands

    log = FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"
    args = dict(api.read_log(str(log), require_startup=False).launches[0].args)
    d0 = default_mfs(args, date(2026, 9, 20), None, None, mla=True)
    from logmem.sglang.mfs_versions import NEWEST_FORMULA

    bands = formula_bands(args, NEWEST_FORMULA, d0.reserve_terms)
    (lo, _), *_ = capacity_windows(bands, 0.85, 0.0)
    d = default_mfs(args, date(2026, 9, 20), None, float(lo), mla=True)
    assert d.reserve_applies and d.reserve_terms is not None and d.form == "0.5.20-0.5.23"
    r = graph_reserve(d.reserve_terms, None)
    assert r is not None and r.reserve_bytes == 6 * 1024**3
    texts = [reserve_term_text(t) for t in r.terms]
    assert "prefill graph, MLA model: a flat 1536 MB" in texts
    assert "breakable prefill graph with DeepEP: 1024 MB" in texts


def test_sizing_rows_name_releases_not_era_labels() -> None:
    """The default-mfs row speaks of SGLang releases and server_args, never of logmem's era
    labels ("era a", "era c") or "the dump", which a user cannot decode."""
    import re

    from conftest import FIXTURES
    from logmem.report.mfs_words import default_mfs_text

    seen = set()
    for path in sorted(FIXTURES.glob("*.log")):
        a = api.read_log(str(path), require_startup=False)
        for L in a.launches:
            d = build_ledger(L).default_mfs
            if d is None:
                continue
            seen.add((d.rule, d.era))
            _, source = default_mfs_text(d)
            assert not re.search(r"\bera[- ][abc]\b|\bthe dump\b|dump's", source), source
    assert {Rule.TP_TABLE, Rule.RESERVE} <= {r for r, _ in seen}
    assert MfsEra.BETWEEN in {e for _, e in seen}
