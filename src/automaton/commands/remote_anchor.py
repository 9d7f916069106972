"""The anti-rollback anchor of a loop whose state lives in a git remote (`--state-remote`).

A state commit's log verifies with the record key line by line, but an older state commit
verifies just as well: someone with push rights who force-pushes `refs/automaton/loops/<name>`
back to an earlier commit (fewer ticks, less spend) is a rollback that a fresh runner, which
has no local anchor (`store.anchor`), cannot see. So the remote keeps the log's head too:

- `refs/automaton/anchors/<name>` (one ref per loop: a lost lease on it can only be another
  publish of the same loop, which is a lost claim anyway) holds a commit whose tree is one file,
  `anchor`, and whose parents are the previous anchor commit (so every move is a fast-forward)
  and the state commit it was pushed with (so a state commit force-pushed away stays reachable
  for a human to restore). The file, UTF-8, one `<field> <value>` per line:

      automaton remote anchor v1
      loop <name>
      count <the log's line count>
      head <SHA-256 hex of the log's last line, as the next line's `prev` holds it>
      state <the state commit pushed with it>
      mac <HMAC-SHA256 hex under the record key of the five lines above, each ending in "\\n">

- Every publish (`remote_state.publish`: a claim, a settled tick, a gate's halt, a human act)
  moves the anchor in the same `git push --atomic`, with its own lease (the anchor commit the
  fetch saw, or absent), so the state ref and its anchor land together or not at all.
- A fetch reads the anchor ref before the state ref (`fetch`): a publish that lands between the
  two reads leaves the state ahead of the anchor, never behind it. The fetched log must then
  hold the anchored head (`check`): at least `count` lines, line `count` hashing to `head`, and
  the mac must verify with the record key; otherwise nothing runs (CorruptState, exit 2). A log
  ahead of its anchor is accepted (a runner of an older automaton published without moving it).
- No anchor ref yet (states published before anchors): the first publish writes it, after
  logging a keyed `WARNING reason=remote_anchored ref=refs/automaton/anchors/<name>` line. A
  fetched log that holds that line while the remote has no anchor ref had its anchor deleted:
  refused. So deleting the anchor ref lets a fresh runner adopt only a state published before
  the loop's first anchored publish.
- A machine that persists (a cron runner) also keeps the head of the last state it fetched or
  pushed, in the same format, beside the log's local anchor:
  `~/.config/automaton/keyed/<sha256 of the log's resolved path>.remote`. A fetched log that
  does not hold that head is refused too: that catches a rollback of both refs together to an
  older, consistent pair, which a fresh runner cannot tell from the real head.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from automaton.core.chain import line_hash
from automaton.core.digest import equal, hmac_sha256
from automaton.core.errors import BadInput, CorruptState
from automaton.core.loopstate import Event, LogEvent
from automaton.git import remote as git_remote
from automaton.git import run_git
from automaton.git.remote import Move, RemoteFailed
from automaton.store import chainlog
from automaton.store import key as keys
from automaton.store.atomic import atomic_write
from automaton.store.loops import Loop

ANCHOR_PREFIX = "refs/automaton/anchors/"
FETCHED_ANCHOR = "refs/automaton/fetched/anchors/"
FILE = "anchor"
VERSION = "automaton remote anchor v1"
ADOPTED = "remote_anchored"  # the WARNING reason of the line the first anchored publish logs
LOCAL_SUFFIX = ".remote"
_FIELDS = ("loop", "count", "head", "state")
_LIMIT = 1 << 12  # an anchor file larger than this was not written by automaton
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")  # SHA-1 or SHA-256 object names


def anchor_ref(loop: str) -> str:
    return ANCHOR_PREFIX + loop


@dataclass(frozen=True)
class RemoteAnchor:
    """A log's head as published: loop `loop`'s log had `count` lines, the last of which hashes
    (SHA-256 hex) to `head`, when the state commit `state` was pushed; `mac`: the record key's
    HMAC-SHA256 hex over them (`body`)."""

    loop: str
    count: int
    head: str
    state: str
    mac: str

    def body(self) -> str:
        return f"{VERSION}\nloop {self.loop}\ncount {self.count}\nhead {self.head}\nstate {self.state}\n"

    def text(self) -> str:
        return f"{self.body()}mac {self.mac}\n"


def _lines(log: bytes) -> list[str]:
    """The log's lines as written (split at "\\n" only, as the log writer ends each line)."""
    rows = log.decode("utf-8", "replace").split("\n")
    return rows[:-1] if rows and not rows[-1] else rows


