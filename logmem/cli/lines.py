"""`logmem lines`: every recognised line with its fields, and the memory lines nothing matched."""

from __future__ import annotations

import dataclasses

import click

from logmem.cli.options import logs_argument, output_option
from logmem.cli.output import write_output


@click.command()
@logs_argument()
@output_option()
def lines(logs: tuple[str, ...], output: str | None) -> None:
    """Print every recognised event with its line number and fields (for debugging).

    Lines that carry a memory figure (GB, GiB, MiB, avail, mem usage) but match no
    pattern are listed separately, so nothing is dropped silently.
    """
    from logmem.api import UnmatchedSpool, collect_events
    from logmem.errors import NoStartupError

    unmatched = UnmatchedSpool()
    out: list[str] = []
    events = collect_events(list(logs), None, unmatched)
    if not events:
        raise NoStartupError(list(logs))
    multi = len(logs) > 1
    for e in events:
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
        out.append(f"{where:>7}  {rank:<14} {type(e).__name__:<18} {' '.join(fields)}\n")
    out.append(f"\n{len(events)} events")
    if unmatched:
        n = len(unmatched)
        out.append(
            f"; {n} {'line carries' if n == 1 else 'lines carry'} a memory figure but {'matches' if n == 1 else 'match'} no pattern:\n"
        )
        for u in unmatched:
            where = f"{u.source.path}:{u.source.line_no}" if multi else f"{u.source.line_no}"
            out.append(f"{where:>7}  {u.source.text.strip()[:300]}\n")
        unmatched.close()
    else:
        out.append("; every line with a memory figure was recognised.\n")
    write_output("".join(out), output)
