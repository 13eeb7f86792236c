"""Snapshots of every form: sums against an independent computation, pools, sites, traces."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from logmem.torch_snapshot.analysis import read_snapshot
from logmem.torch_snapshot.load import loads
from logmem.torch_snapshot.model import Frame
from logmem.torch_snapshot.summary import ONLY_TORCH, site

SNAPS = FIXTURES / "snapshots"
FORMS = [
    "legacy-list-2.0.pickle",
    "dict-2.1-graph-pool.pickle",
    "dict-2.5-full.pickle",
    "expandable-segments.pickle",
    "mempool.pickle",
    "capture-join.pickle",
    "dict-2.1-graph-pool.pickle.gz",
    "dict-2.1-graph-pool.pickle.zst",
]


def _trusted(path: Path) -> Any:
    """The fixture through the standard unpickler (our own file, so trusted): the oracle."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        import gzip

        raw = gzip.decompress(raw)
    elif path.suffix == ".zst":
        import zstandard

        raw = zstandard.ZstdDecompressor().decompress(raw)
    return pickle.loads(raw)


def _segments(data: Any) -> list[dict[str, Any]]:
    return data if isinstance(data, list) else data["segments"]


@pytest.mark.parametrize("name", FORMS)
def test_sums_agree_with_an_independent_computation(name: str) -> None:
    path = SNAPS / name
    segs = _segments(_trusted(path))
    f = read_snapshot(str(path))
    for d in f.devices:
        mine = [s for s in segs if s.get("device", 0) == d.device]
        blocks = [b for s in mine for b in s["blocks"]]
        assert d.reserved_bytes == sum(s["total_size"] for s in mine)
        assert d.allocated_bytes == sum(
            b["size"] for b in blocks if b["state"] == "active_allocated"
        )
        assert d.active_bytes == sum(b["size"] for b in blocks if b["state"].startswith("active"))
        assert d.reserved_unallocated_bytes == d.reserved_bytes - d.allocated_bytes
        assert sum(p.reserved_bytes for p in d.pools) == d.reserved_bytes
        assert sum(p.allocated_bytes for p in d.pools) == d.allocated_bytes
        assert d.mismatched_segments == 0
    assert {d.device for d in f.devices} == {s.get("device", 0) for s in segs}


def test_legacy_list_form_reads_history() -> None:
    f = read_snapshot(str(SNAPS / "legacy-list-2.0.pickle"))
    assert f.snapshot.form.startswith("segments list")
    (d,) = f.devices
    assert d.reserved_bytes == 2 * 2**20 + 20 * 2**20
    # requested comes from history[0].real_size, as memory_viz reads old snapshots
    assert d.requested_bytes == 8 * 500 + 17_000_000
    assert d.top_sites[0].site == "/home/me/run.py:14:<module>"
    assert f.traces == ()


def test_pool_kinds() -> None:
    def kinds(name: str) -> dict[Any, str]:
        (d, *_) = read_snapshot(str(SNAPS / name)).devices
        return {p.pool_id: p.kind for p in d.pools}

    assert kinds("dict-2.1-graph-pool.pickle") == {(0, 0): "default", (0, 1): "cuda_graph"}
    assert kinds("dict-2.5-full.pickle") == {(0, 0): "default", (1, 0): "cuda_graph"}
    # (0, N) with no capture in its stacks: graph_pool_handle() or MemPool, not told apart
    assert kinds("mempool.pickle") == {(0, 2): "private"}
    assert kinds("legacy-list-2.0.pickle") == {None: "unknown"}


