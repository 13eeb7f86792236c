"""The package's layout: no import cycle at module level, every module imports on its own, no
module over the size a maintainer can read (tables and the pattern list excepted)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

PKG = REPO / "logmem"
LIMIT = 500  # lines; "about 500" (issue 11)
# Tables exempt from the limit, and modules a few lines over it while they are being split
# (none now). test_size_allow_list_is_current fails when an entry is no longer over the limit.
TABLES = {"parse/patterns.py"}
SPLITTING: dict[str, str] = {}


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def top_level_imports(path: Path, mod: str, known: set[str]) -> set[str]:
    """The package modules a module imports when it is imported (not lazily, not for typing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m in known and m != mod}


def test_no_import_cycle() -> None:
    mods = modules()
    graph = {m: top_level_imports(p, m, set(mods)) for m, p in mods.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from logmem.b import x\n")
    b.write_text("import logmem.a\n")
    known = {"logmem.a", "logmem.b"}
    assert top_level_imports(a, "logmem.a", known) == {"logmem.b"}
    assert top_level_imports(b, "logmem.b", known) == {"logmem.a"}


# One interpreter imports each module with every logmem module forgotten first: the same as
# importing it alone, without paying for one interpreter per module.
_ALONE = """
import importlib, json, sys
failed = {}
for m in json.loads(sys.argv[1]):
    for k in [k for k in sys.modules if k == "logmem" or k.startswith("logmem.")]:
        del sys.modules[k]
    try:
        importlib.import_module(m)
    except Exception as e:
        failed[m] = f"{type(e).__name__}: {e}"
print(json.dumps(failed))
"""


def test_every_module_imports_on_its_own() -> None:
    names = [m for m in modules() if not m.endswith("__main__")]
    out = subprocess.run(
        [sys.executable, "-c", _ALONE, json.dumps(names)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert json.loads(out.stdout) == {}


def sizes() -> dict[str, int]:
    return {
        p.relative_to(PKG).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in PKG.rglob("*.py")
    }


def test_no_module_over_the_limit() -> None:
    big = {f: n for f, n in sizes().items() if n > LIMIT and f not in TABLES and f not in SPLITTING}
    assert not big, f"modules over {LIMIT} lines (split them by concern): {big}"


def test_size_allow_list_is_current() -> None:
    done = [f for f in SPLITTING if sizes().get(f, 0) <= LIMIT]
    assert not done, (
        f"under {LIMIT} lines now: remove from SPLITTING in tests/test_layout.py: {done}"
    )


def test_sglang_rules_have_one_name_each() -> None:
    """logmem.sglang holds SGLang's rules, one home per rule: no two of its modules define the
    same public class or function (default_mfs.Era / era_of beside eras.Era / era_of named two
    different eras; comm.decode_graph_on repeated reserve.decode_graph_on)."""
    where: dict[str, list[str]] = {}
    for p in sorted((PKG / "sglang").glob("*.py")):
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(p.name)
    assert {k: v for k, v in where.items() if len(v) > 1} == {}


def test_sglang_release_dates_have_one_home() -> None:
    """A release's date is written once, in logmem/sglang/releases.py: the rules name the
    release (``RELEASES["0.5.15"]``). Two copies of one date had drifted apart before."""
    literal = re.compile(r"\bdate\(\s*20\d\d\s*,")
    # Not a release: the month logmem's era (c) label starts (default_mfs says so).
    labels = ("ERA_C_FIRST = ",)
    found = [
        f"{p.name}:{n}"
        for p in sorted((PKG / "sglang").glob("*.py"))
        if p.name != "releases.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line) and not line.startswith(labels)
    ]
    assert found == [], f"dates written outside sglang/releases.py: {found}"
