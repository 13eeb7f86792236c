"""diff's KV block: the tokens each launch holds, their bytes per token and the terms of SGLang's
rule that account for the change (split from logmem.compare.diff, which re-exports these)."""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger, Sizing
from logmem.analysis.sizing import common_range, full_pool, line_cell, range_gap, roundest_cell
from logmem.compare import notes as cn
from logmem.compare.replay import bytes_per_token
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.rules import mfs_step_bytes, page_size, rule_inputs_missing


@frozen
class KVTerm:
    name: cn.TermKind
    bytes: int | None  # change of the KV budget (rest) this term accounts for
    tokens: int


@frozen
class KVChange:
    tokens: tuple[int | None, int | None]
    tokens_source: str
    bytes_per_token: tuple[int | None, int | None]
    # The rule's inputs (None on a side that printed no server_args: printed_kv_change).
    mem_fraction_static: tuple[float | None, float | None]
    pre_load_bytes: tuple[int | None, int | None]
    after_weights_bytes: tuple[int | None, int | None]
    rest_bytes: tuple[int | None, int | None]
    terms: tuple[KVTerm, ...]
    terms_note: cn.NoTermSplit | None = None  # why there are no terms
    # Bytes per token each launch's printed sizes allow (Sizing.bytes_per_token_range).
    bytes_per_token_range: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)
    common_range: tuple[int, int] | None = None  # what both allow (None: unknown or disjoint)
    cell_bytes: int | None = None  # the one cell size the terms use (within both ranges)

    @property
    def same_cell(self) -> bool | None:
        """True: the printed sizes allow one cell size for both; False: they cannot be the
        same; None: a range is unknown (the point values are then compared)."""
        ra, rb = self.bytes_per_token_range
        if ra is not None and rb is not None:
            return self.common_range is not None
        a, b = self.bytes_per_token
        return None if a is None or b is None else a == b

    @property
    def apart_at_least(self) -> int | None:
        """Bytes per token by which the two cells differ at least (ranges known, disjoint)."""
        ra, rb = self.bytes_per_token_range
        return range_gap(ra, rb) if ra is not None and rb is not None else None

    @property
    def change_tokens(self) -> int | None:
        a, b = self.tokens
        return None if a is None or b is None else b - a


def _tokens(L: Launch, sz: Sizing | None) -> tuple[int | None, str]:
    """The launch's KV tokens: the summary's max_total_num_tokens, else the KV line's #tokens.
    The KV line is read from the sizing when there is one, else from the printed pool itself:
    a launch without server_args (016) has no sizing, but its KV line still counts its tokens."""
    if L.summary is not None and L.summary.max_total_num_tokens is not None:
        return L.summary.max_total_num_tokens, "max_total_num_tokens"
    if sz is not None and sz.kv_tokens is not None:
        return sz.kv_tokens, "KV line #tokens"
    first = next((r for r in L.ranks if r.target and r.target.kv_pools), None)
    main = full_pool(first.target) if first is not None and first.target is not None else None
    if main is not None and main.tokens is not None:
        return main.tokens, "KV line #tokens"
    return None, "not printed"


