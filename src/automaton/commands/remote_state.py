"""A loop whose state lives in a git remote (`--state-remote REMOTE`, loop.json `state_remote`).

The plumbing and the ref names are `automaton.git.remote`'s. Here: which files of the loop
folder are its state, how a fetched state becomes the loop folder (verified with the record
key before anything reads it), the claim of a tick, and the push of what the runner wrote.

The state commit's tree (paths relative to `.automaton/loops/<name>/`): every regular file of
the loop folder but `worktree/`, the locks (`.lock`, `.state.lock`, `.remote.lock`), the drift
check's cache (`drift.index`, `drift.index.seal`), temp files (`*.tmp`) and
files larger than MAX_FILE_BYTES; i.e. `loop.json`, `.state.loop`, `.state.log`,
`sealed/loop.json`, the template's files (`implement.md` …) and `runs/<n>/…`; plus
`sealed/state-files`, their keyed manifest (`commands.remote_manifest`), which a fetch
verifies before it writes any of them (and never writes into the loop folder).

A tick with a state remote (`remote_tick`), holding the loop's local tick lock:
1. fetch `refs/automaton/loops/<name>` and `refs/heads/loop/<name>`; the state commit's files
   replace the loop folder's (the local anchor and keyed mark of its log are dropped first), the
   log must verify whole with the record key (every line keyed) and the state must agree with
   it, and it must hold the head its anchor `refs/automaton/anchors/<name>` (fetched first) and
   this machine last saw (`commands.remote_anchor`), else nothing runs (exit 2); the local
   `loop/<name>` is set to the remote's tip.
   No state ref yet: the checkout's own loop folder is published (the loop's first remote tick).
2. a last `TICK_START n=…` no `TICK`/`TICK_DEFERRED` closed: younger than `claim_ttl_s` (the
   account's reservation lifetime, `runner.account.ttl_s`), another runner holds the tick:
   exit 0, `tick skipped: tick N of loop NAME runs on another runner (claimed at TS)`, nothing
   written. Older: its runner died after its claim; it stays charged at its reservation (as a
   killed local tick does) and a `WARNING reason=abandoned_tick n=N` line goes with this
   runner's claim.
3. the gates run; the claim is the push (lease: the fetched state commit) of the state holding
   this tick's `TICK_START`. Lost: exit 0, `tick skipped: another runner claimed tick N of
   loop NAME`, the account reservation released at $0, no agent started. Refused by the
   remote: exit 1, nothing run.
4. after the tick, one atomic push: the settled state (lease: the claim commit) and
   `loop/<name>` (lease: the fetched tip). Refused or lost: exit 1 naming it; the claim stays
   on the remote, unsettled, and the next runner settles it at its reservation after the TTL.
   Every push of a state moves its anchor with it, in the same atomic push.
A gate that refused wrote only what a gate writes (a HALT): pushed with the fetched lease,
best effort (a lost lease means another runner wrote first).
"""

from __future__ import annotations

import calendar
import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from automaton.commands import remote_anchor, remote_manifest
from automaton.commands.halts import halt_now
from automaton.core.chain import ChainCheck, LogLine, verify_text
from automaton.core.errors import BadInput, CorruptState, ExitCode, Refused
from automaton.core.loopconfig import remote_has_credential, remote_spelling_ok
from automaton.core.loopstate import Event, LogEvent
from automaton.core.names import LoopName
from automaton.core.outcome import Outcome
from automaton.git import remote as git_remote
from automaton.git.remote import Fetched, Move, NoSuchRemote, NotACommit, RemoteFailed
from automaton.store import anchor, chainlog
from automaton.store import key as keys
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked
from automaton.store.loops import CONFIG_FILE, LOG_FILE, SEALED_COPY, STATE_FILE, STATE_LOCK, TICK_LOCK, Loop

