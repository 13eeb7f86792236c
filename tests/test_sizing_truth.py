"""KV sizing and attribution statements that must hold on logs logmem was not built on (issue 12,
classes 1, 2, 6 and 7): pool steps without a KV line, remainders named by what they are, SGLang's
own mem_fraction_static adjustments, token prices over every pool, bytes per token as a range."""

from __future__ import annotations

import importlib.util
import json
import re
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import logmem.analysis.findings as fd
from conftest import FIXTURES, corpus_log, corpus_logs, fixture_logs
from logmem.analysis.attribution import LaunchLedger, build_ledger
from logmem.analysis.ledger import Phase, What
from logmem.analysis.sizing import Sizing, sizing
from logmem.api import read_log
from logmem.estimate.crosscheck import Checked, crosscheck
from logmem.report.causes import cause_name, cause_note
from logmem.report.sentences import finding_text
from logmem.sglang import rules
from logmem.units import GIB, gib


def _ledger(path: Path, launch: int = 0) -> LaunchLedger:
    return build_ledger(read_log(str(path)).launches[launch])


def _pools(led: LaunchLedger, rank: str = "TP0") -> Phase:
    rl = led.rank(rank)
    assert rl is not None
    ph = rl.phase("target_pools")
    assert ph is not None
    return ph


def _sizing(led: LaunchLedger) -> Sizing:
    assert led.sizing is not None
    return led.sizing


def _make_sizing() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_sizing", FIXTURES / "make_sizing.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "start-up.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


ALL_LOGS = corpus_logs() + [p for p in fixture_logs() if "constructed" in p.name]


# --- class 1: pool steps and their remainders ---------------------------------------------------


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: p.name)
def test_more_than_one_gib_is_never_small_pools_and_a_rise_never_a_consumer(path: Path) -> None:
    for launch in read_log(str(path)).launches:
        for rl in build_ledger(launch).ranks:
            for ph in rl.phases:
                for c in ph.causes:
                    if c.what in (What.SMALL_POOLS, What.SMALL_POOLS_AND_WORKSPACES):
                        assert c.bytes <= GIB, (rl.rank, ph.key, c)
                    if c.kind == "unattributed" and c.bytes < -5 * rules.PRINT_RESOLUTION_BYTES:
                        # Free memory rose beyond the causes: given back, never "workspaces".
                        assert c.what in (What.GIVEN_BACK, What.UNATTRIBUTED), (rl.rank, ph.key, c)


def test_glm5_pool_remainder_is_the_request_table_not_small_pools() -> None:
    """003: 186.39 GiB step, 183.15 GiB KV line, max_running_requests and context unset."""
    ph = _pools(_ledger(corpus_log("003-")))
    rest = [c for c in ph.causes if c.kind == "unattributed"]
    assert len(rest) == 1 and gib(rest[0].bytes) == 3.24
    assert rest[0].what is What.LIKELY_TABLE
    assert "request-to-token table" in cause_name(rest[0])
    assert "small pools" not in cause_name(rest[0])


def test_a_remainder_above_the_threshold_gets_its_likely_cause() -> None:
    """018: KV line 0.00 GiB, pool step 2.08 GiB, no summary fields: the request table. Its
    wrapped command line gives mfs 0.12 and --max-total-tokens 4096 (model.command), so the
    profiled tokens (at least 3.5 M) put SGLang's default slot count at its 4,096 cap."""
    led = _ledger(corpus_log("018-"))
    found = [f for f in led.findings if isinstance(f, fd.Unexplained)]
    assert len(found) == 1
    f = found[0]
    assert f.likely is fd.LikelyCause.REQUEST_TABLE and gib(f.bytes) == 2.08
    assert f.table is not None and f.table.rows == (4096, 4096)
    lo, hi = f.table.context
    # Sept 2025 (sglang 0.5.2/0.5.3, model_runner.py): ReqToTokenPool(size=max_num_reqs), no
    # padding row; the inverse of the table rule gives the remainder.
    assert f.table.padding_row is False and lo == hi
    assert abs(rules.req_to_token_bytes(4096, lo, False) - f.bytes) < 16388
    text = finding_text(f)
    assert "request-to-token table (request slots x (context length + 4) x 4 B)" in text
    assert "SGLang's default gives it 4,096 request slots here" in text
    assert "(lines 17, 20)" in text and "bench_one_batch prints no scheduler summary" in text
    # The figure is an upper bound, not an estimate: gpt-oss-20b's real context (131,072) lies
    # below it, the rest being other small pools.
    assert "the context is at most about 136,300 tokens" in text
    assert lo > 131_072


