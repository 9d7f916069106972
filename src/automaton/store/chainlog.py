"""State file + hash-chained log written as one unit, and the tamper check.

Every line automaton appends is keyed (`mac=`, see `core.chain` and `store.key`): writers load
the key, creating it on first use; readers only load it, so a read-only command never makes one.

Write order, under the caller's lock: (1) the new state goes to the fsynced temp file,
(2) the log line naming the new state token is appended, (3) the temp file replaces the state.
A crash after (2) leaves a temp file whose token matches the log's last line: the next locked
command rolls it forward. Any other disagreement between the state file and the log means
someone wrote outside automaton.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from automaton.core.chain import ChainCheck, Lines, format_line, verify_text
from automaton.core.digest import equal
from automaton.core.errors import AutomatonError, BadInput, CorruptState, EnvironmentFailure, environment_errno
from automaton.core.record import record
from automaton.store import anchor, checkpoint
from automaton.store import key as keys
from automaton.store.atomic import append_line, probe_replace, publish, read_all, tmp_path, write_tmp

TYPE_CHECKING = False  # typing/collections.abc stay off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from collections.abc import Callable

    from automaton.core.chain import LogLine


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds, e.g. `2026-11-30T13:20:00Z`."""
    # `time`, not `datetime` (the same clock, seconds rounded down alike): a tick that gives up
    # writes one log line, and importing datetime for it cost about a tenth of its imports.
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read_chain(log_path: str | Path) -> ChainCheck:
    """Verify the whole log at `log_path` (a plain string too: the audit names thousands of
    logs) with the key (never creating it); a missing log is an empty, valid chain. Not ok when
    a line is forged, unkeyed after a keyed one, keyed while the key is missing, or when the
    whole log is unkeyed at a path automaton has keyed before (it was replaced). Not ok and
    `rolled_back` when it is older than its anchor (`store.anchor`: fewer lines, or another
    line at the anchored count, a missing log included), or its anchor is missing although
    the log had one, or unreadable. Where the key is hidden (`store.key.KeyHidden`: an agent's
    sandbox, which cannot write the log either) keyed lines are taken on their SHA-256 chain
    (`unverified`) and anchors cannot be read: not checked there.
    Raises BadInput/CorruptState (exit 2) for a bad key file (`store.key`)."""
    loaded = _key_for(log_path)
    if isinstance(loaded, ChainCheck):
        return loaded
    key, hidden = loaded
    # The anchor before the log: a writer appends its line, then moves the anchor, so a log
    # read after its anchor is never behind it unless it was rolled back.
    found = None if hidden else _anchor_of(log_path)
    text = _read_text(log_path)
    if not isinstance(text, str):
        return text if hidden or not text.ok else _anchored(log_path, text, found)
    check = _verified(log_path, text, key, not hidden, found)
    if check.ok and check.legacy and keys.was_keyed(Path(log_path)):
        # A writer appends its first keyed line before it marks the log: re-read once, so a
        # reader that raced that writer sees the keyed line instead of a false replacement.
        text = _read_text(log_path)
        if not isinstance(text, str):
            return text
        check = _verified(log_path, text, key, not hidden, found)
        if check.ok and check.legacy:
            return ChainCheck(False, check.lines, "no line is keyed, but automaton has sealed this log with"
                              " its key before: the whole log was replaced")
    if check.needs_key:
        return ChainCheck(False, check.lines, f"{check.error}: {keys.key_path()} is missing (restore it"
                          " from a backup, or a human re-seals the log)", needs_key=True)
    if hidden or not check.ok:
        return check
    return _mark_trusted(log_path, _anchored(log_path, check, found), text, key, found)


def _key_for(log_path: str | Path) -> tuple[bytes | None, bool] | ChainCheck:
    """(the record key or None, whether it is hidden here) for reading `log_path`; the empty,
    valid chain of a missing log when the key file is bad (a missing log reads as empty, as
    before anchors). Raises the key's BadInput for a log that exists."""
    try:
        return keys.load_key(create=False), False
    except keys.KeyHidden:
        return None, True
    except BadInput:
        if os.path.lexists(log_path):
            raise
        return ChainCheck(True, [])


