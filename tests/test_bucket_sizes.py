"""The bucket table's sizes (review C, finding 14): the old 0.4.x bar ``Capturing batches
(avail_mem=...)`` prints no bs, so a reading's size is the bs line's list at its bucket,
largest first (cuda_graph_runner.py capture(): reversed(self.capture_bs), the description set
before each bucket, sglang 0.4.4.post1 - 0.4.8). The table and the ledger use one assignment
(Graph.sample_size), and the footer names the source it used, or says the sizes are unknown."""

from __future__ import annotations

from pathlib import Path

from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.report.ledger_tables import bucket_tables


def _tables(path: Path) -> list[str]:
    led = build_ledger(read_log(str(path)).launches[0])
    return [str(t.rows) + " | " + " | ".join(t.notes) for t in bucket_tables(led.ranks[0])]


def test_038_sizes_from_the_bs_line_in_capture_order() -> None:
    (t,) = _tables(corpus_log("038-"))
    assert "('160', '4.06', '1.38', '18')" in t and "('1', '2.68', '(0.01)', '20')" in t
    assert "sizes from the bs line (captured largest first)" in t
    assert "?" not in t


def test_007_first_reading_is_bs_8() -> None:
    (t,) = _tables(corpus_log("007-"))
    assert "('8', '0.00', '(unknown)', '17')" in t
    assert "sizes from the bs line" in t


def test_ledger_and_table_agree_038() -> None:
    led = build_ledger(read_log(str(corpus_log("038-"))).launches[0])
    cap = next(p for p in led.ranks[0].phases if p.key.startswith("capture:"))
    spans = [c.facts.span for c in cap.causes if c.facts.span is not None]
    assert [(s.count, s.first, s.last) for s in spans] == [(22, 160, 2), (1, 1, 1)]
    # Each table row is the first bucket of the ledger's span from that reading.
    assert [b.size for b in cap.buckets] == [s.first for s in spans]
    assert {b.size_from for b in cap.buckets} == {"bs line"}


_NO_LIST = """\
[2025-05-05 17:53:38] server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static=0.88)
[2025-05-05 17:53:38] Load weight begin. avail mem=43.89 GB
[2025-05-05 17:53:40] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=36.25 GB, mem usage=7.63 GB.
[2025-05-05 17:53:40] KV Cache is allocated. #tokens: 225647, K size: 15.49 GB, V size: 15.49 GB
[2025-05-05 17:53:40] Memory pool end. avail mem=4.71 GB
[2025-05-05 17:53:41] Capture cuda graph begin. This can take up to several minutes. avail mem=4.09 GB
Capturing batches (avail_mem=4.06 GB):   0%|          | 0/23 [00:00<?, ?it/s]
Capturing batches (avail_mem=2.68 GB): 100%|##########| 23/23 [00:06<00:00,  3.75it/s]
[2025-05-05 17:53:47] Capture cuda graph end. Time elapsed: 6.18 s. mem usage=1.41 GB. avail mem=2.67 GB.
[2025-05-05 17:53:50] The server is fired up and ready to roll!
"""


def test_no_sizes_list_says_unknown(tmp_path: Path) -> None:
    p = tmp_path / "no-list.log"
    p.write_text(_NO_LIST)
    (t,) = _tables(p)
    assert "('?', '4.06'" in t
    assert "sizes unknown" in t and "sizes from" not in t