MAX_FILE_BYTES = 4 << 20  # a run's transcript past this stays on the machine that ran it
# The worktree, the locks, and the drift check's private index with its seal (a cache that
# the next drift check rebuilds on any machine).
SKIP_TOP = frozenset({"worktree", TICK_LOCK, STATE_LOCK, "drift.index", "drift.index.seal", ".remote.lock",
                      ".remote.seen"})
# This machine's note that its loop folder came from (or went to) a state remote: the last state
# commit it saw. Never pushed. A remote that then has no state ref lost it (deleted, replaced by a
# mirror push): the folder, possibly many ticks behind, is not published as if it were new.
SEEN = ".remote.seen"
# Held by a human act through its fetch, act and push (the act takes the tick lock itself,
# as `--approve --loop` does: never while a tick of the loop runs here).
ACT_LOCK = ".remote.lock"
CLOSING = ("TICK", "TICK_DEFERRED")
ABANDONED = "abandoned_tick"
CLAIMED = "claimed"
REMOTE_REFUSED = "remote_refused"
BRANCH_REFUSED = "branch_refused"

# Tests move the clock to age a claim without sleeping; nothing an agent controls reaches it.
clock: Callable[[], float] = time.time


def check_remote(remote: str, source: str) -> str:
    """`remote` when it may name a state remote; BadInput (exit 2) naming `source` otherwise."""
    if not remote_spelling_ok(remote):
        raise BadInput(f"{source} {remote!r}: not a git remote name or URL (no leading '-', no whitespace,"
                       " no ext::); pass e.g. --state-remote origin")
    if remote_has_credential(remote):  # never echoed: the value holds the secret
        raise BadInput(f"{source}: the URL carries a credential (every process of this user can read a command"
                       " line, and git names its URL in messages); name the URL without it and hand the token in"
                       f" as ${git_remote.TOKEN_ENV}")
    return remote


def durable_files(folder: Path) -> dict[str, bytes]:
    """The loop folder's state files (see the module docstring): relative path -> bytes."""
    out: dict[str, bytes] = {}
    for top, dirs, names in os.walk(folder):
        rel_top = os.path.relpath(top, folder)
        if rel_top == ".":
            dirs[:] = [d for d in dirs if d not in SKIP_TOP]
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d)) and d != "__pycache__"
                   and d.lower() != ".git"]
        for name in names:
            rel = name if rel_top == "." else f"{rel_top}/{name}".replace(os.sep, "/")
            path = os.path.join(top, name)
            if (rel_top == "." and name in SKIP_TOP) or name.endswith(".tmp") or os.path.islink(path) \
                    or name.lower() == ".git":
                continue
            try:
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    continue
                out[rel] = Path(path).read_bytes()
            except (FileNotFoundError, IsADirectoryError):
                continue
    return out


def safe_rel(rel: str) -> bool:
    """Whether a state commit's path may be written into the loop folder: relative, no `.`/`..`
    or empty part, nothing automaton keeps off the state (SKIP_TOP, `*.tmp`), and no `.git`
    part in any case (a planted repository's config would run its `core.fsmonitor` for the
    first human who runs git in the loop folder)."""
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and "" not in parts and "." not in parts \
        and parts[0] not in SKIP_TOP and not rel.endswith(".tmp") and not any(p.lower() == ".git" for p in parts)


@dataclass
class Synced:
    """A loop folder brought in from its state remote. `fetched`: what the remote held;
    `files`: the state files as materialised (to tell whether anything changed since);
    `claim`: the state commit of this runner's landed claim, once made."""

    project: Project
    name: LoopName
    remote: str
    fetched: Fetched
    files: dict[str, bytes]
    user_config: bool = False
    claim: str | None = None
    notes: list[str] = field(default_factory=list)
    anchor_tip: str | None = None  # the anchor commit on the remote (fetched, then each one pushed): its lease

    @property
    def folder(self) -> Path:
        return self.project.loop_dir(self.name)


