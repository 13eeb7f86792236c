"""The communication table: SGLang's rules (logmem/sglang/comm.py), the cells derived from
flags, environment and config (analysis/communication.py), and the worked figures of issue 14."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, REPO
from logmem.analysis.comm_inputs import Env, EnvValue, Evidence, parse_env_items
from logmem.analysis.communication import derive
from logmem.errors import EnvError
from logmem.estimate import load_model_config
from logmem.sglang import comm
from logmem.sglang import custom_ar as car
from logmem.sglang.comm import Layout, Mechanism, When
from logmem.units import GIB, MIB

DSV3 = load_model_config(FIXTURES / "configs" / "deepseek-v3.json")


def _env(**kv: str) -> Env:
    return Env(tuple(EnvValue(k, v, "--env") for k, v in kv.items()))


def _cells(plan: object) -> dict[tuple[str, str], object]:
    return {(c.group, c.mechanism.value): c for c in plan.cells}  # type: ignore[attr-defined]


# --- worked figures -------------------------------------------------------------------------


def test_v2_pointer_table_is_8_mib_at_w8() -> None:
    assert car.v2_pointer_table_bytes(8) == 131072 * 8 * 8 == 8 * MIB


def test_v2_sizes_are_the_tuned_table_capped_not_16_mib_each() -> None:
    # sglang 0.5.23 CustomAllReduceV2.__init__: min(tuned, max_size); the tuned table is per GPU
    # architecture, so without forced sizes only the cap (an upper bound) is known.
    s = car.v2_sizes({})
    assert (s.push, s.pull, s.cap) == (None, None, 16 * MIB) and not s.exact
    assert s.workspace_at_most(4) == 2 * 4 * 16 * MIB + 16 * MIB
    # H200 at W = 4 (0.5.23 _sm90_configs: eager 896 KiB push, pull capped at 16 MiB) is far below.
    assert car.v2_workspace_bytes(4, 896 * 1024, 16 * MIB) < s.workspace_at_most(4) / 6


def test_v2_sizes_follow_the_environment() -> None:
    s = car.v2_sizes({car.ENV_V2_MAX: "4096", car.ENV_V2_PUSH: "1024"})
    assert (s.push, s.pull, s.cap) == (1024 * 1024, None, 4096 * 1024) and not s.exact
    forced = car.v2_sizes({car.ENV_V2_PUSH: "1024", car.ENV_V2_PULL: "2048"})
    assert forced.exact and car.v2_workspace_bytes(4, forced.push or 0, forced.pull or 0) == (
        2 * 4 * MIB + 2 * MIB
    )
    # A value SGLang would not parse falls back to the default, never to 0.
    assert car.v2_sizes({car.ENV_V2_MAX: "lots"}).cap == 16 * MIB


def test_legacy_custom_ar_is_three_buffers_of_8_mib_16_on_hip() -> None:
    assert car.legacy_custom_ar_bytes(hip=False) == 3 * 8 * MIB
    assert car.legacy_custom_ar_bytes(hip=True) == 3 * 16 * MIB


def _choice(args: dict[str, object], printed: date | None, **env: str) -> tuple[str, str]:
    c = car.custom_ar_choice(args, env, printed, v2_logged=False, from_log=True)
    return c.impl.value, c.why


def test_custom_ar_implementation_by_release_date() -> None:
    tp4 = {"tp_size": 4}
    # 0.5.9 (2026-02-23) has no v2; 0.5.10-0.5.11 have it opt-in; 0.5.12 makes it the default.
    assert _choice(tp4, date(2026, 2, 18)) == ("legacy", "no_v2")
    assert _choice(tp4, date(2026, 5, 7)) == ("legacy", "v2_opt_in")
    assert _choice(tp4, date(2026, 5, 7), SGLANG_USE_JIT_ALL_REDUCE="1") == ("v2", "switch")
    # Later, a missing 'All Reduce config' line proves nothing: an older image may run.
    assert _choice(tp4, date(2026, 6, 1)) == ("either", "unknown")
    assert _choice(tp4, date(2026, 11, 1)) == ("either", "unknown")
    assert _choice(tp4, None) == ("either", "unknown")
    assert _choice(tp4, date(2026, 11, 1), SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2="0") == (
        "legacy",
        "switch",
    )
    # An estimate from flags alone follows the newest default.
    c = car.custom_ar_choice(tp4, {}, None, v2_logged=False, from_log=False)
    assert c.impl is car.ArImpl.V2


def test_no_custom_ar_on_a_tp_group_across_nodes() -> None:
    # custom_all_reduce_utils.py can_use_custom_all_reduce_with_nvlink: "spans across nodes".
    for args in ({"tp_size": 4, "nnodes": 2}, {"tp_size": 16, "nnodes": 2, "pp_size": 1}):
        for d in (date(2026, 4, 1), date(2026, 9, 10), None):
            assert _choice(args, d) == ("off", "spans"), (args, d)
    # PP across the nodes keeps each TP group on one node; 0.5.12-0.5.16 force v2 off there.
    assert _choice({"tp_size": 4, "pp_size": 2, "nnodes": 2}, date(2026, 7, 1)) == (
        "legacy",
        "nnodes",
    )
    cells = derive({"tp_size": 4, "nnodes": 2}, evidence=Evidence(log=True)).cells
    assert not any("custom AR" in c.mechanism.value for c in cells)


def test_deepep_low_latency_deepseek_v3_matches_the_reference_example() -> None:
    # Reference 12.5: H 7168, E 256, T 128 -> about 1.91e9 bytes (newer layout, with scales).
    newer = comm.deepep_low_latency_bytes(128, 7168, 256, 8, scaled_combine=True)
    assert abs(newer - 1.91e9) / 1.91e9 < 0.01
    older = comm.deepep_low_latency_bytes(128, 7168, 256, 8)
    assert older < newer and older % comm.DEEPEP_ALIGNMENT == 0


@given(
    t=st.integers(1, 1024),
    h=st.sampled_from([2048, 4096, 5120, 7168]),
    e=st.sampled_from([8, 64, 128, 256, 384]),
    ranks=st.sampled_from([1, 2, 8, 16]),
)
def test_deepep_low_latency_grows_with_tokens_and_is_aligned(
    t: int, h: int, e: int, ranks: int
) -> None:
    """Proportional to T (issue 14: lowering the dispatch tokens shrinks it), never below the
    receive side E x T x 2H, and a multiple of DeepEP's alignment."""
    b = comm.deepep_low_latency_bytes(t, h, e, ranks)
    assert b % comm.DEEPEP_ALIGNMENT == 0
    assert b >= 2 * e * t * 2 * h
    assert comm.deepep_low_latency_bytes(t + 1, h, e, ranks) > b


