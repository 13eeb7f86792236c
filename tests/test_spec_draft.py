"""A speculative-decoding draft's memory as SGLang handles it (rules.draft_share,
rules.draft_pool_rule): its KV pool is sized from the target's tokens, never from a budget of its
own; an EAGLE/MTP draft gives back its own embed/lm_head after its pool step; the launch's lowest
free reading may be a capture's bar."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import logmem.analysis.findings as fd
from conftest import corpus_log
from logmem.analysis.attribution import LaunchLedger, build_ledger
from logmem.analysis.ledger import Phase, What
from logmem.api import read_log
from logmem.report.causes import cause_name, cause_note
from logmem.report.sentences import finding_text
from logmem.sglang import rules
from logmem.units import gib


def _ledger(path: Path) -> LaunchLedger:
    return build_ledger(read_log(str(path)).launches[0])


def _with_algorithm(src: Path, algo: str, tmp: Path) -> Path:
    """The log with another speculative_algorithm in its server_args."""
    text = src.read_text(encoding="utf-8", errors="replace")
    assert "speculative_algorithm='EAGLE'" in text
    out = tmp / f"{algo.lower()}-{src.name}"
    out.write_text(text.replace("speculative_algorithm='EAGLE'", f"speculative_algorithm='{algo}'"))
    return out


def _after_draft_pools(led: LaunchLedger) -> Phase:
    """The main rank's phase right after the draft's pool step."""
    main = led.launch.main_rank
    rl = led.rank(main.label) if main is not None else None
    assert rl is not None
    keys = [p.key for p in rl.phases]
    return rl.phases[keys.index("draft_pools") + 1]


def test_eagle_mtp_draft_gives_back_its_embed_and_head() -> None:
    """019 and 036 (EAGLE with a NextN draft, sglang 0.5.8 era): free memory rises 2.13 / 3.39
    GiB between the draft's Memory pool end and its first capture, where eagle_worker.py calls
    set_embed_and_head: the ledger books it as that, and no finding calls it unexplained."""
    for prefix, amount, lines in (("019-", -2.13, (1370, 1375)), ("036-", -3.39, (1473, 1499))):
        led = _ledger(corpus_log(prefix))
        ph = _after_draft_pools(led)
        assert ph.key == "pre_capture:draft" and len(ph.causes) == 1
        c = ph.causes[0]
        assert c.what is What.DRAFT_EMBED_HEAD and c.kind == "derived"
        assert gib(c.bytes) == amount
        assert cause_name(c) == "draft embed/lm_head given back"
        assert "set_embed_and_head" in cause_note(c)
        assert not any(isinstance(f, fd.Unexplained) for f in led.findings)
        rel = next(f for f in led.findings if isinstance(f, fd.DraftReleased))
        assert gib(rel.bytes) == -amount and rel.lines == lines and rel.head
        assert "embed_tokens and lm_head" in finding_text(rel)


def test_a_draft_that_shares_nothing_keeps_the_rise_given_back(tmp_path: Path) -> None:
    """The same log as a STANDALONE draft (standalone_worker.py shares nothing): the rise stays
    'given back' with its finding; as EAGLE3 (set_embed) only the embedding is named."""
    led = _ledger(_with_algorithm(corpus_log("019-"), "STANDALONE", tmp_path))
    assert [c.what for c in _after_draft_pools(led).causes] == [What.GIVEN_BACK]
    f = next(f for f in led.findings if isinstance(f, fd.Unexplained))
    assert f.likely is fd.LikelyCause.GIVEN_BACK and "given back" in finding_text(f)
    assert not any(isinstance(f, fd.DraftReleased) for f in led.findings)
    led = _ledger(_with_algorithm(corpus_log("019-"), "EAGLE3", tmp_path))
    assert [c.what for c in _after_draft_pools(led).causes] == [What.DRAFT_EMBED]
    rel = next(f for f in led.findings if isinstance(f, fd.DraftReleased))
    assert not rel.head and "set_embed," in finding_text(rel)


def test_draft_share_by_algorithm() -> None:
    share = rules.draft_share
    assert share({"speculative_algorithm": "EAGLE"}) is rules.DraftShare.EMBED_AND_HEAD
    assert share({"speculative_algorithm": "NEXTN"}) is rules.DraftShare.EMBED_AND_HEAD
    assert share({"speculative_algorithm": "eagle3"}) is rules.DraftShare.EMBED
    assert share({"speculative_algorithm": "DFLASH"}) is rules.DraftShare.NOTHING
    assert share({"speculative_algorithm": "STANDALONE"}) is rules.DraftShare.NOTHING
    assert share({"speculative_algorithm": None}) is None
    assert share({}) is None and share({"speculative_algorithm": "SOMETHING"}) is None


def test_negative_draft_budget_is_not_a_problem() -> None:
    """036: the Ascend build prints the draft's own 'available memory for KV cache is -0.15 GB';
    SGLang (model_runner_kv_cache_mixin.py, 0.5.9) overrides the draft's count with the target's
    draft_runner_cache_size, so the draft pool holds the target's 132,608 tokens: the report says
    where its size came from, and never that a negative budget ate into the target's memory."""
    led = _ledger(corpus_log("036-"))
    f = next(f for f in led.findings if isinstance(f, fd.DraftPool))
    assert f.tokens == f.target_tokens == 132_608 and f.line == 1457
    assert f.logged_avail is not None and gib(f.logged_avail[0]) == -0.15
    assert f.rule == rules.DraftPoolRule(rules.DraftPoolSource.CACHE_SIZE, False)
    text = finding_text(f)
    assert "draft_runner_cache_size" in text and "harmless" in text and "not used" in text
    texts = " ".join(finding_text(x) for x in led.findings)
    assert "budget is negative" not in texts and "ate into" not in texts


