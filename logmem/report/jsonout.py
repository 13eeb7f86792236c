"""JSON reporter: the versioned machine-readable form (contract in docs/json-schema.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from logmem import __version__
from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.analysis.comm_inputs import env_values
from logmem.analysis.comm_join import communication
from logmem.analysis.context import ContextVsPool
from logmem.analysis.failures import outcome, read_errors
from logmem.analysis.findings_order import set_aside
from logmem.model.records import Graph, Launch, Model, Rank, Traceback
from logmem.parse import events as ev
from logmem.parse.lines import Source
from logmem.report import json_text
from logmem.report.causes import ledger_note, ledger_rows, phase_name
from logmem.report.communication import comm_json
from logmem.report.device_json import device_totals_json, pre_start_json
from logmem.report.failure_json import check_json, death_json, error_json, failure_json
from logmem.report.finding_lines import finding_lines
from logmem.report.input_notes import summarised_json
from logmem.report.inputs_text import inputs_json, repeats_json, start_json
from logmem.report.inputs_text import source_json as _line
from logmem.report.launch_json import command_json, model_named_json
from logmem.report.sentences import reserve_term_text
from logmem.report.sizing_json import default_mfs_json, sizing_json
from logmem.report.uninitialized import uninitialized_json
from logmem.units import Mem, gib

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis

SCHEMA = "logmem.analysis/1"


def _g(m: Mem | None) -> float | None:
    return m.gib if m is not None else None


def _ln(e: ev.Event | None) -> int | None:
    return e.source.line_no if e is not None else None


def model_json(m: Model) -> dict[str, Any]:
    wb, we = m.weights_begin, m.weights_end
    pools: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    reserved = {id(p) for p in m.reserved_kv_pools}
    for p in m.pools:
        if isinstance(p, ev.KVPool) and id(p) in reserved:
            # Post-capture KV sizing: address space reserved before the graphs, not memory.
            other.append(
                {
                    "kind": "kv_reserved",
                    "tokens": p.tokens,
                    "k_gib": _g(p.k),
                    "v_gib": _g(p.v),
                    "kv_gib": _g(p.kv),
                    "bytes": p.total_bytes,
                    "line": _ln(p),
                }
            )
            if isinstance(p, ev.UnifiedReserved):
                other[-1]["unified_sub_pools"] = p.sub_pools  # one buffer of the sub-pools
        elif isinstance(p, ev.KVPool):
            dtype, dtype_by = m.pool_dtype(p)
            pools.append(
                {
                    "tokens": p.tokens,
                    "k_gib": _g(p.k),
                    "v_gib": _g(p.v),
                    "kv_gib": _g(p.kv),
                    "dtype": dtype,
                    "dtype_line": _line(dtype_by.source) if dtype_by is not None else None,
                    "bytes": p.total_bytes,
                    "line": _ln(p),
                }
            )
            if isinstance(p, ev.PostCaptureKV):
                # Only on such pools, so that every other pool stays as it was.
                pools[-1]["allocated"] = "after_capture"
                pools[-1]["draft_line"] = p.draft
                pools[-1]["avail_gib"] = _g(p.avail)
            if isinstance(p, ev.UnifiedAllocated):
                pools[-1]["unified_sub_pools"] = p.sub_pools  # one buffer of the sub-pools
        elif isinstance(p, ev.MambaPool):
            other.append(
                {
                    "kind": "mamba",
                    "max_mamba_cache_size": p.max_size,
                    "conv_state_gib": p.conv.gib,
                    "ssm_state_gib": p.ssm.gib,
                    "intermediate_ssm_gib": _g(p.intermediate_ssm),
                    "intermediate_conv_gib": _g(p.intermediate_conv),
                    "bytes": p.total_bytes,
                    "line": _ln(p),
                }
            )
        elif isinstance(p, ev.SWASummary):
            other.append(
                {
                    "kind": "swa_summary",
                    "usage_gib": p.usage.gib,
                    "swa_size": p.swa_size,
                    "full_size": p.full_size,
                    "line": _ln(p),
                }
            )
        elif isinstance(p, ev.UnifiedSubPool):
            other.append(
                {
                    "kind": "unified_sub_pool",
                    "name": p.name,
                    "layers": p.layers,
                    "entry_bytes": p.entry_bytes,
                    "max_slots": p.max_slots,
                    "line": _ln(p),
                }
            )
        elif isinstance(p, ev.SWAPlan):
            other.append(
                {
                    "kind": "post_capture_split"
                    if isinstance(p, ev.PostCaptureSplit)
                    else "swa_plan",
                    "full_layer_tokens": p.full_tokens,
                    "swa_layer_tokens": p.swa_tokens,
                    "line": _ln(p),
                }
            )
        elif isinstance(p, ev.KVAvailable):
            other.append({"kind": "kv_available", "avail_gib": p.avail.gib, "line": _ln(p)})
        elif isinstance(p, ev.DSv4Plan):
            other.append(
                {
                    "kind": "dsv4_plan",
                    "bytes_per_full_token": p.bytes_per_token,
                    "available_gib": p.avail.gib,
                    "full_tokens": p.tokens,
                    "line": _ln(p),
                }
            )
    weights: dict[str, Any] = {
        "begin_avail_gib": _g(wb.avail) if wb else None,
        "end_avail_gib": _g(we.avail) if we else None,
        "usage_gib": _g(we.usage) if we else None,
        "elapsed_s": we.elapsed_s if we else None,
        "details": dict(we.details) if we else {},
        "lines": [_ln(wb), _ln(we)],
    }
    out: dict[str, Any] = {
        "role": m.role,
        "type": we.model_type if we else None,
        "weights": weights,
        "uninitialized_weights": uninitialized_json(m.uninitialized),
        "kv_pools": pools,
        "other_pools": other,
        "memory_pool_end_avail_gib": _g(m.pool_end.avail) if m.pool_end else None,
        "memory_pool_end_line": _ln(m.pool_end),
    }
    c = m.committed
    if c is not None:
        # --startup-weight-load-mode overlap; only where it was printed.
        weights["committed_after_capture"] = {
            "commit_s": c.commit_s,
            "capture_overlap_window_s": c.window_s,
            "startup_overlap_total_s": c.total_s,
            "line": _ln(c),
        }
    return out


def graph_json(g: Graph) -> dict[str, Any]:
    b, e = g.begin, g.end
    return {
        "name": g.name,
        "backend": g.backend,
        "graph_backend": b.graph_backend if b else None,
        "tokens_per_req": b.tokens_per_req if b else None,
        "step": g.step,
        "begin_avail_gib": _g(b.avail) if b else None,
        "end_avail_gib": _g(e.avail) if e else None,
        "usage_gib": _g(e.usage) if e else None,
        "elapsed_s": e.elapsed_s if e else None,
        "sizes": list(g.sizes) if g.sizes is not None else None,
        "sizes_source": g.sizes_source,
        "samples": [
            {"size": s.size, "avail_gib": s.avail.gib, "line": s.source.line_no} for s in g.samples
        ],
        "bars_seen": g.bars,
        # The contract's differences of printed readings (begin - first bar, first - second);
        # the *_measured flags say whether they are the static buffers and the largest
        # bucket, or (a paste that kept later bars only) include earlier buckets.
        "static_gib": gib(g.static_bytes),
        "static_measured": g.static_measured if g.samples else None,
        "first_sample_bucket": g.sample_bucket(0) if g.samples else None,
        "largest_bucket_gib": gib(g.largest_bucket_bytes),
        "largest_measured": g.largest_measured if len(g.samples) >= 2 else None,
        "other_buckets_gib": gib(g.other_buckets_bytes),
        "complete": g.complete,
        "memory_printed": g.memory_printed,
        "opened_by": g.opened_by,
        "bucket_count": g.bucket_count,
        "largest_size": g.largest_size,
        "largest_size_source": g.largest_size_source,
        "lines": [_ln(b), _ln(e)],
    }


def phases_json(led: RankLedger) -> list[dict[str, Any]]:
    out = []
    for p in led.phases:
        item: dict[str, Any] = {
            "key": p.key,
            "name": phase_name(p),
            "before_gib": gib(p.before_bytes),
            "after_gib": gib(p.after_bytes),
            "delta_gib": gib(p.delta_bytes),
            "delta_bytes": p.delta_bytes,
            "lines": list(p.lines),
        }
        per = p.facts.verify_per_req
        item["verify_tokens_per_req"] = per
        if p.buckets:
            item["buckets"] = [
                {
                    "size": b.size,
                    "size_from": b.size_from,
                    "avail_gib": gib(b.avail_bytes),
                    "cost_gib": gib(b.bucket_cost_bytes),
                    "to_end_line_gib": gib(b.cost_bytes) if b.to_end else None,
                    # A target-verify graph's bucket runs bs x draft tokens (else null).
                    "tokens": b.size * per if per is not None and b.size is not None else None,
                    "line": b.line,
                }
                for b in p.buckets
            ]
        out.append(item)
    return out


def rank_json(r: Rank, led: RankLedger | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rank": r.label,
        "tags": {t: n for t, n in r.tags},
        "prints_bars": r.prints_bars,
        "init": {
            "usage_gib": _g(r.init_end.usage) if r.init_end else None,
            "elapsed_s": r.init_end.elapsed_s if r.init_end else None,
            "lines": [_ln(r.init_begin), _ln(r.init_end)],
        },
        "models": [model_json(m) for m in r.models],
        "graphs": [graph_json(g) for g in r.graphs],
        "summary_line": _ln(r.summary),
    }
    if led is not None:
        out["phases"] = phases_json(led)
        out["ledger"] = ledger_rows(led)
        out["ledger_note"] = ledger_note(led) or None
        out["ledger_out_of_order"] = led.out_of_order
        out["ledger_shared_label"] = led.shared_label
    return out


def _opening(t: Traceback) -> Source | None:
    if t.opening is not None:
        return t.opening.source
    return t.errors[0].source if t.errors else None


def context_json(c: ContextVsPool | None) -> dict[str, Any] | None:
    """The context length against the KV pool (logmem.analysis.context); None: no token count."""
    if c is None:
        return None
    full = c.full_contexts
    return {
        "kv_tokens": c.kv_tokens,
        "kv_tokens_source": c.kv_tokens_source,
        "context_len": c.context_len,
        "context_len_source": c.context_source,
        "max_running_requests": c.max_running_requests,
        "max_running_requests_source": c.requests_source,
        "full_contexts": round(full, 3) if full is not None else None,
        "one_context_fits": c.one_context_fits,
        "max_request_len": c.max_req_len,
        "prompt_rejected_from": c.prompt_rejected_from,
        "slots_tokens": c.slots_tokens,
        "slots_exceed_pool": c.slots_exceed_pool,
        "unused_by_slots_tokens": c.unused_by_slots_tokens,
        "fits_from_mem_fraction_static": c.fits_from_mfs,
        "tokens_at_mem_fraction_static_1": c.tokens_at_full_mfs,
        "outside_budget_at_fit_bytes": c.outside_at_fit_bytes,
        "outside_budget_bytes": c.outside_now_bytes,
        "used_outside_budget_bytes": c.used_outside_bytes,
        "fit_leaves_too_little": c.fit_leaves_too_little,
        "tokens_ceiling": dataclasses.asdict(c.ceiling) if c.ceiling is not None else None,
        # Memory released after sizing on every rank (analysis.released), and the pool at the
        # launch's mfs had it been free before sizing: [another process held it, the load did].
        "released_after_sizing": [dataclasses.asdict(r) for r in c.released.ranks]
        if c.released is not None
        else None,
        "tokens_if_released": list(c.tokens_if_released) if c.tokens_if_released else None,
        "max_total_tokens": c.max_total_tokens,
        "radix_cache": c.radix_cache,
        "finding": c.applies,
        "line": c.line,
    }


def _round(x: float | None) -> int | None:
    return round(x) if x is not None else None


def launch_json(
    L: Launch,
    led: LaunchLedger,
    shown: Callable[[str], bool] | None = None,
    peers: Sequence[Launch] = (),
) -> dict[str, Any]:
    """One launch's JSON; ``led`` is its ledger as Analysis.ledger builds it."""
    oc = outcome(L)
    s = L.summary
    from logmem.report.model import verdict_lines

    return {
        "index": L.index,
        "paths": list(L.paths),
        "model": model_named_json(L),
        "start": start_json(L.start),
        "next_start": _line(L.next_start),
        "repeats": repeats_json(L.repeats),
        "outcome": oc.status,
        "verdict": verdict_lines(L, led, peers),
        "failure": failure_json(oc.failure),
        "runtime_errors": len(oc.runtime_errors),
        "first_runtime_error": error_json(read_errors(oc.runtime_errors[:1])),
        "runtime_deaths": [death_json(d) for d in oc.runtime_deaths],
        "came_up": {"by": oc.up.by.value, "line": _line(oc.up.source)} if oc.up else None,
        "other_tracebacks": [
            {"kind": n.kind.value, "line": _line(_opening(n.traceback)), "after_up": n.after_up}
            | (error_json((n.error,)) or {"message": None, "exc_type": None})
            | {"check": check_json(n.check, n.results)}
            for n in oc.noise
        ],
        "max_total_num_tokens": s.max_total_num_tokens if s else None,
        "summary": (
            {k: v for k, v in s.fields} | {"available_gpu_mem_gib": _g(s.available), "line": _ln(s)}
        )
        if s
        else None,
        "server_args": L.args if L.server_args else None,
        "server_args_line": _ln(L.server_args),
        "server_args_error": L.server_args.error if L.server_args else None,
        "args_from": L.args_from,
        "command": command_json(L),
        "ranks_set_aside": list(set_aside(L)),
        "binding_rank": led.binding_rank,
        "imbalance_gib": gib(led.imbalance_bytes),
        "imbalance_kv_tokens": led.imbalance_tokens,
        "imbalance_sizing_cell_bytes": _round(led.imbalance_sizing_cell),
        "sizing": sizing_json(led),
        "graph_reserve": {
            "reserve_gib": gib(led.reserve.reserve_bytes),
            "terms": [
                {"term": reserve_term_text(t), "gib": gib(t.bytes)} for t in led.reserve.terms
            ],
            "measured_gib": gib(led.reserve.measured_bytes),
        }
        if led.reserve
        else None,
        "default_mfs": default_mfs_json(led.default_mfs),
        "findings": list(finding_lines(led)),
        "context_capacity": context_json(led.context),
        "device_totals": device_totals_json(led.device_totals),
        "pre_start": pre_start_json(led.pre_start),
        "ranks": [
            rank_json(r, rl) for r, rl in zip(L.ranks, led.ranks) if shown is None or shown(r.label)
        ],
        "stray_bars": L.stray_bars,
    }


