"""logmem's own SVG (report.figures.scene, report.figures.svg): well-formed, escaped, deterministic, readable,
and the HTML reports that embed it import no plotting library."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, cli_in_fresh_process
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.report.figures import plots
from logmem.report.figures.comm_plot import comm_scene
from logmem.report.figures.scene import Scene, Text, fit_text, text_width
from logmem.report.figures.svg import scene_svg

REPO = Path(__file__).resolve().parent.parent
LOG_001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
LOG_003 = FIXTURES / "003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log"
LOG_021 = FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log"
PAIRS = [FIXTURES / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]
HOSTILE = '</svg><script>alert("x")</script> & <g onload=1> ]]> $a$'
NS = "{http://www.w3.org/2000/svg}"


def _scenes(path: Path) -> list[Scene]:
    led = build_ledger(read_log(str(path)).launches[0])
    out = [plots.waterfall_scene([plots.waterfall_data(r) for r in led.ranks[:2]])]
    out.append(plots.buckets_scene([f for r in led.ranks[:1] for f in plots.buckets_data(r)]))
    if len(led.ranks) > 1:
        out.append(plots.ranks_scene(plots.ranks_data(led)))
    return out


# --- the HTML commands load no plotting library -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", str(LOG_001), "-f", "html"],
        ["analyze", str(LOG_021), "-f", "html"],
        ["diff", str(PAIRS[0]), str(PAIRS[1]), "-f", "html"],
        ["fit", *map(str, PAIRS), "-f", "html"],
        ["plot", str(LOG_021), "--kind", "buckets", "-f", "svg"],
    ],
    ids=["analyze-001", "analyze-021", "diff", "fit", "plot-svg"],
)
def test_html_and_svg_output_import_no_matplotlib_numpy_or_pandas(args: list[str]) -> None:
    rc, heavy, out = cli_in_fresh_process(args, ("pandas", "matplotlib", "numpy"))
    assert f"{rc} {heavy} {'<svg' in out}" == "0 [] True", out


def test_html_bytes_are_the_same_in_two_runs(tmp_path: Path) -> None:
    pages = []
    for k in range(2):
        out = tmp_path / f"{k}.html"
        cmd = [
            sys.executable,
            "-m",
            "logmem",
            "analyze",
            str(LOG_003),
            "-f",
            "html",
            "-o",
            str(out),
        ]
        subprocess.run(cmd, check=True, capture_output=True, cwd=REPO, timeout=120)
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]
    assert pages[0].count(b"<svg") >= 3


# --- well-formed and escaped --------------------------------------------------------------


def test_every_figure_of_every_fixture_parses_as_xml() -> None:
    from logmem.report import html

    for log in sorted(FIXTURES.glob("*.log")):
        page = html.render(read_log(str(log)))
        figures = re.findall(r"<svg.*?</svg>", page, re.S)
        assert figures, log.name
        for svg in figures:
            root = ET.fromstring(svg)
            assert root.tag == f"{NS}svg", log.name
            assert root.findall(f".//{NS}text"), log.name


def test_hostile_strings_are_text_in_the_svg() -> None:
    d = plots.waterfall_data(build_ledger(read_log(str(LOG_021)).launches[0]).ranks[0])
    d["title"] = HOSTILE
    d["steps"][0]["phase"] = HOSTILE
    d["steps"][1]["label"] = HOSTILE
    svg = plots.svg("waterfall", [d])
    assert "<script" not in svg and "<g onload" not in svg
    root = ET.fromstring(svg)
    assert [e for e in root.iter() if e.tag not in {f"{NS}{t}" for t in SVG_TAGS}] == []
    said = [e.text for e in root.iter(f"{NS}text")]
    assert HOSTILE in said  # the title, exactly as the log wrote it
    # The cut tick: words dropped, the rest (markup included) still text.
    assert any(t and "…" in t and "onload=1>" in t for t in said if t != HOSTILE)
    assert not [a for e in root.iter() for a in e.attrib if a.startswith("on")]


def test_control_characters_never_reach_the_xml() -> None:
    s = Scene(100, 20)
    s.text(2, 10, "a\x1b]0;title\x07b\x00c\nd\u202ee")
    svg = scene_svg(s)
    text = ET.fromstring(svg).find(f"{NS}text")
    assert text is not None and text.text == "a]0;titlebc\\nde"


SVG_TAGS = ("svg", "defs", "pattern", "path", "rect", "polyline", "polygon", "circle", "text")


def test_comm_cells_and_groups_are_escaped() -> None:
    data: dict[str, Any] = {
        "groups": [HOSTILE],
        "mechanisms": ["<b>", "x&y"],
        "grid": [
            [
                {"bytes": None, "label": HOSTILE, "host": False, "when": "init"},
                {"bytes": 1 << 20, "label": "1.00 MiB", "host": True, "when": "first_use"},
            ]
        ],
    }
    root = ET.fromstring(scene_svg(comm_scene(data)))
    said = [e.text for e in root.iter(f"{NS}text")]
    assert said.count(HOSTILE) == 2 and "<b>" in said and "x&y" in said
    ids = [e.attrib["id"] for e in root.iter() if "id" in e.attrib]
    assert ids == ["hatch"]  # the hatch pattern, referenced by the "measure" cell
    assert root.find(f".//{NS}rect[@fill='url(#hatch)']") is not None


def test_repeated_tags_get_unique_ids() -> None:
    fams = plots.buckets_data(build_ledger(read_log(str(LOG_021)).launches[0]).ranks[0])
    ids = re.findall(r'\bid="([^"]+)"', plots.svg("buckets", fams))
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i.startswith("largest-bucket")] == [
        "largest-bucket",
        "largest-bucket-2",
        "largest-bucket-3",
    ]


# --- readable -------------------------------------------------------------------------------


def test_text_width_is_never_less_than_the_font_draws() -> None:
    """The advance table against matplotlib's own measure of DejaVu Sans, hinted at the PNG's
    100 dpi and unhinted (720 dpi): labels found to fit do fit, and the estimate is not much
    wider than the text."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    font = FontProperties(family="DejaVu Sans", size=9)

    def measured(s: str, dpi: int) -> float:
        r = RendererAgg(4000, 100, dpi)
        return r.get_text_width_height_descent(s, font, ismath=False)[0] * 72 / dpi

    samples = [
        "−4.00 GiB: KV pool 2.84; request-to-token table 1.00 +1 more",
        "free GPU memory (GiB); dashed: 0.53 GiB left at the last reading",
        "WWWWMMMM mmmm iiii llll 0123456789 ±×…—",
        "capture target verify",
        "TP12 DP3 PP1",
    ]
    for s in samples:
        estimate = text_width(s, 9.0)
        assert measured(s, 100) <= estimate <= measured(s, 720) * 1.1, s


