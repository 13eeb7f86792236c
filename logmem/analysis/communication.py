"""The communication-memory table of a deployment: groups x mechanisms, per rank.

``derive`` turns resolved server_args (plus the environment and, for sizes that need the
model, a config.json) into the cells every rank holds: the groups SGLang builds and which are
reused, the mechanisms each group has, the size where a formula exists (None where only a
reading can tell: "measure"), and when each is allocated. ``logmem estimate`` calls it with
flags alone; ``communication`` adds what a log shows (the environment it echoed, custom
all-reduce lines, ``All Reduce config``) and joins the cells with what the log measured
(``logmem.analysis.comm_join``). SGLang's rules are in ``logmem.sglang.comm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from logmem.analysis.comm_inputs import Env, Evidence, mfs_explicit
from logmem.frozen import frozen
from logmem.sglang import comm
from logmem.sglang import custom_ar as car
from logmem.sglang.comm import Group, Mechanism, When

# --- cells ----------------------------------------------------------------------------------


@frozen
class Cell:
    """One group x mechanism region on every rank of the deployment."""

    group: str  # a Group name, "TP" for a reused one, "process" for the process-wide ones
    mechanism: Mechanism
    bytes: int | None  # None: no formula ("measure")
    when: When
    source: str  # "formula" | "logged" | "rule" | "measure"
    memory: str = "device"  # "device" (HBM) | "host" (pinned host memory)
    facts: tuple[tuple[str, Any], ...] = ()  # the inputs its size or presence came from
    lines: tuple[int, ...] = ()
    each_bytes: int | None = None  # the size of one unit when the count is unknown
    each: str | None = None  # what one unit is ("transfer queue")

    def fact(self, key: str) -> Any:
        return dict(self.facts).get(key)


@frozen
class Plan:
    """The derived table: groups, cells, and what it was derived from."""

    layout: comm.Layout
    groups: tuple[Group, ...]
    cells: tuple[Cell, ...]
    env: Env
    device: str | None
    library: str
    pd_role: str | None
    transfer_backend: str | None
    mfs: float | None
    mfs_explicit: bool | None
    command_line: int | None = None  # the echoed command line that mfs_explicit read
    notes: tuple[tuple[str, Any], ...] = field(default=())  # facts with no cell
    evidence: Evidence = field(default=Evidence(), compare=False, repr=False)

    def cell(self, mechanism: Mechanism) -> Cell | None:
        return next((c for c in self.cells if c.mechanism is mechanism), None)

    @property
    def dispatch_tokens(self) -> int | None:
        """DeepEP's dispatch tokens per rank when the environment sets them (else None: the
        default), so the estimate sizes its DeepEP buffer as this table does."""
        if self.env.get(comm.ENV_DEEPEP_TOKENS) is None:
            return None
        return comm.deepep_dispatch_tokens(self.env.mapping)


def _env_fact(env: Env, key: str) -> tuple[str, Any]:
    v = env.get(key)
    return (key, (v.value, v.origin, v.line) if v is not None else None)


def _deepep_cell(
    args: Mapping[str, Any],
    env: Env,
    config: Mapping[str, Any] | None,
    lay: comm.Layout,
    group: str,
) -> Cell:
    mode = comm.deepep_mode(args)
    t = comm.deepep_dispatch_tokens(env.mapping)
    facts: list[tuple[str, Any]] = [
        ("mode", mode),
        ("T", t),
        _env_fact(env, comm.ENV_DEEPEP_TOKENS),
        ("ep", lay.ep),
    ]
    ll = None
    why = None
    if not comm.deepep_formula_applies(args.get("device")):
        why = "device"  # Ascend's DeepEP is another library: the CUDA formula does not apply
        facts.append(("device", args.get("device")))
    elif config is None:
        why = "no_config"
    else:
        from logmem.estimate.build import estimate
        from logmem.estimate.config import EstimateError, Parallel

        try:
            est = estimate(
                config,
                parallel=Parallel(
                    tp=lay.tp, dp=lay.dp, ep=lay.ep, pp=lay.pp, dp_attention=lay.dp_attention
                ),
                max_dispatch_tokens=t,
            )
        except EstimateError as exc:
            why = "config_error"
            facts.append(("error", str(exc)))
        else:
            ll = est.deepep_buffer_bytes
            why = None if ll is not None else "no_experts"
    if ll is not None:
        facts.append(("low_latency_bytes", ll))
    if why is not None:
        facts.append(("unknown", why))
    exact = mode == "low_latency" and ll is not None
    return Cell(
        group,
        Mechanism.DEEPEP,
        ll if exact else None,
        When.FIRST_USE,
        "formula" if exact else "measure",
        facts=tuple(facts),
    )


def _custom_ar_cells(
    args: Mapping[str, Any], env: Env, lay: comm.Layout, evd: Evidence
) -> tuple[list[Cell], list[tuple[str, Any]]]:
    """The TP group's custom all-reduce: which implementation (logmem.sglang.custom_ar), and its
    cells."""
    notes: list[tuple[str, Any]] = []
    if not car.custom_ar_possible(args, lay.tp):
        return [], notes
    if evd.custom_ar_off is not None:
        notes.append(("custom_ar_off", evd.custom_ar_off))
        return [], notes
    w = lay.tp
    nodes = car.tp_spans_nodes(args)
    aiter_line = evd.custom_ar_impl or evd.aiter_ar
    if evd.hip and nodes is None and aiter_line is not None and "aiter" in aiter_line.text.lower():
        return [
            Cell(
                "TP",
                Mechanism.CUSTOM_AR_AITER,
                None,
                When.INIT,
                "measure",
                facts=(("W", w), ("import", evd.custom_ar_impl is None)),
                lines=(aiter_line.source.line_no,),
            )
        ], notes
    ar = evd.all_reduce
    env_map = env.mapping
    # sglang 0.5.10-0.5.13 print "Custom allreduce v2 initialized successfully" on TP0.
    v2_line = evd.custom_ar_impl is not None and "v2" in evd.custom_ar_impl.text.lower()
    choice = car.custom_ar_choice(
        args,
        env_map,
        evd.printed,
        v2_logged=ar is not None,
        from_log=evd.from_log,
        v2_line=v2_line,
    )
    if evd.hip and choice.impl is not car.ArImpl.OFF:
        # ROCm runs sglang's CustomAllreduce (16 MiB buffers) where aiter's is not loaded.
        choice = car.ArChoice(car.ArImpl.LEGACY, "hip")
    if choice.impl is car.ArImpl.OFF:
        notes.append(("custom_ar_none", (choice.why, nodes, w, evd.printed)))
        return [], notes
    sizes = car.v2_sizes(env_map)
    v2_facts = (
        ("W", w),
        ("push", sizes.push),
        ("pull", sizes.pull),
        ("cap", sizes.cap),
        ("at_most", sizes.workspace_at_most(w)),
        _env_fact(env, car.ENV_V2_MAX),
        _env_fact(env, car.ENV_V2_PUSH),
        _env_fact(env, car.ENV_V2_PULL),
    )
    exact = car.v2_workspace_bytes(w, sizes.push or 0, sizes.pull or 0) if sizes.exact else None
    if ar is not None:
        line = (ar.source.line_no,)
        return [
            Cell(
                "TP",
                Mechanism.CUSTOM_AR_V2_WORKSPACE,
                ar.symmetric.bytes,
                When.INIT,
                "logged",
                facts=(*v2_facts, ("formula_bytes", exact)),
                lines=line,
            ),
            Cell(
                "TP",
                Mechanism.CUSTOM_AR_V2_POINTERS,
                ar.local.bytes,
                When.INIT,
                "logged",
                facts=(("W", w), ("formula_bytes", car.v2_pointer_table_bytes(w))),
                lines=line,
            ),
        ], notes
    why_facts = (("why", choice.why), ("printed", evd.printed), _env_fact(env, car.ENV_V2_SWITCH))
    legacy_bytes = car.legacy_custom_ar_bytes(evd.hip)
    if choice.impl is car.ArImpl.LEGACY:
        return [
            Cell(
                "TP",
                Mechanism.CUSTOM_AR_LEGACY,
                legacy_bytes,
                When.INIT,
                "formula",
                facts=(("W", w), ("hip", evd.hip), *why_facts),
            )
        ], notes
    if choice.impl is car.ArImpl.EITHER:
        return [
            Cell(
                "TP",
                Mechanism.CUSTOM_AR_EITHER,
                None,
                When.INIT,
                "measure",
                facts=(("legacy_bytes", legacy_bytes), *v2_facts, *why_facts),
            )
        ], notes
    return [
        Cell(
            "TP",
            Mechanism.CUSTOM_AR_V2_WORKSPACE,
            exact,
            When.INIT,
            "formula" if exact is not None else "measure",
            facts=(*v2_facts, *why_facts),
        ),
        Cell(
            "TP",
            Mechanism.CUSTOM_AR_V2_POINTERS,
            car.v2_pointer_table_bytes(w),
            When.INIT,
            "formula",
            facts=(("W", w),),
        ),
    ], notes


def _pd_cells(args: Mapping[str, Any], env: Env, role: str, evd: Evidence) -> list[Cell]:
    backend = comm.pd_transfer_backend(args)
    pool = env.get(comm.ENV_MOONCAKE_POOL)
    cuda_pool = pool is not None and pool.value == "INTRA_NODE_NVLINK"
    # MetadataBuffers (disaggregation/utils.py) are on the CPU, on the NPU on Ascend, and on
    # the GPU only with the INTRA_NODE_NVLINK mempool.
    aux_on_device = cuda_pool or args.get("device") == "npu"
    cells = [
        Cell(
            "PD",
            Mechanism.PD_KV_REGISTRATION,
            0,
            When.INIT,
            "rule",
            facts=(("role", role), ("backend", backend), _env_fact(env, comm.ENV_MOONCAKE_POOL)),
        ),
        Cell(
            "PD",
            Mechanism.PD_AUX,
            None,
            When.AFTER_KV,
            "measure",
            memory="device" if aux_on_device else "host",
            facts=(("role", role), ("device", args.get("device")), ("cuda_pool", cuda_pool)),
        ),
    ]
    if comm.staging_enabled(env.mapping):
        if role == "decode":
            cells.append(
                Cell(
                    "PD",
                    Mechanism.PD_STAGING,
                    comm.staging_decode_bytes(env.mapping),
                    When.AFTER_KV,
                    "formula",
                    facts=(("role", role), _env_fact(env, comm.ENV_STAGING_POOL)),
                )
            )
        else:
            chunk, page = args.get("chunked_prefill_size"), args.get("page_size") or 1
            bpt = evd.kv_bytes_per_token
            each = (
                comm.staging_prefill_bytes_per_queue(chunk, page, bpt)
                if isinstance(chunk, int) and chunk > 0 and isinstance(page, int) and bpt
                else None
            )
            cells.append(
                Cell(
                    "PD",
                    Mechanism.PD_STAGING,
                    None,
                    When.AFTER_KV,
                    "formula" if each else "measure",
                    facts=(
                        ("role", role),
                        ("chunk", chunk),
                        ("page", page),
                        ("kv_bytes_per_token", bpt),
                    ),
                    each_bytes=each,
                    each="transfer queue",
                )
            )
    return cells


def derive(
    args: Mapping[str, Any],
    env: Env = Env(),  # noqa: B008 - frozen
    config: Mapping[str, Any] | None = None,
    evidence: Evidence = Evidence(),  # noqa: B008 - frozen
) -> Plan:
    """The cells of one deployment, the same on every rank (SGLang's groups are symmetric)."""
    lay = comm.layout_from_args(args)
    grp = comm.groups(lay)
    device = args.get("device") if isinstance(args.get("device"), str) else None
    lib = comm.collective_library(device, evidence.hip)
    symm = args.get("enable_symm_mem") is True
    cells: list[Cell] = []
    for g in grp:
        if not g.own:
            continue
        n = comm.communicators_per_group(g.name, symm, device)
        cells.append(
            Cell(
                g.name,
                Mechanism.COMMUNICATORS,
                None,
                When.INIT,
                "measure",
                facts=(("count", n), ("library", lib), ("size", g.size)),
            )
        )
        cells.append(
            Cell(
                g.name,
                Mechanism.PEER_BUFFERS,
                None,
                comm.peer_buffers_when(args),
                "measure",
                facts=(
                    ("library", lib),
                    _env_fact(env, "NCCL_BUFFSIZE"),
                    _env_fact(env, "HCCL_BUFFSIZE"),
                ),
            )
        )
    ar_cells, notes = _custom_ar_cells(args, env, lay, evidence)
    cells.extend(ar_cells)
    if symm:
        # A log shows the pool by its own line (sglang 0.5.9 on); an estimate takes the 4 GiB
        # that --enable-symm-mem sets when the variable is unset (comm.SYMM_PREALLOC_DEFAULT_GIB).
        pre = comm.symm_prealloc_bytes(env.mapping, symm_default=not evidence.from_log)
        sp = evidence.symm_prealloc
        if sp is not None:
            cells.append(
                Cell(
                    "all groups",
                    Mechanism.SYMM_POOL,
                    sp.amount.bytes,
                    When.AFTER_KV,
                    "logged",
                    lines=(sp.source.line_no,),
                )
            )
        elif pre is not None:
            cells.append(
                Cell(
                    "all groups",
                    Mechanism.SYMM_POOL,
                    pre,
                    When.AFTER_KV,
                    "formula",
                    facts=(_env_fact(env, comm.ENV_SYMM_PREALLOC),),
                )
            )
        else:
            cells.append(Cell("all groups", Mechanism.SYMM_POOL, None, When.FIRST_USE, "measure"))
    if args.get("enable_mscclpp") is True and lay.tp > 1:
        cells.append(Cell("TP", Mechanism.MSCCLPP, None, When.INIT, "measure"))
    if comm.deepep_on(args) and lay.ep > 1:
        ep = next(g for g in grp if g.name == "MoE EP")
        cells.append(
            _deepep_cell(args, env, config, lay, "MoE EP" if ep.reuses is None else "MoE EP (= TP)")
        )
    role = comm.pd_role(args)
    if role is not None:
        cells.extend(_pd_cells(args, env, role, evidence))
    mfs = args.get("mem_fraction_static")
    return Plan(
        lay,
        grp,
        tuple(cells),
        env,
        device,
        lib,
        role,
        comm.pd_transfer_backend(args) if role else None,
        float(mfs) if isinstance(mfs, (int, float)) and not isinstance(mfs, bool) else None,
        mfs_explicit(args, evidence),
        evidence.command.source.line_no if evidence.command is not None else None,
        tuple(notes),
        evidence,
    )
