"""runner.cli.plain_tick: the argv of a scheduled tick parsed without argparse, exactly as the
parser would, and everything else left to the parser."""

from __future__ import annotations

import pytest

from automaton.runner.cli import build, plain_tick

PLAIN = [
    ["--mode", "tick", "--loop", "demo"],
    ["--loop", "demo", "--mode", "tick", "--quiet", "--json"],
    ["--mode", "tick", "--loop", "demo", "--project", "/some/where", "--settings", "s.json", "--json"],
]
NOT_PLAIN = [
    [], ["--mode", "run", "--loop", "demo"], ["--mode", "tick"], ["--loop", "demo"],
    ["--mode", "tick", "--loop", "demo", "--loop", "other"], ["--mode=tick", "--loop", "demo"],
    ["--mode", "tick", "--loo", "demo"], ["--mode", "tick", "--loop", "-x"], ["--mode", "tick", "--loop", ""],
    ["--mode", "tick", "--loop", "demo", "--help"], ["--mode", "tick", "--loop", "demo", "--max-ticks", "2"],
    ["--mode", "tick", "--loop", "demo", "--version"], ["--mode", "tick", "--loop", "demo", "extra"],
    ["--mode", "tick", "--loop"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_tick_argv_parses_as_argparse_does(argv: list[str]) -> None:
    assert vars(plain_tick(argv)) == vars(build().parse_args(argv))


@pytest.mark.parametrize("argv", NOT_PLAIN)
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert plain_tick(argv) is None
