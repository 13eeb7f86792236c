"""The HTML report in a real browser: headless Chromium opens it from disk and screenshots it.

Checks what a person opening the attachment would meet: no console errors, no request
beyond the file itself, the findings and every plot on screen, nothing wider than a
phone's screen, and a hostile log's markup shown as text. Skips where Chromium is not
installed (Debian: `apt-get install chromium`; .ci/run installs it). Set
LOGMEM_SCREENSHOTS=DIR to keep the PNGs.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import FIXTURES, REPO
from logmem.api import read_log
from logmem.report import html
from logmem.report.model import analysis_report


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "logmem_bench_screenshot", REPO / "bench" / "screenshot.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


shot = _bench()
CHROMIUM = shot.find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run does this where it can)",
)
WIDTHS = (1000, 390)  # a laptop and a phone, in CSS pixels


def _keep(tmp: Path, name: str, png: bytes) -> None:
    (tmp / name).write_bytes(png)
    keep = os.environ.get("LOGMEM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / name).write_bytes(png)


def _open(tmp_path: Path, name: str, page: str) -> list[object]:
    path = tmp_path / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    pages: list[object] = shot.open_page(path, WIDTHS)
    return pages


@pytest.fixture(scope="module")
def report_003(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[object], Path, object]:
    tmp = tmp_path_factory.mktemp("browser")
    a = read_log(str(FIXTURES / "003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log"))
    return _open(tmp, "003", html.render(a)), tmp, analysis_report(a)


def test_no_console_errors_and_no_network(report_003: tuple[list[object], Path, object]) -> None:
    pages, _, _ = report_003
    for p in pages:
        assert p.console_errors == [], p.console_errors  # type: ignore[attr-defined]
        assert p.requests == [p.url], p.requests  # type: ignore[attr-defined]
        assert p.probe["scripts"] == 0  # type: ignore[attr-defined]


def test_findings_verdict_and_every_plot_are_shown(
    report_003: tuple[list[object], Path, object],
) -> None:
    pages, _, rep = report_003
    lr = rep.launches[0]  # type: ignore[attr-defined]
    for p in pages:
        probe = p.probe  # type: ignore[attr-defined]
        assert probe["findings"] == list(lr.findings)
        assert probe["verdict"] and probe["verdict"][0].startswith("Crashed")
        assert [f["kind"] for f in probe["figures"]] == [
            "waterfall",
            "buckets",
            "ranks",
            "communication",
        ]
        for f in probe["figures"]:
            assert f["svg"] and f["width"] > 300 and f["height"] > 150, f
        assert probe["sources"] == 4  # one "source lines" block per figure


def _fits(page: object) -> bool:
    """The document is no wider than the screen it was opened on. Compared with the width
    asked for, not window.innerWidth: mobile emulation widens the layout viewport (and so
    innerWidth) to the content, which would make any page "fit"."""
    probe = page.probe  # type: ignore[attr-defined]
    return bool(probe["scrollWidth"] <= page.width)  # type: ignore[attr-defined]


def test_page_fits_a_phone_screen(report_003: tuple[list[object], Path, object]) -> None:
    pages, _, _ = report_003
    assert [p.width for p in pages] == [1000, 390]  # type: ignore[attr-defined]
    for p in pages:
        # Wide tables and figures scroll inside their own box; the page itself never does.
        assert _fits(p), (p.width, p.probe["scrollWidth"])  # type: ignore[attr-defined]


def test_the_phone_check_sees_a_page_that_overflows(tmp_path: Path) -> None:
    """The check above can fail: one element wider than the phone and the page no longer fits
    the 390 px screen, although innerWidth grows with it."""
    a = read_log(str(FIXTURES / "003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log"))
    page = html.render(a).replace("</body>", '<div style="width:1400px">wide</div></body>')
    phone = _open(tmp_path, "overflow", page)[1]
    assert phone.width == 390 and not _fits(phone)  # type: ignore[attr-defined]
    assert phone.probe["scrollWidth"] > 1400  # type: ignore[attr-defined]


def test_screenshots_are_taken(report_003: tuple[list[object], Path, object]) -> None:
    pages, tmp, _ = report_003
    for p in pages:
        png = p.screenshot  # type: ignore[attr-defined]
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000
        width = int.from_bytes(png[16:20], "big")
        height = int.from_bytes(png[20:24], "big")
        assert width == p.width and height > 2000  # type: ignore[attr-defined]
        _keep(tmp, f"003-{width}px.png", png)


def test_hostile_log_cannot_inject_markup(tmp_path: Path) -> None:
    from test_html import HOSTILE_LOG, IMG, SCRIPT

    log = tmp_path / "hostile.log"
    log.write_text(HOSTILE_LOG, encoding="utf-8")
    for p in _open(tmp_path, "hostile", html.render(read_log(str(log)))):
        probe = p.probe  # type: ignore[attr-defined]
        assert probe["injected"] == 0 and probe["scripts"] == 0
        assert p.console_errors == [] and p.requests == [p.url]  # type: ignore[attr-defined]
        assert SCRIPT in probe["text"] and IMG in probe["text"]
        assert SCRIPT in probe["title"]


E7 = [FIXTURES / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]


def test_fit_page(tmp_path: Path) -> None:
    import logmem

    f = logmem.fit(*[logmem.read_log(str(p)) for p in E7])
    for p in _open(tmp_path, "fit", f.render("html")):
        probe = p.probe  # type: ignore[attr-defined]
        assert p.console_errors == [] and p.requests == [p.url]  # type: ignore[attr-defined]
        assert [x["kind"] for x in probe["figures"]] == ["fit"]
        assert _fits(p), (p.width, probe["scrollWidth"])


HOSTILE_FIXTURE = FIXTURES / "hostile-html-constructed.log"


def test_hostile_fixture_cannot_inject_markup(tmp_path: Path) -> None:
    for p in _open(tmp_path, "hostile-fixture", html.render(read_log(str(HOSTILE_FIXTURE)))):
        probe = p.probe  # type: ignore[attr-defined]
        assert probe["injected"] == 0 and probe["scripts"] == 0
        assert p.console_errors == [] and p.requests == [p.url]  # type: ignore[attr-defined]
