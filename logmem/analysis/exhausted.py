"""A launch that came up although free memory reached the 0.00 floor (rules.at_floor) before or
during graph capture: what it ran out of, what the log shows of the platform, and the levers.

The driver's reading cannot go below 0.00, so what was allocated after it is unseen: the
graphs, the attention workspaces and the activations then had no free memory left. A start-up
that still finishes there is one whose driver oversubscribes into system memory (the WSL /
Windows sysmem fallback, reference 12.1), or an integrated GPU whose "free" is system RAM. The
platform is stated only where the log shows it. Facts only: logmem.report.exhausted_words
words them.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

import regex

from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.ledger import PhaseWhat, RankLedger
from logmem.analysis.projection import PoolProjection
from logmem.analysis.request_table import request_table
from logmem.analysis.sizing import Sizing
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse.lazy import lazy
from logmem.sglang import rules


class FloorPlace(Enum):
    """Where free memory first read 0.00: the step whose after-reading is at the floor."""

    POOLS = "pools"  # the KV pool step (Memory pool end)
    BEFORE_CAPTURE = "before_capture"  # workspaces between Memory pool end and capture begin
    CAPTURE = "capture"  # inside a capture (a bar reading or its end line)


class FloorPlatform(Enum):
    WSL = "wsl"  # a Windows drive mounted at /mnt/<letter>/, or a WSL kernel string
    DOCKER_DESKTOP = "docker_desktop"
    UNIFIED = "unified"  # nvidia-smi gave no memory total on a device that can be unified


@frozen
class PlatformSign:
    platform: FloorPlatform
    line: int
    evidence: str  # the matched text (a path prefix, "Docker Desktop"), for the sentence


@frozen
class MfsLever:
    """Lowering --mem-fraction-static by 0.01 at a time (SGLang's KV rule, via the projection
    logmem whatif uses): what each step gives back, and below which value the pool is empty."""

    mfs: float  # the launch's own
    pre_load_bytes: int  # P
    step_bytes: int  # rest(mfs) - rest(mfs - 0.01): P x 0.01
    step_tokens: int  # the pool tokens that step costs
    empty_below: float | None  # the smallest mfs whose pool holds a token (None: not found)


@frozen
class TableLever:
    """--context-length at the pool's size: the request cap (max_req_len) stays what the pool
    already allowed, and the request-to-token table shrinks (rules.req_to_token_bytes)."""

    context_len: int
    kv_tokens: int
    max_running_requests: int
    table_bytes: int
    table_at_bytes: int


@frozen
class Exhausted:
    kind: ClassVar[FindingKind] = FindingKind.EXHAUSTED
    rank: str
    place: FloorPlace
    line: int  # the first 0.00 reading
    phase_lines: tuple[int, int]  # the step that reached it
    graph: str | None  # the capture it reached the floor in (or the one after it), if any
    sign: PlatformSign | None
    mfs: MfsLever | None
    table: TableLever | None


_WSL_PATH = lazy(r"(?<![\w/])/mnt/[a-z]/")
_WSL_TEXT = lazy(r"microsoft-standard-WSL|\bWSL2?\b")
_DOCKER_DESKTOP = lazy(r"\bdocker[ -]desktop\b", regex.IGNORECASE)


def platform_sign(launch: Launch, unified_line: int | None) -> PlatformSign | None:
    """The first line of the launch that shows WSL or Docker Desktop, else the unified-memory
    line (nvidia-smi gave no total); None when the log shows no such platform."""
    for e in launch.all_events():
        text = e.source.text
        m = _WSL_PATH.search(text) or _WSL_TEXT.search(text)
        if m is not None:
            return PlatformSign(FloorPlatform.WSL, e.source.line_no, m.group(0))
        m = _DOCKER_DESKTOP.search(text)
        if m is not None:
            return PlatformSign(FloorPlatform.DOCKER_DESKTOP, e.source.line_no, m.group(0))
    if unified_line is not None:
        return PlatformSign(FloorPlatform.UNIFIED, unified_line, "")
    return None


def _first_floor(rl: RankLedger) -> tuple[FloorPlace, int, tuple[int, int], str | None] | None:
    """The first step up to the end of the captures whose reading is at the floor."""
    for i, p in enumerate(rl.phases):
        if p.what is PhaseWhat.CAPTURE:
            low = next((b for b in p.buckets if rules.at_floor(b.avail_bytes)), None)
            if low is not None or rules.at_floor(p.after_bytes):
                line = low.line if low is not None else p.lines[1]
                name = p.graph.name if p.graph is not None else None
                return FloorPlace.CAPTURE, line, p.lines, name
            continue
        if not rules.at_floor(p.after_bytes):
            continue
        later = [q for q in rl.phases[i + 1 :] if q.what is PhaseWhat.CAPTURE]
        if p.what is PhaseWhat.POOLS and later:
            g = later[0].graph
            return FloorPlace.POOLS, p.lines[1], p.lines, g.name if g is not None else None
        if p.what is PhaseWhat.PRE_CAPTURE and later:
            g = later[0].graph
            return FloorPlace.BEFORE_CAPTURE, p.lines[1], p.lines, g.name if g else None
    return None


def _mfs_lever(sz: Sizing | None, launch: Launch) -> MfsLever | None:
    proj = PoolProjection.of(sz, launch.args)
    if proj is None or sz is None or sz.mem_fraction_static is None:
        return None
    m0 = sz.mem_fraction_static
    lower = round(m0 - 0.01, 3)
    if lower <= 0:
        return None
    step = proj.rest(m0) - proj.rest(lower)
    tokens = proj.pool_tokens(m0) - proj.pool_tokens(lower)
    empty_below = rules.smallest_mfs_holding(proj.pool_tokens, 1)
    return MfsLever(m0, sz.pre_load_bytes, step, tokens, empty_below)


def _table_lever(launch: Launch, kv_tokens: int | None) -> TableLever | None:
    """The table now and at --context-length kv_tokens, as analysis.request_table sizes it
    (SGLang's slot count again at the new context); None when the context fits the pool."""
    t = request_table(launch, kv_tokens)
    if t is None or t.at_context is None or kv_tokens is None:
        return None
    return TableLever(t.context_len, kv_tokens, t.max_running_requests, t.bytes, t.at_context.bytes)


def exhausted(
    rl: RankLedger, launch: Launch, sz: Sizing | None, unified_line: int | None
) -> Exhausted | None:
    """The launch's exhaustion on rank ``rl`` (its main rank), when the floor is reached before
    or during capture; call it only for a launch that came up."""
    found = _first_floor(rl)
    if found is None:
        return None
    place, line, lines, graph = found
    kv_tokens = sz.kv_tokens if sz is not None else None
    if kv_tokens is None and launch.summary is not None:
        kv_tokens = launch.summary.max_total_num_tokens
    return Exhausted(
        rl.rank,
        place,
        line,
        lines,
        graph,
        platform_sign(launch, unified_line),
        _mfs_lever(sz, launch),
        _table_lever(launch, kv_tokens),
    )
