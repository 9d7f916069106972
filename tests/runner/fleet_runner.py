"""`automaton-loop` as one runner of the fleet tests (tests/runner/fleetkit.py), with two test
controls read from its environment: `FLEET_CLOCK_OFFSET_S` moves the claim clock forward
(a claim ages without sleeping), and `FLEET_KILL_AT` (`after_reserve`: once the account
reservation landed in the state remote; `before_claim`, `after_claim`, `before_final_push`)
makes the runner SIGKILL itself at that step of the protocol."""

from __future__ import annotations

import os
import signal
import sys
import time


def _install() -> None:
    from automaton.commands import remote_state

    offset = float(os.environ.get("FLEET_CLOCK_OFFSET_S", "0") or 0)
    if offset:
        remote_state.clock = lambda: time.time() + offset
    at = os.environ.get("FLEET_KILL_AT", "")
    if not at:
        return
    from automaton.commands import remote_account

    real_claim, real_publish = remote_state.claim, remote_state.publish
    real_reserve = remote_account.Remote.reserve

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def claim(synced, n):  # type: ignore[no-untyped-def]
        if at == "before_claim":
            die()
        got = real_claim(synced, n)
        if at == "after_claim" and got is None:
            die()
        return got

    def publish(synced, message, *, with_branch):  # type: ignore[no-untyped-def]
        if at == "before_final_push" and synced.claim is not None:
            die()
        return real_publish(synced, message, with_branch=with_branch)

    def reserve(self, *args):  # type: ignore[no-untyped-def]
        got = real_reserve(self, *args)
        if at == "after_reserve" and isinstance(got, remote_account.store.Reserved):
            die()
        return got

    remote_state.claim, remote_state.publish = claim, publish
    remote_account.Remote.reserve = reserve  # type: ignore[method-assign]


if __name__ == "__main__":
    _install()
    from automaton.runner.cli import main

    raise SystemExit(main(sys.argv[1:]))
