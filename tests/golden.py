"""Golden-file comparison in the style of coverage.py's goldtest: scrub, diff, dump the actual.

On a mismatch the actual output is written to tests/actual/<same relative path> (git-ignored)
and the assertion shows a unified diff; ``pytest --update-golden`` rewrites the golden file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

import logmem

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden"
ACTUAL = TESTS / "actual"

Scrub = tuple[str, str]

# Volatile text: absolute paths (the repo and the shared corpus move between machines) and
# the logmem version (it changes on every release, the golden files should not).
DEFAULT_SCRUBS: tuple[Scrub, ...] = (
    (re.escape(str(REPO) + "/"), ""),
    (re.escape(str(REPO.parent / "shared") + "/"), "../shared/"),
    (r'"logmem": "' + re.escape(logmem.__version__) + '"', '"logmem": "<version>"'),
)


def scrub(text: str, scrubs: Sequence[Scrub] = DEFAULT_SCRUBS) -> str:
    for pattern, replacement in scrubs:
        text = re.sub(pattern, replacement, text)
    return text


def compare(
    actual: str,
    golden_path: Path,
    *,
    update: bool = False,
    scrubs: Sequence[Scrub] = DEFAULT_SCRUBS,
) -> None:
    """Assert that scrubbed `actual` equals the golden file; rewrite the file when `update`."""
    actual = scrub(actual, scrubs)
    golden_path = Path(golden_path)
    if update:
        golden_path.parent.mkdir(parents=True, exist_ok=True)
        golden_path.write_text(actual, encoding="utf-8")
        return
    rel = _relative(golden_path, GOLDEN) or Path(golden_path.name)
    if not golden_path.exists():
        _dump(actual, rel)
        raise AssertionError(
            f"no golden file {_relative(golden_path, REPO) or golden_path}; run "
            "`pytest --update-golden` to create it (then review and commit it)"
        )
    expected = golden_path.read_text(encoding="utf-8")
    if expected == actual:
        return
    dumped = _dump(actual, rel)
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"golden/{rel}",
            tofile=f"actual/{rel}",
        )
    )
    raise AssertionError(
        f"output differs from golden/{rel} (actual written to {dumped}; "
        f"`pytest --update-golden` accepts it):\n{diff}"
    )


def _relative(path: Path, base: Path) -> Path | None:
    return path.relative_to(base) if path.is_relative_to(base) else None


def _dump(actual: str, rel: Path) -> Path:
    out = ACTUAL / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(actual, encoding="utf-8")
    return out
