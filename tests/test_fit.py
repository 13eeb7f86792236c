"""logmem.compare: diff, slopes, least squares and what-if, on corpus log 001 and generated pairs.

`make_log` writes a start-up log from a known graph model (static buffers and largest
bucket each = intercept + slope x rows) through the real wording of two SGLang eras,
every reading rounded to two decimals as SGLang prints it; the fit must recover the
model within the error bound it states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.compare.args import compare_args
from logmem.compare.diff import Diff, diff_launches
from logmem.compare.load import LaunchRef, pick_launch, split_spec
from logmem.compare.notes import (
    BarsSlope,
    RowsBasis,
    RowsSource,
    SlopeNotVaried,
    TermKind,
)
from logmem.compare.slope import Fit, fit_launches, fit_line, slope_from_fit
from logmem.compare.whatif import WhatIf, whatif_launch
from logmem.errors import FitError
from logmem.model.records import Launch
from logmem.report.compare.render import render_markdown, render_text, to_json
from logmem.report.compare.view import diff_view
from logmem.report.compare.whatif_view import whatif_view
from logmem.sglang.eras import era_guess, era_markers
from logmem.sglang.rules import memory_neutral_arg

GIB = 1 << 30
MIB = 1 << 20
LOG001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def load_launch(spec: str, launch: int | None, label: str) -> tuple[Launch, LaunchRef]:
    """One launch of a path spec, as the API picks it."""
    a = read_log(*split_spec(spec))
    index, L = pick_launch(a, launch, label)
    return L, LaunchRef(label, a.paths, index)


def diff(*args: Any, **kw: Any) -> Diff:
    return diff_launches(*args, **kw)


def fit(*args: Any, **kw: Any) -> Fit:
    return fit_launches(*args, **kw)


def whatif(*args: Any, **kw: Any) -> WhatIf:
    return whatif_launch(*args, **kw)


# --- the generator ----------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """The truth a generated log is printed from (GiB and MiB per row)."""

    era: str = "E2"  # "E2" | "E7"
    max_bs: int = 80
    largest_gib: float = 0.30  # intercept of the largest bucket
    largest_mib_per_row: float = 2.5
    static_gib: float = 0.05
    static_mib_per_row: float = 0.25
    other_gib: float = 0.002  # each other bucket
    tokens_per_req: int = 1
    mfs: float = 0.85
    pre_load_gib: float = 21.63
    weights_gib: float = 15.54
    workspace_gib: float = 0.64
    bytes_per_token: int = 65536
    context_len: int = 32768
    ranks: int = 1
    port: int = 30000
    seed: int = 1
    request_pool: int = 2049  # the summary's max_running_requests
    extra_args: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.max_bs * self.tokens_per_req


def bs_list(max_bs: int) -> list[int]:
    sizes = [s for s in [1, 2, 4, 8, *range(16, 513, 8)] if s <= max_bs]
    return sizes if sizes[-1] == max_bs else [*sizes, max_bs]


def p2(n_bytes: float) -> str:
    return f"{n_bytes / GIB:.2f}"


def make_log(m: Model) -> str:
    """A start-up log in E2 (Mar 2025) or E7 (Aug 2026) wording, readings rounded to 0.01."""
    e7 = m.era == "E7"
    sizes = bs_list(m.max_bs)
    args: dict[str, Any] = {
        "model_path": "/models/test",
        "tokenizer_path": "/models/test",
        "host": "127.0.0.1",
        "port": m.port,
        "mem_fraction_static": m.mfs,
        "max_running_requests": None,
        "max_total_tokens": None,
        "chunked_prefill_size": 2048,
        "tp_size": m.ranks,
        "random_seed": m.seed,
        "page_size": 1,
        "dp_size": 1,
        "enable_dp_attention": False,
        "disable_cuda_graph": False,
        "cuda_graph_max_bs": m.max_bs,
        "cuda_graph_bs": sizes if e7 else None,
        "speculative_algorithm": "EAGLE" if m.tokens_per_req > 1 else None,
        "speculative_num_draft_tokens": m.tokens_per_req if m.tokens_per_req > 1 else 8,
        "log_level": "info",
    } | m.extra_args
    if e7:
        dump = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in args.items()) + "}"
    else:
        dump = "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
    ts = "2026-08-27 03:45:24" if e7 else "2025-03-08 12:29:04"
    out = [f"[{ts}] server_args={dump}"]
    pre = round(m.pre_load_gib * GIB)
    after_w = pre - round(m.weights_gib * GIB)
    # SGLang's rule on the unrounded readings; the pool takes exactly tokens x cell.
    rest = after_w - round(pre * (1 - m.mfs))
    tokens = max(rest, 0) // m.bytes_per_token
    kv = tokens * m.bytes_per_token
    req = (2048 + 1) * m.context_len * 4
    pool_end = after_w - kv - req
    begin = pool_end - round(m.workspace_gib * GIB)
    static = round((m.static_gib + m.static_mib_per_row * m.rows / 1024) * GIB)
    largest = round((m.largest_gib + m.largest_mib_per_row * m.rows / 1024) * GIB)
    samples = [begin - static, begin - static - largest]
    for _ in sizes[:-2]:
        samples.append(samples[-1] - round(m.other_gib * GIB))
    end = samples[-1] - round(m.other_gib * GIB)
    labels = [f" TP{i}" for i in range(m.ranks)] if m.ranks > 1 or not e7 else [""]

    def each(text: str) -> None:
        for lab in labels:
            out.append(f"[{ts}{lab}] {text}")

    each("Init torch distributed begin.")
    each("Init torch distributed ends. " + ("elapsed=0.05 s, " if e7 else "") + "mem usage=0.13 GB")
    each(f"Load weight begin. avail mem={p2(pre)} GB")
    if e7:
        each(
            f"Load weight end. elapsed=12.02 s, type=Qwen3ForCausalLM, quant=fp8, fmt=e4m3, "
            f"avail mem={p2(after_w)} GB, mem usage={p2(pre - after_w)} GB."
        )
        each(
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, K size: {p2(kv / 2)} GB, "
            f"V size: {p2(kv / 2)} GB"
        )
    else:
        each(
            f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={p2(after_w)} GB, "
            f"mem usage={p2(pre - after_w)} GB."
        )
        each(
            f"KV Cache is allocated. #tokens: {tokens}, K size: {p2(kv / 2)} GB, V size: {p2(kv / 2)} GB"
        )
    each(f"Memory pool end. avail mem={p2(pool_end)} GB")
    name = ("target verify" if m.tokens_per_req > 1 else "target decode") if e7 else ""
    for i, lab in enumerate(labels):
        if e7:
            out.append(
                f"[{ts}{lab}] Capture {name} CUDA graph begin. backend=full, "
                f"num_tokens_per_req={m.tokens_per_req}, bs={sizes}, avail mem={p2(begin)} GB"
            )
        else:
            out.append(
                f"[{ts}{lab}] Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={p2(begin)} GB"
            )
        if i == 0:  # tqdm: TP0 only, one physical line of \r-separated renders, largest bs first
            n = len(sizes)
            renders = [f"  0%|          | 0/{n} [00:00<?, ?it/s]"]
            for k, (bs, free) in enumerate(zip(reversed(sizes), samples)):
                desc = f"Capturing batches (bs={bs} avail_mem={p2(free)} GB)"
                renders.append(
                    f"{desc}: {k * 100 // n:3d}%|          | {k}/{n} [00:0{k % 10}<00:01, 9.9it/s]"
                )
                renders.append(
                    f"{desc}: {(k + 1) * 100 // n:3d}%|          | {k + 1}/{n} [00:0{k % 10}<00:01, 9.9it/s]"
                )
            out.append("\r".join(renders))
    usage = p2(begin - end)
    for lab in labels:
        if e7:
            out.append(
                f"[{ts}{lab}] Capture {name} CUDA graph end. elapsed=1.00 s, mem usage={usage} GB, "
                f"avail mem={p2(end)} GB."
            )
        else:
            out.append(
                f"[{ts}{lab}] Capture cuda graph end. Time elapsed: 1.00 s. avail mem={p2(end)} GB. "
                f"mem usage={usage} GB."
            )
    tail = f", available_gpu_mem={p2(end)} GB" if e7 else ""
    each(
        f"max_total_num_tokens={tokens}, chunked_prefill_size=2048, max_prefill_tokens=16384, "
        f"max_running_requests={m.request_pool}, context_len={m.context_len}{tail}"
    )
    out.append(f"[{ts}] The server is fired up and ready to roll!")
    return "\n".join(out) + "\n"


def write(tmp: Path, m: Model, name: str) -> str:
    p = tmp / f"{name}.log"
    p.write_text(make_log(m))
    return str(p)


def pair(tmp: Path, a: Model, b: Model) -> Any:
    la, ra = load_launch(write(tmp, a, "a"), None, "A")
    lb, rb = load_launch(write(tmp, b, "b"), None, "B")
    return la, ra, lb, rb


# --- the generator speaks the real wording ------------------------------------------------


@pytest.mark.parametrize("era", ["E2", "E7"])
def test_generated_log_reads_as_its_era(tmp_path: Path, era: str) -> None:
    L, _ = load_launch(write(tmp_path, Model(era=era, ranks=2), "x"), None, "x")
    marks = era_markers(L)
    assert era_guess(marks).startswith(era)
    g = L.ranks[0].graphs[0]
    assert g.largest_size == 80 and len(g.samples) == len(bs_list(80))
    assert L.ranks[1].graphs[0].samples == ()  # other ranks print no bars
    assert marks["capture end fields"].endswith("(E2)" if era == "E2" else "(E7)")
    assert marks["server_args form"] == ("dict" if era == "E7" else "ServerArgs(...)")


# --- least squares ------------------------------------------------------------------------


def test_two_points_are_exact() -> None:
    ln = fit_line([80, 160], [round(0.5 * GIB), round(0.7 * GIB)])
    assert ln.mib_per_row == pytest.approx(0.2 * 1024 / 80)
    assert ln.intercept_gib == pytest.approx(0.3)
    assert ln.mib_per_row_error == pytest.approx(0.02 * 1024 / 80)  # (0.01 + 0.01) GiB / |80|
    assert ln.intercept_error_gib == pytest.approx(0.01 * (80 + 160) / 80)
    assert all(abs(r) < 1e-12 for r in ln.residuals_gib)
    assert ln.stderr_mib_per_row is None


def test_three_points_have_residuals() -> None:
    ln = fit_line([1, 2, 3], [0, round(0.02 * GIB), round(0.01 * GIB)])
    assert ln.mib_per_row == pytest.approx(0.005 * 1024)
    assert [round(r, 6) for r in ln.residuals_gib] == [-0.0, 0.01, -0.005] or sum(
        ln.residuals_gib
    ) == pytest.approx(0)
    assert ln.stderr_mib_per_row is not None


def test_same_rows_cannot_be_fitted() -> None:
    with pytest.raises(FitError, match="same largest size"):
        fit_line([80, 80], [1, 2])


# --- recovery from printed logs (hypothesis) ------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    era=st.sampled_from(["E2", "E7"]),
    bs=st.lists(
        st.sampled_from([8, 16, 24, 48, 80, 128, 160, 256, 512]),
        min_size=2,
        max_size=4,
        unique=True,
    ),
    icpt=st.floats(0.0, 3.0),
    slope=st.floats(0.05, 20.0),
    s_icpt=st.floats(0.0, 0.5),
    s_slope=st.floats(0.0, 1.0),
    tpr=st.sampled_from([1, 1, 4]),
)
@example(era="E2", bs=[80, 160], icpt=0.3, slope=2.5, s_icpt=0.05, s_slope=0.25, tpr=1)
@example(era="E7", bs=[128, 256, 512], icpt=1.2, slope=0.75, s_icpt=0.1, s_slope=0.0, tpr=4)
def test_fit_recovers_slope_and_intercept(
    tmp_path_factory: pytest.TempPathFactory,
    era: str,
    bs: list[int],
    icpt: float,
    slope: float,
    s_icpt: float,
    s_slope: float,
    tpr: int,
) -> None:
    tmp = tmp_path_factory.mktemp("pair")
    base = Model(
        era=era,
        largest_gib=icpt,
        largest_mib_per_row=slope,
        static_gib=s_icpt,
        static_mib_per_row=s_slope,
        tokens_per_req=tpr,
        pre_load_gib=78.0,
        weights_gib=20.0,
    )
    loaded = [
        load_launch(write(tmp, replace(base, max_bs=b, port=30000 + i), f"l{i}"), None, str(i))
        for i, b in enumerate(bs)
    ]
    f = fit([L for L, _ in loaded], [r for _, r in loaded])
    (s,) = f.slopes
    assert s.basis == "largest bucket"
    assert s.rows == tuple(b * tpr for b in bs)
    tol = 1e-9
    assert abs(s.line.mib_per_row - slope) <= s.line.mib_per_row_error + tol
    assert abs(s.line.intercept_gib - icpt) <= s.line.intercept_error_gib + tol
    assert s.static is not None
    assert abs(s.static.mib_per_row - s_slope) <= s.static.mib_per_row_error + tol
    assert abs(s.static.intercept_gib - s_icpt) <= s.static.intercept_error_gib + tol
    if len(bs) == 2:  # two launches: fit gives exactly diff's slope
        (L0, r0), (L1, r1) = loaded
        (ds,) = diff(L0, r0, L1, r1).slopes
        assert ds.line == s.line and ds.static == s.static


# --- diff ---------------------------------------------------------------------------------


def test_diff_of_a_max_bs_pair(tmp_path: Path) -> None:
    a, b = Model(max_bs=80), Model(max_bs=160, port=30001, seed=7)
    d = diff(*pair(tmp_path, a, b))
    assert [c.key for c in d.args.changed] == ["cuda_graph_max_bs"]
    assert d.args.varied == ("cuda_graph_max_bs",)
    assert {c.key for c in d.args.ignored} == {"port", "random_seed"}
    assert not any(m.differs for m in d.markers)
    (s,) = d.slopes
    assert (s.graph, s.rank, s.rows) == ("decode", "TP0", (80, 160))
    assert s.rows_source == RowsSource(RowsBasis.DECODE)
    assert diff_view(d).slopes[0].rows_source == "1 per request (decode)"
    assert s.line.mib_per_row == pytest.approx(2.5, abs=s.line.mib_per_row_error)
    assert s.line.mib_per_row_error == pytest.approx(20.48 / 80)
    # Dated Mar 2025 (era a, a tp_size table): SGLang's graph reserve is not the rule behind its
    # mem_fraction_static, so none is set beside the slope (review24 #6).
    assert s.heuristic is None
    # Graphs: the capture phase grows, the phases before it do not move.
    ch = {(p.rank, p.key): p.change_bytes for p in d.phases}
    assert ch[("TP0", "target_weights")] == 0
    assert ch[("TP0", "capture:decode")] > 0
    g = next(x for x in d.graphs if x.rank == "TP0")
    assert g.a is not None and g.b is not None and (g.a.largest_size, g.b.largest_size) == (80, 160)
    # sizes both captured, largest of A first: bs 80 is A's largest bucket and one of B's small ones
    assert [x.size for x in g.buckets][:3] == [80, 72, 64]
    assert g.buckets[0].a_bytes > 10 * g.buckets[0].b_bytes
    # A began its capture with bs 80, B with 160: not like with like, so no change
    assert g.buckets[0].first_in == "A" and g.buckets[0].change_bytes is None
    assert d.kv is not None and d.kv.change_tokens == 0
    doc = to_json(d)
    assert doc["schema"] == "logmem.diff/1"
    assert doc["changed_args"] == {"cuda_graph_max_bs": [80, 160]}
    sj = doc["slopes"][0]
    assert set(sj) >= {
        "graph",
        "rank",
        "rows",
        "largest_bucket_gib",
        "mib_per_row",
        "intercept_gib",
        "mib_per_row_error",
    }
    assert sj["rows"] == [80, 160] and len(sj["largest_bucket_gib"]) == 2


def test_diff_of_a_pair_that_also_differs_in_mfs_has_no_slope(tmp_path: Path) -> None:
    # B's request pool (160) ends its list at bs 160: mfs may have cut it, so it confounds.
    a, b = Model(max_bs=80), Model(max_bs=160, mfs=0.83, request_pool=160)
    args = pair(tmp_path, a, b)
    refused = diff(*args)
    note = diff_view(refused).slope_note or ""
    assert not refused.slopes and "mem_fraction_static (0.85 vs 0.83)" in note
    assert "--allow-diff" in note
    d = diff(*args, allow=["mem_fraction_static"])
    assert d.slopes and d.args.allowed == ("mem_fraction_static",)
    assert d.kv is not None and d.kv.change_tokens is not None and d.kv.change_tokens < 0
    # --no-slope compares anyway, without a slope
    plain = diff(*args, slope=False)
    assert not plain.slopes and "no-slope" in (diff_view(plain).slope_note or "")


def test_fit_refuses_a_confounded_pair(tmp_path: Path) -> None:
    b = Model(max_bs=160, mfs=0.83, request_pool=160)
    la, ra, lb, rb = pair(tmp_path, Model(max_bs=80), b)
    with pytest.raises(FitError, match="mem_fraction_static"):
        fit([la, lb], [ra, rb])
    assert fit([la, lb], [ra, rb], allow=["mem_fraction_static"]).slopes


def test_kv_terms_account_for_an_mfs_change(tmp_path: Path) -> None:
    d = diff(*pair(tmp_path, Model(mfs=0.85), Model(mfs=0.87)))
    assert (
        d.args.varied == ()
        and not d.slopes
        and d.slope_note == SlopeNotVaried((80, 80), (False, False))
    )
    assert "the same largest batch size 80" in (diff_view(d).slope_note or "")
    assert d.kv is not None
    terms = {t.name: t.tokens for t in d.kv.terms}
    # 21.63 GiB x 0.02 = 0.4326 GiB = about 7,088 tokens of 64 KiB
    assert terms[TermKind.MFS] == pytest.approx(7088, abs=2)
    assert sum(t.tokens for t in d.kv.terms) == d.kv.change_tokens
    assert abs(terms[TermKind.OTHER]) <= 2


def test_kv_terms_are_skipped_when_the_cells_or_the_cap_differ(tmp_path: Path) -> None:
    d = diff(*pair(tmp_path, Model(bytes_per_token=65536), Model(bytes_per_token=131072)))
    assert d.kv is not None and d.kv.terms == ()
    assert d.kv.terms_note is not None and d.kv.terms_note.bytes_per_token == (65536, 131072)
    kv_view = diff_view(d).kv
    assert kv_view is not None and (kv_view.terms_note or "").startswith(
        "No split into the rule's terms: the bytes per token differ (A 65,"
    )
    capped = Model(extra_args={"max_total_tokens": 30000})
    d2 = diff(*pair(tmp_path, Model(), capped))
    assert d2.kv is not None and d2.kv.terms == ()
    kv2 = diff_view(d2).kv
    assert kv2 is not None and "--max-total-tokens differs (not set vs 30,000)" in (
        kv2.terms_note or ""
    )
    text = render_text(d2)
    assert "--max-total-tokens differs" in text and "what accounts for the change" not in text
    same = diff(*pair(tmp_path, Model(), Model(mfs=0.86)))
    assert same.kv is not None and same.kv.terms and same.kv.terms_note is None


def test_diff_says_different_models_first(tmp_path: Path) -> None:
    d = diff(
        *pair(tmp_path, Model(), Model(extra_args={"model_path": "/models/other"})), slope=False
    )
    (h,) = diff_view(d).headlines
    assert h.startswith(
        "Different models: A loads /models/test (Qwen2ForCausalLM), B loads /models/other"
    )
    assert "Both are Qwen2ForCausalLM" in h
    text = render_text(d)
    assert text.index("Different models") < text.index("Settings that differ")
    assert diff(*pair(tmp_path, Model(), Model()), slope=False).headlines == ()


def test_compare_args_keeps_keys_one_launch_lacks_apart(tmp_path: Path) -> None:
    la, _, lb, _ = pair(
        tmp_path,
        Model(extra_args={"quantization": None, "only_a": 1}),
        Model(extra_args={"only_b": None}),
    )
    cmp = compare_args([la, lb], ["A", "B"])
    assert cmp.changed == () and dict(cmp.only_in) == {
        "A": ("quantization", "only_a"),
        "B": ("only_b",),
    }
    assert set(cmp.confounders) == {"quantization", "only_a", "only_b"}


def test_diff_names_different_wording(tmp_path: Path) -> None:
    d = diff(*pair(tmp_path, Model(era="E2"), Model(era="E7")), slope=False)
    differ = {m.name for m in d.markers if m.differs}
    assert {"capture lines", "capture end fields", "server_args form", "KV line"} <= differ
    dv = diff_view(d)
    assert any(h.startswith("Different SGLang wording: A reads as E2") for h in dv.headlines)
    assert not any("wording" in n for n in dv.notes)  # said once, up front
    assert d.eras[0].era is not None and d.eras[0].era.name == "E2"
    assert d.eras[1].era is not None and d.eras[1].era.name == "E7"


def test_non_memory_keys_never_block() -> None:
    for key in ("port", "host", "random_seed", "model_path", "log_level", "api_key"):
        assert memory_neutral_arg(key), key
    assert not memory_neutral_arg("mem_fraction_static")
    assert not memory_neutral_arg("cuda_graph_max_bs")


def test_diff_of_a_log_with_itself_is_all_zero() -> None:
    L, r = load_launch(str(LOG001), None, "A")
    d = diff(L, r, L, replace(r, label="B"))
    assert d.args.changed == () and all(p.change_bytes == 0 for p in d.phases)
    assert len({p.rank for p in d.phases}) == 4
    assert d.kv is not None and d.kv.change_tokens == 0


def test_capture_total_slope_without_bucket_readings(tmp_path: Path) -> None:
    """The real QwQ-32B log has no bar description: a slope falls back to the capture total."""
    text = LOG001.read_text()
    b = tmp_path / "b.log"
    b.write_text(
        text.replace("cuda_graph_max_bs=80", "cuda_graph_max_bs=160").replace(
            "avail mem=0.53 GB. mem usage=0.93 GB.", "avail mem=0.33 GB. mem usage=1.13 GB."
        )
    )
    la, ra = load_launch(str(LOG001), None, "A")
    lb, rb = load_launch(str(b), None, "B")
    d = diff(la, ra, lb, rb)
    (s,) = d.slopes
    assert s.basis == "capture total" and s.rank == "TP0" and s.rows == (80, 160)
    assert s.line.mib_per_row == pytest.approx(0.20 * 1024 / 80, abs=1e-6)


# --- whatif: the worked figures of corpus log 001 ---------------------------------------------


def test_whatif_001_worked_figures() -> None:
    L, r = load_launch(str(LOG001), None, "LOG")
    w = whatif(L, r, mem_fraction_static=0.87)
    assert (w.pre_load_bytes / GIB, w.after_weights_bytes / GIB) == (
        pytest.approx(21.63),
        pytest.approx(6.09),
    )
    assert w.bytes_per_token == 65536
    p = w.predicted
    assert p.rest_bytes / GIB == pytest.approx(6.09 - 21.63 * 0.13, abs=1e-6)  # 3.28
    # The logged pool plus the rule's change in whole cells: 46,611 + (3.28 - 2.85 GiB) // 64 KiB.
    assert w.measured.kv_tokens == 46611
    assert p.kv_tokens == 46611 + (p.rest_bytes - w.measured.rest_bytes) // 65536 == 53698
    assert p.headroom_bytes is not None and round(p.headroom_bytes / GIB, 2) == 0.10
    assert (
        w.measured.headroom_bytes is not None and round(w.measured.headroom_bytes / GIB, 2) == 0.53
    )
    assert w.measured.kv_tokens == 46611
    assert w.window == (0.719, 0.874)
    assert w.lo_context is None and whatif_view(w).full_context.startswith(
        "impossible: it needs 8.00 GiB"
    )
    assert w.feasible
    doc = to_json(w)
    assert doc["schema"] == "logmem.whatif/1"
    assert {k: doc[k] for k in ("kv_tokens", "kv_gib", "headroom_gib", "feasible")} == {
        "kv_tokens": 53698,
        "kv_gib": 3.28,
        "headroom_gib": 0.10,
        "feasible": True,
    }
    assert (
        doc["mem_fraction_static_window"] == [0.719, 0.874] and doc["graph_gib"] == 0.93
    )  # the end line's logged mem usage


def test_whatif_activation_reserve_can_empty_the_window() -> None:
    L, r = load_launch(str(LOG001), None, "LOG")
    w = whatif(L, r, activation_reserve_bytes=round(0.5 * GIB))
    assert w.window is not None and w.window[1] == pytest.approx(0.851)
    empty = whatif(L, r, activation_reserve_bytes=8 * GIB)
    assert empty.window is None and empty.hi is None and not empty.feasible
    assert "EMPTY" in render_text(empty)


def test_whatif_max_bs_uses_a_slope_or_the_labelled_heuristic(tmp_path: Path) -> None:
    la, ra, lb, rb = pair(tmp_path, Model(max_bs=80), Model(max_bs=160))
    (s,) = diff(la, ra, lb, rb).slopes

    gs = slope_from_fit([s], "decode")
    assert gs is not None
    w = whatif(la, ra, cuda_graph_max_bs=160, slope=gs)
    real_b = whatif(lb, rb)
    # Predicted from A with B's slope: B's measured graph memory, within printing error.
    assert w.predicted.graph_bytes is not None and real_b.measured.graph_bytes is not None
    assert abs(w.predicted.graph_bytes - real_b.measured.graph_bytes) <= 0.03 * GIB
    # Without a slope, this launch's bars price the growth: an upper bound that holds B's
    # measured graphs (the largest bucket's fixed part scales with the rows too).
    h = whatif(la, ra, cuda_graph_max_bs=160)
    assert h.slope is not None and isinstance(h.slope.source, BarsSlope)
    assert h.predicted.graph_bytes is not None
    assert h.predicted.graph_bytes + 0.03 * GIB >= real_b.measured.graph_bytes


OOM_DECODE = FIXTURES / "oom-decode-largest-bucket-constructed.log"


def test_whatif_on_a_capture_oom_calls_the_measured_setting_crashed() -> None:
    """mfs 0.97 ran out of memory at the first bucket (bs 256, 0.24 GiB short): the measured
    column is NO, the graphs and headroom are bounds, and the window's top is below 0.97."""
    L, r = load_launch(str(OOM_DECODE), None, "LOG")
    w = whatif(L, r, mem_fraction_static=0.966)
    m, p = w.measured, w.predicted
    wv = whatif_view(w)
    assert m.verdict(0) is False and m.crashed and not m.feasible(0)
    assert wv.measured.feasible_label == "NO (crashed at bs 256)"
    assert not m.headroom_exact and not m.graph_exact
    # Headroom at most the free memory at the OOM minus what was asked: 0.29 - 0.53 = -0.24 GiB.
    assert m.headroom_bytes is not None and round(m.headroom_bytes / GIB, 2) == -0.24
    # Graphs at least capture begin (0.77) - that: 1.01 GiB.
    assert m.graph_bytes is not None and round(m.graph_bytes / GIB, 2) == 1.01
    assert p.verdict(0) is None and wv.predicted.feasible_label is None  # not ruled out, nor proven
    assert w.hi is not None and w.hi < 0.97 and w.hi == 0.966 and not w.hi_exact
    assert w.unfinished is not None and w.unfinished.memory is True
    text = render_text(w)
    assert "NO (crashed at bs 256)" in text and "not ruled out" in text
    assert "<= -0.24" in text and ">= 1.01" in text
    flat = " ".join(text.split())
    assert "the top is at most 0.966, below the 0.970 that ran out of memory at bs 256" in flat
    doc = to_json(w)
    assert doc["measured"]["feasible"] is False and doc["feasible"] is None
    assert doc["window_top_bound"] == "at most" and doc["measured"]["headroom_bound"] == "at most"
    # The crashed setting, or one with more KV, crashes again.
    for mfs in (0.97, 0.98):
        wa = whatif(L, r, mem_fraction_static=mfs)
        again = wa.predicted
        assert again.verdict(0) is False
        assert whatif_view(wa).predicted.feasible_label == "NO (crashed at bs 256)"


