"""What a communication table is derived from besides server_args: the environment (what a
log echoed, then the user's --env-file and --env) and the log's own evidence about the
mechanisms (custom all-reduce lines, ``All Reduce config``, the echoed command line).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from logmem.analysis.platform import is_hip, platform_events
from logmem.errors import EnvError, InputError
from logmem.frozen import frozen
from logmem.model.command import command_flags, last_command
from logmem.parse import events as ev
from logmem.sglang.eras import printed_on


@frozen
class EnvValue:
    key: str
    value: str
    origin: str  # "--env", "--env-file", "log"
    line: int | None = None  # the log line that printed it


@frozen
class Env:
    """The environment the cells are sized with: what the log echoed, then the user's
    --env-file and --env on top (the user knows the deployment; the log may be partial)."""

    values: tuple[EnvValue, ...] = ()

    def get(self, key: str) -> EnvValue | None:
        return next((v for v in reversed(self.values) if v.key == key), None)

    @property
    def mapping(self) -> dict[str, str]:
        return {v.key: v.value for v in self.values}

    def merged(self, more: Iterable[EnvValue]) -> Env:
        return Env((*self.values, *more))


def parse_env_items(items: Iterable[str], origin: str) -> list[EnvValue]:
    """``KEY=VALUE`` strings (an --env option each, or an --env-file's lines; blank lines,
    ``#`` comments and a leading ``export`` are skipped in files)."""
    out = []
    for raw in items:
        text = raw.strip()
        if origin == "--env-file":
            if not text or text.startswith("#"):
                continue
            text = text.removeprefix("export ").strip()
        key, eq, value = text.partition("=")
        key = key.strip()
        if not eq or not key or not (key[0].isalpha() or key[0] == "_"):
            raise EnvError(f"{origin} expects KEY=VALUE, got {raw.strip()!r}")
        if not all(c.isalnum() or c == "_" for c in key) or not key.isascii():
            raise EnvError(f"{origin}: {key!r} is not an environment variable name")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.append(EnvValue(key, value, origin))
    return out


def read_environment(
    env: Iterable[str] = (), env_file: str | os.PathLike[str] | None = None
) -> tuple[tuple[str, str, str], ...]:
    """``api.read_environment``: the --env-file's entries, then --env's, as (key, value, origin).
    Raises EnvError for a malformed entry, InputError for an unreadable file."""
    out = []
    if env_file is not None:
        try:
            with open(env_file, encoding="utf-8") as fh:
                text = fh.read(1 << 20)
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"--env-file {os.fspath(env_file)}: cannot read: {e}") from None
        out += parse_env_items(text.splitlines(), "--env-file")
    out += parse_env_items(env, "--env")
    return tuple((v.key, v.value, v.origin) for v in out)


def env_values(analysis: Any) -> tuple[EnvValue, ...]:
    """The user's environment an Analysis carries (``Analysis.env``: (key, value, origin))."""
    return tuple(EnvValue(k, v, o) for k, v, o in getattr(analysis, "env", ()))


def log_env(events: Iterable[ev.Event], before_line: int | None) -> list[EnvValue]:
    """The environment a launcher echoed before SGLang's server_args dump: the test harnesses'
    ``ENV_VAR_CASE K:V`` / ``Setting ENV_VAR K=V`` lines and ``K=V`` words before the command.
    Lines after the dump belong to a later start-up in the same file, so they are not used."""
    out = []
    for e in events:
        if before_line is not None and e.source.line_no > before_line:
            continue
        if isinstance(e, ev.LaunchEnv):
            out.append(EnvValue(e.key, e.value, "log", e.source.line_no))
        elif isinstance(e, ev.LaunchCommand):
            out.extend(EnvValue(k, v, "log", e.source.line_no) for k, v in e.env)
    return out


