"""The request-to-token table as a lever (review C #3, #6) and the Mamba-limited request count
(#7), on the real logs named and small variants of them."""

from __future__ import annotations

from pathlib import Path

import logmem.analysis.findings as fd
from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.report.sentences import finding_text
from logmem.sglang import rules
from logmem.units import GIB


def _findings(path: Path | str) -> list[object]:
    (L,) = read_log(str(path)).launches
    return list(build_ledger(L).findings)


def _one(path: Path | str, kind: type) -> object:
    (f,) = [x for x in _findings(path) if isinstance(x, kind)]
    return f


# --- rules ---------------------------------------------------------------------------------------


def test_table_has_context_plus_four_columns() -> None:
    """init_memory_pool: max_context_len=context_len + 4 (0.4.6, 0.5.2, 0.5.9)."""
    assert rules.req_to_token_bytes(2048, 131072, False) == 2048 * 131076 * 4
    assert rules.req_to_token_bytes(2048, 131072, True) == 2049 * 131076 * 4
    t = rules.req_to_token_bytes(4096, 131072, False)
    assert rules.req_to_token_context(t, 4096, False) == 131072


def test_default_rows_at_cap_when_the_budget_is_large() -> None:
    # Below the cap the context is above tokens / 8 and the table at least tokens x 1 KiB.
    assert rules.default_rows_at_cap(2 * GIB, 3_000_000)
    assert not rules.default_rows_at_cap(2 * GIB, 1_000_000)
    # Consistent with the formula: at tokens / 8 + 1 the default leaves its cap.
    tokens = 3_000_000
    ctx = tokens // 8 + 1
    assert rules.default_max_running_requests(tokens, ctx) < 4096
    assert rules.req_to_token_bytes(2048, ctx, False) > tokens * 1024


def test_mamba_ratio() -> None:
    assert rules.mamba_request_ratio(False, False, False) == 1
    assert rules.mamba_request_ratio(False, None, None) == 1
    assert rules.mamba_request_ratio(True, False, None) == 3
    assert rules.mamba_request_ratio(True, True, True) == 4
    assert rules.mamba_request_ratio(True, True, False) == 5
    assert rules.mamba_request_ratio(None, False, False) is None


# --- #3: --context-length and --max-running-requests free the table --------------------------


def test_037_context_length_shrinks_the_table() -> None:
    c = _one(corpus_log("037-"), fd.ContextVsPool)
    assert isinstance(c, fd.ContextVsPool) and c.table is not None
    at = c.table.at_context
    assert at is not None and (at.max_running_requests, at.context_len) == (2048, 38141)
    assert at.bytes == 2048 * (38141 + 4) * 4
    text = finding_text(c)
    assert "so the server reports the length it serves." not in text
    assert (
        "shrinks from 1.00 GiB to 0.29 GiB (2,048 rows x (38,141 + 4) x 4 B): 0.71 GiB freed"
        in text
    )


def test_037_table_share_names_both_levers() -> None:
    f = _one(corpus_log("037-"), fd.RequestTableShare)
    assert isinstance(f, fd.RequestTableShare)
    assert f.table.bytes == 2048 * 131076 * 4 and f.left.bytes < f.table.bytes
    text = finding_text(f)
    assert "more than the 0.83 GiB left free after capture" in text
    assert "--max-running-requests N (not passed here; the summary prints" in text
    assert "N x 0.50 MiB" in text
    assert "(0.29 GiB at 38,141, the pool's tokens)" in text


def test_001_padding_row_era() -> None:
    """0.4.3: the default prints 2049 rows; at the pool's length the default 2048 + 1 rows."""
    c = _one(corpus_log("001-"), fd.ContextVsPool)
    assert isinstance(c, fd.ContextVsPool) and c.table is not None and c.table.at_context
    assert c.table.bytes == 2049 * 131076 * 4
    assert c.table.at_context.bytes == 2049 * (46611 + 4) * 4
    f = _one(corpus_log("001-"), fd.RequestTableShare)
    assert "(N + 1) x 0.50 MiB" in finding_text(f)


def test_a_printed_slot_count_is_stated_not_the_defaults_range() -> None:
    """Review D#9. 001 line 71: max_running_requests=2049, max_total_num_tokens=46611 (sglang
    0.4.3: min(tokens // 2, pool size), the pool 2048 + 1); 037 (0.4.9, no padding row
    printed): max_running_requests=2048 at its summary line."""
    f = _one(corpus_log("001-"), fd.RequestTableShare)
    assert isinstance(f, fd.RequestTableShare)
    assert f.table.default_slots == 2048 and f.table.printed_at is not None
    assert f.table.printed_at.line_no == 71
    text = finding_text(f)
    assert "(the default here: 2,048; the summary prints 2,049, line 71, the padding row" in text
    assert "2,048 to 4,096" not in text
    g = _one(corpus_log("037-"), fd.RequestTableShare)
    assert isinstance(g, fd.RequestTableShare) and g.table.default_slots is None
    assert g.table.printed_at is not None
    assert f"max_running_requests=2,048, line {g.table.printed_at.line_no})" in finding_text(g)
    assert "2,048 to 4,096" not in finding_text(g)


