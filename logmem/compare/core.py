"""Comparison stage: launches -> Diff (what changed), Fit (graph memory per row) and WhatIf.

* ``diff(a, b)``: the server_args that differ, the SGLang wording each log used, the
  change of every phase per rank, the KV tokens gained or lost and the terms that
  account for them, the graph split per family and per bucket, and, when the launches
  differ only in the CUDA-graph batch sizes, the slope of graph memory per row.
* ``fit(launches)``: the same slope by ordinary least squares over two or more launches.
* ``whatif(launch, ...)``: SGLang's KV rule (reference 12.2) replayed on the measured
  ledger for another mem_fraction_static / cuda_graph_max_bs / context length, and the
  feasible mem_fraction_static window.

Reads ledger.Launch and attribution.LaunchLedger only; reports live in report/compare.py.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logmem.analysis.attribution import LaunchLedger, RankLedger, Sizing, build_ledger
from logmem.errors import FitError, SelectionError
from logmem.model.launch import Graph, Launch
from logmem.parse import events as ev
from logmem.units import GIB, MIB, PRINT_RESOLUTION_GIB

# server_args keys that do not change GPU memory at start-up: where the server listens,
# what and how it logs, credentials, seeds, timeouts, chat/parsing front-end options,
# and names or paths of files (the same weights under another path load the same; a
# different model shows up in the weights phase instead). `diff` lists these under
# "ignored" and they never block a slope. Any key not named here counts as
# memory-relevant, so a new SGLang flag is suspect until someone adds it here.
NON_MEMORY_ARGS: frozenset[str] = frozenset(
    {
        # network and process placement
        "host",
        "port",
        "nccl_port",
        "dist_init_addr",
        "node_rank",
        "api_key",
        "admin_api_key",
        # seeds and timeouts
        "random_seed",
        "watchdog_timeout",
        "dist_timeout",
        "soft_watchdog_timeout",
        # names and paths
        "model_path",
        "tokenizer_path",
        "download_dir",
        "served_model_name",
        "file_storage_path",
        "chat_template",
        "completion_template",
        "crash_dump_folder",
        "debug_tensor_dump_output_folder",
        "debug_tensor_dump_input_file",
        # logging, metrics and tracing
        "log_level",
        "log_level_http",
        "log_requests",
        "log_requests_level",
        "log_requests_format",
        "log_requests_target",
        "show_time_cost",
        "decode_log_interval",
        "enable_metrics",
        "enable_metrics_for_all_schedulers",
        "enable_cache_report",
        "enable_request_time_stats_logging",
        "bucket_time_to_first_token",
        "bucket_inter_token_latency",
        "bucket_e2e_request_latency",
        "collect_tokens_histogram",
        "prompt_tokens_buckets",
        "generation_tokens_buckets",
        "kv_events_config",
        "enable_trace",
        "otlp_traces_endpoint",
        "uvicorn_access_log_exclude_prefixes",
        "gc_warning_threshold_secs",
        # front end (tokenizer process, parsers, streaming): CPU side
        "tool_call_parser",
        "reasoning_parser",
        "stream_interval",
        "stream_output",
        "allow_auto_truncate",
        "constrained_json_whitespace_pattern",
        "skip_server_warmup",
        "warmups",
    }
)

# The varied setting of a slope pair and the lists SGLang derives from it (the dump
# shows values after __post_init__, so a new max bs also rewrites these).
GRAPH_SIZE_ARGS: frozenset[str] = frozenset(
    {
        "cuda_graph_max_bs",
        "cuda_graph_bs",
        "cuda_graph_config",
        "cuda_graph_max_bs_decode",
        "cuda_graph_bs_decode",
        "cuda_graph_max_bs_prefill",
        "cuda_graph_bs_prefill",
        "piecewise_cuda_graph_tokens",
        "piecewise_cuda_graph_max_tokens",
    }
)

# A bucket cost or a static-buffer size is a difference of two readings printed with
# "%.2f", so it is known to +-(0.005 + 0.005) GiB; every error bound below uses this.
POINT_ERROR_GIB = 2 * PRINT_RESOLUTION_GIB

# SGLang's reserve_for_graph_mb() (reference 12.3): MiB reserved per unit of max bs.
HEURISTIC_MIB_PER_BS = 2.0


# --- inputs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchRef:
    """Which launch of which input a side of a comparison is."""

    label: str  # "A", "B", "1", ...
    paths: tuple[str, ...]
    index: int

    @property
    def name(self) -> str:
        shown = ",".join("stdin" if p == "-" else os.path.basename(p) for p in self.paths)
        return f"{shown} (launch {self.index})"


def split_spec(spec: str) -> list[str]:
    """'a.log' or 'tp0.log,tp1.log' (the per-rank files of one launch) -> paths."""
    if spec == "-" or os.path.exists(spec) or "," not in spec:
        return [spec]
    return [p for p in spec.split(",") if p]


def load_launch(spec: str, launch: int | None, label: str) -> tuple[Launch, LaunchRef]:
    """Read one launch from a path spec; a file with several launches needs `launch`."""
    from logmem.api import read_log

    paths = split_spec(spec)
    analysis = read_log(*paths)
    n = len(analysis.launches)
    if launch is None:
        if n > 1:
            raise SelectionError(
                f"{label} ({spec}) holds {n} launches; pick one with --launch N (0 to {n - 1})"
            )
        launch = 0
    if not 0 <= launch < n:
        raise SelectionError(
            f"--launch {launch}: {label} ({spec}) holds {n} launch(es), numbered 0 to {n - 1}"
        )
    L = analysis.launches[launch]
    return L, LaunchRef(label, tuple(paths), launch)


# --- server_args ------------------------------------------------------------------------


@dataclass(frozen=True)
class ArgChange:
    key: str
    values: tuple[Any, ...]  # one per launch; None where the key is absent


@dataclass(frozen=True)
class ArgsComparison:
    changed: tuple[
        ArgChange, ...
    ]  # memory-relevant keys every launch prints, with differing values
    ignored: tuple[ArgChange, ...]  # the same in NON_MEMORY_ARGS
    varied: tuple[str, ...]  # changed (or one-sided) keys in GRAPH_SIZE_ARGS
    confounders: tuple[str, ...]  # other memory-relevant differences not named by --allow-diff
    allowed: tuple[str, ...]  # differing keys that --allow-diff named
    missing: tuple[str, ...]  # labels of launches without a server_args line
    # Keys some launches do not print at all (another SGLang version): label -> the keys it prints
    # that another launch does not ("only in A" for two), and the same as rows (None where absent).
    only_in: tuple[tuple[str, tuple[str, ...]], ...] = ()
    one_sided: tuple[ArgChange, ...] = ()


_ABSENT = object()


def compare_args(
    launches: Sequence[Launch], labels: Sequence[str], allow: Sequence[str] = ()
) -> ArgsComparison:
    dumps = [L.args if L.server_args is not None else None for L in launches]
    missing = tuple(lab for lab, d in zip(labels, dumps) if d is None)
    present = [d for d in dumps if d is not None]
    keys: list[str] = []
    for d in present:
        keys.extend(k for k in d if k not in keys)
    changed: list[ArgChange] = []
    ignored: list[ArgChange] = []
    one_sided: list[ArgChange] = []
    for k in keys:
        vals = [d.get(k, _ABSENT) for d in present]
        if all(v == vals[0] for v in vals[1:]):
            continue
        row = ArgChange(k, tuple(None if v is _ABSENT else v for v in vals))
        if any(v is _ABSENT for v in vals):
            one_sided.append(row)
        else:
            (ignored if k in NON_MEMORY_ARGS else changed).append(row)
    present_labels = [lab for lab, d in zip(labels, dumps) if d is not None]
    only_in = tuple(
        (lab, keys_only)
        for i, lab in enumerate(present_labels)
        if (keys_only := tuple(c.key for c in one_sided if c.key in present[i]))
    )
    # A memory-relevant key only some launches print (another SGLang version) also stands in
    # the way of a slope: its value on the others is unknown.
    relevant = [c for c in changed] + [c for c in one_sided if c.key not in NON_MEMORY_ARGS]
    varied = tuple(c.key for c in relevant if c.key in GRAPH_SIZE_ARGS)
    others = [c.key for c in relevant if c.key not in GRAPH_SIZE_ARGS]
    allowed = tuple(k for k in others if k in allow)
    confounders = tuple(k for k in others if k not in allow)
    return ArgsComparison(
        tuple(changed),
        tuple(ignored),
        varied,
        confounders,
        allowed,
        missing,
        only_in,
        tuple(one_sided),
    )


def _fmt_value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def key_list(keys: Sequence[str], n: int = 12) -> str:
    """'a, b, c' or 'a, b and 38 more': a list of keys that stays short."""
    if len(keys) <= n:
        return ", ".join(keys)
    return f"{', '.join(keys[:n])} and {len(keys) - n} more"


def confounder_parts(cmp: ArgsComparison, limit: int = 8) -> list[str]:
    """The confounding keys, briefly: 'mfs (0.85 vs 0.83)', then 'only in A: ...'."""
    parts = []
    differ = [c for c in cmp.changed if c.key in cmp.confounders]
    for c in differ[:limit]:
        vals = " vs ".join(f"{_fmt_value(v)}" for v in c.values)
        parts.append(f"{c.key} ({vals})")
    if len(differ) > limit:
        parts.append(f"{len(differ) - limit} more keys with other values")
    for lab, keys in cmp.only_in:
        mine = [k for k in keys if k in cmp.confounders]
        if mine:
            who = f"launch {lab}" if lab.isdigit() else lab
            parts.append(
                f"{len(mine)} key{'s' if len(mine) > 1 else ''} only {who} prints: {key_list(mine, limit)}"
            )
    return parts


def confounder_message(cmp: ArgsComparison, labels: Sequence[str]) -> str:
    hint = ""
    if "mem_fraction_static" in cmp.confounders and any(
        c.key == "mem_fraction_static" for c in cmp.changed
    ):
        hint = (
            "; SGLang derives its default mem_fraction_static from cuda_graph_max_bs, so pass "
            "--mem-fraction-static explicitly to both launches"
        )
    return (
        f"the launches differ in more than the CUDA-graph batch sizes: {'; '.join(confounder_parts(cmp))}. "
        f"A slope would mix their effects{hint}. Name each with --allow-diff KEY to fit anyway"
    )


def graph_max_bs(args: Mapping[str, Any]) -> int | None:
    """cuda_graph_max_bs as resolved, or the newest form inside cuda_graph_config."""
    v = args.get("cuda_graph_max_bs")
    if isinstance(v, int):
        return v
    cfg = args.get("cuda_graph_config")
    if isinstance(cfg, dict):
        dec = cfg.get("decode")
        if isinstance(dec, dict) and isinstance(dec.get("max_bs"), int):
            return int(dec["max_bs"])
    return None


# --- SGLang wording (era markers) -------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    name: str
    values: tuple[str, ...]  # one per launch

    @property
    def differs(self) -> bool:
        return any(v != self.values[0] for v in self.values[1:])


MARKER_NAMES = (
    "server_args form",
    "capture lines",
    "capture end fields",
    "elapsed= in init/load lines",
    "Load weight end details",
    "KV line",
    "bucket bar",
    "bs list line",
    "ranks printing model-runner lines",
)


def era_markers(launch: Launch) -> dict[str, str]:
    """Which wording of each memory line a launch used (reference 0.1 and 7)."""
    events = launch.all_events()
    out: dict[str, str] = {}
    sa = launch.server_args
    out["server_args form"] = (
        "not printed" if sa is None else ("dict" if sa.form == "dict" else "ServerArgs(...)")
    )
    begins = [e for e in events if isinstance(e, ev.CaptureBegin)]
    ends = [e for e in events if isinstance(e, ev.CaptureEnd)]
    if not begins and not ends:
        out["capture lines"] = "none"
    elif any("backend=" in e.source.text for e in begins):
        out["capture lines"] = "Capture target decode CUDA graph (E7)"
    else:
        out["capture lines"] = "Capture cuda graph (G0-G2)"
    if ends:
        t = ends[0].source.text
        ia, iu = t.find("avail mem="), t.find("mem usage=")
        if "elapsed=" in t:
            out["capture end fields"] = "elapsed=, usage, avail (E7)"
        elif ia >= 0 and iu >= 0:
            out["capture end fields"] = "avail, usage (E2)" if ia < iu else "usage, avail (E3-E6)"
        else:
            out["capture end fields"] = "elapsed only (E0-E1)"
    else:
        out["capture end fields"] = "no end line"
    inits = [e for e in events if isinstance(e, ev.InitEnd)]
    loads = [e for e in events if isinstance(e, ev.WeightsEnd)]
    has_elapsed = any(e.elapsed_s is not None for e in inits) or any(
        e.elapsed_s is not None for e in loads
    )
    out["elapsed= in init/load lines"] = (
        "yes (E5 on)" if has_elapsed else ("no" if inits or loads else "no lines")
    )
    if loads:
        keys = sorted({k for e in loads for k, _ in e.details})
        out["Load weight end details"] = (
            ", ".join(f"{k}=" for k in keys) if keys else "none (E6 on)"
        )
    else:
        out["Load weight end details"] = "no line"
    kvs = [e for e in events if isinstance(e, ev.KVPool)]
    if kvs:
        form = "KV size" if kvs[0].kv is not None else "K size, V size"
        out["KV line"] = form + (" + dtype (E7)" if kvs[0].dtype is not None else "")
    else:
        out["KV line"] = "no line"
    graphs = [g for r in launch.ranks for g in r.graphs]
    if any(s.size is not None for g in graphs for s in g.samples):
        out["bucket bar"] = "(bs=N avail_mem=X)"
    elif any(g.samples for g in graphs):
        out["bucket bar"] = "(avail_mem=X)"
    elif any(g.bars for g in graphs) or launch.stray_bars:
        out["bucket bar"] = "no description"
    else:
        out["bucket bar"] = "none"
    out["bs list line"] = (
        "yes (E3-E6)" if any(isinstance(e, ev.CaptureSizes) for e in events) else "no"
    )
    with_lines = [r.label for r in launch.ranks if r.models]
    if len(launch.ranks) <= 1:
        out["ranks printing model-runner lines"] = "single rank"
    elif len(with_lines) == 1 and len(launch.ranks) > 1:
        out["ranks printing model-runner lines"] = f"{with_lines[0]} only (E3 rank filter)"
    else:
        out["ranks printing model-runner lines"] = f"all {len(with_lines)}"
    return out


def era_guess(markers: Mapping[str, str]) -> str:
    """An approximate era from the markers (reference 0.1); said as a guess."""
    cap = markers.get("capture lines", "")
    end = markers.get("capture end fields", "")
    if "E7" in cap:
        return "E7 (about Aug 2026 on)"
    if markers.get("elapsed= in init/load lines", "").startswith("yes"):
        return (
            "E6 (about Apr-Jul 2026)"
            if "dtype=" not in markers.get("Load weight end details", "")
            else ("E5 (about Dec 2025-Mar 2026)")
        )
    if "E3-E6" in end:
        return "E3-E4 (about May-Dec 2025)"
    if "E2" in end:
        return "E2 (about Feb-Apr 2025)"
    if "E0-E1" in end:
        return "E0-E1 (2024-Jan 2025)"
    return "unknown"


# --- matching ranks and graph families across launches ---------------------------------------

# E7 renamed the graph families; a launch from each era still captures the same graphs.
FAMILY_ALIASES = {"target decode": "decode", "target prefill": "piecewise"}


def family_key(name: str) -> str:
    """A graph family (or a phase key naming one) in the oldest wording, for matching."""
    head, sep, fam = name.rpartition(":") if ":" in name else ("", "", name)
    base, hash_, n = fam.partition("#")
    return f"{head}{sep}{FAMILY_ALIASES.get(base, base)}{hash_}{n}"


def rank_map(a: Sequence[str], b: Sequence[str]) -> dict[str, str]:
    """A's rank label -> B's: the same label, else the unmatched ones in order (e.g. an
    untagged single GPU and "TP0")."""
    m = {x: x for x in a if x in b}
    rest_b = [y for y in b if y not in m]
    for x, y in zip([x for x in a if x not in m], rest_b):
        m[x] = y
    return m


# --- graph points: what one capture measured ------------------------------------------------


@dataclass(frozen=True)
class GraphPoint:
    """One capture of one graph family on one rank, reduced to what a slope needs."""

    rank: str
    graph: str  # family name, "#2" appended for a repeat on the same rank
    per_bs: bool  # sizes are batch sizes (False: piecewise/prefill sizes are tokens)
    largest_size: int | None
    rows_per_bs: int | None  # tokens per request; None for token-sized graphs
    rows: int | None
    rows_source: str
    static_bytes: int | None
    largest_bytes: int | None
    other_bytes: int | None
    total_bytes: int | None
    buckets: tuple[tuple[int | None, int | None], ...]  # (size, cost bytes) in capture order

    @property
    def has_buckets(self) -> bool:
        return self.largest_bytes is not None


def _rows_per_bs(g: Graph, args: Mapping[str, Any]) -> tuple[int | None, str]:
    name = g.name
    if "prefill" in name or "piecewise" in name:
        return None, "num_tokens (this graph's sizes are tokens)"
    if g.tokens_per_req is not None:
        return (
            g.tokens_per_req,
            f"num_tokens_per_req={g.tokens_per_req} from the capture begin line",
        )
    spec = args.get("speculative_algorithm")
    ndt = args.get("speculative_num_draft_tokens")
    target = "draft" not in name
    if target and ("verify" in name or spec not in (None, "None")) and isinstance(ndt, int):
        return (
            ndt,
            f"speculative_num_draft_tokens={ndt} from server_args (the target graph verifies)",
        )
    if "draft" in name:
        return 1, "1 per request assumed (the draft graph's tokens per request are not printed)"
    return 1, "1 per request (decode)"


def graph_points(launch: Launch) -> list[GraphPoint]:
    out: list[GraphPoint] = []
    for r in launch.ranks:
        seen: dict[str, int] = {}
        for g in r.graphs:
            n = seen.get(g.name, 0) + 1
            seen[g.name] = n
            key = g.name if n == 1 else f"{g.name}#{n}"
            per, source = _rows_per_bs(g, launch.args)
            size = g.largest_size
            if size is None and per is not None and "draft" not in g.name:
                # No bs list and no bar sizes (E0-E2): the resolved flag is the best we have.
                size = graph_max_bs(launch.args)
                if size is not None:
                    source += (
                        "; largest size from server_args cuda_graph_max_bs (no bs list printed)"
                    )
            rows = (
                size * per
                if size is not None and per is not None
                else size
                if per is None
                else None
            )
            total = g.end.usage.bytes if g.end and g.end.usage else None
            if total is None and g.begin_bytes is not None and g.end_bytes is not None:
                total = g.begin_bytes - g.end_bytes
            buckets: list[tuple[int | None, int | None]] = []
            for i, s in enumerate(g.samples):
                nxt = g.samples[i + 1].avail.bytes if i + 1 < len(g.samples) else g.end_bytes
                buckets.append((s.size, s.avail.bytes - nxt if nxt is not None else None))
            # Only readings at the first two buckets measure them (a log may keep only the 0%
            # and 100% renders: their difference is many buckets, not the largest one).
            largest = g.largest_bucket_bytes if g.largest_measured else None
            out.append(
                GraphPoint(
                    r.label,
                    key,
                    per is not None,
                    size,
                    per,
                    rows,
                    source,
                    g.static_bytes if g.static_measured else None,
                    largest,
                    g.other_buckets_bytes if largest is not None else None,
                    total,
                    tuple(buckets),
                )
            )
    return out


# --- straight lines ---------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """y = intercept + slope x rows, fitted by least squares (exact through two points).

    Errors are worst-case bounds from printing: every y is off by at most e = 0.01 GiB,
    so |d slope| <= e x sum|x_i - mean x| / sum (x_i - mean x)^2 (two points: 2e / |x_B - x_A|)
    and |d intercept| <= e x sum_i |1/n - mean x (x_i - mean x) / sum (x - mean x)^2|.
    """

    mib_per_row: float
    intercept_gib: float
    mib_per_row_error: float
    intercept_error_gib: float
    residuals_gib: tuple[float, ...]
    stderr_mib_per_row: float | None  # from the residuals, three or more launches


def fit_line(xs: Sequence[int], ys_bytes: Sequence[int]) -> Line:
    """Ordinary least squares in GiB; pure Python."""
    n = len(xs)
    ys = [y / GIB for y in ys_bytes]
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise FitError("every launch captured the same largest size: no slope can be fitted")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx  # GiB per row
    intercept = my - slope * mx
    resid = tuple(y - (intercept + slope * x) for x, y in zip(xs, ys))
    e = POINT_ERROR_GIB
    slope_err = e * sum(abs(x - mx) for x in xs) / sxx
    icpt_err = e * sum(abs(1 / n - mx * (x - mx) / sxx) for x in xs)
    stderr = None
    if n >= 3:
        stderr = math.sqrt(sum(r * r for r in resid) / (n - 2) / sxx) * 1024
    return Line(slope * 1024, intercept, slope_err * 1024, icpt_err, resid, stderr)


@dataclass(frozen=True)
class Heuristic:
    """SGLang's graph reserve per unit of max bs against the measured growth."""

    mib_per_bs: float
    terms: str
    measured_mib_per_bs: float
    measured_terms: str

    @property
    def ratio(self) -> float:
        return self.measured_mib_per_bs / self.mib_per_bs