def test_whatif_on_a_non_memory_capture_crash_cannot_judge_the_top() -> None:
    from conftest import corpus_log

    L, r = load_launch(str(corpus_log("003-")), None, "LOG")
    w = whatif(L, r)
    wv = whatif_view(w)
    assert w.measured.verdict(0) is None and wv.measured.feasible_label == "unknown (TypeError)"
    assert wv.predicted.feasible_label == "unknown (TypeError)"  # the same setting
    assert not w.hi_exact and w.unfinished is not None and w.unfinished.memory is False
    text = render_text(w)
    assert "[0.320, ?]" in text and "The top cannot be judged for graphs" in " ".join(text.split())
    assert "feasible" in text and "yes" not in text.split("Feasible mem_fraction_static window")[0]


def test_whatif_kv_tokens_do_not_move_with_max_bs() -> None:
    """011: the logged pool (903,439) is the base, so max bs alone leaves it exactly."""
    from conftest import corpus_log

    L, r = load_launch(str(corpus_log("011-")), None, "LOG")
    w = whatif(L, r, cuda_graph_max_bs=320)
    assert w.measured.kv_tokens == w.predicted.kv_tokens == 903439
    assert w.predicted.pool_change_bytes == 0
    sz = build_ledger(L).sizing
    assert sz is not None and w.bytes_per_token == (
        sz.likely_bytes_per_token or round(sz.bytes_per_token or 0)
    )