def sync_in(project: Project, name: str, remote: str, *, user_config: bool = False) -> Synced:
    """Fetch loop `name`'s state from `remote` and make it the loop folder (module docstring,
    step 1). Caller holds the loop's tick lock. BadInput (exit 2): the remote has no state and
    this checkout no loop; CorruptState (exit 2): the fetched state does not verify with the
    record key; Refused (exit 1): git cannot reach the remote."""
    loop = LoopName.of(name)
    root = project.root
    try:
        # The anchor before the state (commands/remote_anchor.py says why).
        tip = remote_anchor.fetch(root, remote, loop, user_config=user_config)
        fetched = git_remote.fetch(root, remote, loop, user_config=user_config)
    except NoSuchRemote as exc:
        raise BadInput(f"loop {loop}: {exc}; nothing was run") from None
    except NotACommit as exc:
        raise CorruptState(f"loop {loop}: {exc}") from None
    except RemoteFailed as exc:
        raise Refused(f"loop {loop}: {exc}; nothing was run") from None
    folder = project.loop_dir(loop)
    if fetched.state is None:
        if tip is not None:
            raise CorruptState(f"loop {loop}: the state remote {remote!r} holds {remote_anchor.anchor_ref(loop)} but"
                               f" no {git_remote.state_ref(loop)}: the state ref was deleted; nothing was run. A"
                               f" human restores it (the anchor commit {tip[:12]}'s last parent is the anchored state"
                               " commit)")
        _not_lost(folder, loop, remote)
        if not (folder / STATE_FILE).is_file():
            raise BadInput(f"loop {loop}: the state remote {remote!r} holds no {git_remote.state_ref(loop)} and this"
                           f" checkout has no loop {loop}: create it here and run one tick with --state-remote"
                           f" {remote}, which publishes it")
        Loop.resolve(project, loop).read_state()  # the local state must verify before it is published
        return Synced(project, loop, remote, fetched, durable_files(folder), user_config)
    try:
        files = git_remote.read_tree(root, fetched.state)
    except RemoteFailed as exc:
        raise CorruptState(f"loop {loop}: {exc}; nothing was run") from None
    bad = [rel for rel in files if not safe_rel(rel)]
    if bad or STATE_FILE not in files or LOG_FILE not in files or CONFIG_FILE not in files:
        raise CorruptState(f"loop {loop}: the state commit {fetched.state[:12]} on {remote!r} is not a loop's state"
                           f" ({'path ' + repr(bad[0]) if bad else 'no ' + STATE_FILE + ' / ' + LOG_FILE}); it was"
                           " not written by automaton: a human restores the ref")
    files = remote_manifest.checked(loop, remote, fetched.state, files)  # every file keyed, before any is written
    _precheck(folder, files, loop, fetched.state, remote)
    _no_local_edit(folder, files, loop, remote)
    before = durable_files(folder) if (folder / STATE_FILE).is_file() else None
    _materialise(folder, files)
    try:
        _verify(project, loop, fetched.state)
        remote_anchor.check(root, loop, remote, tip, fetched.state, folder / LOG_FILE)
    except CorruptState:
        if before is not None:  # refused after it was written: this machine's loop folder comes back
            _restore(folder, files, before)
        raise
    _seen(folder, fetched.state)
    if fetched.branch is not None:
        problem = git_remote.set_branch(root, loop, fetched.branch, project.worktree_dir(loop))
        if problem is not None:
            raise Refused(f"loop {loop}: {problem}; nothing was run")
    return Synced(project, loop, remote, fetched, durable_files(folder), user_config, anchor_tip=tip)