def test_a_missing_summary_line_still_names_the_table() -> None:
    """The constructed decode OOM has no summary: 1.02 GiB beside the KV line is over
    max(0.5 GiB, 5% of 11.30) and gets a finding; the ledger never calls it small pools."""
    led = _ledger(FIXTURES / "oom-decode-largest-bucket-constructed.log")
    f = next(f for f in led.findings if isinstance(f, fd.Unexplained))
    assert f.likely is fd.LikelyCause.REQUEST_TABLE and gib(f.bytes) == 1.02
    # Llama-3.1-70B's 131,072 context at SGLang's default 2,048 slots lies in the range.
    assert f.table is not None and f.table.context[0] <= 131_076 <= f.table.context[1]


def test_small_remainders_get_no_finding() -> None:
    """017: 0.68 GiB left in a 137 GiB step is under 5% of it; 001's 0.16 under 0.5 GiB."""
    for prefix in ("017-", "001-"):
        led = _ledger(corpus_log(prefix))
        assert not any(isinstance(f, fd.Unexplained) for f in led.findings)


def test_free_memory_that_rose_is_given_back() -> None:
    """021: the pools logged 0.41 GiB more than free memory fell (019's and 036's rise after the
    draft's pool end is the draft's embed/lm_head: tests/test_spec_draft.py)."""
    for prefix, key, amount in (("021-", "target_pools", -0.41),):
        led = _ledger(corpus_log(prefix))
        main = led.launch.main_rank
        assert main is not None
        rl = led.rank(main.label)
        assert rl is not None
        ph = rl.phase(key)
        assert ph is not None
        rest = next(c for c in ph.causes if c.kind == "unattributed")
        assert rest.what is What.GIVEN_BACK and gib(rest.bytes) == amount


def test_old_log_pool_is_the_kv_cache_for_the_summary_tokens() -> None:
    """024 (Oct 2024) prints the pool only as max_total_num_tokens=217512: the rule gives the
    KV cache for those tokens, and the bytes per token follow as a range with the round cell."""
    led = _ledger(corpus_log("024-"))
    kv = next(
        c for c in _pools(led).causes if cause_name(c).startswith("KV cache for 217,512 tokens")
    )
    assert kv.kind == "estimated"
    sz = _sizing(led)
    lo, hi = sz.bytes_per_token_range or (0, 0)
    assert f"{lo:,} to {hi:,} bytes per token (derived)" in cause_note(kv)
    text = finding_text(next(f for f in led.findings if isinstance(f, fd.KVBudget)))
    assert "217,512 tokens (max_total_num_tokens)" in text and "likely 131,072" in text


def test_filtered_log_derives_the_kv_cache_from_the_step() -> None:
    """The filtered copy of the multimodal start-up has no server_args, so no rule: the KV cache
    for max_total_num_tokens is the step's drop minus the request-to-token table."""
    led = _ledger(FIXTURES / "filtered-no-kv-line-nov2024-constructed.log")
    assert led.sizing is None
    ph = _pools(led)
    kv = next(c for c in ph.causes if cause_name(c).startswith("KV cache for 933,506 tokens"))
    table = next(c for c in ph.causes if c.what is What.REQ_TABLE)
    assert kv.kind == "derived" and kv.bytes == ph.delta_bytes - table.bytes
    per = kv.bytes / 933_506
    assert (
        f"about {gib(kv.bytes):.2f} GiB / 933,506 = {per:,.0f} bytes per token (derived)"
        in cause_note(kv)
    )
    # The true cell (57,344 B) plus the small pools the drop also holds: within 0.1%.
    assert abs(per - 57_344) < 60


def test_another_ranks_kv_line_sizes_a_step_without_one(tmp_path: Path) -> None:
    """001 with TP0's KV line cut (a filtered paste): TP1's line gives 65,536 B per token."""
    text = corpus_log("001-").read_text(encoding="utf-8").splitlines()
    cut = [ln for ln in text if not ("TP0]" in ln and "KV Cache is allocated" in ln)]
    assert len(cut) == len(text) - 1
    led = _ledger(_write(tmp_path, cut))
    kv = next(
        c for c in _pools(led).causes if cause_name(c).startswith("KV cache for 46,611 tokens")
    )
    assert kv.kind == "estimated" and kv.bytes == 46_611 * 65_536
    assert "TP1's KV line" in cause_note(kv)