@settings(max_examples=25, deadline=None)
@given(mfs=st.floats(0.76, 0.95), bpt=st.sampled_from([16384, 65536, 163840]))
def test_whatif_at_the_logged_setting_is_the_logged_pool(
    tmp_path_factory: Any, mfs: float, bpt: int
) -> None:
    path = write(tmp_path_factory.mktemp("w"), Model(mfs=round(mfs, 3), bytes_per_token=bpt), "x")
    L, r = load_launch(path, None, "LOG")
    w = whatif(L, r, cuda_graph_max_bs=40)
    assert w.measured.kv_tokens == w.predicted.kv_tokens == w.logged_tokens


def test_whatif_after_a_warm_up_oom_keeps_the_top_below_the_crashed_value(tmp_path: Path) -> None:
    """Graphs were captured, then warm-up ran out of memory: the figures are exact, the measured
    setting is NO, and every value from it up is ruled out."""
    text = make_log(Model())  # its last line, the ready line, is replaced by the crash
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 540.00 MiB. GPU 0 has a total "
        "capacity of 23.57 GiB of which 298.75 MiB is free."
    )
    p = tmp_path / "warm.log"
    p.write_text(
        text.rstrip("\n").rsplit("\n", 1)[0]
        + "\n[2025-03-08 12:29:05] Scheduler hit an exception: "
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n' + oom + "\n"
    )
    L, r = load_launch(str(p), None, "LOG")
    w = whatif(L, r)
    assert w.unfinished is not None and w.unfinished.memory and not w.unfinished.in_capture
    assert whatif_view(w).measured.feasible_label == "NO (crashed in warm-up)"
    assert w.measured.headroom_exact
    assert w.hi is not None and w.hi < 0.85 and w.hi_exact
    assert "The top is below the 0.850 that ran out of memory in warm-up." in " ".join(
        render_text(w).split()
    )