def heuristic_mib_per_bs(args: Mapping[str, Any], max_bs: int | None) -> tuple[float, str]:
    h = HEURISTIC_MIB_PER_BS
    terms = ["2 MB for the decode graph"]
    dp = args.get("dp_size")
    if args.get("enable_dp_attention") and isinstance(dp, int):
        h += 3 * dp
        terms.append(f"3 MB x dp_size {dp} (DP attention)")
        if max_bs is not None and max_bs > 300:
            h += 1.5 * dp
            terms.append(f"1.5 MB x dp_size {dp} (max bs > 300)")
    return h, " + ".join(terms)


@dataclass(frozen=True)
class Slope:
    graph: str
    rank: str
    basis: str  # "largest bucket" | "capture total"
    rows: tuple[int, ...]
    rows_source: str
    rows_per_bs: int | None
    sizes: tuple[int | None, ...]
    largest_bytes: tuple[int, ...] | None
    static_bytes: tuple[int, ...] | None
    total_bytes: tuple[int | None, ...]
    line: Line  # on the basis: largest bucket, or the capture total when no bucket readings
    static: Line | None
    heuristic: Heuristic | None


def _slope_for(points: Sequence[GraphPoint], args: Mapping[str, Any]) -> Slope | None:
    rows = [p.rows for p in points]
    if any(r is None for r in rows) or len({r for r in rows}) < 2:
        return None
    xs = [int(r) for r in rows if r is not None]
    p0 = points[0]
    if all(p.has_buckets for p in points):
        basis = "largest bucket"
        ys = [p.largest_bytes for p in points]
    else:
        basis = "capture total"
        ys = [p.total_bytes for p in points]
    if any(y is None for y in ys):
        return None
    line = fit_line(xs, [int(y) for y in ys if y is not None])
    static = None
    st = [p.static_bytes for p in points]
    if basis == "largest bucket" and all(s is not None for s in st):
        static = fit_line(xs, [int(s) for s in st if s is not None])
    heur = None
    if p0.per_bs and p0.rows_per_bs:
        sizes = [p.largest_size for p in points if p.largest_size is not None]
        h, terms = heuristic_mib_per_bs(args, max(sizes) if sizes else None)
        per_bs = (line.mib_per_row + (static.mib_per_row if static else 0.0)) * p0.rows_per_bs
        what = "largest bucket + static buffers" if static else basis
        if p0.rows_per_bs != 1:
            what += f", x {p0.rows_per_bs} rows per unit of bs"
        heur = Heuristic(h, terms, per_bs, what)
    return Slope(
        p0.graph,
        p0.rank,
        basis,
        tuple(xs),
        p0.rows_source,
        p0.rows_per_bs,
        tuple(p.largest_size for p in points),
        tuple(int(p.largest_bytes) for p in points if p.largest_bytes is not None)
        if basis == "largest bucket"
        else None,
        tuple(int(s) for s in st if s is not None) if static else None,
        tuple(p.total_bytes for p in points),
        line,
        static,
        heur,
    )