def test_unknown_keys_are_ignored_and_settings_read() -> None:
    f = read_snapshot(str(SNAPS / "dict-2.5-full.pickle"))
    assert "a_key_from_the_future" in f.snapshot.keys
    settings_ = dict(f.snapshot.allocator_settings)
    assert settings_["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:False"
    assert [d.device for d in f.devices] == [0, 1]
    (t0, t1) = f.traces
    assert t0.ooms == 1 and t0.x_unit == "time_us"
    assert t1.device == 1


def test_sites_skip_torch_and_cpp_frames_and_paths_are_relative() -> None:
    f = read_snapshot(str(SNAPS / "dict-2.1-graph-pool.pickle"))
    (d,) = f.devices
    top = d.top_sites[0]
    # 8 MiB + 10 MiB from sglang's linear.py (called through torch/nn/modules/linear.py)
    assert (top.site, top.bytes, top.blocks) == (
        "sglang/srt/layers/linear.py:410:forward",
        18 * 2**20,
        2,
    )
    deeper = read_snapshot(str(SNAPS / "dict-2.1-graph-pool.pickle"), frames=3).devices[0]
    assert deeper.top_sites[0].site == (
        "sglang/srt/layers/linear.py:410:forward < sglang/srt/models/qwen3.py:88:forward"
        " < sglang/srt/model_executor/cuda_graph_runner.py:612:capture_one_batch_size"
    )


def test_site_rules() -> None:
    cpp = Frame("RegisterCUDA.cpp", 0, "at::empty")
    torch_py = Frame("/x/site-packages/torch/nn/modules/linear.py", 125, "forward")
    mine = Frame("/work/train.py", 7, "step")
    assert site([cpp, torch_py, mine]) == "/work/train.py:7:step"
    assert site([cpp, torch_py]) == ONLY_TORCH
    assert site([]) == "(no stack recorded)"


def test_trace_replay_graph_pool_from_empty() -> None:
    f = read_snapshot(str(SNAPS / "capture-join.pickle"))
    (t,) = f.traces
    (p,) = t.pools  # the default pool does not change during the trace, so it is not listed
    assert p.kind == "cuda_graph" and p.covers_from_empty
    assert (p.reserved_start, p.reserved_end) == (0, 5 * 2**28)
    assert p.points[-1][1] == p.reserved_end
    assert t.window == (0, t.entries - 1)
    assert t.window_sites[0].site == "sglang/srt/layers/linear.py:410:forward"


def test_trace_replay_expandable_segments() -> None:
    f = read_snapshot(str(SNAPS / "expandable-segments.pickle"))
    (d,) = f.devices
    assert d.expandable_segments == 1
    (t,) = f.traces
    (p,) = t.pools
    # mapped 3 x 20 MiB, unmapped 20 MiB: the levels walk to the segment's 40 MiB
    assert [r for _, r, _ in p.points] == [
        20 * 2**20,
        40 * 2**20,
        60 * 2**20,
        60 * 2**20,
        40 * 2**20,
    ]
    assert p.covers_from_empty


def test_trace_starting_late_does_not_claim_from_empty() -> None:
    # The default pool was there before recording in dict-2.1: the trace never touches it,
    # and the graph pool starts from empty.
    f = read_snapshot(str(SNAPS / "dict-2.1-graph-pool.pickle"))
    (t,) = f.traces
    assert {p.pool_id: p.covers_from_empty for p in t.pools} == {(0, 1): True}


# --- property: the loader reads any plain data the standard pickler writes, unchanged -----

_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_plain, protocol=st.integers(min_value=0, max_value=5))
def test_safe_loader_equals_pickle_on_plain_data(data: Any, protocol: int) -> None:
    # Protocols 0-2 write bytes through a global (codecs.encode): refused, rightly.
    assume(protocol >= 3 or not _has_bytes(data))
    raw = pickle.dumps(data, protocol=protocol)
    assert loads(raw) == pickle.loads(raw)


def _has_bytes(x: Any) -> bool:
    if isinstance(x, bytes):
        return True
    if isinstance(x, dict):
        return any(_has_bytes(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_bytes(v) for v in x)
    return False


_block = st.fixed_dictionaries(
    {
        "size": st.integers(min_value=512, max_value=2**34),
        "requested_size": st.integers(min_value=0, max_value=2**34),
        "state": st.sampled_from(["active_allocated", "active_pending_free", "inactive"]),
        "frames": st.just([{"filename": "/a/site-packages/sglang/x.py", "line": 3, "name": "f"}]),
    }
)
_segment = st.fixed_dictionaries(
    {
        "device": st.integers(min_value=0, max_value=3),
        "total_size": st.integers(min_value=0, max_value=2**36),
        "segment_pool_id": st.sampled_from([(0, 0), (0, 1), (2, 0), (0, 7)]),
        "blocks": st.lists(_block, max_size=6),
    }
)


@settings(max_examples=100, deadline=None)
@given(segs=st.lists(_segment, max_size=8))
def test_summary_sums_are_the_blocks_sums(
    segs: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("snap") / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": segs, "device_traces": []}, protocol=4))
    f = read_snapshot(str(path))
    for d in f.devices:
        mine = [s for s in segs if s["device"] == d.device]
        alloc = [b for s in mine for b in s["blocks"] if b["state"] == "active_allocated"]
        assert d.reserved_bytes == sum(s["total_size"] for s in mine)
        assert d.allocated_bytes == sum(b["size"] for b in alloc)
        assert d.requested_bytes == sum(b["requested_size"] for b in alloc)
        assert sum(s.bytes for s in d.top_sites) == d.allocated_bytes


def test_agrees_with_torch_memory_viz() -> None:
    mv = pytest.importorskip(
        "torch.cuda._memory_viz", reason="torch is not installed (logmem does not depend on it)"
    )
    for name in FORMS:
        data = _trusted(SNAPS / name)
        f = read_snapshot(str(SNAPS / name))
        segs = _segments(data)
        requested = sum(
            mv._block_extra(b)[1]
            for s in segs
            for b in s["blocks"]
            if b["state"] == "active_allocated"
        )
        assert sum(d.requested_bytes or 0 for d in f.devices) == requested
        assert sum(d.reserved_bytes for d in f.devices) == sum(s["total_size"] for s in segs)
