"""The hook path's argv shortcut must parse exactly like the full argparse parser."""

from __future__ import annotations

import pytest

from automaton.cli import fastpath
from automaton.cli import parser as p

FAST = [
    ["--hook", "claude"],
    ["--hook", "codex", "--project", "/tmp/some project"],
    ["--project", "/p", "--hook", "git"],
    ["--can-edit", "--task", "t", "--file", "src/x.py"],
    ["--can-edit", "--file", "tasks/t/SPEC.md", "--task", "p/sub", "--json"],
    ["--can-edit", "--loop", "nightly", "--loop-worktree", "--file", "a b.py", "--project", "."],
    ["--check-gate", "nightly", "--json"],
    ["--check-gate", "nightly", "--task", "t", "--project", "/p"],
    ["--audit", "--json"],
    ["--loop-list", "--project", "/p", "--json"],
    ["--audit", "--task", "t"],  # a stray modifier: parsed alike, then refused by verb_of
]
SLOW = [
    [],
    ["--hook"],  # missing value: argparse reports it
    ["--hook", "--project"],
    ["--hook=claude"],  # argparse syntax the shortcut does not read
    ["--ho", "claude"],  # an abbreviation
    ["--hook", "claude", "--hook", "codex"],  # repeated: argparse keeps the last
    ["--hook", "-x"],
    ["--hook", ""],
    ["--hook", "claude", "extra"],
    ["--hook", "claude", "--help"],
    ["--hook", "claude", "--approve"],  # two verbs: argparse + verb_of report it
    ["--can-edit", "--focus", "t"],  # nargs="?" flag
    ["--create-task", "x"],  # not a fast verb
    ["--check-gate", "--json"],  # missing value
    ["--loop-list", "--audit"],  # two verbs: argparse + verb_of report it
    ["--approve", "--task", "t"],
]


@pytest.mark.parametrize("argv", FAST)
def test_plain_argv_parses_like_argparse(argv: list[str]) -> None:
    ns = fastpath.plain(argv)
    assert ns is not None
    assert vars(ns) == vars(p.build().parse_args(argv))
    if "--task" in argv and "--audit" in argv:
        with pytest.raises(p.UsageError, match="does not go with"):
            p.verb_of(ns)
    else:
        assert p.verb_of(ns) in fastpath.FAST_VERBS


@pytest.mark.parametrize("argv", SLOW)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    assert fastpath.plain(argv) is None


def test_defaults_cover_every_parser_dest() -> None:
    assert fastpath.defaults() == vars(p.build().parse_args([]))
