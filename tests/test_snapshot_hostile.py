"""Hostile snapshots: refused with exit 1 and a message, no traceback, nothing executed."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from logmem.torch_snapshot.load import SnapshotError, loads, scan

HOSTILE = FIXTURES / "snapshots" / "hostile"
SENTINEL = "logmem-snapshot-sentinel"  # what the os.system payloads would create

# file -> words the message must contain
EXPECTED = {
    "global-os-system.pickle": "it references os.system",
    "stack-global-os-system.pickle": "it references os.system",
    "payload-in-segments.pickle": "it references os.system",
    "inst-os-system.pickle": "it references os.system",
    "reduce-no-global.pickle": "REDUCE",
    "build-no-global.pickle": "BUILD",
    "memo-bomb.pickle": "memo slot 2147483647",
    "deep-nesting.pickle": "the top level is a tuple",
    "huge-int.pickle": "an integer of 100000 bytes",
    "truncated.pickle": "truncated",
    "text-not-pickle.pickle": "it is not a pickle",
    "wrong-shape.pickle": "segments[0].blocks[0].size is a str",
}


def test_every_hostile_fixture_is_listed() -> None:
    assert sorted(p.name for p in HOSTILE.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_refused_with_exit_1_and_a_message(name: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "logmem", "snapshot", str(HOSTILE / name)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"Error: {HOSTILE / name}: not a PyTorch memory snapshot")
    assert EXPECTED[name] in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / SENTINEL).exists()


def test_the_payloads_are_real(tmp_path: Path) -> None:
    """The standard unpickler does run them (so the test above can fail): a sentinel appears."""
    for name in ("global-os-system.pickle", "stack-global-os-system.pickle"):
        probe = f"import pickle; pickle.loads(open({str(HOSTILE / name)!r}, 'rb').read())"
        subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, timeout=60, check=False)
        assert (tmp_path / SENTINEL).exists(), name
        os.remove(tmp_path / SENTINEL)


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {SENTINEL}",))


@pytest.mark.parametrize("protocol", range(6))
def test_pickler_written_payloads_refused_at_every_protocol(
    protocol: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    raw = pickle.dumps({"segments": [_Evil()]}, protocol=protocol)
    with pytest.raises(SnapshotError, match=r"it references (os|posix)\.system"):
        loads(raw)
    assert not (tmp_path / SENTINEL).exists()


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"\x80\x04\x95", "truncated"),  # FRAME without its length
        (b"\x80\x04X\xff\xff\xff\x7f", "truncated"),  # a string longer than the file
        (b"\x80\x04(" * 20_000, "open marks"),
        (b"\x80\x04" + b"N" * 20_000 + b".", "items pending"),
        (b"\x80\x04\x97.", "out-of-band buffer"),  # NEXT_BUFFER
        (b"\x80\x04\x82\x01.", "registered name"),  # EXT1
        (b"\x80\x04Pfoo\n.", "persistent object"),
        (b"\x80\x04\xff.", "not a pickle opcode"),
        (b"\x80\x04I" + b"9" * 100 + b"\n.", "too long"),
    ],
)
def test_scan_refuses(raw: bytes, words: str) -> None:
    with pytest.raises(SnapshotError, match=words):
        scan(raw)


def test_size_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.pickle"
    big.write_bytes(pickle.dumps({"segments": [], "pad": b"x" * (3 << 20)}, protocol=4))
    proc = subprocess.run(
        [sys.executable, "-m", "logmem", "snapshot", str(big), "--max-size", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "more than 2 MiB" in proc.stderr and "--max-size" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_gzip_bomb_is_capped(tmp_path: Path) -> None:
    import gzip

    bomb = tmp_path / "bomb.pickle"
    bomb.write_bytes(gzip.compress(b"\x80\x04" + b"N" * (5 << 20)))
    proc = subprocess.run(
        [sys.executable, "-m", "logmem", "snapshot", str(bomb), "--max-size", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "once decompressed" in proc.stderr


def test_shared_references_cannot_multiply_the_work(tmp_path: Path) -> None:
    """5,000 references to one segment of 5,000 references to one block: a 30 KB file that
    would be 25 million blocks to visit. Refused by the visit count, quickly."""
    blk = {"size": 512, "state": "active_allocated", "frames": []}
    seg = {"total_size": 1 << 21, "blocks": [blk] * 5000}
    raw = pickle.dumps({"segments": [seg] * 5000}, protocol=4)
    assert len(raw) < 64 << 10
    path = tmp_path / "shared.pickle"
    path.write_bytes(raw)
    proc = subprocess.run(
        [sys.executable, "-m", "logmem", "snapshot", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "more than 20,000,000" in proc.stderr
