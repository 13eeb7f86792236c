"""A launch that came up with free memory at the 0.00 floor before or during capture (review C,
finding 4): the verdict says so, names the platform only where the log shows it, and gives the
fixes priced by SGLang's KV rule; whatif says the top is below the logged setting."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import corpus_log
from logmem.analysis.exhausted import Exhausted, FloorPlace, FloorPlatform
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.report.model import verdict_lines


def _verdict(path: Path) -> list[str]:
    a = read_log(str(path))
    L = a.launches[0]
    return verdict_lines(L, a.ledger(L))


def _exhausted(path: Path) -> Exhausted | None:
    a = read_log(str(path))
    led = a.ledger(a.launches[0])
    return next((f for f in led.findings if isinstance(f, Exhausted)), None)


def test_007_pools_took_everything_on_wsl() -> None:
    p = corpus_log("007-")
    f = _exhausted(p)
    assert f is not None and f.place is FloorPlace.POOLS and f.line == 13
    assert f.sign is not None and f.sign.platform is FloorPlatform.WSL and f.sign.line == 1
    assert f.mfs is not None and f.mfs.empty_below == 0.372 and f.mfs.step_tokens == 303
    assert f.table is not None and (f.table.table_bytes, f.table.table_at_bytes) == (
        2049 * (40960 + 4) * 4,  # rows x (context + 4) x 4 B (ReqToTokenPool)
        2049 * (15387 + 4) * 4,
    )
    text = " ".join(_verdict(p))
    assert text.startswith(
        "Ready: start-up finished on 1 rank. But the KV and other pools took all"
    )
    assert "The log shows WSL (/mnt/e/ at line 1" in text
    assert "Fix: lower --mem-fraction-static below 0.88" in text
    assert "--context-length 15,387" in text and "from 0.31 to 0.12 GiB" in text


def test_007_without_platform_evidence(tmp_path: Path) -> None:
    lines = corpus_log("007-").read_text(encoding="utf-8").splitlines()
    # The same launch, its shell prompt dropped and its paths no Windows drive.
    body = [x.replace("/mnt/d/", "/data/") for x in lines[1:]]
    p = tmp_path / "007-no-wsl.log"
    p.write_text("\n".join(body) + "\n", encoding="utf-8")
    f = _exhausted(p)
    assert f is not None and f.sign is None
    text = " ".join(_verdict(p))
    assert "WSL" not in text and "system memory" not in text
    assert "The reading cannot go below 0.00 GiB, so the shortfall is unknown" in text
    assert "Fix: lower --mem-fraction-static below 0.88" in text


def test_038_is_not_exhausted() -> None:
    p = corpus_log("038-")
    assert _exhausted(p) is None
    assert not any(x.startswith("But ") for x in _verdict(p))


def test_whatif_top_below_logged_setting() -> None:
    res = CliRunner().invoke(cli, ["whatif", str(corpus_log("007-"))])
    out = " ".join(res.output.split())
    assert "stays >=" not in out
    assert (
        "At 0.880, the logged setting, free memory was already exhausted, so the top is below 0.880."
        in out
    )
