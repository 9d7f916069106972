"""The account-wide caps file and the account ledger, beside the record key.

Both live in the record key's folder, `~/.config/automaton` (`store.key`), which the kernel
sandbox hides from every agent: an agent can neither read, raise nor reset them.

- `caps.json`: written by a human, never by automaton: `{"day_usd": 3, "week_usd": 15,
  "month_usd": 50}` (any subset; see `core.account.parse_caps`). Missing: no account cap.
  Malformed or unreadable: every tick refuses (exit 2, the file named): fail closed.
- `account/ledger.log`: a keyed, hash-chained log (`store.chainlog`: every line carries a
  mac under the record key, and its head is anchored in `keyed/`, so a line edited, removed,
  or the whole log rolled back reads as tampered). Lines:
  `RESERVE id=<hex> at=<epoch s> project=<root> loop=<name> micro_usd=<int> expires=<epoch s>`,
  `SETTLE id=<hex> at=<epoch s> micro_usd=<int>` (the real charge), and
  `CAP_REACHED until=<epoch s> kinds=day,week` (the first refusal of a window: it notifies once).
  Written under `account/ledger.lock` (a kernel lock: `store.locks`), so concurrent ticks of
  several loops see each other's reservations. Each reserve or settle is one appended line
  (one write, fsynced) and then the anchor's move: a process killed at any step leaves the
  reservation absent or present, the settlement absent or present, and an anchor behind by at
  most one line, which the next writer rolls forward (`chainlog.settle_anchor`). A reservation
  never settled counts at its reserved amount (`core.account.Entry.counted`).

The ledger records every tick's spend whether or not caps are set, so a cap set mid-month
counts the month's spend from its start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from automaton.core import account as core
from automaton.core.account import Caps, Entry, Refusal
from automaton.core.chain import ChainCheck, LogLine
from automaton.core.errors import BadInput, CorruptState
from automaton.store import anchor, chainlog
from automaton.store import key as keys
from automaton.store.atomic import open_regular
from automaton.store.locks import locked

CAPS_FILE = "caps.json"
_CAPS_LIMIT = 1 << 16  # a caps file larger than this is not a caps file
EVENTS = ("RESERVE", "SETTLE", "CAP_REACHED")


def caps_path() -> Path:
    """`~/.config/automaton/caps.json`. BadInput (exit 2) when no home folder is set."""
    return keys.key_path().parent / CAPS_FILE


def ledger_path() -> Path:
    """`~/.config/automaton/account/ledger.log`."""
    return keys.key_path().parent / "account" / "ledger.log"


def lock_path() -> Path:
    """The ledger writers' lock: `~/.config/automaton/account/ledger.lock`."""
    return ledger_path().with_name("ledger.lock")