def _precheck(folder: Path, files: dict[str, bytes], loop: LoopName, commit: str, remote: str) -> None:
    """Refuse a fetched state before anything of the loop folder is touched (CorruptState, exit
    2): its log must verify whole with the record key, every line keyed, and each of its files
    must land where the folder has no folder (and no file where it needs a folder)."""
    try:
        chain = verify_text(files[LOG_FILE].decode("utf-8"), keys.load_key(create=False))
    except UnicodeDecodeError:
        chain = ChainCheck(False, [], "not UTF-8 text")
    unkeyed = next((i for i, line in enumerate(chain.lines, 1) if not line.mac), None)
    if not chain.ok or unkeyed is not None or not chain.lines:
        why = chain.error or (f"line {unkeyed} is not keyed" if unkeyed else "an empty log")
        raise CorruptState(f"loop {loop}: the state commit {commit[:12]} on {remote!r} does not verify with the"
                           f" record key ({why}); nothing was run and this checkout's loop folder is unchanged."
                           " Check AUTOMATON_RECORD_KEY is this loop's key, or a human restores the state ref")
    for rel in sorted(files):
        clash = _clash(folder, rel)
        if clash is not None:
            raise CorruptState(f"loop {loop}: the state commit {commit[:12]} on {remote!r} holds {rel!r}, but {clash};"
                               " nothing was run and this checkout's loop folder is unchanged: a human moves it"
                               " away or restores the state ref")


def _no_local_edit(folder: Path, files: dict[str, bytes], loop: LoopName, remote: str) -> None:
    """BadInput (exit 2) when this checkout's loop.json was edited since it was sealed (it differs
    from `sealed/loop.json` and from the remote's): taking the remote's state would throw the
    human's edit away without a word."""
    try:
        here = (folder / CONFIG_FILE).read_bytes()
        sealed = (folder / SEALED_COPY).read_bytes()
    except OSError:
        return
    if here in (sealed, files.get(CONFIG_FILE)):
        return
    raise BadInput(f"loop {loop}: {folder / CONFIG_FILE} was edited here (it differs from its sealed copy and from"
                   f" the state remote {remote!r}'s), and taking the remote's state would discard the edit; nothing"
                   f" was run. Put the sealed one back to go on (cp {folder / SEALED_COPY} {folder / CONFIG_FILE});"
                   " changing the loop.json of a loop whose state lives in a remote is not built yet: create a"
                   " new loop with the change")


def _clash(folder: Path, rel: str) -> str | None:
    """Why `rel` cannot be written under `folder` (a folder or symlink in its place, a file or
    symlink where it needs a folder), None when it can."""
    target = folder / rel
    for parent in reversed(target.relative_to(folder).parents[:-1]):
        at = folder / parent
        if at.is_symlink() or (at.exists() and not at.is_dir()):
            return f"{at} is not a folder here"
    if target.is_symlink() or target.is_dir():
        return f"{target} is a {'symlink' if target.is_symlink() else 'folder'} here"
    return None


def _restore(folder: Path, fetched: dict[str, bytes], before: dict[str, bytes]) -> None:
    """Put back the loop folder's durable files as they were before a fetched state that did not
    verify replaced them, and anchor its log again (best effort: the refusal is what matters)."""
    with contextlib.suppress(OSError), locked(folder / STATE_LOCK):
        for rel in fetched.keys() - before.keys():
            (folder / rel).unlink(missing_ok=True)
        _materialise_files(folder, before)
        chainlog.adopt(folder / LOG_FILE)


def seen_commit(folder: Path) -> str | None:
    """The last state commit this checkout saw of the loop in `folder` on a state remote (SEEN),
    None when it never saw one."""
    try:
        return (folder / SEEN).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _not_lost(folder: Path, loop: LoopName, remote: str) -> None:
    """BadInput (exit 2) when this machine saw the loop's state on a remote that now has none."""
    seen = seen_commit(folder)
    if seen is None:
        return
    raise BadInput(f"loop {loop}: the state remote {remote!r} has no {git_remote.state_ref(loop)}, but this checkout"
                   f" saw its state there (state commit {seen[:12]}): the ref was deleted or the remote replaced, and"
                   " this loop folder may be ticks behind; nothing was run. Restore the ref from a clone that has it"
                   f" (git push {remote} <commit>:{git_remote.state_ref(loop)}), or, to publish this folder as the"
                   f" loop's state on purpose, remove {folder / SEEN}")


def _seen(folder: Path, commit: str | None) -> None:
    if commit is not None:
        with contextlib.suppress(OSError):  # a note for a later check, never a reason to stop
            (folder / SEEN).write_text(commit + "\n", encoding="ascii")