# --- class 2: SGLang's own adjustments of mem_fraction_static ------------------------------------


def test_the_multimodal_adjustment_of_late_2024_is_applied() -> None:
    led = _ledger(FIXTURES / "multimodal-mfs-nov2024-constructed.log")
    sz = _sizing(led)
    assert [a.factor for a in sz.adjustments] == [0.95] and sz.mem_fraction_static == 0.88
    assert sz.rule_mfs == pytest.approx(0.836)
    assert gib(sz.rest_bytes) == round(62.73 - 78.50 * (1 - 0.836), 2)
    assert not any(isinstance(f, fd.PoolsVsBudget) for f in led.findings)
    lo, hi = sz.bytes_per_token_range or (0, 0)
    assert lo <= 57_344 <= hi and sz.likely_bytes_per_token == 57_344
    text = finding_text(next(f for f in led.findings if isinstance(f, fd.KVBudget)))
    assert "(1 - 0.88 x 0.95)" in text and "multimodal" in text


def test_a_pool_the_dated_rule_misses_says_which_variant_fits(tmp_path: Path) -> None:
    """The same start-up printed before 0.3.5 (the adjustment did not reach the rule then) but
    sized with x 0.95, and printed in the x 0.95 era but sized without it: both numbers, and the
    variant the pools match, never silence."""
    mk = _make_sizing()
    led = _ledger(_write(tmp_path, mk.start_up("2024-10-20", 0.95)))
    f = next(f for f in led.findings if isinstance(f, fd.PoolsVsBudget))
    assert f.derived and f.fits is not None and f.fits.added is not None
    assert f.fits.added.factor == 0.95 and gib(f.rule_bytes) == 53.31
    assert "which the pools match: this launch's SGLang applied it" in finding_text(f)
    led = _ledger(_write(tmp_path, mk.start_up("2024-12-01", 1.0)))
    f = next(f for f in led.findings if isinstance(f, fd.PoolsVsBudget))
    assert f.fits is not None and f.fits.added is None and f.fits.left_out
    assert gib(f.fits.rest_bytes) == 53.31 and gib(f.pool_bytes) == 53.32
    assert "did not apply it" in finding_text(f)


def test_a_newer_multimodal_log_needs_no_adjustment() -> None:
    """041 (Jun 2026, LlavaForConditionalGeneration): server_args.py scales before the dump,
    so the dump's 0.9 is what the rule ran with; the pools agree with it."""
    led = _ledger(corpus_log("041-"))
    sz = _sizing(led)
    assert sz.adjustments == () and sz.rule_mfs == 0.9
    assert not any(isinstance(f, fd.PoolsVsBudget) for f in led.findings)


def test_adjustments_by_era() -> None:
    mm = "Qwen2VLForConditionalGeneration"
    factors = {
        d: [a.factor for a in rules.mfs_adjustments(d, mm, "flashinfer", 32768)]
        for d in (date(2024, 10, 20), date(2024, 11, 25), date(2025, 4, 20), date(2025, 8, 1))
    }
    assert factors == {
        date(2024, 10, 20): [],  # 0.3.4 scaled server_args after the ModelRunner copied it
        date(2024, 11, 25): [0.95],
        date(2025, 4, 20): [0.9],
        date(2025, 8, 1): [],  # from 0.4.9 the dump already holds the scaled value
    }
    assert rules.mfs_adjustments(date(2025, 8, 1), "LlamaForCausalLM", "flashinfer", 32768) == ()
    aiter = [a.factor for a in rules.mfs_adjustments(date(2025, 8, 1), None, "aiter", 131072)]
    assert aiter == [0.85]
    assert rules.mfs_adjustments(date(2025, 8, 1), None, "aiter", 8192) == ()
    assert rules.mfs_adjustments(date(2026, 3, 1), None, "aiter", 131072) == ()
    # sglang 0.4.7 (2025-06-10) already scales it in ModelRunner; 0.5.5 (2025-11-06) in
    # server_args.py, before the dump (srt/server_args.py): no second factor from then.
    assert [a.factor for a in rules.mfs_adjustments(date(2025, 6, 15), None, "aiter", 131072)] == [
        0.85
    ]
    assert rules.mfs_adjustments(date(2025, 12, 1), None, "aiter", 131072) == ()
    assert rules.mfs_adjustments(None, mm, None, None) == ()


