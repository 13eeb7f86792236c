"""Review 21's wording classes: a drop that holds several lazily allocated cells is given to none
of them alone; the platform's collective library named where the log shows the platform;
sentences that assert only what the log supports (cpu_offload_gb, the kernel log, unified memory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import corpus_log, corpus_logs, fixture_logs
from logmem.analysis import comm_join as cj
from logmem.analysis import findings as fd
from logmem.analysis.attribution import build_ledger
from logmem.analysis.ledger import Lazy, What
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.report.causes import cause_name, cause_note
from logmem.report.comm_sentences import comm_finding_text, lands_label, shared_names
from logmem.report.communication import comm_json, comm_view
from logmem.report.sentences import finding_text
from logmem.sglang.comm import Library, Mechanism


def _led(path: Path):  # type: ignore[no-untyped-def]
    return build_ledger(read_log(str(path)).launches[0])


def _analyze(path: Path, *extra: str) -> str:
    r = CliRunner().invoke(cli, ["analyze", str(path), *extra])
    assert r.exit_code == 0, r.output
    return r.output


def _com(path: Path) -> cj.Communication:
    c = cj.communication(_led(path))
    assert c is not None
    return c


# --- 1. lazy cells in one drop --------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "groups", "buffsize"),
    [
        ("019-", ["TP", "attention TP"], "HCCL_BUFFSIZE=1600 MB"),
        ("036-", ["TP"], "HCCL_BUFFSIZE=720"),
    ],
)
def test_ascend_first_bucket_names_hccl_and_deepep_together(
    prefix: str, groups: list[str], buffsize: str
) -> None:
    c = _com(corpus_log(prefix))
    j = c.deepep
    assert j is not None
    assert [x.group for x in j.shared] == groups
    assert all(x.mechanism is Mechanism.PEER_BUFFERS for x in j.shared)
    text = " ".join(comm_finding_text(f) for f in c.findings if isinstance(f, cj.DeepEPAttributed))
    assert "HCCL peer buffers" in text and buffsize in text and "DeepEP buffer" in text
    assert "cannot split" in text and "it lands in" not in text
    label = lands_label(j)
    assert label.startswith("lazy + graph:") and not label.startswith("DeepEP")
    grids = comm_view(c).grids
    assert any("cannot split" in n for g in grids for n in g.notes)
    doc = comm_json(c)["measured"]["deepep"]
    assert [s["group"] for s in doc["shared"]] == groups


@pytest.mark.parametrize("prefix", ["019-", "036-"])
def test_ascend_largest_bucket_is_not_the_max_bs_lever(prefix: str) -> None:
    led = _led(corpus_log(prefix))
    split = next(f for f in led.findings if isinstance(f, fd.GraphSplit) and f.graph == "decode")
    assert Lazy.PEER_BUFFERS in split.largest.facts.lazy and Lazy.DEEPEP in split.largest.facts.lazy
    text = finding_text(split)
    assert "do not shrink with the bucket size" in text
    assert "HCCL peer buffers and the DeepEP buffer" in text
    assert not text.endswith("the largest bucket does.")
    note = next(f for f in led.findings if isinstance(f, fd.LargestBucketNote))
    words = finding_text(note)
    assert "HCCL peer buffers" in words and "cannot split" in words and "its own graph" in words
    assert "HCCL peer buffers" in cause_note(split.largest)


def test_a_lazy_list_without_fixed_size_buffers_keeps_the_max_bs_advice() -> None:
    """EP all-to-all and DP-attention buffers follow the captured sizes: no caveat for them."""
    led = _led(
        Path(__file__).parent.parent
        / "fixtures"
        / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"
    )
    split = next(
        f for f in led.findings if isinstance(f, fd.GraphSplit) and f.graph == "target verify"
    )
    assert split.largest.facts.lazy and Lazy.DEEPEP not in split.largest.facts.lazy
    assert finding_text(split).endswith("the largest bucket does.")


ALL = sorted({p.name: p for p in [*corpus_logs(), *fixture_logs()]}.values())


@pytest.mark.parametrize("path", ALL, ids=[p.name[:40] for p in ALL])
def test_no_lazy_drop_goes_to_one_cell_alone(path: Path) -> None:
    """Wherever DeepEP's bucket also holds other lazy cells, every sentence about it names them."""
    led = _led(path)
    c = cj.communication(led)
    if c is None or c.deepep is None:
        return
    j = c.deepep
    text = " ".join(comm_finding_text(f) for f in c.findings if isinstance(f, cj.DeepEPAttributed))
    for name in shared_names(j):
        assert name in text
    if j.shared:
        assert lands_label(j).startswith("lazy + graph:")
    assert "graph" in text  # the bucket's own graph is always in the drop