def make(key: bytes, loop: str, log: bytes, state: str) -> RemoteAnchor:
    """The anchor of the log `log` (its bytes, keyed lines) of loop `loop`, pushed with `state`."""
    lines = _lines(log)
    unsigned = RemoteAnchor(loop, len(lines), line_hash(lines[-1]) if lines else "", state, "")
    return RemoteAnchor(loop, unsigned.count, unsigned.head, state, hmac_sha256(key, unsigned.body().encode()))


def parse(data: bytes, key: bytes, loop: str) -> RemoteAnchor | str:
    """The anchor in `data` when it is one automaton wrote for loop `loop` and its mac verifies
    under `key`; else why not (one phrase)."""
    rows = data.decode("utf-8", "replace").split("\n")
    if len(data) > _LIMIT or len(rows) != 7 or rows[0] != VERSION or rows[-1]:
        return "not an anchor automaton wrote"
    pairs = [row.partition(" ") for row in rows[1:6]]
    loop_at, count, head, state, mac = (value for _, _, value in pairs)
    if ([name for name, _, _ in pairs] != [*_FIELDS, "mac"] or not (count.isascii() and count.isdigit())
            or not _HEX64.match(head) or not _HEX64.match(mac) or not _OID.match(state)):
        return "not an anchor automaton wrote"
    found = RemoteAnchor(loop_at, int(count), head, state, mac)
    if not equal(hmac_sha256(key, found.body().encode()), found.mac):
        return "its mac does not verify with the record key"
    if found.loop != loop:
        return f"it is the anchor of loop {found.loop!r}"
    return found


def held_by(found: RemoteAnchor, log: bytes) -> str:
    """Why the log `log` (bytes) does not hold the anchored head ("" when it does)."""
    lines = _lines(log)
    if len(lines) < found.count:
        return f"its log has {len(lines)} lines, the anchor holds line {found.count}"
    if not found.count or not equal(line_hash(lines[found.count - 1]), found.head):
        return f"line {found.count} of its log is not the line the anchor holds"
    return ""


