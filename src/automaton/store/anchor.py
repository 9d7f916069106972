"""The anchor of a keyed log: where its head was when automaton last wrote it.

A keyed log (`core.chain`) proves each line was written by automaton, but not that it is the
newest: an earlier, self-consistent copy of a state file and its log (copied aside, kept in
git, restored by `git reset --hard`) verifies just as well. So every append also records the
log's head in the record key's folder, which every agent sandbox hides: the anchor
`~/.config/automaton/keyed/<sha256 of the log's resolved path>.anchor`, beside the log's
`keyed/` mark (`store.key.mark_keyed`). Its text, mode 0600:

    <line count> <mac of that last line>
    <the log's resolved path>
    <the last TAIL lines of the log, as written: what a human is shown before a rollback is accepted>

Write order, under the log writer's lock: the line is appended (and fsynced), then the anchor
is replaced (temp file, fsync, rename, fsync of the folder). A crash between the two leaves
the log one line ahead of its anchor, which readers accept (the line is keyed, so automaton
wrote it) and the next locked writer rolls forward (`chainlog.recover`). A log behind its
anchor, or whose line at the anchor's count is another line, was rolled back.

Identity is the log's resolved path, like the keyed marks: a project folder moved (or a task
folder moved by automaton, which carries its anchors along: `move_tree`) is a new path. Its logs
then read as never anchored, and the next write or `--audit` anchors them; the old anchors are
left behind. A missing anchor for a log whose mark says it was anchored (`ANCHORED`) is
tampering, never a silent re-anchor.
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.record import record
from automaton.store import key as keys

TYPE_CHECKING = False  # typing stays off the hook path (core/record.py says why)
if TYPE_CHECKING:
    from automaton.core.chain import LogLine

SUFFIX = ".anchor"
TAIL = 10  # lines kept for the human's view of what a restore loses
_LIMIT = 1 << 20  # an anchor larger than this was not written by automaton


@record(frozen=True)
class Anchor:
    """One anchor: `count` lines, the last one's `mac` (64 hex), the log's resolved `path`,
    and the last lines of the log as written (`tail`, oldest first; its last is line `count`)."""

    count: int
    mac: str
    path: str
    tail: tuple[str, ...]

    def lost_from(self, kept: int) -> list[tuple[int, str]]:
        """(line number, line) of the kept tail lines past line `kept` (what a restore to
        `kept` lines forgets, as far as the anchor remembers)."""
        first = self.count - len(self.tail) + 1
        return [(first + i, raw) for i, raw in enumerate(self.tail) if first + i > kept]


class Unreadable(Exception):
    """The anchor exists but cannot be used (permissions, not automaton's format)."""


class Hidden(Exception):
    """This process may not read the key's folder (an agent's sandbox, see `store.key.KeyHidden`)."""


def file_of(log_path: str | Path) -> Path:
    """The anchor file of the log at `log_path`. BadInput (exit 2) when no home folder is set."""
    mark = keys.mark_path(Path(log_path))
    return mark.with_name(mark.name + SUFFIX)


def read(log_path: str | Path) -> Anchor | None:
    """The anchor of `log_path`, None when there is none. Unreadable for a file automaton did
    not write (or may not read), Hidden inside an agent's sandbox."""
    return read_file(file_of(log_path))


def read_file(path: Path) -> Anchor | None:
    """`read` of an anchor file named directly (the audit lists them)."""
    try:
        # O_NONBLOCK: a FIFO planted here must not hang a reader (the hook reads anchors too).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        if keys.hidden_here(path):
            raise Hidden(str(path)) from None
        raise Unreadable(f"{path}: cannot read the anchor ({exc.strerror})") from None
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read the anchor ({exc.strerror})") from None
    try:
        data = os.read(fd, _LIMIT + 1)
    except OSError as exc:  # a folder or FIFO at the anchor's name
        raise Unreadable(f"{path}: cannot read the anchor ({exc.strerror})") from None
    finally:
        os.close(fd)
    return parse(data, path)


def parse(data: bytes, path: Path) -> Anchor:
    """An anchor's bytes as an Anchor; Unreadable naming `path` when they are not one."""
    try:
        rows = data.decode("utf-8", "surrogateescape").split("\n")
        count_text, mac = rows[0].split(" ")
        count = int(count_text)
    except (ValueError, IndexError):
        raise Unreadable(f"{path}: not an anchor automaton wrote") from None
    tail = tuple(r for r in rows[2:] if r)
    if (len(data) > _LIMIT or count < 1 or len(mac) != 64 or len(rows) < 3 or rows[-1]
            or not tail or not tail[-1].endswith(f" mac={mac}") or len(tail) > count):
        raise Unreadable(f"{path}: not an anchor automaton wrote")
    return Anchor(count, mac, rows[1], tail)


def write(log_path: str | Path, count: int, tail: list[str], *, replace: bool = True) -> None:
    """Record that `log_path` has `count` lines, the last of which is `tail[-1]` (keyed).

    Temp file, fsync, rename (`replace`) or link (not `replace`: only when no anchor exists,
    so an adopter without the writer's lock never moves an anchor back), fsync of the folder.
    OSError as raised."""
    target = file_of(log_path)
    mac = tail[-1][-64:]
    resolved = os.path.realpath(log_path)
    body = f"{count} {mac}\n{resolved}\n" + "".join(f"{raw}\n" for raw in tail[-TAIL:])
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, body.encode("utf-8", "surrogateescape"))
        os.fsync(fd)
    finally:
        os.close(fd)
    if replace:
        os.replace(tmp, target)
    else:
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    from automaton.store.atomic import fsync_dir

    fsync_dir(target.parent)


