"""Which flag shrinks a launch's decode capture list: whether the launch gave the list itself
(``--cuda-graph-bs``), read from what the log shows, and SGLang's rule for the era
(rules.capture_list_flags). Facts only; logmem.report.lever_words words them."""

from __future__ import annotations

from collections.abc import Sequence

from logmem.analysis.comm_inputs import launch_command
from logmem.frozen import frozen
from logmem.model.captures import month
from logmem.model.records import Launch
from logmem.sglang import rules
from logmem.sglang.capture_lists import ListContext, generated_list


class Given:
    """How the log tells that the launch gave its list (CaptureLever.basis)."""

    COMMAND = "command line"  # the echoed command line has (or lacks) the list flag
    DUMP = "dump"  # the dump's own field (rules.list_given_by_dump)
    NOT_GENERATED = "not generated"  # the dumped list is none of SGLang's generated lists


@frozen
class CaptureLever:
    """The flags of a decode-type graph's capture list and whether the launch passed one."""

    cap_flag: str  # --cuda-graph-max-bs (or -decode)
    list_flag: str  # --cuda-graph-bs (or -decode)
    given: bool | None  # the launch passed the list; None: the log cannot tell
    overrides: bool | None  # a passed list sets the largest size (rules.capture_list_flags)
    basis: str | None = None  # Given.*: how ``given`` was told
    dumped: tuple[int, ...] = ()  # the dump's list (the one passed, when given)

    @property
    def use_list(self) -> bool:
        """Only dropping sizes from the list shrinks it: the list was passed and, in this era,
        overrides the cap flag."""
        return self.given is True and self.overrides is True

    @property
    def cap_works(self) -> bool:
        """The cap flag shrinks the list for certain: no list passed, or one the era cuts."""
        return self.given is False or (self.given is True and self.overrides is False)


def _given_by_command(launch: Launch, list_flag: str) -> bool | None:
    cmd = launch_command(launch)
    if cmd is None:
        return None
    words = cmd.argv.replace("=", " ").replace("'", " ").replace(",", " ").split()
    if list_flag in words or "--cuda-graph-bs" in words:
        return True
    return None if "--config" in words else False


def capture_lever(launch: Launch, graph: str = "decode") -> CaptureLever | None:
    """The lever of ``graph``'s capture list; None for graphs sized in tokens or no dump."""
    args = launch.args
    sa = launch.server_args
    if sa is None:
        return None
    m = month(sa)
    flags = rules.capture_list_flags(graph, args, m)
    if flags is None:
        return None
    listed = args.get("cuda_graph_bs_decode", args.get("cuda_graph_bs"))
    ok = isinstance(listed, list) and all(type(x) is int and x > 0 for x in listed)
    dumped = tuple(sorted(set(listed))) if ok and listed else ()
    given, basis = _given_by_command(launch, flags.listed), Given.COMMAND
    if given is None:
        given, basis = rules.list_given_by_dump(args, m), Given.DUMP
    if given is None and dumped and not generated_list(dumped, ListContext.from_args(args, None)):
        given, basis = True, Given.NOT_GENERATED
    known = basis if given is not None else None
    return CaptureLever(flags.cap, flags.listed, given, flags.overrides, known, dumped)


def cap_fix_flag(
    lever: CaptureLever | None, cap_flag: str, cap: int, listed: Sequence[int]
) -> tuple[str, str]:
    """The flag and value of a fix that caps the list's largest size at ``cap``: the passed
    list without its sizes above ``cap`` where only that works (CaptureLever.use_list), else
    the cap flag at ``cap``."""
    if lever is not None and lever.use_list:
        kept = sorted({x for x in lever.dumped or listed if x <= cap}) or [cap]
        return lever.list_flag, " ".join(str(x) for x in kept)
    return cap_flag, str(cap)