def kv_change(a: Launch, la: LaunchLedger, b: Launch, lb: LaunchLedger) -> KVChange | None:
    """KV tokens gained or lost, split into the terms of SGLang's rule.

    rest = after_weights - P (1 - mfs) = P mfs - (P - after_weights), so exactly
    d rest = mfs_A dP + P_B d mfs - d(P - after_weights); tokens = rest / bytes per token.
    mfs is the value the rule ran with (Sizing.rule_mfs: the flag through SGLang's own
    scaling), so the terms add up to the change of the two budgets.
    """
    sa, sb = la.sizing, lb.sizing
    if sa is None or sb is None:
        return printed_kv_change(a, sa, b, sb)
    ta, src_a = _tokens(a, sa)
    tb, src_b = _tokens(b, sb)
    ba, bb = bytes_per_token(sa), bytes_per_token(sb)
    ra, rb = sa.bytes_per_token_range, sb.bytes_per_token_range
    common = common_range(ra, rb)
    cell = ba
    if common is not None:  # one cell size both printed pools allow: the one the terms use
        lo, hi = common
        inside = [x for x in (ba, bb) if x is not None and lo <= x <= hi]
        cell = inside[0] if inside else (roundest_cell(common) or (lo + hi) // 2)
    terms: list[KVTerm] = []
    # Terms in tokens only add up when both pools count the same cells under the same rule.
    caps = [
        x if isinstance(x := L.args.get("max_total_tokens"), int) and x > 0 else None
        for L in (a, b)
    ]
    if ra is not None and rb is not None:
        bpt_differ = (ba or 0, bb or 0) if common is None else None
    else:
        bpt_differ = (ba, bb) if ba and bb and ba != bb else None
    caps_differ = (caps[0], caps[1]) if caps[0] != caps[1] else None
    # One launch sizes its pool after capture from the free memory then (SGLang 0.5.17+,
    # srt/model_executor/model_runner_components/kv_pool_runtime.py), the other at start-up.
    post = None
    if (sa.post_capture is None) != (sb.post_capture is None):
        post = "A" if sa.post_capture is not None else "B"
    terms_note = None
    if bpt_differ or caps_differ or post:
        ranges = (ra, rb) if bpt_differ and ra is not None and rb is not None else None
        terms_note = cn.NoTermSplit(bpt_differ, caps_differ, ranges, post_capture=post)
    elif cell and bb:
        d_p = sb.pre_load_bytes - sa.pre_load_bytes
        w_a = sa.pre_load_bytes - sa.after_weights_bytes
        w_b = sb.pre_load_bytes - sb.after_weights_bytes
        t_p = round(sa.rule_mfs * d_p)
        t_m = mfs_step_bytes(sb.pre_load_bytes, sb.rule_mfs - sa.rule_mfs)
        t_w = -(w_b - w_a)
        for name, n in (
            (cn.TermKind.PRE_LOAD, t_p),
            (cn.TermKind.MFS, t_m),
            (cn.TermKind.WEIGHTS, t_w),
        ):
            terms.append(KVTerm(name, n, int(n / cell)))
        if ta is not None and tb is not None:
            rest = (tb - ta) - sum(t.tokens for t in terms)
            terms.append(KVTerm(cn.TermKind.OTHER, None, rest))
    return KVChange(
        (ta, tb),
        src_a if src_a == src_b else f"{src_a} / {src_b}",
        (ba, bb),
        (sa.mem_fraction_static, sb.mem_fraction_static),
        (sa.pre_load_bytes, sb.pre_load_bytes),
        (sa.after_weights_bytes, sb.after_weights_bytes),
        (sa.rest_bytes, sb.rest_bytes),
        tuple(terms),
        terms_note,
        (ra, rb),
        common,
        cell if common is not None or (ba is not None and ba == bb) else None,
    )


def _printed_cell(L: Launch) -> tuple[int | None, tuple[int, int] | None]:
    """The full KV pool's bytes per token from its printed line alone (analysis.sizing.line_cell):
    the round cell print rounding allows, else the ratio, and the range."""
    first = next((r for r in L.ranks if r.target and r.target.kv_pools), None)
    main = full_pool(first.target) if first is not None and first.target is not None else None
    if main is None:
        return None, None
    tokens = main.tokens or (L.summary.max_total_num_tokens if L.summary else None)
    got = line_cell(main, tokens, page_size(L.args))
    return (round(got[0]), got[1]) if got is not None else (None, None)


def printed_kv_change(
    a: Launch, sa: Sizing | None, b: Launch, sb: Sizing | None
) -> KVChange | None:
    """The printed pools of two launches one of which printed no server_args: tokens and bytes
    per token as logged, no split into the rule's terms (its mem_fraction_static is unknown)."""
    (ta, src_a), (tb, src_b) = _tokens(a, sa), _tokens(b, sb)
    if ta is None and tb is None:
        return None
    (ba, ra), (bb, rb) = _printed_cell(a), _printed_cell(b)
    common = common_range(ra, rb)
    # Which side lacks the rule's inputs, and whether it printed a server_args line at all.
    lacking = tuple(
        (lab, L.server_args is not None, rule_inputs_missing(L))
        for lab, sz, L in (("A", sa, a), ("B", sb, b))
        if sz is None
    )
    elided = tuple(lab for lab, L in (("A", a), ("B", b)) if L.server_args and L.server_args.elided)
    note = cn.NoTermSplit(None, None, None, lacking, elided=elided)

    def side(sz: Sizing | None) -> tuple[float | None, int | None, int | None, int | None]:
        if sz is None:
            return None, None, None, None
        return sz.mem_fraction_static, sz.pre_load_bytes, sz.after_weights_bytes, sz.rest_bytes

    xa, xb = side(sa), side(sb)
    return KVChange(
        (ta, tb),
        src_a if src_a == src_b else f"{src_a} / {src_b}",
        (ba, bb),
        (xa[0], xb[0]),
        (xa[1], xb[1]),
        (xa[2], xb[2]),
        (xa[3], xb[3]),
        (),
        note,
        (ra, rb),
        common,
        None,
    )
