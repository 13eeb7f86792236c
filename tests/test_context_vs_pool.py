"""The context length against the KV pool (logmem.analysis.context, review21 #3): the rule in
logmem.sglang.rules, the fact per launch, its sentence, its JSON, and that analyze and whatif
price mem_fraction_static the same."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, corpus_log
from logmem.analysis.attribution import LaunchLedger, build_ledger
from logmem.analysis.context import ContextVsPool
from logmem.analysis.findings import findings
from logmem.api import read_log
from logmem.compare.load import LaunchRef
from logmem.compare.whatif import whatif_launch
from logmem.errors import FitError
from logmem.report.sentences import finding_text
from logmem.sglang import rules

FIXTURE_LOGS = sorted(p.name for p in FIXTURES.glob("*.log"))


def ledger(name: str, index: int = 0) -> LaunchLedger:
    a = read_log(str(FIXTURES / name))
    return build_ledger(a.launches[index], a.launches)


def fact(**kw: object) -> ContextVsPool:
    base: dict[str, object] = dict(
        kv_tokens=139_814,
        kv_tokens_source="summary",
        context_len=40_960,
        context_source="summary",
        max_running_requests=1,
        requests_source="summary",
        requests_passed=True,
        projected=True,
        fits_from_mfs=None,
        tokens_at_full_mfs=None,
        mem_fraction_static=0.85,
        max_total_tokens=None,
        radix_cache=True,
        line=10,
    )
    base.update(kw)
    return ContextVsPool(**base)  # type: ignore[arg-type]


# --- the rule -------------------------------------------------------------------------------


def test_rule_context_fits_at_equality_and_counts_contexts() -> None:
    assert rules.context_fits(46_611, 46_611)
    assert not rules.context_fits(46_611, 131_072)
    assert round(rules.full_contexts(46_611, 131_072), 3) == 0.356
    assert rules.slots_tokens(2049, 131_072) == 2049 * 131_072


def test_smallest_mfs_holding_is_the_first_grid_value_that_holds() -> None:
    assert rules.smallest_mfs_holding(lambda m: round(m * 100_000), 50_000) == 0.5
    assert rules.smallest_mfs_holding(lambda m: 10, 11) is None


@given(
    st.integers(1, 10**7),
    st.integers(1, 10**7),
    st.integers(1, 10**7),
)
def test_smallest_mfs_is_monotone_in_the_context(scale: int, c1: int, c2: int) -> None:
    lo, hi = sorted((c1, c2))
    a = rules.smallest_mfs_holding(lambda m: int(m * scale), lo)
    b = rules.smallest_mfs_holding(lambda m: int(m * scale), hi)
    assert b is None or (a is not None and a <= b)


# --- the fact: an algebra over context length and slots --------------------------------------


@given(
    st.integers(1, 10**7),
    st.integers(1, 10**6),
    st.integers(1, 10**6),
    st.integers(1, 5000),
    st.integers(1, 5000),
)
def test_fact_is_monotone_in_context_and_slots(kv: int, c1: int, c2: int, n1: int, n2: int) -> None:
    (clo, chi), (nlo, nhi) = sorted((c1, c2)), sorted((n1, n2))
    short = fact(kv_tokens=kv, context_len=clo, max_running_requests=nlo)
    long = fact(kv_tokens=kv, context_len=chi, max_running_requests=nlo)
    more = fact(kv_tokens=kv, context_len=clo, max_running_requests=nhi)
    # A longer context never fits where a shorter one does not, and holds fewer contexts.
    assert not (short.too_long and not long.too_long)
    assert (long.full_contexts or 0) <= (short.full_contexts or 0)
    # Longer contexts or more slots never leave more of the pool out of reach.
    assert (long.unused_by_slots_tokens or 0) <= (short.unused_by_slots_tokens or 0)
    assert (more.unused_by_slots_tokens or 0) <= (short.unused_by_slots_tokens or 0)
    for f in (short, long, more):
        # The two complaints exclude each other; the slots reach the pool or leave a remainder.
        assert not (f.too_long and f.slots_short)
        assert (f.slots_tokens or 0) + (f.unused_by_slots_tokens or 0) >= f.kv_tokens
        assert f.applies == (f.too_long or f.slots_short)


def test_unknown_context_fires_only_for_a_single_slot_the_user_set() -> None:
    assert fact(context_len=None, context_source=None).slots_unknown
    assert not fact(context_len=None, max_running_requests=2048).applies
    assert not fact(context_len=None, requests_passed=False).applies
    assert fact(context_len=None).one_context_fits is None


# --- the fact from real logs ------------------------------------------------------------------


def test_001_one_context_cannot_be_held_and_no_mfs_helps() -> None:
    c = ledger("001-qwq32b-tp4-l4-docs.log").context
    assert c is not None
    assert (c.kv_tokens, c.context_len, c.max_running_requests) == (46_611, 131_072, 2049)
    assert c.too_long and not c.slots_short and c.applies
    assert c.fits_from_mfs is None and c.tokens_at_full_mfs == 99_768  # whatif's figure
    assert c.line == 71


def test_023_single_slot_with_the_context_not_logged() -> None:
    c = ledger("023-qwen3-14b-tp2-fp16-truncated-mid-capture.log").context
    assert c is not None
    assert c.kv_tokens == 139_814 and c.kv_tokens_source == "kv_line"
    assert c.context_len is None and c.max_running_requests == 1
    assert c.slots_unknown and c.applies


def test_fact_comes_first_after_the_kv_budget() -> None:
    led = ledger("001-qwq32b-tp4-l4-docs.log")
    kinds = [type(f).__name__ for f in findings(led)]
    assert kinds.index("ContextVsPool") == kinds.index("KVBudget") + 1


@pytest.mark.parametrize("name", FIXTURE_LOGS)
def test_analyze_and_whatif_agree_on_the_mfs_of_one_full_context(name: str) -> None:
    a = read_log(str(FIXTURES / name))
    for i, L in enumerate(a.launches):
        c = build_ledger(L, a.launches).context
        try:
            w = whatif_launch(L, LaunchRef("A", a.paths, i))
        except FitError:
            continue  # no sizing readings: analyze has no projection either
        if c is None or c.context_len is None or w.context_len != c.context_len:
            continue
        assert c.projected
        assert c.fits_from_mfs == w.lo_context, (name, i)


@pytest.mark.parametrize("name", FIXTURE_LOGS)
def test_finding_fires_only_where_the_log_shows_it(name: str) -> None:
    a = read_log(str(FIXTURES / name))
    for L in a.launches:
        led = build_ledger(L, a.launches)
        c = led.context
        fired = [f for f in led.findings if isinstance(f, ContextVsPool)]
        assert len(fired) == (1 if c is not None and c.applies else 0)
        if c is None or not c.applies:
            continue
        s = L.summary
        if c.too_long:
            # Both figures as the log printed them.
            assert s is not None and c.kv_tokens == s.max_total_num_tokens
            assert c.context_len == s.get_int("context_len")


# --- the sentence -------------------------------------------------------------------------------


def test_sentence_001() -> None:
    c = ledger("001-qwq32b-tp4-l4-docs.log").context
    assert finding_text(c) == (
        "context_len 131,072 is 2.8 times the KV pool (46,611 tokens). That does not fail the "
        "launch, but SGLang caps each request at max_req_len = min(context_len - 1, "
        "max_total_num_tokens - 1) = 46,610 tokens of prompt and output: a prompt of 46,605 "
        "tokens or more is rejected (cut to fit with --allow-auto-truncate) and max_new_tokens is "
        "cut to what the prompt leaves. No --mem-fraction-static serves the full context: even "
        "1.0 gives 99,768 tokens (logmem whatif); pass --context-length 46,611 or less: the "
        "server then reports the length it serves, and the request-to-token table, allocated "
        "after the KV pool is sized, shrinks from 1.00 GiB to 0.36 GiB ((2,048 + 1) rows x (46,611 + "
        "4) x 4 B): 0.64 GiB freed, the KV pool unchanged."
    )


def test_a_pool_below_the_context_caps_the_request_not_the_launch() -> None:
    # 007 (sglang 0.4.6, tp_worker.py): max_req_len = min(40,960 - 1, 15,387 - 1); the launch
    # came up and served a batch. The fact carries SGLang's cap, the JSON too.
    a = read_log(str(corpus_log("007-")))
    c = build_ledger(a.launches[0], a.launches).context
    assert c is not None and c.too_long
    assert c.max_req_len == 15_386 and c.prompt_rejected_from == 15_381
    assert a.launches[0].ready is not None or a.launches[0].summary is not None
    t = finding_text(c)
    assert "does not fail the launch" in t and "cannot be held" not in t
    assert rules.max_request_len(40_960, 50_000) == 40_959  # the context binds
    assert rules.max_request_len(40_960, 15_387) == 15_386


def test_a_binding_max_total_tokens_is_the_lever_not_mfs() -> None:
    t = finding_text(fact(kv_tokens=20_480, context_len=32_768, max_total_tokens=20_480))
    assert "--max-total-tokens 20,480 caps the pool" in t
    assert "raising --mem-fraction-static does not grow it while the cap binds" in t


def test_sentence_single_slot_too_long_with_an_mfs_that_holds_it() -> None:
    t = finding_text(
        fact(kv_tokens=202_093, context_len=262_144, fits_from_mfs=1.0, mem_fraction_static=0.9)
    )
    assert "1.3 times the KV pool (202,093 tokens)" in t
    assert "the one request slot (max_running_requests=1) never reaches its context" in t
    assert "from --mem-fraction-static 1.000 it holds one full context" in t
    assert "(the KV pool alone)" in t  # no readings of P in this fact: no reserve figure


def test_sentence_names_what_the_fitting_mfs_leaves_outside_the_pool() -> None:
    # 041: the fitting value is 1.000, which leaves nothing for graphs and activations; the
    # sentence gives both figures so the lever's cost is plain.
    t = finding_text(
        fact(
            kv_tokens=202_093,
            context_len=262_144,
            fits_from_mfs=1.0,
            mem_fraction_static=0.9,
            outside_at_fit_bytes=0,
            outside_now_bytes=2_459_000_000,
        )
    )
    assert "leaving 0.00 GiB outside the pool (this launch left 2.29)" in t


@given(st.floats(0.3, 1.0), st.floats(0.3, 1.0))
def test_outside_and_budget_add_up_to_the_free_memory_after_weights(m1: float, m2: float) -> None:
    # The rule's two terms: rest(m) + outside(m) = A, at any m; outside falls as m rises.
    from logmem.analysis.projection import PoolProjection

    led = ledger("001-qwq32b-tp4-l4-docs.log")
    proj = PoolProjection.of(led.sizing, {})
    assert proj is not None
    for m in (m1, m2):
        assert proj.rest(m) + proj.outside(m) == proj.sz.after_weights_bytes
    lo, hi = sorted((m1, m2))
    assert proj.outside(hi) <= proj.outside(lo)


def test_sentence_without_readings_or_capped_says_so() -> None:
    t = finding_text(fact(kv_tokens=38_141, context_len=131_072, projected=False))
    assert "(raise --mem-fraction-static; from which value is unknown" in t
    t = finding_text(fact(kv_tokens=20_480, context_len=32_768, max_total_tokens=20_480))
    assert "raise --max-total-tokens to serve the full context" in t
    # Print rounding may put the projection's value at the launch's own: no mfs lever then.
    t = finding_text(fact(kv_tokens=40_000, context_len=40_960, fits_from_mfs=0.85))
    assert "mem-fraction-static" not in t


def test_sentence_slots_cannot_fill_the_pool() -> None:
    t = finding_text(fact())
    assert t.startswith(
        "max_running_requests=1 x context_len 40,960 = 40,960 tokens, 29% of the KV pool "
        "(139,814 tokens): running requests can never hold the other 98,854 tokens; only the "
        "prefix cache (radix cache) can use them."
    )
    assert "raise --max-running-requests (the pool holds 3.4 full contexts)" in t
    assert "--max-total-tokens 40,960" in t
    assert "nothing uses them" in finding_text(fact(radix_cache=False))


def test_sentence_unknown_context() -> None:
    """Review D#11. 023's server_args (line 3): max_running_requests=1, context_length=None,
    cpu_offload_gb=48, disable_radix_cache=False, and no scheduler summary: the context is the
    model config's, which the log does not give; what follows from the log alone is said."""
    c = ledger("023-qwen3-14b-tp2-fp16-truncated-mid-capture.log").context
    assert c is not None and c.context_unset and c.cpu_offload_gb == 48
    t = finding_text(c)
    assert t.startswith(
        "max_running_requests=1 (server_args): one request runs at a time, and SGLang caps it "
        "at the smaller of the context length and the KV pool (139,814 tokens), less one."
    )
    assert "context_length=None in server_args" in t and "which the log does not print" in t
    assert "If it is below 139,814 tokens, the one request slot never reaches the rest" in t
    assert "(only the prefix cache (radix cache) can use it)" in t
    assert "48 GB of weights offloaded to the CPU (cpu_offload_gb=48)" in t
    assert "a lower --cpu-offload-gb" in t
    assert t.endswith("from the log alone how much of the pool it can reach is unknown.")
    assert "40,960" not in t  # the model's config is not in the log