def _mark_trusted(log_path: str | Path, check: ChainCheck, text: str, key: bytes | None,
                  found: anchor.Anchor | str | None) -> ChainCheck:
    """`check`, its lines marked `Verified` when the read is trusted (verified with the key,
    anchored, keyed up to its last line): what `save_checkpoint` needs."""
    if (check.ok and key is not None and isinstance(found, anchor.Anchor) and isinstance(check.lines, Lines)
            and check.lines and check.lines[-1].mac and not check.unverified):
        start = check.lines.mark if isinstance(check.lines.mark, checkpoint.Checkpoint) else None
        check.lines.mark = Verified(str(log_path), text, key, start)
    return check


@record
class Verified:
    """Attached to the lines of a trusted read (`Lines.mark`: verified with the key, anchored,
    keyed up to its last line): the log's `path`, the whole `text` verified, the `key`, and the
    checkpoint the check started from (`start`, None for a full check). What a caller needs to
    record a new checkpoint (`save_checkpoint`)."""

    path: str
    text: str
    key: bytes
    start: checkpoint.Checkpoint | None = None


# resolved path -> the line count this process last checkpointed (no rewrite for each later read)
_SAVED: dict[str, int] = {}


def save_checkpoint(lines: list[LogLine], fold: str) -> bool:
    """Record a checkpoint of the log `lines` were read from (`store.checkpoint`), with the
    ledger's `fold` after them, when `lines` come from a trusted read (`Verified`) and at least
    `checkpoint.STEP` lines were appended since the checkpoint that read started from. True when
    written; best effort (a write that fails only costs the next process a full check)."""
    seen = lines.mark if isinstance(lines, Lines) else None
    if not isinstance(seen, Verified) or not lines:
        return False
    done = seen.start.count if seen.start is not None else 0
    where = os.path.realpath(seen.path)
    if len(lines) - max(done, _SAVED.get(where, 0)) < checkpoint.STEP:
        return False
    made = checkpoint.Checkpoint(len(lines), len(seen.text), lines[-1].mac, checkpoint.digest(seen.text), fold)
    try:
        checkpoint.write(seen.path, seen.key, made)
    except (OSError, ValueError, BadInput):
        return False
    _SAVED[where] = len(lines)
    return True


def _from_checkpoint(log_path: str | Path, text: str, key: bytes, found: anchor.Anchor) -> ChainCheck | None:
    """`verify_text(text, key)` from the log's keyed checkpoint: only the lines after its prefix
    are verified, the prefix's lines parsed when read (`Lines`). None (a full check is needed)
    when there is no checkpoint whose mac verifies, or the text's first `chars` characters do not
    hash to its digest, hold its count of lines or end in its head line, or the anchor is behind
    its head."""
    start = checkpoint.read(log_path, key)
    if start is None or found.count < start.count or (found.count == start.count and found.mac != start.head):
        return None
    prefix = text[:start.chars]
    # The line count too: `Lines` numbers the lines after the prefix from it, and the anchor is
    # compared by number, so a count its own prefix does not hold is never taken on the mac alone.
    if (len(prefix) != start.chars or not prefix.endswith(f" mac={start.head}\n")
            or prefix.count("\n") != start.count or not equal(checkpoint.digest(prefix), start.digest)):
        return None
    return verify_text(text[start.chars:], key, after=ChainCheck(True, Lines.from_prefix(prefix, start.count, start)))


_HIDDEN = "hidden"

