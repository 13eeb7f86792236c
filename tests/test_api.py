"""Public Python API: logmem.read_log, the DataFrames, diff/fit/whatif/plot, and light imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import logmem
from conftest import FIXTURES
from logmem.errors import FitError, SelectionError

LOG_001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
LOG_021 = FIXTURES / "021-laguna-s21-int4-dgx-spark-dflash-spec.log"
# Constructed launches that differ only in cuda_graph_max_bs (fixtures/make_pairs.py).
E7 = [FIXTURES / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256, 512)]
HEAVY = ("pandas", "matplotlib", "numpy")


def _modules_after(code: str) -> list[str]:
    """Heavy modules a fresh interpreter holds after running `code`."""
    probe = (
        f"{code}\nimport sys, json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_logmem_is_light() -> None:
    assert _modules_after("import logmem") == []
    assert _modules_after("import logmem; logmem.read_log") == []


def test_help_and_json_output_never_import_pandas_or_matplotlib(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    run = f"from logmem.cli.main import main; main(['analyze', {str(LOG_001)!r}, '-f', 'json', '-o', {str(out)!r}])"
    assert _modules_after(run) == []
    assert json.loads(out.read_text())["launches"]
    assert _modules_after("from logmem.cli.main import main; main(['--help'])") == []
    assert (
        _modules_after(f"from logmem.cli.main import main; main(['analyze', {str(LOG_001)!r}])")
        == []
    )


def test_read_log_returns_an_analysis() -> None:
    a = logmem.read_log(str(LOG_001))
    assert isinstance(a, logmem.Analysis)
    assert [r.label for r in a.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    assert len(a.launches) == 1
    assert any("Weights take 15.54 GiB" in f for f in a.findings)
    led = logmem.build_ledger(a.launches[0])
    assert isinstance(led, logmem.LaunchLedger) and led.binding_rank == "TP0"


def test_ledger_frame_is_tidy_and_adds_up() -> None:
    a = logmem.read_log(str(LOG_001))
    df = a.ledger_frame()
    assert list(df.columns[:8]) == [
        "launch",
        "rank",
        "phase",
        "cause",
        "gib",
        "bytes",
        "kind",
        "first_line",
    ]
    assert str(df["first_line"].dtype) == "Int64" and str(df["bytes"].dtype) == "int64"
    assert set(df["rank"]) == {"TP0", "TP1", "TP2", "TP3"}
    assert set(df["kind"]) <= {"logged", "derived", "estimated", "unattributed"}
    # The causes of each phase add up to the phase's drop, exactly, in bytes.
    led = logmem.build_ledger(a.launches[0])
    sums = df.groupby(["rank", "phase"], sort=False)["bytes"].sum()
    for rl in led.ranks:
        for p in rl.phases:
            assert sums[(rl.rank, p.key)] == p.delta_bytes
    weights = df[(df["rank"] == "TP0") & (df["phase"] == "target_weights")].iloc[0]
    assert weights["gib"] == 15.54 and weights["first_line"] == 53
    estimated = df[df["kind"] == "estimated"]
    assert estimated["first_line"].isna().all()  # an estimate has no log line


def test_samples_frame() -> None:
    df = logmem.read_log(str(LOG_021)).samples_frame()
    assert list(df.columns) == ["launch", "graph", "rank", "size", "avail_gib", "cost_gib", "line"]
    assert df.groupby("graph", sort=False).size().to_dict() == {
        "target prefill": 58,
        "target verify": 8,
        "draft verify": 8,
    }
    first = df.iloc[0]
    assert first["size"] == 8192 and first["avail_gib"] == 12.06 and first["cost_gib"] == 5.04
    assert logmem.read_log(str(LOG_001)).samples_frame().empty  # bars without free memory


def test_no_module_is_named_like_a_public_function() -> None:
    # logmem.fit once named both a module and the public function; importing the module
    # rebound the package attribute. No public name may be a submodule's name.
    import importlib.util

    for name in logmem.__all__:
        assert importlib.util.find_spec(f"logmem.{name}") is None, name
    assert callable(logmem.fit) and logmem.fit.__module__ == "logmem.api"


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError):
        _ = logmem.no_such_thing  # type: ignore[attr-defined]
    assert {"read_log", "diff", "fit", "whatif", "plot"} <= set(dir(logmem))


def test_diff_and_whatif_of_analyses() -> None:
    a = logmem.read_log(str(LOG_001))
    d = logmem.diff(a, a)
    vm = d.to_json()
    assert vm["schema"] == "logmem.diff/1" and vm["changed_args"] == {}
    assert "logmem diff" in str(d) and d._repr_markdown_().startswith("## logmem diff")
    w = logmem.whatif(a, mem_fraction_static=0.87).to_json()
    # Issue 4's worked figure: rest 6.09 - 21.63 x 0.13 = 3.28 GiB, about 53,700 tokens.
    assert w["predicted"]["rest_gib"] == pytest.approx(3.28, abs=0.01)
    assert abs(w["kv_tokens"] - 53_700) < 200


def test_fit_needs_launches_that_differ_in_max_bs() -> None:
    a = logmem.read_log(str(LOG_001))
    with pytest.raises(FitError):
        logmem.fit(a, a)


def test_launch_selection_errors() -> None:
    a = logmem.read_log(str(LOG_001))
    with pytest.raises(SelectionError):
        logmem.diff(a, a, launch=3)
    with pytest.raises(SelectionError):
        logmem.plot(a, "waterfall", rank="TP9")


def test_plot_returns_figures() -> None:
    from matplotlib.figure import Figure

    a = logmem.read_log(str(LOG_021))
    for kind in ("waterfall", "buckets", "ranks"):
        assert isinstance(logmem.plot(a, kind), Figure)
    with pytest.raises(ValueError, match="kind='fit'"):
        logmem.plot(a, "fit")


def test_fit_and_its_plot_on_the_constructed_launches() -> None:
    from matplotlib.figure import Figure

    analyses = [logmem.read_log(str(p)) for p in E7]
    f = logmem.fit(*analyses)
    vm = f.to_json()
    assert vm["slopes"] and all(s["mib_per_row"] is not None for s in vm["slopes"])
    assert isinstance(logmem.plot(f, "fit"), Figure)
    assert isinstance(logmem.plot(logmem.diff(analyses[0], analyses[1]), "fit"), Figure)


CLI = Path(logmem.__file__).parent / "cli"
# What a command may import from the package: the public API, the reporters it hands results
# to, errors, its own options and output writer, and the progress switch (--quiet).
CLI_MAY_IMPORT = (
    "logmem.api",
    "logmem.cli.",
    "logmem.errors",
    "logmem.report",  # report.render / FORMATS
    "logmem.report.compare.render",
    "logmem.report.figures.plots",
    "logmem.report.estimate.render",
    "logmem.parse.progress",
    "logmem.parse.events",  # type annotations only (TYPE_CHECKING)
    # cli/early.py starts a big input's read-ahead before logmem.api (and all it imports) is
    # loaded: the one call that must not go through the API, or it would come too late.
    "logmem.parse.ahead",
    # ... and asks logmem.parse.sizes first, so that a small input never imports ahead.
    "logmem.parse.sizes",
)


def test_cli_commands_call_only_the_public_api() -> None:
    import ast

    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                mod = node.module
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
                mod = names[0]
            else:
                continue
            if not mod.startswith("logmem"):
                continue
            if mod == "logmem":
                assert all(a.name == "__version__" for a in node.names), path  # type: ignore[union-attr]
                continue

            def allowed(m: str) -> bool:
                return any(m == p or (p.endswith(".") and m.startswith(p)) for p in CLI_MAY_IMPORT)

            # `from logmem.parse import progress` names the module logmem.parse.progress
            ok = allowed(mod) or (len(names) > 1 and all(allowed(n) for n in names[1:]))
            assert ok, f"{path.name} imports {mod}: the CLI calls logmem.api, not internals"
            assert not any(n.rsplit(".", 1)[-1].startswith("_") for n in names[1:]), (path, names)


def test_api_takes_path_specs_and_the_cli_options() -> None:
    log = str(E7[1])
    by_path = logmem.whatif(
        log, cuda_graph_max_bs=384, slope_from=(str(E7[0]), str(E7[2]))
    ).to_json()
    analyses = [logmem.read_log(str(p)) for p in E7]
    by_analysis = logmem.whatif(
        analyses[1], cuda_graph_max_bs=384, slope_from=(analyses[0], analyses[2])
    ).to_json()
    assert by_path["inputs"]["slope"]["measured"] is True
    assert by_path["inputs"]["slope"] == by_analysis["inputs"]["slope"]
    assert by_path["predicted"] == by_analysis["predicted"]
    # The graph grows by the measured slope, not SGLang's 2 MiB-per-bs heuristic.
    assert "measured:" in by_path["inputs"]["slope"]["source"]
    given = logmem.whatif(log, cuda_graph_max_bs=384, mib_per_row=1.5).to_json()
    assert given["inputs"]["slope"]["source"] == "given: --mib-per-row 1.5"
    assert given["predicted"]["graph_change_gib"] != by_path["predicted"]["graph_change_gib"]
    with pytest.raises(SelectionError, match="not both"):
        logmem.whatif(log, mib_per_row=1.0, slope_from=(str(E7[0]), str(E7[2])))


def test_launch_choice_names_the_parameter_or_the_option() -> None:
    from click.testing import CliRunner

    from logmem.cli.main import cli

    two = str(FIXTURES / "two-launches-restart-constructed.log")
    with pytest.raises(
        SelectionError, match=r"holds 2 launches; pick one with launch=N \(0 to 1\)"
    ):
        logmem.diff(two, str(E7[0]))
    with pytest.raises(SelectionError, match=r"^launch_b=5: B \(.*\) holds 2 launch\(es\)"):
        logmem.diff(two, two, launch=0, launch_b=5)
    res = CliRunner().invoke(cli, ["diff", two, two, "--launch", "0", "--launch-b", "5"])
    assert res.exit_code == 1 and "Error: --launch-b 5: B (" in res.stderr
    res = CliRunner().invoke(cli, ["diff", two, str(E7[0])])
    assert res.exit_code == 1 and "pick one with --launch N (0 to 1)" in res.stderr
