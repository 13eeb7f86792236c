#!/usr/bin/env python3
"""Benchmarks of what users feed logmem, each against `grep -cE` in the same run.

    python bench/bench.py [--quick] [--only mix,sparse,density,ranks,files,restarts,html,small]
                          [--repeat N] [--keep-dir DIR]

Sections (logs from bench/gen.py, written to the temp folder and deleted after use):

* mix: the realistic 1 GiB log (1.26% keyword lines: HiCache / cache / runtime lines with GB and
  MB figures, access lines with '_', warnings, tracebacks, a restart), with the default
  matcher, the pure-Python one (LOGMEM_MATCHER=python), the default one without its scanner
  process (LOGMEM_SCAN_AHEAD=0) and in one process (LOGMEM_READ_AHEAD=0: no read-ahead
  child); their JSON must be identical.
* sparse: bench_big.py's log (82 keyword lines in 7.65 million), the easy case.
* density: 76 to 370 thousand keyword lines per GiB: wall time, peak RSS, JSON size.
* ranks / files / restarts: 8 to 8192 ranks in one file, 100 to 800 per-rank files,
  10 to 1000 restarts in one file; the last column is the cost of each doubling.
* html: `analyze -f html` of 8 to 4096 ranks.  small: a small log, -f json and -f html.

Every figure is the median of --repeat runs (grep and logmem interleaved, so a busy moment
hits both); RSS is the largest of the runs: /usr/bin/time's (the largest process) or, on Linux,
the summed PSS of logmem and its child processes (read-ahead, scanner) sampled every 50 ms,
whichever is larger. --quick scales the sizes down (256 MiB instead of 1 GiB, up to 2048
ranks, 400 files, 250 restarts, 1024 HTML ranks) and says so in the table. This prints
figures; it asserts nothing about the machine it runs on.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (bench/ is not a package)

ROOT = gen.ROOT
GIB, MIB = gen.GIB, gen.MIB

# Targets (issue 15), printed beside the figures.
TARGET_MIX_RATIO = 1.0
TARGET_RSS_MIB = 100.0
TARGET_DOUBLING = 2.2
TARGET_HTML_4096_S = 5.0
TARGET_SMALL_JSON_S = 0.100
TARGET_SMALL_HTML_S = 0.400


@dataclass
class Run:
    wall: float
    cpu: float | None  # user + system seconds: what the machine's other work does not inflate
    rss_mib: float | None
    out: bytes


def _time_v(stderr: str) -> tuple[float | None, float | None]:
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    u = re.search(r"User time \(seconds\): ([\d.]+)", stderr)
    s = re.search(r"System time \(seconds\): ([\d.]+)", stderr)
    cpu = float(u.group(1)) + float(s.group(1)) if u and s else None
    return cpu, (int(m.group(1)) / 1024 if m else None)


def _tree_rss_mib(root: int) -> float | None:
    """The memory of `root`'s descendants together (Linux /proc; None elsewhere): logmem reads
    a big file with a child process, and /usr/bin/time's figure is the largest one process.
    Each process's PSS, so that the pages a forked child shares with its parent count once."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    # pid (comm) state ppid ...: comm may hold spaces, so split after ')'
                    parents[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {root}, True
    while grew:
        found = {p for p, pp in parents.items() if pp in tree and p not in tree}
        tree |= found
        grew = bool(found)
    total = 0
    for pid in tree - {root}:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                m = re.search(rb"\nPss:\s+(\d+) kB", f.read())
        except OSError:
            continue
        total += int(m.group(1)) if m else 0
    return total / 1024


def run(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> Run:
    timed = os.path.exists("/usr/bin/time")
    full = ["/usr/bin/time", "-v", *cmd] if timed else cmd
    t0 = time.perf_counter()
    # stdout is a pipe, never /dev/null: grep stops at the first match when it sees /dev/null.
    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    summed: float | None = None
    while True:
        try:
            out, err_bytes = p.communicate(timeout=0.05)
            break
        except subprocess.TimeoutExpired:  # sampled every 50 ms; no output is lost
            tree = _tree_rss_mib(p.pid) if timed else None
            if tree is not None:
                summed = max(summed or 0.0, tree)
    wall = time.perf_counter() - t0
    err = err_bytes.decode(errors="replace")
    if p.returncode not in ok:
        sys.exit(f"bench: {' '.join(cmd[:4])} ... exited {p.returncode}\n{err[-2000:]}")
    cpu, rss = _time_v(err) if timed else (None, None)
    if summed is not None:  # the processes together, when a child ran beside logmem
        rss = max(rss or 0.0, summed)
    return Run(wall, cpu, rss, out)


def logmem(*args: str) -> list[str]:
    exe = Path(sys.executable).with_name("logmem")
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "logmem"]
    return [*base, "-q", *args]


def grep(paths: list[Path]) -> list[str]:
    from logmem.parse.patterns import KEYWORDS

    return ["grep", "-cE", "|".join(re.escape(k) for k in KEYWORDS), *map(str, paths)]


def py_env() -> dict[str, str]:
    return {**os.environ, "LOGMEM_MATCHER": "python"}


def no_scanner_env() -> dict[str, str]:
    """The read-ahead child scans for keywords itself (LOGMEM_SCAN_AHEAD=0): what the scanner
    process (logmem.parse.prescan) is worth."""
    return {**os.environ, "LOGMEM_SCAN_AHEAD": "0"}


def one_process_env() -> dict[str, str]:
    """The default reader without its read-ahead child: what the second core is worth."""
    return {**os.environ, "LOGMEM_READ_AHEAD": "0"}


@dataclass
class Fig:
    wall: float  # median
    cpu: float | None  # median
    rss: float | None  # largest
    out: bytes  # of the last run

    def x(self, base: Fig) -> str:
        """This figure as a multiple of `base`: wall (cpu)."""
        w = self.wall / base.wall
        if self.cpu is None or not base.cpu:
            return f"{w:.2f}"
        return f"{w:.2f} ({self.cpu / base.cpu:.2f})"


def measure(
    cmds: dict[str, tuple[list[str], dict[str, str] | None]], repeat: int
) -> dict[str, Fig]:
    """Median wall and CPU, max RSS and last output of each command, the commands interleaved."""
    runs: dict[str, list[Run]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, (cmd, env) in cmds.items():
            runs[name].append(run(cmd, env, ok=(0, 1) if cmd[0] == "grep" else (0,)))
    out = {}
    for name, rs in runs.items():
        rss = [r.rss_mib for r in rs if r.rss_mib is not None]
        cpus = [r.cpu for r in rs if r.cpu is not None]
        out[name] = Fig(
            statistics.median(r.wall for r in rs),
            statistics.median(cpus) if cpus else None,
            max(rss) if rss else None,
            rs[-1].out,
        )
    return out


def warm(paths: list[Path]) -> None:
    """Read the files once so that neither grep nor logmem pays for the disk."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(8 * MIB):
                pass


# --- table ---------------------------------------------------------------------------------


class Table:
    def __init__(self, title: str, cols: list[str]) -> None:
        self.rows: list[list[str]] = []
        print(f"\n## {title}\n")
        print("| " + " | ".join(cols) + " |")
        print("|" + "|".join("---" for _ in cols) + "|", flush=True)

    def row(self, *cells: object) -> None:
        shown = [c if isinstance(c, str) else _fmt(c) for c in cells]
        self.rows.append(shown)
        print("| " + " | ".join(shown) + " |", flush=True)


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}" if v < 100 else f"{v:.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _mib(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


# --- sections ------------------------------------------------------------------------------


@dataclass
class Ctx:
    work: Path
    repeat: int
    quick: bool
    verdicts: list[tuple[str, bool, str]]

    @property
    def size(self) -> int:
        return (256 << 20) if self.quick else GIB

    @property
    def size_label(self) -> str:
        return "256 MiB" if self.quick else "1 GiB"


def _readers(c: Ctx, path: Path) -> dict[str, Fig]:
    """grep, logmem and logmem's pure-Python reader on one file; their JSON must agree."""
    warm([path])
    r = measure(
        {
            "grep": (grep([path]), None),
            "logmem": (logmem("analyze", "-f", "json", str(path)), None),
            "python": (logmem("analyze", "-f", "json", str(path)), py_env()),
            "noscan": (logmem("analyze", "-f", "json", str(path)), no_scanner_env()),
            "one": (logmem("analyze", "-f", "json", str(path)), one_process_env()),
        },
        c.repeat,
    )
    if r["logmem"].out != r["python"].out:
        sys.exit(f"bench: the two readers gave different JSON on {path.name}")
    if r["logmem"].out != r["noscan"].out:
        sys.exit(f"bench: the scanner process changed the JSON of {path.name}")
    if r["logmem"].out != r["one"].out:
        sys.exit(f"bench: reading ahead changed the JSON of {path.name}")
    c.verdicts.append((f"the readers give identical JSON ({path.name})", True, "yes"))
    return r


READER_COLS = ["reader", "wall s", "cpu s", "x grep: wall (cpu)", "peak RSS MiB", "JSON KiB"]


def _reader_rows(t: Table, r: dict[str, Fig]) -> None:
    g = r["grep"]
    t.row("grep -cE", g.wall, g.cpu, "1", _mib(g.rss), "-")
    for name, label in (
        ("logmem", f"logmem ({_default_matcher()})"),
        ("python", "logmem (python)"),
        ("noscan", f"logmem ({_default_matcher()}, no scanner process)"),
        ("one", f"logmem ({_default_matcher()}, one process)"),
    ):
        f = r[name]
        t.row(label, f.wall, f.cpu, f.x(g), _mib(f.rss), len(f.out) / 1024)


def _reader_table(c: Ctx, title: str, kw_per_gib: int) -> dict[str, Fig]:
    path = c.work / f"{title.split()[0]}.log"
    info = gen.write_mix(path, c.size, kw_per_gib=kw_per_gib)
    try:
        r = _readers(c, path)
    finally:
        path.unlink()
    kw = int(r["grep"].out.split()[0])
    lines = f"{info['lines']:,} lines, {kw:,} keyword lines"
    _reader_rows(Table(f"{title}, {c.size_label} ({lines})", READER_COLS), r)
    return r


def sec_mix(c: Ctx) -> None:
    r = _reader_table(c, "realistic mix", gen.REALISTIC_KW_PER_GIB)
    ratio = r["logmem"].wall / r["grep"].wall
    c.verdicts.append(
        (
            f"mix {c.size_label}: analyze -f json <= {TARGET_MIX_RATIO} x grep (goal 0.6)",
            ratio <= TARGET_MIX_RATIO,
            f"{r['logmem'].x(r['grep'])} x (wall (cpu))",
        )
    )


def sec_sparse(c: Ctx) -> None:
    # bench_big.py's log: the start-ups' keyword lines only.
    _reader_table(c, "sparse log", 0)


def sec_density(c: Ctx) -> None:
    t = Table(
        f"keyword density, {c.size_label} each",
        ["keyword lines / GiB", "keyword lines", "grep s", "logmem s", "x grep: wall (cpu)"]
        + ["peak RSS MiB", "JSON KiB"],
    )
    worst = 0.0
    for per_gib in (76_000, 150_000, 250_000, 370_000):
        path = c.work / f"density-{per_gib}.log"
        gen.write_mix(path, c.size, kw_per_gib=per_gib)
        try:
            warm([path])
            r = measure(
                {
                    "grep": (grep([path]), None),
                    "logmem": (logmem("analyze", "-f", "json", str(path)), None),
                },
                c.repeat,
            )
        finally:
            path.unlink()
        g, f = r["grep"], r["logmem"]
        worst = max(worst, f.rss or 0.0)
        kw = int(g.out.split()[0])
        t.row(f"{per_gib:,}", kw, g.wall, f.wall, f.x(g), _mib(f.rss), len(f.out) / 1024)
    c.verdicts.append(
        (
            f"peak RSS <= {TARGET_RSS_MIB:.0f} MiB at every density",
            worst <= TARGET_RSS_MIB,
            f"max {worst:.0f} MiB",
        )
    )


def _sweep(
    c: Ctx,
    title: str,
    label: str,
    sizes: list[int],
    make: Callable[[int], list[Path]],
    args: tuple[str, ...] = ("analyze", "-f", "json"),
    with_grep: bool = True,
) -> list[float]:
    """logmem's median CPU time per size (wall where /usr/bin/time is missing); the last
    column is the step from the size before in CPU time (the sweeps double, so linear is
    2.0). CPU, because on a shared machine the wall time swings with other work."""
    cols = [label, "input MiB", "grep s", "logmem s", "cpu s", "peak RSS MiB", "x previous (cpu)"]
    if not with_grep:
        cols.remove("grep s")
    t = Table(title, cols)
    walls: list[float] = []
    for n in sizes:
        paths = make(n)
        in_mib = sum(p.stat().st_size for p in paths) / MIB
        try:
            warm(paths)
            cmds: dict[str, tuple[list[str], dict[str, str] | None]] = {
                "logmem": (logmem(*args, *map(str, paths)), None)
            }
            if with_grep:
                cmds["grep"] = (grep(paths), None)
            r = measure(cmds, c.repeat)
        finally:
            for p in paths:
                p.unlink()
        f = r["logmem"]
        t_used = f.cpu if f.cpu is not None else f.wall
        prev = f"{t_used / walls[-1]:.2f}" if walls else "-"
        walls.append(t_used)
        cells: list[object] = [n, in_mib]
        if with_grep:
            cells.append(r["grep"].wall)
        cells += [f.wall, f.cpu, _mib(f.rss), prev]
        t.row(*cells)
    return walls


def _doubling(c: Ctx, what: str, sizes: list[int], walls: list[float]) -> None:
    # Only doublings count (the sweeps double); the smallest sizes are start-up, not work.
    steps = [
        b / a
        for (n1, a), (n2, b) in zip(zip(sizes, walls), zip(sizes[1:], walls[1:]))
        if n2 == 2 * n1 and a > 0.3
    ]
    worst = max(steps) if steps else None
    c.verdicts.append(
        (
            f"{what}: each doubling <= {TARGET_DOUBLING} x (cpu)",
            worst is not None and worst <= TARGET_DOUBLING,
            "-" if worst is None else f"worst {worst:.2f} x",
        )
    )


def _one_file(
    c: Ctx, stem: str, write: Callable[[Path, int], object]
) -> Callable[[int], list[Path]]:
    def make(n: int) -> list[Path]:
        p = c.work / f"{stem}-{n}.log"
        write(p, n)
        return [p]

    return make


def _doublings(top: int) -> list[int]:
    return [8 << i for i in range(top.bit_length() - 3)]


def sec_ranks(c: Ctx) -> None:
    sizes = _doublings(2048 if c.quick else 8192)
    walls = _sweep(c, "ranks in one file", "ranks", sizes, _one_file(c, "ranks", gen.write_ranks))
    _doubling(c, "ranks", sizes, walls)


def sec_files(c: Ctx) -> None:
    sizes = [100, 200, 400] if c.quick else [100, 200, 400, 800]

    def make(n: int) -> list[Path]:
        return gen.write_rank_files(c.work / f"files-{n}", n)

    walls = _sweep(c, "per-rank files of one launch", "files", sizes, make)
    for n in sizes:
        shutil.rmtree(c.work / f"files-{n}", ignore_errors=True)
    _doubling(c, "per-rank files", sizes, walls)


def sec_restarts(c: Ctx) -> None:
    sizes = [10, 20, 40, 80, 160, 250] if c.quick else [10, 20, 40, 80, 160, 320, 640, 1000]

    make = _one_file(c, "restarts", gen.write_restarts)
    walls = _sweep(c, "restarts in one file", "restarts", sizes, make)
    _doubling(c, "restarts", sizes, walls)


def sec_html(c: Ctx) -> None:
    sizes = _doublings(1024 if c.quick else 4096)
    make = _one_file(c, "html", gen.write_ranks)
    walls = _sweep(
        c, "HTML report (-f html)", "ranks", sizes, make, ("analyze", "-f", "html"), False
    )
    _doubling(c, "HTML ranks", sizes, walls)
    if not c.quick:
        c.verdicts.append(
            (
                f"HTML for 4096 ranks < {TARGET_HTML_4096_S:.0f} s (cpu)",
                walls[-1] < TARGET_HTML_4096_S,
                f"{walls[-1]:.2f} s",
            )
        )


def _install_kind() -> str:
    """'editable' or 'regular': an editable install (the README's `pip install -e .`) puts an
    import hook in front of every run (setuptools' finder: pathlib, urllib.parse) that a
    regular one (`pip install .`, a wheel) does not have."""
    import json
    from importlib import metadata

    try:
        url = metadata.distribution("logmem").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return "not installed"
    editable = bool(url and json.loads(url).get("dir_info", {}).get("editable"))
    return "editable" if editable else "regular"


def _bytecode_env() -> dict[str, str]:
    """The environment without PYTHONDONTWRITEBYTECODE: with it, an editable install compiles
    every logmem module from source on every run (about 0.2 s here), which no user's install
    does (pip compiles a regular install's bytecode once, an editable one caches it)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def sec_small(c: Ctx) -> None:
    small = gen.fixture_path()
    reps = max(5, c.repeat)
    env = _bytecode_env()
    unset = " (PYTHONDONTWRITEBYTECODE unset for these runs)" if len(env) < len(os.environ) else ""
    print(f"\nInstall: {_install_kind()}{unset}.")
    t = Table(f"small log ({small.name}, median of {reps})", ["command", "wall ms", "cpu ms"])
    png = c.work / "small-plot.png"
    rows = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python: import click, regex (the fixed dependencies)": [
            sys.executable,
            "-c",
            "import click, regex",
        ],
        "logmem --help": logmem("--help"),
        "logmem analyze -f json": logmem("analyze", "-f", "json", str(small)),
        "logmem analyze -f html": logmem("analyze", "-f", "html", str(small)),
        "logmem plot -o PNG": logmem("plot", str(small), "-o", str(png)),
    }
    got = {}
    run(logmem("analyze", "-f", "html", str(small)), env=env)  # bytecode written, caches warm
    for name, cmd in rows.items():
        runs = [run(cmd, env=env) for _ in range(reps)]
        got[name] = statistics.median(r.wall for r in runs)
        cpus = [r.cpu for r in runs if r.cpu is not None]
        cpu = f"{statistics.median(cpus) * 1000:.0f}" if cpus else "-"
        t.row(name, f"{got[name] * 1000:.0f}", cpu)
    j, h = got["logmem analyze -f json"], got["logmem analyze -f html"]
    c.verdicts.append(
        (
            f"small -f json < {TARGET_SMALL_JSON_S * 1000:.0f} ms",
            j < TARGET_SMALL_JSON_S,
            f"{j * 1000:.0f} ms",
        )
    )
    c.verdicts.append(
        (
            f"small -f html < {TARGET_SMALL_HTML_S * 1000:.0f} ms",
            h < TARGET_SMALL_HTML_S,
            f"{h * 1000:.0f} ms",
        )
    )


SECTIONS: dict[str, Callable[[Ctx], None]] = {
    "small": sec_small,
    "mix": sec_mix,
    "sparse": sec_sparse,
    "density": sec_density,
    "ranks": sec_ranks,
    "files": sec_files,
    "restarts": sec_restarts,
    "html": sec_html,
}


def _default_matcher() -> str:
    out = subprocess.run(logmem("--version"), capture_output=True, text=True).stdout
    m = re.search(r"matcher: (\w+)", out)
    return m.group(1) if m else "default"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a few minutes on 2 cores)")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is kept)")
    ap.add_argument(
        "--keep-dir", default=None, help="write the logs here (still deleted after use)"
    )
    args = ap.parse_args()
    names = [s for s in args.only.split(",") if s]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    work = Path(args.keep_dir or tempfile.mkdtemp(prefix="logmem-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # Time logmem as an install runs it, from bytecode: an environment that forbids writing
    # .pyc files would charge every run for compiling the package. The cache goes to the
    # work folder, not the source tree; one run fills it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    run(logmem("analyze", "-f", "html", str(gen.fixture_path())))
    version = "; ".join(
        subprocess.run(logmem("--version"), capture_output=True, text=True).stdout.split("\n")[:-1]
    )
    print(f"# logmem bench{' (--quick: sizes scaled down)' if args.quick else ''}\n")
    print(
        f"{version}; python {sys.version.split()[0]}; {os.cpu_count()} cores; median of {args.repeat}"
    )
    c = Ctx(work, args.repeat, args.quick, [])
    t0 = time.perf_counter()
    try:
        for name in names:
            SECTIONS[name](c)
    finally:
        if not args.keep_dir:
            shutil.rmtree(work, ignore_errors=True)
    print("\n## targets\n")
    for what, ok, fig in c.verdicts:
        print(f"- {'PASS' if ok else 'MISS'}  {what}: {fig}")
    print(f"\n(bench took {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