def slopes(launches: Sequence[Launch]) -> tuple[list[Slope], list[str]]:
    """A slope per (rank, graph family) captured in every launch with different rows."""
    per_launch = [graph_points(L) for L in launches]
    first = [r.label for r in launches[0].ranks]
    index = []
    for L, pts in zip(launches, per_launch):
        back = {v: k for k, v in rank_map(first, [r.label for r in L.ranks]).items()}
        index.append({(back.get(p.rank, p.rank), family_key(p.graph)): p for p in pts})
    out: list[Slope] = []
    notes: list[str] = []
    keys = [(p.rank, family_key(p.graph)) for p in per_launch[0]]
    with_buckets = {k for k in keys if all(k in ix and ix[k].has_buckets for ix in index)}
    families_done: set[str] = set()
    for k in keys:
        if not all(k in ix for ix in index):
            notes.append(f"{k[1]} on {k[0] or 'the GPU'} is not captured in every launch: no slope")
            continue
        pts = [ix[k] for ix in index]
        # Without bucket readings, fall back to the capture total on one rank per family
        # (the other ranks print the same end lines).
        if k not in with_buckets and (
            k[1] in families_done or any(kk[1] == k[1] for kk in with_buckets)
        ):
            continue
        s = _slope_for(pts, launches[0].args)
        if s is None:
            if len({p.rows for p in pts}) < 2:
                notes.append(
                    f"{k[1]} on {k[0] or 'the GPU'}: the same largest size in every launch, no slope"
                )
            continue
        families_done.add(k[1])
        out.append(s)
    return out, notes


