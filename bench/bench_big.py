#!/usr/bin/env python3
"""Big-log benchmark: `logmem analyze -f json` against `grep -cE` on the same generated file.

Generates logs of 0.25, 0.5 and 1 GiB under the temp folder from a real multi-rank
start-up (fixtures/, falling back to ../shared/corpus), about 7 million runtime lines per
GiB (Decode / Prefill batch lines, uvicorn access lines, weight-loading tqdm renders),
with a restart (a second server_args line and a full start-up) near the end. Each file
is deleted after it is measured. Prints wall time, ratio to grep, throughput and peak
RSS per size, the verdict against the targets, and the import time of small commands.

Usage: python bench/bench_big.py [--sizes 0.25,0.5,1] [--repeat N] [--keep-dir DIR]
This is a script that prints figures, not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = "001-qwq32b-tp4-l4-docs.log"
GIB = 1 << 30
MIB = 1 << 20

# Targets from issue 8, on the 1 GiB log.
TARGET_RATIO = 1.0
TARGET_RSS_MIB = 150.0
# The pure-Python reader (no hyperscan) may take at most this multiple of grep.
FALLBACK_RATIO = 2.0
# "Linear": every size within this fraction of the straight line fitted through all sizes
# (a fixed start-up cost is allowed: it is the intercept).
LINEAR_TOLERANCE = 0.10


def fixture_path() -> Path:
    for cand in (ROOT / "fixtures" / FIXTURE, ROOT.parent / "shared" / "corpus" / FIXTURE):
        if cand.exists():
            return cand
    sys.exit(f"bench: cannot find {FIXTURE} in fixtures/ or ../shared/corpus/")


# --- generation -------------------------------------------------------------------------


def _ts(sec: int) -> str:
    day, rest = divmod(sec, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"2025-03-{8 + day % 20:02d} {h:02d}:{m:02d}:{s:02d}"


def _runtime_block(rng: random.Random, start_sec: int, n_lines: int, ranks: int) -> bytes:
    """n_lines of runtime noise: no keyword logmem looks for, like a week of serving."""
    out: list[str] = []
    sec = start_sec
    while len(out) < n_lines:
        sec += rng.random() < 0.05
        ts = _ts(sec)
        r = rng.random()
        if r < 0.62:
            tp = rng.randrange(ranks)
            out.append(
                f"[{ts} TP{tp}] Decode batch. #running-req: {rng.randrange(1, 64)}, "
                f"#token: {rng.randrange(100, 40000)}, token usage: {rng.random():.2f}, "
                f"cuda graph: {'True' if rng.random() < 0.9 else 'False'}, "
                f"gen throughput (token/s): {rng.uniform(10, 3000):.2f}, "
                f"#queue-req: {rng.randrange(0, 9)}, "
            )
        elif r < 0.74:
            tp = rng.randrange(ranks)
            out.append(
                f"[{ts} TP{tp}] Prefill batch. #new-seq: {rng.randrange(1, 9)}, "
                f"#new-token: {rng.randrange(1, 8192)}, #cached-token: {rng.randrange(0, 8192)}, "
                f"token usage: {rng.random():.2f}, #running-req: {rng.randrange(0, 64)}, "
                f"#queue-req: {rng.randrange(0, 9)}, "
            )
        elif r < 0.999:
            ip = rng.choice(("127.0.0.1", "10.0.2.141", "10.0.0.207"))
            req = rng.choice(
                (
                    '"POST /generate HTTP/1.1" 200 OK',
                    '"GET /health HTTP/1.1" 200 OK',
                    '"POST /v1/chat/completions HTTP/1.1" 200 OK',
                )
            )
            out.append(f"[{ts}] INFO:     {ip}:{rng.randrange(1024, 65535)} - {req}")
        else:
            # A weight-loading bar (e.g. an update from disk): renders joined by \r.
            total = rng.randrange(4, 20)
            renders = [
                f"Loading safetensors checkpoint shards: {100 * i // total:3d}% Completed | "
                f"{i}/{total} [00:{i:02d}<00:{total - i:02d},  {rng.uniform(1, 3):.2f}it/s]"
                for i in range(total + 1)
            ]
            out.append("\r".join(renders))
    return ("\n".join(out) + "\n").encode()


def generate(path: Path, size: int, seed: int = 8) -> dict[str, int]:
    """Write a log of about `size` bytes: start-up, runtime noise, a restart near the end."""
    rng = random.Random(seed)
    startup = fixture_path().read_bytes()
    if not startup.endswith(b"\n"):
        startup += b"\n"
    ranks = 4
    # A few distinct 1 MiB blocks, cycled: generating 1 GiB line by line would take minutes.
    blocks = [_runtime_block(rng, 3600 * i, 6800, ranks) for i in range(12)]
    restart_at = int(size * 0.93)
    written = lines = 0
    with open(path, "wb", buffering=8 * MIB) as f:
        f.write(startup)
        written += len(startup)
        lines += startup.count(b"\n")
        i = 0
        for goal, then in ((restart_at, startup), (size, b"")):
            # Runtime noise up to the goal, then the restart (a full second start-up).
            while written < goal:
                block = blocks[i % len(blocks)]
                i += 1
                f.write(block)
                written += len(block)
                lines += block.count(b"\n")
            f.write(then)
            written += len(then)
            lines += then.count(b"\n")
    return {"bytes": written, "lines": lines}


# --- measurement ------------------------------------------------------------------------


def grep_keywords() -> list[str]:
    """The literals logmem's prefilter looks for (what grep must find for the same job)."""
    sys.path.insert(0, str(ROOT))
    from logmem.parse.patterns import KEYWORDS

    return list(KEYWORDS)


