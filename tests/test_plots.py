"""Plots: the view-model dicts, the structure of the SVG drawn from them, and `logmem plot`."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import logmem
import logmem.api
from conftest import FIXTURES
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.cli.main import cli, main
from logmem.report.figures import plots

LOG_021 = (
    FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log"
)  # one rank, three graph families
LOG_003 = FIXTURES / "003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log"  # 8 ranks, crash mid-capture
LOG_001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"  # 4 ranks, no per-bucket readings


def ledger(path: Path) -> Any:
    return build_ledger(read_log(str(path)).launches[0])


def svg_of(kind: str, data: Any) -> str:
    return plots.svg(kind, data)


def figure_of(kind: str, data: Any) -> Any:
    """The plot replayed on matplotlib, as logmem.plot returns it."""
    from logmem.report.figures.scene_mpl import scene_figure

    return scene_figure(plots.scene(kind, data))


def count_ids(svg: str, gid: str) -> int:
    """Items tagged `gid`: the writer numbers repeats (gid, gid-2, ...) to keep ids unique."""
    return len(re.findall(rf'id="{re.escape(gid)}(?:-\d+)?"', svg))


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


# --- waterfall -----------------------------------------------------------------------------


def test_waterfall_data_chains_the_phases() -> None:
    rl = ledger(LOG_021).ranks[0]
    d = plots.waterfall_data(rl)
    steps = d["steps"]
    assert [s["key"] for s in steps] == [p.key for p in rl.phases]
    for a, b in zip(steps, steps[1:]):
        assert a["after_gib"] == b["before_gib"]
    weights = next(s for s in steps if s["key"] == "target_weights")
    assert weights["delta_gib"] == pytest.approx(67.56)
    assert weights["label"].startswith("−67.56 GiB")
    assert "weights" in weights["label"]
    # Phases between two equal readings with nothing in them are not drawn.
    assert not next(s for s in steps if s["key"].startswith("pre_capture:target verify"))["shown"]


def test_step_label_names_the_biggest_causes() -> None:
    causes = [
        {"name": "KV pool (K+V, 46,611 tokens)", "gib": 2.84},
        {"name": "request-to-token table", "gib": 1.0},
        {"name": "unlogged", "gib": 0.16},
    ]
    assert (
        plots.step_label(causes, 4.0)
        == "−4.00 GiB: KV pool 2.84; request-to-token table 1.00 +1 more"
    )
    assert plots.step_label([{"name": "weights", "gib": 15.54}], 15.54) == "−15.54 GiB weights"
    assert plots.step_label([{"name": "between steps", "gib": -0.03}], -0.03).startswith(
        "+0.03 GiB freed"
    )


def test_waterfall_svg_has_one_bar_per_cause_and_a_label_per_step() -> None:
    d = plots.waterfall_data(ledger(LOG_021).ranks[0])
    svg = svg_of("waterfall", [d])
    shown = [s for s in d["steps"] if s["shown"]]
    assert len(re.findall(r'id="step-\d+-cause-\d+"', svg)) == sum(len(s["causes"]) for s in shown)
    assert len(re.findall(r'id="label-\d+"', svg)) == len(shown)
    assert "Free memory phase by phase: the GPU (no rank tag)" in texts(svg)
    assert "capture target prefill" in texts(svg)


def test_waterfall_panels_per_rank() -> None:
    led = ledger(LOG_003)
    svg = svg_of("waterfall", [plots.waterfall_data(r) for r in led.ranks[:3]])
    titles = [t for t in texts(svg) if t.startswith("Free memory phase by phase")]
    assert titles == [f"Free memory phase by phase: TP{i}" for i in range(3)]


def test_waterfall_labels_stay_inside_the_figure() -> None:
    fig = figure_of("waterfall", [plots.waterfall_data(ledger(LOG_021).ranks[0])])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = (
        fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    ).get_renderer()
    width = fig.bbox.width
    for t in fig.axes[0].texts:
        box = t.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width + 1, t.get_text()


# --- buckets -------------------------------------------------------------------------------


def test_buckets_data_per_graph_family() -> None:
    fams = plots.buckets_data(ledger(LOG_021).ranks[0])
    assert [f["graph"] for f in fams] == ["target prefill", "target verify", "draft verify"]
    prefill = fams[0]
    assert len(prefill["sizes"]) == 58 and prefill["sizes"][prefill["largest"]] == 8192
    assert prefill["cost_gib"][prefill["largest"]] == pytest.approx(5.04)
    assert fams[1]["sizes"] == [8, 7, 6, 5, 4, 3, 2, 1]


def test_buckets_svg_highlights_the_largest_bucket_of_each_family() -> None:
    fams = plots.buckets_data(ledger(LOG_021).ranks[0])
    svg = svg_of("buckets", fams)
    assert count_ids(svg, "largest-bucket") == 3
    assert count_ids(svg, "bucket-line") == 3
    assert "largest bucket (num_tokens 8192): 5.04 GiB" in texts(svg)
    assert "Buckets of capture target verify (bs x 16 tokens): the GPU (no rank tag)" in texts(svg)


def test_buckets_of_a_capture_the_log_cut_off() -> None:
    fams = plots.buckets_data(ledger(LOG_003).ranks[0])
    assert len(fams) == 1 and fams[0]["stopped"] and fams[0]["cost_gib"] == [None]
    svg = svg_of("buckets", fams)
    assert any("log stops during capture" in t for t in texts(svg))
    assert 'id="capture-end"' not in svg and 'id="capture-begin"' in svg


def test_no_buckets_figure_says_so() -> None:
    assert plots.buckets_data(ledger(LOG_001).ranks[0]) == []
    assert "no bucket readings in this log" in texts(svg_of("buckets", []))


# --- ranks ---------------------------------------------------------------------------------


def test_ranks_data_and_the_binding_rank() -> None:
    led = ledger(LOG_003)
    d = plots.ranks_data(led)
    assert d["ranks"] == [f"TP{i}" for i in range(8)] and d["binding"] == "TP2"
    start = d["series"][0]
    assert start["key"] == "start"
    after_weights = next(s for s in d["series"] if s["key"] == "target_weights")
    assert after_weights["above_min_gib"][2] == 0.0  # TP2 is the least free before loading
    assert min(v for v in after_weights["above_min_gib"] if v is not None) == 0.0


def test_ranks_svg_has_a_bar_per_rank_and_phase_on_both_panels() -> None:
    d = plots.ranks_data(ledger(LOG_003))
    svg = svg_of("ranks", d)
    # A rank that has no reading for a phase (capture never ended there) gets no bar.
    n = sum(v is not None for s in d["series"] for v in s["gib"])
    assert n < len(d["ranks"]) * len(d["series"])
    assert len(re.findall(r'id="rank-\d+-phase-\d+"', svg)) == n
    assert len(re.findall(r'id="spread-\d+-phase-\d+"', svg)) == n
    assert "binding rank" in texts(svg)
    assert count_ids(svg, "binding-rank") == 2


def test_ranks_without_imbalance_draw_one_panel() -> None:
    d = plots.ranks_data(ledger(LOG_001))  # four identical ranks
    svg = svg_of("ranks", d)
    assert not re.findall(r'id="spread-', svg)
    assert "at capture decode begin" in texts(svg)  # never "after before capture"


# --- fit -----------------------------------------------------------------------------------

FIT_VIEW = {
    "launches": [
        {"name": "a.log (launch 0)"},
        {"name": "b.log (launch 0)"},
        {"name": "c.log (launch 0)"},
    ],
    "slopes": [
        {
            "graph": "decode",
            "rank": "TP0",
            "basis": "largest bucket",
            "rows": [80, 160, 256],
            "largest_bucket_gib": [0.52, 0.68, 0.87],
            "total_gib": [0.9, 1.1, 1.4],
            "mib_per_row": 2.03,
            "intercept_gib": 0.36,
            "mib_per_row_error": 0.12,
        },
        {
            "graph": "draft",
            "rank": "TP0",
            "basis": "capture total",
            "rows": [80, 160, 256],
            "largest_bucket_gib": None,
            "total_gib": [0.2, 0.3, 0.41],
            "mib_per_row": 1.22,
            "intercept_gib": 0.1,
            "mib_per_row_error": 0.2,
        },
    ],
}


def test_fit_data_reads_the_compare_view_model() -> None:
    d = plots.fit_data(FIT_VIEW)
    decode, draft = d["slopes"]
    assert decode["largest_bucket_gib"] == [0.52, 0.68, 0.87]
    assert draft["largest_bucket_gib"] == [0.2, 0.3, 0.41]  # basis "capture total": the totals
    assert decode["labels"] == ["a.log (launch 0)", "b.log (launch 0)", "c.log (launch 0)"]


def test_fit_band_pivots_on_the_mean_and_widens_by_one_point_error() -> None:
    s = plots.fit_data(FIT_VIEW)["slopes"][0]
    mean = sum(s["rows"]) / 3
    mid, lo, hi = plots.fit_band(s, [0.0, mean, 400.0])
    assert mid[0] == pytest.approx(0.36)
    assert mid[2] - mid[0] == pytest.approx(400 * 2.03 / 1024)
    assert hi[1] - mid[1] == pytest.approx(0.01)  # a bucket cost: two readings of +-0.005 GiB
    assert hi[2] - mid[2] == pytest.approx((400 - mean) * 0.12 / 1024 + 0.01)


def test_fit_svg_has_points_line_and_band_per_family() -> None:
    svg = svg_of("fit", plots.fit_data(FIT_VIEW))
    for gid in ("fit-band", "fit-line", "fit-points"):
        assert count_ids(svg, gid) == 2
    assert "decode on TP0: largest bucket against rows" in texts(svg)
    assert "draft on TP0: capture total against rows" in texts(svg)
    assert any("2.03 ± 0.12 MiB/row" in t for t in texts(svg))


# --- drawing rules -------------------------------------------------------------------------


def test_log_strings_are_literal_and_escaped_in_svg() -> None:
    d = plots.waterfall_data(ledger(LOG_021).ranks[0])
    d["title"] = "<script>alert(1)</script> $x$ & co"
    svg = svg_of("waterfall", [d])
    assert "<script>" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt; $x$ &amp; co" in svg  # no mathtext, escaped


def test_svg_is_deterministic_and_undated() -> None:
    d = plots.buckets_data(ledger(LOG_021).ranks[0])
    a, b = svg_of("buckets", d), svg_of("buckets", d)
    assert a == b
    assert "<dc:date>" not in a


def test_png_has_no_software_stamp() -> None:
    from logmem.report.figures.scene_mpl import figure_bytes

    png = figure_bytes(figure_of("ranks", plots.ranks_data(ledger(LOG_001))), "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"matplotlib version" not in png


def test_plots_never_import_pyplot() -> None:
    code = (
        "import sys; from logmem.api import read_log; from logmem.analysis.attribution import build_ledger;"
        "from logmem.report import html; from logmem.report.figures import plots;"
        f"a = read_log({str(LOG_003)!r}); html.render(a);"
        "print('matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- logmem plot ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "marker"),
    [
        ("waterfall", 'id="step-'),
        ("buckets", 'id="largest-bucket"'),
        ("ranks", 'id="rank-0-phase-0"'),
    ],
)
def test_plot_command_writes_svg(tmp_path: Path, kind: str, marker: str) -> None:
    log = LOG_003
    out = tmp_path / f"{kind}.svg"
    result = CliRunner().invoke(cli, ["plot", str(log), "--kind", kind, "-o", str(out)])
    assert result.exit_code == 0, result.output
    svg = out.read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and marker in svg


def test_plot_command_writes_png_and_picks_ranks(tmp_path: Path) -> None:
    out = tmp_path / "w.png"
    result = CliRunner().invoke(
        cli, ["plot", str(LOG_003), "--rank", "TP1", "--rank", "TP2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")


def test_plot_svg_to_stdout() -> None:
    result = CliRunner().invoke(cli, ["plot", str(LOG_001), "-f", "svg"])
    assert result.exit_code == 0
    assert "<svg" in result.output


class _Terminal(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.buffer = io.BytesIO()

    def isatty(self) -> bool:
        return True


def test_plot_refuses_png_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    term = _Terminal()
    monkeypatch.setattr(sys, "stdout", term)
    assert main(["plot", str(LOG_001)]) == 1
    assert term.buffer.getvalue() == b""
    assert "refusing to write a binary image to a terminal" in capsys.readouterr().err


def test_plot_errors() -> None:
    r = CliRunner()
    res = r.invoke(cli, ["plot", str(LOG_001), "--kind", "buckets", "-o", "x.png"])
    assert res.exit_code == 1 and "no bucket readings" in res.output
    res = r.invoke(cli, ["plot", str(LOG_001), "-o", "x.html"])
    assert res.exit_code == 2 and "plot writes PNG or SVG" in res.output
    res = r.invoke(cli, ["plot", str(LOG_001), "--kind", "fit", "-o", "x.svg"])
    assert res.exit_code == 2 and "two or more LOGS" in res.output


def test_plot_reads_stdin_like_a_file() -> None:
    r = CliRunner()
    from_file = r.invoke(cli, ["plot", str(LOG_001), "-f", "svg"])
    from_stdin = r.invoke(cli, ["plot", "-", "-f", "svg"], input=LOG_001.read_bytes())
    assert from_file.exit_code == 0 and from_stdin.exit_code == 0, from_stdin.output
    assert "<svg" in from_stdin.stdout and from_stdin.stdout == from_file.stdout


def test_plot_fit_takes_one_log_from_stdin() -> None:
    e7 = [FIXTURES / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]
    r = CliRunner()
    files = r.invoke(cli, ["plot", "--kind", "fit", *map(str, e7), "-f", "svg"])
    piped = r.invoke(
        cli,
        ["plot", "--kind", "fit", "-", *map(str, e7[1:]), "-f", "svg"],
        input=e7[0].read_bytes(),
    )
    assert files.exit_code == 0 and piped.exit_code == 0, piped.output
    assert 'id="fit-line' in files.stdout and 'id="fit-line' in piped.stdout
    twice = r.invoke(cli, ["plot", "--kind", "fit", "-", "-", "-f", "svg"], input=b"")
    assert twice.exit_code == 1 and "only one LOG can be '-'" in twice.stderr


def test_plot_of_a_file_with_two_launches_says_which_it_draws() -> None:
    two = FIXTURES / "two-launches-restart-constructed.log"
    r = CliRunner()
    first = r.invoke(cli, ["plot", str(two), "-f", "svg"])
    assert first.exit_code == 0
    assert "holds 2 launches; plotting launch 0 (--launch N picks another)" in first.stderr
    second = r.invoke(cli, ["plot", str(two), "--launch", "1", "-f", "svg"])
    assert second.exit_code == 0 and "plotting launch" not in second.stderr
    assert second.stdout != first.stdout
    # The library says the same as a warning, and plots the launch it is asked for.
    with pytest.warns(logmem.api.PlotNote, match="plotting launch 0"):
        logmem.plot(str(two))
    bad = r.invoke(cli, ["plot", str(two), "--launch", "5"])
    assert bad.exit_code == 1 and "--launch 5: the input holds 2 launch(es)" in bad.stderr


def test_a_token_sized_graph_is_labelled_in_tokens_as_the_text_says() -> None:
    """021's target prefill graph is captured by num_tokens=[4 .. 8192] (line 159): the plot
    says "num_tokens 8192" as the text report does, not "bs 8192" (review E #9)."""
    from logmem.analysis.attribution import build_ledger
    from logmem.api import read_log

    led = build_ledger(
        read_log(str(FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log")).launches[0]
    )
    fams = [f for r in led.ranks[:1] for f in plots.buckets_data(r)]
    svg = plots.svg("buckets", fams)
    assert "largest bucket (num_tokens 8192): 5.04 GiB" in svg
    assert "bs 8192" not in svg
    assert "bucket size: tokens (num_tokens)" in svg
    assert "largest bucket (bs 8 = 128 tokens)" in svg  # the verify graph: bs x draft tokens
