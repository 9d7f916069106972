"""git/remote.py's listing for the dashboard: `list_states` (ls-remote of the state refs) and
`fetch_states` (one fetch into a namespace of the caller's, pruned), on a real bare remote; and
`until_landed`, the waits between lost leases, on a fake clock."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
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


# ---- until_landed: read, decide, push again after a lost lease --------------------------------

class _Clock:
    """A fake clock and sleep: `sleep` moves the time on and keeps each wait; each attempt takes
    `step` seconds. `uniform` answers the top of its range, so the waits are the ceilings."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 1000.0
        self.step = step
        self.waits: list[float] = []
        self.ranges: list[tuple[float, float]] = []

    def sleep(self, s: float) -> None:
        self.waits.append(s)
        self.now += s

    def uniform(self, low: float, high: float) -> float:
        self.ranges.append((low, high))
        return high

    def pacing(self, bound_s: float = git_remote.LEASE_BOUND_S) -> git_remote.Pacing:
        return git_remote.Pacing(self.sleep, lambda: self.now, self.uniform, bound_s)

    def attempts(self, answers: list[str | None]) -> tuple[list[float], Callable[[], str | None]]:
        """An attempt that answers `answers` in turn (None: a lost lease), noting when each began."""
        began: list[float] = []

        def attempt() -> str | None:
            began.append(self.now)
            self.now += self.step
            return answers[len(began) - 1]
        return began, attempt


def _never(spent: float) -> str:
    raise AssertionError(f"gave up after {spent} s")


def test_the_first_landed_push_is_returned_with_no_wait() -> None:
    clock = _Clock()
    began, attempt = clock.attempts(["landed", "never asked"])
    assert git_remote.until_landed(attempt, _never, clock.pacing()) == "landed"
    assert began == [1000.0] and clock.waits == []


def test_each_lost_lease_waits_a_random_time_whose_ceiling_doubles_up_to_the_cap() -> None:
    clock = _Clock()
    began, attempt = clock.attempts([None] * 8 + ["landed"])
    assert git_remote.until_landed(attempt, _never, clock.pacing()) == "landed"
    assert len(began) == 9
    base, cap = git_remote.LEASE_WAIT_BASE_S, git_remote.LEASE_WAIT_CAP_S
    assert clock.ranges == [(0.0, min(cap, base * 2 ** n)) for n in range(8)]
    assert clock.waits == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])
    assert [b - a for a, b in itertools.pairwise(began)] == pytest.approx(clock.waits)  # each retry after its wait


def test_it_gives_up_at_the_bound_in_seconds_not_after_a_count() -> None:
    clock = _Clock(step=0.5)
    began, attempt = clock.attempts([None] * 1000)
    gave_up: list[float] = []

    def give_up(spent: float) -> str:
        gave_up.append(spent)
        return "gave up"
    assert git_remote.until_landed(attempt, give_up, clock.pacing(bound_s=30.0)) == "gave up"
    assert len(gave_up) == 1 and 30.0 <= gave_up[0] < 30.5 + git_remote.LEASE_WAIT_CAP_S
    assert began[-1] <= 1000.0 + 30.0  # no attempt began past the bound, no wait ran past it
    assert len(began) > 8  # far more tries than the old fixed count in 30 s of 0.5 s attempts
    assert sum(clock.waits) + 0.5 * len(began) == pytest.approx(gave_up[0])


def test_a_runner_draws_its_waits_from_the_system_random_source() -> None:
    assert git_remote.PACING.bound_s == git_remote.LEASE_BOUND_S == 120.0
    assert isinstance(getattr(git_remote.PACING.uniform, "__self__", None), random.SystemRandom)