def _parse_time_v(stderr: str) -> tuple[float | None, float | None]:
    wall = rss = None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    if m:
        rss = int(m.group(1)) / 1024
    m = re.search(
        r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", stderr
    )
    if m:
        wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return wall, rss


def run_measured(
    cmd: list[str], env: dict[str, str] | None = None
) -> tuple[float, float | None, int, bytes]:
    """Wall seconds, peak RSS (MiB), exit code and stdout of one command."""
    time_v = os.path.exists("/usr/bin/time")
    full = ["/usr/bin/time", "-v", *cmd] if time_v else cmd
    t0 = time.perf_counter()
    p = subprocess.run(full, capture_output=True, env=env)
    wall = time.perf_counter() - t0
    rss: float | None = None
    if time_v:
        _, rss = _parse_time_v(p.stderr.decode(errors="replace"))
    else:
        # Children's high-water mark: a lower bound for this run, good enough for the target.
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, rss, p.returncode, p.stdout


def logmem_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("logmem")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "logmem"]


def bench_size(path: Path, repeat: int) -> dict[str, float]:
    """Best-of-`repeat` wall time and peak RSS of grep, logmem and logmem's pure-Python reader."""
    pattern = "|".join(re.escape(k) for k in grep_keywords())
    grep = ["grep", "-cE", pattern, str(path)]
    logmem = [*logmem_cmd(), "-q", "analyze", "--format", "json", str(path)]
    # Warm the page cache once so that neither side pays for the disk.
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    best = {"grep": float("inf"), "logmem": float("inf"), "python": float("inf")}
    rss = {"grep": 0.0, "logmem": 0.0, "python": 0.0}
    outs: dict[str, bytes] = {}
    for _ in range(repeat):
        # Interleaved, so that a busy moment on the machine hits all three alike.
        for name, cmd, env in (
            ("grep", grep, None),
            ("logmem", logmem, None),
            ("python", logmem, {**os.environ, "LOGMEM_MATCHER": "python"}),
        ):
            wall, peak, rc, out = run_measured(cmd, env)
            if name == "grep" and rc not in (0, 1):
                sys.exit(f"bench: grep exited {rc}")
            if name != "grep" and (rc != 0 or not out.startswith(b"{")):
                sys.exit(f"bench: logmem ({name}) exited {rc}")
            best[name] = min(best[name], wall)
            rss[name] = max(rss[name], peak or 0.0)
            outs[name] = out
    if outs["logmem"] != outs["python"]:
        sys.exit("bench: the two matchers gave different JSON")
    import json

    launches = len(json.loads(outs["logmem"])["launches"])
    return {
        "grep_s": best["grep"],
        "logmem_s": best["logmem"],
        "python_s": best["python"],
        "rss_mib": rss["logmem"],
        "python_rss_mib": rss["python"],
        "launches": float(launches),
    }


