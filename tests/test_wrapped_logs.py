"""A whole log under each tool that prefixes every physical line (docker, CRI files, compose,
journald, srun --label) gives the analysis of the bare log: the tqdm renders and tracebacks,
which carry no SGLang prefix, are where a wrapper used to hide a capture's buckets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from logmem.api import read_log
from logmem.report.jsonout import analysis_json

WRAPPERS = {
    "docker-timestamps": lambda i: b"2026-12-03T22:00:%02d.123456789Z " % (i % 60),
    "cri": lambda i: b"2026-12-03T22:00:%02d.123456789Z stdout F " % (i % 60),
    "compose": lambda i: b"sglang-1  | ",
    "journald": lambda i: b"Dec  3 22:00:%02d gpu-7 python3[4242]: " % (i % 60),
    "srun": lambda i: b"0: ",
}
LOGS = [
    "001-qwq32b-tp4-l4-docs.log",  # bars without a description, 4 ranks
    "oom-decode-largest-bucket-constructed.log",  # a capture OOM traceback
    "023-qwen3-14b-tp2-fp16-truncated-mid-capture.log",  # cut mid-capture
    "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log",  # piecewise bars
]


def _launches(path: Path) -> str:
    doc = analysis_json(read_log(str(path), require_startup=False))
    text = json.dumps(doc["launches"], sort_keys=True)
    return text.replace(str(path), "LOG")


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("name", LOGS)
def test_wrapped_log_reads_like_the_bare_one(tmp_path: Path, name: str, wrapper: str) -> None:
    bare = FIXTURES / name
    lines = bare.read_bytes().split(b"\n")
    wrapped = tmp_path / name
    prefix = WRAPPERS[wrapper]
    body = b"\n".join(prefix(i) + line if line else line for i, line in enumerate(lines))
    wrapped.write_bytes(body)
    copy = tmp_path / "bare" / name
    copy.parent.mkdir()
    copy.write_bytes(bare.read_bytes())
    assert _launches(wrapped) == _launches(copy).replace("bare/", "")
