"""fit / diff set SGLang's per-bs graph reserve beside a slope only where it is the launches'
rule and moves with max bs: not where the formula gives the dumped value on no GPU holding the
free memory (formula_excluded), nor on a GPU above 60 GiB whose reserve is the 10 GiB floor at
both max bs (review27b #3b; sglang 0.5.8 server_args.py, _handle_gpu_memory_settings)."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from logmem import api
from logmem.compare import notes as cn


def _pair(tmp_path: Path, mfs: bytes) -> tuple[str, str]:
    out = []
    for bs in (128, 256):
        raw = (FIXTURES / f"pair-e7-maxbs{bs}-constructed.log").read_bytes()
        raw = raw.replace(b"'chunked_prefill_size': 8192", b"'chunked_prefill_size': 2048")
        raw = raw.replace(b"chunked_prefill_size=8192", b"chunked_prefill_size=2048")
        raw = raw.replace(b"'mem_fraction_static': 0.85", b"'mem_fraction_static': " + mfs)
        p = tmp_path / f"e7c-{bs}.log"
        p.write_bytes(raw)
        out.append(str(p))
    return out[0], out[1]


def test_no_per_bs_reserve_where_the_formula_cannot_give_the_value(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"0.85")  # 512 + 3072 + bs x 2 + 128 < 10240: 0.85 needs no GPU > P
    fit = api.fit(a, b)
    assert all(s.heuristic is None for s in fit.model.slopes)  # type: ignore[union-attr]
    assert "2 MiB per unit of max bs" not in fit.render()
    d = api.diff(a, b).model
    why = [n for n in d.notes if isinstance(n, cn.NoReserveComparison)]  # type: ignore[union-attr]
    assert why and why[0].excluded == (True, True)
    text = " ".join(api.diff(a, b).render().split())
    assert (
        "A and B: the reserve formula gives its value on no GPU with this free memory: passed"
        in text
    )


def test_the_10_gib_floor_does_not_move_with_max_bs(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, b"0.88")  # 1 - 10240 / gpu: a GPU of about 83 GiB, above P 78.48
    fit = api.fit(a, b)
    assert all(s.heuristic is None for s in fit.model.slopes)  # type: ignore[union-attr]
    text = " ".join(fit.render().split())
    assert "SGLang's default reserve is its 10 GiB floor at every max bs of launches 1, 2" in text
    assert "would set aside" not in text
    diff_text = " ".join(api.diff(a, b).render().split())
    assert "the reserve formula's 10 GiB floor, which max bs does not move" in diff_text


def test_the_reserve_stays_beside_the_slope_where_it_moves_with_max_bs() -> None:
    a, b = (str(FIXTURES / f"pair-e7-maxbs{bs}-constructed.log") for bs in (128, 256))
    fit = api.fit(a, b)
    assert any(s.heuristic is not None for s in fit.model.slopes)  # type: ignore[union-attr]
