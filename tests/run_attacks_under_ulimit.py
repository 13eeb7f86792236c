"""Every worst-case input of tests/attacks.py under a 1 GiB address-space limit (`ulimit -v`).

    python tests/run_attacks_under_ulimit.py [--scale S] [--limit-mib N] [--keep DIR]

The inputs are made first, then the limit is set on this process (RLIMIT_AS, what
`ulimit -v` sets) and each one is run through `logmem analyze` (text and JSON) and
`logmem lines`, in-process. Each run must end with exit 0 and a report, or exit 1 and a
message naming the file: never a traceback, whatever the memory. Prints one line per run;
exits 1 if any run did otherwise. tests/test_fuzz.py runs it at the default scale (seconds);
--scale 10 and up approaches the issue's sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attacks import ATTACKS, CONFIG, CONFIG_ATTACKS  # noqa: E402

COMMANDS = (["analyze", "-f", "text"], ["analyze", "-f", "json"], ["lines"])
# Inputs that matter only beside a model config: the log's parallel sizes meet the config.
WITH_CONFIG = ("absurd_parallel",)


def run(args: list[str]) -> tuple[int | str, str, str]:
    from logmem.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int | str = main(["-q", *args])
    except BaseException:  # what escapes main() is exactly what must never happen
        code = "escaped"
        err.write(traceback.format_exc())
    return code, out.getvalue(), err.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--limit-mib", type=int, default=1024)
    ap.add_argument("--keep", type=Path, default=None, help="write the inputs here (kept)")
    ap.add_argument("--only", default=None, help="comma-separated attack names")
    opts = ap.parse_args(argv)
    folder = opts.keep or Path(tempfile.mkdtemp(prefix="logmem-attacks-"))
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    wanted = set(opts.only.split(",")) if opts.only else set(ATTACKS) | set(CONFIG_ATTACKS)
    for name, make in ATTACKS.items():
        if name not in wanted and name != "surrogates":  # surrogates: the log beside configs
            continue
        paths[name] = folder / f"{name}.log"
        paths[name].write_bytes(make(opts.scale))
    runs = [(n, [*cmd, str(p)]) for n, p in paths.items() if n in wanted for cmd in COMMANDS]
    runs += [
        (n, ["analyze", str(paths[n]), "--model-config", str(CONFIG)])
        for n in WITH_CONFIG
        if n in paths
    ]
    for name, make_config in CONFIG_ATTACKS.items():
        if name not in wanted:
            continue
        cfg = folder / f"{name}.json"
        cfg.write_bytes(make_config())
        runs.append((name, ["estimate", "--model-config", str(cfg)]))
        runs.append((name, ["analyze", str(paths["surrogates"]), "--model-config", str(cfg)]))
    import logmem.cli.main  # noqa: F401 - imported before the limit, like a started CLI

    limit = opts.limit_mib << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    bad = 0
    for name, args in runs:
        t0 = time.monotonic()
        code, out, err = run(args)
        calm = "Traceback" not in err and (
            (code == 0 and bool(out)) or (code == 1 and err.startswith("Error: "))
        )
        bad += not calm
        last = err.strip().splitlines()[-1][:70] if err.strip() else ""
        shown = " ".join(a if not a.startswith("/") else Path(a).name for a in args)
        print(
            f"{'ok ' if calm else 'BAD'} {name:38} exit {code} {time.monotonic() - t0:5.1f}s"
            f"  {shown[:60]:60} {last}",
            flush=True,
        )
        if not calm:
            print(err, file=sys.stderr)
    print(f"{bad} of {len(runs)} runs were not calm under {opts.limit_mib} MiB")
    if opts.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
