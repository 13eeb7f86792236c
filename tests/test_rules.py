"""SGLang's rules live once, in logmem/sglang/rules.py: nowhere else in the package, each with
its SGLang source and versions, and each doing what SGLang does (checked on real logs)."""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, REPO
from logmem.api import read_log
from logmem.model.records import Launch
from logmem.sglang import rules
from logmem.units import GIB, MIB

PKG = REPO / "logmem"
HOME = PKG / "sglang"

# The tell-tales of a rule written out again, matched against a file's code with comments and
# prose removed and no whitespace (strings that are one word, such as "prefill", are kept).
TELLTALES: dict[str, str] = {
    "print resolution 0.005 GiB": r"(?<![\d.])0\.005(?!\d)",
    "difference resolution 0.01 GiB in bytes": r"0\.01\*(?:GIB|\(1<<30\))|GIB\*0\.01\b",
    "difference resolution from the reading one": r"2\*PRINT_RESOLUTION",
    "KV budget P x (1 - mfs)": r"\(1-(?:float\()?[\w.]*(?:mfs|mem_fraction_static|\bm|lowest)\)?\)",
    "request-to-token table (n + 1) x ctx x 4": r"\+1\)\*[\w.]+\*4\b",
    "default request pool": r"512\),2048\),4096\)",
    "graph reserve per max bs": r"HEURISTIC_MIB_PER_BS=|\b(?:3|1\.5)\*dp\b|max_bs\*2\*MIB",
    "DeepEP reserve 2048 MiB": r"2048\*MIB",
    "activation reserve 1.5 MiB per chunk token": r"\*1\.5\*\(1<<20\)|\*1\.5\*MIB",
    "graph sized in tokens": r"'prefill'in|endswith\('prefill'\)|=='piecewise'",
    "DeepEP default dispatch tokens": r"DISPATCH_TOKENS=128\b",
}

# Files allowed to hold a copy of a rule (none today). An entry must name a rule the file still
# copies: test_allow_list_is_current fails on a stale one.
ALLOWED: dict[str, set[str]] = {}


def code_of(path: Path) -> str:
    """The file's code without comments, prose strings or whitespace (one space is kept between
    two names or numbers, so that word boundaries survive)."""
    out: list[str] = []
    toks = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    for t in toks:
        if t.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE) or not t.string.strip():
            continue
        text = t.string
        if t.type == tokenize.STRING:
            body = text.strip("\"'")
            text = f"'{body}'" if re.fullmatch(r"\w+", body) else "''"
        if out and re.match(r"\w", text) and re.search(r"\w$", out[-1]):
            out.append(" ")
        out.append(text)
    return "".join(out)


def copies() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        if HOME in path.parents:
            continue
        code = code_of(path)
        hits = {name for name, rx in TELLTALES.items() if re.search(rx, code)}
        if hits:
            found[path.relative_to(PKG).as_posix()] = hits
    return found


def test_no_rule_outside_its_home() -> None:
    extra = {
        f: sorted(hits - ALLOWED.get(f, set()))
        for f, hits in copies().items()
        if hits - ALLOWED.get(f, set())
    }
    assert not extra, f"SGLang rules written outside logmem/sglang/: {extra}; call rules.py instead"


def test_allow_list_is_current() -> None:
    found = copies()
    stale = {
        f: sorted(names - found.get(f, set()))
        for f, names in ALLOWED.items()
        if names - found.get(f, set())
    }
    assert not stale, f"converted: remove these from ALLOWED in tests/test_rules.py: {stale}"