def _materialise(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / LOG_FILE
    with locked(folder / STATE_LOCK):
        # The remote is the loop's record now: this machine's anchor of an older copy of the log
        # is no rollback (the CAS chain of state commits is the order, anchored on the remote and in
        # this machine's record of it: commands/remote_anchor.py), so it is dropped first.
        anchor.forget(log)
        for stale in (folder / STATE_FILE, log, folder / (STATE_FILE + ".tmp")):
            stale.unlink(missing_ok=True)
        _materialise_files(folder, files)


def _materialise_files(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)


def _verify(project: Project, loop: LoopName, commit: str) -> None:
    """The fetched log verifies whole with the record key, every line keyed, and the state
    agrees with it; then this machine anchors it. CorruptState (exit 2) otherwise."""
    log = project.loop_dir(loop) / LOG_FILE
    chain = chainlog.read_chain(log)
    unkeyed = next((i for i, line in enumerate(chain.lines, 1) if not line.mac), None)
    if not chain.ok or unkeyed is not None or not chain.lines:
        why = chain.error or (f"line {unkeyed} is not keyed" if unkeyed else "an empty log")
        raise CorruptState(f"loop {loop}: the state commit {commit[:12]} does not verify with the record key ({why});"
                           " nothing was run. Check AUTOMATON_RECORD_KEY is this loop's key, or a human restores the"
                           " state ref")
    chainlog.adopt(log, chain)
    rec = Loop.resolve(project, loop).inspect()
    if rec.tamper:
        raise CorruptState(f"loop {loop}: the state commit {commit[:12]} is tampered ({rec.tamper}); nothing was run")


def open_claim(loop: Loop) -> tuple[int, str] | None:
    """(n, its timestamp) of the log's last `TICK_START` that no `TICK`/`TICK_DEFERRED` closed."""
    return open_tick(chainlog.read_chain(loop.log_file).lines)


def open_tick(lines: Sequence[LogLine]) -> tuple[int, str] | None:
    """`open_claim` of a log's parsed lines (another loop's, read from the remote)."""
    closed: set[str] = set()
    for line in reversed(lines):
        if line.event in CLOSING:
            closed.add(line.fields.get("n", ""))
        elif line.event == "TICK_START":
            n = line.fields.get("n", "")
            return None if n in closed or not n.isdigit() else (int(n), line.ts)
    return None


def _age_s(ts: str) -> float:
    try:
        return clock() - calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return float("inf")  # a stamp automaton never wrote: no live claim can be behind it


def claimed_elsewhere(synced: Synced, ttl_s: int) -> Outcome | None:
    """Step 2 of the module docstring: the skip Outcome (exit 0) while another runner's claim
    is younger than `ttl_s` seconds; None when the loop may tick (an older claim is logged
    `WARNING reason=abandoned_tick` and stays charged at its reservation)."""
    loop = Loop.resolve(synced.project, synced.name)
    found = open_claim(loop)
    if found is None:
        return None
    n, ts = found
    if _age_s(ts) < ttl_s:
        line = f"tick skipped: tick {n} of loop {synced.name} runs on another runner (claimed at {ts})"
        return Outcome(ExitCode.OK, [line], {"ran": False, "skipped": CLAIMED, "iteration": n, "claimed_at": ts})
    loop.log_event(LogEvent(Event.WARNING, {"reason": ABANDONED, "n": n, "claimed_at": ts,
                                            "detail": "its runner died after its claim; charged at its reservation"}))
    synced.notes.append(f"tick {n} of loop {synced.name} was claimed at {ts} and never settled: it stays charged"
                        " at its reservation")
    return None


@dataclass(frozen=True)
class Published:
    """The result of a publish: `landed` (then `commit` is the new state commit), `lost` (a
    lease failed: another runner or human moved the state first), else refused (`detail`)."""

    landed: bool
    lost: bool
    detail: str
    commit: str | None = None


def publish(synced: Synced, message: str, *, with_branch: bool) -> Published:
    """Push the loop folder's state, once it verifies with the record key, as a new state
    commit (parent: the claim, else the fetched commit; the same as its lease), its anchor
    (`commands.remote_anchor`; lease: the anchor fetched or last pushed) and, with
    `with_branch`, the local `loop/<name>` (lease: the fetched tip) in one atomic push.
    RemoteFailed is returned as a refusal, never raised."""
    root, name = synced.project.root, synced.name
    parent = synced.claim or synced.fetched.state
    unsound = _unsound(synced)
    if unsound is not None:  # never push a state the next runner would refuse, or someone else wrote
        return Published(False, False, unsound)
    remote_anchor.adopt(Loop.resolve(synced.project, name), synced.anchor_tip)
    files = durable_files(synced.folder)
    if LOG_FILE not in files:
        return Published(False, False, f"the loop's log is larger than {MAX_FILE_BYTES >> 20} MiB, the most a state"
                         " commit holds")
    try:
        files = remote_manifest.sealed(name, files)  # + sealed/state-files
        commit = git_remote.write_commit(root, files, parent, message)
        anchored = remote_anchor.move(root, name, synced.anchor_tip, commit, files[LOG_FILE])
        moves = [Move(git_remote.state_ref(name), commit, parent), anchored.move]
        tip = git_remote.local_branch(root, name) if with_branch else None
        if tip is not None and tip != synced.fetched.branch:
            moves.append(Move(git_remote.branch_ref(name), tip, synced.fetched.branch))
        pushed = git_remote.push(root, synced.remote, moves, user_config=synced.user_config)
    except RemoteFailed as exc:
        return Published(False, False, str(exc))
    if pushed.landed:
        _seen(synced.folder, commit)
        synced.anchor_tip = anchored.move.new
        remote_anchor.landed(synced.folder / LOG_FILE, anchored)
    return Published(pushed.landed, pushed.lost, pushed.detail, commit if pushed.landed else None)


def _unsound(synced: Synced) -> str | None:
    """Why the loop folder's state may not be pushed (its log does not verify whole with the
    record key, a line is unkeyed, or the state disagrees with it), None when it may."""
    log = synced.folder / LOG_FILE
    chain = chainlog.read_chain(log)
    if not chain.ok or not chain.lines or any(not line.mac for line in chain.lines):
        return f"the loop folder's log does not verify with the record key ({chain.error or 'unkeyed lines'})"
    try:
        rec = Loop.resolve(synced.project, synced.name).inspect()
    except (BadInput, CorruptState) as exc:
        return f"the loop folder's state cannot be read ({exc.message})"
    return f"the loop folder's state is tampered ({rec.tamper})" if rec.tamper else None


def claim(synced: Synced, n: int) -> Outcome | None:
    """Step 3: push the state holding tick `n`'s `TICK_START`. None when the claim landed;
    the Outcome that ends the tick otherwise (exit 0 lost, exit 1 refused)."""
    got = publish(synced, f"automaton: loop {synced.name} claims tick {n}", with_branch=False)
    if got.landed:
        synced.claim = got.commit
        return None
    if got.lost:
        return Outcome(ExitCode.OK, [f"tick skipped: another runner claimed tick {n} of loop {synced.name}"],
                       {"ran": False, "skipped": CLAIMED, "iteration": n})
    return Outcome(ExitCode.REFUSED, [f"tick not run: the state remote {synced.remote!r} refused the claim of tick {n}"
                                      f" of loop {synced.name}: {got.detail}"],
                   {"ran": False, "reason": REMOTE_REFUSED, "detail": got.detail})


def settle_out(synced: Synced, out: Outcome) -> Outcome:
    """Step 4 (and a refused gate's writes): push what the tick wrote. Returns `out`, with the
    notes as warnings, turned into exit 1 when a ran tick's record did not land."""
    warnings = [*out.warnings, *synced.notes]
    data = out.data or {}
    if data.get("skipped") == CLAIMED and synced.claim is None:
        return Outcome(out.code, out.lines, out.data, warnings)
    if durable_files(synced.folder) == synced.files and synced.claim is None:
        return Outcome(out.code, out.lines, out.data, warnings)
    n = data.get("iteration")
    got = publish(synced, f"automaton: loop {synced.name} tick {n} settled" if synced.claim else
                  f"automaton: loop {synced.name} gate", with_branch=synced.claim is not None)
    if got.landed:
        return Outcome(out.code, [*out.lines, f"state of loop {synced.name} pushed to {synced.remote}"],
                       out.data, warnings)
    if not got.landed and not got.lost and synced.claim is not None:
        kept = _without_branch(synced, n, got.detail, out)
        if kept is not None:
            return kept
    why = "another runner moved it (lost lease)" if got.lost else got.detail
    if synced.claim is None:  # a gate's halt that another runner wrote first, or will write
        return Outcome(out.code, out.lines, out.data, [*warnings, f"the state remote kept its state: {why}"])
    line = (f"tick {n} of loop {synced.name} ran, but the state remote {synced.remote!r} did not take its record:"
            f" {why}; the next runner settles it at its reservation")
    return Outcome(ExitCode.REFUSED, [*out.lines, line], {**data, "pushed": False}, warnings)


def _without_branch(synced: Synced, n: object, detail: str, out: Outcome) -> Outcome | None:
    """The remote refused the tick's push (a file over the host's size limit, a workflow file
    the token may not push: things the agent's commit can cause). The tick's record must still
    land, a halt it holds included, or the agent could erase its own drift halt that way: the
    loop halts for a human (`human_intervention`, `branch_refused`) and the state goes alone,
    without `loop/<name>`. None when even that is refused (the caller says so)."""
    loop = Loop.resolve(synced.project, synced.name)
    why = f"{BRANCH_REFUSED}: the state remote refused loop/{synced.name}: {detail}"
    halt_now(loop, "human_intervention", why, "state_remote")
    got = publish(synced, f"automaton: loop {synced.name} tick {n} settled (loop branch refused)", with_branch=False)
    if not got.landed:
        return None
    line = (f"tick {n} of loop {synced.name} ran, but the state remote {synced.remote!r} refused loop/{synced.name}"
            f" ({detail}): its record landed without the tick's commit, and the loop halts for a human"
            f" ({BRANCH_REFUSED})")
    data = {**(out.data or {}), "pushed": "state_only", "halt": (out.data or {}).get("halt") or
            f"human_intervention: {why}"}
    return Outcome(ExitCode.REFUSED, [*out.lines, line], data, [*out.warnings, *synced.notes])


def remote_tick(project: Project, name: str, remote: str | None, ttl_of: Callable[[Loop], int],
                run: Callable[[Callable[[int], Outcome | None]], Outcome], *, lock_held: bool = False,
                reap: Callable[[Path], object] = lambda _folder: None) -> Outcome:
    """A tick whose state lives in `remote` (module docstring). `remote`: the `--state-remote`
    flag (None: loop.json's `state_remote`). `run(claim)` runs the tick (`runner.tick`) with
    the claim called once its `TICK_START` is written. `ttl_of(loop)`: seconds an open claim
    is taken as live. Exit codes: 0 a tick ran or was skipped (busy here, claimed elsewhere);
    1 a gate refused, the remote refused, or a ran tick's record did not land; 2 bad input
    (a flag that disagrees with the sealed `state_remote`, a state that does not verify).
    `lock_held`: the caller holds the loop's tick lock already. `reap(folder)` runs first under
    that lock, before the claim is judged (the runner's leftovers step: a killed tick's agent on
    this machine is an orphan whatever the remote's claim says)."""
    loop_name = LoopName.of(name)
    folder = project.loop_dir(loop_name)
    if remote is None:
        remote = Loop.resolve(project, loop_name).read_config().state_remote
        if remote is None:
            raise BadInput(f"loop {name}: no --state-remote given and loop.json has no state_remote")
    check_remote(remote, "--state-remote")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.nullcontext() if lock_held else locked(folder / TICK_LOCK, timeout_s=0):
            reap(folder)
            synced = sync_in(project, loop_name, remote)
            loop = Loop.resolve(project, loop_name)
            config = loop.read_config()
            if config.roles.verify.holdout is not None:
                raise BadInput(f"loop {name}: its holdout tests ({config.roles.verify.holdout}) would be published in"
                               " the state remote, with the verify logs that show them, to everyone who can read it,"
                               " the agent included; a loop with holdout tests ticks on one machine (no"
                               " --state-remote). Nothing was run or pushed")
            sealed = config.state_remote
            if sealed is not None and sealed != remote:
                raise BadInput(f"loop {name}: --state-remote {remote!r} disagrees with loop.json state_remote"
                               f" {sealed!r}; pass the sealed one (or a human re-seals loop.json)")
            skip = claimed_elsewhere(synced, ttl_of(loop))
            if skip is not None:
                return skip
            return settle_out(synced, run(lambda n: claim(synced, n)))
    except Busy:
        return Outcome(ExitCode.OK, [f"tick skipped: another tick of loop {name} is running"],
                       {"ran": False, "skipped": "busy"})


def _mid_tick(loop: LoopName, running: tuple[int, str] | None) -> list[str]:
    """The warning of a human act that landed while a runner held a claim: that tick's final
    push now loses its lease, so its record does not land (it stays charged at its reservation)
    and the next runner waits until the claim is old enough to be settled as abandoned."""
    if running is None:
        return []
    n, ts = running
    return [f"tick {n} of loop {loop} was running on a runner (claimed at {ts}): its record will not land (it stays"
            " charged at its reservation), and the loop's next tick waits until that claim expires"]


def remote_act(project: Project, name: str, remote: str, act: Callable[[], Outcome]) -> Outcome:
    """A human act (`--approve`, `--pause-loop`, `--resume-loop`, `--rearm-loop`) on the loop's
    state in `remote`: fetch, apply `act` to the materialised folder, push with the fetched
    lease; a lost lease re-fetches and tries again after a short random wait, for up to
    `git.remote.LEASE_BOUND_S` (`git.remote.until_landed`). Exit 1 with one line when it never
    lands; `act`'s own refusal is returned as it is, nothing pushed."""
    check_remote(remote, "--state-remote")
    loop_name = LoopName.of(name)
    project.loop_dir(loop_name).mkdir(parents=True, exist_ok=True)
    return git_remote.until_landed(
        lambda: _act_once(project, loop_name, remote, act),
        lambda spent: _not_taken(loop_name, remote, f"another runner or human moved it first, for {spent:.0f} s"))


def _act_once(project: Project, loop_name: LoopName, remote: str, act: Callable[[], Outcome]) -> Outcome | None:
    """One fetch, act and push of `remote_act`; None when the lease was lost (the next attempt
    fetches and applies `act` again)."""
    folder = project.loop_dir(loop_name)
    with locked(folder / ACT_LOCK, timeout_s=30):
        synced = sync_in(project, loop_name, remote, user_config=True)
        running = open_claim(Loop.resolve(project, loop_name))
        out = act()
        if not out.ok or durable_files(folder) == synced.files:
            return out
        got = publish(synced, f"automaton: loop {loop_name} human act", with_branch=False)
    if got.landed:
        return Outcome(out.code, [*out.lines, f"state of loop {loop_name} pushed to {remote}"], out.data,
                       [*out.warnings, *_mid_tick(loop_name, running)])
    return None if got.lost else _not_taken(loop_name, remote, got.detail)


def _not_taken(loop_name: LoopName, remote: str, why: str) -> Outcome:
    return Outcome(ExitCode.REFUSED, [f"loop {loop_name}: the state remote {remote!r} did not take the change: {why};"
                                      " nothing changed there, run it again"], {"ok": False, "pushed": False})
