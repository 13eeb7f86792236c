"""diff, review 28: a launch compared with itself says so first."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli

LOG = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def test_diff_of_a_launch_with_itself_says_so_first() -> None:
    r = CliRunner().invoke(cli, ["diff", str(LOG), str(LOG.parent / "." / LOG.name), "-f", "json"])
    assert r.exit_code == 0, r.output
    (head,) = json.loads(r.output)["headlines"]
    assert head.startswith("A and B are the same launch (launch 0 of the same input)")


def test_two_launches_of_one_file_are_not_the_same_launch() -> None:
    log = FIXTURES / "two-launches-restart-constructed.log"
    r = CliRunner().invoke(
        cli, ["diff", str(log), str(log), "--launch", "0", "--launch-b", "1", "-f", "json"]
    )
    assert r.exit_code == 0, r.output
    assert not any("same launch" in h for h in json.loads(r.output)["headlines"])


def test_a_model_change_is_not_said_not_to_touch_memory() -> None:
    a = FIXTURES / "allreduce-v2-0523-constructed.log"
    b = FIXTURES / "pair-e7-maxbs256-constructed.log"
    r = CliRunner().invoke(cli, ["diff", str(a), str(b)])
    flat = " ".join(r.output.split())
    assert flat.startswith("logmem diff") and "Different models" in flat
    assert "do not touch memory" not in flat
    assert "Ignored (names, paths, seeds: not memory settings; the model is compared by" in flat


def test_token_sources_are_said_per_launch() -> None:
    a = FIXTURES / "allreduce-v2-0523-constructed.log"
    b = FIXTURES / "pair-e7-maxbs256-constructed.log"
    r = CliRunner().invoke(cli, ["diff", str(a), str(b)])
    flat = " ".join(r.output.split())
    assert (
        "Tokens by launch, A: none printed (no KV or summary line); B: max_total_num_tokens."
        in flat
    )
    assert "Tokens from not printed" not in flat