# --- diff -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseChange:
    rank: str  # as A prints it
    key: str
    name: str
    a_bytes: int | None  # drop in free memory over the phase, in A
    b_bytes: int | None
    rank_b: str | None = None  # B's label when it differs (matched by position)

    @property
    def change_bytes(self) -> int | None:
        return None if self.a_bytes is None or self.b_bytes is None else self.b_bytes - self.a_bytes


@dataclass(frozen=True)
class KVTerm:
    name: str
    bytes: int | None  # change of the KV budget (rest) this term accounts for
    tokens: int


@dataclass(frozen=True)
class KVChange:
    tokens: tuple[int | None, int | None]
    tokens_source: str
    bytes_per_token: tuple[int | None, int | None]
    mem_fraction_static: tuple[float, float]
    pre_load_bytes: tuple[int, int]
    after_weights_bytes: tuple[int, int]
    rest_bytes: tuple[int, int]
    terms: tuple[KVTerm, ...]
    terms_note: str = ""  # why there are no terms

    @property
    def change_tokens(self) -> int | None:
        a, b = self.tokens
        return None if a is None or b is None else b - a


@dataclass(frozen=True)
class GraphChange:
    rank: str
    graph: str
    a: GraphPoint | None
    b: GraphPoint | None
    buckets: tuple[tuple[int, int, int], ...]  # (size, cost A, cost B) where both have it
    rank_b: str | None = None


@dataclass(frozen=True)
class Diff:
    a: LaunchRef
    b: LaunchRef
    args: ArgsComparison
    markers: tuple[Marker, ...]
    eras: tuple[str, str]
    phases: tuple[PhaseChange, ...]
    kv: KVChange | None
    graphs: tuple[GraphChange, ...]
    slopes: tuple[Slope, ...]
    slope_note: str
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]
    headlines: tuple[str, ...] = ()  # said before anything else: different models, SGLang versions
    models: tuple[str | None, str | None] = (None, None)  # model_path (architecture) of A and B


def bytes_per_token(sz: Sizing) -> int | None:
    """The cell size from the KV line: the round value the printed sizes allow, else the ratio."""
    if sz.likely_bytes_per_token:
        return sz.likely_bytes_per_token
    return round(sz.bytes_per_token) if sz.bytes_per_token else None


def _tokens(L: Launch, sz: Sizing | None) -> tuple[int | None, str]:
    if L.summary is not None:
        return L.summary.max_total_num_tokens, "max_total_num_tokens"
    if sz is not None and sz.kv_tokens is not None:
        return sz.kv_tokens, "KV line #tokens"
    return None, "not printed"


def kv_change(a: Launch, la: LaunchLedger, b: Launch, lb: LaunchLedger) -> KVChange | None:
    """KV tokens gained or lost, split into the terms of SGLang's rule.

    rest = after_weights - P (1 - mfs) = P mfs - (P - after_weights), so exactly
    d rest = mfs_A dP + P_B d mfs - d(P - after_weights); tokens = rest / bytes per token.
    """
    sa, sb = la.sizing, lb.sizing
    if sa is None or sb is None:
        return None
    ta, src_a = _tokens(a, sa)
    tb, src_b = _tokens(b, sb)
    ba, bb = bytes_per_token(sa), bytes_per_token(sb)
    terms: list[KVTerm] = []
    # Terms in tokens only add up when both pools count the same cells under the same rule.
    caps = [
        x if isinstance(x := L.args.get("max_total_tokens"), int) and x > 0 else None
        for L in (a, b)
    ]
    why = []
    if ba and bb and ba != bb:
        why.append(
            f"the bytes per token differ ({ba:,} vs {bb:,}: another model, KV dtype or TP split), so "
            "a token of A is not a token of B"
        )
    if caps[0] != caps[1]:
        shown = " vs ".join(f"{c:,}" if c is not None else "not set" for c in caps)
        why.append(f"--max-total-tokens differs ({shown}), so a cap, not the rule, sets a pool")
    terms_note = ""
    if why:
        terms_note = "No split into the rule's terms: " + "; and ".join(why) + "."
    elif ba and bb:
        d_p = sb.pre_load_bytes - sa.pre_load_bytes
        w_a = sa.pre_load_bytes - sa.after_weights_bytes
        w_b = sb.pre_load_bytes - sb.after_weights_bytes
        t_p = round(sa.mem_fraction_static * d_p)
        t_m = round(sb.pre_load_bytes * (sb.mem_fraction_static - sa.mem_fraction_static))
        t_w = -(w_b - w_a)
        for name, n in (
            ("free memory before weights (P, min over ranks) x mfs", t_p),
            ("mem_fraction_static x P", t_m),
            ("weights (P - free after weights)", t_w),
        ):
            terms.append(KVTerm(name, n, int(n / ba)))
        if ta is not None and tb is not None:
            rest = (tb - ta) - sum(t.tokens for t in terms)
            terms.append(
                KVTerm(
                    "other (printing, page rounding, --max-total-tokens, pool split)", None, rest
                )
            )
    return KVChange(
        (ta, tb),
        src_a if src_a == src_b else f"{src_a} / {src_b}",
        (ba, bb),
        (sa.mem_fraction_static, sb.mem_fraction_static),
        (sa.pre_load_bytes, sb.pre_load_bytes),
        (sa.after_weights_bytes, sb.after_weights_bytes),
        (sa.rest_bytes, sb.rest_bytes),
        tuple(terms),
        terms_note,
    )


def _phase_changes(la: LaunchLedger, lb: LaunchLedger) -> list[PhaseChange]:
    out: list[PhaseChange] = []
    m = rank_map([r.rank for r in la.ranks], [r.rank for r in lb.ranks])
    pairs: list[tuple[str | None, str | None]] = [(r.rank, m.get(r.rank)) for r in la.ranks]
    pairs += [(None, r.rank) for r in lb.ranks if r.rank not in m.values()]
    for label_a, label_b in pairs:
        pa = _keyed(la.rank(label_a) if label_a is not None else None)
        pb = _keyed(lb.rank(label_b) if label_b is not None else None)
        keys = list(pa) + [k for k in pb if k not in pa]
        for k in keys:
            a, b = pa.get(k), pb.get(k)
            name = a[0] if a else b[0] if b else k
            shown = label_a if label_a is not None else str(label_b)
            other = label_b if label_b is not None and label_b != label_a else None
            out.append(PhaseChange(shown, k, name, a[1] if a else None, b[1] if b else None, other))
    return out


def _keyed(r: RankLedger | None) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    if r is None:
        return out
    for p in r.phases:
        k = family_key(p.key)
        n = 2
        while k in out:  # a repeated capture of the same family
            k = f"{family_key(p.key)}#{n}"
            n += 1
        out[k] = (p.name, p.delta_bytes)
    return out


