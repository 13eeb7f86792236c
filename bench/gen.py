"""Log generators for the benchmarks: what users feed logmem, at sizes and shapes they reach.

Every generator starts from a real start-up (fixture 001: QwQ-32B on 4 x L4, TP4, SGLang
v0.4.3) and adds what a server prints afterwards. The runtime lines are modelled on
SGLang's own (Decode / Prefill batch, uvicorn access, weight-loading bars, the KV-pool
retraction warning, uvicorn's ASGI traceback); the HiCache and cache lines with GB / MB
figures are written in SGLang's style but are not verbatim copies of one version, which
is what a benchmark of the matcher needs: lines that hold a keyword and a memory figure
and that no pattern claims (they end up in the unmatched summary).

* ``write_mix``: the realistic mix (about 1.26% keyword lines, 96 thousand per GiB, most
  of them memory figures no pattern matches) or any other keyword density, a restart
  near the end;
* ``write_ranks``: one file with an N-rank start-up; ``write_rank_files``: the same
  start-up as one file per rank; ``write_restarts``: N start-ups in one file.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = "001-qwq32b-tp4-l4-docs.log"
GIB = 1 << 30
MIB = 1 << 20
# The realistic mix: 1.26% of 7.65 million lines per GiB hold a keyword.
REALISTIC_KW_PER_GIB = 96_000
# 1 MiB blocks of runtime lines, cycled: generating 1 GiB line by line would take minutes.
_BLOCK_LINES = 7_000
_BLOCKS = 12


def fixture_path() -> Path:
    for cand in (ROOT / "fixtures" / FIXTURE, ROOT.parent / "shared" / "corpus" / FIXTURE):
        if cand.exists():
            return cand
    raise SystemExit(f"bench: cannot find {FIXTURE} in fixtures/ or ../shared/corpus/")


def startup_bytes() -> bytes:
    data = fixture_path().read_bytes()
    return data if data.endswith(b"\n") else data + b"\n"


def _ts(sec: int) -> str:
    day, rest = divmod(sec, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"2025-03-{8 + day % 20:02d} {h:02d}:{m:02d}:{s:02d}"


# --- runtime lines ------------------------------------------------------------------------


def _noise(rng: random.Random, ts: str, ranks: int) -> str:
    """A runtime line without any keyword (what grep and logmem both skip)."""
    r = rng.random()
    tp = rng.randrange(ranks)
    if r < 0.64:
        return (
            f"[{ts} TP{tp}] Decode batch. #running-req: {rng.randrange(1, 64)}, "
            f"#token: {rng.randrange(100, 40000)}, token usage: {rng.random():.2f}, "
            f"cuda graph: {'True' if rng.random() < 0.9 else 'False'}, "
            f"gen throughput (token/s): {rng.uniform(10, 3000):.2f}, #queue-req: {rng.randrange(9)}, "
        )
    if r < 0.76:
        return (
            f"[{ts} TP{tp}] Prefill batch. #new-seq: {rng.randrange(1, 9)}, "
            f"#new-token: {rng.randrange(1, 8192)}, #cached-token: {rng.randrange(8192)}, "
            f"token usage: {rng.random():.2f}, #running-req: {rng.randrange(64)}, "
            f"#queue-req: {rng.randrange(9)}, "
        )
    if r < 0.9995:
        ip = rng.choice(("127.0.0.1", "10.0.2.141", "10.0.0.207"))
        # Paths with '_': a byte the pure-Python reader probes for, so these are candidates
        # it must check and reject (grep and hyperscan never stop on them).
        req = rng.choice(
            (
                '"POST /generate HTTP/1.1" 200 OK',
                '"GET /health HTTP/1.1" 200 OK',
                '"POST /v1/chat/completions HTTP/1.1" 200 OK',
                '"GET /get_model_info HTTP/1.1" 200 OK',
                '"GET /get_server_info HTTP/1.1" 200 OK',
                '"POST /flush_cache HTTP/1.1" 200 OK',
            )
        )
        return f"[{ts}] INFO:     {ip}:{rng.randrange(1024, 65535)} - {req}"
    total = rng.randrange(4, 20)
    renders = [
        f"Loading safetensors checkpoint shards: {100 * i // total:3d}% Completed | "
        f"{i}/{total} [00:{i:02d}<00:{total - i:02d},  {rng.uniform(1, 3):.2f}it/s]"
        for i in range(total + 1)
    ]
    return "\r".join(renders)


def _keyword_lines(rng: random.Random, ts: str, ranks: int) -> list[str]:
    """One event that holds a keyword: mostly memory figures no pattern claims, some
    warnings, now and then a runtime traceback (several lines)."""
    tp = rng.randrange(ranks)
    r = rng.random()
    if r < 0.30:
        used = rng.uniform(1, 90)
        return [
            f"[{ts} TP{tp}] HiCache host pool: {used:.2f} GB used of 100.00 GB, "
            f"{rng.randrange(1, 4096)} pages written back, {rng.uniform(0.1, 40):.2f} GB/s"
        ]
    if r < 0.50:
        return [
            f"[{ts} TP{tp}] HiCache prefetch: {rng.randrange(1, 8192)} tokens "
            f"({rng.uniform(0.5, 900):.1f} MB) loaded from host in {rng.uniform(0.1, 30):.2f} ms"
        ]
    if r < 0.62:
        return [
            f"[{ts} TP{tp}] Cache flushed successfully! Freed {rng.uniform(0, 40):.2f} GB; "
            f"avail mem={rng.uniform(0.5, 20):.2f} GB"
        ]
    if r < 0.80:
        return [
            f"[{ts} TP{tp}] Decode batch. #running-req: {rng.randrange(1, 64)}, "
            f"#token: {rng.randrange(100, 40000)}, token usage: {rng.random():.2f}, "
            f"mem usage={rng.uniform(10, 70):.2f} GB, #queue-req: {rng.randrange(9)}, "
        ]
    if r < 0.96:
        return [
            f"[{ts} TP{tp}] KV cache pool is full. Retract requests. #retracted_reqs: "
            f"{rng.randrange(1, 9)}, #new_token_ratio: 0.{rng.randrange(1000, 9999)} -> 0.9000"
        ]
    if r < 0.99:
        return [f"[{ts}] Exception in callback BaseSelectorEventLoop._read_from_self()"]
    return [
        f"[{ts}] ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/uvicorn/protocols/http/'
        'httptools_impl.py", line 409, in run_asgi',
        "    result = await app(  # type: ignore[func-returns-value]",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ]


def _runtime_block(rng: random.Random, start_sec: int, n: int, ranks: int, kw: float) -> bytes:
    """About n lines, a fraction `kw` of them holding a keyword."""
    out: list[str] = []
    sec = start_sec
    while len(out) < n:
        sec += rng.random() < 0.05
        ts = _ts(sec)
        if rng.random() < kw:
            out.extend(_keyword_lines(rng, ts, ranks))
        else:
            out.append(_noise(rng, ts, ranks))
    return ("\n".join(out) + "\n").encode()


def keyword_line_count(data: bytes, keywords: list[str]) -> int:
    pat = re.compile("|".join(re.escape(k) for k in keywords).encode())
    return sum(1 for line in data.split(b"\n") if pat.search(line))


def write_mix(
    path: Path, size: int, kw_per_gib: int = REALISTIC_KW_PER_GIB, seed: int = 15
) -> dict[str, int]:
    """A log of about `size` bytes: start-up, runtime lines of which `kw_per_gib` per GiB
    hold a keyword, a restart (a second full start-up) at 93% of the file."""
    rng = random.Random(seed)
    startup = startup_bytes()
    # Lines per GiB at the average runtime line length (~140 bytes): the keyword fraction.
    kw = kw_per_gib / 7_650_000
    blocks = [_runtime_block(rng, 3600 * i, _BLOCK_LINES, 4, kw) for i in range(_BLOCKS)]
    return _write_cycled(path, size, startup, blocks, restart_at=int(size * 0.93))


def _write_cycled(
    path: Path, size: int, startup: bytes, blocks: list[bytes], restart_at: int
) -> dict[str, int]:
    written = lines = 0
    with open(path, "wb", buffering=8 * MIB) as f:
        f.write(startup)
        written += len(startup)
        lines += startup.count(b"\n")
        i = 0
        for goal, then in ((restart_at, startup), (size, b"")):
            while written < goal:
                block = blocks[i % len(blocks)]
                i += 1
                if written + len(block) > goal:
                    # Cut the last block at a line end so that sizes and the restart's
                    # place come out as asked, whatever the block size.
                    block = block[: block.rfind(b"\n", 0, goal - written) + 1] or block
                f.write(block)
                written += len(block)
                lines += block.count(b"\n")
            f.write(then)
            written += len(then)
            lines += then.count(b"\n")
    return {"bytes": written, "lines": lines}


# --- shapes: ranks, files, restarts -------------------------------------------------------

_TAG = re.compile(rb"^(\[[0-9: -]{8,19}) TP([0-9]{1,6})\]")
_CRASH = (
    b"Traceback (most recent call last):\n"
    b'  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
    b"line 390, in capture\n"
    b"RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
    b"unhandled system error (run with NCCL_DEBUG=INFO for details)"
)


def _bars(n: int = 36) -> bytes:
    """TP0's capture bar: n bucket renders on one physical line, joined by \\r as tqdm writes."""
    renders = []
    for i in range(n + 1):
        bs = max(1, 80 - 8 * i // 3)
        avail = 1.45 - 0.025 * i
        renders.append(
            f"Capturing batches (bs={bs} avail_mem={avail:.2f} GB): {100 * i // n:3d}%|"
            f"{'#' * (10 * i // n):<10}| {i}/{n} [00:{i // 5:02d}<00:{(n - i) // 5:02d},  5.00it/s]"
        )
    return "\r".join(renders).encode()


def ranks_startup(n: int, crash: bool = False) -> list[bytes]:
    """The fixture's TP4 start-up as a TP-n one: each TP0 line once per rank (TP1-3 dropped),
    TP0's capture bar as 36 bucket renders. With `crash`, every rank stops after capture
    begin with a traceback that is not about memory, and the server never comes up."""
    out: list[bytes] = []
    for line in startup_bytes().split(b"\n"):
        m = _TAG.match(line)
        if m is None:
            if b"%|" not in line:  # the fixture's own bars (one has TP1's record glued to it)
                out.append(line.replace(b"tp_size=4,", f"tp_size={n},".encode()))
            continue
        if m.group(2) != b"0":
            continue
        rest = line[m.end() :]
        out.extend(m.group(1) + f" TP{i}]".encode() + rest for i in range(n))
        if b"Capture cuda graph begin." in rest:
            if crash:
                return out + [_CRASH]
            out.append(_bars())
    return out


def write_ranks(path: Path, n: int) -> int:
    data = b"\n".join(ranks_startup(n))
    path.write_bytes(data if data.endswith(b"\n") else data + b"\n")
    return len(data)


def write_rank_files(folder: Path, n: int, crash: bool = True) -> list[Path]:
    """One launch as n per-rank files: rank i's lines in file i, the untagged lines in file 0;
    with `crash` (the default), each rank's file ends in its own traceback at capture begin."""
    per: list[list[bytes]] = [[] for _ in range(n)]
    for line in ranks_startup(n):
        if crash and line.startswith(b"Capturing batches"):
            break  # every rank has printed its capture begin; the crash follows
        m = _TAG.match(line)
        per[int(m.group(2)) if m else 0].append(line)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, lines in enumerate(per):
        p = folder / f"rank{i:04d}.log"
        p.write_bytes(b"\n".join(lines + ([_CRASH] if crash else [])) + b"\n")
        paths.append(p)
    return paths


def write_restarts(path: Path, n: int, seed: int = 15) -> int:
    """n start-ups of the fixture one after another, each followed by a little serving."""
    rng = random.Random(seed)
    startup = startup_bytes()
    with open(path, "wb") as f:
        for i in range(n):
            f.write(startup)
            f.write(_runtime_block(rng, 3600 * i, 50, 4, 0.0126))
    return path.stat().st_size
