"""Errors with fixed meanings; cli.py maps them to exit code 1 (usage errors are 2)."""

from __future__ import annotations


class LogmemError(Exception):
    """Base class: a clear message for the user, never a traceback."""


class InputError(LogmemError):
    """A file cannot be opened, decompressed or read."""


class NoStartupError(LogmemError):
    """The input holds no SGLang start-up lines at all."""

    def __init__(self, names: list[str]) -> None:
        shown = ", ".join(names) if names else "the input"
        super().__init__(
            f"no SGLang start-up lines found in {shown}; is this an SGLang server log? "
            "(`logmem lines FILE` lists what was recognised)"
        )


class SelectionError(LogmemError):
    """--launch / --rank names something the log does not have."""


class FitError(LogmemError):
    """Launches cannot be compared or fitted (they differ in more than the varied setting)."""


class NoSlopeError(FitError):
    """No slope came out of launches that should give one; `reasons` are the compare stage's
    typed notes (logmem.compare.notes), put in words by the API (logmem.report.compare.notes)."""

    def __init__(self, lead: str, reasons: tuple[object, ...], joined: bool) -> None:
        super().__init__(lead)
        self.lead = lead
        self.reasons = reasons
        self.joined = joined  # "lead (r1; r2)" (fit) or "lead: r" (--slope-from)


class EnvError(LogmemError):
    """An --env / --env-file entry that is not KEY=VALUE (the CLI treats it as a usage error)."""


class InputWarning(UserWarning):
    """An input was read only in part (a cut or corrupt stream, --max-bytes); the CLI
    shows it as "Warning: ..." for every command, reports also say it in their notes."""