def _last(out: str, err: str, code: int) -> str:
    lines = [ln for ln in (err + "\n" + out).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {code}"


def fetch(root: Path, remote: str, loop: str, *, user_config: bool = False) -> str | None:
    """Fetch `refs/automaton/anchors/<loop>` from `remote` into `refs/automaton/fetched/anchors/<loop>`
    (a stale copy removed first); the anchor commit's oid, None when the remote has no anchor.
    Called before the state's fetch (module docstring). Raises as `git.remote.fetch_ref`."""
    return git_remote.fetch_ref(root, remote, anchor_ref(loop), FETCHED_ANCHOR + loop, user_config=user_config)


def _key(loop: str) -> bytes:
    try:
        key = keys.load_key(create=False)
    except keys.KeyHidden:
        key = None
    if key is None:
        raise CorruptState(f"loop {loop}: no record key to check the state remote's anchor with; set"
                           " AUTOMATON_RECORD_KEY (the loop's key), nothing was run")
    return key


def local_file(log: Path) -> Path:
    """This machine's record of the last state it fetched or pushed for the log at `log`."""
    mark = keys.mark_path(log)
    return mark.with_name(mark.name + LOCAL_SUFFIX)


def check(root: Path, loop: str, remote: str, tip: str | None, state: str, log: Path) -> None:
    """The fetched state commit `state`, materialised with its log at `log`, against the anchor
    commit `tip` (None: the remote has none) and this machine's record (module docstring); on
    success this machine records the log's head. CorruptState (exit 2, one line naming the ref
    and what a human does) when the state is older than either, the anchor does not verify, or
    the anchor was deleted after the loop's first anchored publish."""
    key, data = _key(loop), log.read_bytes()
    ref = anchor_ref(loop)
    if tip is None:
        adopted = _adoption_line(log)
        if adopted:
            raise CorruptState(f"loop {loop}: the state remote {remote!r} has no {ref}, although line {adopted} of"
                               f" the log says the loop was anchored there: the ref was deleted; nothing was run."
                               f" A human restores it from a clone that fetched it: {_restore(remote, loop, '')}")
    else:
        found = _read_tip(root, tip, key, loop, remote)
        why = held_by(found, data)
        if why:
            raise CorruptState(
                f"loop {loop}: the state ref {git_remote.state_ref(loop)} on {remote!r} (commit {state[:12]}) is older"
                f" than its anchor {ref} ({why}): someone moved the state ref back; nothing was run. A human"
                f" restores it: git push --force {remote} {found.state}:{git_remote.state_ref(loop)}")
    _check_local(key, loop, remote, log, data)
    _record(log, make(key, loop, data, state))


def _restore(remote: str, loop: str, force: str) -> str:
    return f"git push {force}{remote} {FETCHED_ANCHOR}{loop}:{anchor_ref(loop)}"


def _read_tip(root: Path, tip: str, key: bytes, loop: str, remote: str) -> RemoteAnchor:
    ref = anchor_ref(loop)
    try:
        files = git_remote.read_tree(root, tip)
    except RemoteFailed as exc:
        files, why = {}, str(exc)
    else:
        why = "not an anchor automaton wrote"
    parsed: RemoteAnchor | str = parse(files[FILE], key, loop) if list(files) == [FILE] else why
    if isinstance(parsed, str):
        raise CorruptState(f"loop {loop}: the anchor {ref} on {remote!r} (commit {tip[:12]}) does not verify"
                           f" ({parsed}); nothing was run. Check AUTOMATON_RECORD_KEY is this loop's key, or a"
                           " human restores it from a clone that fetched it before:"
                           f" {_restore(remote, loop, '--force ')}")
    return parsed


def _adoption_line(log: Path) -> int:
    """The number of the log's `WARNING reason=remote_anchored` line, 0 when it has none."""
    lines = chainlog.read_chain(log).lines
    return next((i for i, x in enumerate(lines, 1) if x.event == "WARNING" and x.fields.get("reason") == ADOPTED), 0)


def _check_local(key: bytes, loop: str, remote: str, log: Path, data: bytes) -> None:
    where = local_file(log)
    try:
        raw = where.read_bytes()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CorruptState(f"{where}: cannot read this machine's record of loop {loop}'s state remote"
                           f" ({exc.strerror}); nothing was run. Make it readable, or remove it") from None
    found = parse(raw, key, loop)
    if isinstance(found, str):
        raise CorruptState(f"{where}: this machine's record of loop {loop}'s state remote does not verify ({found});"
                           " nothing was run. A human removes it (the next tick writes it again)")
    why = held_by(found, data)
    if why:
        raise CorruptState(
            f"loop {loop}: the state remote {remote!r} holds an older state than this machine fetched or pushed"
            f" before ({why}; recorded in {where}): its state and anchor refs were moved back; nothing was run."
            f" A human restores them (git push --force {remote} {found.state}:{git_remote.state_ref(loop)}"
            f" and the anchor from a clone that fetched it), or removes {where} to accept the remote's state")


def _record(log: Path, head: RemoteAnchor) -> None:
    """Record `head` as this machine's latest view of the remote's log at `log` (best effort:
    a machine that cannot keep it is a fresh runner next time)."""
    try:
        where = local_file(log)
        where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(where, head.text().encode())
    except (OSError, BadInput):
        return


def adopt(loop: Loop, tip: str | None) -> None:
    """Before the first anchored publish of a loop (`tip` None: the remote has no anchor ref):
    log the keyed `WARNING reason=remote_anchored` line, once (module docstring)."""
    if tip is None and not _adoption_line(loop.log_file):
        loop.log_event(LogEvent(Event.WARNING, {"reason": ADOPTED, "ref": anchor_ref(str(loop.name))}))


@dataclass(frozen=True)
class Moved:
    """A prepared move of the anchor: the `move` for the atomic push and the `anchor` it holds."""

    move: Move
    anchor: RemoteAnchor


def move(root: Path, loop: str, tip: str | None, state: str, log: bytes) -> Moved:
    """The anchor commit for the state commit `state` whose log is `log` (bytes), parents `tip`
    (the anchor the fetch saw, also the lease) and `state`. RemoteFailed when git cannot write it."""
    made = make(_key(loop), loop, log, state)
    blob = run_git(root, ["hash-object", "-w", "--stdin"], stdin=made.text())
    tree = run_git(root, ["mktree"], stdin=f"100644 blob {blob.out.strip()}\t{FILE}\n") if blob.code == 0 else blob
    if tree.code != 0:
        raise RemoteFailed(f"cannot write the anchor of loop {loop} in {root}: {_last(tree.out, tree.err, tree.code)}")
    parents = [*(["-p", tip] if tip else []), "-p", state]
    commit = run_git(root, ["commit-tree", tree.out.strip(), *parents, "-m", f"automaton: anchor of loop {loop}"],
                     env=git_remote.IDENTITY)
    if commit.code != 0:
        raise RemoteFailed(f"cannot write the anchor of loop {loop} in {root}:"
                           f" {_last(commit.out, commit.err, commit.code)}")
    return Moved(Move(anchor_ref(loop), commit.out.strip(), tip), made)


def landed(log: Path, moved: Moved) -> None:
    """After a publish with `moved` landed: this machine records its head (best effort)."""
    _record(log, moved.anchor)
