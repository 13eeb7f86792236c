"""parse_oom_split: PyTorch's own split of device memory in its OOM message (torch >= 2.1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import corpus_logs, fixture_logs
from logmem.parse.oom_split import parse_oom_split
from logmem.report.memory_split import split_json
from logmem.units import GIB, MIB

CUDA_THIS = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 232.00 MiB. GPU 0 has a total "
    "capacity of 23.64 GiB of which 171.44 MiB is free. Process 811 has 1.20 GiB memory in use. "
    "Including non-PyTorch memory, this process has 23.46 GiB memory in use. Of the allocated "
    "memory 22.78 GiB is allocated by PyTorch, with 46.00 MiB allocated in private pools (e.g., "
    "CUDA Graphs), and 40.12 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
)
HIP = (
    "HIP out of memory. Tried to allocate 12.00 GiB. GPU 3 has a total capacity of 287.98 GiB of "
    "which 3.88 GiB is free. Of the allocated memory 280.38 GiB is allocated by PyTorch, and "
    "6.32 MiB is reserved by PyTorch but unallocated."
)
PRE_21 = (
    "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB "
    "already allocated; 3.06 MiB free; 14.80 GiB reserved in total by PyTorch)"
)


def _b(value: float, unit: int) -> int:
    return round(value * unit)


def test_cuda_with_this_process() -> None:
    s = parse_oom_split(CUDA_THIS)
    assert s is not None and s.device == "CUDA" and s.gpu == 0
    j = split_json(s)
    assert j is not None
    assert j["tried_bytes"] == _b(232.00, MIB)
    assert j["capacity_bytes"] == _b(23.64, GIB)
    assert j["free_bytes"] == _b(171.44, MIB)
    assert j["this_process_bytes"] == _b(23.46, GIB)
    assert j["pytorch_allocated_bytes"] == _b(22.78, GIB)
    assert j["private_pools_bytes"] == _b(46.00, MIB)
    assert j["reserved_unallocated_bytes"] == _b(40.12, MIB)
    # outside PyTorch in this process = M - A - R
    assert j["outside_pytorch_bytes"] == _b(23.46, GIB) - _b(22.78, GIB) - _b(40.12, MIB)
    assert j["other_processes_bytes"] == _b(1.20, GIB)
    assert j["processes"] == [{"pid": 811, "bytes": _b(1.20, GIB)}]
    # two GiB figures and one MiB figure, each to half a unit of its last digit
    assert j["outside_pytorch_rounding_bytes"] == round(2 * 0.005 * GIB + 0.005 * MIB)


def test_hip_prints_no_process_list() -> None:
    s = parse_oom_split(HIP)
    assert s is not None and s.device == "HIP" and s.gpu == 3
    assert s.processes == () and s.this_process is None
    assert s.private_pools is None  # not printed: unknown, never 0
    assert s.outside_pytorch_bytes is None and s.other_processes_bytes is None
    assert s.pytorch_reserved_bytes == _b(280.38, GIB) + _b(6.32, MIB)


def test_a_process_not_named_this_one_is_not_taken_for_it() -> None:
    text = CUDA_THIS.replace(
        "Including non-PyTorch memory, this process has 23.46 GiB memory in use. ", ""
    )
    s = parse_oom_split(text)
    assert s is not None and s.this_process is None
    assert s.outside_pytorch_bytes is None and s.other_processes_bytes is None


def test_bytes_unit_and_no_message() -> None:
    s = parse_oom_split(
        "CUDA out of memory. Tried to allocate 512 bytes. GPU 1 has a total capacity of 8.00 GiB "
        "of which 1000 bytes is free. Of the allocated memory 7.50 GiB is allocated by PyTorch, "
        "and 0 bytes is reserved by PyTorch but unallocated."
    )
    assert (
        s is not None and s.tried is not None and s.tried.bytes == 512 and s.tried.resolution == 0
    )
    assert s.reserved_unallocated is not None and s.reserved_unallocated.bytes == 0
    assert parse_oom_split("RuntimeError: NCCL error") is None
    assert parse_oom_split(PRE_21) is None  # before 2.1: no split in these words


def test_first_message_only() -> None:
    s = parse_oom_split(HIP + " During handling ... " + CUDA_THIS)
    assert s is not None and s.device == "HIP" and s.this_process is None


_ALLOC = re.compile(r"Of the allocated memory (\d+\.\d+) (GiB|MiB) is allocated by PyTorch")
_UNIT = {"GiB": GIB, "MiB": MIB}


def _oom_lines() -> list[tuple[Path, int, str]]:
    out = []
    for path in [*fixture_logs(), *corpus_logs()]:
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if "out of memory." in line and "is allocated by PyTorch" in line:
                out.append((path, n, line))
    return out


def test_every_logged_split_is_read() -> None:
    lines = _oom_lines()
    assert len(lines) >= 10  # the HIP, decode, piecewise, weights and restart fixtures
    for path, n, line in lines:
        s = parse_oom_split(line)
        assert s is not None, f"{path.name}:{n}"
        m = _ALLOC.search(line)
        assert m is not None
        assert s.pytorch_allocated is not None
        assert s.pytorch_allocated.bytes == round(float(m.group(1)) * _UNIT[m.group(2)]), (
            f"{path.name}:{n}"
        )
        assert s.reserved_unallocated is not None and s.free is not None and s.capacity is not None
        assert ("private pools" in line) == (s.private_pools is not None)
        assert ("this process has" in line) == (s.this_process is not None)


@pytest.mark.parametrize(
    ("name", "outside"),
    [("two-launches-restart-constructed.log", _b(23.46, GIB) - _b(22.78, GIB) - _b(40.12, MIB))],
)
def test_fixture_outside_pytorch(name: str, outside: int) -> None:
    hits = [
        s for p, _, line in _oom_lines() if p.name == name for s in [parse_oom_split(line)] if s
    ]
    assert hits and all(s.outside_pytorch_bytes == outside for s in hits)


def _logs_with_split() -> list[Path]:
    return sorted({p for p, _, _ in _oom_lines()})


@pytest.mark.parametrize("path", _logs_with_split(), ids=lambda p: p.name)
def test_the_split_reaches_the_failure_and_the_ledger(path: Path) -> None:
    """Every log whose OOM message prints the split: failure.memory_split in JSON, in bytes
    equal to the message's own figures, and a note on the failing rank's ledger."""
    import json

    from click.testing import CliRunner

    from logmem.cli.main import cli

    doc = json.loads(CliRunner().invoke(cli, ["analyze", str(path), "-f", "json"]).output)
    splits = [L["failure"]["memory_split"] for L in doc["launches"] if L.get("failure")]
    splits = [s for s in splits if s is not None]
    assert splits, path.name
    printed = {
        round(float(m.group(1)) * _UNIT[m.group(2)])
        for _, _, line in _oom_lines()
        if _
        for m in [_ALLOC.search(line)]
        if m
    }
    for s in splits:
        assert s["pytorch_allocated_bytes"] in printed
        assert s["reserved_unallocated_bytes"] is not None
    text = CliRunner().invoke(cli, ["analyze", str(path)]).output
    assert "At the failure, PyTorch's out-of-memory message" in text
