"""SGLang's capture lists: the largest size of N buckets, only when every rule that applies agrees."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from logmem.sglang.capture_lists import RULES, ListContext, largest_from_count

NEW = (2026, 4)  # only the lists since Oct 2025 apply
OLD = (2025, 3)  # only the 2025 lists apply


def test_the_52_entry_list_ends_at_512() -> None:
    """Reference 12.4 / 18.2: the familiar 52-entry list since late 2025 ends at 512."""
    assert largest_from_count(52, "bs", ListContext(month=NEW)) == (
        512,
        "SGLang's list since Oct 2025",
    )


def test_the_era_decides_when_the_lists_disagree() -> None:
    # 13 buckets: [1, 2, 4, 8, 16, ..., 80] in 2025 (corpus 001), [1, 2, 4, 8, 12, ..., 72] later.
    assert largest_from_count(13, "bs", ListContext(month=OLD)) == (80, "SGLang's 2025 list")
    assert largest_from_count(13, "bs", ListContext(month=NEW)) == (
        72,
        "SGLang's list since Oct 2025",
    )
    assert largest_from_count(13, "bs", ListContext()) is None  # no date: they disagree


def test_lists_agree_on_their_common_start() -> None:
    assert largest_from_count(4, "bs", ListContext()) == (
        8,
        "SGLang's lists (all 4 that apply agree)",
    )


def test_a_bar_reading_rules_out_lists_it_contradicts() -> None:
    # bucket 8 of 20 is bs 64 only in the list since Oct 2025 (the 2025 list has 96 there).
    assert largest_from_count(20, "bs", ListContext(), ((8, 64),)) == (
        128,
        "SGLang's list since Oct 2025",
    )
    assert largest_from_count(20, "bs", ListContext(month=NEW), ((8, 96),)) is None


def test_settings_pick_the_speculative_and_the_no_padding_list() -> None:
    spec = ListContext(month=NEW, speculative=True)
    assert largest_from_count(8, "bs", spec) == (8, "SGLang's speculative list since Oct 2025")
    assert largest_from_count(8, "bs", ListContext(month=NEW, draft_loaded=True))[0] == 8  # type: ignore[index]
    nopad = ListContext(month=NEW, no_padding=True)
    assert largest_from_count(40, "bs", nopad) == (40, "SGLang's no-padding list since Oct 2025")


def test_the_request_pool_and_max_bs_bound_the_answer() -> None:
    # SGLang clamps the list to the request pool (62 requests: ..., 56, 62).
    assert largest_from_count(12, "bs", ListContext(month=NEW, request_pool=62)) == (
        62,
        "SGLang's list since Oct 2025",
    )
    assert largest_from_count(13, "bs", ListContext(month=OLD, max_bs=64)) is None


def test_the_2024_list_stops_at_160() -> None:
    assert largest_from_count(23, "bs", ListContext(month=(2024, 10)))[0] == 160  # type: ignore[index]
    assert largest_from_count(24, "bs", ListContext(month=(2024, 10))) is None


def test_token_lists() -> None:
    # 58 entries: 4096 (Oct 2025 list) and 8192 (later list) -> undecided without a date.
    assert largest_from_count(58, "tokens", ListContext(month=(2026, 8)))[0] == 8192  # type: ignore[index]
    assert largest_from_count(58, "tokens", ListContext(month=(2025, 11)))[0] == 4096  # type: ignore[index]
    assert largest_from_count(58, "tokens", ListContext()) is None


@given(
    rule=st.sampled_from([r for r in RULES if r.variant == "default" and r.family == "bs"]),
    data=st.data(),
)
def test_any_prefix_of_a_rules_list_gives_its_last_entry(rule: object, data: st.DataObject) -> None:
    """For a date only this rule covers, N buckets are the rule's first N sizes, and bar
    readings taken from that list never change the answer."""
    from logmem.sglang.capture_lists import ListRule

    assert isinstance(rule, ListRule)
    month = rule.until or rule.since  # inside its window, outside every other default list
    full = rule.sizes()
    n = data.draw(st.integers(1, min(len(full), rule.max_len or 200)))
    picks = data.draw(st.lists(st.integers(0, n - 1), max_size=4))
    seen = tuple((i, full[n - 1 - i]) for i in picks)
    got = largest_from_count(n, "bs", ListContext(month=month), seen)
    assert got is not None and got[0] == full[n - 1]


# --- checked against the released wheels (docs/sglang-sources.md) -----------------------------


def test_jun_sep_2025_speculative_and_no_padding_lists() -> None:
    """0.4.7 - 0.5.2 (srt/model_executor/cuda_graph_runner.py, get_batch_sizes_to_capture):
    speculative range(1, 9) + range(10, 33, 2) + range(40, 64, 8) + range(80, 161, 16) and no
    padding range(1, 33) + range(48, 161, 16); 0.4.5 - 0.4.6.post5 had 40-160 by 16."""
    spec = ListContext(month=(2025, 8), speculative=True)
    assert largest_from_count(23, "bs", spec) == (56, "SGLang's Jun-Sep 2025 speculative list")
    assert largest_from_count(24, "bs", spec)[0] == 80  # type: ignore[index]
    assert largest_from_count(23, "bs", ListContext(month=(2025, 5), speculative=True))[0] == 72  # type: ignore[index]
    nopad = ListContext(month=(2025, 8), no_padding=True)
    assert largest_from_count(33, "bs", nopad)[0] == 48  # type: ignore[index]
    assert largest_from_count(33, "bs", ListContext(month=(2025, 5), no_padding=True))[0] == 40  # type: ignore[index]
    # 0.3.6 - 0.4.0: range(1, 32) + [64, 128]; 0.4.3: range(1, 33) + [64, 96, 128, 160].
    assert largest_from_count(33, "bs", ListContext(month=(2024, 11), no_padding=True))[0] == 128  # type: ignore[index]
    assert largest_from_count(34, "bs", ListContext(month=(2025, 2), no_padding=True))[0] == 96  # type: ignore[index]


def test_the_largest_gpus_part_of_mid_2025() -> None:
    """0.4.8 - 0.5.2 add range(256, 513, 16) over 160,000 MiB (B200, MI300X): 36 buckets end at
    272, which no other list of the time has."""
    assert largest_from_count(36, "bs", ListContext(month=(2025, 8)))[0] == 272  # type: ignore[index]
    assert largest_from_count(51, "bs", ListContext(month=(2025, 8)))[0] == 512  # type: ignore[index]
    assert largest_from_count(36, "bs", ListContext(month=(2025, 3))) is None


def test_oct_2025_speculative_list_lacks_64() -> None:
    """0.5.3 - 0.5.4 generate range(40, 64, 4) (no 64); 0.5.5 (2025-11-06) on range(40, 65, 4)."""
    assert largest_from_count(27, "bs", ListContext(month=(2025, 10), speculative=True))[0] == 72  # type: ignore[index]
    assert largest_from_count(27, "bs", ListContext(month=(2025, 12), speculative=True))[0] == 64  # type: ignore[index]
    assert largest_from_count(27, "bs", ListContext(month=(2025, 11), speculative=True)) is None


def test_max_bs_is_appended_from_0_5_10() -> None:
    """0.5.10 on: ``if max_bs not in capture_bs: capture_bs.append(max_bs)``: max bs 300 captures
    39 sizes ending at 300; before, 38 ending at 288."""
    assert largest_from_count(39, "bs", ListContext(month=(2026, 6), max_bs=300))[0] == 300  # type: ignore[index]
    assert largest_from_count(38, "bs", ListContext(month=(2025, 12), max_bs=300))[0] == 288  # type: ignore[index]
    assert largest_from_count(39, "bs", ListContext(month=(2025, 12), max_bs=300)) is None


def test_the_dumps_own_list_is_the_one_captured() -> None:
    """A dump that prints cuda_graph_bs (the user's, or generated from 0.5.3) gives the list; the
    runner clamps it to the request pool."""
    ctx = ListContext.from_args(
        {"cuda_graph_bs": [1, 2, 4, 8, 16, 32], "cuda_graph_max_bs": 32}, None
    )
    assert ctx.dumped_list == (1, 2, 4, 8, 16, 32)
    assert largest_from_count(6, "bs", ctx) == (32, "the dump's cuda_graph_bs")
    assert (
        largest_from_count(5, "bs", ListContext(dumped_list=(1, 2, 4, 8, 16, 32), request_pool=10))[
            0
        ]
        == 10
    )  # type: ignore[index]
