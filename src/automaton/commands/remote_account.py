"""The account ledger and caps of loops whose state lives in a git remote (issue 26).

Two runners on two machines (clones, each its own HOME) share one account: its spend and its
caps live in the state remote, so a cap holds across machines, not per machine.

The ref `refs/automaton/account` on the state remote: a commit whose tree holds one file,
`ledger.log`, a keyed hash-chained log (`core.chain`: every line carries a mac under the
record key) in the format of this machine's account ledger (`store.account`):
`RESERVE id= at= project= loop= micro_usd= expires=`, `SETTLE id= at= micro_usd=` and
`CAP_REACHED until= kinds= at=`, plus the caps a human published:
`CAPS day=<micro-USD> week=<micro-USD> month=<micro-USD> by=<name> at=<UTC epoch s>` (any
subset of the three kinds; the last `CAPS` line holds; one with none lifts the caps). Each new
commit has the commit it replaces as its one parent.

A read (`read`) fetches the ref and verifies the whole log with the record key, every line
keyed. Anything else is CorruptState (exit 2; every tick refuses, nothing runs): another file
in the tree, an unkeyed, forged or unlinked line, a line automaton does not write, or a ref
that does not descend from the last account commit this clone read or wrote (a rollback:
`refs/automaton/seen/account-<digest of the remote>` in the clone's own `.git`).

A write (`Remote.reserve`, `Remote.settle`, `publish_caps`) reads, decides, appends one line
and pushes the new commit with the read one as its lease (`git push --atomic
--force-with-lease`, `git.remote.push`). A lost lease reads and decides again after a short
random wait, growing with each loss, for up to `git.remote.LEASE_BOUND_S` (`git.remote.until_landed`):
of two runners reserving at once, the second decides on the first's reservation, so the caps
are never passed, and the runners cron starts in the same minute all land, one after another.

The caps that hold for a tick, per kind: the lower of the ref's `CAPS` and this machine's own
`caps.json` (`store.account.read_caps`; a fresh runner has none).

Why the ledger is pushed on its own and not in the atomic push of the tick's claim: every loop
of the account moves this one ref, so riding in a loop's claim would make the claim lose to any
other loop's reservation, and a settle would lose to any reservation made while the tick ran.
Pushed alone, before the claim and after the settled state, a runner killed between two steps
leaves a reservation never settled (counted at its reserved amount: `core.account.Entry.counted`)
or settled late, never a spend the ledger does not count; a claim without its reservation
cannot exist (the reservation lands first).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from automaton.commands.remote_state import check_remote
from automaton.core import account as core
from automaton.core.account import KINDS, Caps, Entry, usd
from automaton.core.chain import GENESIS, LogLine, format_line, line_hash, verify_text
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, CorruptState, Refused
from automaton.core.outcome import Outcome
from automaton.git import remote as git_remote
from automaton.git.remote import Move, NoSuchRemote, NotACommit, RemoteFailed
from automaton.store import account as store
from automaton.store import key as keys
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project

ACCOUNT_REF = "refs/automaton/account"
READS = 5  # fetches of the account ref when another process of this clone keeps overtaking them
LEDGER_FILE = "ledger.log"
CAPS_EVENT = "CAPS"
FETCHED = "refs/automaton/fetched/account-"  # + this process's pid: loops of one clone fetch at once
SEEN = "refs/automaton/seen/account-"  # + the remote's digest: the last account commit this clone trusted
_CAPS_FIELDS = frozenset({*KINDS, "by", "at"})
_MAX_CAP_MICRO = int(core.MAX_CAP_USD) * core.MICRO  # as `core.account.parse_caps` allows


@dataclass(frozen=True)
class AccountRef:
    """The account ref as read and verified: `commit` (None: the remote has no account ref
    yet), the ledger's `text`, the hash its next line links to (`last_hash`), its reservations
    (`ledger`) and the caps of its last `CAPS` line (`caps`; None when none was published)."""

    remote: str
    commit: str | None
    text: str
    last_hash: str
    ledger: store.Ledger
    caps: Caps | None


def where(remote: str) -> str:
    """How a message names the ledger: `REMOTE refs/automaton/account:ledger.log`."""
    return f"{remote} {ACCOUNT_REF}:{LEDGER_FILE}"


def seen_ref(remote: str) -> str:
    """This clone's mark of the last account commit it trusted from `remote`."""
    return SEEN + sha256_hex(remote.encode("utf-8"))[:16]


def _bad(remote: str, why: str) -> CorruptState:
    return CorruptState(f"{where(remote)}: the account ledger does not verify ({why}); every tick with this state"
                        " remote refuses until a human restores the ref. Check AUTOMATON_RECORD_KEY is the account's"
                        " record key")


