"""Plain-text tables keep every word of every cell: a cell wider than its column wraps onto
continuation lines instead of being cut (a ledger label's end carries its sense)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logmem.report.compare.out import _table
from logmem.report.table import Table
from logmem.report.text import WIDTH, table_lines

_word = st.text(alphabet="abcdefghij(),.", min_size=1, max_size=12)
_cell = st.lists(_word, min_size=1, max_size=9).map(" ".join)


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def _kept(cell: str, out: list[str]) -> bool:
    """The cell's characters appear in the output in order (a long word may be broken
    across continuation lines, but no character is dropped)."""
    stream = iter("".join(out).replace(" ", ""))
    return all(ch in stream for ch in cell.replace(" ", ""))


@settings(max_examples=150, deadline=None)
@given(
    # Right-aligned columns hold figures, as in the ledger; text columns give way.
    rows=st.lists(
        st.tuples(_cell, st.floats(0, 1e4).map("{:.2f}".format), _cell, _cell),
        min_size=1,
        max_size=5,
    ),
    indent=st.integers(0, 2),
)
def test_report_table_keeps_every_word(rows: list[tuple[str, ...]], indent: int) -> None:
    t = Table(
        title="t",
        columns=("phase / cause", "before", "kind", "lines"),
        rows=tuple(rows),
        align=("l", "r", "l", "l"),
        indent=tuple(indent for _ in rows),
    )
    out = table_lines(t)
    assert "~" not in "".join(out)
    assert all(_kept(cell, out) for row in rows for cell in row)
    assert all(len(line) <= WIDTH for line in out)


def test_ledger_label_wraps_with_its_row_indent() -> None:
    label = "unlogged: likely the request-to-token table (size not printed) + workspaces"
    t = Table(
        title="t",
        columns=("phase / cause", "before", "after", "drop", "kind", "lines"),
        rows=(
            ("KV and other pools", "190.30", "3.91", "186.39", "", "486-491"),
            (label, "", "", "3.24", "unattributed", "486,491"),
        ),
        align=("l", "r", "r", "r", "l", "l"),
        indent=(0, 1),
    )
    out = table_lines(t)
    assert all(len(line) <= WIDTH for line in out)
    body = [line for line in out if line.startswith("  ")]
    assert _words([line[:60] for line in body]) == label.split()
    # The continuation line is indented deeper than the label's first line.
    assert body[1].startswith("    ") and not body[0].startswith("    ")


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(_cell, _cell, _cell), min_size=1, max_size=4))
def test_compare_table_keeps_every_word(rows: list[tuple[str, str, str]]) -> None:
    out = _table(("server_args key", "A", "B"), rows, left=3)
    assert "~" not in "".join(out)
    assert all(_kept(cell, out) for row in rows for cell in row)
