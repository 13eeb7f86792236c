"""What a test harness's traceback checked: the figures of a failed unittest comparison.

A harness traceback (traces.noise_kind) is not the server's error, but it is not nothing: a
CI test that asserts on the server's metrics (a latency, a throughput, an accuracy) failed
because the server missed a target. The report must say which figures failed, so these are
read off the assertion's message in unittest's own wording (Lib/unittest/case.py:
assertLess "%s not less than %s", assertLessEqual "%s not less than or equal to %s",
assertGreater "%s not greater than %s", assertGreaterEqual "%s not greater than or equal
to %s"), and the benchmark result table printed before it, when there is one, is named.
"""

from __future__ import annotations

from logmem.analysis.failures.records import PythonError, RankError
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.parse.lazy import lazy
from logmem.parse.lines import Source

_NUM = r"[-+]?\d{1,15}(?:\.\d{1,15})?(?:[eE][-+]?\d{1,3})?"
# unittest's comparison messages (case.py); a custom msg after " : " is allowed, not read.
_COMPARE = lazy(
    rf"^(?P<actual>{_NUM}) not (?P<rel>less than or equal to|less than|greater than or equal to"
    rf"|greater than) (?P<limit>{_NUM})(?:\s|$| :)"
)

# The relation the test required, for each of unittest's wordings.
_REQUIRED = {
    "less than or equal to": "<=",
    "less than": "<",
    "greater than or equal to": ">=",
    "greater than": ">",
}


@frozen
class TestCheck:
    """A failed comparison: the measured figure, the limit, the relation the test required
    (figures as printed, so the report quotes them exactly)."""

    actual: str
    limit: str
    required: str  # "<=", "<", ">=", ">"
    source: Source | None


def test_check(error: RankError | None) -> TestCheck | None:
    """The figures of a failed AssertionError comparison, None for any other message."""
    if error is None or not isinstance(error.record, PythonError):
        return None
    if error.record.exc_type != "AssertionError":
        return None
    m = _COMPARE.search(error.record.message.strip())
    if m is None:
        return None
    return TestCheck(m["actual"], m["limit"], _REQUIRED[m["rel"]], error.source)


def results_before(launch: Launch, at: Source | None) -> Source | None:
    """The last benchmark result table printed before `at` in the same file (what the test
    measured), None without one."""
    if at is None:
        return None
    found = None
    for e in launch.all_events():
        if not isinstance(e, ev.BenchResult) or e.source.path != at.path:
            continue
        if e.source.line_no < at.line_no and (found is None or e.source.line_no > found.line_no):
            found = e.source
    return found