class Stale(Exception):
    """The fetched account commit is an ancestor of the one this clone last saw: a fetch that
    another process of this clone overtook, never a rollback."""


def read(root: Path, remote: str, *, user_config: bool = False) -> AccountRef:
    """Fetch and verify the account ref of `remote` (module docstring). Refused (exit 1): git
    cannot reach the remote; CorruptState (exit 2): the ref does not verify or was rolled back;
    BadInput (exit 2): a bad key file (`store.key`), or `remote` is no remote's name or URL.
    A fetch overtaken by another process of this clone (Stale) is made again, READS times."""
    check_remote(remote, "--state-remote")
    for _ in range(READS - 1):
        with contextlib.suppress(Stale):
            return _read_once(root, remote, user_config=user_config)
    try:
        return _read_once(root, remote, user_config=user_config)
    except Stale as exc:
        raise Refused(f"{where(remote)}: the account ledger moved on under {READS} reads (last {exc.args[0][:12]});"
                      " nothing was run, run it again") from None


def _read_once(root: Path, remote: str, *, user_config: bool) -> AccountRef:
    """One fetch and verification of the account ref (`read`)."""
    local = f"{FETCHED}{os.getpid()}"
    seen_before = git_remote.ref_oid(root, seen_ref(remote))
    try:
        oid = git_remote.fetch_ref(root, remote, ACCOUNT_REF, local, user_config=user_config)
        files = git_remote.read_tree(root, oid) if oid is not None else {}
    except NoSuchRemote as exc:
        raise BadInput(f"the account ledger: {exc}; nothing was run") from None
    except NotACommit as exc:  # corrupt state, as an edited ledger is (its message says nothing ran)
        raise CorruptState(f"the account ledger: {exc}") from None
    except RemoteFailed as exc:
        raise Refused(f"the account ledger: {exc}; nothing was run") from None
    finally:
        git_remote.drop_ref(root, local)
    if oid is None:
        _check_seen(root, remote, None, "", seen_before)
        return AccountRef(remote, None, "", GENESIS, store.Ledger([], frozenset()), None)
    if set(files) != {LEDGER_FILE}:
        odd = sorted(set(files) - {LEDGER_FILE})
        raise _bad(remote, f"the commit {oid[:12]} holds {odd[0]!r}" if odd else f"the commit {oid[:12]} holds no"
                   f" {LEDGER_FILE}")
    try:
        text = files[LEDGER_FILE].decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(remote, "not UTF-8 text") from None
    chain = verify_text(text, keys.load_key(create=False))
    unkeyed = next((n for n, line in enumerate(chain.lines, 1) if not line.mac), None)
    if not chain.ok or unkeyed is not None or not chain.lines:
        raise _bad(remote, chain.error or (f"line {unkeyed} is not keyed" if unkeyed else "an empty ledger"))
    _check_seen(root, remote, oid, text, seen_before)
    ledger, caps = _fold(chain.lines, remote)
    git_remote.advance_ref(root, seen_ref(remote), oid)  # forward only: a sibling may have moved it on
    return AccountRef(remote, oid, text, line_hash(chain.lines[-1].raw), ledger, caps)


def _check_seen(root: Path, remote: str, oid: str | None, text: str, seen_before: str | None) -> None:
    """CorruptState when the remote's ledger (`text` of commit `oid`; None: the ref is gone)
    does not begin with every line of the last ledger this clone read or wrote: the ledger only
    grows, so someone moved the ref back or pushed a ledger cut short (less spend). The key
    alone cannot tell a cut at a line's end; this clone's memory can. `seen_before`: this clone's
    mark as it was before the fetch; when another process of the clone moved it meanwhile and the
    fetched commit is an ancestor of the new mark, the fetch was overtaken (Stale), not rolled back."""
    mark = seen_ref(remote)
    seen = git_remote.ref_oid(root, mark)
    if seen is None or seen == oid:
        return
    try:
        before = git_remote.read_tree(root, seen).get(LEDGER_FILE, b"").decode("utf-8", "replace")
    except RemoteFailed:
        before = None  # the commit this clone kept is unreadable: nothing to hold the remote's against
    if oid is not None and before is not None and text.startswith(before):
        return
    if seen != seen_before and oid is not None and git_remote.is_ancestor(root, oid, seen):
        raise Stale(oid)  # another process of this clone moved its mark during this fetch: read again
    now = f"is {oid[:12]}, whose ledger does not begin with its lines" if oid is not None else "was deleted"
    raise CorruptState(f"{where(remote)}: the account ledger was rolled back or cut short: this clone last read or"
                       f" wrote {seen[:12]} and the ref {now}; every tick refuses. A human restores it (git push"
                       f" {remote} {seen}:{ACCOUNT_REF}) or accepts the remote's ledger (git update-ref -d {mark} in"
                       " this clone)")


