"""SGLang's "Some weights are not initialized from checkpoints: [...]" (review25 #3): parsed into
counts (never the whole list), carried by the model that was loading, a finding beside the
weights and a caveat on the verdict. Expected figures come from the log text, never from logmem.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.analysis.failures import verdict
from logmem.analysis.weights_loaded import WeightsNotLoaded
from logmem.api import read_log
from logmem.parse import events as ev
from logmem.parse.lines import MAX_SOURCE_CHARS, split_records
from logmem.parse.match import match_record
from logmem.parse.read import Segment
from logmem.parse.uninitialized import MAX_KINDS
from logmem.report.sentences import finding_text
from logmem.report.verdict import verdict_lines

HEAD = "[2026-05-25 17:26:52 TP0] Some weights are not initialized from checkpoints: "


def event(line: str) -> ev.Event:
    *_, record = split_records(Segment("t.log", 3, line.encode()))
    hit = match_record(record)
    assert hit is not None, f"no pattern matches {line[:200]!r}"
    return hit[1]


def raw_lines(path: Path) -> list[str]:
    return path.read_bytes().decode().split("\n")


def test_corpus_006_line_48_is_counted_from_its_own_names() -> None:
    path = corpus_log("006-")
    line = raw_lines(path)[47]
    names = re.findall(r"'([^']+)'", line.split("checkpoints: ", 1)[1])
    layers = {int(re.search(r"layers\.(\d+)\.", n).group(1)) for n in names}  # type: ignore[union-attr]
    (L,) = read_log(str(path)).launches
    tp0, tp1 = L.rank("TP0"), L.rank("TP1")
    assert tp0 is not None and tp1 is not None and tp0.target and tp1.target
    u = tp0.target.uninitialized
    assert u is not None and u.source.line_no == 48
    # TP1's list is glued after a tqdm render on line 43: still its own rank's.
    assert tp1.target.uninitialized is not None
    assert tp1.target.uninitialized.source.line_no == 43
    assert u.names == len(names) == 60 and u.complete
    assert u.experts == sum(".experts." in n for n in names) == 60
    assert (u.layers, u.layer_min, u.layer_max) == (len(layers), min(layers), max(layers))
    assert dict(u.kinds) == {
        "language_model.layers.*.moe.experts.w13_weight": 30,
        "language_model.layers.*.moe.experts.w2_weight": 30,
    }
    assert u.other_kinds == 0


def test_corpus_006_finding_and_verdict_caveat() -> None:
    (L,) = read_log(str(corpus_log("006-"))).launches
    found = [f for f in build_ledger(L).findings if isinstance(f, WeightsNotLoaded)]
    assert len(found) == 1
    f = found[0]
    assert (f.rank, f.role, f.line, f.other_ranks) == ("TP0", "target", 48, (("TP1", 43),))
    # Line 51: "quant=awq, bits=4, avail mem=7.36 GB, mem usage=24.13 GB"; server_args awq.
    assert f.usage_bytes == round(24.13 * (1 << 30)) and f.weights_line == 51
    assert f.quant == (("quant", "awq"), ("bits", "4")) and f.quantization == "awq"
    text = finding_text(f)
    assert text.startswith("Line 48 (TP0; also TP1 at line 43): 60 weights were not initialized")
    assert "in layers 0-29" in text and "all are MoE expert weights" in text
    assert "runs with them uninitialised" in text
    assert "24.13 GiB per rank on TP0 (quant=awq, bits=4; server_args quantization='awq')" in text
    # The names are the unquantised FusedMoE method's (w13_weight, w2_weight): quantization='awq'
    # gave the MoE layers no method (awq.py), so they are allocated in the model dtype; no
    # expected size is stated (the log has no parameter count): no "BF16 size", no ratio.
    assert f.unquantized_experts and f.moe_method == "moe_wna16"
    assert "unquantised experts' (w13_weight, w2_weight" in text
    assert "allocated in the model's dtype" in text and "--quantization moe_wna16" in text
    assert "BF16" not in text and " x " not in text
    lines = verdict_lines(verdict(L))
    assert lines[0] == "Ready: start-up finished on 2 ranks."
    assert lines[1].startswith("Caveat: start-up finished, but line 48 lists 60 weights (all MoE")


def test_no_line_no_finding_no_caveat() -> None:
    (L,) = read_log(str(corpus_log("001-"))).launches
    assert not any(isinstance(f, WeightsNotLoaded) for f in build_ledger(L).findings)
    assert not any(x.startswith("Caveat") for x in verdict_lines(verdict(L)))
    assert all(m.uninitialized is None for r in L.ranks for m in r.models)


def test_a_very_long_list_is_counted_and_not_kept() -> None:
    layers, per_layer = 2000, 100  # 200,000 names, ~9 MB would be too long: ~3.6 MB here
    names = [f"'model.layers.{i}.mlp.experts.{j}.w'" for i in range(layers) for j in range(7)]
    names += [f"'model.layers.{i}.extra{j}'" for i in range(layers) for j in range(per_layer // 10)]
    line = HEAD + "[" + ", ".join(names) + "]"
    assert len(line) < 4 << 20
    e = event(line)
    assert isinstance(e, ev.WeightsUninitialized)
    assert e.names == len(names) and e.complete
    assert e.layers == layers and (e.layer_min, e.layer_max) == (0, layers - 1)
    assert len(e.kinds) == MAX_KINDS and e.other_kinds == 7 + per_layer // 10 - MAX_KINDS
    assert sum(n for _, n in e.kinds) == MAX_KINDS * layers
    assert e.experts == 7 * layers
    assert len(e.source.text) < MAX_SOURCE_CHARS + 100  # an excerpt, not the list


def test_a_cut_list_says_at_least() -> None:
    line = HEAD + "['model.layers.0.mlp.w1', 'model.layers.1.mlp.w1', 'model.lay"
    e = event(line)
    assert isinstance(e, ev.WeightsUninitialized)
    assert (e.names, e.complete) == (2, False)
    f = WeightsNotLoaded("", "target", e, (), 1, None, None, None, (), None)
    text = finding_text(f)
    assert "at least 2 weights (the line is cut)" in text
    assert "GiB" not in text  # no Load weight end: no size sentence


def test_quantised_names_or_an_unquantised_launch_are_not_called_unquantised_experts() -> None:
    from logmem.sglang.quant import experts_unquantized

    kinds = ["model.layers.*.mlp.experts.w13_weight", "model.layers.*.mlp.experts.w2_weight"]
    assert experts_unquantized(kinds, "awq")
    assert not experts_unquantized(kinds, None)  # a bf16 launch: these are its real names
    assert not experts_unquantized(["model.layers.*.mlp.experts.w13_qweight"], "awq")
    assert not experts_unquantized(kinds + ["model.layers.*.self_attn.q_proj.weight"], "awq")
    assert not experts_unquantized([], "awq")