def echoed_env(launch: Any) -> Env:
    """The environment a launch's log echoed before its server_args dump (log_env)."""
    before = launch.server_args.source.line_no if launch.server_args is not None else None
    return Env(tuple(log_env(launch.events, before)))


# --- evidence from the log ------------------------------------------------------------------


@frozen
class Evidence:
    """What a log says about the mechanisms, beyond server_args. Estimates have none."""

    custom_ar_off: ev.CustomAllReduce | None = None  # "disabled" / "failed" line
    custom_ar_impl: ev.CustomAllReduce | None = None  # "[AR] Using ..." line
    all_reduce: ev.AllReduceConfig | None = None  # v2's own line (rank 0 of the group)
    symm_prealloc: ev.MiscMemory | None = None
    hip: bool = False  # ROCm: aiter custom all-reduce, a HIP OOM or an aiter backend
    tp0_init_seen: bool = False  # TP rank 0's init end printed: where v2 would print its line
    kv_bytes_per_token: int | None = None  # per rank, from the logged pools (staging size)
    command: ev.LaunchCommand | None = None
    printed: date | None = None  # the log's date: it bounds the SGLang release from above
    # ROCm's "[aiter] import [module_custom_all_reduce]": the aiter custom all-reduce loaded
    aiter_ar: ev.RocmHint | None = None
    log: bool = False  # the evidence of a log (an estimate from flags has none)

    @property
    def from_log(self) -> bool:
        return self.log or self.tp0_init_seen or self.command is not None


def log_evidence(launch: Any, kv_bytes_per_token: int | None) -> Evidence:
    """Collect the evidence from a Launch (duck-typed: ranks, events, args)."""
    events = list(launch.all_events())
    ar_lines = [e for e in events if isinstance(e, ev.CustomAllReduce)]
    off = next((e for e in ar_lines if e.state in ("disabled", "failed")), None)
    impl = next((e for e in ar_lines if e.state == "using"), None)
    hip = is_hip(platform_events(launch), launch.args)
    aiter = next(
        (e for e in events if isinstance(e, ev.RocmHint) and "module_custom_all_reduce" in e.text),
        None,
    )
    tp0 = any(
        r.init_end is not None and dict(r.tags).get("TP", 0) == 0 and dict(r.tags).get("PP", 0) == 0
        for r in launch.ranks
    )
    cmd = launch_command(launch, events)
    return Evidence(
        custom_ar_off=off,
        custom_ar_impl=impl,
        all_reduce=next((e for e in events if isinstance(e, ev.AllReduceConfig)), None),
        symm_prealloc=next(
            (e for e in events if isinstance(e, ev.MiscMemory) and e.what == "symm_prealloc"), None
        ),
        hip=hip,
        tp0_init_seen=tp0,
        kv_bytes_per_token=kv_bytes_per_token,
        command=cmd,
        printed=printed_on(launch),
        aiter_ar=aiter,
        log=True,
    )


def launch_command(launch: Any, events: list[ev.Event] | None = None) -> ev.LaunchCommand | None:
    """The command line the launcher echoed last before the server_args dump (None: none)."""
    sa = launch.server_args
    before = sa.source.line_no if sa is not None else None
    return last_command(events if events is not None else launch.all_events(), before)


def mfs_explicit(args: Mapping[str, Any], evidence: Evidence) -> bool | None:
    """Whether --mem-fraction-static was given: the echoed command line (its continuation
    lines joined, model.command) says so; a ``--config`` file could also set it, or a word a
    terminal cut into no flag may have been it: unknown then; with no command line, None."""
    cmd = evidence.command
    if cmd is None:
        return None
    return command_flags(cmd).passed("--mem-fraction-static")


def mfs_passed(launch: Any) -> bool | None:
    """``mfs_explicit`` for a launch (its echoed command line): the one answer to whether the
    user passed --mem-fraction-static, for the comm plan and the default-mfs rule alike."""
    return mfs_explicit(launch.args, Evidence(command=launch_command(launch)))