def _fold(lines: list[LogLine], remote: str) -> tuple[store.Ledger, Caps | None]:
    """The reservations and the last published caps of the verified `lines`; CorruptState for a
    line automaton does not write."""
    caps: Caps | None = None
    rest: list[LogLine] = []
    for n, line in enumerate(lines, 1):
        if line.event != CAPS_EVENT:
            rest.append(line)
            continue
        try:
            caps = _caps_of(line.fields)
        except ValueError:
            raise _bad(remote, f"line {n} is not a CAPS line automaton writes") from None
    try:
        return store.fold(rest, Path(where(remote))), caps
    except CorruptState:
        raise _bad(remote, "a line is not one automaton writes") from None


def _caps_of(fields: dict[str, str]) -> Caps:
    """A CAPS line's fields as Caps (micro-USD); ValueError for any other field or amount."""
    if not set(fields) <= _CAPS_FIELDS or "at" not in fields:
        raise ValueError(sorted(fields))
    found: dict[str, int] = {}
    for kind in KINDS:
        if kind in fields:
            value = int(fields[kind])
            if not 0 <= value <= _MAX_CAP_MICRO:
                raise ValueError(value)
            found[kind] = value
    return Caps(**found)


def merged(published: Caps | None, local: Caps | None) -> Caps | None:
    """The caps that hold: per kind the lower of the two that are set; None when neither is."""
    if published is None or local is None:
        return published or local
    both: dict[str, int | None] = {}
    for kind in KINDS:
        got = [c for c in (published.of(kind), local.of(kind)) if c is not None]
        both[kind] = min(got) if got else None
    return Caps(**both)


def _push_line(root: Path, book: AccountRef, event: str, fields: dict[str, object], *,
               user_config: bool = False) -> str | None:
    """Append one keyed line to `book`'s ledger and push it with `book.commit` as the lease.
    The new commit when it landed, None when the lease was lost (the caller reads again).
    Refused (exit 1) when the remote refused the push or git failed; BadInput as
    `store.key.load_key`."""
    key = keys.load_key(create=True)
    if key is None:  # never an unkeyed line: every reader would refuse the ledger for it
        raise BadInput(f"{keys.key_path()}: no record key to sign the account ledger with; set AUTOMATON_RECORD_KEY")
    line = format_line(utc_now(), event, fields, "-", book.last_hash, key)
    text = f"{book.text}{line}\n"
    try:
        commit = git_remote.write_commit(root, {LEDGER_FILE: text.encode("utf-8")}, book.commit,
                                         f"automaton: account {event.lower()}")
        pushed = git_remote.push(root, book.remote, [Move(ACCOUNT_REF, commit, book.commit)], user_config=user_config)
    except RemoteFailed as exc:
        raise Refused(f"the account ledger: {exc}; nothing was run") from None
    if pushed.landed:
        git_remote.advance_ref(root, seen_ref(book.remote), commit)
        return commit
    if pushed.lost:
        return None
    raise Refused(f"the state remote {book.remote!r} refused the account ledger's {event} line: {pushed.detail}")


def _crowded(remote: str, what: str, spent: float) -> NoReturn:
    raise Refused(f"{where(remote)}: {what} lost to other runners' pushes for {spent:.0f} s; nothing was run, try"
                  " again")