def test_sentence_unknown_context_without_offload_or_unset_context() -> None:
    c = ledger("023-qwen3-14b-tp2-fp16-truncated-mid-capture.log").context
    assert c is not None
    t = finding_text(replace(c, context_unset=False, cpu_offload_gb=None, radix_cache=None))
    assert "context_length=None" not in t and "cpu-offload" not in t and "radix" not in t


def test_fixture_where_the_pool_holds_the_context_has_no_sentence() -> None:
    led = ledger("014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log")
    c = led.context
    # 327,310 tokens hold 1.25 contexts of 262,144; 62 slots can fill them.
    assert c is not None and c.one_context_fits and not c.applies
    assert c.slots_exceed_pool and c.unused_by_slots_tokens == 0
    assert not any(isinstance(f, ContextVsPool) for f in led.findings)


# --- JSON ---------------------------------------------------------------------------------------


def test_json_context_capacity() -> None:
    from logmem.report.jsonout import context_json

    c = ledger("001-qwq32b-tp4-l4-docs.log").context
    assert c is not None
    j = context_json(c)
    assert j is not None
    assert j["kv_tokens"] == 46_611 and j["context_len"] == 131_072
    assert j["one_context_fits"] is False and j["full_contexts"] == 0.356
    assert j["fits_from_mem_fraction_static"] is None
    assert j["tokens_at_mem_fraction_static_1"] == 99_768
    assert j["outside_budget_at_fit_bytes"] is None  # no mfs holds one full context
    assert j["outside_budget_bytes"] is not None and j["outside_budget_bytes"] > 0
    assert j["finding"] is True and j["line"] == 71
    assert context_json(None) is None
    json.dumps(j)
    # Unknown figures stay null, never 0.
    j = context_json(replace(c, context_len=None, context_source=None))
    assert j is not None and j["slots_tokens"] is None and j["full_contexts"] is None


