"""Issue 12 class 1: a pool step with no KV line takes its bytes per token from another rank's
KV line, else another launch's of the same model and KV settings, else --model-config; a cell
that does not fit the step is not forced (the derived figure stays, a finding says why).

The logs are constructed: Llama-3.1-8B-Instruct at TP 2 in the wording of SGLang late 2024
(``max_total_num_tokens=`` only, no KV line) and early 2025 (``KV Cache is allocated``). The
cell is 32 layers x 8 KV heads / 2 ranks x 128 x 2 (K, V) x 2 B = 65,536 B per token per rank;
P = 78.50, A = 70.98 GiB, mfs 0.88: rest = 61.56 GiB = 1,008,599 tokens; the table holds
2,049 + 1 rows of 131,072 + 4 int32 (1.00 GiB) and 0.01 GiB of small pools stay unprinted.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from logmem.analysis.findings import KVSourcesDisagree
from logmem.analysis.ledger import Cause, Phase
from logmem.analysis.ledger import CellOrigin as HintOrigin
from logmem.api import analyze, read_log
from logmem.model.analysis import Analysis
from logmem.report import render
from logmem.report.causes import cause_name, cause_note
from logmem.report.sentences import finding_text
from logmem.units import GIB

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CELL = 32 * 8 * 128 * 2 * 2 // 2  # per rank at TP 2
P, A, MFS, CTX, ROWS = 78.50, 70.98, 0.88, 131072, 2049
TOKENS = int((A - P * (1 - MFS)) * GIB // CELL)
# As logmem's request-to-token cause counts it: late 2024 (sglang 0.3.6) prints the pool size,
# its padding row included, so the 2049 printed are the rows (rules.req_to_token_padding_row).
TABLE = ROWS * (CTX + 4) * 4  # ReqToTokenPool: context_len + 4 columns of int32

LLAMA = {
    "_name_or_path": MODEL,
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def start_up(
    day: str,
    hour: str,
    kv_ranks: Iterable[str] = (),
    pool_bytes: int | None = None,
    replace: tuple[str, str] = ("", ""),
) -> list[str]:
    """One start-up on two ranks; ``kv_ranks`` print a KV line, ``pool_bytes`` (default: the
    rule's KV cache) is what the pool step's KV cache really took."""
    kv = TOKENS * CELL if pool_bytes is None else pool_bytes
    pool_end = (A * GIB - kv - TABLE - 0.01 * GIB) / GIB
    ranks = ("TP0", "TP1")

    def rec(t: str, msg: str, rank: str = "") -> str:
        return f"[{day} {hour}:{t}{' ' + rank if rank else ''}] {msg}"

    args = (
        f"server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', dtype='auto', "
        "kv_cache_dtype='auto', quantization=None, context_length=None, "
        f"mem_fraction_static={MFS}, max_running_requests=None, max_total_tokens=None, "
        "tp_size=2, dp_size=1, attention_backend='flashinfer', page_size=1, random_seed=1, "
        "cuda_graph_max_bs=160, disable_cuda_graph=False)"
    )
    lines = [rec("00:00", args.replace(*replace) if replace[0] else args)]
    lines += [rec("00:01", f"Load weight begin. avail mem={P:.2f} GB", r) for r in ranks]
    lines += [
        rec(
            "00:09",
            f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={A:.2f} GB",
            r,
        )
        for r in ranks
    ]
    half = TOKENS * CELL / 2 / GIB
    for r in ranks:
        if r in kv_ranks:
            lines.append(
                rec(
                    "00:10",
                    f"KV Cache is allocated. #tokens: {TOKENS}, K size: {half:.2f} GB, "
                    f"V size: {half:.2f} GB",
                    r,
                )
            )
        lines.append(rec("00:10", f"Memory pool end. avail mem={pool_end:.2f} GB", r))
    lines.append(
        rec(
            "00:20",
            f"max_total_num_tokens={TOKENS}, max_prefill_tokens=16384, "
            f"max_running_requests={ROWS}, context_len={CTX}",
            "TP0",
        )
    )
    lines.append(rec("00:21", "The server is fired up and ready to roll!"))
    return lines


def write(path: Path, *launches: list[str]) -> str:
    path.write_text("\n".join(line for L in launches for line in L) + "\n", encoding="utf-8")
    return str(path)


@dataclass(frozen=True)
class Worded:
    """A ledger cause as the reports word it (logmem.report.causes)."""

    cause: Cause
    name: str
    note: str

    @property
    def kind(self) -> str:
        return self.cause.kind

    @property
    def bytes(self) -> int:
        return self.cause.bytes


def kv_cause(a: Analysis, launch: int = 0, rank: str = "TP0") -> tuple[Phase, Worded]:
    led = a.ledger(a.launches[launch])
    rl = led.rank(rank)
    assert rl is not None
    p = rl.phase("target_pools")
    assert p is not None
    worded = [Worded(c, cause_name(c), cause_note(c)) for c in p.causes]
    return p, next(w for w in worded if w.name.startswith(("KV cache for", "KV pool")))


def config_file(tmp_path: Path, **changes: object) -> str:
    cfg = tmp_path / "llama" / "config.json"
    cfg.parent.mkdir(exist_ok=True)
    cfg.write_text(json.dumps({**LLAMA, **changes}), encoding="utf-8")
    return str(cfg)


def test_the_constructed_figures() -> None:
    assert TOKENS == 1_008_599 and CELL == 65_536
    assert f"{TOKENS * CELL / GIB:.2f}" == "61.56" and f"{TABLE / GIB:.2f}" == "1.00"


def test_a_restart_in_one_file_takes_the_cell_of_the_launch_that_printed_a_kv_line(
    tmp_path: Path,
) -> None:
    log = write(
        tmp_path / "restart.log",
        start_up("2024-11-25", "10"),
        start_up("2024-11-25", "11", kv_ranks=("TP0", "TP1")),
    )
    a = read_log(log)
    assert len(a.launches) == 2
    _, c = kv_cause(a)
    assert c.name == f"KV cache for {TOKENS:,} tokens (no KV line)"
    assert c.kind == "estimated" and c.bytes == TOKENS * CELL
    # The note names the launch, the rank and the line the figure came from.
    kv_line = next(
        i for i, x in enumerate(Path(log).read_text().splitlines(), 1) if "KV Cache" in x
    )
    assert f"{TOKENS:,} tokens x 65,536 B per token" in c.note
    assert f"launch 1's KV line, TP0 line {kv_line}: 61.56 GiB for {TOKENS:,} tokens" in c.note
    assert a.ledger(a.launches[0]).kv_hint.origin is HintOrigin.LAUNCH
    # --launch 0 keeps only launch 0 in the report; launch 1 still gives it the cell.
    _, kept = kv_cause(analyze(log, launch=0))
    assert kept == c
    assert f"KV cache for {TOKENS:,} tokens (no KV line)" in render(analyze(log, launch=0), "json")


def test_two_files_of_the_same_model_share_the_cell(tmp_path: Path) -> None:
    old = write(tmp_path / "nov.log", start_up("2024-11-25", "10"))
    new = write(tmp_path / "mar.log", start_up("2025-03-10", "09", kv_ranks=("TP0", "TP1")))
    a = analyze(old, new)
    assert len(a.launches) == 2  # months apart: two launches, never one
    _, c = kv_cause(a)
    assert c.kind == "estimated" and c.bytes == TOKENS * CELL
    assert "launch 1's KV line, TP0 line 6 of mar.log" in c.note


@pytest.mark.parametrize(
    ("setting", "used"),
    [
        # Settings of the cell (sharding.KV_CELL_SETTINGS): another value, another cell.
        (("kv_cache_dtype='auto'", "kv_cache_dtype='fp8_e5m2'"), False),
        ((f"model_path='{MODEL}'", "model_path='meta-llama/Llama-3.1-70B-Instruct'"), False),
        (("attention_backend='flashinfer'", "attention_backend='triton'"), False),
        (("dtype='auto'", "dtype='float16'"), False),
        # Settings that change how many tokens, not their size.
        ((f"mem_fraction_static={MFS}", "mem_fraction_static=0.85"), True),
        (("page_size=1", "page_size=16"), True),
        (("random_seed=1", "random_seed=7"), True),
    ],
)
def test_only_a_launch_with_the_same_kv_settings_gives_its_cell(
    tmp_path: Path, setting: tuple[str, str], used: bool
) -> None:
    log = write(
        tmp_path / "x.log",
        start_up("2024-11-25", "10"),
        start_up("2024-11-25", "11", kv_ranks=("TP0", "TP1"), replace=setting),
    )
    a = read_log(log)
    origin = a.ledger(a.launches[0]).kv_hint.origin
    assert origin is (HintOrigin.LAUNCH if used else HintOrigin.NONE)
    if not used:  # SGLang's rule, not the other launch's line
        assert kv_cause(a)[1].name.endswith("(rule, no KV line)")


def test_model_config_gives_the_cell_when_no_kv_line_anywhere(tmp_path: Path) -> None:
    log = write(tmp_path / "x.log", start_up("2024-11-25", "10"))
    a = analyze(log, model_config=config_file(tmp_path))
    _, c = kv_cause(a)
    assert c.name == f"KV cache for {TOKENS:,} tokens (no KV line)"
    assert c.kind == "estimated" and c.bytes == TOKENS * CELL
    assert f"{TOKENS:,} tokens x 65,536 B per token (--model-config {MODEL}" in c.note
    assert "bfloat16 KV, attention TP 2" in c.note
    assert a.ledger(a.launches[0]).kv_hint.origin is HintOrigin.CONFIG
    # Without the config the same step is SGLang's rule.
    assert kv_cause(read_log(log))[1].name.endswith("(rule, no KV line)")


def test_a_launch_cell_that_does_not_fit_is_not_forced(tmp_path: Path) -> None:
    """Launch 0's pool step took 40 GiB for its KV cache: 1,008,599 cells of launch 1's 65,536
    B (61.56 GiB) cannot be in it. The step keeps its derived figure; a finding gives both."""
    log = write(
        tmp_path / "x.log",
        start_up("2024-11-25", "10", pool_bytes=40 * GIB),
        start_up("2024-11-25", "11", kv_ranks=("TP0", "TP1")),
    )
    a = read_log(log)
    p, c = kv_cause(a)
    assert c.kind == "derived" and c.name == f"KV cache for {TOKENS:,} tokens (no KV line)"
    assert c.note.startswith("about 40.01 GiB / 1,008,599 = ")
    led = a.ledger(a.launches[0])
    f = next(f for f in led.findings if isinstance(f, KVSourcesDisagree))
    assert f.cell_source.origin is HintOrigin.LAUNCH and f.kv_bytes == TOKENS * CELL
    assert f.room_bytes == p.delta_bytes - TABLE and f.table_known
    text = finding_text(f)
    assert "launch 1's KV line" in text and "61.56 GiB" in text and "40.01 GiB" in text
    assert text in json.loads(render(a, "json"))["launches"][0]["findings"]
    # Launch 1 printed its KV line: nothing to disagree with there.
    assert not any(isinstance(x, KVSourcesDisagree) for x in a.ledger(a.launches[1]).findings)


def test_a_config_cell_that_does_not_fit_is_not_forced(tmp_path: Path) -> None:
    """A config of twice the layers (a different model than the log served) would need 123 GiB."""
    log = write(tmp_path / "x.log", start_up("2024-11-25", "10"))
    a = analyze(log, model_config=config_file(tmp_path, num_hidden_layers=64))
    _, c = kv_cause(a)
    assert c.kind == "derived" and "--model-config" not in c.note
    f = next(f for f in a.ledger(a.launches[0]).findings if isinstance(f, KVSourcesDisagree))
    assert f.cell_source.origin is HintOrigin.CONFIG and f.cell_bytes == 2 * CELL
    assert f"{2 * TOKENS * CELL / GIB:.2f} GiB" in finding_text(f)


@pytest.mark.parametrize(
    ("other_rank", "other_launch", "config"), list(itertools.product((False, True), repeat=3))
)
def test_precedence_rank_then_launch_then_config(
    tmp_path: Path, other_rank: bool, other_launch: bool, config: bool
) -> None:
    """TP0 never prints a KV line; TP1 of the same launch may, a restart may, a config may."""
    first = start_up("2024-11-25", "10", kv_ranks=("TP1",) if other_rank else ())
    second = start_up("2024-11-25", "11", kv_ranks=("TP0", "TP1") if other_launch else ())
    log = write(tmp_path / "x.log", first, second)
    a = analyze(log, model_config=config_file(tmp_path) if config else None)
    hint = a.ledger(a.launches[0]).kv_hint
    expected = (
        HintOrigin.RANK
        if other_rank
        else HintOrigin.LAUNCH
        if other_launch
        else HintOrigin.CONFIG
        if config
        else HintOrigin.NONE
    )
    assert hint.origin is expected
    _, c = kv_cause(a)
    if expected is HintOrigin.NONE:
        assert c.name.endswith("(rule, no KV line)")
        return
    assert c.kind == "estimated" and c.bytes == TOKENS * CELL
    where = {
        HintOrigin.RANK: "TP1's KV line",
        HintOrigin.LAUNCH: "launch 1's KV line",
        HintOrigin.CONFIG: "--model-config",
    }[expected]
    assert where in c.note
