"""The account ledger and caps file (store/account.py): keyed, locked, and consistent after a
`kill -9` at every step of a reservation or a settlement."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, CorruptState
from automaton.store import account

NOW = 1_796_558_400  # 2026-12-06T12:00:00Z
PY = sys.executable


def set_caps(text: str) -> Path:
    where = account.caps_path()
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    where.write_text(text)
    return where


def used() -> int:
    return sum(e.counted for e in account.read_ledger().entries)


def test_missing_caps_file_is_no_cap() -> None:
    assert account.read_caps() is None
    for _ in range(5):
        assert isinstance(account.reserve("/p", "l", 10_000_000, 60, NOW), account.Reserved)


@pytest.mark.parametrize("text", ['{"day_usd": 3', '[3]', '{"day_usd": -1}', '{"daily": 3}', '{"day_usd": true}',
                                  '{"day_usd": 0.0000001}', '{"day_usd": "3"}', '\xff'])
def test_a_malformed_caps_file_fails_closed_naming_it(text: str) -> None:
    where = set_caps(text)
    with pytest.raises(BadInput) as exc:
        account.reserve("/p", "l", 1, 60, NOW)
    assert str(where) in exc.value.message and "\n" not in exc.value.message
    assert not account.ledger_path().exists()  # nothing reserved


def test_an_unreadable_caps_file_fails_closed() -> None:
    where = set_caps("{}")
    where.unlink()
    where.mkdir()
    with pytest.raises(BadInput, match="caps"):
        account.read_caps()


def test_reserve_refuses_past_the_cap_and_announces_once() -> None:
    set_caps('{"day_usd": 2.5}')
    first = account.reserve("/p", "l", 1_000_000, 60, NOW)
    assert isinstance(first, account.Reserved)
    account.settle(first.rid, 1_500_000, NOW + 1)  # a charge above the reservation counts whole
    assert isinstance(account.reserve("/p", "l", 1_000_000, 60, NOW), account.Reserved)
    refused = account.reserve("/q", "m", 1_000_000, 60, NOW)
    assert isinstance(refused, account.Refused) and refused.first
    again = account.reserve("/q", "m", 1_000_000, 60, NOW + 5)
    assert isinstance(again, account.Refused) and not again.first
    assert refused.refusal.until == NOW + 12 * 3600  # the next UTC day
    assert used() == 2_500_000


def test_settling_twice_is_a_noop_and_an_unknown_id_is_refused() -> None:
    got = account.reserve("/p", "l", 1_000_000, 60, NOW)
    assert isinstance(got, account.Reserved)
    account.settle(got.rid, 0, NOW)
    account.settle(got.rid, 5_000_000, NOW)
    assert used() == 0
    with pytest.raises(CorruptState, match="no reservation"):
        account.settle("0123456789abcdef", 1, NOW)


def test_an_edited_ledger_fails_closed() -> None:
    got = account.reserve("/p", "l", 2_000_000, 60, NOW)
    assert isinstance(got, account.Reserved)
    path = account.ledger_path()
    path.write_text(path.read_text().replace("micro_usd=2000000", "micro_usd=0000001"))
    with pytest.raises(CorruptState, match="does not verify"):
        account.reserve("/p", "l", 1, 60, NOW)
    with pytest.raises(CorruptState) as exc:
        account.read_ledger()
    from automaton.store import anchor
    from automaton.store.key import mark_path

    # The message names the exact files a human removes to start over, and they exist.
    named = (anchor.file_of(path), mark_path(path))
    assert all(str(f) in exc.value.message and f.is_file() for f in named), exc.value.message


def test_a_ledger_rolled_back_fails_closed() -> None:
    account.reserve("/p", "l", 1_000_000, 60, NOW)
    path = account.ledger_path()
    kept = path.read_bytes()
    account.reserve("/p", "l", 1_000_000, 60, NOW)
    path.write_bytes(kept)  # an older, self-consistent copy: its anchor says it was cut
    with pytest.raises(CorruptState, match="does not verify"):
        account.reserve("/p", "l", 1, 60, NOW)


_RACER = textwrap.dedent("""
    import sys
    from automaton.store import account
    got = account.reserve("/p" + sys.argv[1], "l", 1_000_000, 60, int(sys.argv[2]))
    print("ok" if isinstance(got, account.Reserved) else "refused")
""")


def test_concurrent_reservations_never_pass_the_cap() -> None:
    set_caps('{"day_usd": 3}')
    procs = [subprocess.Popen([PY, "-c", _RACER, str(i), str(NOW)], stdout=subprocess.PIPE, text=True)
             for i in range(8)]
    said = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert sorted(said) == ["ok"] * 3 + ["refused"] * 5
    assert used() == 3_000_000


# Each step a reservation or a settlement takes, as a (module, function) the child dies in,
# before or after it runs: the lock taken, the anchor rolled forward, the chain read, its
# checkpoint kept, the line appended, the anchor moved, the keyed mark written.
_STEPS = [("automaton.store.account", "locked"), ("automaton.store.chainlog", "settle_anchor"),
          ("automaton.store.chainlog", "read_chain"), ("automaton.store.checkpoint", "write"),
          ("automaton.store.chainlog", "append_line"),
          ("automaton.store.anchor", "write"), ("automaton.store.key", "mark_keyed")]
_KILLER = textwrap.dedent("""
    import importlib, os, sys
    from automaton.store import account
    module, name, when, op = sys.argv[1:5]
    mod = importlib.import_module(module)
    real = getattr(mod, name)

    def dying(*args, **kwargs):
        if when == "before":
            os.kill(os.getpid(), 9)
        found = real(*args, **kwargs)
        if when == "after":
            os.kill(os.getpid(), 9)
        return found

    setattr(mod, name, dying)
    if op == "reserve":
        account.reserve("/p", "l", 2_000_000, 60, int(sys.argv[5]))
    else:
        account.settle(op, 500_000, int(sys.argv[5]))
    print("survived")