def _graph_changes(a: Launch, b: Launch) -> list[GraphChange]:
    m = rank_map([r.label for r in a.ranks], [r.label for r in b.ranks])
    back = {v: k for k, v in m.items()}
    pa = {(p.rank, family_key(p.graph)): p for p in graph_points(a)}
    pb = {(back.get(p.rank, p.rank), family_key(p.graph)): p for p in graph_points(b)}
    keys = list(pa) + [k for k in pb if k not in pa]
    out = []
    for k in keys:
        ga, gb = pa.get(k), pb.get(k)
        buckets: list[tuple[int, int, int]] = []
        if ga and gb:
            cb = {s: c for s, c in gb.buckets if s is not None and c is not None}
            for s, c in ga.buckets:
                if s is not None and c is not None and s in cb:
                    buckets.append((s, c, cb[s]))
        other = gb.rank if gb is not None and gb.rank != k[0] else None
        name = ga.graph if ga else gb.graph if gb else k[1]
        out.append(GraphChange(k[0], name, ga, gb, tuple(buckets), other))
    return out


def diff(
    a: Launch,
    ref_a: LaunchRef,
    b: Launch,
    ref_b: LaunchRef,
    allow: Sequence[str] = (),
    slope: bool = True,
) -> Diff:
    """Compare two launches; always compares. A slope is fitted when they differ in the graph
    batch sizes and in nothing else memory-relevant that `allow` does not name; otherwise
    `slope_note` says why there is none (which keys)."""
    labels = (ref_a.label, ref_b.label)
    cmp = compare_args((a, b), labels, allow)
    la, lb = build_ledger(a), build_ledger(b)
    ma, mb = era_markers(a), era_markers(b)
    markers = tuple(Marker(n, (ma.get(n, "-"), mb.get(n, "-"))) for n in MARKER_NAMES)
    notes: list[str] = []
    found: list[Slope] = []
    if not slope:
        note = "not computed (--no-slope)"
    elif cmp.missing:
        note = f"not computed: {' and '.join(cmp.missing)} printed no server_args, so the other settings cannot be checked"
    elif not cmp.varied:
        note = "none: the launches do not differ in cuda_graph_max_bs / cuda_graph_bs"
    elif cmp.confounders:
        hint = (
            " (SGLang derives its default mem_fraction_static from cuda_graph_max_bs: pass it to both)"
            if any(c.key == "mem_fraction_static" for c in cmp.changed)
            and "mem_fraction_static" in cmp.confounders
            else ""
        )
        note = (
            f"none: besides the CUDA-graph batch sizes the launches differ in "
            f"{'; '.join(confounder_parts(cmp, 4))}, so a slope would mix their effects{hint}. "
            "--allow-diff KEY fits one anyway."
        )
    else:
        found, why = slopes((a, b))
        notes.extend(why)
        note = (
            ""
            if found
            else "none: no graph family has readings that differ in rows in both launches"
        )
    moved = {
        x: y
        for x, y in rank_map([r.label for r in a.ranks], [r.label for r in b.ranks]).items()
        if x != y
    }
    if moved:
        shown = ", ".join(f"{x or '(GPU)'} ~ {y or '(GPU)'}" for x, y in moved.items())
        notes.append(f"Ranks with different labels are matched in order: {shown} (A ~ B).")
    for k in allow:
        if k not in {c.key for c in cmp.changed} and k not in {c.key for c in cmp.ignored}:
            notes.append(f"--allow-diff {k}: the launches do not differ in {k}")
    headlines: list[str] = []
    models = (_model_name(a), _model_name(b))
    if _models_differ(a, b):
        ta, tb = _model_type(a), _model_type(b)
        same_arch = (
            f" Both are {ta}: if it is one checkpoint under two paths, ignore this."
            if ta and ta == tb
            else ""
        )
        headlines.append(
            f"Different models: A loads {models[0] or '?'}, B loads {models[1] or '?'}. Weights, KV "
            f"cells and graphs follow the model, so most changes below are the model's, not the settings'.{same_arch}"
        )
    if any(m.differs for m in markers):
        headlines.append(
            f"Different SGLang wording: A reads as {era_guess(ma)}, B as {era_guess(mb)} (see 'SGLang "
            "wording'), so they come from different versions: part of any change may be the version."
        )
    wa = [p for p in _phase_changes(la, lb) if p.key == "target_weights" and p.change_bytes]
    if found and any(abs(p.change_bytes or 0) > round(POINT_ERROR_GIB * GIB) for p in wa):
        notes.append(
            "The weights phase differs between the launches: check that they load the same model."
        )
    assumptions = (
        "SGLang's 'GB' is GiB (bytes / 2^30); every reading is printed to +-0.005 GiB.",
        "Phases are matched by key per rank label; a phase only one launch has shows '-' on the other.",
        "A phase value is the drop in free memory over the phase (negative: free memory rose).",
    )
    return Diff(
        ref_a,
        ref_b,
        cmp,
        markers,
        (era_guess(ma), era_guess(mb)),
        tuple(_phase_changes(la, lb)),
        kv_change(a, la, b, lb),
        tuple(_graph_changes(a, b)),
        tuple(found),
        note,
        tuple(notes),
        assumptions + (_slope_assumptions() if found else ()),
        tuple(headlines),
        models,
    )


def _model_type(launch: Launch) -> str | None:
    """The architecture the main rank's Load weight end line names (e.g. Qwen2ForCausalLM)."""
    main = launch.main_rank
    we = main.target.weights_end if main is not None and main.target is not None else None
    return we.model_type if we is not None else None


def _model_name(launch: Launch) -> str | None:
    path = launch.args.get("model_path")
    kind = _model_type(launch)
    if isinstance(path, str) and path:
        return f"{path} ({kind})" if kind else path
    return kind


def _models_differ(a: Launch, b: Launch) -> bool:
    """model_path differs, or the Load weight end architecture does (when both print it)."""
    pa, pb = a.args.get("model_path"), b.args.get("model_path")
    if isinstance(pa, str) and isinstance(pb, str) and pa.rstrip("/") != pb.rstrip("/"):
        return True
    ta, tb = _model_type(a), _model_type(b)
    return ta is not None and tb is not None and ta != tb


def _slope_assumptions() -> tuple[str, ...]:
    return (
        "rows = largest captured batch size x tokens per request (each slope says its source).",
        "The largest bucket is the first bar reading minus the second (SGLang captures the largest "
        "size first); static buffers are the capture begin reading minus the first bar reading.",
        "Each bucket cost or static size is a difference of two readings: +-0.01 GiB. Slope error = "
        "(0.01 + 0.01) GiB / |rows_B - rows_A|; intercept error = 0.01 GiB x (rows_A + rows_B) / "
        "|rows_B - rows_A| (worst case, in general the least-squares bounds in docs/compare.md).",
        "'capture total' slopes (no bucket readings) use the capture end's mem usage, which also "
        "grows with the number of buckets.",
        "SGLang's heuristic reserves 2 MB (MiB) per unit of cuda_graph_max_bs (+ 3 MB x dp_size with "
        "DP attention); the ratio compares it with the measured growth per unit of batch size.",
    )


# --- fit --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    launches: tuple[LaunchRef, ...]
    args: ArgsComparison
    slopes: tuple[Slope, ...]
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]


def fit(launches: Sequence[Launch], refs: Sequence[LaunchRef], allow: Sequence[str] = ()) -> Fit:
    """The slope by least squares over two or more launches that differ in the graph batch sizes."""
    if len(launches) < 2:
        raise FitError("fit needs at least two launches")
    labels = [r.label for r in refs]
    cmp = compare_args(launches, labels, allow)
    if cmp.missing:
        raise FitError(
            f"launch {', '.join(cmp.missing)} printed no server_args: cannot check that only the "
            "CUDA-graph batch sizes differ"
        )
    if not cmp.varied:
        raise FitError(
            "the launches do not differ in cuda_graph_max_bs / cuda_graph_bs: nothing to fit"
        )
    if cmp.confounders:
        raise FitError(confounder_message(cmp, labels))
    found, notes = slopes(launches)
    if not found:
        raise FitError(
            "no graph family was captured with different largest sizes in every launch"
            + (f" ({'; '.join(notes)})" if notes else "")
        )
    return Fit(
        tuple(refs),
        cmp,
        tuple(found),
        tuple(notes),
        _slope_assumptions()[:2]
        + (
            "Errors are worst-case bounds from printing (each point +-0.01 GiB); with three or more "
            "launches the standard error from the residuals is shown too.",
        )
        + _slope_assumptions()[3:],
    )


