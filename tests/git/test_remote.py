"""git/remote.py's listing for the dashboard: `list_states` (ls-remote of the state refs) and
`fetch_states` (one fetch into a namespace of the caller's, pruned), on a real bare remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from automaton.git import remote as git_remote
from tests.helpers import git, init_repo

INTO = "refs/automaton/dashboard/test/"


def _remote_with(tmp_path: Path, *names: str) -> tuple[Path, Path, dict[str, str]]:
    clone = init_repo(tmp_path / "clone")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(clone, "remote", "add", "origin", str(bare))
    made = {}
    for name in names:
        made[name] = git_remote.write_commit(clone, {".state.loop": name.encode()}, None, name)
        got = git_remote.push(clone, "origin", [git_remote.Move(git_remote.state_ref(name), made[name], None)])
        assert got.landed, got.detail
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/loop/alpha")  # a branch is not a state
    return clone, bare, made


def test_the_listing_names_every_state_ref_and_nothing_else(tmp_path: Path) -> None:
    clone, _, made = _remote_with(tmp_path, "alpha", "beta")
    assert git_remote.list_states(clone, "origin") == made


def test_the_fetch_copies_every_state_into_its_namespace_and_prunes_a_gone_one(tmp_path: Path) -> None:
    clone, bare, made = _remote_with(tmp_path, "alpha", "beta")
    assert git_remote.fetch_states(clone, "origin", INTO) == made
    assert git_remote.read_tree(clone, made["beta"]) == {".state.loop": b"beta"}
    git(bare, "update-ref", "-d", git_remote.state_ref("beta"))
    assert git_remote.fetch_states(clone, "origin", INTO) == {"alpha": made["alpha"]}
    # The refs a tick or a `--state-remote` act reads are never touched.
    assert git(clone, "for-each-ref", git_remote.FETCHED_STATE).strip() == ""


def test_a_remote_without_states_lists_and_fetches_none(tmp_path: Path) -> None:
    clone, _, _ = _remote_with(tmp_path)
    assert git_remote.list_states(clone, "origin") == {}
    assert git_remote.fetch_states(clone, "origin", INTO) == {}


def test_a_remote_git_cannot_read_is_remote_failed(tmp_path: Path) -> None:
    clone = init_repo(tmp_path / "clone")
    with pytest.raises(git_remote.RemoteFailed, match="cannot read the state remote 'nope'"):
        git_remote.list_states(clone, "nope")
    with pytest.raises(git_remote.RemoteFailed, match="cannot fetch the loop states of 'nope'"):
        git_remote.fetch_states(clone, "nope", INTO)