def forget(log_path: str | Path) -> None:
    """Drop the anchor and the keyed mark of `log_path` (a human's re-seal starts a new chain
    there; a removed loop's log moved away). Caller holds the log's lock."""
    from automaton.store import checkpoint

    file_of(log_path).unlink(missing_ok=True)
    checkpoint.forget(log_path)
    keys.mark_path(Path(log_path)).unlink(missing_ok=True)


def remembered(log_path: str | Path) -> list[LogLine]:
    """The lines the anchor of `log_path` keeps (its tail), parsed, each one whose mac the key
    verifies: what a rolled-back log lost, for a re-seal that must not take its counters from the
    older copy alone. [] without an anchor, a key, or where either cannot be read."""
    from automaton.core.chain import line_mac, parse_line
    from automaton.core.digest import equal

    try:
        found, key = read(log_path), keys.load_key(create=False)
    except (Hidden, Unreadable, BadInput):
        return []
    if found is None or key is None:
        return []
    parsed = [parse_line(raw) for raw in found.tail]
    return [x for x in parsed if x is not None and x.mac and equal(x.mac, line_mac(key, x.body))]


def move_tree(old_root: Path, new_root: Path) -> None:
    """`move` every anchor of a log under the folder `old_root` (moved to `new_root` already).
    Caller holds the locks of those logs. Best effort outside the key's reach (Hidden)."""
    try:
        found = under(old_root)
    except (Hidden, OSError):
        return
    prefix = os.path.realpath(old_root)
    for each in found:
        new_log = Path(os.path.realpath(new_root) + each.path[len(prefix):])
        write(new_log, each.count, list(each.tail))
        keys.mark_keyed(new_log, anchored=True)
        forget(each.path)


def accept_command(log_path: str | Path) -> str:
    """The human act that accepts the log at `log_path` as it is, named for that log by where it
    lies: `automaton --accept-rollback --task T` (`P/S` for a sub-task, also under
    tasks/complete/), `--loop NAME`, `--config`; a focus's log is started afresh by a human's
    `automaton --focus TASK`."""
    parts = Path(log_path).parts
    if parts[-1:] == ("config.log",):
        return "automaton --accept-rollback --config"
    if parts[-1:] == ("focus.log",):
        return "automaton --focus TASK"
    if len(parts) >= 4 and parts[-4:-2] == (".automaton", "loops"):
        return f"automaton --accept-rollback --loop {parts[-2]}"
    if len(parts) >= 3 and _in_tasks(parts[:-2]):
        return f"automaton --accept-rollback --task {parts[-2]}"
    if len(parts) >= 4 and _in_tasks(parts[:-3]):
        return f"automaton --accept-rollback --task {parts[-3]}/{parts[-2]}"
    return "automaton --accept-rollback --task T | --loop NAME | --config"


def _in_tasks(parts: tuple[str, ...]) -> bool:
    return parts[-1:] == ("tasks",) or parts[-2:] == ("tasks", "complete")


def behind(found: Anchor, lines: list[LogLine], log_path: str | Path) -> str:
    """Why a verified log of `lines` at `log_path` is older than its anchor ("" when it is
    not): fewer lines than anchored, or another line at the anchored count; it ends with
    `rollback_hint`."""
    have, want = len(lines), found.count
    hint = rollback_hint(log_path)
    if have < want:
        gone = ": the log was deleted" if not have else ""
        return f"TAMPERED: rolled back to line {have} of {want} (its anchor holds line {want}{gone}); {hint}"
    if lines[want - 1].mac != found.mac:
        return (f"TAMPERED: rolled back to another history: line {want} is not the line automaton wrote"
                f" there (its anchor holds it); {hint}")
    return ""


def rollback_hint(log_path: str | Path) -> str:
    """What ends the finding of a rolled-back log at `log_path` (`behind`): the two ways out."""
    return f"restore the newer copy, or a human who meant it accepts the loss: {accept_command(log_path)}"


def under(root: Path) -> list[Anchor]:
    """Every readable anchor of a log under the folder `root` (resolved), for the audit. Hidden
    inside an agent's sandbox; unreadable anchors are skipped (each reader of its log reports it)."""
    folder = keys.mark_path(root).parent
    prefix = os.path.realpath(root) + os.sep
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except PermissionError:
        if keys.hidden_here(folder):
            raise Hidden(str(folder)) from None
        raise
    found: list[Anchor] = []
    for name in sorted(names):
        if not name.endswith(SUFFIX) or name.startswith("."):
            continue
        try:
            anchor = read_file(folder / name)
        except Unreadable:
            continue
        if anchor is not None and anchor.path.startswith(prefix):
            found.append(anchor)
    return found