# The logs this process verified last: resolved path -> (the text verified, the key and
# check_macs it was verified with, the ok check of it). A tick reads its loop's log many times
# (the gate, each state write, the give-up path) and a log only grows between two reads, so a
# later read whose text starts with the text verified before verifies only what was appended
# (`verify_text(after=...)`): the same answer as verifying the whole text, because the check
# is a fold over the lines and the prefix is compared byte for byte. Nothing here is read
# from disk or trusted across processes; the anchor and the keyed mark are read on every call.
_MEMO: dict[str, tuple[str, bytes | None, bool, ChainCheck]] = {}
_MEMO_SIZE = 8  # the few logs one command touches; the audit reads thousands, each once


def _verified(log_path: str | Path, text: str, key: bytes | None, check_macs: bool,
              found: anchor.Anchor | str | None) -> ChainCheck:
    """`verify_text(text, key, check_macs=check_macs)`, from this process's last ok check of
    the same log when `text` extends the text it checked (see `_MEMO`), else from the log's
    keyed checkpoint where `found` (its anchor) allows (`_from_checkpoint`). The lines are a
    `Lines` (a prefix from a checkpoint stays unparsed until read)."""
    where = os.path.realpath(log_path)
    seen = _MEMO.pop(where, None)
    check: ChainCheck | None = None
    if seen is not None and seen[1] == key and seen[2] == check_macs and text.startswith(seen[0]):
        check = verify_text(text[len(seen[0]):], key, check_macs=check_macs, after=seen[3])
    elif key is not None and check_macs and isinstance(found, anchor.Anchor):
        check = _from_checkpoint(log_path, text, key, found)
    if check is None or not check.ok:  # a check from a checkpoint that fails is done again in full
        check = verify_text(text, key, check_macs=check_macs)
    if check.ok:
        _MEMO[where] = (text, key, check_macs, check)
        while len(_MEMO) > _MEMO_SIZE:  # the oldest first (the dashboard's threads share it: never raises)
            _MEMO.pop(next(iter(_MEMO), where), None)
    lines = check.lines.lazy_copy() if isinstance(check.lines, Lines) else Lines.of(list(check.lines))
    return ChainCheck(check.ok, lines, check.error, needs_key=check.needs_key, unverified=check.unverified)


def _anchor_of(log_path: str | Path) -> anchor.Anchor | str | None:
    """The anchor of `log_path`, None without one, `_HIDDEN` where it may not be read, or why
    it is unreadable."""
    try:
        return anchor.read(log_path)
    except anchor.Hidden:
        return _HIDDEN
    except anchor.Unreadable as exc:
        return f"TAMPERED: {exc}: restore it from a backup, or a human accepts the log as it is:" \
               f" {anchor.accept_command(log_path)}"


def _anchored(log_path: str | Path, check: ChainCheck, found: anchor.Anchor | str | None) -> ChainCheck:
    """`check` (verified) held against the log's anchor `found` (see `_anchor_of`), read before
    the log: see `read_chain`."""
    if found is _HIDDEN:
        return check
    if isinstance(found, str):
        return _rolled(check, found, -1)
    if found is None:
        if keys.was_anchored(Path(log_path)):
            return _rolled(check, f"TAMPERED: its anchor {anchor.file_of(log_path)} is missing, although"
                           f" automaton anchored this log: a human accepts the log as it is:"
                           f" {anchor.accept_command(log_path)}", -1)
        return check
    why = anchor.behind(found, check.lines, log_path)
    if why:
        return _rolled(check, why, found.count)
    return ChainCheck(True, check.lines, unverified=check.unverified, anchor=found.count)


def _rolled(check: ChainCheck, why: str, count: int) -> ChainCheck:
    return ChainCheck(False, check.lines, why, unverified=check.unverified, rolled_back=True, anchor=count)


def _read_text(log_path: str | Path) -> str | ChainCheck:
    """The log as text, exactly its bytes decoded (no newline translation: automaton never
    writes a carriage return into a line, json-escaping it in values)."""
    try:
        return read_all(log_path).decode("utf-8")
    except FileNotFoundError:
        return ChainCheck(True, [])
    except (OSError, UnicodeDecodeError) as exc:
        return ChainCheck(False, [], f"cannot read: {exc}")