# --- what-if ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphSlope:
    """What a change of max bs costs per row, and where that figure comes from."""

    mib_per_row: float  # largest bucket (or the capture total, for 'capture total' / heuristic)
    static_mib_per_row: float | None
    source: str
    per_bs: bool = False  # heuristic: MiB per unit of bs, not per row


@dataclass(frozen=True)
class Prediction:
    mem_fraction_static: float
    largest_bs: int | None
    rest_bytes: int
    kv_tokens: int
    kv_bytes: int
    pool_change_bytes: int  # KV (and other pools sized from rest) vs the measured launch
    req_table_change_bytes: int
    graph_bytes: int | None
    graph_change_bytes: int
    headroom_bytes: int | None
    headroom_rank: str | None
    max_running_requests: int | None
    headroom_exact: bool = True  # False: an upper bound (a capture did not finish)
    graph_exact: bool = True  # False: a lower bound (what the capture took before it stopped)
    crashed: str | None = None  # this setting ran out of memory: "crashed at bs 256"
    label: str | None = None  # the feasible cell when yes / NO cannot say it

    def verdict(self, reserve_bytes: int) -> bool | None:
        """Feasible: True, False, or None when the bounds cannot tell."""
        if self.crashed is not None or self.kv_tokens <= 0:
            return False
        if self.headroom_bytes is None:
            return None
        if self.headroom_bytes < reserve_bytes:
            return False  # an upper bound below the reserve rules it out too
        return True if self.headroom_exact else None

    def feasible(self, reserve_bytes: int) -> bool:
        return self.verdict(reserve_bytes) is True


@dataclass(frozen=True)
class Unfinished:
    """A launch whose start-up did not finish (crashed, or the log stops), as whatif needs it."""

    status: str  # "crashed" | "incomplete"
    headline: str  # the verdict's first line (logmem.analysis.failures)
    phase: str | None
    graph: str | None  # the capture that did not finish
    size: int | None  # its last bucket (bs or num_tokens)
    unit: str  # "bs" | "num_tokens"
    memory: bool | None  # ran out of memory: True; another error: False; cannot tell: None
    cause: str  # short: "out of memory", "TypeError", "the log stops"
    shortfall_bytes: int | None  # what the failed allocation lacked, when printed
    in_capture: bool  # a capture did not finish: graph memory and headroom are bounds
    rank: str | None = None  # the rank whose error the verdict quotes

    @property
    def at(self) -> str:
        """Where it stopped, short: 'at bs 256', 'in the piecewise capture', 'after the pools'."""
        if self.in_capture:
            if self.size is not None:
                return f"at {self.unit} {self.size}"
            return f"in the {self.graph} capture" if self.graph else "in a graph capture"
        phase = self.phase or "start-up"
        if phase == "serving":
            return "in warm-up"
        return phase if phase.startswith(("after ", "before ")) else f"in {phase}"

    @property
    def label(self) -> str:
        """The measured column's feasible cell."""
        if self.memory:
            return f"NO (crashed {self.at})"
        return "unknown (log stops)" if self.status == "incomplete" else f"unknown ({self.cause})"


@dataclass(frozen=True)
class WhatIf:
    launch: LaunchRef
    mem_fraction_static: float
    pre_load_bytes: int
    pre_load_rank: str
    after_weights_bytes: int
    bytes_per_token: int
    bytes_per_token_source: str
    kv_share: float
    logged_tokens: int | None
    context_len: int | None
    reserve_bytes: int
    measured: Prediction
    predicted: Prediction
    slope: GraphSlope | None
    lo_positive: float | None  # smallest mem_fraction_static with a positive KV pool
    hi: float | None  # largest that leaves the activation reserve after capture
    lo_context: float | None  # smallest that fits one full context
    context_note: str
    assumptions: tuple[str, ...]
    notes: tuple[str, ...]
    requested_mfs: float | None = None  # as passed; None: the launch's own
    requested_max_bs: int | None = None
    unfinished: Unfinished | None = None  # start-up did not finish
    hi_exact: bool = True  # False: `hi` is only an upper bound on the window's top

    @property
    def feasible(self) -> bool:
        return self.predicted.feasible(self.reserve_bytes)

    @property
    def verdict(self) -> bool | None:
        return self.predicted.verdict(self.reserve_bytes)

    @property
    def window(self) -> tuple[float, float] | None:
        """[lo, hi], or None when it is empty."""
        lo, hi = self.lo_positive, self.hi
        return (lo, hi) if lo is not None and hi is not None and lo <= hi else None


class _Model:
    """SGLang's sizing rule with this launch's readings; everything else held as measured."""

    def __init__(self, launch: Launch, led: LaunchLedger, context_len: int | None) -> None:
        sz = led.sizing
        if sz is None:
            raise FitError(
                "whatif needs mem_fraction_static in server_args and the Load weight begin/end "
                "readings; this launch lacks "
                + _missing_sizing(launch)
                + (
                    " (if you know the value it ran with, pass --logged-mem-fraction-static X)"
                    if not isinstance(launch.args.get("mem_fraction_static"), (int, float))
                    else ""
                )
            )
        bpt = bytes_per_token(sz)
        if not bpt:
            raise FitError(
                "whatif needs a 'KV Cache is allocated' line with #tokens to know the bytes per token"
            )
        self.sz = sz
        self.bpt = bpt
        self.share = 1.0
        if sz.logged_pool_bytes and sz.kv_bytes and sz.logged_pool_bytes > sz.kv_bytes:
            self.share = sz.kv_bytes / sz.logged_pool_bytes
        a = launch.args
        page = a.get("page_size")
        self.page = page if isinstance(page, int) and page > 0 else 1
        mtt = a.get("max_total_tokens")
        self.max_total_tokens = mtt if isinstance(mtt, int) and mtt > 0 else None
        mrr = a.get("max_running_requests")
        self.fixed_requests = mrr if isinstance(mrr, int) and mrr > 0 else None
        s = launch.summary
        self.logged_ctx = (s.get_int("context_len") if s else None) or (
            a.get("context_length") if isinstance(a.get("context_length"), int) else None
        )
        self.ctx = context_len or self.logged_ctx
        self.m0 = sz.mem_fraction_static
        # Free memory after the last capture per rank: what the new KV pool or graphs eat into.
        self.after: dict[str, tuple[int, int]] = {}  # rank -> (free after capture, graph bytes)
        for r in led.ranks:
            caps = [p for p in r.phases if p.key.startswith("capture:")]
            if caps:
                self.after[r.rank] = (caps[-1].after_bytes, sum(p.delta_bytes for p in caps))
            elif r.phases:
                self.after[r.rank] = (r.phases[-1].after_bytes, 0)
        self.has_capture = any(p.key.startswith("capture:") for r in led.ranks for p in r.phases)

    def rest(self, m: float) -> int:
        return self.sz.after_weights_bytes - round(self.sz.pre_load_bytes * (1 - m))

    def tokens(self, m: float) -> int:
        kv = int(self.rest(m) * self.share)
        if kv <= 0:
            return 0
        t = kv // self.bpt
        if self.max_total_tokens is not None:
            t = min(t, self.max_total_tokens)
        return t // self.page * self.page

    def requests(self, tokens: int, ctx: int | None) -> int | None:
        """SGLang's default request-pool size (reference 12.2) unless --max-running-requests."""
        if self.fixed_requests is not None:
            return self.fixed_requests
        if not ctx:
            return None
        return min(max(int(tokens / ctx * 512), 2048), 4096)

    def req_table(self, tokens: int, ctx: int | None) -> int:
        n = self.requests(tokens, ctx)
        return (n + 1) * ctx * 4 if n is not None and ctx else 0


def _missing_sizing(launch: Launch) -> str:
    miss = []
    if not isinstance(launch.args.get("mem_fraction_static"), (int, float)):
        miss.append("mem_fraction_static (no server_args line?)")
    if not any(r.target and r.target.weights_begin for r in launch.ranks):
        miss.append("'Load weight begin. avail mem=...'")
    if not any(r.target and r.target.weights_end for r in launch.ranks):
        miss.append("'Load weight end. ... avail mem=...'")
    return ", ".join(miss) or "them"


def _main_point(launch: Launch) -> GraphPoint | None:
    pts = [p for p in graph_points(launch) if p.per_bs]
    if not pts:
        return None
    bar = next((r.label for r in launch.ranks if r.prints_bars), None)
    return next((p for p in pts if p.rank == bar), pts[0])