@pytest.mark.parametrize(
    "code",
    [
        "rest = post - round(pre * (1 - float(mfs)))",
        "x = self.sz.after_weights_bytes - round(self.sz.pre_load_bytes * (1 - m))",
        "req = (max_running_requests + 1) * ctx * 4",
        "ROUNDING = round(0.01 * GIB)",
        "err = parts * 0.005 * GIB",
        "kind = 'prefill' if ('prefill' in name or 'piecewise' in name) else 'decode'",
        "h += 3 * dp",
        "return min(max(int(tokens / ctx * 512), 2048), 4096)",
    ],
)
def test_telltales_catch_the_copies_the_package_had(code: str, tmp_path: Path) -> None:
    p = tmp_path / "copy.py"
    p.write_text(code + "\n")
    assert any(re.search(rx, code_of(p)) for rx in TELLTALES.values())


def test_prose_about_a_rule_is_not_a_copy(tmp_path: Path) -> None:
    p = tmp_path / "prose.py"
    p.write_text(
        'TEXT = "rest = A - P x (1 - mfs), each reading +-0.005 GiB"  # (n + 1) * ctx * 4\n'
    )
    assert not any(re.search(rx, code_of(p)) for rx in TELLTALES.values())


# --- each rule says where it comes from -----------------------------------------------------------


def documented() -> list[tuple[str, str | None]]:
    """Public functions and constants of rules.py (and adjustments.py) with their docstrings (a
    constant's is the string right after its assignment)."""
    out: list[tuple[str, str | None]] = []
    # rules.py and the module it re-exports SGLang's mem_fraction_static adjustments from.
    body = [
        node
        for name in (
            "rules.py",
            "adjustments.py",
            "reserve.py",
            "code_paths.py",
            "quant.py",
            "spec_draft.py",
            "arg_memory.py",
            "graph_rules.py",
            "request_pool.py",
        )
        for node in ast.parse((HOME / name).read_text(encoding="utf-8")).body
    ]
    for i, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            out.append((node.name, ast.get_docstring(node)))
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.startswith("_") or name == "TYPE_CHECKING":
                continue
            nxt = body[i + 1] if i + 1 < len(body) else None
            doc = (
                nxt.value.value
                if isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
                else None
            )
            out.append((name, doc))
    return out


@pytest.mark.parametrize("name,doc", documented(), ids=[n for n, _ in documented()])
def test_every_rule_names_its_source(name: str, doc: str | None) -> None:
    assert doc, f"rules.{name} has no docstring"
    if name in (
        "Reserve",
        "ReserveTerm",
        "BudgetReadings",
        "PrefillGraph",
        "EnvGate",
        "DraftShare",
        "DraftPoolSource",
        "DraftPoolRule",
    ) or name.endswith("_BYTES"):
        return  # records of a rule, and byte versions that point at the rule they convert
    # A file of SGLang's (or "same ..." as the rule before it), or an explicit "unverified".
    assert re.search(r"\w+\.(?:py|hpp)\b|same|unverified", doc, re.I), f"rules.{name}: no source"
    assert re.search(r"\bE\d\b|20\d\d|all eras|same|unverified", doc, re.I), f"rules.{name}: no era"


# --- the rules do what SGLang does ------------------------------------------------------------------


def launch(name: str) -> Launch:
    return read_log(str(FIXTURES / name)).launches[0]


def gib_text(n: int | None) -> str:
    assert n is not None
    return f"{n / GIB:.2f}"


def test_after_weights_is_the_draft_end_when_newest_sglang_loads_both_first() -> None:
    # 021 (DFlash, Aug 2026): target end 47.80, draft end 46.25, then the pools. The logged
    # pools (10.21 x 2 + 4.25 x 2 = 28.92) match the rule only with 46.25.
    L = launch("021-laguna-s21-int4-dgx-spark-dflash-spec.log")
    b = rules.budget_readings(L)
    assert gib_text(b.after_weights_bytes) == "46.25"
    assert b.pre_load_bytes is not None and b.after_weights_bytes is not None
    rest = rules.kv_budget_bytes(b.after_weights_bytes, b.pre_load_bytes, 0.85)
    target = L.ranks[0].target
    assert target is not None
    logged = sum(p.total_bytes for p in target.kv_pools)
    assert abs(rest - logged) < 0.05 * GIB
    own_end = target.weights_end
    assert own_end is not None and gib_text(own_end.avail.bytes) == "47.80"
    wrong = rules.kv_budget_bytes(own_end.avail.bytes, b.pre_load_bytes, 0.85)
    assert wrong - logged > 1.5 * GIB
    # The draft's own readings are its own Load weight pair.
    d = rules.budget_readings(L, draft=True)
    assert gib_text(d.pre_load_bytes) == "47.83" and gib_text(d.after_weights_bytes) == "46.25"