def test_a_fit_that_leaves_less_outside_the_pool_than_the_launch_used_is_not_offered() -> None:
    """041: one full context needs mfs 1.000, which leaves nothing for the request table,
    workspaces and graphs this launch needed after sizing (review23 #4): not an option."""
    from click.testing import CliRunner

    from logmem.cli.main import cli

    log = corpus_log("041-")
    text = " ".join(
        CliRunner().invoke(cli, ["analyze", str(log)], catch_exceptions=False).output.split()
    )
    assert "or enlarge the pool: from --mem-fraction-static 1.000" not in text
    # 041 gave 5.29 GiB back after sizing: the verdict is the readings', not the GPU's
    # (review C #1; without the release, tests/test_released_after_sizing.py).
    assert "one full context needs --mem-fraction-static 1.000, which leaves 0.00 GiB" in text
    assert "The pool cannot be enlarged enough on this GPU" not in text
    out = CliRunner().invoke(cli, ["analyze", str(log), "-f", "json"], catch_exceptions=False)
    c = json.loads(out.output)["launches"][0]["context_capacity"]
    assert c["fit_leaves_too_little"] is True
    assert c["outside_budget_at_fit_bytes"] < c["used_outside_budget_bytes"]
    assert 0 < c["used_outside_budget_bytes"] <= c["outside_budget_bytes"]