def slope_from_fit(found: Sequence[Slope], family: str | None) -> GraphSlope | None:
    """Pick the measured slope for the graph family whose max bs changes."""
    usable = [s for s in found if s.rows_per_bs is not None]
    s = next((x for x in usable if x.graph == family), usable[0] if usable else None)
    if s is None:
        return None
    static = s.static.mib_per_row if s.static else None
    src = (
        f"measured: {s.graph} on {s.rank or 'the GPU'}, {s.basis}, rows {s.rows[0]} -> {s.rows[-1]}"
    )
    return GraphSlope(s.line.mib_per_row, static, src)


def whatif(
    launch: Launch,
    ref: LaunchRef,
    mem_fraction_static: float | None = None,
    cuda_graph_max_bs: int | None = None,
    slope: GraphSlope | None = None,
    activation_reserve_bytes: int = 0,
    context_len: int | None = None,
    logged_mfs: float | None = None,
) -> WhatIf:
    """Predict KV tokens, graph memory and headroom at other settings (see the module docstring).

    `logged_mfs` stands in for the launch's mem_fraction_static when its log has no
    server_args line (trimmed pastes); it is said among the assumptions.
    """
    for flag, v in (
        ("--mem-fraction-static", mem_fraction_static),
        ("--logged-mem-fraction-static", logged_mfs),
    ):
        if v is not None and not 0 < v <= 1:
            raise FitError(f"{flag} {v:g} is outside (0, 1]")
    given_mfs = None
    if logged_mfs is not None:
        known = launch.args.get("mem_fraction_static")
        if isinstance(known, (int, float)) and float(known) != logged_mfs:
            raise FitError(
                f"--logged-mem-fraction-static {logged_mfs:g}: the log's server_args say {known:g}"
            )
        args = dict(launch.args) | {"mem_fraction_static": logged_mfs}
        src = launch.server_args.source if launch.server_args else launch.all_events()[0].source
        launch = replace(
            launch, server_args=ev.ServerArgs(rank=None, source=src, args=args, form="given")
        )
        given_mfs = logged_mfs
    led = build_ledger(launch)
    md = _Model(launch, led, context_len)
    sz = md.sz
    notes: list[str] = []
    assumptions: list[str] = [
        f"SGLang's KV rule: rest = after-weights free {_gs(sz.after_weights_bytes)} GiB - P {_gs(sz.pre_load_bytes)} "
        f"GiB x (1 - mem_fraction_static); tokens = rest // {md.bpt:,} B per token. P and after-weights "
        f"are minimums over ranks (P on {sz.pre_load_rank or 'the GPU'}).",
        "Changing mem_fraction_static moves the KV pool only: weights, the pre-capture workspace and "
        "the graphs stay as measured.",
        "Headroom = free memory after the last capture (as measured, on the tightest rank) minus the "
        "extra KV pool, request table and graph memory. The KV change is the rule at both values, so "
        "printing errors cancel.",
    ]
    if given_mfs is not None and not isinstance(launch.args.get("mem_fraction_static"), bool):
        assumptions.append(
            f"The launch ran with mem_fraction_static {given_mfs:g} (--logged-mem-fraction-static; "
            "its log prints no server_args): every prediction rests on it."
        )
    if md.share < 1:
        assumptions.append(
            f"Several pools share the budget (hybrid/SWA): the first KV pool keeps its measured share "
            f"{md.share:.1%} of rest; the other pools scale with it."
        )
    if md.page > 1:
        assumptions.append(f"Tokens are rounded down to page_size {md.page}.")
    if md.max_total_tokens is not None:
        assumptions.append(f"--max-total-tokens {md.max_total_tokens:,} caps the pool.")
    if any(r.draft for r in launch.ranks):
        assumptions.append("The draft model's pools and graphs are held as measured.")
    if not md.has_capture:
        notes.append(
            "This launch captured no CUDA graph: headroom is free memory at its last reading."
        )

    rule0 = md.tokens(md.m0)
    logged = sz.kv_tokens
    if logged and abs(rule0 - logged) > max(0.01 * logged, 2 * PRINT_RESOLUTION_GIB * GIB / md.bpt):
        notes.append(
            f"SGLang's rule gives {rule0:,} tokens at the logged setting but the pool holds {logged:,}: "
            "this version sizes KV differently (post-capture sizing, spec decoding, a fork); predictions "
            "apply the rule's changes to the measured pool."
        )
    # The pool does not depend on max bs: a prediction is the logged pool plus the change of the
    # rule's budget, in tokens of one cell size, so an unchanged mfs gives exactly the logged pool.
    # When --max-total-tokens held the logged pool, the rule's own count is the base instead.
    capped = (
        md.max_total_tokens is not None and logged is not None and logged >= md.max_total_tokens
    )
    base = logged if logged and not capped else None
    kv0 = int(md.rest(md.m0) * md.share)

    def tokens(m: float) -> int:
        kv = int(md.rest(m) * md.share)
        if kv <= 0:
            return 0
        if base is None:
            return md.tokens(m)
        t = base + (kv - kv0) // md.bpt // md.page * md.page
        if md.max_total_tokens is not None:
            t = min(t, md.max_total_tokens)
        return max(t, 0)

    assumptions.append(
        "Predicted KV tokens = the logged pool + (rest at the new setting - rest as logged) // "
        f"{md.bpt:,} B per token"
        + (f", in whole pages of {md.page}" if md.page > 1 else "")
        + ": the pool does not depend on max bs, and an unchanged mem_fraction_static gives the logged pool."
        if base is not None
        else "Predicted KV tokens are SGLang's rule (no logged pool to start from, or --max-total-tokens held it)."
    )

    unfinished = _unfinished(launch)
    if unfinished is not None:
        notes.append(
            f"{unfinished.headline} "
            + (
                "Graph memory is at least what the capture took before it stopped, and the headroom "
                "after capture at most the free memory then"
                + (
                    f" minus the {_gs(unfinished.shortfall_bytes)} GiB the failed allocation lacked"
                    if unfinished.memory and unfinished.shortfall_bytes
                    else ""
                )
                + ": '>=' and '<=' mark these bounds."
                if unfinished.in_capture
                else "The memory figures are complete; the crash is judged by `logmem analyze`."
            )
        )

    if md.ctx and md.logged_ctx and md.ctx != md.logged_ctx:
        assumptions.append(
            f"context length {md.logged_ctx:,} -> {md.ctx:,} changes only the request-to-token table "
            "((requests + 1) x context x 4 B) and the one-full-context check."
        )

    # Graph change for a new max bs.
    main = _main_point(launch)
    cur_bs = (
        main.largest_size if main and main.largest_size is not None else graph_max_bs(launch.args)
    )
    rows_per_bs = main.rows_per_bs if main and main.rows_per_bs else 1
    new_bs = cur_bs
    use = slope
    if cuda_graph_max_bs is not None:
        if cuda_graph_max_bs < 1:
            raise FitError("--cuda-graph-max-bs must be at least 1")
        if not md.has_capture or cur_bs is None:
            raise FitError(
                "this launch captured no decode CUDA graph, so there is no bucket to grow or shrink"
            )
        new_bs = cuda_graph_max_bs
        s = launch.summary
        pool = s.get_int("max_running_requests") if s else None
        if pool is not None and new_bs > pool:
            notes.append(
                f"SGLang caps captured batch sizes at the request pool ({pool}): largest bs {pool}."
            )
            new_bs = pool
        if use is None:
            h, terms = heuristic_mib_per_bs(launch.args, new_bs)
            use = GraphSlope(h, None, f"SGLang's heuristic, not measured: {terms}", per_bs=True)
            notes.append(
                "No measured slope: graph memory for the new max bs uses SGLang's own 2 MB-per-bs "
                "heuristic. Measure it with --slope-from A B (two launches that differ only in "
                "--cuda-graph-max-bs) or give --mib-per-row."
            )
        assumptions.append(
            f"The largest captured batch becomes {new_bs} (SGLang's list extended to max bs); "
            + (
                "graph memory changes by the heuristic x the change in bs"
                if use.per_bs
                else f"rows = bs x {rows_per_bs}; the largest bucket changes by slope x the change in rows"
                + (
                    ", static buffers by their slope"
                    if use.static_mib_per_row is not None
                    else "; static buffers stay as measured (no static slope given)"
                )
            )
            + "; the other buckets stay as measured."
        )
        if main is not None and any(
            p.per_bs and p.graph != main.graph for p in graph_points(launch) if p.rank == main.rank
        ):
            assumptions.append(
                f"Only the {main.graph} graph is rescaled; other batch-sized graphs stay as measured."
            )
        if mem_fraction_static is None:
            assumptions.append(
                f"mem_fraction_static is held at {md.m0:g}; if SGLang chose it, its default moves by 2 MB "
                "per unit of max bs divided by the GPU capacity."
            )

    def graph_delta(bs: int | None) -> int:
        if bs is None or cur_bs is None or use is None or bs == cur_bs:
            return 0
        if use.per_bs:
            return round(use.mib_per_row * (bs - cur_bs) * MIB)
        d_rows = (bs - cur_bs) * rows_per_bs
        per_row = use.mib_per_row + (use.static_mib_per_row or 0.0)
        return round(per_row * d_rows * MIB)

    req0 = md.req_table(tokens(md.m0), md.logged_ctx)
    n0 = md.requests(tokens(md.m0), md.logged_ctx)
    s_line = launch.summary
    logged_n = s_line.get_int("max_running_requests") if s_line else None

    def n_requests(t: int, ctx: int | None) -> int | None:
        n = md.requests(t, ctx)
        if n is None or n0 is None or logged_n is None:
            return n if logged_n is None else logged_n
        return logged_n + (n - n0)  # SGLang prints its own count (pool size, +1 in some eras)

    # Free memory after the last capture per rank, and the graph memory it measured; for a capture
    # that did not finish, upper bounds of the free memory (and so lower bounds of the graphs).
    after = dict(md.after)
    bounded = unfinished is not None and unfinished.in_capture
    if unfinished is not None and bounded and unfinished.memory and after:
        # The failed allocation lacked the shortfall: the rank that crashed would end at -shortfall
        # at best (or below zero, when the error prints no figures).
        cap = -(unfinished.shortfall_bytes or 0)
        crash_rank = (
            unfinished.rank if unfinished.rank in after else min(after, key=lambda r: after[r][0])
        )
        free_c, graph_c = after[crash_rank]
        if free_c > cap:
            after[crash_rank] = (cap, graph_c + free_c - cap)
    t0 = tokens(md.m0)

    def predict(m: float, bs: int | None, ctx: int | None) -> Prediction:
        t = tokens(m)
        pool_change = round((t - t0) * md.bpt / md.share)
        req_change = md.req_table(t, ctx) - req0 if req0 else 0
        g_change = graph_delta(bs)
        worst: tuple[int, str] | None = None
        for rank, (free, _g) in after.items():
            h = free - pool_change - req_change - g_change
            if worst is None or h < worst[0]:
                worst = (h, rank)
        graph_bytes = None
        if worst is not None and md.has_capture:
            graph_bytes = after[worst[1]][1] + g_change
        crashed = label = None
        if unfinished is not None:
            same = m == md.m0 and bs == cur_bs and ctx == md.logged_ctx
            # More KV and no smaller graphs than the setting that ran out of memory: it does again.
            worse = (
                m >= md.m0
                and (bs is None or cur_bs is None or bs >= cur_bs)
                and (ctx or 0) >= (md.logged_ctx or 0)
            )
            if unfinished.memory and worse:
                crashed = f"crashed {unfinished.at}"
            label = unfinished.label if same else (f"NO ({crashed})" if crashed else None)
        return Prediction(
            m,
            bs,
            md.rest(m),
            t,
            t * md.bpt,
            pool_change,
            req_change,
            graph_bytes,
            g_change,
            worst[0] if worst else None,
            worst[1] if worst else None,
            n_requests(t, ctx),
            headroom_exact=not bounded,
            graph_exact=not bounded,
            crashed=crashed,
            label=label,
        )

    mfs = mem_fraction_static if mem_fraction_static is not None else md.m0
    measured = predict(md.m0, cur_bs, md.logged_ctx)
    predicted = predict(mfs, new_bs, md.ctx)

    # The window on a 0.001 grid (users pass three decimals); both edges are monotone.
    grid = [i / 1000 for i in range(1, 1001)]
    lo_pos = next((m for m in grid if tokens(m) > 0), None)
    # With a capture that did not finish the headroom is an upper bound: `hi` bounds the top.
    ok = [
        m
        for m in grid
        if (p := predict(m, new_bs, md.ctx)).headroom_bytes is not None
        and p.verdict(activation_reserve_bytes) is not False
    ]
    hi = ok[-1] if ok else None
    lo_ctx = None
    if md.ctx:
        need = md.ctx
        lo_ctx = next((m for m in grid if tokens(m) >= need), None)
        if lo_ctx is None:
            full = tokens(1.0)
            context_note = (
                f"impossible: it needs {_gs(need * md.bpt)} GiB of KV, and even mem_fraction_static 1.0 "
                f"gives {_gs(full * md.bpt)} GiB ({full:,} tokens) on this machine"
            )
        elif hi is not None and lo_ctx > hi:
            context_note = (
                f"needs mem_fraction_static >= {lo_ctx:.3f}, above the window's top {hi:.3f}: it would not "
                "leave the headroom after capture"
            )
        elif bounded:
            context_note = (
                f"the KV pool holds it from mem_fraction_static {lo_ctx:.3f}; whether the graphs then "
                "fit is unknown (the capture did not finish)"
            )
        else:
            context_note = f"fits from mem_fraction_static {lo_ctx:.3f}"
    else:
        context_note = "context length unknown (no summary line); pass --context-length"
    if activation_reserve_bytes == 0:
        assumptions.append(
            "No activation reserve: the window's top only keeps headroom >= 0 after capture. Prefill "
            "activations need more at run time; pass --activation-reserve GIB."
        )
    else:
        assumptions.append(
            f"The window's top keeps {_gs(activation_reserve_bytes)} GiB free after capture (--activation-reserve)."
        )
    if use is not None and cuda_graph_max_bs is not None:
        unit = "MiB per unit of bs" if use.per_bs else "MiB per row"
        assumptions.append(f"Graph slope {use.mib_per_row:.3f} {unit}: {use.source}.")
    return WhatIf(
        ref,
        md.m0,
        sz.pre_load_bytes,
        sz.pre_load_rank,
        sz.after_weights_bytes,
        md.bpt,
        "cell size from the KV line (the round value its printed sizes allow)"
        if sz.likely_bytes_per_token
        else "KV bytes / #tokens from the KV line",
        md.share,
        logged,
        md.ctx,
        activation_reserve_bytes,
        measured,
        predicted,
        use,
        lo_pos,
        hi,
        lo_ctx,
        context_note,
        tuple(assumptions),
        tuple(notes),
        mem_fraction_static,
        cuda_graph_max_bs,
        unfinished,
        not bounded,
    )


