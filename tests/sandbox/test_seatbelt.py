"""seatbelt: the SBPL profile as text (no Mac here: what sandbox-exec does with it is not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.core.sandbox import Policy
from automaton.sandbox import SandboxError, seatbelt_profile, wrap_argv


def test_profile_goes_from_broad_to_narrow(tmp_path: Path) -> None:
    work, key = tmp_path / "work", tmp_path / "home" / ".config" / "automaton"
    work.mkdir()
    lines = seatbelt_profile(Policy((work,), (key,), work)).splitlines()
    assert lines[:3] == ["(version 1)", "(allow default)", "(deny file-write*)"]
    assert lines[3].startswith(f'(allow file-write* (subpath "{work}")') and '(literal "/dev/null")' in lines[3]
    assert lines[4] == f'(deny file-read* file-write* (subpath "{key}"))'  # last: it wins over every allow
    assert len(lines) == 5


def test_odd_paths_are_quoted_and_files_are_literals(tmp_path: Path) -> None:
    odd = tmp_path / 'we"ird\\ (dir) ü'
    odd.mkdir()
    single = tmp_path / "notes.md"
    single.write_text("x")
    profile = seatbelt_profile(Policy((odd, single)))
    assert f'(subpath "{tmp_path}/we\\"ird\\\\ (dir) ü")' in profile
    assert f'(literal "{single}")' in profile
    assert "(deny file-read*" not in profile  # nothing hidden


def test_symlinks_are_resolved(tmp_path: Path) -> None:
    real = tmp_path / "private" / "tmp"
    real.mkdir(parents=True)
    (tmp_path / "tmp").symlink_to(real)
    assert f'(subpath "{real}")' in seatbelt_profile(Policy((tmp_path / "tmp",)))


@pytest.mark.parametrize("bad", ["line\nbreak", "esc\x1b", "undecodable\udcff"])
def test_a_path_sbpl_cannot_hold_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(SandboxError) as caught:
        seatbelt_profile(Policy((tmp_path / bad,)))
    assert "\n" not in caught.value.message


def test_wrap_argv(tmp_path: Path) -> None:
    policy = Policy((tmp_path,))
    assert wrap_argv(policy, ["claude", "-p", "hi"]) == ["/usr/bin/sandbox-exec", "-p", seatbelt_profile(policy),
                                                         "claude", "-p", "hi"]
