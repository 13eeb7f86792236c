"""How a fix that shrinks a decode capture list is worded: by the flag that does it in the
launch's era (logmem.analysis.capture_lever, rules.capture_list_flags), and, when the log cannot
tell whether the launch passed its own list, both flags with why."""

from __future__ import annotations

from logmem.analysis.capture_lever import CaptureLever


def smaller_sizes(lv: CaptureLever | None, cap_flag: str = "--cuda-graph-max-bs") -> str:
    """A noun phrase: what to change for smaller decode graphs ("a smaller --cuda-graph-max-bs")."""
    if lv is None:
        return f"a smaller {cap_flag}"
    if lv.use_list:
        return (
            f"dropping the largest sizes from {lv.list_flag} (the launch passed that list, which "
            f"sets the largest size: {lv.cap_flag} is ignored with it)"
        )
    if lv.cap_works:
        cuts = f" (it cuts the launch's {lv.list_flag} list too)" if lv.given else ""
        return f"a smaller {lv.cap_flag}{cuts}"
    if lv.given:
        return (
            f"dropping the largest sizes from {lv.list_flag} (the launch passed it; from SGLang "
            f"0.5.3 it overrides {lv.cap_flag}, before that {lv.cap_flag} cut it too)"
        )
    return f"a smaller {lv.cap_flag} ({alternative(lv)})"


def why_unknown(lv: CaptureLever) -> str:
    """Why the log cannot tell which flag shrinks the list."""
    return (
        f"SGLang 0.5.3 on sets the largest size from a passed {lv.list_flag} and ignores "
        f"{lv.cap_flag}, and the log cannot tell whether this launch passed one (the server_args "
        "dump prints the list either way)"
    )


def alternative(lv: CaptureLever) -> str:
    """The clause for a list the log cannot tell was passed."""
    return (
        f"or drop the largest sizes from {lv.list_flag} if the launch passed one: {why_unknown(lv)}"
    )