def test_after_weights_is_min_over_ranks_kimi() -> None:
    # Kimi K3: DP0 TP0 82.76, DP1 TP8 82.80 after both loads; the rule gives the logged 56.20.
    L = launch("kimi-k3-b200-dp2-dcp8-target-verify-constructed.log")
    b = rules.budget_readings(L)
    assert gib_text(b.after_weights_bytes) == "82.76" and b.after_weights_rank == "DP0 TP0"
    assert gib_text(b.pre_load_bytes) == "177.08" and b.ranks_seen == 2
    assert b.pre_load_bytes is not None and b.after_weights_bytes is not None
    assert gib_text(rules.kv_budget_bytes(b.after_weights_bytes, b.pre_load_bytes, 0.85)) == "56.20"


OLD_ORDER = [
    "[2025-09-01 10:00:00] server_args=ServerArgs(mem_fraction_static=0.8, tp_size=1, "
    "speculative_algorithm='EAGLE')",
    "[2025-09-01 10:00:01] Load weight begin. avail mem=70.00 GB",
    "[2025-09-01 10:00:02] Load weight end. type=LlamaForCausalLM, avail mem=50.00 GB, mem usage=20.00 GB.",
    "[2025-09-01 10:00:03] KV Cache is allocated. #tokens: 1000, K size: 18.00 GB, V size: 18.00 GB",
    "[2025-09-01 10:00:03] Memory pool end. avail mem=13.00 GB",
    "[2025-09-01 10:00:04] Load weight begin. avail mem=13.00 GB",
    "[2025-09-01 10:00:05] Load weight end. type=LlamaEagle, avail mem=12.00 GB, mem usage=1.00 GB.",
]


def test_after_weights_is_the_target_end_when_the_target_pools_come_first(tmp_path: Path) -> None:
    p = tmp_path / "old.log"
    p.write_text("\n".join(OLD_ORDER) + "\n")
    L = read_log(str(p)).launches[0]
    assert gib_text(rules.budget_readings(L).after_weights_bytes) == "50.00"
    assert gib_text(rules.budget_readings(L, draft=True).after_weights_bytes) == "12.00"


@given(
    a=st.integers(0, 200 * GIB),
    p=st.integers(1, 200 * GIB),
    mfs=st.floats(0.01, 0.99),
)
def test_kv_budget_is_a_minus_p_times_one_minus_mfs(a: int, p: int, mfs: float) -> None:
    rest = rules.kv_budget_bytes(a, p, mfs)
    assert isinstance(rest, int)
    assert abs(rest - (a - p * (1 - mfs))) <= 0.5 + 1e-6 * p  # one rounding, to whole bytes
    assert rest == a - rules.outside_budget_bytes(p, mfs)
    # Moving mfs by d moves P x d into the budget (the step rounds down, so to within a byte).
    step = rules.mfs_step_bytes(p, 0.01)
    assert abs(rules.kv_budget_bytes(a, p, mfs + 0.01) - rest - step) <= 2


@given(a=st.integers(0, 200 * GIB), p=st.integers(1, 200 * GIB))
def test_smallest_mfs_makes_the_budget_zero(a: int, p: int) -> None:
    m = rules.smallest_mfs_with_pool(a, p)
    assert m is not None
    assert abs(a - p * (1 - m)) <= 1e-6 * p
    assert rules.smallest_mfs_with_pool(a, 0) is None