def test_037_no_mfs_can_hold_the_context_whatever_p_is() -> None:
    # review25 #2: 037 prints no P and no mem_fraction_static, so there is no projection; but
    # SGLang's budget after - P x (1 - mfs) is at most the 7.37 GiB free after the weights
    # (l.1), which at 131,072 B per token (l.2: 4.66 GiB for 38,141 + 1 slots) is 60,375 tokens,
    # less than one 131,072-token context (l.8): raising mfs cannot help, whatever P is.
    a = read_log(str(corpus_log("037-")))
    c = build_ledger(a.launches[0], a.launches).context
    assert c is not None and not c.projected and c.too_long
    assert c.ceiling is not None
    assert (c.ceiling.tokens, c.ceiling.line, c.ceiling.cell_bytes) == (60_375, 1, 131_072)
    assert c.ceiling_too_small
    t = finding_text(c)
    assert "raise --mem-fraction-static" not in t
    assert (
        "No --mem-fraction-static serves the full context: even 1.0 gives at most 60,375 tokens "
        "(all 7.37 GiB free after the weights, line 1"
    ) in t


def test_ceiling_that_holds_the_context_keeps_the_unknown_lever() -> None:
    from logmem.analysis.context import PoolCeiling

    big = PoolCeiling(200_000, 26 * 2**30, 1, 131_072)
    t = finding_text(fact(kv_tokens=38_141, context_len=131_072, projected=False, ceiling=big))
    assert "(raise --mem-fraction-static; from which value is unknown" in t
    # The projection, when there is one, is the figure: the ceiling is not computed then.
    c = ledger("001-qwq32b-tp4-l4-docs.log").context
    assert c is not None and c.projected and c.ceiling is None