def import_times() -> dict[str, float]:
    """Wall time of `logmem --help` and of `logmem analyze` on one small log (best of 5)."""
    small = fixture_path()
    out: dict[str, float] = {}
    for name, args in (
        ("logmem --help", ["--help"]),
        ("logmem analyze small.log", ["analyze", "-f", "json", str(small)]),
    ):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([*logmem_cmd(), *args], stdout=subprocess.DEVNULL, check=True)
            best = min(best, time.perf_counter() - t0)
        out[name] = best
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    out["python -c pass"] = time.perf_counter() - t0
    return out


def linear_fit(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """(intercept s, slope s/GiB, largest residual as a fraction of that point's time)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0
    icpt = my - slope * mx
    worst = max(abs(y - (icpt + slope * x)) / y for x, y in points)
    return icpt, slope, worst


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="0.25,0.5,1", help="GiB, comma-separated")
    ap.add_argument("--repeat", type=int, default=2, help="runs per size (the best is kept)")
    ap.add_argument("--keep-dir", default=None, help="generate here and keep the files")
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]

    try:
        import hyperscan  # noqa: F401

        matcher = "hyperscan"
    except ImportError:
        matcher = "python (hyperscan not installed)"
    print(
        f"logmem bench: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
        f"default matcher: {matcher}"
    )
    print(
        f"grep -cE over the {len(grep_keywords())} literals of logmem.parse.patterns.KEYWORDS; "
        f"best of {args.repeat}\n"
    )
    print(
        f"{'size':>8} {'lines':>11} {'grep s':>7} {'logmem s':>8} {'ratio':>6} {'MiB/s':>6} "
        f"{'RSS MiB':>7} | {'python s':>8} {'ratio':>6} {'RSS MiB':>7}"
    )
    results: list[tuple[float, dict[str, float]]] = []
    workdir = (
        Path(args.keep_dir) if args.keep_dir else Path(tempfile.mkdtemp(prefix="logmem-bench-"))
    )
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for gib in sizes:
            path = workdir / f"big-{gib:g}GiB.log"
            info = generate(path, int(gib * GIB))
            try:
                r = bench_size(path, args.repeat)
            finally:
                if not args.keep_dir:
                    path.unlink()
            r["bytes"] = info["bytes"]
            r["ratio"] = r["logmem_s"] / r["grep_s"]
            r["python_ratio"] = r["python_s"] / r["grep_s"]
            mibs = info["bytes"] / MIB / r["logmem_s"]
            print(
                f"{gib:>5g}GiB {info['lines']:>11,} {r['grep_s']:>7.2f} {r['logmem_s']:>8.2f} "
                f"{r['ratio']:>6.2f} {mibs:>6.0f} {r['rss_mib']:>7.1f} | {r['python_s']:>8.2f} "
                f"{r['python_ratio']:>6.2f} {r['python_rss_mib']:>7.1f}"
            )
            results.append((gib, r))
    finally:
        if not args.keep_dir:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    for name, secs in import_times().items():
        print(f"{name:<28} {secs * 1000:7.0f} ms")

    big_gib, big = max(results, key=lambda t: t[0])
    ok_ratio = big["ratio"] <= TARGET_RATIO
    ok_rss = big["rss_mib"] <= TARGET_RSS_MIB
    ok_py = big["python_ratio"] <= FALLBACK_RATIO
    icpt, slope, worst = linear_fit([(g, r["logmem_s"]) for g, r in results])
    ok_linear = worst <= LINEAR_TOLERANCE
    print(f"\nverdict ({big_gib:g} GiB log):")
    print(
        f"  wall <= {TARGET_RATIO:.1f} x grep -E      : {'PASS' if ok_ratio else 'FAIL'} ({big['ratio']:.2f} x)"
    )
    print(
        f"  peak RSS <= {TARGET_RSS_MIB:.0f} MiB        : {'PASS' if ok_rss else 'FAIL'} ({big['rss_mib']:.1f} MiB)"
    )
    print(
        f"  linear in size          : {'PASS' if ok_linear else 'FAIL'} ({icpt:.2f} s + {slope:.2f} s/GiB, "
        f"worst residual {worst * 100:.0f}%)"
    )
    print(
        f"  pure Python <= {FALLBACK_RATIO:.0f} x grep : {'PASS' if ok_py else 'FAIL'} ({big['python_ratio']:.2f} x)"
    )
    return 0 if ok_ratio and ok_rss and ok_linear and ok_py else 1


if __name__ == "__main__":
    sys.exit(main())