# --- 3. the platform's library --------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "lib", "label"),
    [
        ("019-", Library.HCCL, "HCCL / gloo"),
        ("003-", Library.RCCL, "RCCL / gloo / custom all-reduce"),
        ("011-", Library.NCCL, "NCCL / gloo / custom all-reduce"),
    ],
)
def test_ledger_names_the_platform_library(prefix: str, lib: Library, label: str) -> None:
    led = _led(corpus_log(prefix))
    assert led.platform.library is lib
    c = cj.communication(led)
    assert c is not None and c.plan.library == lib.value  # the table and the ledger agree
    rl = led.ranks[0]
    init = next(c for p in rl.phases for c in p.causes if c.what is What.COMMS)
    assert cause_name(init) == label


# --- 2. cpu_offload_gb is a cap ---------------------------------------------------------------


def test_cpu_offload_is_an_upper_bound_not_what_is_kept() -> None:
    led = _led(corpus_log("023-"))
    w = next(f for f in led.findings if isinstance(f, fd.Weights))
    assert w.cpu_offload_gb == 48
    text = finding_text(w)
    assert "keeps that much" not in text
    assert "up to 48 GiB" in text and "may live in CPU memory" in text
    assert "1.50 GiB is what stayed on the GPU" in text


# --- 3. canned wording ------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["023-", "026-", "031-"])
def test_a_cut_log_does_not_claim_the_kernel_log_shows_an_oom_kill(prefix: str) -> None:
    text = " ".join(_analyze(corpus_log(prefix)).split())
    assert text.splitlines()[0].startswith("Launch") or "Incomplete" in text
    assert "the kernel log shows" not in text
    assert "if the OOM killer ended it, the kernel log would say so" in text


@pytest.mark.parametrize("prefix", ["019-", "036-"])
def test_ascend_reports_name_no_unified_memory_device(prefix: str) -> None:
    led = _led(corpus_log(prefix))
    assert led.platform.device == "npu" and not led.platform.unified_possible
    text = _analyze(corpus_log(prefix))
    assert "GB10" not in text and "unified-memory" not in text
    # A rise the ledger cannot explain names the NPU's own monitor; the rise after the draft's
    # pool step is its embed/lm_head given back (a DraftReleased finding), not unexplained.
    rose = [f for f in led.findings if isinstance(f, fd.Unexplained) and f.bytes < 0]
    assert all("npu-smi" in finding_text(f) for f in rose)
    assert any(isinstance(f, fd.DraftReleased) for f in led.findings)


def test_cuda_reports_keep_the_unified_memory_reason() -> None:
    """021 runs on a GB10 (DGX Spark): unified memory is a real reason there."""
    led = _led(corpus_log("021-"))
    assert led.platform.unified_possible
    rose = [f for f in led.findings if isinstance(f, fd.BucketsRose)]
    assert rose and "such as GB10" in finding_text(rose[0])


def test_rocm_without_aiter_lines_is_told_by_the_amd_device_name() -> None:
    """006 (RDNA4, triton backend, custom AR off) prints no aiter line; its MoE kernel-config
    lookup names the GPU (device_name=AMD_Radeon_AI_PRO_R9700): RCCL in the ledger and table."""
    led = _led(corpus_log("006-"))
    assert led.platform.device == "rocm" and led.platform.library is Library.RCCL
    c = cj.communication(led)
    assert c is not None and c.plan.library == "RCCL"
    text = _analyze(corpus_log("006-"))
    assert "RCCL / gloo" in text and "2 RCCL communicators" in text
    assert "NCCL /" not in text and "NCCL communicator" not in text


def test_an_nvidia_device_name_stays_nccl() -> None:
    led = _led(corpus_log("011-"))
    names = {e.name for e in led.launch.all_events() if type(e).__name__ == "DeviceName"}
    assert names == {"NVIDIA_H100_80GB_HBM3"}
    assert led.platform.library is Library.NCCL