@dataclass(frozen=True)
class Remote:
    """The account book of a tick whose loop's state lives in `remote`, as seen from the clone
    at `root`: `reserve` and `settle` with the signatures of `store.account`'s, which the tick
    calls through `runner.account.Book`."""

    root: Path
    remote: str

    def reserve(self, project: str, loop: str, micro: int, ttl_s: int, now: int) -> store.Reserved | store.Refused:
        """Reserve `micro` micro-USD for a tick of `loop` (of the checkout at `project`) expiring
        `ttl_s` seconds after `now` (UTC epoch seconds), unless a cap would be passed
        (`core.account.decide`; the first refusal of a window writes `CAP_REACHED`). Raises as
        `read`, BadInput for a bad caps.json, Refused (exit 1) when the remote refused the
        push or the leases were lost for `git.remote.LEASE_BOUND_S`."""
        local_caps = store.read_caps()
        got = git_remote.until_landed(lambda: self._reserve_once(local_caps, project, loop, micro, ttl_s, now),
                                      lambda spent: _crowded(self.remote, "the reservation", spent))
        return got[0]

    def _reserve_once(self, local_caps: Caps | None, project: str, loop: str, micro: int, ttl_s: int,
                      now: int) -> tuple[store.Reserved | store.Refused] | None:
        """One read, decision and push of `reserve`, decided on what this read found; None when
        the lease was lost (the next attempt reads and decides again). The answer comes in a
        1-tuple: mypy solves `T | None` against a bare union as `object`."""
        book = read(self.root, self.remote)
        caps = merged(book.caps, local_caps)
        refusal = core.decide(caps, book.ledger.entries, micro, now) if caps is not None else None
        if refusal is None:
            rid = os.urandom(8).hex()
            line = {"id": rid, "at": now, "project": project, "loop": loop, "micro_usd": micro, "expires": now + ttl_s}
            return (store.Reserved(rid, micro),) if _push_line(self.root, book, "RESERVE", line) is not None else None
        if refusal.until in book.ledger.announced:
            return (store.Refused(refusal, False),)
        said = {"until": refusal.until, "kinds": ",".join(u.window.kind for u in refusal.reached), "at": now}
        return (store.Refused(refusal, True),) if _push_line(self.root, book, "CAP_REACHED", said) is not None else None

    def settle(self, rid: str, charged: int, now: int) -> None:
        """Settle reservation `rid` at `charged` micro-USD at `now` (UTC epoch seconds); one
        already settled is left as it is. Raises as `read`; CorruptState when the ledger holds
        no reservation `rid`; Refused (exit 1) as `reserve`."""
        git_remote.until_landed(lambda: self._settle_once(rid, charged, now),
                                lambda spent: _crowded(self.remote, "the settlement", spent))

    def _settle_once(self, rid: str, charged: int, now: int) -> bool | None:
        """One read and push of `settle`: True when `rid` is settled, None when the lease was lost."""
        book = read(self.root, self.remote)
        found = next((e for e in book.ledger.entries if e.rid == rid), None)
        if found is None:
            raise _bad(self.remote, f"it holds no reservation {rid}")
        if found.charged is not None:
            return True
        landed = _push_line(self.root, book, "SETTLE", {"id": rid, "at": now, "micro_usd": max(0, charged)})
        return True if landed is not None else None


def caps_text(caps: Caps | None) -> str:
    """`day $3.00, week (no cap), month $50.00`, or `no caps`."""
    if caps is None or not caps.any():
        return "no caps"
    return ", ".join(f"{k} {usd(c)}" if (c := caps.of(k)) is not None else f"{k} (no cap)" for k in KINDS)


def publish_caps(project: Project, remote: str, by: str, now: int) -> Outcome:
    """`--publish-caps --state-remote REMOTE` (a human act; the caller checked the human, `by`):
    publish this machine's caps file (`store.account.caps_path`; `{}` lifts every cap) as the
    account's caps in `remote` (a keyed `CAPS` line), so every runner of the account, fresh
    ones included, holds them. data: {remote, caps: {day_usd, week_usd, month_usd} (USD or
    null), commit, changed (bool)}. BadInput (exit 2): no or a bad caps file; as `read`
    otherwise; Refused (exit 1) when the push never lands."""
    caps = store.read_caps()
    if caps is None:
        raise BadInput(f"{store.caps_path()}: no caps file to publish; write the caps there first (e.g."
                       " {\"day_usd\": 3, \"week_usd\": 15, \"month_usd\": 50}, or {} for none), then run it again")
    fields: dict[str, object] = {k: c for k in KINDS if (c := caps.of(k)) is not None}
    return git_remote.until_landed(lambda: _publish_once(project, remote, caps, {**fields, "by": by, "at": now}),
                                   lambda spent: _crowded(remote, "the caps", spent))


def _publish_once(project: Project, remote: str, caps: Caps, fields: dict[str, object]) -> Outcome | None:
    """One read and push of `publish_caps` (`fields`: the CAPS line's); None when the lease was lost."""
    shown = {f"{k}_usd": None if (c := caps.of(k)) is None else c / core.MICRO for k in KINDS}
    book = read(project.root, remote, user_config=True)
    if book.caps == caps:
        return Outcome(lines=[f"the account caps in {remote} are already {caps_text(caps)}"],
                       data={"remote": remote, "caps": shown, "commit": book.commit, "changed": False})
    commit = _push_line(project.root, book, CAPS_EVENT, fields, user_config=True)
    if commit is None:
        return None
    return Outcome(lines=[f"account caps published to {remote} ({ACCOUNT_REF}): {caps_text(caps)};"
                          f" every runner with this state remote holds them from its next tick"],
                   data={"remote": remote, "caps": shown, "commit": commit, "changed": True})


def spend_source(project: Project, remote: str) -> tuple[Caps | None, list[Entry], str]:
    """For `--spend --state-remote REMOTE`: (the caps that hold on this machine, the remote
    ledger's entries, how to name the ledger). Read-only but for the fetch; raises as `read`."""
    book = read(project.root, remote, user_config=True)
    return merged(book.caps, store.read_caps()), book.ledger.entries, where(remote)