def _unfinished(launch: Launch) -> Unfinished | None:
    """How start-up ended when it did not finish (logmem.analysis.failures.outcome), for whatif."""
    from logmem.analysis.failures import outcome

    oc = outcome(launch)
    f = oc.failure
    if oc.status == "ready" or f is None:
        return None
    in_capture = (f.phase or "").startswith("capture ") or any(
        not g.complete for r in launch.ranks for g in r.graphs
    )
    graph = f.graph
    if graph is None and in_capture:
        graph = next((g.name for r in launch.ranks for g in r.graphs if not g.complete), None)
    unit = (
        "num_tokens"
        if graph is not None and (graph == "piecewise" or graph.endswith("prefill"))
        else "bs"
    )
    cause = {
        "oom": "out of memory",
        "not_enough_memory": "not enough memory for the KV cache",
        "imbalance": "unbalanced GPU memory",
        "capture_failed": "the capture failed",
        "stopped": "the log stops",
    }.get(f.kind, f.exc_type or "an error")
    raised = next((e.rank for e in f.errors if f.line is not None and e.source == f.line), None)
    return Unfinished(
        oc.status,
        f.headline,
        f.phase,
        graph,
        f.size if in_capture else None,
        unit,
        True if f.memory_related else f.memory_related,
        cause,
        f.shortfall_bytes if f.memory_related else None,
        in_capture,
        raised,
    )


def _gs(n: int) -> str:
    return f"{n / GIB:.2f}"