def test_a_fragment_with_ep_tags_says_its_first_bucket_holds_unnamed_lazy_allocations() -> None:
    """026 has no server_args, but every rank is tagged EP0..EP3: its first bucket's 5.69 GiB
    is not the graph's alone. No moe_a2a_backend is logged, so no all-to-all buffer is named
    (review25 #6): the lazy allocations are there, which ones the excerpt does not say."""
    led = _led(corpus_log("026-"))
    rl = led.rank("DP0 TP0 EP0")
    assert rl is not None
    cap = rl.phase("capture:decode")
    assert cap is not None
    lazy = [c for c in cap.causes if c.facts.lazy]
    assert len(lazy) == 1 and lazy[0].facts.lazy == (Lazy.UNNAMED,)
    assert lazy[0].what is What.LARGEST  # the first bucket (bs 32), not the stopped stretch
    note = cause_note(lazy[0])
    assert lazy[0].facts.ep_size == 4 and "ep_size=4" in note
    assert "all-to-all buffers" not in note and "does not name" in note


def test_ep_all_to_all_is_named_only_for_a_backend_the_dump_names() -> None:
    from types import SimpleNamespace

    from logmem.analysis.captures import lazy_allocs
    from logmem.analysis.ledger import Lazy as Lz

    ranks = _led(corpus_log("026-")).launch.ranks

    def launch(args: dict[str, object]) -> Any:
        return SimpleNamespace(args=args, ranks=ranks)

    def with_args(args: dict[str, object]) -> tuple[Lz, ...]:
        return lazy_allocs(launch(args), True)[0]

    assert with_args({"ep_size": 4, "moe_a2a_backend": "none"}) == ()
    assert with_args({"ep_size": 4}) == ()  # no backend in the dump
    assert with_args({"ep_size": 4, "moe_a2a_backend": "mooncake"}) == (Lz.EP_ALL_TO_ALL,)
    # DeepEP's one buffer per process is the all-to-all: a later capture allocates none again.
    deepep = {"ep_size": 4, "moe_a2a_backend": "deepep"}
    assert with_args(deepep) == (Lz.DEEPEP,)
    assert lazy_allocs(launch(deepep), False)[0] == ()


@pytest.mark.parametrize(
    ("device", "words"),
    [("HIP", "RCCL, the HIP context"), ("NPU", "HCCL, the NPU context"), ("CUDA", "NCCL, CUDA")],
)
def test_outside_pytorch_names_the_devices_library(device: str, words: str) -> None:
    from logmem.analysis.failures import facts as fx
    from logmem.report.notes import note_text

    gib = 1 << 30
    n = fx.OutsidePyTorch(80 * gib, 79 * gib, 70 * gib, 9 * gib, None, False, device)
    text = note_text(n)
    assert words in text
    if device != "CUDA":
        assert "NCCL" not in text and "CUDA context" not in text


def test_custom_ar_off_names_the_table_library() -> None:
    f = cj.CustomAROff(7, "failed", "with CUDART error: peer access is not supported", "RCCL")
    assert "all-reduces through RCCL" in comm_finding_text(f)
    c = _com(
        Path(__file__).parent.parent / "fixtures" / "deepep-ll-decode-explicit-mfs-constructed.log"
    )
    assert c.plan.library == "NCCL"


def test_whatif_max_bs_says_the_lazy_part_of_the_bucket_stays() -> None:
    text = _cli("whatif", str(corpus_log("019-")), "--cuda-graph-max-bs", "16")
    flat = " ".join(text.split())
    assert "8.63 GiB also holds the HCCL peer buffers and DeepEP's buffer" in flat
    assert "that part of the bucket stays" in flat
    plain = " ".join(_cli("whatif", str(corpus_log("011-")), "--cuda-graph-max-bs", "16").split())
    assert "also holds" not in plain


def _cli(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _all_logs() -> list[Path]:
    return [*corpus_logs(), *fixture_logs()]


@pytest.mark.parametrize("path", _all_logs(), ids=lambda p: p.name)
def test_no_report_names_cublas_off_cuda(path: Path) -> None:
    """The math library whose workspaces a first forward allocates is the platform's own:
    cuBLAS is CUDA's; an Ascend, ROCm or MUSA log is never told about it (019, 036, 003)."""
    from logmem.analysis.platform import platform

    out = CliRunner().invoke(cli, ["analyze", str(path), "-f", "text"])
    assert out.exit_code in (0, 1)
    for L in read_log(str(path), require_startup=False).launches:
        if platform(L).device in ("npu", "rocm", "musa"):
            assert "cuBLAS" not in out.output, path.name