def test_whatif_refuses_bad_inputs() -> None:
    L, r = load_launch(str(LOG001), None, "LOG")
    with pytest.raises(FitError, match="outside"):
        whatif(L, r, mem_fraction_static=1.5)


def test_every_format_renders(tmp_path: Path) -> None:
    la, ra, lb, rb = pair(tmp_path, Model(max_bs=80), Model(max_bs=160))
    for model in (
        diff(la, ra, lb, rb),
        fit([la, lb], [ra, rb]),
        whatif(la, ra, mem_fraction_static=0.86),
    ):
        text = render_text(model)
        assert max(len(x) for x in text.splitlines()) <= 100
        assert "Assumptions" in text
        md = render_markdown(model)
        assert md.startswith("## logmem ") and "### Assumptions" in md
        json.dumps(to_json(model))


def test_compare_args_lists_absent_keys() -> None:
    L, _ = load_launch(str(LOG001), None, "A")
    cmp = compare_args([L, L], ["A", "B"])
    assert cmp.changed == () and cmp.missing == ()


def test_whatif_graphs_captured_without_memory_are_not_no_capture() -> None:
    """008 captures 23 decode graphs in an era that prints no memory for them: what-if says
    so (their cost unknown), never "captured no CUDA graph". (024, the same era, has no KV
    line, so what-if refuses it before any graph is considered.)"""
    from conftest import corpus_log

    L, r = load_launch(str(corpus_log("008-")), None, "LOG")
    assert any(g.captured_without_memory for rk in L.ranks for g in rk.graphs)
    w = whatif(L, r, mem_fraction_static=0.8)
    text = " ".join(whatif_view(w).notes)
    assert "memory not printed" in text and "captured no CUDA graph" not in text
    with pytest.raises(FitError, match="memory not printed"):
        whatif(L, r, cuda_graph_max_bs=8)
