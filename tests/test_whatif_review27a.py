"""whatif against analyze's failure Fixes, review 27a: a capture-OOM Fix "--cuda-graph-max-bs N"
and `whatif --cuda-graph-max-bs N` on the same log price the lower max bs by one per-row figure
(#6). Expected figures come from the log text and analyze's own sentence."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, corpus_log
from logmem.cli.main import cli


def _run(cmd: str, name: str, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, [cmd, str(FIXTURES / name), *args])
    assert r.exit_code == code, r.output
    return r.output


def _flat(text: str) -> str:
    return " ".join(text.split())


def _row(out: str, name: str) -> list[str]:
    return next(ln for ln in out.splitlines() if ln.startswith(name)).split()


@pytest.mark.parametrize(
    ("name", "launch", "per_row"),
    [
        # 0.30 - 0.29 + 0.53 GiB over 256 rows; 0.18 - 0.17 + 0.23 GiB over 48 rows.
        ("oom-decode-largest-bucket-constructed.log", "0", "2.14"),
        ("two-launches-restart-constructed.log", "0", "5.10"),
    ],
)
def test_whatif_at_analyzes_cap_uses_analyzes_per_row_cost_and_agrees(
    name: str, launch: str, per_row: str
) -> None:
    said = _flat(_run("analyze", name))
    fix = re.search(
        r"Fix: --cuda-graph-max-bs (\d+): .*? (\d+\.\d\d) MiB per row; capping at \1 saves about",
        said,
    )
    assert fix is not None, said
    cap, analyze_row = fix.group(1), fix.group(2)
    assert analyze_row == per_row
    out = _run("whatif", name, "--launch", launch, "--cuda-graph-max-bs", cap)
    flat = _flat(out)
    assert f"priced at {per_row} MiB per unit of bs, from the failed decode bucket" in flat
    assert "as analyze's --cuda-graph-max-bs Fix" in flat
    # The Fix covers the shortfall, so whatif does not call the same change infeasible.
    assert _row(out, "feasible")[-1] != "NO", out
    # An estimated upper bound ('<= ~0.02': the capture stopped, the slope's error unknown).
    assert _row(out, "headroom, GiB")[-2] == "<="
    assert float(_row(out, "headroom, GiB")[-1].lstrip("~")) >= 0
    # The window sentence does not say the top is below the mfs that failed with larger graphs.
    assert f"with graphs up to bs {cap}" in flat


def test_a_given_slope_still_wins_over_the_failed_bucket() -> None:
    out = _flat(
        _run(
            "whatif",
            "oom-decode-largest-bucket-constructed.log",
            "--cuda-graph-max-bs",
            "136",
            "--mib-per-row",
            "1",
        )
    )
    assert "from the failed decode bucket" not in out
    assert "given: --mib-per-row 1" in out


def test_whatif_counts_tokens_with_the_cell_analyze_says_sglang_sized_with() -> None:
    """003: analyze reads 164.57 GiB / 3,199,575 tokens = 55,227 B as SGLang's sizing cell and
    61,463 B as the allocated one (#9). At mfs 0.8 the rule's budget falls by 30.19 GiB: about
    586,960 tokens at 55,227 B (not 527,304 at 61,463), a pool of tokens x 61,463 B."""
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log("003-")), "--mem-fraction-static", "0.8"])
    assert r.exit_code == 0, r.output
    out = r.output
    flat = _flat(out)
    rest0, rest1 = (float(x) for x in _row(out, "KV budget by SGLang's rule")[-2:])
    t0, t1 = (int(x.replace(",", "")) for x in _row(out, "KV tokens")[-2:])
    assert t0 == 3_199_575
    drop = (rest0 - rest1) * 2**30
    assert abs((t0 - t1) - drop / 55_227) < 0.01 * 2**30 / 55_227  # print rounding of rest
    pool1 = float(_row(out, "KV pool, GiB")[-1])
    assert abs(pool1 - (t1 + 1) * 61_463 / 2**30) < 0.006
    assert "As analyze reads this launch, SGLang sized the pool as budget / its cell size" in flat
    assert "this version sizes KV differently" not in flat
    assert "tokens = rest // 55,227 B per token" in flat


@pytest.mark.parametrize(
    ("name", "said"),
    [
        # 10.76 - 78.40 x 0.137 = 0.02; 10.76 - 78.40 x 0.15 = -1.00; 1 - 10.76 / 78.40 = 0.8628
        (
            "not-enough-memory-kv-constructed.log",
            [
                "= 0.02 GiB at 0.863",
                "= -1.00 GiB at 0.85 (as logged)",
                "positive above mem_fraction_static 0.8628",
            ],
        ),
        # 5.17 - 78.63 x 0.137 = -5.60; from 1 - 5.17 / 78.63 = 0.9342
        ("oom-load-weights-constructed.log", ["= -5.60 GiB at 0.863", "0.9342"]),
        (
            "not-enough-memory-rule-positive-constructed.log",
            ["= 1.35 GiB at 0.88 (as logged)", "the rule does not explain that failure"],
        ),
    ],
)
def test_whatif_on_a_kv_sizing_failure_gives_the_budget_in_gib_and_no_tokens(
    name: str, said: list[str]
) -> None:
    """No 'KV Cache is allocated' line: no cell size, so no tokens; the budget needs none (#10e)."""
    out = _flat(_run("whatif", name, "--mem-fraction-static", "0.863", code=1))
    assert "KV tokens, graphs and headroom are unknown" in out
    for s in said:
        assert s in out, (s, out)
