"""Fixes for SGLang's own start-up checks: "Not enough memory" (the KV budget came out
empty) and "The memory capacity is unbalanced" (one GPU had less free memory).

Both follow SGLang's rule rest = after-weights - P x (1 - mfs) (logmem.sglang.rules), and
never point against SGLang's own advice: "Please try to increase --mem-fraction-static" is
never answered with a lower value.
"""

from __future__ import annotations

from collections.abc import Sequence

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import MFS_STEP, budget, fmt_mfs, min_mfs_for_pool
from logmem.analysis.failures.fixes import Fixes, draft_sized, post_capture_resize, quantized
from logmem.analysis.failures.place import POST_CAPTURE, Place
from logmem.analysis.failures.records import KVSizing, Unbalanced
from logmem.analysis.sizing import mfs_scaling
from logmem.model.records import Launch
from logmem.parse.lines import rank_tags
from logmem.sglang import rules
from logmem.units import GIB


def kv_fixes(launch: Launch, r: KVSizing, place: Place) -> Fixes:
    """SGLang said "Please try to increase --mem-fraction-static": every mfs fix goes up from
    the value in use. When the KV rule leaves a positive budget at that value, the rule does
    not explain the failure: say so, and what might, instead of computing a value."""
    b = budget(launch, draft=draft_sized(place), mfs=r.mem_fraction_static)
    said = r.suggested_mfs  # SGLang's own value ("Raise --mem-fraction-static above X")
    if b.pre_load_bytes is None or b.post_load_bytes is None:
        value = fmt_mfs(said) if said is not None else None
        return [fx.Fix("--mem-fraction-static", value, fx.RaiseMfsNoFigures(said))], []
    p, a = b.pre_load_bytes, b.post_load_bytes
    if place.phase == POST_CAPTURE and b.mfs is not None:
        # The resize after the graphs failed (kv_pool_runtime.py compute_post_capture_kv_resize):
        # its budget moves by P per unit of mfs, and by every byte the graphs take.
        step = rules.mfs_step_bytes(p, b.scaling.rule_mfs_for(MFS_STEP))
        raise_it = fx.RaiseMfsUnexplained(b.mfs, said, step)
        note = fx.PostCaptureBudgetShort(post_capture_resize(launch, place))
        return [fx.Fix("--mem-fraction-static", None, raise_it)], [note]
    notes: list[fx.Note] = []
    rest = b.rest_bytes
    fixes: list[fx.Fix] = []
    # Positive beyond what print rounding of the two readings allows (A and P x (1 - mfs)).
    if b.mfs is not None and rest is not None and rest > rules.printed_sum_error_bytes(2):
        args = launch.args
        draft = args.get("speculative_algorithm") not in (None, "", "None")
        multimodal = bool(args.get("enable_multimodal"))
        notes.append(fx.RuleDoesNotExplain(a, p, b.mfs, rest, draft, multimodal, b.factor))
        fixes.append(fx.Fix("--mem-fraction-static", None, fx.RaiseMfsUnexplained(b.mfs, said)))
        return fixes, notes
    if b.mfs is not None and rest is not None:
        notes.append(fx.BudgetCameOut(a, p, b.mfs, rest, b.factor))
    lowest = min_mfs_for_pool(b)
    exact = rules.smallest_mfs_with_pool(a, p)
    if b.mfs is not None and lowest is not None and lowest <= b.mfs:
        lowest = None  # never below the value SGLang asked to increase
    if lowest is not None and lowest < 1 and exact is not None:
        step = rules.mfs_step_bytes(p, b.scaling.rule_mfs_for(MFS_STEP))
        headroom = rules.outside_budget_bytes(p, b.scaling.rule_mfs_for(lowest))
        effect = fx.SmallestMfs(a, p, exact, MFS_STEP, step, headroom, b.factor, said, r.form)
        fixes.append(fx.Fix("--mem-fraction-static", fmt_mfs(lowest), effect))
    else:
        notes.append(fx.NoMfsGivesPool(a))
    w, tp = b.weights_bytes, b.tp_size
    if w is not None:
        effect2 = fx.FewerWeights(
            w, quantized(launch) is not None, b.mfs, rest, tp * 2 if tp else None
        )
        fixes.append(
            fx.Fix(
                "--tp-size" if tp else "fewer weights per rank",
                str(tp * 2) if tp else None,
                effect2,
            )
        )
    return fixes, notes


def imbalance_fixes(launch: Launch, r: Unbalanced, raising: Sequence[str]) -> Fixes:
    heavy = tuple(_heavy_ranks(launch, raising))
    notes: list[fx.Note] = []
    fixes: list[fx.Fix] = []
    if r.pre_model_load_gib is None or r.local_gib is None:
        return fixes, [fx.ImbalanceNoFigures(heavy)]
    short = r.local_gib - r.pre_model_load_gib
    notes.append(fx.ImbalanceGap(heavy, short, r.pre_model_load_gib, r.local_gib))
    # The occupied rank keeps going; its own first reading confirms the minimum.
    for label in heavy:
        hr = launch.rank(label)
        wb = rules.pre_load_reading(hr) if hr is not None else None
        if wb is not None:
            notes.append(fx.OwnReading(label, wb.avail.bytes))
    arg = launch.args.get("mem_fraction_static")
    mfs = float(arg) if isinstance(arg, (int, float)) else None
    scaling = mfs_scaling(launch)
    loss = (
        rules.imbalance_budget_loss_bytes(round(short * GIB), scaling.rule_mfs_for(mfs))
        if mfs is not None
        else None
    )
    fixes.append(
        fx.Fix(
            "nvidia-smi",
            "--query-compute-apps=pid,used_memory --format=csv",
            fx.FindProcess(short, heavy),
        )
    )
    effect = fx.SkipImbalanceCheck(r.pre_model_load_gib, mfs, short, loss, scaling.factor)
    fixes.append(fx.Fix("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", "0", effect))
    return fixes, notes


def _heavy_ranks(launch: Launch, raising: Sequence[str]) -> list[str]:
    """The occupied GPU is the rank that did *not* raise it (only healthy ranks fail the 0.9 test)."""
    seen = [r.label for r in launch.ranks if r.label not in raising]
    tp = launch.args.get("tp_size")
    raising_tp = {n for label in raising for t, n in rank_tags(label) if t == "TP"}
    if isinstance(tp, int) and all(
        rank_tags(x) and all(t == "TP" for t, _ in rank_tags(x)) for x in raising
    ):
        missing = [f"TP{i}" for i in range(tp) if i not in raising_tp]
        return missing or seen
    return seen