def test_a_smaller_swa_pool_makes_the_request_cap_era_dependent() -> None:
    # sglang 0.5.9 caps a request by max_token_pool_size = min(SWA, full); 0.5.3 by the full pool.
    f = fact(kv_tokens=20_000, context_len=32_768, max_running_requests=8, swa_tokens=10_000)
    assert f.too_long and f.max_req_len is None and f.prompt_rejected_from is None
    t = finding_text(f)
    assert "the full pool's (20,000) up to sglang 0.5.3, the smaller SWA pool's (10,000)" in t
    assert fact(kv_tokens=20_000, context_len=32_768, swa_tokens=30_000).max_req_len == 19_999


def test_slots_short_under_a_binding_cap_names_the_cap_not_mfs() -> None:
    # --max-total-tokens sized the pool (model_runner.py init_memory_pool: min(profiled, cap)):
    # lowering mem_fraction_static frees nothing while the cap binds.
    base = dict(kv_tokens=100_000, context_len=8_192, max_running_requests=4)
    t = finding_text(fact(**base, max_total_tokens=100_000))
    assert "lower --max-total-tokens to 32,768" in t and "lower --mem-fraction-static" not in t
    assert "lower --mem-fraction-static or pass --max-total-tokens 32,768" in finding_text(
        fact(**base)
    )
