"""Sentences on what the log says about each capture beyond its memory: captures whose memory
was not printed, and the largest bucket when it comes from a bar or SGLang's list rules
rather than a printed list. The facts are the model's (:class:`logmem.model.records.Graph`)."""

from __future__ import annotations

from logmem.model.records import Graph, Launch
from logmem.report.sentences import graphs_name


def graph_sentences(L: Launch) -> list[str]:
    """One sentence per graph family (label and backend) for the whole launch, ranks merged:
    every rank of one launch captures the same families."""
    seen: dict[tuple[str, str], list[Graph]] = {}
    for r in L.ranks:
        for g in r.graphs:
            seen.setdefault((g.label, g.backend), []).append(g)
    out: list[str] = []
    for (label, backend), gs in seen.items():
        name = f"{graphs_name(backend)} ({label})"
        if all(g.captured_without_memory for g in gs):
            count = _count(gs[0])
            out.append(
                f"{name} were captured{count}, memory not printed: this SGLang version prints "
                "no free-memory reading for the capture, so its cost is unknown."
            )
        g = gs[0]
        # A printed list or a first-bucket reading already shows it (the bucket tables, the
        # split finding); only a size derived by SGLang's list rules needs saying.
        if g.largest_size is not None and g.largest_size_source not in _SHOWN:
            out.append(
                f"The largest bucket of the {name} is {_size(g)} {g.largest_size} ({_how(g)})."
            )
    return out


_SHOWN = (None, "sizes list", "first bar")


def _count(g: Graph) -> str:
    n = g.bucket_count
    return f" ({n} sizes)" if n else ""


def _size(g: Graph) -> str:
    return "bs" if g.tokens_per_req in (None, 1) and g.name != "piecewise" else "size"


def _how(g: Graph) -> str:
    return (
        f"the log gives no complete sizes list; {g.bucket_count} buckets by the progress bar's total, "
        f"by SGLang's rule: {g.largest_size_source}"
    )
