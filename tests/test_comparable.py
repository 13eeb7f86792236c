"""One comparability rule for diff, fit and whatif --slope-from (logmem.compare.comparable):
another model refuses a slope, another GPU / TP / era is said first, and a slope from other
launches carries its printing error into the figures it prices (review 27b, items 2, 2b, 3, 10k)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, mfs_differs_pool_at_top
from logmem import api
from logmem.compare import notes as cn
from logmem.compare.comparable import Aspect, identity, mismatches
from logmem.errors import FitError

E7 = {bs: FIXTURES / f"pair-e7-maxbs{bs}-constructed.log" for bs in (128, 256, 512)}
LOG001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
LOG024 = FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log"


@pytest.fixture()
def llama_256(tmp_path: Path) -> Path:
    """The e7 256 fixture loading another model (the reviewer's /tmp/r27b/e7-256-llama.log)."""
    raw = E7[256].read_bytes()  # bytes: the progress bars' bare \r stay as they are
    raw = raw.replace(b"Qwen/Qwen3-14B", b"meta-llama/Llama-3.1-8B-Instruct")
    raw = raw.replace(b"type=Qwen3ForCausalLM", b"type=LlamaForCausalLM")
    p = tmp_path / "e7-256-llama.log"
    p.write_bytes(raw)
    return p


def test_identity_reads_model_gpu_tp_and_era() -> None:
    a = api.read_log(str(LOG001)).launches[0]
    i = identity(a)
    assert (i.model_type, i.model_line, i.tp_size, i.era) == ("Qwen2ForCausalLM", 53, 4, "E2")
    assert i.free_line == 26 and i.free_before_load_bytes is not None
    same = mismatches(a, a)
    assert same == ()


def test_fit_and_plot_refuse_two_models(llama_256: Path) -> None:
    with pytest.raises(FitError) as e:
        api.fit(str(E7[128]), str(llama_256))
    msg = " ".join(str(e.value).split())
    assert "the launches load different models" in msg
    assert "Qwen3ForCausalLM (Qwen/Qwen3-14B, line 7)" in msg
    assert "LlamaForCausalLM (meta-llama/Llama-3.1-8B-Instruct, line 7)" in msg
    with pytest.raises(FitError):
        api.plot_svg(api.fit(str(E7[128]), str(llama_256)))  # type: ignore[arg-type]
    # --allow-diff model_path is the override.
    fit = api.fit(str(E7[128]), str(llama_256), allow=("model_path",))
    assert fit.model.slopes  # type: ignore[union-attr]
    # diff on the same pair gives no slope either, for the same reason.
    d = api.diff(str(E7[128]), str(llama_256)).model
    assert isinstance(d.slope_note, cn.SlopeAcrossModels)  # type: ignore[union-attr]


def test_fit_refusal_names_the_model_and_tp_first_and_no_max_bs_hint_in_a_tp_table_era() -> None:
    with pytest.raises(FitError) as e:
        api.fit(str(LOG001), str(LOG024))
    msg = " ".join(str(e.value).split())
    assert "derives its default mem_fraction_static from cuda_graph_max_bs" not in msg
    assert msg.index("different models") < msg.index("tp_size (4 vs 1)")
    assert msg.index("tp_size (4 vs 1)") < msg.index("trust_remote_code")


def test_mfs_hint_only_when_it_is_the_one_confounder_of_a_reserve_era(tmp_path: Path) -> None:
    cut = str(mfs_differs_pool_at_top(tmp_path))  # a request pool at its largest bs: confounds
    with pytest.raises(FitError) as e:
        api.fit(str(E7[128]), cut)
    assert "SGLang derives its default mem_fraction_static from cuda_graph_max_bs" in str(e.value)
    d = api.diff(str(E7[128]), cut)
    note = d.model.slope_note  # type: ignore[union-attr]
    assert isinstance(note, cn.SlopeConfounded) and note.mfs_hint


def test_slope_from_another_model_is_refused_and_named_first_when_allowed() -> None:
    pair = (str(E7[128]), str(E7[256]))
    with pytest.raises(FitError) as e:
        api.whatif(str(LOG001), cuda_graph_max_bs=40, slope_from=pair)
    assert "--slope-from A loads Qwen3ForCausalLM" in " ".join(str(e.value).split())
    w = api.whatif(str(LOG001), cuda_graph_max_bs=40, slope_from=pair, allow=("model_path",))
    first = w.model.notes[0]  # type: ignore[union-attr]
    assert isinstance(first, cn.SlopeFromOtherLaunches)
    assert [m.aspect for m in first.mismatches] == [Aspect.MODEL, Aspect.GPU, Aspect.TP, Aspect.ERA]
    doc = w.to_json()
    assert doc["predicted"]["graph_bound"] == "estimated"
    assert doc["predicted"]["headroom_bound"] == "estimated"
    text = " ".join(w.render().split())
    raw = w.render()
    assert raw.index("The graph slope comes from other") < raw.index("\nAssumptions\n")
    assert "measured on --slope-from A and B" in text and "the GPU of A" in text


def test_a_slopes_error_is_carried_into_graphs_and_headroom() -> None:
    w = api.whatif(str(E7[512]), cuda_graph_max_bs=1024, slope_from=(str(E7[128]), str(E7[256])))
    p = w.to_json()["predicted"]
    # +-0.160 MiB per row for the largest bucket and +-0.160 for the static buffers, over 512
    # more rows: +-0.16 GiB (extrapolated to 4x the fitted range).
    assert p["graph_error_gib"] == pytest.approx(0.16, abs=0.005)
    assert p["graph_bound"] == "estimated"
    # 5.75 from the slope, + the 15 buckets the list adds below 1024 (544-992) and the launch's
    # own top (512), which becomes a later bucket: 16 x 0.02 GiB at the launch's later buckets'
    # average (review 28; the old top was missed before).
    assert "6.06 +- 0.16" in w.render()
    # One model, one GPU, one era: nothing to say first.
    assert not any(isinstance(n, cn.SlopeFromOtherLaunches) for n in w.model.notes)  # type: ignore[union-attr]


def test_diff_without_server_args_on_one_side_still_compares_the_printed_pools() -> None:
    """014 prints no server_args (a paste that starts after it), 017 does: tokens and bytes per
    token are printed on both sides, and the free memory before loading is 7.7x apart (#6)."""
    a = FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log"
    b = FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log"
    d = api.diff(str(a), str(b))
    kv = d.model.kv  # type: ignore[union-attr]
    assert kv is not None and kv.tokens == (327310, 992896)
    assert kv.bytes_per_token == (16384, 147456) and kv.terms == ()
    assert kv.mem_fraction_static[0] is None and kv.terms_note.no_args == (
        ("A", False, ("mem_fraction_static",)),
        ("B", True, ("mem_fraction_static",)),
    )  # 017: a cut dump, whose readings are there
    text = " ".join(d.render().split())
    assert "KV cache: 327,310 -> 992,896 tokens" in text
    assert (
        "No split into the rule's terms: A printed no server_args, so no mem_fraction_static"
        in text
    )
    assert (
        "Different free memory before loading: A had 22.93 GiB free before loading (line 37), "
        "B 177.57 GiB (line 10)" in text
    )
    doc = d.to_json()
    assert doc["kv"]["tokens"] == [327310, 992896] and doc["kv"]["mem_fraction_static"][0] is None


def test_a_dict_setting_shows_the_sub_key_that_differs_not_a_shared_prefix() -> None:
    """cuda_graph_config's values share '{"decode": {"backend": "full", ...': the table shows
    decode.max_bs, which differs, and no row wraps into the next column (#10g)."""
    text = api.fit(*(str(E7[bs]) for bs in (128, 256, 512))).render()
    row = next(ln for ln in text.splitlines() if ln.startswith("cuda_graph_config"))
    assert "decode.max_bs 128, ... | decode.max_bs 256, ... | decode.max_bs 512, ..." in row
    assert '{"decode"' not in text


def test_a_largest_size_taken_from_max_bs_is_marked() -> None:
    """024 prints no bs list and no bars: diff's 160 is cuda_graph_max_bs, and says so, as
    analyze leaves it unknown (#10h)."""
    d = api.diff(str(LOG001), str(LOG024))
    text = d.render()
    row = next(ln for ln in text.splitlines() if "largest size" in ln and ln.startswith("TP0"))
    assert row.split()[-2:] == ["(max", "bs)"] and "160 (max bs)" in row
    assert "its largest size is taken as server_args' cuda_graph_max_bs" in " ".join(text.split())
    g = d.to_json()["graphs"][0]
    assert g["b"]["largest_size"] == 160 and g["b"]["largest_size_source"] == "cuda_graph_max_bs"
    assert g["a"]["largest_size_source"] is None  # 001's TP0 prints its bars