def append_event(
    log_path: Path, event: str, fields: dict[str, object], state: str, chain: ChainCheck | None = None
) -> str:
    """Append one keyed, chained line recording `state`, then move the log's anchor to it
    (`store.anchor`); returns the line. Caller holds the lock.

    Creates the key on first use; BadInput/CorruptState (exit 2) for a bad key file; BadInput
    for an anchor that cannot be written (the line is logged; the next locked writer rolls the
    anchor forward);
    CorruptState (exit 2, nothing written) when `chain` is older than its anchor (a human
    accepts that first: `--accept-rollback`, or re-seals, which starts a new chain).
    """
    key = keys.load_key(create=True)
    chain = chain if chain is not None else read_chain(log_path)
    if chain.rolled_back:
        raise CorruptState(f"{log_path}: {chain.error}")
    line = format_line(utc_now(), event, fields, state, chain.last_hash, key)
    append_line(log_path, line)
    if chain.ok:  # a broken chain keeps its anchor (and stays tampered)
        try:
            anchor.write(log_path, len(chain.lines) + 1, [*(x.raw for x in chain.lines[-anchor.TAIL:]), line])
        except OSError as exc:  # the line is logged: the next locked writer rolls the anchor forward
            where = anchor.file_of(log_path)
            raise BadInput(f"{where}: cannot write the anchor of {log_path} ({exc.strerror}); make {where.parent}"
                           " a folder you can write (mode 0700), then run the command again") from None
    # after the line: a reader that sees the mark also sees a keyed line
    keys.mark_keyed(log_path, anchored=chain.ok and chain.anchor < 0)
    return line


def commit(
    state_path: Path,
    log_path: Path,
    data: bytes,
    token: str,
    event: str,
    fields: dict[str, object],
    chain: ChainCheck | None = None,
) -> None:
    """Write `data` to `state_path` and log `event` with state token `token`, crash-safely.

    The log line decides: before it nothing has changed, after it the change has. So whatever
    can be checked first is: a state file the rename cannot replace (immutable or append-only,
    `atomic.probe_replace`) is refused before anything is written (EnvironmentFailure naming it),
    and a failure before the line is logged removes the temp file. A failure after the line is
    logged keeps the temp file (readers take the logged state from it, the next locked writer
    rolls it forward: `recover`) and says so: the change is recorded and in effect, what failed
    and how to fix it."""
    try:
        probe_replace(state_path)
    except OSError as exc:
        raise _unreplaceable(exc, state_path, "nothing was changed; clear that and run the command again",
                             f"it is {_FLAGS}") from None
    tmp = write_tmp(state_path, data)
    size = _size(log_path)
    try:
        append_event(log_path, event, fields, token, chain)
    except Exception:
        if _size(log_path) == size:  # nothing logged: nothing changed, nothing left behind
            tmp.unlink(missing_ok=True)
            raise
        _publish_logged(tmp, state_path, _in_effect(event, token, log_path, tmp))  # the state follows its line
        raise
    _publish_logged(tmp, state_path, _in_effect(event, token, log_path, tmp))


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _in_effect(event: str, token: str, log_path: Path, tmp: Path) -> str:
    return (f"the {event} to {token!r} is recorded in {log_path.name} and in effect (automaton reads it from"
            f" {tmp.name} meanwhile); once that is fixed, the next automaton command that writes here finishes"
            " the write")


def _publish_logged(tmp: Path, state_path: Path, then: str) -> None:
    """`publish` the temp file of a change whose log line is written; when the rename fails, the
    error `_unreplaceable` makes with `then` (that the change is recorded and in effect)."""
    try:
        publish(tmp, state_path)
    except OSError as exc:
        raise _unreplaceable(exc, state_path, then) from None


_FLAGS = "marked immutable or append-only (lsattr shows it; chattr -i -a clears it, chflags nouchg on BSD and macOS)"
# What stops a rename over a file -> why, in words.
_REPLACE_WHY = {
    "EPERM": f"it is {_FLAGS}, or in a sticky folder and another user's",
    "EACCES": "its folder is not writable for you (ls -ld the folder)",
}


