"""HTML reporter: one self-contained page, in reading order, with every log string escaped."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.report import html as H
from logmem.report import page as P
from logmem.report.compare import html as compare_html
from logmem.report.compare.html import HtmlOut
from logmem.report.compare.out import Out, TextOut
from logmem.report.compare.view import DiffView, FitView
from logmem.report.compare.views import view
from logmem.report.compare.whatif_view import WhatIfView

HOSTILE_FIXTURE = FIXTURES / "hostile-html-constructed.log"
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'

# A short start-up (E7 wording, one rank) whose model path, model type, crash message and a
# stray line carry markup; the crash makes the verdict quote the message too.
HOSTILE_LOG = f"""\
[2026-04-14 16:08:40] server_args=ServerArgs(model_path='/m/{SCRIPT}{IMG}', tokenizer_path='t', mem_fraction_static=0.85, cuda_graph_max_bs=24, tp_size=1, served_model_name='{SCRIPT}')
[2026-04-14 16:08:41 TP0] Init torch distributed begin.
[2026-04-14 16:08:42 TP0] Init torch distributed ends. mem usage=0.19 GB
[2026-04-14 16:08:42 TP0] Load weight begin. avail mem=22.93 GB
[2026-04-14 16:08:49 TP0] Load weight end. type=Evil{SCRIPT}Model, dtype=torch.bfloat16, avail mem=14.08 GB, mem usage=8.85 GB.
[2026-04-14 16:08:49 TP0] KV Cache is allocated. #tokens: 327310, K size: 4.50 GB, V size: 4.50 GB
[2026-04-14 16:08:49 TP0] Memory pool end. avail mem=4.49 GB
[2026-04-14 16:08:50 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=4.04 GB
[2026-04-14 16:08:50 TP0] Capture cuda graph bs [1, 2, 4]
Capturing batches (bs=4 avail_mem=4.00 GB):   0%|          | 0/3 [00:00<?, ?it/s]{IMG}
Capturing batches (bs=2 avail_mem=3.93 GB):  33%|███▎      | 1/3 [00:02<00:04,  2.00s/it]
Capturing batches (bs=1 avail_mem=3.90 GB):  67%|██████▋   | 2/3 [00:03<00:01,  1.00s/it]
[2026-04-14 16:08:53 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/scheduler.py", line 1, in run_scheduler_process
RuntimeError: {SCRIPT} {IMG} $x$ & more
"""

# Elements and attributes the reporter writes; anything else in a page came from a log.
ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "h3",
    "p",
    "div",
    "ul",
    "li",
    "section",
    "table",
    "caption",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "details",
    "summary",
    "figure",
    "figcaption",
    "pre",
    "span",
    "footer",
    # the SVG report.figures.svg writes
    "svg",
    "defs",
    "pattern",  # hatching (the communication heat map's "measure" cells)
    "path",
    "rect",
    "polyline",
    "polygon",
    "circle",
    "text",
}


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Elements:
    p = Elements()
    p.feed(page)
    p.close()
    return p


def assert_inert(page: str) -> None:
    """Nothing from a log became markup: no script, no img, no event handler, no URL."""
    p = parse(page)
    assert set(p.tags) <= ALLOWED_TAGS, set(p.tags) - ALLOWED_TAGS
    assert "script" not in p.tags and "img" not in p.tags
    assert not [a for a, _ in p.attrs if a.startswith("on")]
    assert "<script" not in page.lower() and "<img" not in page.lower()
    # No reference to anything outside the file (the SVG namespace aside).
    refs = [v for a, v in p.attrs if a in ("src", "href", "xlink:href", "action") and v]
    assert all(v.startswith("#") for v in refs), refs


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "hostile.log"
    path.write_text(HOSTILE_LOG, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def page_021() -> str:
    return H.render(read_log(str(FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log")))


@pytest.fixture(scope="module")
def page_001() -> str:
    return H.render(read_log(str(FIXTURES / "001-qwq32b-tp4-l4-docs.log")))


def test_page_is_self_contained(page_021: str) -> None:
    assert page_021.startswith("<!DOCTYPE html>")
    assert 'http-equiv="Content-Security-Policy"' in page_021
    assert "default-src 'none'" in page_021
    assert '<meta name="viewport"' in page_021
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page_021)
    assert "@import" not in page_021 and "url(http" not in page_021
    assert_inert(page_021)


def test_reading_order_verdict_findings_tables_plots_sources(page_021: str) -> None:
    at = [
        page_021.index(s)
        for s in (
            'class="verdict',
            'class="findings"',
            "<table",
            '<figure class="plot"',
            'class="sources"',
        )
    ]
    assert at == sorted(at)


def test_every_plot_of_a_launch_is_inline_svg(page_021: str, page_001: str) -> None:
    # 021: one rank with buckets; 001: four ranks, no per-bucket readings.
    assert re.findall(r'data-kind="(\w+)"', page_021) == ["waterfall", "buckets"]
    assert re.findall(r'data-kind="(\w+)"', page_001) == ["waterfall", "ranks", "communication"]
    assert "No bucket plot" in page_001
    for page in (page_021, page_001):
        figures = page.count('<figure class="plot"')
        assert page.count("<svg") == figures
        assert page.count('<details class="sources"') == figures
        assert "<?xml" not in page and "<!DOCTYPE svg" not in page


def test_svg_ids_are_unique_in_the_page(page_001: str) -> None:
    ids = re.findall(r'\bid="([^"]+)"', page_001)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page_001))
    assert refs <= set(ids)


def test_findings_and_tables_match_the_report_model(page_021: str) -> None:
    from html import escape

    from logmem.report.model import analysis_report

    rep = analysis_report(read_log(str(FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log")))
    lr = rep.launches[0]
    for f in lr.findings:
        assert f"<li>{escape(f)}</li>" in page_021
    n_tables = sum(len(s.tables) for s in lr.sections)
    assert page_021.count("<table") == n_tables
    assert "<details><summary>Graph buckets" in page_021  # folded, as in Markdown


def test_source_lines_quote_the_log(page_021: str) -> None:
    sources = page_021[page_021.index('class="sources"') :]
    assert "Load weight end. elapsed=109.33 s, type=LagunaForCausalLM" in sources
    assert "Capture target prefill CUDA graph begin" in sources
    assert re.search(r'<span class="ln">\s*\d+  </span>', sources)


def test_hostile_log_renders_as_text(hostile_log: Path) -> None:
    page = H.render(read_log(str(hostile_log)))
    assert_inert(page)
    text = "".join(parse(page).text)
    # The strings are all there, as text: in the title, the findings, the verdict and the sources.
    assert SCRIPT in text and IMG in text
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    assert "$x$" in text


def test_hostile_log_through_the_cli(hostile_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["analyze", str(hostile_log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert_inert(out.read_text(encoding="utf-8"))


def test_hostile_fixture_renders_as_text() -> None:
    assert_inert(H.render(read_log(str(HOSTILE_FIXTURE))))


def test_every_fixture_renders(tmp_path: Path) -> None:
    for log in sorted(FIXTURES.glob("*.log")):
        page = H.render(read_log(str(log)))
        assert_inert(page)
        assert page.count('<figure class="plot"') >= 1, log.name


def test_inline_svg_prefixes_ids_and_references() -> None:
    svg = (
        '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="100pt" height="50pt" '
        'viewBox="0 0 100 50"><defs><clipPath id="p1"><rect/></clipPath><path id="m2"/></defs>'
        '<g clip-path="url(#p1)"><use xlink:href="#m2"/></g></svg>'
    )
    out = P.inline_svg(svg, "fig3")
    assert out.startswith("<svg") and "<?xml" not in out
    assert 'id="fig3-p1"' in out and "url(#fig3-p1)" in out and 'xlink:href="#fig3-m2"' in out
    assert 'style="max-width: 100pt"' in out and 'width="100pt"' not in out


def test_html_out_escapes_what_the_compare_layout_writes() -> None:
    o = HtmlOut()
    o.title(f"logmem diff: {SCRIPT}")
    o.heading("h")
    o.para(IMG)
    o.bullets([SCRIPT])
    o.table(["k", "v"], [[SCRIPT, "1"]])
    o.details(SCRIPT, lambda: o.para("inside"))
    page = P.page("t", [o.text()])
    assert_inert(page)
    assert o.first_title == f"logmem diff: {SCRIPT}"


E7_LOGS = [FIXTURES / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]


def test_compare_page_has_the_fit_plot_and_escapes() -> None:
    import logmem

    f = logmem.fit(*(str(p) for p in E7_LOGS))
    v = view(f.model)
    assert isinstance(v, FitView)
    hostile = replace(
        v,
        launches=(replace(v.launches[0], name=f"a{SCRIPT}.log"), *v.launches[1:]),
        notes=(*v.notes, f"note {SCRIPT}"),
    )
    page = compare_html.render(hostile)
    assert_inert(page)
    assert page.count('<figure class="plot"') == 1 and 'data-kind="fit"' in page
    assert "&lt;script&gt;" in page
    assert "<title>logmem fit: 3 launches</title>" in page


def test_compare_page_of_two_different_launches_shows_what_the_diff_computed() -> None:
    """Issue 11 item 7: diff two DIFFERENT launches (max bs 128 vs 256) and find, in the page's
    own cells, the figures the diff computed: the slope, each launch's largest bucket, the
    change of the largest-bucket cost and the varied setting."""
    import logmem

    d = logmem.diff(str(E7_LOGS[0]), str(E7_LOGS[1]))
    v = view(d.model)
    assert isinstance(v, DiffView) and v.a.name != v.b.name
    (s,) = v.slopes
    (g,) = [g for g in v.graphs if g.a is not None and g.b is not None and g.b.rows != g.a.rows]
    assert g.a is not None and g.b is not None and g.change.largest_bucket_gib
    page = d.render("html")
    assert_inert(page)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert f"{s.line.mib_per_row:.3f}" in cells and f"{s.line.intercept_gib:.3f}" in cells
    assert " ".join(f"{y:.2f}" for y in s.points_gib) in cells
    assert f"{g.change.largest_bucket_gib:+.2f}" in cells
    assert f"{g.a.largest_size:,}" in cells and f"{g.b.largest_size:,}" in cells
    changed = {r.key: r.values for r in v.args.changed}
    assert changed["cuda_graph_max_bs"] == (128, 256)
    assert "cuda_graph_max_bs" in cells and "varied" in cells
    # The figure plots the same two points the table lists.
    assert page.count('<figure class="plot"') == 1


def test_whatif_page_shows_the_prediction() -> None:
    import logmem

    w = logmem.whatif(str(FIXTURES / "001-qwq32b-tp4-l4-docs.log"), mem_fraction_static=0.87)
    v = view(w.model)
    assert isinstance(v, WhatIfView)
    page = w.render("html")
    assert_inert(page)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert "0.870" in cells and f"{v.predicted.kv_tokens:,}" in cells
    assert f"{v.measured.kv_tokens:,}" in cells and v.predicted.kv_tokens != v.measured.kv_tokens


def test_html_out_offers_the_compare_layout_interface() -> None:
    """Every method of the layout's Out interface is one HtmlOut has (and TextOut too)."""
    needed = {n for n in vars(Out) if not n.startswith("_") and callable(getattr(Out, n))}
    assert needed and needed <= set(dir(HtmlOut)) and needed <= set(dir(TextOut))


RESTART = FIXTURES / "two-launches-restart-constructed.log"


def test_two_launches_number_their_figures_on() -> None:
    page = H.render(read_log(str(RESTART)))
    assert re.findall(r"<h2>(Launch \d)", page) == ["Launch 0", "Launch 1"]
    numbers = [int(n) for n in re.findall(r"Figure (\d+)\.", page)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 4
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_a_source_line_shows_the_rank_line_glued_behind_a_bar(tmp_path: Path) -> None:
    """001 line 63 is a tqdm render with TP1's capture-begin line glued behind it; the page
    cited only the render, so the one line behind TP1's 1.45 GiB point did not show it
    (review E #8)."""
    out = tmp_path / "001.html"
    log = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
    result = CliRunner().invoke(cli, ["analyze", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [
        r for r in out.read_text().splitlines() if re.match(r'<span class="ln"> +63  </span>', r)
    ]
    assert rows
    for row in rows:
        assert "0/13" in row and "[2025-03-08 12:29:21 TP1] Capture cuda graph begin" in row
        assert row.endswith("avail mem=1.45 GB")


def test_a_rank_without_its_own_list_takes_the_launchs_printed_list() -> None:
    """023: TP0 prints bs [1] (line 57, max_running_requests=1 caps the list), TP1 prints no
    list; TP1's largest size is TP0's list, not cuda_graph_max_bs 8 (review E #4)."""
    a = FIXTURES / "023-qwen3-14b-tp2-fp16-truncated-mid-capture.log"
    b = FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log"
    text = CliRunner().invoke(cli, ["diff", str(a), str(b)]).output
    rows = [r for r in text.splitlines() if "largest size" in r]
    assert any(r.startswith("TP1") and " 1 (TP0's list)" in r for r in rows), rows
    assert "(max bs)" not in text
    doc = CliRunner().invoke(cli, ["diff", str(a), str(b), "-f", "json"]).output
    assert '"largest_size_source": "list of TP0"' in doc