""")


def _history() -> None:
    """Nine settled ticks two days ago (18 lines): enough for the next read to keep a checkpoint
    (`store.checkpoint.STEP`), outside today's window."""
    for i in range(9):
        got = account.reserve("/old", "l", 1_000_000, 60, NOW - 2 * 86400 + i)
        assert isinstance(got, account.Reserved)
        account.settle(got.rid, 1_000_000, NOW - 2 * 86400 + i)
    for found in (account.keys.key_path().parent / "keyed").glob("*.checkpoint"):
        found.unlink()  # the child's read writes the next one
    account.chainlog._SAVED.clear()


def _today() -> list[account.Entry]:
    return [e for e in account.read_ledger().entries if e.at >= NOW - 3600]


def _die_at(module: str, name: str, when: str, op: str) -> None:
    got = subprocess.run([PY, "-c", _KILLER, module, name, when, op, str(NOW)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert got.returncode == -9, (got.stdout, got.stderr)


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize(("module", "name"), _STEPS)
def test_kill_9_at_every_step_of_a_reservation_leaves_the_ledger_consistent(module: str, name: str,
                                                                             when: str) -> None:
    _history()
    set_caps('{"day_usd": 5}')
    _die_at(module, name, when, "reserve")
    # read_ledger verifies: keyed chain, anchor at or one line behind, any checkpoint
    assert [(e.reserved, e.charged) for e in _today()] in ([], [(2_000_000, None)])
    killed = sum(e.counted for e in _today())  # the killed reservation counts whole, or never was
    # the lock died with the process, and the next writer rolls the anchor forward
    nxt = account.reserve("/p", "l", 3_000_000, 60, NOW)
    assert isinstance(nxt, account.Reserved)
    assert isinstance(account.reserve("/p", "l", 1, 60, NOW), account.Refused) == (killed == 2_000_000)
    account.settle(nxt.rid, 1_000_000, NOW)
    assert sum(e.counted for e in _today()) == (3_000_000 if killed else 1_000_001)


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize(("module", "name"), _STEPS)
def test_kill_9_at_every_step_of_a_settlement_leaves_the_ledger_consistent(module: str, name: str,
                                                                            when: str) -> None:
    _history()
    held = account.reserve("/p", "l", 2_000_000, 60, NOW)
    assert isinstance(held, account.Reserved)
    for found in (account.keys.key_path().parent / "keyed").glob("*.checkpoint"):
        found.unlink()
    account.chainlog._SAVED.clear()
    _die_at(module, name, when, held.rid)
    (entry,) = _today()
    assert (entry.reserved, entry.charged) in ((2_000_000, None), (2_000_000, 500_000))
    account.settle(held.rid, 500_000, NOW)  # settling again finishes it, once
    (entry,) = _today()
    assert entry.charged == 500_000
    assert len(account.ledger_path().read_text().splitlines()) == 18 + 2


def test_an_unsettled_reservation_counts_until_settled_even_past_its_expiry() -> None:
    set_caps('{"day_usd": 3}')
    held = account.reserve("/p", "l", 2_000_000, 60, NOW)
    assert isinstance(held, account.Reserved)
    (entry,) = account.read_ledger().entries
    assert entry.state(NOW) == "open" and entry.state(NOW + 61) == "abandoned"
    assert isinstance(account.reserve("/p", "l", 2_000_000, 60, NOW + 3600), account.Refused)
    account.settle(held.rid, 0, NOW + 3601)  # a late settlement still gives the real charge
    assert isinstance(account.reserve("/p", "l", 2_000_000, 60, NOW + 3602), account.Reserved)


def test_the_ledger_is_keyed() -> None:
    account.reserve("/p", "l", 1, 60, NOW)
    assert all(" mac=" in line for line in account.ledger_path().read_text().splitlines())
    assert os.stat(account.ledger_path().parent).st_mode & 0o077 == 0
    assert os.stat(account.caps_path().parent).st_mode & 0o077 == 0  # the key's folder, made by the ledger


def test_a_read_only_disk_is_named_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    real = Path.mkdir
    folder = account.ledger_path().parent

    def read_only(self: Path, *args: object, **kwargs: object) -> None:
        if self == folder:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(BadInput, match=r"cannot create the account ledger's folder .*Read-only file system"):
        account.reserve("/p", "l", 1, 60, NOW)
