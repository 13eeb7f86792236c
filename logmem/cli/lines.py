"""`logmem lines`: every recognised line with its fields, and the memory lines nothing matched."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from logmem.cli.options import logs_argument, output_option
from logmem.cli.output import write_chunks

if TYPE_CHECKING:
    from logmem.api import UnmatchedSpool
    from logmem.parse.events import Event

BLOCK_CHARS = 1 << 16  # a block of output is written when it holds this much


@click.command()
@logs_argument()
@output_option()
def lines(logs: tuple[str, ...], output: str | None) -> None:
    """Print every recognised event with its line number and fields (for debugging).

    Lines that carry a memory figure (GB, GiB, MiB, avail, mem usage) but match no
    pattern are listed separately, and so are lines that end inside a figure (a cut
    input: "avail mem=0" with no unit), recognised or not: nothing is dropped silently.
    """
    from logmem.api import UnmatchedSpool, iter_events
    from logmem.errors import NoStartupError

    unmatched = UnmatchedSpool()
    events = iter_events(list(logs), None, unmatched)
    first = next(events, None)
    if first is None:  # before anything is written: no half report, no empty file
        unmatched.close()
        raise NoStartupError(list(logs))
    try:
        write_chunks(_blocks(first, events, unmatched, len(logs) > 1), output)
    finally:
        unmatched.close()


def _event_line(e: Event, multi: bool) -> str:
    fields = []
    for f in dataclasses.fields(e):
        if f.name in ("rank", "source"):
            continue
        value = getattr(e, f.name)
        if f.name == "args":
            value = f"{{{len(value)} keys}}"
        elif hasattr(value, "gib"):
            value = f"{value.gib}GiB"
        elif isinstance(value, tuple) and len(value) > 12:
            value = f"[{value[0]}, {value[1]}, ... {value[-1]}] ({len(value)})"
        if value is None:
            continue
        fields.append(f"{f.name}={value}")
    where = f"{e.source.path}:{e.source.line_no}" if multi else f"{e.source.line_no}"
    rank = "-" if e.rank is None else (e.rank or '""')
    return f"{where:>7}  {rank:<14} {type(e).__name__:<18} {' '.join(fields)}\n"


def _blocks(
    first: Event, events: Iterator[Event], unmatched: UnmatchedSpool, multi: bool
) -> Iterator[str]:
    """The output in blocks of about BLOCK_CHARS, each made as the reader reaches its
    events: memory stays bounded by a block, not by the log (the unmatched lines wait in
    their spool, which goes to disk beyond a few MiB)."""
    from logmem.api import ends_in_cut_figure

    out: list[str] = []
    size = n = 0
    # Recognised lines that end inside a memory figure (the input stops before its unit): the
    # event lacks that figure, so they are listed like unmatched ones, never dropped silently.
    cut: list[str] = []
    cut_count = 0
    for e in itertools.chain((first,), events):
        line = _event_line(e, multi)
        out.append(line)
        size += len(line)
        n += 1
        if ends_in_cut_figure(e.source.text):
            cut_count += 1
            if len(cut) < MAX_CUT_LISTED:
                cut.append(_source_line(e.source.path, e.source.line_no, e.source.text, multi))
        if size >= BLOCK_CHARS:
            yield "".join(out)
            out, size = [], 0
    out.append(f"\n{n} events")
    c = cut_count + sum(1 for u in unmatched if ends_in_cut_figure(u.source.text))
    k = len(unmatched) - (c - cut_count)
    if c:
        its = "its figure was" if c == 1 else "their figures were"
        out.append(
            f"; {c} {'line ends' if c == 1 else 'lines end'} inside a memory figure, cut "
            f"before its unit ({its} not read):\n"
        )
        out.extend(cut)
        if cut_count > len(cut):
            out.append(f"         ({cut_count - len(cut):,} more recognised lines like these)\n")
        out.extend(
            _source_line(u.source.path, u.source.line_no, u.source.text, multi)
            for u in unmatched
            if ends_in_cut_figure(u.source.text)
        )
    if k:
        out.append(
            f"{'' if c else '; '}{k} {'line carries' if k == 1 else 'lines carry'} a memory "
            f"figure but {'matches' if k == 1 else 'match'} no pattern:\n"
        )
        for u in unmatched:
            if ends_in_cut_figure(u.source.text):
                continue
            out.append(_source_line(u.source.path, u.source.line_no, u.source.text, multi))
            size += len(out[-1])
            if size >= BLOCK_CHARS:
                yield "".join(out)
                out, size = [], 0
    elif c:
        out.append("Every other line with a memory figure was recognised.\n")
    else:
        out.append("; every line with a memory figure was recognised.\n")
    yield "".join(out)


MAX_CUT_LISTED = 1000  # cut recognised lines listed; a hostile log's further ones are counted


def _source_line(path: str, line_no: int, text: str, multi: bool) -> str:
    where = f"{path}:{line_no}" if multi else f"{line_no}"
    return f"{where:>7}  {text.strip()[:300]}\n"