def test_dispatch_tokens_from_env_and_default() -> None:
    assert comm.deepep_dispatch_tokens({}) == 128
    assert comm.deepep_dispatch_tokens({comm.ENV_DEEPEP_TOKENS: "64"}) == 64
    assert (
        comm.deepep_dispatch_tokens({comm.ENV_DEEPEP_TOKENS: "4096"}) == 128
    )  # above SGLang's cap


def test_staging_prefill_per_queue_and_decode_ring() -> None:
    assert comm.staging_prefill_bytes_per_queue(8192, 64, 70272) == (8192 // 64) * 64 * 70272
    assert comm.staging_prefill_bytes_per_queue(16, 64, 1000) == 64 * 1000  # max(1, chunk // page)
    assert comm.staging_decode_bytes({}) == 4096 * MIB
    assert comm.staging_decode_bytes({comm.ENV_STAGING_POOL: "1024"}) == 1024 * MIB


# --- groups and reuse -----------------------------------------------------------------------


def test_groups_reuse_tp_when_sizes_match() -> None:
    g = {x.name: x for x in comm.groups(Layout(tp=8, ep=8))}
    assert g["MoE EP"].reuses == "TP" and g["attention TP"].reuses == "TP"
    assert g["MoE TP"].reuses is None and g["MoE TP"].size == 1 and not g["MoE TP"].own


def test_dp_attention_builds_its_own_attention_tp() -> None:
    g = {x.name: x for x in comm.groups(Layout(tp=16, dp=4, ep=16, dp_attention=True))}
    assert g["attention TP"].size == 4 and g["attention TP"].own
    assert g["MoE EP"].reuses == "TP"


def test_pp_dcp_groups_only_when_used() -> None:
    names = [x.name for x in comm.groups(Layout(tp=2))]
    assert "PP" not in names and "DCP" not in names
    names = [x.name for x in comm.groups(Layout(tp=2, pp=2, dcp=8))]
    assert "PP" in names and "DCP" in names


# --- derive ---------------------------------------------------------------------------------


def test_estimate_defaults_to_v2_on_cuda_and_legacy_by_switch() -> None:
    args = {"tp_size": 8}
    cells = _cells(derive(args))
    assert cells[("TP", "custom AR v2 pointers")].bytes == 8 * MIB  # type: ignore[attr-defined]
    ws = cells[("TP", "custom AR v2 workspace")]
    assert ws.bytes is None and ws.source == "measure"  # type: ignore[attr-defined]
    legacy = _cells(derive(args, _env(**{car.ENV_V2_SWITCH: "0"})))
    assert legacy[("TP", "custom AR (legacy)")].bytes == 24 * MIB  # type: ignore[attr-defined]
    assert ("TP", "custom AR v2 pointers") not in legacy


def test_no_custom_ar_when_disabled_single_gpu_or_npu() -> None:
    for args in (
        {"tp_size": 8, "disable_custom_all_reduce": True},
        {"tp_size": 1},
        {"tp_size": 16, "device": "npu"},
    ):
        assert not any("custom AR" in c.mechanism.value for c in derive(args).cells), args


def test_nccl_cells_are_measure_never_zero() -> None:
    plan = derive({"tp_size": 4})
    nccl = [
        c for c in plan.cells if c.mechanism in (Mechanism.COMMUNICATORS, Mechanism.PEER_BUFFERS)
    ]
    assert nccl and all(c.bytes is None and c.source == "measure" for c in nccl)
    comms = next(c for c in nccl if c.mechanism is Mechanism.COMMUNICATORS)
    assert comms.when is When.INIT and comms.fact("count") == 2  # torch + pynccl


def test_pre_warm_moves_peer_buffers_into_init() -> None:
    cold = derive({"tp_size": 2}).cell(Mechanism.PEER_BUFFERS)
    warm = derive({"tp_size": 2, "pre_warm_nccl": True}).cell(Mechanism.PEER_BUFFERS)
    assert cold is not None and cold.when is When.FIRST_USE
    assert warm is not None and warm.when is When.INIT


def test_deepep_low_latency_cell_from_config_and_env() -> None:
    args = {"tp_size": 8, "ep_size": 8, "moe_a2a_backend": "deepep", "deepep_mode": "low_latency"}
    cell = derive(args, _env(**{comm.ENV_DEEPEP_TOKENS: "64"}), DSV3).cell(Mechanism.DEEPEP)
    assert cell is not None and cell.when is When.FIRST_USE and cell.source == "formula"
    assert cell.bytes == comm.deepep_low_latency_bytes(64, 7168, 256, 8)
    assert cell.group == "MoE EP (= TP)"
    no_config = derive(args).cell(Mechanism.DEEPEP)
    assert (
        no_config is not None
        and no_config.bytes is None
        and no_config.fact("unknown") == "no_config"
    )


def test_deepep_normal_and_auto_have_no_single_formula() -> None:
    base = {"tp_size": 8, "ep_size": 8, "moe_a2a_backend": "deepep"}
    for mode in ("normal", "auto"):
        cell = derive({**base, "deepep_mode": mode}, Env(), DSV3).cell(Mechanism.DEEPEP)
        assert cell is not None and cell.bytes is None and cell.source == "measure"
    auto = derive({**base, "deepep_mode": "auto"}, Env(), DSV3).cell(Mechanism.DEEPEP)
    assert auto is not None and auto.fact("low_latency_bytes") == comm.deepep_low_latency_bytes(
        128, 7168, 256, 8
    )


def test_pd_registration_adds_no_hbm_and_staging_only_when_enabled() -> None:
    args = {
        "tp_size": 2,
        "disaggregation_mode": "prefill",
        "chunked_prefill_size": 8192,
        "page_size": 64,
    }
    plan = derive(args)
    reg = plan.cell(Mechanism.PD_KV_REGISTRATION)
    assert reg is not None and reg.bytes == 0 and reg.source == "rule"
    aux = plan.cell(Mechanism.PD_AUX)
    assert aux is not None and aux.memory == "host" and aux.bytes is None
    assert plan.cell(Mechanism.PD_STAGING) is None and plan.transfer_backend == "mooncake"
    staged = derive(args, _env(**{comm.ENV_STAGING: "1"}), None, Evidence(kv_bytes_per_token=70272))
    st_cell = staged.cell(Mechanism.PD_STAGING)
    assert st_cell is not None and st_cell.when is When.AFTER_KV
    assert st_cell.each_bytes == (8192 // 64) * 64 * 70272 and st_cell.bytes is None
    decode = derive({**args, "disaggregation_mode": "decode"}, _env(**{comm.ENV_STAGING: "true"}))
    ring = decode.cell(Mechanism.PD_STAGING)
    assert ring is not None and ring.bytes == 4096 * MIB


def test_symmetric_pool_prealloc_from_env() -> None:
    args = {"tp_size": 4, "enable_symm_mem": True}
    # --enable-symm-mem sets an unset SGLANG_SYMM_MEM_PREALLOC_GB_SIZE to 4 (sglang 0.5.9-0.5.23,
    # srt/server_args.py, later srt/arg_groups/memory_hook.py); an explicit -1 keeps it off.
    default = derive(args).cell(Mechanism.SYMM_POOL)
    assert default is not None and default.bytes == 4 * GIB and default.when is When.AFTER_KV
    grown = derive(args, _env(**{comm.ENV_SYMM_PREALLOC: "-1"})).cell(Mechanism.SYMM_POOL)
    assert grown is not None and grown.bytes is None and grown.when is When.FIRST_USE
    pre = derive(args, _env(**{comm.ENV_SYMM_PREALLOC: "4"})).cell(Mechanism.SYMM_POOL)
    assert pre is not None and pre.bytes == 4 * GIB and pre.when is When.AFTER_KV
    # With symmetric memory the attention TP group (its own under DP attention) also runs pynccl.
    dp = derive({"tp_size": 8, "dp_size": 2, "enable_dp_attention": True, "enable_symm_mem": True})
    attn = next(
        c for c in dp.cells if c.group == "attention TP" and c.mechanism is Mechanism.COMMUNICATORS
    )
    assert attn.fact("count") == 2


# --- environment input ----------------------------------------------------------------------


def test_env_items_and_files() -> None:
    items = parse_env_items(["# comment", "", "export A_B=1", "C='x y'"], "--env-file")
    assert [(v.key, v.value) for v in items] == [("A_B", "1"), ("C", "x y")]
    assert parse_env_items(["K=v=w"], "--env")[0].value == "v=w"


@pytest.mark.parametrize("bad", ["NOEQUALS", "=1", "1A=2", "A-B=1", "É=1"])
def test_env_items_refuse_what_is_not_key_value(bad: str) -> None:
    with pytest.raises(EnvError):
        parse_env_items([bad], "--env")


def test_the_users_env_wins_over_the_logs() -> None:
    env = Env((EnvValue("K", "1", "log", 3),)).merged([EnvValue("K", "2", "--env")])
    got = env.get("K")
    assert got is not None and got.value == "2" and env.mapping == {"K": "2"}


# --- one home for the rules -----------------------------------------------------------------

TELLTALES = {
    "v2 pointer table rows": r"\b131072\b",
    "legacy max size": r"8192\s*\*\s*1024",
    "DeepEP signal bytes": r"\*\s*8\s*\+\s*\w+\s*\*\s*4\b",
    "staging pool default": r"\b4096\b.*STAGING|STAGING.*\b4096\b",
}


def test_communication_rules_live_only_in_sglang_comm() -> None:
    """A communication formula written anywhere but sglang/comm.py and its custom all-reduce
    part (sglang/custom_ar.py) fails (one copy only)."""
    from test_rules import code_of

    pkg = REPO / "logmem"
    found = {}
    for path in sorted(pkg.rglob("*.py")):
        if path in (pkg / "sglang" / "comm.py", pkg / "sglang" / "custom_ar.py"):
            continue
        code = code_of(path)
        hits = [name for name, rx in TELLTALES.items() if re.search(rx, code)]
        if hits:
            found[path.relative_to(pkg).as_posix()] = hits
    assert found == {}
    assert any(re.search(rx, code_of(pkg / "sglang" / "comm.py")) for rx in TELLTALES.values())