# --- class 6: a token costs every pool it occupies --------------------------------------------------


def test_token_prices_count_the_swa_and_draft_pools() -> None:
    """021: SWA 20.42 + full 8.50 GiB for 185,897 full-pool tokens, draft 4.26 GiB for as many."""
    sz = _sizing(_ledger(corpus_log("021-")))
    assert sz.full_cell_bytes == 49_152
    swa = 20.42 * GIB / 185_897
    assert sz.budget_bytes_per_token == pytest.approx(49_152 + swa, abs=1)
    draft = round(4.26 * GIB) / 185_897
    assert sz.all_pools_bytes_per_token == pytest.approx(49_152 + swa + draft, rel=1e-6)


def test_imbalance_is_priced_with_the_mamba_share(tmp_path: Path) -> None:
    """005 (Mamba hybrid, TP2) with TP1 given 0.50 GiB more free memory throughout: the budget
    falls by mfs x 0.50 GiB, split between KV and Mamba state as the pools were."""
    raise_tp1 = {
        "Load weight begin. avail mem=31.49 GB": "Load weight begin. avail mem=31.99 GB",
        "avail mem=17.00 GB, mem usage": "avail mem=17.50 GB, mem usage",
        "Memory pool end. avail mem=4.62 GB": "Memory pool end. avail mem=5.12 GB",
    }
    lines = []
    for ln in corpus_log("005-").read_text(encoding="utf-8").splitlines():
        if "TP1]" in ln:
            for old, new in raise_tp1.items():
                ln = ln.replace(old, new)
        lines.append(ln)
    led = _ledger(_write(tmp_path, lines))
    sz = _sizing(led)
    assert led.imbalance_bytes == round(0.5 * GIB)
    price = sz.budget_bytes_per_token
    assert price is not None and sz.logged_pool_bytes and sz.kv_tokens
    assert price == pytest.approx(16_384 + (sz.logged_pool_bytes - (sz.kv_bytes or 0)) / 422_310)
    loss = rules.imbalance_budget_loss_bytes(round(0.5 * GIB), 0.85)
    assert led.imbalance_tokens == int(loss // price)
    # The full pool's cell alone would have said about twice as many tokens.
    assert led.imbalance_tokens < 0.55 * loss / 16_384
    f = next(f for f in led.findings if isinstance(f, fd.Imbalance))
    assert f.shared_price == price and "other pools' share" in finding_text(f)


@given(
    cell=st.integers(1024, 200_000),
    tokens=st.integers(1000, 5_000_000),
    share=st.floats(0.0, 3.0),
    draft_cell=st.integers(0, 50_000),
)
def test_prices_add_up_to_the_pools(cell: int, tokens: int, share: float, draft_cell: int) -> None:
    """budget price x tokens = every pool the budget holds; all pools adds the draft's."""
    kv = cell * tokens
    others = round(share * kv)
    sz = Sizing(
        0.9, 80 * GIB, "TP0", 60 * GIB, kv + others, kv + others, kv, tokens, cell,
        draft_pools=((draft_cell * tokens, tokens),) if draft_cell else (),
    )  # fmt: skip
    budget, cell_used = sz.budget_bytes_per_token, sz.full_cell_bytes
    assert budget is not None and cell_used is not None
    # The full pool's cell (the round one print rounding allows, else pool / tokens) plus
    # every other pool the budget holds, per full-pool token.
    assert budget * tokens == pytest.approx(cell_used * tokens + others, rel=1e-9)
    rng = sz.bytes_per_token_range
    assert rng is not None and rng[0] <= cell_used <= rng[1]
    total = sz.all_pools_bytes_per_token
    assert total == pytest.approx(budget + draft_cell, rel=1e-9)


# --- class 7: bytes per token as a range --------------------------------------------------------------


def test_crosscheck_agrees_only_inside_the_printed_range(tmp_path: Path) -> None:
    """001 prints K = V = 1.42 GiB for 46,611 tokens: 65,193 to 65,653 B per token. QwQ-32B's
    config gives 65,536 (agrees); a head_dim of 132 gives 67,584, 3% off: outside, so it
    differs although it is within 5%."""
    led = _ledger(corpus_log("001-"))
    config = json.loads((FIXTURES / "configs" / "qwq-32b.json").read_text(encoding="utf-8"))
    kv = next(c for c in crosscheck(led, config).checks if c.what is Checked.KV_PER_TOKEN)
    assert kv.measured_range == _sizing(led).bytes_per_token_range and not kv.differs
    config["head_dim"] = 132
    kv = next(c for c in crosscheck(led, config).checks if c.what is Checked.KV_PER_TOKEN)
    assert kv.expected_bytes == 67_584 and kv.differs


def test_whatif_applies_the_same_adjustment() -> None:
    """logmem whatif on the multimodal start-up: the flag's 0.88 is the launch's budget (49.86,
    the rule at 0.836), and 0.85 is priced at 0.85 x 0.95."""
    import logmem

    a = logmem.read_log(str(FIXTURES / "multimodal-mfs-nov2024-constructed.log"))
    w = logmem.whatif(a, mem_fraction_static=0.85).to_json()
    assert w["measured"]["rest_gib"] == pytest.approx(49.86, abs=0.01)
    assert w["predicted"]["rest_gib"] == pytest.approx(62.73 - 78.50 * (1 - 0.85 * 0.95), abs=0.01)


@pytest.mark.parametrize("prefix", ["019-", "036-"])
def test_the_cell_counts_the_page_of_slots_the_pool_holds_beyond_its_tokens(prefix: str) -> None:
    """page_size=128 (Ascend): the pool holds #tokens + 128 slots (reference 4.1), so the cell is
    the printed size over that, 70,272 B = (512 + 64) x 61 layers x 2 B for DeepSeek-R1's MLA
    (review23 #2); over #tokens alone it read as 70,336 / 70,400, which is no model's cell."""
    path = corpus_log(prefix)
    text = path.read_text()
    page = int(re.search(r"\bpage_size=(\d+)", text)[1])  # type: ignore[index]
    m = re.search(r"KV Cache is allocated\. #tokens: (\d+), KV size: ([\d.]+) GB", text)
    assert m is not None and page == 128
    tokens, size = int(m[1]), float(m[2]) * 2**30
    cell = (512 + 64) * 61 * 2
    assert abs((tokens + page) * cell - size) <= 0.005 * 2**30  # the reference's claim holds
    assert abs(tokens * cell - size) > 0.005 * 2**30  # and over #tokens alone it does not
    (L,) = read_log(str(path)).launches
    sz = sizing(L)
    assert sz is not None and sz.page_size == page
    lo, hi = sz.bytes_per_token_range or (0, 0)
    assert lo <= cell <= hi and sz.likely_bytes_per_token == cell


def test_the_pools_vs_budget_cell_counts_the_page_slots() -> None:
    """036: the pools-vs-budget sentence gives the allocated cell per slot (#tokens + 128), the
    same 70,272 B the sizing finding infers, not 8.69 GiB / #tokens (review24 #3)."""
    (L,) = read_log(str(corpus_log("036-"))).launches
    led = build_ledger(L)
    (gap,) = [f for f in led.findings if isinstance(f, fd.PoolsVsBudget)]
    assert gap.page_size == 128 and gap.cell_bytes == (512 + 64) * 61 * 2
    assert "allocate 70,272 bytes per slot" in finding_text(gap)


@pytest.mark.parametrize(
    ("prefix", "budget", "line", "held"),
    [("019-", 14.18, 935, 216_576), ("036-", 8.50, 1139, 129_792)],
)
def test_a_round_allocated_cell_puts_the_gap_in_the_token_count(
    prefix: str, budget: float, line: int, held: int
) -> None:
    """019/036: the pools allocate exactly DeepSeek-R1's MLA cell, 70,272 B = (512 + 64) x 61 x 2,
    so nothing is "left out" of a cell: SGLang allocated more tokens than its own logged budget
    ("The available memory for KV cache is 8.50 GB", 036 l.1139) holds at that cell, 8.50 GiB
    // 70,272 = 129,877, 129,792 on the 128-token page, against 132,608 (review24 #3)."""
    (L,) = read_log(str(corpus_log(prefix))).launches
    (gap,) = [f for f in build_ledger(L).findings if isinstance(f, fd.PoolsVsBudget)]
    assert gap.reason is fd.GapReason.MORE_TOKENS and gap.sizing_cell_bytes is None
    assert gap.budget_line == line and round((gap.budget_bytes or 0) / 2**30, 2) == budget
    assert gap.budget_tokens == held and gap.extra_tokens == (gap.tokens or 0) - held
    t = finding_text(gap)
    assert "leaves something out" not in t and "FP8" not in t
    assert f"than its own logged KV budget ({budget:.2f} GiB, line {line}) holds" in t
    assert f"({held:,} tokens against the {gap.tokens:,} it allocated)" in t


def test_003_keeps_the_cell_wording_where_the_sizing_cell_really_differs() -> None:
    """003 (NSA, fp8 KV): SGLang sized with 78 x (576 + 132) = 55,224 B, the pools allocate
    78 x (656 + 132) = 61,464: no round cell, the FP8-scales wording stays (review24 #3)."""
    (L,) = read_log(str(corpus_log("003-"))).launches
    (gap,) = [f for f in build_ledger(L).findings if isinstance(f, fd.PoolsVsBudget)]
    assert gap.reason is fd.GapReason.CELLS_BIGGER and gap.cell_bytes is None
    assert gap.sizing_cell_bytes is not None and round(gap.sizing_cell_bytes) == 55_227
    assert "leaves something out that the allocation holds (e.g. FP8 scales" in finding_text(gap)


@pytest.mark.parametrize("prefix", ["005-", "014-"])
def test_the_mamba_pool_that_sets_the_request_count_is_named(prefix: str) -> None:
    """Hybrid models: the summary's max_running_requests is the Mamba pool's slots // 3 (005:
    40 -> 13, 014: 186 -> 62), far below what the KV pool holds (review24 #4); the finding
    names both lines, and a launch that passes --max-running-requests gets none."""
    text = corpus_log(prefix).read_text()
    slots = int(re.search(r"max_mamba_cache_size: (\d+)", text)[1])  # type: ignore[index]
    n = int(re.search(r"max_running_requests=(\d+), context_len", text)[1])  # type: ignore[index]
    assert n == slots // 3
    (L,) = read_log(str(corpus_log(prefix))).launches
    (f,) = [x for x in build_ledger(L).findings if isinstance(x, fd.MambaSlotsLimit)]
    assert (f.slots, f.max_running_requests) == (slots, n)
    assert f"a third of the Mamba state pool's {slots} slots" in finding_text(f)
    (L,) = read_log(str(corpus_log("001-"))).launches
    assert not any(isinstance(x, fd.MambaSlotsLimit) for x in build_ledger(L).findings)


def test_the_pool_step_finding_names_the_draft_models_own_pool() -> None:
    """021 (review25 #10): the draft's KV pool (K+V, 185,897 tokens, 4.26 GiB, l.156) is sized
    right after the target's; the pool-step finding gives it, not only the ledger."""
    (L,) = read_log(str(corpus_log("021-"))).launches
    (step,) = [f for f in build_ledger(L).findings if isinstance(f, fd.PoolStep)]
    assert step.draft is not None and step.draft.lines == (155, 157)
    t = finding_text(step)
    assert (
        "; the draft model's own pool step (lines 155-157) drops 4.38 GiB: draft KV pool "
        "(K+V, 185,897 tokens) 4.26" in t
    )
    # No draft, no clause.
    (L,) = read_log(str(corpus_log("001-"))).launches
    (step,) = [f for f in build_ledger(L).findings if isinstance(f, fd.PoolStep)]
    assert step.draft is None and "draft" not in finding_text(step)


def test_a_logged_budget_that_holds_the_tokens_claims_no_extra_tokens() -> None:
    from dataclasses import replace

    (L,) = read_log(str(corpus_log("036-"))).launches
    (gap,) = [f for f in build_ledger(L).findings if isinstance(f, fd.PoolsVsBudget)]
    roomy = replace(gap, budget_tokens=(gap.tokens or 0) + 128)
    t = finding_text(roomy)
    assert "more tokens" not in t
    assert "its own logged KV budget (8.50 GiB, line 1139) holds their 132,608 tokens" in t
