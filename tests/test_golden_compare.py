"""Golden diff / fit / whatif reports (text, Markdown, JSON) through the CLI, on fixture logs.

The compare reporters were rewritten around typed view models (issue 11); these files pin
every sentence and number they print, so a refactor that changes one shows up as a diff.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from conftest import GOLDEN, REPO
from golden import compare
from logmem.cli.main import cli

F = "fixtures/"
E7 = [f"{F}pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]
E2 = [f"{F}pair-e2-maxbs{n}-constructed.log" for n in (80, 160)]

CASES: dict[str, list[str]] = {
    "diff-e7-slope": ["diff", E7[0], E7[1]],
    "diff-e2-slope": ["diff", E2[0], E2[1]],
    "diff-mfs-confounder": ["diff", E7[1], f"{F}pair-e7-maxbs256-mfs-differs-constructed.log"],
    # mfs differs besides max bs; both request pools above the largest bs: the slope stands
    "diff-mfs-set-aside": ["diff", E7[0], f"{F}pair-e7-maxbs256-mfs-differs-constructed.log"],
    # one launch sizes its KV pool at start-up, the other after capture (0.5.17+)
    "diff-postcap-vs-start-up": ["diff", E7[1], f"{F}postcap-kv-0517-constructed.log"],
    "diff-mfs-allowed": [
        "diff",
        E7[1],
        f"{F}pair-e7-maxbs256-mfs-differs-constructed.log",
        "--allow-diff",
        "mem_fraction_static",
    ],
    "diff-models-differ": [
        "diff",
        f"{F}001-qwq32b-tp4-l4-docs.log",
        f"{F}024-llama31-8b-docs-notebook-output-oct2024.log",
    ],
    "diff-spec-vs-piecewise": [
        "diff",
        f"{F}021-laguna-s21-int4-dgx-spark-dflash-spec.log",
        f"{F}017-qwen3-8b-b200-piecewise-reference-log-apr2026.log",
    ],
    "diff-restart": [
        "diff",
        f"{F}two-launches-restart-constructed.log",
        f"{F}two-launches-restart-constructed.log",
        "--launch",
        "0",
        "--launch-b",
        "1",
    ],
    "diff-no-slope": ["diff", E2[0], E2[1], "--no-slope"],
    "fit-e7": ["fit", *E7],
    "fit-e2": ["fit", *E2],
    "whatif-001": ["whatif", f"{F}001-qwq32b-tp4-l4-docs.log"],
    "whatif-001-settings": [
        "whatif",
        f"{F}001-qwq32b-tp4-l4-docs.log",
        "--mem-fraction-static",
        "0.8",
        "--cuda-graph-max-bs",
        "64",
        "--activation-reserve",
        "1.5",
        "--context-length",
        "65536",
    ],
    "whatif-slope-from": [
        "whatif",
        E7[1],
        "--cuda-graph-max-bs",
        "384",
        "--slope-from",
        E7[0],
        E7[2],
    ],
    "whatif-mib-per-row": [
        "whatif",
        E7[1],
        "--cuda-graph-max-bs",
        "200",
        "--mib-per-row",
        "1.5",
        "--static-mib-per-row",
        "0.25",
    ],
    "whatif-heuristic": ["whatif", E2[0], "--cuda-graph-max-bs", "120"],
    "whatif-oom-capture": [
        "whatif",
        f"{F}oom-decode-largest-bucket-constructed.log",
        "--mem-fraction-static",
        "0.7",
    ],
    "whatif-truncated": ["whatif", f"{F}023-qwen3-14b-tp2-fp16-truncated-mid-capture.log"],
    "whatif-spec": ["whatif", f"{F}021-laguna-s21-int4-dgx-spark-dflash-spec.log"],
    "whatif-kimi": ["whatif", f"{F}kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"],
    "whatif-silent-stop": ["whatif", f"{F}silent-stop-at-bar-constructed.log"],
    "whatif-oom-piecewise": ["whatif", f"{F}oom-piecewise-constructed.log"],
    "whatif-rocm-crash": ["whatif", f"{F}003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log"],
    "whatif-ascend": [
        "whatif",
        f"{F}019-deepseek-r1-w4a8-ascend-a3-tp16-dp4-deepep-mtp.log",
        "--cuda-graph-max-bs",
        "16",
    ],
    "whatif-logged-mfs": [
        "whatif",
        f"{F}014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log",
        "--logged-mem-fraction-static",
        "0.85",
        "--mem-fraction-static",
        "0.9",
    ],
}

EXT = {"text": "txt", "markdown": "md", "json": "json"}


@pytest.mark.parametrize("fmt", list(EXT))
@pytest.mark.parametrize("case", list(CASES))
def test_compare_golden(
    case: str, fmt: str, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # relative paths: the reports name their inputs
    res = CliRunner().invoke(cli, [*CASES[case], "-f", fmt])
    assert res.exit_code == 0, res.output
    compare(
        res.stdout, GOLDEN / "compare" / case / f"{CASES[case][0]}.{EXT[fmt]}", update=update_golden
    )