def test_the_default_behind_a_printed_count_needs_the_release_and_the_tokens() -> None:
    """tp_worker.py 0.4.3: the count is min(tokens // 2, pool size); a count the tokens bound,
    a passed value, a later release or an undated log proves no default."""
    from datetime import date

    old, new = date(2025, 3, 1), date(2025, 9, 1)
    assert rules.default_slots_printed(old, False, 2049, 46611) == 2048
    assert rules.default_slots_printed(old, False, 2049, 4098) is None  # tokens // 2 bound
    assert rules.default_slots_printed(old, True, 2049, 46611) is None
    assert rules.default_slots_printed(new, False, 2049, 46611) is None
    assert rules.default_slots_printed(None, False, 2049, 46611) is None
    assert rules.default_slots_printed(old, False, 2049, None) is None


def test_share_needs_a_tenth_of_what_is_left() -> None:
    # 008: 1.00 GiB of 8.34 left (12%): named; 017 (B200, tens of GiB left): not.
    assert any(isinstance(x, fd.RequestTableShare) for x in _findings(corpus_log("008-")))
    assert not any(isinstance(x, fd.RequestTableShare) for x in _findings(corpus_log("017-")))


# --- #6: 018's unlogged table ---------------------------------------------------------------


def _unexplained(path: Path | str) -> fd.Unexplained:
    f = _one(path, fd.Unexplained)
    assert isinstance(f, fd.Unexplained) and f.table is not None
    return f


def test_018_offline_tool_is_not_sent_to_a_scheduler_summary() -> None:
    f = _unexplained(corpus_log("018-"))
    assert f.table is not None and f.table.offline == "one_batch"
    text = finding_text(f)
    assert "scheduler summary line" not in text
    assert "bench_one_batch prints no scheduler summary" in text
    assert "--max-running-requests N" in text


def test_018_budget_pins_the_default_at_its_cap(tmp_path: Path) -> None:
    """With the flags that size the pool (018's command line: mfs 0.12, --max-total-tokens
    4096), the profiled tokens (budget over the largest cell 0.00 GB K and V allow) put the
    default at 4096 rows whatever context fits 2.08 GiB."""
    lines = corpus_log("018-").read_text(encoding="utf-8").splitlines()
    sa = (
        "[2025-09-28 17:07:09] server_args=ServerArgs(model_path='/z/gpt-oss-20b', "
        "mem_fraction_static=0.12, max_total_tokens=4096, max_running_requests=None, tp_size=1)"
    )
    p = tmp_path / "018-with-args.log"
    p.write_text("\n".join([*lines[:3], sa, *lines[3:]]) + "\n", encoding="utf-8")
    f = _unexplained(p)
    assert f.table is not None and f.table.rows == (4096, 4096)
    assert f.table.profiled_tokens is not None and f.table.profiled_tokens > 3_000_000
    assert f.table.context[0] == f.table.context[1] < 140_000
    assert "SGLang's default gives it 4,096 request slots here" in finding_text(f)
    # The real 018 needs no added line: its wrapped command line gives the same flags
    # (model.command), so the default is pinned there too.
    g = _unexplained(corpus_log("018-"))
    assert g.table is not None and g.table.rows == (4096, 4096)
    # Without the budget (no mfs anywhere) only the default's bounds are known.
    bare = tmp_path / "018-no-flags.log"
    bare.write_text("\n".join(lines[3:]) + "\n", encoding="utf-8")
    h = _unexplained(bare)
    assert h.table is not None and h.table.rows == rules.DEFAULT_REQUEST_ROWS


# --- #7: the Mamba-limited request count ----------------------------------------------------


def test_005_radix_cache_lever() -> None:
    f = _one(corpus_log("005-"), fd.MambaSlotsLimit)
    assert isinstance(f, fd.MambaSlotsLimit)
    assert (f.slots, f.max_running_requests, f.ratio, f.ratio_from_args) == (40, 13, 3, True)
    assert f.requests_without_radix == 40
    assert f.table_growth_bytes == 27 * (262144 + 4) * 4
    text = finding_text(f)
    assert "--disable-radix-cache (without --max-running-requests) lets all 40 slots" in text
    assert "at the cost of prefix caching" in text
    assert "take the Mamba state's memory from the same budget, so the KV pool shrinks" in text


def test_014_ratio_from_the_printed_figures() -> None:
    f = _one(corpus_log("014-"), fd.MambaSlotsLimit)
    assert isinstance(f, fd.MambaSlotsLimit)
    assert (f.slots, f.max_running_requests, f.ratio_from_args) == (186, 62, False)


def test_radix_cache_off_is_no_mamba_limit(tmp_path: Path) -> None:
    text = corpus_log("005-").read_text(encoding="utf-8")
    assert "disable_radix_cache=False" in text
    p = tmp_path / "005-noradix.log"
    p.write_text(text.replace("disable_radix_cache=False", "disable_radix_cache=True"))
    assert not any(isinstance(x, fd.MambaSlotsLimit) for x in _findings(p))
