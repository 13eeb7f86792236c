"""Review 26's diff / fit items: #4 (weights not initialized from the checkpoint, named in
diff), #5 (the same mem_fraction_static at several max bs on one GPU cannot all be SGLang's
default; the heuristic is what that default would reserve), #7c (the buckets sentence names
its tolerance) and #7d (fit's hint with more than two launches)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, corpus_log, mfs_differs_pool_at_top
from logmem import api
from logmem.compare import notes as cn
from logmem.compare.diff import Diff
from logmem.compare.diff_mfs import most_on_one_gpu
from logmem.compare.slope import Fit
from logmem.errors import FitError
from logmem.report.compare.layout import bucket_summary

E7 = {n: str(FIXTURES / f"pair-e7-maxbs{n}-constructed.log") for n in ("128", "256", "512")}
E7_MFS_DIFFERS = str(FIXTURES / "pair-e7-maxbs256-mfs-differs-constructed.log")
E2 = [str(FIXTURES / f"pair-e2-maxbs{n}-constructed.log") for n in ("80", "160")]


def flat(text: str) -> str:
    """The report as one line: wrapping does not split the phrases asserted on."""
    return " ".join(text.split())


# --- #4: weights not initialized from the checkpoint --------------------------------------


def test_diff_names_the_side_whose_weights_the_checkpoint_did_not_fill() -> None:
    a, b = str(corpus_log("005-")), str(corpus_log("006-"))
    d = api.diff(a, b)
    assert isinstance(d.model, Diff)
    (u,) = [h for h in d.model.headlines if isinstance(h, cn.WeightsUninitializedIn)]
    # 006 l.48 (TP0): 30 w13_weight + 30 w2_weight, layers 0-29, all MoE experts.
    assert (u.side, u.rank, u.line, u.names, u.experts, u.models_differ) == (
        "B",
        "TP0",
        48,
        60,
        True,
        True,
    )
    text = flat(d.render())
    assert (
        "B line 48 (TP0; also TP1 at line 43): 60 MoE expert weights were not initialized from the checkpoint"
        in text
    )
    assert "B's weights figure is not a working model's" in text
    assert "so the weights change is not the models' difference" in text
    # It comes right after the 'Different models' paragraph, before the tables.
    assert text.index("Different models") < text.index("B line 48") < text.index("Settings")
    swapped = flat(api.diff(b, a).render("markdown"))
    assert (
        "A line 48 (TP0; also TP1 at line 43): 60 MoE expert weights were not initialized"
        in swapped
    )
    assert "B line 48" not in swapped
    assert "A line 48 (TP0; also TP1 at line 43): 60 MoE expert weights" in " ".join(
        api.diff(b, a).to_json()["headlines"]
    )


def test_diff_without_unfilled_weights_says_nothing_of_them() -> None:
    d = api.diff(str(corpus_log("005-")), str(corpus_log("001-")))
    assert isinstance(d.model, Diff)
    assert not any(isinstance(h, cn.WeightsUninitializedIn) for h in d.model.headlines)
    assert "not initialized" not in d.render()


# --- #5: values that cannot all be SGLang's default ---------------------------------------


def test_most_launches_one_gpu_size_serves() -> None:
    assert most_on_one_gpu([((1, 5),), ((6, 9),)]) == 1
    assert most_on_one_gpu([((1, 5),), ((5, 9),)]) == 2  # inclusive: 5 is in both
    assert most_on_one_gpu([((1, 5),), ((3, 9),), ((4, 4),)]) == 3
    assert most_on_one_gpu([((1, 2), (10, 12)), ((11, 11),), ((3, 4),)]) == 2
    # The pair-e7 fixtures' windows (analyze's 'default mfs rule' rows): disjoint.
    assert most_on_one_gpu([((87602, 88187),), ((89303, 89899),), ((92705, 93324),)]) == 1


def _mixed(notes: tuple[cn.Note, ...]) -> cn.MfsNotAllDerived | None:
    found = [n for n in notes if isinstance(n, cn.MfsNotAllDerived)]
    assert len(found) <= 1
    return found[0] if found else None


def test_diff_says_at_least_one_passed_the_same_mfs_at_another_max_bs() -> None:
    d = api.diff(E7["128"], E7["256"])
    assert isinstance(d.model, Diff)
    n = _mixed(d.model.notes)
    assert n is not None
    assert (n.labels, n.mfs, n.max_bs, n.derivable) == (("A", "B"), (0.85, 0.85), (128, 256), 1)
    assert n.windows == (((87602, 88187),), ((89303, 89899),))
    assert n.graph_reserve_mib == (256.0, 512.0)
    text = flat(d.render())
    assert (
        "A and B print the same mem_fraction_static 0.85 at cuda_graph_max_bs 128 and 256" in text
    )
    assert "same free memory before loading (78.48 GiB" in text
    assert "would reserve 256 and 512 MiB for their graphs" in text
    assert "(A: 87,602-88,187 MiB; B: 89,303-89,899 MiB)" in text
    assert "at most one of them derived it; at least one passed it" in text
    # The heuristic stays, worded as what SGLang's default would reserve, not as their rule.
    assert (
        "What SGLang's default mem_fraction_static would reserve: 2 MiB per unit of max bs" in text
    )
    assert "at max bs 128 it would set aside 256 MiB, the capture used 2,007" in text
    assert "SGLang's heuristic reserves" not in text
    assert "the launches' default-mfs rule" not in text
    assert "not a finding that these launches' values came from it" in text


def test_fit_of_three_says_at_least_two_passed() -> None:
    f = api.fit(E7["128"], E7["256"], E7["512"])
    assert isinstance(f.model, Fit)
    n = _mixed(f.model.notes)
    assert n is not None and n.labels == ("1", "2", "3") and n.derivable == 1
    text = flat(f.render())
    assert "Launches 1, 2 and 3 print the same mem_fraction_static 0.85" in text
    assert "at cuda_graph_max_bs 128, 256 and 512" in text
    assert "would reserve 256, 512 and 1,024 MiB for their graphs" in text
    assert "launch 3: 92,705-93,324 MiB" in text
    assert "at most one of them derived it; at least two passed it" in text
    # The 0.83 launch: analyze already excludes the formula there, so it is not counted.
    allowed = api.fit(*E7.values(), E7_MFS_DIFFERS, allow=["mem_fraction_static"])
    assert isinstance(allowed.model, Fit)
    m = _mixed(allowed.model.notes)
    assert m is not None and m.labels == ("1", "2", "3") and m.derivable == 1


@pytest.mark.parametrize(
    "pair",
    [
        (E7["256"], E7_MFS_DIFFERS),  # one undecided launch: nothing the pair adds
        tuple(E2),  # era a: a tp_size table, no reserve
    ],
)
def test_no_note_where_the_pair_tells_nothing_more(pair: tuple[str, str]) -> None:
    d = api.diff(*pair, allow=["mem_fraction_static"])
    assert isinstance(d.model, Diff)
    assert _mixed(d.model.notes) is None
    assert "derived it" not in d.render()


# --- #7c: the buckets sentence names its tolerance ----------------------------------------


def test_bucket_summary_names_what_it_is() -> None:
    tol = "the +-0.02 GiB that printing allows"
    assert bucket_summary(36, 0, 0, 0.02) == f"All 36 comparable sizes are within {tol}"
    assert bucket_summary(1, 0, 0, 0.02) == f"The one comparable size is within {tol}"
    assert bucket_summary(12, 0, 1, 0.02) == (
        f"Listed: 1 size with no comparable change; all 12 comparable sizes are within {tol}"
    )
    assert bucket_summary(1, 1, 0, 0.02) == (
        f"Listed: the one comparable size, with a change beyond {tol}"
    )
    assert bucket_summary(10, 3, 0, 0.02) == (
        f"Listed: 3 sizes whose change is beyond {tol}; the other 7 of 10 comparable sizes are "
        "within +-0.02 GiB"
    )
    for args in [(36, 0, 0), (1, 0, 0), (12, 0, 1), (1, 1, 0), (10, 3, 0), (5, 5, 2)]:
        assert not re.search(r"\bit\b", bucket_summary(*args, 0.02)), args


def test_diff_buckets_sentence_in_the_report() -> None:
    text = flat(api.diff(str(corpus_log("014-")), str(corpus_log("017-"))).render())
    assert "The one comparable size is within the +-0.02 GiB that printing allows" in text
    assert "comparable sizes are within it" not in text
    text = flat(api.diff(E7["256"], E7_MFS_DIFFERS).render())
    assert "All 36 comparable sizes are within the +-0.02 GiB that printing allows" in text


# --- #7d: fit's hint names every launch ---------------------------------------------------


def test_fit_hint_counts_the_launches(tmp_path: Path) -> None:
    cut = str(mfs_differs_pool_at_top(tmp_path))  # a request pool at its largest bs: confounds
    with pytest.raises(FitError) as four:
        api.fit(*E7.values(), cut)
    assert "pass --mem-fraction-static explicitly to every launch" in str(four.value)
    assert "both" not in str(four.value)
    with pytest.raises(FitError) as two:
        api.fit(E7["128"], cut)
    assert "pass --mem-fraction-static explicitly to both launches" in str(two.value)