def read_caps() -> Caps | None:
    """The caps a human set, None when the caps file does not exist. BadInput (exit 2) naming
    the file for one that cannot be read or is not a caps file (`core.account.parse_caps`);
    `store.key.KeyHidden` inside an agent's sandbox."""
    where = caps_path()
    try:
        fd = open_regular(where)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        if keys.hidden_here(where):
            raise keys.KeyHidden(f"{where}: hidden from this process (an agent's sandbox): run it outside") from None
        raise BadInput(f"{where}: cannot read the account caps ({exc.strerror}); fix its permissions"
                       f" (chmod 600 {where}) or remove it to set no cap") from None
    except OSError as exc:
        raise BadInput(f"{where}: cannot read the account caps ({exc.strerror}); make it a regular file"
                       " or remove it to set no cap") from None
    try:
        data = os.read(fd, _CAPS_LIMIT + 1)
    except OSError as exc:
        raise BadInput(f"{where}: cannot read the account caps ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > _CAPS_LIMIT:
        raise BadInput(f"{where}: larger than {_CAPS_LIMIT} bytes, so not a caps file; fix it or remove it")
    return core.parse_caps(data, str(where))


@dataclass(frozen=True)
class Ledger:
    """The ledger as read: its entries (oldest first) and the `until` of each window whose
    reached cap was already announced (`CAP_REACHED`)."""

    entries: list[Entry]
    announced: frozenset[int]


def read_ledger() -> Ledger:
    """The verified ledger (an empty one when it does not exist). CorruptState (exit 2) naming
    the file when its chain does not verify (edited, cut, rolled back) or a line is not one
    automaton writes; BadInput for a bad key file (`store.key`)."""
    path = ledger_path()
    return fold(_checked(path).lines, path)


def refusal_now(micro: int, now: int) -> Refusal | None:
    """Read-only: the Refusal a reservation of `micro` micro-USD at `now` (UTC epoch seconds)
    would meet under the caps now (`core.account.decide`), None when it fits or no caps file
    exists; nothing is written or announced. Raises as `read_caps` and `read_ledger`."""
    caps = read_caps()
    return None if caps is None else core.decide(caps, read_ledger().entries, micro, now)


def _checked(path: Path) -> ChainCheck:
    """The ledger's verified chain; CorruptState when it does not verify. A keyed checkpoint of
    the verified prefix is kept (`store.checkpoint`), so a later process checks only the lines
    appended since, as for a loop's log: the ledger only grows."""
    chain = chainlog.read_chain(path)
    if not chain.ok:
        raise CorruptState(_tampered(path, chain.error))
    chainlog.save_checkpoint(chain.lines, "")
    return chain


def _tampered(path: Path, why: str) -> str:
    return (f"{path}: the account ledger does not verify ({why}); every tick refuses until a human checks it."
            f" To start a new ledger (the spend it recorded is forgotten), move {path} aside and remove its"
            f" anchor {anchor.file_of(path)} and its mark {keys.mark_path(path)}")


def fold(lines: list[LogLine], path: Path) -> Ledger:
    """The entries and announced windows of the ledger's `lines`. CorruptState naming `path`
    for a line automaton does not write (an unknown event or id, a bad number)."""
    entries: dict[str, Entry] = {}
    announced: set[int] = set()
    for n, line in enumerate(lines, 1):
        f = line.fields
        try:
            if line.event == "RESERVE" and f["id"] not in entries:
                entries[f["id"]] = Entry(f["id"], int(f["at"]), f["project"], f["loop"], _amount(f["micro_usd"]),
                                         int(f["expires"]))
            elif line.event == "SETTLE" and entries[f["id"]].charged is None:
                e = entries[f["id"]]
                entries[e.rid] = Entry(e.rid, e.at, e.project, e.loop, e.reserved, e.expires, _amount(f["micro_usd"]))
            elif line.event == "CAP_REACHED":
                announced.add(int(f["until"]))
            else:
                raise ValueError(line.event)
        except (KeyError, ValueError):
            raise CorruptState(_tampered(path, f"line {n} is not a line automaton writes")) from None
    return Ledger(list(entries.values()), frozenset(announced))


def _amount(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


@dataclass(frozen=True)
class Reserved:
    """A reservation made: its id (for `settle`) and micro-USD."""

    rid: str
    micro: int


@dataclass(frozen=True)
class Refused:
    """A reservation refused by a reached cap; `first`: this refusal is the first of its window
    (announced now: the caller notifies)."""

    refusal: Refusal
    first: bool


def reserve(project: str, loop: str, micro: int, ttl_s: int, now: int) -> Reserved | Refused:
    """Under the ledger lock: reserve `micro` micro-USD for a tick of `loop` of the project at
    `project` (its root), expiring `ttl_s` seconds after `now` (UTC epoch seconds), unless a cap
    would be passed (`core.account.decide`). Raises BadInput (a bad caps file, read first, so
    nothing is reserved; a bad key file), `store.locks.Busy` (exit 1) when the lock is held
    for a minute, CorruptState (a ledger that does not verify), and BadInput naming the file
    or folder for a ledger that cannot be written (disk full, read-only)."""
    caps = read_caps()
    path = ledger_path()
    _make_folder(path.parent)
    with locked(lock_path()):
        chainlog.settle_anchor(path)
        chain = _checked(path)
        book = fold(chain.lines, path)
        refusal = core.decide(caps, book.entries, micro, now) if caps is not None else None
        if refusal is not None:
            first = refusal.until not in book.announced
            if first:
                kinds = ",".join(u.window.kind for u in refusal.reached)
                _append(path, "CAP_REACHED", {"until": refusal.until, "kinds": kinds, "at": now}, chain)
            return Refused(refusal, first)
        rid = os.urandom(8).hex()
        _append(path, "RESERVE", {"id": rid, "at": now, "project": project, "loop": loop, "micro_usd": micro,
                                  "expires": now + ttl_s}, chain)
        return Reserved(rid, micro)


def settle(rid: str, charged: int, now: int) -> None:
    """Under the ledger lock: settle reservation `rid` at its real charge `charged` micro-USD
    (more or less than reserved). Settling one already settled does nothing. CorruptState for
    an id the ledger does not hold or a ledger that does not verify; BadInput as `reserve`."""
    path = ledger_path()
    with locked(lock_path()):
        chainlog.settle_anchor(path)
        chain = _checked(path)
        found = {e.rid: e for e in fold(chain.lines, path).entries}.get(rid)
        if found is None:
            raise CorruptState(_tampered(path, f"it holds no reservation {rid}"))
        if found.charged is None:
            _append(path, "SETTLE", {"id": rid, "at": now, "micro_usd": max(0, charged)}, chain)


def _make_folder(folder: Path) -> None:
    """The ledger's folder, mode 0700, inside the key's folder made as `store.key` makes it
    (the key first: its folder must be 0700 whoever creates it). BadInput naming the folder
    when it cannot be made (a read-only or full disk)."""
    keys.load_key(create=True)
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{folder}: cannot create the account ledger's folder ({exc.strerror}): the disk is full"
                       f" or read-only, or {folder.parent} is not yours; fix it, then run it again") from None


def _append(path: Path, event: str, fields: dict[str, object], chain: ChainCheck) -> None:
    try:
        chainlog.append_event(path, event, fields, "-", chain)
    except OSError as exc:
        raise BadInput(f"{path}: cannot write the account ledger ({exc.strerror}): the disk is full or"
                       " read-only; free space or fix the folder's permissions, then run it again") from None
