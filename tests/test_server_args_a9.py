"""Review A9: a server_args line its author elided with '...' makes the settings it lacks
unknown, not defaults (017); a mem_fraction_static the log does not print but its readings
give is reported as inferred from its lines, with its rounding, never as printed (014)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.analysis.mfs_inferred import backsolved_mfs
from logmem.api import read_log
from logmem.cli.main import cli

LOG001 = str(FIXTURES / "001-qwq32b-tp4-l4-docs.log")
LOG014 = str(FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log")
LOG017 = str(FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log")


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def test_the_elision_is_a_fact_of_the_server_args_event() -> None:
    sa = read_log(LOG017).launches[0].server_args
    assert sa is not None and sa.elided
    sa001 = read_log(LOG001).launches[0].server_args
    assert sa001 is not None and not sa001.elided


def test_analyze_says_the_line_is_elided_where_mfs_is_missing() -> None:
    for fmt in ("text", "markdown"):
        out = _run("analyze", LOG017, "-f", fmt).replace("\\_", "_")
        assert (
            "its server_args line (line 3) is elided by its author ('...'), so a setting it "
            "leaves out is unknown, not SGLang's default" in out
        )


def test_diff_says_the_line_is_elided_not_another_version() -> None:
    out = _run("diff", LOG001, LOG017)
    assert (
        "B's server_args line is elided by its author ('...'): a key it leaves out is unknown"
        in out
    )
    assert "A key one launch does not print means another SGLang version" not in out
    assert "and B's server_args line is elided by its author ('...'), so a setting it" in out
    doc = json.loads(_run("diff", LOG001, LOG017, "-f", "json"))
    assert doc["server_args_elided"] == ["B"]
    plain = _run("diff", LOG001, str(FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log"))
    assert "A key one launch does not print means another SGLang version" in plain


def test_mfs_inferred_from_the_pools_and_readings_of_014() -> None:
    # P 22.93 (l.37), A 14.08 (l.55), Mamba conv 0.10 + ssm 4.38 (l.57), K 2.50 + V 2.50 (l.59):
    # 1 - (14.08 - 9.48) / 22.93 = 0.7994 (SGLang 0.5.9 handle_max_mamba_cache: Mamba + KV = rest).
    for fmt in ("text", "markdown"):
        out = _run("analyze", LOG014, "-f", fmt).replace("\\_", "_")
        assert (
            "Inferred from lines 37, 55, 57 and 59, not printed: mem_fraction_static 0.799 "
            "(0.798-0.801 by the readings' print rounding), SGLang's KV rule solved for it: "
            "1 - (after-weights free 14.08 - pools 9.48 GiB) / P 22.93 GiB." in out
        )


def test_the_inference_recovers_a_known_value() -> None:
    """capture-oom-no-server-args is oom-decode-largest-bucket (mem_fraction_static=0.97)
    without its server_args line: the inference gives the value back."""
    b = backsolved_mfs(
        read_log(str(FIXTURES / "capture-oom-no-server-args-constructed.log")).launches[0]
    )
    assert b is not None and b.mfs == 0.97 and b.low is not None and b.low <= 0.97 <= (b.high or 0)


def test_no_inference_where_the_value_is_printed() -> None:
    assert "Inferred from lines" not in _run("analyze", LOG001)
