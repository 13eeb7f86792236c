"""The worst-case inputs of issue 16, made on demand (deterministic, scaled by `scale`).

Each attack is a function (scale: float) -> bytes of one input file; `scale` 1.0 is the
size the tests use (a few MB: seconds, not minutes); `bench/attacks.py`-style runs can scale
up to the issue's sizes. Used by tests/test_fuzz.py (time and memory budgets) and
tests/run_attacks_under_ulimit.py (every attack under a 1 GiB address-space limit).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Callable

import zstandard

from conftest import FIXTURES

BASE_LOG = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
# Big enough for every compressor to finish blocks before a cut (bz2 blocks are 900 kB).
BIG_LOG = FIXTURES / "036-deepseek-r1-w4a8-ascend-pd-decode-node-mtp.log"
PREFIX = b"[2025-03-08 12:30:01 TP0] "


def base() -> bytes:
    return BASE_LOG.read_bytes()


def cr_run(scale: float) -> bytes:
    """'GB\\r' repeated after a real log: every segment holds a keyword, no \\n follows (the
    scan was quadratic in the run's length)."""
    return base() + b"GB\r" * int(400_000 * scale)


def oom_fragments(scale: float) -> bytes:
    """One long line of repeated torch OOM fragments (the pattern backtracked ~60 x 4000 each)."""
    frag = b"torch.OutOfMemoryError: CUDA out of memory."
    return base() + PREFIX + frag * int(24_000 * scale) + b"\n"


def fragments_of_every_unanchored_pattern(scale: float) -> bytes:
    """Each pattern that can start anywhere in a record, repeated along one long line."""
    frags = (
        b"Capture cuda graph failed: x ",
        b"Scheduler hit an exception: x ",
        b"max_total_num_tokens=1 ",
        b"The memory capacity is unbalanced. ",
        b"torch.OutOfMemoryError: CUDA out of memory. ",
        b"Capturing batches (bs=1 avail_mem=1.00 GB) ",
        b"Not enough memory. Please try to increase --mem-fraction-static. ",
    )
    n = int(3_000 * scale)
    return base() + b"".join(PREFIX + f * n + b"\n" for f in frags)


def restarts(scale: float) -> bytes:
    """A real start-up log repeated: one launch per copy."""
    return base() * int(200 * scale)


def unmatched_giants(scale: float) -> bytes:
    """SGLang records that carry a memory figure, match no pattern and are MiBs long."""
    line = PREFIX + b"weird reading 1.5 GB " + b"x" * (1 << 20) + b"\n"
    return base() + line * int(60 * scale)


def many_unmatched(scale: float) -> bytes:
    """A million short unmatched memory lines: the per-shape cap, not the line cap, bites."""
    return base() + (PREFIX + b"weird reading 1.5 GB\n") * int(50_000 * scale)


def surrogates(scale: float) -> bytes:
    """Lone surrogates escaped in server_args strings (UnicodeEncodeError in every format)."""
    return base().replace(b"model_path='", b"model_path='\\ud800\\udfff\\ud83d", 1)


def bad_oom_sizes(scale: float) -> bytes:
    oom = (
        PREFIX + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.2.3 MiB. "
        b"GPU 0 has a total capacity of 1..1 GiB of which 2.. MiB is free.\n"
    )
    return base() + oom


def absurd_parallel(scale: float) -> bytes:
    return base().replace(b"tp_size=4,", b"tp_size=4, pp_size=1000000000000,", 1)


def terminal_escapes(scale: float) -> bytes:
    """OSC title/clipboard/link sequences, ESC c, backspaces and an escaped newline."""
    evil = (
        "\\x1b]0;pwned\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1bc\\x08\\x08"
        "\\nReady: start-up finished on 4 ranks (forged)"
    )
    data = base().replace(b"model_path='", b"model_path='" + evil.encode(), 1)
    raw = b"\x1b]0;raw-title\x07\x1b]8;;http://evil\x07link\x1b]8;;\x07\x1bc\x08\x7f\x9b"
    return data + PREFIX + b"RuntimeError: " + raw + b" CUDA out of memory.\n"


def utf16(scale: float) -> bytes:
    return base().decode("utf-8").encode("utf-16")  # with a BOM, as PowerShell writes


def bzh_text(scale: float) -> bytes:
    return b"BZh91AY&SY is how this line starts\n" + base()


def _cut(data: bytes) -> bytes:
    return data[: len(data) * 2 // 3]


def big() -> bytes:
    return BIG_LOG.read_bytes()


def truncated_gzip(scale: float) -> bytes:
    return _cut(gzip.compress(big(), mtime=0))


def truncated_bz2(scale: float) -> bytes:
    return _cut(bz2.compress(big()))


def truncated_xz(scale: float) -> bytes:
    return _cut(lzma.compress(big()))


def truncated_zstd(scale: float) -> bytes:
    return _cut(zstandard.ZstdCompressor().compress(big()))


def zstd_bomb(scale: float) -> bytes:
    """A real log then a few hundred MiB of one byte, in a few KB: bounded steps, not one buffer."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as w:
        w.write(base())
        block = (b"." * 1023 + b"\n") * 1024
        for _ in range(int(200 * scale)):
            w.write(block)
    return out.getvalue()


ATTACKS: dict[str, Callable[[float], bytes]] = {
    f.__name__: f
    for f in (
        cr_run,
        oom_fragments,
        fragments_of_every_unanchored_pattern,
        restarts,
        unmatched_giants,
        many_unmatched,
        surrogates,
        bad_oom_sizes,
        absurd_parallel,
        terminal_escapes,
        utf16,
        bzh_text,
        truncated_gzip,
        truncated_bz2,
        truncated_xz,
        truncated_zstd,
        zstd_bomb,
    )
}


def _config(**changes: object) -> bytes:
    import json

    cfg = json.loads(CONFIG.read_text())
    cfg.update(changes)
    return json.dumps(cfg).encode()


CONFIG = FIXTURES / "configs" / "qwq-32b.json"
# config.json inputs for `--model-config` (estimate, analyze): sizes outside physical sense.
CONFIG_ATTACKS: dict[str, Callable[[], bytes]] = {
    "layers_1e300": lambda: _config(num_hidden_layers=1e300),
    "layers_10_12": lambda: _config(num_hidden_layers=10**12),
    "nested_100k": lambda: b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "digits_5000": lambda: b'{"num_hidden_layers": ' + b"9" * 5000 + b"}",
    "nan_hidden": lambda: _config(hidden_size=float("nan")),
}
