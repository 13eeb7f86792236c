"""Why diff and fit give no slope: the sentences of the Slope* notes of logmem.compare.notes."""

from __future__ import annotations

from logmem.compare import notes as cn
from logmem.report.compare.note_base import note_text


@note_text.register
def _(n: cn.SlopeNotAsked) -> str:
    return "not computed (--no-slope)"


@note_text.register
def _(n: cn.SlopeNoArgs) -> str:
    return (
        f"not computed: {' and '.join(n.missing)} printed no server_args, so the other settings "
        "cannot be checked"
    )


@note_text.register
def _(n: cn.SlopeNotVaried) -> str:
    who = "both launches" if len(n.sizes) == 2 else f"all {len(n.sizes)} launches"
    size = n.sizes[0] if n.sizes else None
    if size is not None and all(x == size for x in n.sizes):
        where = ""
        if all(n.from_args):
            none = "neither log prints" if len(n.sizes) == 2 else "no log prints"
            where = f" (server_args' cuda_graph_max_bs: {none} its captured sizes)"
        elif any(n.from_args):
            where = " (server_args' cuda_graph_max_bs where a log prints no captured sizes)"
        return (
            f"none: {who} capture the same largest batch size {size}{where}; a slope needs two "
            "different sizes"
        )
    known = [str(x) for x in n.sizes if x is not None]
    seen = f" (largest captured batch sizes {', '.join(known)})" if len(known) > 1 else ""
    return (
        f"none: the launches print the same cuda_graph_max_bs / cuda_graph_bs{seen}; a slope "
        "needs two launches that set different sizes"
    )


@note_text.register
def _(n: cn.SlopeConfounded) -> str:
    hint = (
        " (SGLang derives its default mem_fraction_static from cuda_graph_max_bs: pass it to both)"
        if n.mfs_hint
        else ""
    )
    return (
        f"none: besides the CUDA-graph batch sizes the launches differ in "
        f"{'; '.join(n.parts)}, so a slope would mix their effects{hint}. "
        "--allow-diff KEY fits one anyway."
    )


@note_text.register
def _(n: cn.SlopeNoRows) -> str:
    return "none: no graph family has readings that differ in rows in both launches"
