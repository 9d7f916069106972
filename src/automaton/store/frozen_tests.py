"""A loop's frozen test set and the holdout tests' digest, kept in the loop folder and sealed.

`.automaton/loops/<name>/tests.frozen.json`: the test ids the verifier collected at the base
commit (`runner.freeze`), as `{"base_commit", "holdout", "ids", "seal"}` where `seal` is the
HMAC-SHA256 (`store.key.seal_bytes`, the record key no agent sandbox can read) of the other
keys in canonical JSON (`core.testids.Frozen.body`). `tests.proposed.json`, same shape: the
ids of the run that halted `human_intervention` with detail `tests_removed`, which an approval
(`--approve --loop`) makes the frozen set after the human saw the diff of ids.

A record that is missing, unreadable or whose seal does not match reads as None: the runner
then collects the set at the base commit again, which is never looser than what was sealed
(an accepted set only ever differs from the base set by a human's approval).
"""

from __future__ import annotations

import json
import os
from hashlib import sha256
from hmac import compare_digest as equal
from pathlib import Path

from automaton.core import jsontext
from automaton.core.testids import Frozen, id_diff
from automaton.store.atomic import atomic_write, read_all
from automaton.store.key import seal_bytes

FROZEN = "tests.frozen.json"
PROPOSED = "tests.proposed.json"
TESTS_REMOVED = "tests_removed"
HOLDOUT_CHANGED = "holdout_changed"
# git holds the holdout tests (commands.holdout_git): the human rotates them, so an approval
# accepts them as they are now, as for holdout_changed.
HOLDOUT_COMMITTED = "holdout_committed"
MAX_BYTES = 64 << 20  # a record larger than this is no record automaton wrote


def _seal(frozen: Frozen) -> str:
    return seal_bytes(frozen.body())


def _write(path: Path, frozen: Frozen) -> None:
    obj = {"base_commit": frozen.base_commit, "holdout": frozen.holdout, "ids": list(frozen.ids),
           "seal": _seal(frozen)}
    atomic_write(path, (json.dumps(obj, indent=1) + "\n").encode("utf-8"))


def _read(path: Path) -> Frozen | None:
    try:
        data = read_all(path)
        if len(data) > MAX_BYTES:
            return None
        obj = jsontext.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    base, holdout, ids, seal = obj.get("base_commit"), obj.get("holdout"), obj.get("ids"), obj.get("seal")
    if not (isinstance(base, str) and isinstance(holdout, str) and isinstance(seal, str) and isinstance(ids, list)
            and all(isinstance(i, str) for i in ids)):
        return None
    frozen = Frozen(base, holdout, tuple(ids))
    return frozen if equal(_seal(frozen).encode(), seal.encode()) else None


def read_frozen(loop_dir: Path) -> Frozen | None:
    """The sealed frozen set of the loop at `loop_dir`; None when missing or not sealed."""
    return _read(loop_dir / FROZEN)


def write_frozen(loop_dir: Path, base_commit: str, holdout: str, ids: list[str]) -> Frozen:
    """Seal and keep `ids` (de-duplicated, sorted) as the loop's frozen set. Raises OSError, or
    BadInput when no record key can be made."""
    frozen = Frozen(base_commit, holdout, tuple(sorted(set(ids))))
    _write(loop_dir / FROZEN, frozen)
    return frozen


def write_proposed(loop_dir: Path, frozen: Frozen, ids: list[str]) -> None:
    """Keep the ids of a run that halted `tests_removed`, for a human to accept."""
    _write(loop_dir / PROPOSED, Frozen(frozen.base_commit, frozen.holdout, tuple(sorted(set(ids)))))


def review(loop_dir: Path, halt_detail: str | None) -> tuple[list[str], str]:
    """What an approval of a halt with `halt_detail` does to the test set: (lines for the human,
    a token of what they saw). A `tests_removed` halt: the diff of ids (`- id` leaves the set,
    `+ id` joins it). A `holdout_changed` or `holdout_committed` halt: the set is collected again at
    the next tick.
    ([], "") for any other halt."""
    if not halt_detail:
        return [], ""
    if halt_detail.startswith(TESTS_REMOVED):
        old, new = read_frozen(loop_dir), _read(loop_dir / PROPOSED)
        if old is None or new is None:
            return ["tests: no sealed proposal to accept; the next tick collects the test set at the base commit"
                    " again"], "none"
        diff = id_diff(old.ids, new.ids)
        return ["tests: this approval accepts a new frozen test set (ids):", *[f"  {line}" for line in diff]], \
            sha256(new.body()).hexdigest()
    if halt_detail.startswith((HOLDOUT_CHANGED, HOLDOUT_COMMITTED)):
        return ["tests: this approval accepts the holdout tests as they are now; the next tick collects the"
                " test set at the base commit again"], HOLDOUT_CHANGED
    return [], ""


def approve(loop_dir: Path, halt_detail: str | None) -> None:
    """Apply what `review` said: a `tests_removed` halt makes the proposal the frozen set; a
    `holdout_changed` or `holdout_committed` halt drops the frozen set (collected again). Raises OSError."""
    if not halt_detail:
        return
    if halt_detail.startswith(TESTS_REMOVED):
        new = _read(loop_dir / PROPOSED)
        if new is None:
            (loop_dir / FROZEN).unlink(missing_ok=True)
        else:
            _write(loop_dir / FROZEN, new)
        (loop_dir / PROPOSED).unlink(missing_ok=True)
    elif halt_detail.startswith((HOLDOUT_CHANGED, HOLDOUT_COMMITTED)):
        (loop_dir / FROZEN).unlink(missing_ok=True)


def holdout_problems(folder: Path) -> list[str]:
    """Why `folder` cannot be the holdout tests, every offending path named: not a folder (or a
    symlink to one), a symlink inside it (file or folder: the copy into the export would leave
    it out or lead outside), anything but a regular file. [] when it can be used."""
    if not folder.is_dir() or folder.is_symlink():
        return [f"{folder}: not a folder"]
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            path = Path(dirpath) / name
            if path.is_symlink():
                found.append(f"{path}: a symlink")
            elif name in filenames and not path.is_file():
                found.append(f"{path}: not a regular file")
    return found


def holdout_digest(folder: Path) -> str:
    """SHA-256 hex over the regular files under `folder` (sorted relative posix paths and their
    bytes). OSError naming every problem `holdout_problems` finds (symlinks, a missing folder)."""
    problems = holdout_problems(folder)
    if problems:
        raise OSError("; ".join(problems))
    digest = sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix().encode("utf-8", "surrogateescape")
            data = read_all(path)
            digest.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()
