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

import time
from pathlib import Path

from automaton.core.chain import ChainCheck, format_line, verify_text
from automaton.store import key as keys
from automaton.store.atomic import append_line, publish, read_all, tmp_path, write_tmp

TYPE_CHECKING = False  # typing/collections.abc stay off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from collections.abc import Callable


def utc_now() -> str:
    """ISO-8601 UTC timestamp with seconds, e.g. `2026-11-30T13:20:00Z`."""
    # `time`, not `datetime` (the same clock, seconds rounded down alike): a tick that gives up
    # writes one log line, and importing datetime for it cost about a tenth of its imports.
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read_chain(log_path: str | Path) -> ChainCheck:
    """Verify the whole log at `log_path` (a plain string too: the audit names thousands of
    logs) with the key (never creating it); a missing log is an empty, valid chain. Not ok when
    a line is forged, unkeyed after a keyed one, keyed while the key is missing, or when the
    whole log is unkeyed at a path automaton has keyed before (it was replaced). Where the key
    is hidden (`store.key.KeyHidden`: an agent's sandbox, which cannot write the log either)
    keyed lines are taken on their SHA-256 chain (`unverified`).
    Raises BadInput/CorruptState (exit 2) for a bad key file (`store.key`)."""
    text = _read_text(log_path)
    if not isinstance(text, str):
        return text
    try:
        key, hidden = keys.load_key(create=False), False
    except keys.KeyHidden:
        key, hidden = None, True
    check = verify_text(text, key, check_macs=not hidden)
    if check.ok and check.legacy and keys.was_keyed(Path(log_path)):
        # A writer appends its first keyed line before it marks the log: re-read once, so a
        # reader that raced that writer sees the keyed line instead of a false replacement.
        text = _read_text(log_path)
        if not isinstance(text, str):
            return text
        check = verify_text(text, key, check_macs=not hidden)
        if check.ok and check.legacy:
            return ChainCheck(False, check.lines, "no line is keyed, but automaton has sealed this log with"
                              " its key before: the whole log was replaced")
    if check.needs_key:
        return ChainCheck(False, check.lines, f"{check.error}: {keys.key_path()} is missing (restore it"
                          " from a backup, or a human re-seals the log)", needs_key=True)
    return check


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
    """Append one keyed, chained line recording `state`; returns the line. Caller holds the lock.

    Creates the key on first use; BadInput/CorruptState (exit 2) for a bad key file.
    """
    key = keys.load_key(create=True)
    chain = chain if chain is not None else read_chain(log_path)
    line = format_line(utc_now(), event, fields, state, chain.last_hash, key)
    append_line(log_path, line)
    keys.mark_keyed(log_path)  # after the line: a reader that sees the mark also sees a keyed line
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
    """Write `data` to `state_path` and log `event` with state token `token`, crash-safely."""
    tmp = write_tmp(state_path, data)
    append_event(log_path, event, fields, token, chain)
    publish(tmp, state_path)


def recover(state_path: Path, log_path: Path, token_of: Callable[[bytes], str | None]) -> None:
    """Finish or discard an interrupted commit. Caller holds the lock.

    Rolls the temp file forward only when its token is the log's last state and the state
    file's is not; otherwise removes the temp file (it was never logged).
    """
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
        publish(tmp, state_path)
        return
    tmp.unlink(missing_ok=True)
