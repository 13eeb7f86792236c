"""The default-mfs rule by era and the rank-coverage labels of the KV-sizing table."""

from __future__ import annotations

from datetime import date

from conftest import corpus_log
from logmem import api
from logmem.analysis.attribution import build_ledger
from logmem.report.mfs_words import coverage_text
from logmem.sglang.default_mfs import Era, Rule, default_mfs


def _led(name: str):  # type: ignore[no-untyped-def]
    a = api.read_log(str(corpus_log(name + "-")), require_startup=False)
    return build_ledger(a.launches[0])


def test_era_a_table_no_reserve() -> None:
    led = _led("001")  # 2025-03, TP4, dump 0.85
    d = led.default_mfs
    assert d is not None and d.rule is Rule.TP_TABLE and d.era is Era.A
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
    assert d.rule is Rule.RESERVE and d.era is Era.B
    assert d.reserved_mib == 27136 and d.predicted == 0.908 and d.matches is True


def test_era_c_and_unknown() -> None:
    d = default_mfs({"mem_fraction_static": 0.85, "tp_size": 1}, date(2026, 8, 1), None, None)
    assert d.rule is Rule.RESERVE and d.era is Era.C and d.predicted is None
    u = default_mfs({"mem_fraction_static": 0.85, "tp_size": 1}, None, None, None)
    assert u.rule is Rule.UNKNOWN and u.era is Era.UNKNOWN


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
