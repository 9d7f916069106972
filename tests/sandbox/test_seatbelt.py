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
    assert lines[:4] == ["(version 1)", "(allow default)", "(deny file-write*)",
                         "(deny file-write-mode file-write-owner file-write-times file-write-xattr)"]
    assert lines[4].startswith(f'(allow file-write* (subpath "{work}")') and '(literal "/dev/null")' in lines[4]
    assert lines[5] == "(deny network-outbound (remote unix-socket))"
    assert lines[6] == ('(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")'
                        f' (path-literal "/private/var/run/syslog") (subpath "{work}")))')
    assert lines[7] == f'(deny file-read* file-write* (subpath "{key}"))'  # last: it wins over every allow
    assert len(lines) == 8


def test_metadata_writes_are_denied_before_the_writable_set_is_allowed(tmp_path: Path) -> None:
    """chmod/chown/utime/setxattr outside the writable set: denied by the broad rules, which
    the one allow (beneath the writable paths) follows; no later rule allows a write."""
    lines = seatbelt_profile(Policy((tmp_path,))).splitlines()
    allow = next(i for i, line in enumerate(lines) if line.startswith("(allow file-write*"))
    assert lines.index("(deny file-write-mode file-write-owner file-write-times file-write-xattr)") < allow
    assert not any("file-write" in line and line.startswith("(allow") for line in lines[allow + 1:])


def test_unix_sockets_are_reachable_only_beneath_the_writable_set(tmp_path: Path) -> None:
    single = tmp_path / "one.sock.txt"
    single.write_text("")
    profile = seatbelt_profile(Policy((tmp_path / "w", single)))
    assert "(deny network-outbound (remote unix-socket))" in profile
    assert f'(subpath "{tmp_path}/w")' in profile and f'(path-literal "{single}")' in profile
    assert '(subpath "/private/tmp")' not in profile and '"/tmp' not in profile.replace(str(tmp_path), "")


def test_no_network_leaves_only_localhost_and_masks_are_unreadable(tmp_path: Path) -> None:
    creds = tmp_path / ".aws"
    lines = seatbelt_profile(Policy((tmp_path / "w",), network=False, masked=(creds,))).splitlines()
    assert lines[-3:] == ['(deny network-outbound (remote ip "*:*"))',
                          '(allow network-outbound (remote ip "localhost:*"))',
                          f'(deny file-read* file-write* (subpath "{creds}"))']
    assert "(remote ip" not in seatbelt_profile(Policy((tmp_path,)))


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
