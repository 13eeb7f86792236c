"""model.inputs groups files by one aggregate per group; the grouping is the pairwise rule's."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from logmem.model.inputs import InputGroup, _apart, _File, group_files

_T0 = datetime(2026, 5, 1, 12, 0, 0)


def _pairwise(files: list[_File]) -> tuple[InputGroup, ...]:
    """The rule as first written: a file is checked against every member of every group."""
    groups: list[list[_File]] = []
    reasons: list[list[object]] = []
    for f in files:
        why: list[object] = []
        for grp in groups:
            found = next((a for a in (_apart(f, g) for g in grp) if a is not None), None)
            if found is None:
                grp.append(f)
                break
            why.append(found)
        else:
            groups.append([f])
            reasons.append(why)
    return tuple(
        InputGroup(tuple(x.path for x in g), tuple(r))  # type: ignore[arg-type]
        for g, r in zip(groups, reasons)
    )


@st.composite
def _file(draw: st.DrawFn, i: int) -> _File:
    args = draw(
        st.none()
        | st.dictionaries(
            st.sampled_from(["tp_size", "mem_fraction_static", "random_seed", "model_path"]),
            st.integers(0, 2),
            max_size=3,
        )
    )
    timed = draw(st.booleans())
    first = _T0 + timedelta(minutes=draw(st.integers(0, 300))) if timed else None
    last = first + timedelta(minutes=draw(st.integers(0, 90))) if first else None
    return _File(
        f"f{i}.log",
        args,
        draw(st.none() | st.booleans()),
        first,
        last,
        draw(st.none() | st.sampled_from(["LlamaForCausalLM", "Qwen3ForCausalLM"])),
        draw(st.none() | st.booleans()),
    )


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(*(_file(i) for i in range(n)))))
def test_grouping_by_aggregates_is_the_pairwise_grouping(files: tuple[_File, ...]) -> None:
    assert group_files(files) == _pairwise(list(files))
