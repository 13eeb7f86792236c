"""`logmem diff`, `logmem fit` and `logmem whatif` through click's CliRunner.

Files and stdin ('-' for one input), every format, -o, and exit codes: 0 ok, 1 a
refused fit / unknown launch / unreadable input, 2 usage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_fit import Model, make_log

from conftest import FIXTURES, mfs_differs_pool_at_top
from logmem.cli.main import cli, main

LOG001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
FORMATS = ["text", "markdown", "json"]


def run(args: list[str], stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, args, input=stdin)


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    """A max-bs pair in E2 wording, an E7 triple, and a pair that also changes mfs (``mfs``:
    no capture list cut to the request pool; ``mfs_pool``: the pool, 160 requests, ends the
    list at bs 160, so mfs may have moved the graphs)."""
    made = {
        "a80": Model(max_bs=80, ranks=2),
        "b160": Model(max_bs=160, ranks=2, port=30001),
        "mfs": Model(max_bs=160, ranks=2, mfs=0.83),
        "mfs_pool": Model(max_bs=160, ranks=2, mfs=0.83, request_pool=160),
        "e7_128": Model(era="E7", max_bs=128),
        "e7_256": Model(era="E7", max_bs=256),
        "e7_512": Model(era="E7", max_bs=512),
    }
    out = {}
    for name, m in made.items():
        p = tmp_path / f"{name}.log"
        p.write_text(make_log(m))
        out[name] = p
    return out


def _check(fmt: str, output: str, schema: str, title: str) -> dict[str, object] | None:
    if fmt == "json":
        doc = json.loads(output)
        assert doc["schema"] == schema
        return doc  # type: ignore[no-any-return]
    if fmt == "markdown":
        assert output.startswith(f"## logmem {title}")
        assert "### Assumptions" in output
    else:
        assert output.startswith(f"logmem {title}")
        assert max(len(x) for x in output.splitlines()) <= 100
    return None


# --- diff ---------------------------------------------------------------------------------


@pytest.mark.parametrize("use_stdin", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_diff_formats_files_and_stdin(logs: dict[str, Path], fmt: str, use_stdin: bool) -> None:
    a = logs["a80"]
    res = run(
        ["diff", "-" if use_stdin else str(a), str(logs["b160"]), "-f", fmt],
        a.read_bytes() if use_stdin else None,
    )
    assert res.exit_code == 0, res.output
    doc = _check(fmt, res.output, "logmem.diff/1", "diff")
    if doc is not None:
        assert doc["changed_args"] == {"cuda_graph_max_bs": [80, 160]}
        assert doc["ignored_args"] == {"port": [30000, 30001]}
        (s,) = doc["slopes"]  # type: ignore[misc]
        assert s["graph"] == "decode" and s["rank"] == "TP0" and s["rows"] == [80, 160]
        assert s["mib_per_row"] == pytest.approx(2.5, abs=s["mib_per_row_error"])
        assert s["mib_per_row_error"] == 0.256  # (0.01 + 0.01) GiB / 80 rows
        assert doc["a"]["paths"] == ["-" if use_stdin else str(a)]  # type: ignore[index]
    else:
        assert "MiB per row" in res.output and "TP1: the same as TP0." in res.output


def test_diff_per_rank_files_as_a_comma_list(tmp_path: Path, logs: dict[str, Path]) -> None:
    # Split A into one file per rank: the comma list is one launch.
    lines = logs["a80"].read_text().splitlines(keepends=True)
    tp0 = tmp_path / "tp0.log"
    tp1 = tmp_path / "tp1.log"
    tp0.write_text("".join(x for x in lines if " TP1]" not in x))
    tp1.write_text("".join(x for x in lines if " TP1]" in x))
    res = run(["diff", f"{tp0},{tp1}", str(logs["b160"]), "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["a"]["paths"] == [str(tp0), str(tp1)]
    assert {p["rank"] for p in doc["phases"]} == {"TP0", "TP1"}


def test_diff_compares_a_pair_that_also_changes_mfs_without_a_slope(logs: dict[str, Path]) -> None:
    res = run(["diff", str(logs["a80"]), str(logs["mfs_pool"])])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert (
        "none: besides the CUDA-graph batch sizes the launches differ in mem_fraction_static (0.85 vs 0.83), "
        "so a slope would mix their effects"
    ) in flat
    assert "--allow-diff KEY" in flat
    ok = run(
        [
            "diff",
            str(logs["a80"]),
            str(logs["mfs"]),
            "--allow-diff",
            "mem_fraction_static",
            "-f",
            "json",
        ]
    )
    assert ok.exit_code == 0
    assert json.loads(ok.output)["allowed_args"] == ["mem_fraction_static"]
    assert json.loads(ok.output)["slopes"]
    plain = run(["diff", str(logs["a80"]), str(logs["mfs"]), "--no-slope", "-f", "json"])
    assert plain.exit_code == 0 and json.loads(plain.output)["slopes"] == []


def test_diff_of_two_different_models_and_versions_is_short_and_says_so_first() -> None:
    """001 (QwQ-32B, E2, 107 server_args keys) vs 017 (Qwen3-8B, E6, model_path only): a
    comparison (exit 0), not a 10 KB refusal listing 'quantization (None vs None)'."""
    b = FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log"
    res = run(["diff", str(LOG001), str(b)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert max(len(x) for x in out.splitlines()) <= 100
    assert "None vs None" not in out and "null  null" not in out
    body = out.split("Settings that differ")[0]
    assert (
        "Different models: A loads /home/model/Qwen/QwQ-32B (Qwen2ForCausalLM), B loads Qwen/Qwen3-8B"
        in " ".join(body.split())
    )
    assert "Different SGLang wording: A reads as E2" in " ".join(body.split())
    flat = " ".join(out.split())
    # The 31 keys of the 106 that cannot change GPU memory (rules.memory_neutral_arg) are on
    # the Ignored line, not offered as causes.
    assert "Only in A (75): tokenizer_mode, skip_tokenizer_init" in flat and "and 63 more." in flat
    assert "only A prints tokenizer_path," in flat
    assert "None among the keys both launches print." in out
    assert len(out) < 6000
    doc = json.loads(run(["diff", str(LOG001), str(b), "-f", "json"]).output)
    assert (
        doc["changed_args"] == {} and len(doc["only_in"]["A"]) == 106 and "B" not in doc["only_in"]
    )
    assert doc["one_sided_args"]["quantization"] == [None, None]
    # Model, GPU (21.63 vs 177.57 GiB free before loading) and wording: three headlines.
    assert len(doc["headlines"]) == 3 and doc["b"]["model"] == "Qwen/Qwen3-8B (Qwen3ForCausalLM)"
    assert doc["headlines"][1].startswith(
        "Different free memory before loading: A had 21.63 GiB free before loading (line 26), B 177.57"
    )
    assert doc["slopes"] == [] and "73 keys only A prints" in doc["slope_note"]


def test_fit_still_refuses_briefly() -> None:
    b = FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log"
    res = run(["fit", str(LOG001), str(b)])
    assert res.exit_code == 1
    # The model first (review27b #2), then the keys.
    assert res.output.startswith(
        "Error: no slope: the launches load different models: launch 1 loads Qwen2ForCausalLM"
    )
    assert "they also differ in 73 keys only launch 1 prints: " in res.output
    assert "None vs None" not in res.output and len(res.output) < 600


def test_diff_of_different_eras_names_the_wording(logs: dict[str, Path]) -> None:
    res = run(["diff", str(logs["a80"]), str(logs["e7_256"]), "--no-slope"])
    assert res.exit_code == 0, res.output
    assert (
        "A E2 (about Feb-Apr 2025; dated" in res.output
        and "B E7 (about Jun 2026 on; dated" in res.output
    )
    assert "elapsed=, usage, avail (E7)" in res.output
    flat = " ".join(res.output.split())
    assert (
        "the others in the order the logs list them (A's n-th unmatched rank with B's n-th): TP0 ~ (GPU)"
        in flat
    )


def test_diff_launch_selection(logs: dict[str, Path], tmp_path: Path) -> None:
    both = tmp_path / "both.log"
    both.write_text(logs["a80"].read_text() + logs["b160"].read_text())
    res = run(["diff", str(both), str(both), "--launch", "0", "--launch-b", "1", "-f", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["changed_args"] == {"cuda_graph_max_bs": [80, 160]}
    many = run(["diff", str(both), str(logs["b160"])])
    assert many.exit_code == 1
    assert (
        "Error: A (" in many.output
        and "holds 2 launches; pick one with --launch N (0 to 1)" in many.output
    )
    bad = run(["diff", str(logs["a80"]), str(logs["b160"]), "--launch", "3"])
    assert bad.exit_code == 1
    assert "--launch 3: A (" in bad.output and "holds 1 launch(es), numbered 0 to 0" in bad.output


def test_diff_usage_errors() -> None:
    assert run(["diff", str(LOG001)]).exit_code == 2
    res = run(["diff", "-", "-"], b"")
    assert res.exit_code == 2 and "only one of A and B can be '-'" in res.output
    assert run(["diff", str(LOG001), str(LOG001), "-f", "pdf"]).exit_code == 2


def test_diff_to_a_file_guesses_the_format(logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "d.md"
    res = run(["diff", str(logs["a80"]), str(logs["b160"]), "-o", str(out)])
    assert res.exit_code == 0 and res.stdout == ""
    assert out.read_text().startswith("## logmem diff")
    page = tmp_path / "d.html"
    html = run(["diff", str(logs["a80"]), str(logs["b160"]), "-o", str(page)])
    assert html.exit_code == 0
    assert page.read_text().startswith("<!DOCTYPE html>") and "logmem diff" in page.read_text()


def test_main_returns_exit_codes(
    logs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", str(logs["a80"]), str(logs["b160"]), "-f", "json"]) == 0
    assert main(["diff", str(logs["a80"]), str(logs["mfs_pool"])]) == 0
    capsys.readouterr()
    assert main(["fit", str(logs["a80"]), str(logs["mfs_pool"])]) == 1
    assert "mem_fraction_static (0.85 vs 0.83)" in capsys.readouterr().err
    assert main(["diff", str(logs["a80"]), str(tmp_path / "nope.log")]) == 1
    assert "Error: cannot open" in capsys.readouterr().err
    assert main(["fit", str(logs["a80"])]) == 2


# --- fit ----------------------------------------------------------------------------------


@pytest.mark.parametrize("use_stdin", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_fit_formats_files_and_stdin(logs: dict[str, Path], fmt: str, use_stdin: bool) -> None:
    first = logs["e7_128"]
    args = [
        "fit",
        "-" if use_stdin else str(first),
        str(logs["e7_256"]),
        str(logs["e7_512"]),
        "-f",
        fmt,
    ]
    res = run(args, first.read_bytes() if use_stdin else None)
    assert res.exit_code == 0, res.output
    doc = _check(fmt, res.output, "logmem.fit/1", "fit")
    if doc is not None:
        (s,) = doc["slopes"]  # type: ignore[misc]
        assert s["graph"] == "target decode" and s["rows"] == [128, 256, 512]
        assert s["rows_source"] == "num_tokens_per_req=1 from the capture begin line"
        assert len(s["residuals_gib"]) == 3 and s["mib_per_row_stderr"] is not None
        assert abs(s["mib_per_row"] - 2.5) <= s["mib_per_row_error"]
        assert abs(s["intercept_gib"] - 0.30) <= s["intercept_error_gib"]
        assert s["heuristic"]["sglang_mib_per_bs"] == 2.0
    else:
        assert "Residuals, GiB:" in res.output


def test_fit_of_two_equals_diff(logs: dict[str, Path]) -> None:
    a, b = str(logs["a80"]), str(logs["b160"])
    d = json.loads(run(["diff", a, b, "-f", "json"]).output)["slopes"][0]
    f = json.loads(run(["fit", a, b, "-f", "json"]).output)["slopes"][0]
    for key in ("mib_per_row", "intercept_gib", "mib_per_row_error", "intercept_error_gib", "rows"):
        assert d[key] == f[key]


def test_fit_refusals(logs: dict[str, Path]) -> None:
    res = run(["fit", str(logs["a80"]), str(logs["mfs_pool"])])
    assert res.exit_code == 1 and "mem_fraction_static (0.85 vs 0.83)" in res.output
    same = run(["fit", str(logs["a80"]), str(logs["a80"])])
    assert same.exit_code == 1
    assert (
        same.output
        == "Error: no slope: both launches capture the same largest batch size 80; a slope needs "
        "two different sizes\n"
    )
    assert run(["fit", str(logs["a80"])]).exit_code == 2
    assert run(["fit", "-", "-"], b"").exit_code == 2


# --- whatif -------------------------------------------------------------------------------


@pytest.mark.parametrize("use_stdin", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_whatif_001_worked_figures(fmt: str, use_stdin: bool) -> None:
    args = ["whatif", "-" if use_stdin else str(LOG001), "--mem-fraction-static", "0.87", "-f", fmt]
    res = run(args, LOG001.read_bytes() if use_stdin else None)
    assert res.exit_code == 0, res.output
    doc = _check(fmt, res.output, "logmem.whatif/1", "whatif")
    if doc is not None:
        assert doc["kv_tokens"] == 53698
        assert (
            doc["kv_gib"] == 3.28 and doc["headroom_gib"] == 0.10 and doc["graph_gib"] == 0.93
        )  # the end line's logged mem usage
        assert doc["feasible"] is True
        assert doc["mem_fraction_static_window"] == [0.719, 0.874]
        assert doc["predicted"]["rest_gib"] == 3.28  # type: ignore[index]
        assert doc["lo_full_context"] is None
        assert str(doc["full_context"]).startswith("impossible: it needs 8.00 GiB of KV")
    elif fmt == "text":
        assert "[0.719, 0.874]" in res.output
        assert "53,698" in res.output
        assert "One full context (131,072 tokens): impossible" in res.output


def test_whatif_empty_window_is_said_plainly() -> None:
    res = run(["whatif", str(LOG001), "--activation-reserve", "8"])
    assert res.exit_code == 0
    assert "EMPTY: no mem_fraction_static works" in res.output


def test_whatif_max_bs_with_a_measured_or_heuristic_slope(logs: dict[str, Path]) -> None:
    a, b = str(logs["a80"]), str(logs["b160"])
    res = run(["whatif", a, "--cuda-graph-max-bs", "160", "--slope-from", a, b, "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["inputs"]["slope"]["measured"] is True
    measured_b = json.loads(run(["whatif", b, "-f", "json"]).output)
    assert abs(doc["graph_gib"] - measured_b["graph_gib"]) <= 0.03
    given = json.loads(
        run(
            ["whatif", a, "--cuda-graph-max-bs", "160", "--mib-per-row", "2.5", "-f", "json"]
        ).output
    )
    # The slope prices the largest bucket; the buckets the list adds below 160 (88-152) are
    # priced apart, at the launch's own later buckets' average.
    added = given["added_buckets"]
    assert added["sizes"] == list(range(88, 160, 8)) and added["gib"] is not None
    assert abs(given["predicted"]["graph_change_gib"] - (2.5 * 80 / 1024 + added["gib"])) <= 0.01
    # With no slope asked for, this launch's own bars price the growth (an upper bound).
    bars = run(["whatif", a, "--cuda-graph-max-bs", "160"])
    assert bars.exit_code == 0 and "from this launch's bars" in " ".join(bars.output.split())
    assert "estimated upper bound" in " ".join(bars.output.split())
    # Without bar readings SGLang's heuristic prices it, and says so.
    nobars = Path(a).with_name("a80-nobars.log")
    text = Path(a).read_text()
    nobars.write_text("\n".join(x for x in text.split("\n") if "Capturing batches" not in x))
    heur = run(["whatif", str(nobars), "--cuda-graph-max-bs", "160"])
    assert heur.exit_code == 0 and "heuristic, not measured" in heur.output
    bad = run(["whatif", a, "--cuda-graph-max-bs", "160", "--slope-from", a, str(logs["mfs_pool"])])
    assert bad.exit_code == 1 and "mem_fraction_static" in bad.output


def test_whatif_on_a_crashed_launch_answers_with_bounds() -> None:
    """A launch that ran out of memory in capture is predicted (exit 0), never called feasible,
    and docs/compare.md shows the same lines."""
    log = FIXTURES / "oom-decode-largest-bucket-constructed.log"
    res = run(["whatif", str(log), "--mem-fraction-static", "0.966"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    feasible = next(x for x in lines if x.startswith("feasible"))
    assert feasible.split() == [
        "feasible",
        "NO",
        "(crashed",
        "at",
        "bs",
        "256)",
        "not",
        "ruled",
        "out",
    ]
    doc = (FIXTURES.parent / "docs" / "compare.md").read_text()
    shown = doc.split(
        "$ logmem whatif oom-decode-largest-bucket-constructed.log --mem-fraction-static 0.966\n...\n"
    )[1]
    for line in shown.split("```", 1)[0].splitlines():
        assert line in lines, line
    j = json.loads(run(["whatif", str(log), "-f", "json"]).output)
    assert (
        j["measured"]["feasible"] is False
        and j["measured"]["feasible_label"] == "NO (crashed at bs 256)"
    )
    assert j["unfinished"]["memory_related"] is True and j["window_top_bound"] == "at most"
    assert j["mem_fraction_static_window"][1] < 0.97


def test_whatif_usage_and_selection_errors(logs: dict[str, Path]) -> None:
    a, b = str(logs["a80"]), str(logs["b160"])
    both = run(["whatif", a, "--mib-per-row", "2", "--slope-from", a, b])
    assert both.exit_code == 2 and "not both" in both.output
    assert run(["whatif", a, "--static-mib-per-row", "0.1"]).exit_code == 2
    assert run(["whatif", "-", "--slope-from", "-", b], b"").exit_code == 2
    assert run(["whatif", a, "--mem-fraction-static", "abc"]).exit_code == 2
    out = run(["whatif", a, "--mem-fraction-static", "1.5"])
    assert (
        out.exit_code == 1 and out.output == "Error: --mem-fraction-static 1.5 is outside (0, 1]\n"
    )
    launch = run(["whatif", a, "--launch", "2"])
    assert launch.exit_code == 1 and "--launch 2: LOG (" in launch.output


# --- constructed pair fixtures (fixtures/make_pairs.py; truths in fixtures/README.md) --------

PAIRS = {p.stem.removesuffix("-constructed"): p for p in sorted(FIXTURES.glob("pair-*.log"))}
# The graph model make_pairs.py prints from: largest bucket = intercept + slope x rows.
TRUTH = {"e2": (0.40, 2.5), "e7": (1.10, 3.2)}


@pytest.mark.parametrize(
    ("era", "names"),
    [
        ("e2", ["pair-e2-maxbs80", "pair-e2-maxbs160"]),
        ("e7", ["pair-e7-maxbs128", "pair-e7-maxbs256", "pair-e7-maxbs512"]),
    ],
)
def test_constructed_pairs_recover_the_truth(era: str, names: list[str]) -> None:
    assert all(n in PAIRS for n in names), f"fixtures/{names}-constructed.log missing"
    found = [PAIRS[n] for n in names]
    res = run(["fit", *map(str, found), "-f", "json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)["slopes"][0]
    intercept, slope = TRUTH[era]
    assert abs(s["mib_per_row"] - slope) <= s["mib_per_row_error"]
    assert abs(s["intercept_gib"] - intercept) <= s["intercept_error_gib"]


def test_constructed_pair_with_a_different_mfs_keeps_its_slope() -> None:
    """mfs 0.85 vs 0.83 sizes the KV pool only: both request pools (3,199 and 3,071) are above
    the largest captured bs (128, 256), so the slope is the one of the 0.85 pair."""
    pair = [str(PAIRS["pair-e7-maxbs128"]), str(PAIRS["pair-e7-maxbs256-mfs-differs"])]
    res = run(["fit", *pair, "-f", "json"])
    assert res.exit_code == 0, res.output
    same = run(
        ["fit", str(PAIRS["pair-e7-maxbs128"]), str(PAIRS["pair-e7-maxbs256"]), "-f", "json"]
    )
    (s,), (t,) = json.loads(res.output)["slopes"], json.loads(same.output)["slopes"]
    assert s["mib_per_row"] == t["mib_per_row"] == 3.2
    d = json.loads(run(["diff", *pair, "-f", "json"]).output)
    assert d["set_aside_args"] == ["mem_fraction_static"] and d["slopes"]
    assert d["changed_args"]["mem_fraction_static"] == [0.85, 0.83]
    note = next(n for n in d["notes"] if n.startswith("mem_fraction_static differs"))
    assert "(A: 3,199 requests (line 14) against bs 128; B: 3,071 requests (line 14)" in note
    assert "the request pool, which follows the KV tokens and cuts the list" in note
    assert "The KV cache section carries mem_fraction_static's effect." in note


def test_constructed_pair_with_a_different_mfs_and_a_cut_list_is_refused(tmp_path: Path) -> None:
    pair = [str(PAIRS["pair-e7-maxbs128"]), str(mfs_differs_pool_at_top(tmp_path))]
    res = run(["fit", *pair])
    assert res.exit_code == 1 and "mem_fraction_static (" in res.output
    d = run(["diff", *pair, "-f", "json"])
    assert d.exit_code == 0 and json.loads(d.output)["slopes"] == []
    assert json.loads(d.output)["set_aside_args"] == []
    # docs/compare.md shows this pair's Slope section
    doc = (FIXTURES.parent / "docs" / "compare.md").read_text()
    shown = doc.split("```\nSlope\n", 1)[1].split("```", 1)[0]
    text = run(["diff", *pair]).output
    assert "\nSlope\n" + shown in text


def test_docs_transcript_is_current() -> None:
    """docs/compare.md shows `whatif` on log 001; the command must still print exactly that."""
    doc = (FIXTURES.parent / "docs" / "compare.md").read_text()
    cmd = "$ logmem whatif 001-qwq32b-tp4-l4-docs.log --mem-fraction-static 0.87\n"
    shown = doc[doc.index(cmd) + len(cmd) :].split("```", 1)[0]
    res = run(["whatif", str(LOG001), "--mem-fraction-static", "0.87"])
    assert res.output.startswith(shown)
    for command in ("diff", "fit", "whatif"):
        assert f"## `logmem {command}" in doc
        assert run([command, "--help"]).exit_code == 0