def test_dflash_pool_on_a_sliding_window_target_is_outside_the_rule() -> None:
    """021: DFLASH beside a hybrid-SWA target; HybridSWAPoolConfigurator (pool_configurator.py,
    0.5.16-0.5.17) scales the cell for EAGLE/STANDALONE draft layers only, so the target's pools
    fill the rule's budget (28.92 of 28.95 GiB) and the draft's 4.26 GiB lies outside it."""
    led = _ledger(corpus_log("021-"))
    f = next(f for f in led.findings if isinstance(f, fd.DraftPool))
    assert f.tokens == f.target_tokens == 185_897 and gib(f.bytes) == 4.26 and f.swa
    assert f.rule == rules.DraftPoolRule(rules.DraftPoolSource.POOL_CONFIG, False)
    assert "not judged by that rule" in finding_text(f)
    assert led.sizing is not None and gib(led.sizing.logged_pool_bytes) == 28.92


def test_draft_pool_rule_by_date_and_layout() -> None:
    r = rules.draft_pool_rule
    old = date(2026, 2, 6)
    assert r("EAGLE", False, old) == rules.DraftPoolRule(rules.DraftPoolSource.CACHE_SIZE, False)
    new = date(2026, 8, 1)
    assert r("EAGLE", True, new).in_budget is True
    assert r("DFLASH", False, new).in_budget is True
    assert r("DFLASH", True, new).in_budget is False
    assert r("EAGLE", False, date(2026, 7, 1)).in_budget is None  # 0.5.13-0.5.16: not read
    assert r("EAGLE", False, None) == rules.DraftPoolRule(None, None)


def test_low_point_can_be_a_capture_bar() -> None:
    """021: the lowest free reading of the launch is the prefill capture's bar at num_tokens 8
    (5.62 GiB, line 160), not the end of capture (7.27) nor the last figure (6.22)."""
    led = _ledger(corpus_log("021-"))
    f = next(f for f in led.findings if isinstance(f, fd.BottomedOut))
    assert gib(f.bytes) == 5.62 and f.line == 160 and gib(f.last_bytes) == 6.22
    assert f.phase.key == "capture:target prefill" and f.bucket is not None and f.bucket.size == 8
    assert "line 160, capture target prefill, the bar at num_tokens 8" in finding_text(f)