@given(
    cell=st.integers(1024, 2_000_000),
    tokens=st.integers(1000, 5_000_000),
    parts=st.sampled_from([1, 2]),
    page=st.sampled_from([1, 16, 64, 128]),
)
def test_bytes_per_token_range_holds_the_true_cell(
    cell: int, tokens: int, parts: int, page: int
) -> None:
    # What SGLang prints: each part's size, over #tokens + page_size slots (reference 4.1), to
    # two decimals of a GiB.
    each = cell * (tokens + page) / parts
    printed = parts * round(round(each / GIB, 2) * GIB)
    rng = rules.bytes_per_token_range(printed, tokens, parts, page)
    assert rng is not None and rng[0] <= cell <= rng[1]


def test_req_to_token_table_of_snippet_18_1() -> None:
    # log-formats 18.1: 2049 requests x (131072 + 4) x 4 B is the ~1.00 GiB the pools miss.
    assert rules.req_to_token_bytes(2048, 131072) == 2049 * (131072 + 4) * 4
    assert f"{rules.req_to_token_bytes(2048, 131072) / GIB:.2f}" == "1.00"


def test_default_request_pool_clamps() -> None:
    # 18.8: 392920 tokens / 40960 context x 512 = 4911, clamped to 4096.
    assert rules.default_max_running_requests(392920, 40960) == 4096
    assert rules.default_max_running_requests(1000, 40960) == 2048
    assert rules.default_max_running_requests(200000, 40960) == int(200000 / 40960 * 512)


def test_graph_reserve_terms() -> None:
    r = rules.graph_reserve({"cuda_graph_max_bs": 512})
    assert r is not None and [t.bytes for t in r] == [1024 * MIB]
    r = rules.graph_reserve(
        {
            "cuda_graph_max_bs": 400,
            "enable_dp_attention": True,
            "dp_size": 2,
            "disable_piecewise_cuda_graph": False,
            "piecewise_cuda_graph_tokens": [4, 8, 16],
            "moe_a2a_backend": "deepep",
        }
    )
    assert r is not None
    assert [(t.term, t.bytes) for t in r] == [
        (rules.ReserveTerm.DECODE, 800 * MIB),
        (rules.ReserveTerm.DP_ATTENTION, 2400 * MIB),
        (rules.ReserveTerm.DP_ATTENTION_LARGE_BS, 1200 * MIB),
        (rules.ReserveTerm.PIECEWISE, 24 * MIB),
        (rules.ReserveTerm.DEEPEP, 2048 * MIB),
    ]
    # Per unit of max bs, what compare's heuristic slope uses: 2 + 3 x 2 + 1.5 x 2.
    assert rules.graph_reserve_mib_per_bs(True, 2, 400) == 11.0
    assert rules.graph_reserve_mib_per_bs(True, 2, 256) == 8.0
    # No graph captured: no graph term (an empty reserve, not a missing input).
    assert rules.graph_reserve({"cuda_graph_max_bs": 512, "disable_cuda_graph": True}) == ()
    assert rules.graph_reserve({"cuda_graph_max_bs": True}) is None
    assert rules.graph_reserve({}) is None


E7_ARGS = {
    # 021's E7 names (review24 #2c): no cuda_graph_max_bs, the decode max bs in the config.
    "cuda_graph_max_bs_decode": 8,
    "cuda_graph_config": {
        "decode": {"backend": "full", "max_bs": 8, "bs": list(range(1, 9))},
        "prefill": {"backend": "breakable", "max_bs": 8192, "bs": list(range(58))},
    },
    "disable_prefill_cuda_graph": False,
    "disable_cuda_graph": False,
}


