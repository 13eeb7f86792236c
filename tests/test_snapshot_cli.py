"""`logmem snapshot` end to end: formats, the join with a log, HTML, the public API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli

SNAPS = FIXTURES / "snapshots"
JOIN = SNAPS / "capture-join.pickle"
JOIN_LOG = SNAPS / "capture-join-constructed.log"
ALL = sorted(p for p in SNAPS.iterdir() if p.is_file() and ".pickle" in p.name)
GIB = 1 << 30


def run(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, args, catch_exceptions=False)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_form_reports_in_every_format(path: Path) -> None:
    for fmt in ("text", "markdown", "json"):
        res = run(["snapshot", str(path), "-f", fmt])
        assert res.exit_code == 0, res.output
        if fmt == "text":
            assert max(len(line) for line in res.output.splitlines()) <= 100
        if fmt == "json":
            doc = json.loads(res.output)
            assert doc["schema"] == "logmem.snapshot/1"
            assert doc["log"] is None
            for d in doc["devices"]:
                assert set(d) >= {
                    "device",
                    "reserved_bytes",
                    "allocated_bytes",
                    "active_bytes",
                    "requested_bytes",
                    "pools",
                    "top_sites",
                }
                for p in d["pools"]:
                    assert set(p) >= {
                        "pool_id",
                        "kind",
                        "reserved_bytes",
                        "allocated_bytes",
                        "segments",
                    }


def test_join_reports_the_part_outside_pytorch() -> None:
    res = run(["snapshot", str(JOIN), "--log", str(JOIN_LOG), "-f", "json"])
    assert res.exit_code == 0, res.output
    log = json.loads(res.output)["log"]
    assert log["basis"] == "measured" and log["assumptions"] == []
    assert log["drop_bytes"] == round(2.00 * GIB)  # 24.00 at the first bucket -> 22.00 at the end
    assert log["graph_pool_growth_bytes"] == round(1.25 * GIB)
    assert log["other_pools_growth_bytes"] == 0
    assert log["outside_pytorch_bytes"] == round(0.75 * GIB)
    text = run(["snapshot", str(JOIN), "--log", str(JOIN_LOG)]).output
    assert "Measured:" in text
    assert "Outside PyTorch: 2.00 - 1.25 = 0.75 GiB" in text


def test_join_without_a_trace_says_what_it_assumed(tmp_path: Path) -> None:
    import pickle

    data = pickle.loads(JOIN.read_bytes())
    data["device_traces"] = [[]]
    flat = tmp_path / "no-trace.pickle"
    flat.write_bytes(pickle.dumps(data, protocol=4))
    log = json.loads(run(["snapshot", str(flat), "--log", str(JOIN_LOG), "-f", "json"]).output)[
        "log"
    ]
    assert log["basis"] == "assumed"
    assert any("no trace" in a for a in log["assumptions"])
    # the pool's size stands in for its growth: the same 0.75 GiB, but not called measured
    assert log["outside_pytorch_bytes"] == round(0.75 * GIB)
    text = run(["snapshot", str(flat), "--log", str(JOIN_LOG)]).output
    assert "Computed under assumptions" in text and "Assumed: the snapshot has no trace" in text


def test_join_errors_are_clear() -> None:
    res = CliRunner().invoke(
        cli,
        ["snapshot", str(JOIN), "--log", str(JOIN_LOG), "--rank", "TP7"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1 and "--rank 'TP7' is not in the log" in res.output
    res = run(["snapshot", str(JOIN), "--log", str(JOIN_LOG), "--capture", "3"])
    assert res.exit_code == 1 and "--capture 3" in res.output
    no_graph = FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log"
    res = run(["snapshot", str(JOIN), "--log", str(no_graph)])
    assert res.exit_code == 1 and "Traceback" not in res.output


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    import pickle

    data = pickle.loads((SNAPS / "dict-2.1-graph-pool.pickle").read_bytes())
    evil = {
        "filename": "/x/<script>alert(1)</script>.py",
        "line": 3,
        "name": "<img src=x onerror=1>",
    }
    data["segments"][0]["blocks"][0]["frames"] = [evil]
    hostile = tmp_path / "evil.pickle"
    hostile.write_bytes(pickle.dumps(data, protocol=4))
    out = tmp_path / "r.html"
    res = run(["snapshot", str(hostile), "-o", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page
    assert page.count("<svg") == 2  # top sites per pool, bytes over time
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_frames_option_and_usage_errors() -> None:
    res = run(
        ["snapshot", str(SNAPS / "dict-2.1-graph-pool.pickle"), "--frames", "2", "-f", "json"]
    )
    sites = [s["site"] for s in json.loads(res.output)["devices"][0]["top_sites"]]
    assert (
        sites[0]
        == "sglang/srt/layers/linear.py:410:forward < sglang/srt/models/qwen3.py:88:forward"
    )
    assert run(["snapshot", str(JOIN), "--frames", "0"]).exit_code == 2
    assert run(["snapshot"]).exit_code == 2
    missing = run(["snapshot", "/nonexistent.pickle"])
    assert missing.exit_code == 1 and "cannot open /nonexistent.pickle" in missing.output


def test_public_api_snapshot_and_frame() -> None:
    import pickle

    from logmem.api import read_log, snapshot, snapshot_frame

    rep = snapshot(str(JOIN), log=read_log(str(JOIN_LOG)))
    assert rep.to_json()["log"]["outside_pytorch_bytes"] == round(0.75 * GIB)
    assert "Outside PyTorch" in str(rep)
    df = snapshot_frame(str(SNAPS / "dict-2.1-graph-pool.pickle"))
    data = pickle.loads((SNAPS / "dict-2.1-graph-pool.pickle").read_bytes())
    blocks = [b for s in data["segments"] for b in s["blocks"]]
    assert len(df) == len(blocks)
    assert list(df.columns[:3]) == ["path", "device", "pool"]
    allocated = df[df.state == "active_allocated"]["size"].sum()
    assert allocated == sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    assert set(df.pool_kind) == {"default", "cuda_graph"}


def test_stdin_reads_like_a_file() -> None:
    path = SNAPS / "dict-2.1-graph-pool.pickle.gz"
    res = CliRunner().invoke(cli, ["snapshot", "-", "-f", "json"], input=path.read_bytes())
    assert res.exit_code == 0, res.output
    from_file = json.loads(run(["snapshot", str(path), "-f", "json"]).output)
    from_stdin = json.loads(res.output)
    assert from_stdin["devices"][0]["pools"] == from_file["devices"][0]["pools"]
