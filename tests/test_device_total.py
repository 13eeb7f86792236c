"""The device total (review21 #10, user-needs rec.2): SGLang's 'Reported total GPU memory per
device (MiB)' line and PyTorch's OOM 'total capacity', joined to ranks, above the ledger."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, corpus_log
from logmem.analysis.device_total import Join
from logmem.api import read_log
from logmem.parse.builders import BUILDERS
from logmem.parse.events import DeviceTotal
from logmem.parse.lines import Record, Source
from logmem.parse.patterns import BY_NAME, MEMORY_FIGURE
from logmem.report.jsonout import analysis_json
from logmem.report.text import render as render_text
from logmem.sglang.devices import local_gpu_id
from logmem.units import GIB, MIB

_SCRATCH = Path(tempfile.mkdtemp(prefix="logmem-device-"))
LINE_021 = (
    "Failed to get GPU memory capacity from nvidia-smi. Falling back to torch.cuda.mem_get_info(). "
    "Reported total GPU memory per device (MiB): [124546], using min: 124546 MiB."
)


def _event(message: str) -> DeviceTotal:
    m = BY_NAME["device_total"].regex.search(message)
    assert m is not None
    e = BUILDERS["device_total"](m, Record("", (), "t", message, Source("t.log", 1, message)))
    assert isinstance(e, DeviceTotal)
    return e


def _write(name: str, text: str) -> str:
    path = _SCRATCH / name
    path.write_text(text)
    return str(path)


def test_the_021_line_reads_one_device_in_mib() -> None:
    e = _event(LINE_021)
    assert [m.bytes for m in e.per_device] == [124546 * MIB]
    assert e.used is not None and e.used.bytes == 124546 * MIB
    assert e.nvidia_smi_failed
    assert MEMORY_FIGURE.search(LINE_021)  # it was reported as 'matches no pattern' before


def test_an_elided_list_says_nothing_per_device() -> None:
    e = _event("Reported total GPU memory per device (MiB): [81559, ...], using min: 81559 MiB.")
    assert e.per_device == () and not e.nvidia_smi_failed
    assert e.used is not None and e.used.bytes == 81559 * MIB
    # A list cut before its ']' is no match: it stays listed as an unmatched memory line.
    assert (
        BY_NAME["device_total"].regex.search("Reported total GPU memory per device (MiB): [1, 2")
        is None
    )


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**7), min_size=1, max_size=16))
def test_any_list_reads_back_in_order(mib: list[int]) -> None:
    text = f"Reported total GPU memory per device (MiB): {mib}, using min: {min(mib)} MiB."
    e = _event(text)
    assert [m.bytes for m in e.per_device] == [x * MIB for x in mib]
    assert e.used is not None and e.used.bytes == min(mib) * MIB


def test_021_ledger_starts_at_the_device_total() -> None:
    a = read_log(str(corpus_log("021-")))
    (L,) = a.launches
    led = a.ledger(L)
    assert led.device_totals is not None and led.device_totals.line == 10
    (p,) = led.pre_start
    assert p.join is Join.ONE_DEVICE and p.device == 0
    assert p.total_bytes == 124546 * MIB
    # The rows chain into the ledger: total - in use = its first figure.
    assert p.total_bytes - p.in_use_bytes == led.ranks[0].phases[0].before_bytes
    assert round(p.in_use_bytes / GIB, 2) == 6.24
    assert p.lines == (10, 35, 36)
    text = render_text(a)
    assert "device total, before start-up                   121.63  115.39   6.24" in text
    assert "system's available RAM" in text and "nvidia-smi gave no memory total (line 10)" in text
    assert "match no pattern" not in text
    j = analysis_json(a)["launches"][0]
    assert j["device_totals"]["per_device_mib"] == [124546]
    assert j["pre_start"][0]["in_use_gib"] == 6.24 and j["pre_start"][0]["lines"] == [10, 35, 36]


def _tp4(device_line: str) -> str:
    lines = corpus_log("001-").read_text().splitlines(keepends=True)
    # The launcher prints it before server_args (line 3 of 001).
    return "".join(lines[:2] + [f"[2025-03-08 12:29:03] {device_line}\n"] + lines[2:])


def test_the_line_before_server_args_opens_no_launch_of_its_own() -> None:
    base = read_log(str(corpus_log("001-")))
    a = read_log(_write("tp4.log", _tp4("Reported total GPU memory per device (MiB): [23034]")))
    assert len(a.launches) == len(base.launches) == 1
    assert any(isinstance(e, DeviceTotal) for e in a.launches[0].events)


def test_equal_totals_join_every_rank() -> None:
    a = read_log(
        _write(
            "eq.log",
            _tp4("Reported total GPU memory per device (MiB): [23034, 23034, 23034, 23034]"),
        )
    )
    led = a.ledger(a.launches[0])
    assert {p.rank: p.join for p in led.pre_start} == {f"TP{i}": Join.SAME_TOTAL for i in range(4)}


def test_differing_totals_join_by_local_rank_and_say_the_list_without_it() -> None:
    line = "Reported total GPU memory per device (MiB): [23034, 22000, 23034, 23034]"
    a = read_log(_write("diff.log", _tp4(line)))
    led = a.ledger(a.launches[0])
    tp1 = led.pre_start_of("TP1")
    assert tp1 is not None and tp1.join is Join.LOCAL_RANK and tp1.device == 1
    assert tp1.total_bytes == 22000 * MIB
    # Without server_args or an echoed command (001 echoes --tp 4) the rank -> device rule is
    # unknown: no row, the list is named.
    text = "".join(
        x
        for x in _tp4(line).splitlines(keepends=True)
        if "server_args=" not in x and "sglang.launch_server" not in x
    )
    b = read_log(_write("noargs.log", text))
    assert not b.ledger(b.launches[0]).pre_start
    out = " ".join(render_text(b).split())
    assert "device total, before start-up" not in out
    assert "22.49, 21.48, 22.49, 22.49 GiB per visible device; the log does not say which" in out


def test_no_device_line_no_row() -> None:
    a = read_log(str(corpus_log("001-")))
    led = a.ledger(a.launches[0])
    assert led.device_totals is None and led.pre_start == ()
    assert "device total" not in render_text(a)
    assert analysis_json(a)["launches"][0]["device_totals"] is None


def test_an_oom_total_capacity_joins_the_rank_that_printed_it() -> None:
    a = read_log(str(FIXTURES / "capture-oom-no-server-args-constructed.log"))
    led = a.ledger(a.launches[0])
    got = {p.rank: (p.join, p.device, round(p.total_bytes / GIB, 2)) for p in led.pre_start}
    assert got == {"TP0": (Join.OOM, 0, 79.19)}  # TP1 printed no reading: no ledger to head


def test_local_gpu_id_follows_sglang_rule() -> None:
    assert local_gpu_id({"tp_size": 4}, 3, None) == 3
    assert local_gpu_id({"tp_size": 2, "base_gpu_id": 2, "gpu_id_step": 2}, 1, None) == 4
    assert local_gpu_id({"tp_size": 8, "nnodes": 2}, 5, None) == 1
    assert local_gpu_id({"tp_size": 2, "pp_size": 2}, 1, 1) == 3
    assert local_gpu_id({"tp_size": 2, "dp_size": 2}, 1, None) is None  # each replica its base
    assert local_gpu_id({"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}, 1, None) == 1
    assert local_gpu_id({}, 0, None) is None and local_gpu_id({"tp_size": 2}, None, None) is None


def _021_without(drop: range) -> str:
    lines = corpus_log("021-").read_text().splitlines(keepends=True)
    return "".join(x for i, x in enumerate(lines, 1) if i not in drop)


def test_a_ledger_that_starts_at_weights_names_distributed_init_in_the_gap() -> None:
    lines = corpus_log("024-").read_text().splitlines(keepends=True)  # no init figure (E0)
    device = "[2024-10-29 21:14:12] Reported total GPU memory per device (MiB): [49140]\n"
    a = read_log(_write("e0.log", "".join(lines[:2] + [device] + lines[2:])))
    (p,) = a.ledger(a.launches[0]).pre_start
    assert not p.before_init and p.first_bytes == round(47.27 * GIB)
    assert p.total_line == 3 and p.lines[0] == 3
    text = " ".join(render_text(a).split())
    assert "and distributed init (the log prints no figure before it)" in text
    assert "nvidia-smi" not in text  # the fallback's words only with its prefix


def test_a_ledger_that_starts_after_the_weights_gets_no_pre_start_row() -> None:
    # Line 10 kept, the start-up up to the draft's pools cut: the first figure is mid start-up.
    a = read_log(_write("late.log", _021_without(range(11, 155))))
    led = a.ledger(a.launches[0])
    assert led.device_totals is not None and led.ranks[0].phases
    assert led.pre_start == ()
    assert "device total, before start-up" not in render_text(a)


def test_several_nodes_join_no_rank_to_the_list() -> None:
    text = _tp4("Reported total GPU memory per device (MiB): [23034, 23034, 23034, 23034]")
    text = text.replace("nnodes=1,", "nnodes=2,", 1)
    a = read_log(_write("nodes.log", text))
    led = a.ledger(a.launches[0])
    assert led.launch.args.get("nnodes") == 2
    assert led.device_totals is not None and led.pre_start == ()


def test_the_nvidia_smi_fallback_line_puts_the_unified_memory_caveat_first() -> None:
    """021 (DGX Spark): SGLang says nvidia-smi gave no memory total (line 10); the first finding
    says what that means for every free figure (review23 minor), and a log without the line
    (001) gets no such finding."""
    import logmem.analysis.findings as fd
    from logmem.analysis.attribution import build_ledger
    from logmem.api import read_log
    from logmem.report.sentences import finding_text

    path = corpus_log("021-")
    line = next(
        n
        for n, text in enumerate(path.read_text().splitlines(), 1)
        if "Failed to get GPU memory capacity from nvidia-smi" in text
    )
    (L,) = read_log(str(path)).launches
    first = build_ledger(L).findings[0]
    assert isinstance(first, fd.UnifiedMemory) and first.line == line
    assert "system's available RAM" in finding_text(first)
    (L,) = read_log(str(corpus_log("001-"))).launches
    assert not any(isinstance(f, fd.UnifiedMemory) for f in build_ledger(L).findings)


def test_a_low_point_of_system_ram_is_no_limit_an_allocation_must_fit() -> None:
    """Review D#10. 021: nvidia-smi gave no total (line 10), so the bar readings are system RAM;
    the least one (5.62 GiB, line 160, bar num_tokens 8) is not what an extra allocation would
    have to fit in. 001 (discrete GPUs, no fallback line) keeps 'bottomed out'."""
    import logmem.analysis.findings as fd
    from logmem.analysis.attribution import build_ledger
    from logmem.api import read_log
    from logmem.report.sentences import finding_text

    path = corpus_log("021-")
    assert b"num_tokens=8 avail_mem=5.62 GB" in path.read_bytes().split(b"\n")[159]
    (L,) = read_log(str(path)).launches
    (low,) = [f for f in build_ledger(L).findings if isinstance(f, fd.BottomedOut)]
    assert (low.line, low.unified_line) == (160, 10)
    text = finding_text(low)
    assert "The lowest reading was 5.62 GiB (line 160" in text and "system's available RAM" in text
    assert "not a fixed limit" in text and "bottomed out" not in text
    assert "is what an extra allocation there would have to fit in" not in text
    for f in build_ledger(read_log(str(corpus_log("001-"))).launches[0]).findings:
        assert not isinstance(f, fd.BottomedOut) or f.unified_line is None