def test_graph_reserve_reads_the_e7_names() -> None:
    assert rules.decode_max_bs(E7_ARGS) == 8
    assert rules.decode_max_bs({"cuda_graph_max_bs_decode": 16}) == 16
    assert rules.decode_max_bs({"cuda_graph_max_bs": 24}) == 24
    # One reader: compare and estimate take the same value (compare missed the _decode name).
    from logmem.compare.args import graph_max_bs
    from logmem.estimate.config import settings_from_server_args

    assert graph_max_bs({"cuda_graph_max_bs_decode": 16}) == 16
    assert graph_max_bs({"cuda_graph_max_bs": True}) is None
    assert settings_from_server_args(E7_ARGS)["cuda_graph_max_bs"] == 8
    r = rules.graph_reserve(E7_ARGS, newest=True, mla=False)
    assert r is not None
    assert [(t.term, t.bytes) for t in r] == [
        (rules.ReserveTerm.DECODE, 16 * MIB),
        (rules.ReserveTerm.PREFILL, 58 * 8 * MIB),
    ]
    off = {**E7_ARGS, "disable_prefill_cuda_graph": True}
    assert [t.term for t in rules.graph_reserve(off) or ()] == [rules.ReserveTerm.DECODE]
    # Without a prefill phase in the config and no piecewise flags: no prefill graph.
    assert rules.prefill_graph({**E7_ARGS, "cuda_graph_config": {}}) is None


def test_graph_reserve_e7_mla_and_breakable_deepep_terms() -> None:
    """Reference 12.3 (c): an MLA model's prefill graph is a flat 1536 MiB; a breakable prefill
    graph with DeepEP adds 1024. The kimi-k3 fixture (DeepSeekV3 MLA, dp 2 DP attention, max bs
    192, 42 breakable prefill sizes, deepep) totals 6.0 GiB, not the 3.50 of before."""
    launch = read_log(str(FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"))
    r = rules.graph_reserve(launch.launches[0].args, newest=True, mla=True)
    assert r is not None
    assert [(t.term, t.bytes // MIB) for t in r] == [
        (rules.ReserveTerm.DECODE, 384),
        (rules.ReserveTerm.DP_ATTENTION, 1152),
        (rules.ReserveTerm.MLA_PREFILL, 1536),
        (rules.ReserveTerm.BREAKABLE_DEEPEP, 1024),
        (rules.ReserveTerm.DEEPEP, 2048),
    ]
    assert sum(t.bytes for t in r) == 6 * GIB
    # Whether the model is MLA decides the prefill term: unknown, the reserve is unknown.
    assert rules.graph_reserve(launch.launches[0].args, newest=True, mla=None) is None
    # Era b's terms (Oct 2025 - Feb 2026) have neither the MLA flat term nor the DeepEP ones.
    old = rules.graph_reserve(launch.launches[0].args, newest=False, mla=True)
    assert [(t.term, t.bytes // MIB) for t in old or ()] == [
        (rules.ReserveTerm.DECODE, 384),
        (rules.ReserveTerm.DP_ATTENTION, 1152),
        (rules.ReserveTerm.PREFILL, 42 * 8),
    ]


def test_activation_reserve_floor() -> None:
    assert rules.activation_reserve_bytes(1024) == rules.activation_reserve_bytes(2048)
    assert rules.activation_reserve_bytes(16384) == 16384 * 3 * MIB // 2


@pytest.mark.parametrize(
    "name,tokens",
    [
        ("decode", False),
        ("piecewise", True),
        ("target prefill", True),
        ("draft prefill", True),
        ("target verify", False),
        ("draft extend", False),
    ],
)
def test_graph_sized_in_tokens(name: str, tokens: bool) -> None:
    assert rules.graph_sized_in_tokens(name) is tokens


def test_imbalance_cost_is_mfs_times_gap() -> None:
    assert rules.imbalance_budget_loss_bytes(GIB, 0.85) == round(0.85 * GIB)
    assert math.isclose(rules.imbalance_budget_loss_bytes(10 * GIB, 0.5) / GIB, 5.0)