def test_fit_text_cuts_to_the_room() -> None:
    long = "a label far too long for the little room there is beside its bar"
    cut = fit_text(long, 8.0, 120.0)
    assert cut.endswith("…") and text_width(cut, 8.0) <= 120.0 and long.startswith(cut[:-1])
    assert fit_text("short", 8.0, 120.0) == "short"


def _box(t: Text) -> tuple[float, float, float, float]:
    """Where a level or upright (rotate 90) text's glyphs are."""
    w = text_width(t.text, t.size, t.bold)
    before = {"start": 0.0, "middle": w / 2, "end": w}[t.anchor]
    if t.rotate == 90:  # reads upwards: the anchor is below or at its middle
        return t.x - 0.76 * t.size, t.y - w + before, t.x + 0.24 * t.size, t.y + before
    x0 = t.x - before
    return x0, t.y - 0.76 * t.size, x0 + w, t.y + 0.24 * t.size


@pytest.mark.parametrize("log", [LOG_001, LOG_003, LOG_021], ids=["001", "003", "021"])
def test_no_two_labels_overlap_and_all_stay_in_the_figure(log: Path) -> None:
    for scene in _scenes(log):
        texts = [t for t in scene.items if isinstance(t, Text) and t.rotate in (0, 90)]
        boxes = [_box(t) for t in texts]
        for t, (x0, y0, x1, y1) in zip(texts, boxes):
            assert x0 >= 0 and x1 <= scene.width + 0.5 and y0 >= 0 and y1 <= scene.height, t
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
                assert apart, (texts[i].text, texts[j].text)


def test_fit_figure_has_axes_units_and_legend() -> None:
    from logmem.api import fit

    data = plots.fit_data(fit(*map(str, PAIRS)).to_json())
    said = [e.text for e in ET.fromstring(plots.svg("fit", data)).iter(f"{NS}text")]
    assert "rows (largest batch size × tokens per request)" in said
    assert "largest bucket (GiB)" in said
    assert "uncertainty of the fit" in said
    assert any(t and t.endswith("MiB/row, intercept 1.10 GiB") for t in said)
    assert [t for t in said if t and t.startswith("pair-e7-")] == [
        "pair-e7-maxbs128-constructed",
        "pair-e7-maxbs256-constructed",
        "pair-e7-maxbs512-constructed",
    ]


# --- a label that must shrink loses words of its names, never a number (review E #10) -----


def test_fit_text_keeps_every_number_of_a_label_it_shortens() -> None:
    label = "−28.52 GiB: SWA KV pool 20.42; full-attention KV pool 8.50 +2 more"
    cut = fit_text(label, 8.0, 200.0)
    assert "…" in cut and text_width(cut, 8.0) <= 200.0
    for number in ("−28.52", "GiB:", "20.42;", "8.50", "+2"):
        assert number in cut.split(" "), (number, cut)


@pytest.mark.parametrize(
    "log", [LOG_021, FIXTURES / "019-deepseek-r1-w4a8-ascend-a3-tp16-dp4-deepep-mtp.log"]
)
def test_no_figure_label_drops_a_number_it_was_given(log: Path) -> None:
    """021's KV step (its 8.50 GiB full-attention pool) and 019's verify phase (bs x 4) were
    cut with "…" behind the name, dropping the number; every number of every full label the
    figures were given must be in the label drawn."""
    led = build_ledger(read_log(str(log)).launches[0])
    data = [plots.waterfall_data(r) for r in led.ranks[:2]]
    drawn = " ".join(t.text for sc in _scenes(log) for t in sc.items if isinstance(t, Text))
    full = [st["label"] for d in data for st in d["steps"] if st.get("shown", True)]
    full += [st["phase"] for d in data for st in d["steps"] if st.get("shown", True)]
    for text in full:
        for number in re.findall(r"\d+(?:\.\d+)?", text):
            assert number in drawn, (number, text)