def _unreplaceable(exc: OSError, state_path: Path, then: str, why: str | None = None) -> AutomatonError:
    """One line for a state file `exc` says cannot be replaced: the file, the error, `why` it
    happens (by default what its errno usually means), and `then` (what was or was not changed,
    and what to do). EnvironmentFailure (exit 1) for a refusal by the machine
    (`core.errors.environment_errno`), else BadInput (exit 2)."""
    import errno

    why = why or _REPLACE_WHY.get(errno.errorcode.get(exc.errno or -1, ""))
    said = (exc.strerror or type(exc).__name__).lower()
    message = f"cannot replace {state_path}: {said}" + (f": {why}" if why else "") + f"; {then}"
    return EnvironmentFailure(message) if environment_errno(exc) else BadInput(message)


def recover(state_path: Path, log_path: Path, token_of: Callable[[bytes], str | None]) -> None:
    """Finish or discard an interrupted commit. Caller holds the lock.

    Rolls the temp file forward only when its token is the log's last state and the state
    file's is not; otherwise removes the temp file (it was never logged). First rolls the
    log's anchor forward to a log that is ahead of it (`settle_anchor`).
    """
    settle_anchor(log_path)
    tmp = tmp_path(state_path)
    if not tmp.exists():
        return
    chain = read_chain(log_path)
    try:
        tmp_token = token_of(tmp.read_bytes())
    except OSError:
        tmp_token = None
    current: str | None
    try:
        current = token_of(state_path.read_bytes())
    except OSError:
        current = None
    if chain.ok and tmp_token is not None and tmp_token == chain.last_state != current:
        _publish_logged(tmp, state_path, f"a change to {tmp_token!r} is recorded in {log_path.name} and in effect,"
                        f" its write unfinished ({tmp.name}): once that is fixed, run the command again and it"
                        " finishes the write first")
        return
    tmp.unlink(missing_ok=True)


def settle_anchor(log_path: Path) -> None:
    """Under the log writer's lock: move the anchor forward to a verified log that is ahead of
    it (a crash between a line's append and its anchor's write). A log at, behind or beside its
    anchor, without one, or unreadable is left as it is (readers report it), and so is one read
    without the key (`unverified`: a process the key is withheld from). Cheap when there is
    nothing to do: the anchor and the log's line count are read, the chain only when ahead."""
    try:
        found = anchor.read(log_path)
        if found is None or read_all(log_path).count(b"\n") <= found.count:
            return
    except (anchor.Hidden, anchor.Unreadable, OSError):
        return
    chain = read_chain(log_path)
    if chain.ok and not chain.unverified and len(chain.lines) > found.count and chain.lines[-1].mac:
        anchor.write(log_path, len(chain.lines), [x.raw for x in chain.lines[-anchor.TAIL:]])


def adopt(log_path: str | Path, chain: ChainCheck | None = None) -> bool:
    """Anchor a keyed log that has no anchor yet at its head (the first use of anchors on a log
    automaton keyed before them); True when this call made the anchor. Safe without the log's
    lock: the anchor is only created, never replaced (a writer's newer anchor wins), and only
    for a log verified with the key (not `unverified`), keyed, whose mark does not say it was
    anchored (that reads as tampering, never re-anchored here). `chain`: the log as the caller
    just read it."""
    chain = chain if chain is not None else read_chain(log_path)
    if not chain.ok or chain.unverified or chain.anchor >= 0 or not chain.lines or not chain.lines[-1].mac:
        return False
    try:
        if anchor.read(log_path) is not None:
            return False
        anchor.write(log_path, len(chain.lines), [x.raw for x in chain.lines[-anchor.TAIL:]], replace=False)
    except (anchor.Hidden, anchor.Unreadable, OSError):
        return False
    keys.mark_keyed(Path(log_path), anchored=True)
    return True