def expected_json(led: LaunchLedger, config: dict[str, Any]) -> dict[str, Any]:
    from logmem.estimate.crosscheck import crosscheck
    from logmem.report.estimate.render import to_json
    from logmem.report.estimate.words import check_label, check_note, mismatch_text

    cc = crosscheck(led, config)
    return {
        "estimate": to_json(cc.estimate),
        "checks": [
            {
                "what": check_label(c),
                "measured_bytes": c.measured_bytes,
                "expected_bytes": c.expected_bytes,
                "differs": c.differs,
                "note": check_note(c),
            }
            for c in cc.checks
        ],
        "findings": [mismatch_text(m) for m in cc.findings],
    }


def analysis_json(a: Analysis) -> dict[str, Any]:
    ledgers = [a.ledger(L) for L in a.launches]
    launches = [launch_json(L, led, a.shows, a.all_launches) for L, led in zip(a.launches, ledgers)]
    for doc, led in zip(launches, ledgers):
        com = communication(led, a.model_config, env_values(a))
        doc["communication"] = comm_json(com) if com is not None else None
    if a.model_config is not None:
        for doc, led in zip(launches, ledgers):
            doc["expected"] = expected_json(led, a.model_config)
    return {
        "schema": SCHEMA,
        "logmem": __version__,
        "inputs": [
            {
                "path": st.path,
                "bytes": st.bytes_read,
                "lines": st.lines,
                "compression": st.compression,
                "ends_with_newline": st.ends_with_newline,
                "truncated_segments": st.truncated_segments,
                "encoding": st.encoding,
                # A CRI container log (logmem.parse.cri): its P/F pieces joined into lines.
                "cri": (
                    {
                        "joined_lines": st.joined_lines,
                        "cut_lines": st.cut_lines,
                        "first_cut_line": st.first_cut_line,
                    }
                    if st.container == "cri"
                    else None
                ),
                # Reading ended early: "truncated" / "corrupt" stream or "max-bytes"; at_byte
                # (decompressed) is where, and everything before it was read.
                "stopped": (
                    {"why": st.stopped, "at_byte": st.bytes_read, "detail": st.stop_detail}
                    if st.stopped
                    else None
                ),
            }
            for st in a.stats
        ],
        "grouping": inputs_json(a),
        "launches": launches,
        # An input's launches past its first and last hundred, kept only as briefs.
        "summarised_launches": summarised_json(a.summarised),
        # The first examples of each shape (bounded); unmatched_memory counts every line.
        "unmatched_memory_lines": [
            {"path": u.source.path, "line": u.source.line_no, "text": u.source.text[:500]}
            for u in a.unmatched.examples
        ],
        "unmatched_memory": {
            "total": a.unmatched.total,
            "shapes": [
                {
                    "shape": s.shape,
                    "count": s.count,
                    "examples": [
                        {"path": u.source.path, "line": u.source.line_no} for u in s.examples
                    ],
                }
                for s in a.unmatched.shapes
            ],
            "other_lines": a.unmatched.other_lines,
        },
    }


def render(a: Analysis) -> str:
    return json_text.dumps(analysis_json(a)) + "\n"
