"""HTML and Markdown for many ranks: the binding rank, the bar rank and the ranks whose readings differ in
full, the others folded into rows of the ranks table (issue 15 item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import logmem
from conftest import bench_module
from logmem.report.fold import MANY_RANKS, MAX_OUTLIERS
from logmem.report.html import render


def _log(tmp_path: Path, n: int, odd: dict[int, str]) -> Path:
    """An n-rank start-up (the fixture's TP4 one, widened); rank i of `odd` starts loading
    with `odd[i]` GiB free instead of 21.63."""
    lines = []
    for line in bench_module("gen").ranks_startup(n):
        m = re.match(rb"\[[^\]]* TP(\d+)\] Load weight begin\. avail mem=21\.63 GB", line)
        if m and int(m.group(1)) in odd:
            line = line.replace(b"21.63", odd[int(m.group(1))].encode())
        lines.append(line)
    path = tmp_path / "many.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _ledger_titles(page: str) -> list[str]:
    return re.findall(r"Ledger of (TP\d+) \(GiB\)", page)


def test_few_ranks_keep_a_ledger_each(tmp_path: Path) -> None:
    page = render(logmem.read_log(str(_log(tmp_path, MANY_RANKS, {}))))
    assert len(_ledger_titles(page)) == MANY_RANKS
    assert "this report shows" not in page


def test_many_ranks_show_the_binding_the_bar_rank_and_the_odd_ones(tmp_path: Path) -> None:
    a = logmem.read_log(str(_log(tmp_path, 40, {5: "19.63", 17: "20.63"})))
    page = render(a)
    # TP0 prints the bars (and what 37 others print); TP5 has the least free memory (the
    # binding rank); TP17 differs too.
    assert _ledger_titles(page) == ["TP0", "TP5", "TP17"]
    assert "TP1, TP2, TP3, ... TP39 (37 ranks)" in page
    assert (
        "Of the 40 ranks, this report shows 3 ranks in full (TP0, TP5, TP17): the binding"
        " rank, the rank that prints the bars and the ranks whose readings differ from the"
        " others. 37 print exactly the readings of TP0 and share a row" in page
    )
    assert "on 3 of the 40 ranks" in page
    src = page[page.index("Figure 3 (ranks)") :]
    src = src[: src.index("</details>")]
    assert {int(x) for x in re.findall(r"TP(\d+)\]", src)} == {0, 5, 17}


def test_many_different_ranks_show_at_most_the_cap(tmp_path: Path) -> None:
    odd = {i: f"{20 - i / 100:.2f}" for i in range(1, 30)}
    page = render(logmem.read_log(str(_log(tmp_path, 40, odd))))
    titles = _ledger_titles(page)
    # TP0 (bars, and the readings of TP30-TP39), the first MAX_OUTLIERS odd ranks and the
    # binding rank TP29 (least free memory).
    assert titles == ["TP0", *(f"TP{i}" for i in range(1, MAX_OUTLIERS + 1)), "TP29"]
    more = 29 - MAX_OUTLIERS - 1
    assert f" {more} more print readings of their own" in page
    assert page.count(" (1 rank)") == more


def test_markdown_and_text_fold_many_ranks_as_html_does(tmp_path: Path) -> None:
    # A ticket of 40 near-identical ledgers is unreadable: Markdown shows the ranks HTML shows
    # (report.fold), text still names how many ledgers it leaves out.
    from logmem.report import render as render_as

    a = logmem.read_log(str(_log(tmp_path, 40, {5: "19.63", 17: "20.63"})))
    md = render_as(a, "markdown")
    assert re.findall(r"Ledger of (TP\d+) \(GiB\)", md) == ["TP0", "TP5", "TP17"]
    assert "TP1, TP2, TP3, ... TP39 (37 ranks)" in md and "Of the 40 ranks" in md
    text = render_as(a, "text")
    assert "(The ledgers of 39 more ranks: pick one with --rank" in text
    one = render_as(logmem.analyze(str(_log(tmp_path, 40, {})), ranks=("TP7",)), "markdown")
    assert "Of the 40 ranks" not in one  # the ranks the user picked are shown in full
